"""Import of externally reduced or FE-exported flexible bodies (superelements).

A superelement is a symmetric mass matrix M and stiffness matrix K over N nodes with
``dofs_per_node`` DOFs each (6: [u_x, u_y, u_z, th_x, th_y, th_z]; 3: translations only), node i
owning DOFs i·d .. i·d + d − 1, and the undeformed node coordinates in the body frame [m].

Sources: a ``.npz`` archive with arrays ``M``, ``K``, ``nodes`` (N x 3) and optional
``dofs_per_node``; or mass and stiffness matrix files plus a text file of node coordinates, each
matrix file in one of the formats FE codes write (recognised by its content):

* Matrix Market (``%%MatrixMarket`` header), rows and columns numbered by DOF index;
* Abaqus matrix output (``*MATRIX GENERATE`` with ``*MATRIX OUTPUT, FORMAT=MATRIX INPUT``,
  ``jobname_STIFn.mtx`` / ``jobname_MASSn.mtx``): lines ``row node, row dof, column node, column dof,
  value``, one triangle or the full square (Abaqus Keywords, ``*MATRIX INPUT``);
* Nastran DMIG bulk entries (e.g. punched by ``PARAM,EXTOUT,DMIGPCH``), small, large or free field,
  real, symmetric or square; the stiffness is the matrix whose name starts with K (KAAX, KGG ...),
  the mass the one starting with M, so both can come from one punch file (Nastran QRG, DMIG).

Node files hold one node per line, ``x y z`` (index order) or ``label x y z`` (the FE node label the
matrices use; commas allowed, as in an Abaqus ``*NODE`` block), or Nastran GRID entries.
"""

from __future__ import annotations

import re
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


def _read_nodes(path: Path) -> tuple[np.ndarray | None, np.ndarray]:
    """Node labels (None when the file gives coordinates only) and coordinates (N, 3) [m] from a text
    file: one node per line, x y z or label x y z (whitespace or commas, '#' or '**' starting a
    comment), or Nastran GRID entries.  Errors give the line and column, never the text of the file."""
    _check_data_file(path, "node file")
    grids = _bulk_entries(path, "GRID", "node file")
    if grids:
        labels, rows = [], []
        for number, data in grids:
            values = [_nastran_number(data, k, path, number, "GRID") for k in (0, 2, 3, 4)]
            if data[1].strip() not in ("", "0") or (len(data) > 5 and data[5].strip() not in ("", "0")):
                raise ValueError(f"node file '{path}': GRID on line {number} uses a coordinate system (CP or CD), "
                                 "expected the basic system (blank or 0)")
            labels.append(int(values[0]))
            rows.append(values[1:])
        return np.array(labels), np.array(rows, dtype=float)
    rows: list[list[float]] = []
    expected = "whitespace- or comma-separated numbers"
    for number, line in _text_lines(path, "node file"):
        fields = line.split("#", 1)[0].split("**", 1)[0].replace(",", " ").split()
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
    table = np.array(rows, dtype=float) if rows else np.zeros((0, 3))
    if table.shape[1] != 4:
        return None, table
    labels = table[:, 0]
    if not np.all(labels == np.round(labels)) or np.unique(labels).size != labels.size:
        raise ValueError(f"node file '{path}': the first of 4 columns holds node labels, expected distinct integers")
    return labels.astype(int), table[:, 1:]


