"""Import of externally reduced or FE-exported flexible bodies (superelements).

A superelement is a symmetric mass matrix M and stiffness matrix K over N nodes with
``dofs_per_node`` DOFs each (6: [u_x, u_y, u_z, th_x, th_y, th_z]; 3: translations only), node i
owning DOFs i·d .. i·d + d − 1, and the undeformed node coordinates in the body frame [m].

Sources: a ``.npz`` archive with arrays ``M``, ``K``, ``nodes`` (N x 3) and optional
``dofs_per_node``; or two Matrix Market files (M, K) plus a whitespace text file of node coordinates.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse

# Allowed asymmetry max|A − Aᵀ| relative to max|A|.
_SYMMETRY_TOL = 1e-8


@dataclass(frozen=True)
class Superelement:
    """Validated superelement data.

    M: mass matrix (ndof, ndof) [kg, kg m, kg m^2]; K: stiffness matrix (ndof, ndof) [N/m, N, N m];
    nodes: undeformed node positions (N, 3) in the body frame [m]; dofs_per_node: 6 or 3;
    source: file name(s) the data came from, used in error messages.
    """

    M: np.ndarray
    K: np.ndarray
    nodes: np.ndarray
    dofs_per_node: int
    source: str

    @property
    def n_nodes(self) -> int:
        return self.nodes.shape[0]

    @property
    def ndof(self) -> int:
        return self.M.shape[0]


def _dense(matrix: object, label: str) -> np.ndarray:
    """Dense float array from a numpy array or scipy sparse matrix."""
    if scipy.sparse.issparse(matrix):
        matrix = matrix.toarray()
    array = np.asarray(matrix)
    if not np.issubdtype(array.dtype, np.number) or np.iscomplexobj(array):
        raise ValueError(f"{label} must hold real numbers, got dtype {array.dtype}")
    return array.astype(float)


def _check_matrix(matrix: np.ndarray, label: str) -> np.ndarray:
    """Validate a square, finite, symmetric matrix and return its exactly symmetric part."""
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"{label} has shape {matrix.shape}, expected a square matrix")
    if not np.all(np.isfinite(matrix)):
        raise ValueError(f"{label} contains NaN or infinite entries, expected finite values")
    scale = np.abs(matrix).max()
    asymmetry = np.abs(matrix - matrix.T).max()
    if asymmetry > _SYMMETRY_TOL * scale:
        raise ValueError(
            f"{label} is not symmetric: max|A - A^T| = {asymmetry:.3g} exceeds {_SYMMETRY_TOL:g} x max|A| = {scale:.3g}"
        )
    return 0.5 * (matrix + matrix.T)


def make_superelement(
    M: object, K: object, nodes: object, dofs_per_node: int = 6, *,
    mass_label: str = "M", stiffness_label: str = "K", nodes_label: str = "nodes", source: str = "superelement",
) -> Superelement:
    """Validate raw M, K (dense or sparse), nodes (N, 3) [m] and build a Superelement.

    The labels name each quantity's origin (file and array) in error messages.
    """
    dofs = np.asarray(dofs_per_node)
    if dofs.shape != () or not np.issubdtype(dofs.dtype, np.integer) or int(dofs) not in (3, 6):
        raise ValueError(f"{source}: dofs_per_node {dofs_per_node} must be 6 or 3")
    dofs_per_node = int(dofs)
    mass = _check_matrix(_dense(M, mass_label), mass_label)
    stiffness = _check_matrix(_dense(K, stiffness_label), stiffness_label)
    if mass.shape != stiffness.shape:
        raise ValueError(
            f"{mass_label} has shape {mass.shape} but {stiffness_label} has shape {stiffness.shape}, "
            f"expected equal sizes"
        )
    positions = _dense(nodes, nodes_label)
    if positions.ndim != 2 or positions.shape[1] != 3 or positions.shape[0] == 0:
        raise ValueError(f"{nodes_label} has shape {positions.shape}, expected (N, 3) node coordinates [m]")
    if not np.all(np.isfinite(positions)):
        raise ValueError(f"{nodes_label} contains NaN or infinite coordinates, expected finite values")
    expected = positions.shape[0] * dofs_per_node
    if mass.shape[0] != expected:
        raise ValueError(
            f"{mass_label} has size {mass.shape[0]}, expected N*dofs_per_node = "
            f"{positions.shape[0]}*{dofs_per_node} = {expected} from {nodes_label}"
        )
    for array in (mass, stiffness, positions):
        array.setflags(write=False)
    return Superelement(mass, stiffness, positions, dofs_per_node, source)


def load_npz(path: str | Path) -> Superelement:
    """Read a superelement from a .npz with arrays M, K, nodes (N x 3) [m] and optional dofs_per_node (6 or 3)."""
    path = Path(path)
    _check_data_file(path, "superelement file")
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        # the reader's own message may quote the file's bytes: name the file and the kind of failure only
        raise ValueError(f"superelement file '{path}' cannot be read as .npz ({type(error).__name__})") from None
    with archive:
        missing = [key for key in ("M", "K", "nodes") if key not in archive.files]
        if missing:
            raise ValueError(f"superelement file '{path}' lacks array(s) {missing}, expected M, K and nodes")
        try:
            M, K, nodes = archive["M"], archive["K"], archive["nodes"]
            dofs_per_node = archive["dofs_per_node"] if "dofs_per_node" in archive.files else 6
        except (OSError, ValueError, EOFError) as error:
            raise ValueError(f"superelement file '{path}': an array cannot be read ({type(error).__name__})") from None
        return make_superelement(
            M, K, nodes, dofs_per_node,
            mass_label=f"'{path}' array M", stiffness_label=f"'{path}' array K",
            nodes_label=f"'{path}' array nodes", source=f"superelement file '{path}'",
        )


# Largest data file read [bytes]: a dense 10,000-DOF matrix in text is about 2.5 GB; beyond this a
# file is a mistake (or a device) rather than a superelement.
DATA_FILE_LIMIT = 4 * 1024**3


def _check_data_file(path: Path, what: str) -> None:
    """Refuse, before reading, what is not a regular file (a device such as /dev/zero or a FIFO
    would never end) or is larger than DATA_FILE_LIMIT."""
    try:
        info = path.stat()
    except OSError as error:
        raise ValueError(f"{what} '{path}' cannot be read: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{what} '{path}' is not a regular file (a device, FIFO or folder)")
    if info.st_size > DATA_FILE_LIMIT:
        raise ValueError(f"{what} '{path}' has {info.st_size} bytes, more than the limit of {DATA_FILE_LIMIT}")


def _read_mtx(path: Path) -> object:
    _check_data_file(path, "Matrix Market file")
    try:
        return scipy.io.mmread(path)
    except (OSError, ValueError, EOFError, IndexError, TypeError, UnicodeDecodeError) as error:
        # the parser's message may quote a line of the file: name the file and the kind of failure only
        raise ValueError(f"Matrix Market file '{path}' cannot be read ({type(error).__name__}); expected a "
                         "'%%MatrixMarket matrix' file") from None


def _read_nodes(path: Path) -> np.ndarray:
    """Node coordinates from a text file, one node per line (x y z [m]), '#' starting a comment.
    Errors give the line and column, never the text of the file."""
    _check_data_file(path, "node file")
    rows: list[list[float]] = []
    expected = "whitespace-separated numbers"
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"node file '{path}' cannot be read as {expected}: line {number} is not "
                                 "UTF-8 text") from None
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            try:
                rows.append([float(v) for v in fields])
            except ValueError:
                column = next(k for k, v in enumerate(fields, start=1) if not _is_float(v))
                raise ValueError(f"node file '{path}' cannot be read as {expected}: line {number}, "
                                 f"value {column} is not a number") from None
            if len(rows[-1]) != len(rows[0]):
                raise ValueError(f"node file '{path}' cannot be read as {expected}: line {number} has "
                                 f"{len(rows[-1])} values, the first node line {len(rows[0])}")
    return np.array(rows, dtype=float) if rows else np.zeros((0, 3))


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_matrix_market(
    mass_path: str | Path, stiffness_path: str | Path, nodes_path: str | Path, dofs_per_node: int = 6
) -> Superelement:
    """Read a superelement from Matrix Market files for M and K and a whitespace text file of node
    coordinates (one node per line: x y z [m])."""
    mass_path, stiffness_path, nodes_path = Path(mass_path), Path(stiffness_path), Path(nodes_path)
    nodes = _read_nodes(nodes_path)
    return make_superelement(
        _read_mtx(mass_path), _read_mtx(stiffness_path), nodes, dofs_per_node,
        mass_label=f"mass matrix '{mass_path}'", stiffness_label=f"stiffness matrix '{stiffness_path}'",
        nodes_label=f"node file '{nodes_path}'", source=f"superelement '{mass_path.name}'",
    )