def _text_lines(path: Path, what: str):
    """(line number, text) of a UTF-8 text file; a line that is not UTF-8 is an error naming it."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                yield number, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise ValueError(f"{what} '{path}' cannot be read: line {number} is not UTF-8 text") from None


def _bulk_entries(path: Path, keyword: str, what: str) -> list[tuple[int, list[str]]]:
    """Nastran bulk entries `keyword` of a file: (line number of the entry, its data fields from field 2
    on, continuations appended).  Small field (8 characters), large field (`keyword*`, 16 characters,
    continued by lines starting with '*') and free field (commas) are read; '$' starts a comment."""
    entries: list[tuple[int, list[str]]] = []
    current: list[str] | None = None
    for number, line in _text_lines(path, what):
        line = line.split("$", 1)[0].rstrip()
        if not line.strip():
            continue
        if "," in line:
            first, *data = line.split(",")
            data = (data + [""] * 8)[:8]  # 8 fields per line, so the groups of 4 stay aligned
        else:
            first = line[:8]
            large = first.strip().endswith("*") or first.startswith("*")
            width, count = (16, 4) if large else (8, 8)
            data = [line[8 + width * k: 8 + width * (k + 1)] for k in range(count)]
        head = first.strip().rstrip("*").upper()
        if head == keyword:
            current = list(data)
            entries.append((number, current))
        elif current is not None and (head == "" or first.lstrip().startswith(("+", "*"))):
            current.extend(data)
        else:
            current = None
    return entries


_IMPLICIT_EXPONENT = re.compile(r"^([+-]?[0-9.]+)([+-][0-9]+)$")


def _nastran_number(data: list[str], k: int, path: Path, line: int, entry: str) -> float:
    """Field k of an entry's data as a number; Nastran's 1.5-3 and 1.5D-3 forms are accepted."""
    text = data[k].strip().upper().replace("D", "E") if k < len(data) else ""
    text = _IMPLICIT_EXPONENT.sub(r"\1E\2", text)
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"'{path}': {entry} entry on line {line}, field {k + 2} is not a number") from None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _matrix_format(path: Path) -> str:
    """'matrix_market', 'dmig' or 'abaqus' from the first line that is not blank or a comment."""
    _check_data_file(path, "matrix file")
    for _, line in _text_lines(path, "matrix file"):
        text = line.strip()
        if text.startswith("%%MatrixMarket"):
            return "matrix_market"
        if not text or text.startswith(("$", "**", "%", "#")):
            continue
        return "dmig" if any(_bulk_entries(path, "DMIG", "matrix file")) else "abaqus"
    raise ValueError(f"matrix file '{path}' holds no matrix entries")


# one matrix entry: (row node label, row dof 1..6, column node label, column dof, value)
_Entry = tuple[int, int, int, int, float]


def _abaqus_entries(path: Path) -> list[_Entry]:
    """Entries of an Abaqus matrix file (FORMAT=MATRIX INPUT); '*' keyword and '**' comment lines skipped."""
    entries: list[_Entry] = []
    for number, line in _text_lines(path, "Abaqus matrix file"):
        text = line.strip()
        if not text or text.startswith("*"):
            continue
        fields = text.replace(",", " ").split()
        try:
            if len(fields) != 5:
                raise ValueError
            entries.append((int(fields[0]), int(fields[1]), int(fields[2]), int(fields[3]), float(fields[4])))
        except ValueError:
            raise ValueError(f"matrix file '{path}' cannot be read as Abaqus matrix output (it has no "
                             f"%%MatrixMarket header and no DMIG entries): line {number} is not 'row node, "
                             f"row dof, column node, column dof, value' (4 integers and a number)") from None
    return entries


def _dmig_entries(path: Path, kind: str) -> tuple[str, list[_Entry]]:
    """Name and entries of the real DMIG matrix of `path` whose name starts with kind ('K' or 'M')."""
    cards = _bulk_entries(path, "DMIG", "Nastran DMIG file")
    names = sorted({data[0].strip().upper() for _, data in cards if data and data[0].strip()})
    matching = [name for name in names if name.startswith(kind)]
    what = {"K": "stiffness", "M": "mass"}[kind]
    if len(matching) != 1:
        raise ValueError(f"Nastran DMIG file '{path}': expected one {what} matrix (name starting with {kind}), "
                         f"found {matching or 'none'} among {names}")
    name = matching[0]
    entries: list[_Entry] = []
    for number, data in cards:
        if data[0].strip().upper() != name:
            continue
        column = [_nastran_number(data, k, path, number, "DMIG") for k in (1, 2)]
        if column[0] == 0:  # header: NAME 0 IFO TIN TOUT POLAR - NCOL
            tin = _nastran_number(data, 3, path, number, "DMIG")
            if tin not in (1, 2):
                raise ValueError(f"Nastran DMIG file '{path}': matrix {name} has TIN {tin:g} on line {number}, "
                                 "expected a real matrix (1 or 2)")
            continue
        for k in range(4, len(data) - 2, 4):  # groups G_i C_i A_i B_i (B blank for real matrices)
            if not "".join(data[k:k + 3]).strip():
                continue
            row_node, row_dof, value = (_nastran_number(data, k + i, path, number, "DMIG") for i in range(3))
            if row_dof == 0 or column[1] == 0:
                raise ValueError(f"Nastran DMIG file '{path}': matrix {name} on line {number} uses a scalar "
                                 "point (component 0); only grid points with components 1-6 are supported")
            entries.append((int(row_node), int(row_dof), int(column[0]), int(column[1]), value))
    return name, entries


def _assemble(entries: list[_Entry], labels: np.ndarray, dofs_per_node: int, label: str) -> np.ndarray:
    """Dense matrix over the nodes `labels` (DOF index = node index · d + dof − 1) from labelled entries;
    a matrix given by one triangle only is mirrored (FE codes write symmetric matrices that way)."""
    index = {int(node): i for i, node in enumerate(labels)}
    matrix = np.zeros((labels.size * dofs_per_node,) * 2)
    rows, cols = [], []
    for row_node, row_dof, col_node, col_dof, value in entries:
        for node, dof in ((row_node, row_dof), (col_node, col_dof)):
            if node not in index:
                raise ValueError(f"{label} has an entry at node {node}, which the node file does not list")
            if not 1 <= dof <= dofs_per_node:
                raise ValueError(f"{label} has an entry at node {node} DOF {dof}, expected DOFs 1 to "
                                 f"{dofs_per_node} (dofs_per_node)")
        rows.append(index[row_node] * dofs_per_node + row_dof - 1)
        cols.append(index[col_node] * dofs_per_node + col_dof - 1)
    rows_a, cols_a = np.array(rows, dtype=int), np.array(cols, dtype=int)
    np.add.at(matrix, (rows_a, cols_a), [e[4] for e in entries])
    if rows_a.size and (np.all(rows_a >= cols_a) or np.all(rows_a <= cols_a)):
        matrix = matrix + matrix.T - np.diag(np.diag(matrix))
    return matrix


def _read_matrix(path: Path, kind: str, labels: np.ndarray | None, n_nodes: int, dofs_per_node: int) -> tuple[object, str]:
    """Matrix (kind 'K' or 'M') from a file in any supported format, and its label for messages."""
    fmt = _matrix_format(path)
    what = {"K": "stiffness", "M": "mass"}[kind]
    if fmt == "matrix_market":
        return _read_mtx(path), f"{what} matrix '{path}'"
    # FE codes number nodes by labels; a node file without labels numbers them 1, 2, ... N
    labels = np.arange(1, n_nodes + 1) if labels is None else labels
    if fmt == "dmig":
        name, entries = _dmig_entries(path, kind)
        label = f"{what} matrix {name} of Nastran DMIG file '{path}'"
    else:
        entries, label = _abaqus_entries(path), f"{what} matrix of Abaqus file '{path}'"
    return _assemble(entries, labels, dofs_per_node, label), label


def load_matrix_files(
    mass_path: str | Path, stiffness_path: str | Path, nodes_path: str | Path, dofs_per_node: int = 6
) -> Superelement:
    """Read a superelement from mass and stiffness matrix files (Matrix Market, Abaqus matrix output or
    Nastran DMIG, recognised by content; one DMIG file may hold both) and a node file (x y z, or
    label x y z with the labels the matrices use, or GRID entries) [m].  Node i of the superelement is
    the i-th node of the node file; markers refer to that index."""
    mass_path, stiffness_path, nodes_path = Path(mass_path), Path(stiffness_path), Path(nodes_path)
    labels, nodes = _read_nodes(nodes_path)
    if dofs_per_node not in (3, 6):
        raise ValueError(f"superelement '{mass_path.name}': dofs_per_node {dofs_per_node} must be 6 or 3")
    M, mass_label = _read_matrix(mass_path, "M", labels, nodes.shape[0], dofs_per_node)
    K, stiffness_label = _read_matrix(stiffness_path, "K", labels, nodes.shape[0], dofs_per_node)
    return make_superelement(
        M, K, nodes, dofs_per_node, mass_label=mass_label, stiffness_label=stiffness_label,
        nodes_label=f"node file '{nodes_path}'", source=f"superelement '{mass_path.name}'",
    )


# the former name, from when Matrix Market was the only file format
load_matrix_market = load_matrix_files
