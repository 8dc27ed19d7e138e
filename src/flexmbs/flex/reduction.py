"""Constrained (clamped-interface) normal modes of a flexible body.

All DOFs of the reference node(s) are clamped, the generalized symmetric eigenproblem
K φ = ω² M φ of the remaining DOFs is solved (scipy.linalg.eigh, as M φ = ω⁻² K φ for precision of the
lowest modes), and the lowest modes are returned mass-normalised (Φᵀ M Φ = I) in a deterministic basis:

* each mode's sign makes its largest-magnitude component positive (first such DOF on ties);
* within a group of numerically repeated frequencies (e.g. the two bending planes of a circular
  section) the basis is rotated to diagonalise Φᵀ W Φ with W = diag(1, 2, ..., n_free).  Modes that
  live on disjoint DOF sets (pure y- and pure z-bending) already diagonalise it, so this picks the
  uncoupled shapes instead of an arbitrary mixture returned by the eigensolver.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.linalg

# Relative gap below which two eigenvalues count as repeated.
_REPEATED_TOL = 1e-8
# μ = 1/ω² below this fraction of the largest μ counts as an infinite frequency (massless DOF).
_INFINITE_FREQUENCY_TOL = 1e-12
# Relative tolerance for ties in the sign rule, so round-off cannot flip the chosen component.
_TIE_TOL = 1e-9
# Extra eigenpairs computed past the requested ones, so a repeated group straddling the cut is seen.
_LOOKAHEAD = 6
# An added static shape whose part outside the basis has less than this fraction of its M-norm² is
# in the basis already: round-off leaves about 1e-30 there, a real part (however small) far more.
_IN_SPAN = 1e-20


def clamped_dofs(reference_nodes: Sequence[int], n_nodes: int, dofs_per_node: int, name: str) -> np.ndarray:
    """Sorted DOF indices of all DOFs of the reference nodes (node i owns DOFs i·d .. i·d + d − 1)."""
    nodes = np.asarray(reference_nodes)
    if nodes.ndim != 1 or nodes.size == 0 or not np.issubdtype(nodes.dtype, np.integer):
        raise ValueError(f"{name}: reference_nodes {reference_nodes} must be a non-empty list of node indices")
    if nodes.min() < 0 or nodes.max() >= n_nodes:
        raise ValueError(f"{name}: reference_nodes {nodes.tolist()} must lie in [0, {n_nodes - 1}]")
    if np.unique(nodes).size != nodes.size:
        raise ValueError(f"{name}: reference_nodes {nodes.tolist()} contains repeated nodes")
    return np.sort((dofs_per_node * nodes[:, None] + np.arange(dofs_per_node)).ravel())


def _canonical_repeated(eigenvalues: np.ndarray, modes: np.ndarray) -> np.ndarray:
    """Rotate the basis of each group of repeated eigenvalues to the eigenvectors of Φᵀ W Φ."""
    modes = modes.copy()
    floor = 1e-12 * max(np.abs(eigenvalues).max(), np.finfo(float).tiny)
    weights = np.arange(1.0, modes.shape[0] + 1.0)
    start = 0
    while start < eigenvalues.size:
        stop = start + 1
        while stop < eigenvalues.size and (
            eigenvalues[stop] - eigenvalues[stop - 1]
            <= _REPEATED_TOL * max(abs(eigenvalues[stop]), abs(eigenvalues[stop - 1])) + floor
        ):
            stop += 1
        if stop - start > 1:
            group = modes[:, start:stop]
            # Orthogonal rotation, so the group stays mass-orthonormal and keeps its eigenvalue.
            _, rotation = np.linalg.eigh(group.T @ (weights[:, None] * group))
            modes[:, start:stop] = group @ rotation
        start = stop
    return modes


def _fix_signs(modes: np.ndarray) -> np.ndarray:
    """Flip each column so that its largest-magnitude component (first one on ties) is positive."""
    magnitude = np.abs(modes)
    leading = np.argmax(magnitude >= (1.0 - _TIE_TOL) * magnitude.max(axis=0), axis=0)
    signs = np.sign(modes[leading, np.arange(modes.shape[1])])
    return modes * signs


def _lowest_modes(
    M_ff: np.ndarray, K_ff: np.ndarray, n_modes: int, name: str, held: str
) -> tuple[np.ndarray, np.ndarray]:
    """Lowest n_modes eigenpairs of K φ = ω² M φ on an already constrained coordinate set.

    held: what is held fixed, for error messages. Returns (ω² (n,) ascending [rad²/s²], vectors
    (nf, n) mass-normalised, canonical basis in repeated groups, fixed signs).
    """
    n_free = M_ff.shape[0]
    if isinstance(n_modes, bool) or not isinstance(n_modes, (int, np.integer)) or n_modes < 1:
        raise ValueError(f"{name}: n_modes {n_modes} must be an integer >= 1")
    if n_modes > n_free:
        raise ValueError(f"{name}: n_modes {n_modes} exceeds the {n_free} free DOFs left after clamping {held}")
    n_solve = min(n_modes + _LOOKAHEAD, n_free)
    # Solve M φ = μ K φ for the largest μ = 1/ω²: the lowest modes then come out with full relative
    # precision, whereas K φ = ω² M φ loses it as ω²_max/ω²_min grows with mesh refinement.  It needs K
    # positive definite (true for a properly clamped body) and admits massless DOFs (μ = 0).
    try:
        mu, vectors = scipy.linalg.eigh(M_ff, K_ff, subset_by_index=[n_free - n_solve, n_free - 1])
    except np.linalg.LinAlgError as error:
        raise ValueError(
            f"{name}: stiffness matrix must be positive definite on the free DOFs, but clamping {held} leaves "
            f"a rigid-body motion or mechanism (3-DOF nodes need >= 3 non-collinear reference nodes) [{error}]"
        ) from error
    mu, vectors = mu[::-1], vectors[:, ::-1]
    finite = mu > _INFINITE_FREQUENCY_TOL * max(mu[0], 0.0)
    if not finite[:n_modes].all():
        raise ValueError(
            f"{name}: n_modes {n_modes} exceeds the {int(finite.sum())} modes with finite frequency "
            f"(the mass matrix is singular or indefinite on the free DOFs)"
        )
    eigenvalues = 1.0 / mu[finite]
    vectors = vectors[:, finite]
    # Mass-normalise: eigh returns K-normalised vectors for this ordering of the pencil.
    vectors = vectors / np.sqrt(np.einsum("in,ij,jn->n", vectors, M_ff, vectors))
    vectors = _fix_signs(_canonical_repeated(eigenvalues, vectors))[:, :n_modes]
    return eigenvalues[:n_modes], vectors


def constrained_modes(
    M: np.ndarray, K: np.ndarray, clamped: np.ndarray, n_modes: int, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Lowest constrained modes of (K, M) with the DOFs `clamped` fixed.

    M, K: full symmetric mass and stiffness matrices (ndof, ndof); clamped: DOF indices held at zero;
    n_modes: number of modes to keep; name: used in error messages.
    Returns (freqs (n,) [rad/s] ascending, modes (ndof, n) mass-normalised, zero rows at clamped DOFs).
    """
    free = np.setdiff1d(np.arange(M.shape[0]), clamped)
    w2, vectors = _lowest_modes(M[np.ix_(free, free)], K[np.ix_(free, free)], n_modes, name,
                                "the reference node(s)")
    return np.sqrt(w2), _scatter(free, M.shape[0], vectors)


def _ritz(M: np.ndarray, K: np.ndarray, basis: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Orthogonalised Ritz basis of span(basis) (ndof, m): solves the reduced eigenproblem so the
    returned vectors are mass-normalised and K-orthogonal (diagonal modal mass and stiffness keep
    the integrators' error norms and the modal damping meaningful).  Directions already in the span
    (relative M-norm² below 1e-10) are dropped.  Returns (freqs (k,) [rad/s] ascending, vectors (ndof, k))."""
    basis = basis / np.sqrt(np.einsum("ik,ij,jk->k", basis, M, basis))
    mu, U = scipy.linalg.eigh(basis.T @ M @ basis)
    keep = mu > 1e-10 * mu.max()
    basis = basis @ (U[:, keep] / np.sqrt(mu[keep]))
    # the generalized problem on the now well-conditioned basis keeps Φᵀ M Φ = I to round-off
    w2, V = scipy.linalg.eigh(basis.T @ K @ basis, basis.T @ M @ basis)
    if w2.min() <= 0.0:
        raise ValueError(f"{name}: interface or static modes gave a non-positive stiffness; is the body clamped?")
    return np.sqrt(w2), _fix_signs(_canonical_repeated(w2, basis @ V))


def add_static_modes(M: np.ndarray, K: np.ndarray, clamped: np.ndarray, modes: np.ndarray,
                     loads: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Enrich a basis with the static deflections of the clamped body under the load columns
    `loads` (ndof, r) [N, N m per unit], so that those loads are carried exactly in statics
    (attachment shapes for unit loads at DOFs; the inertia-relief shapes of acceleration_loads).

    `modes` (ndof, n) must be mass-normalised (Φᵀ M Φ = I).  Each deflection joins as its part
    outside span(modes) (M-orthogonal projection, twice for round-off); a deflection already in the
    span (that part below _IN_SPAN of it in M-norm², i.e. round-off) or a zero load adds nothing.
    Only that structural test drops a shape, never a small but real part, so the number of
    coordinates does not depend on parameter values (an FMU's states are fixed when it is built).
    Returns the orthogonalised Ritz basis of span[modes, deflections] (see _ritz): frequencies
    (m,) [rad/s] ascending and mass-normalised vectors (ndof, m)."""
    ndof = M.shape[0]
    free = np.setdiff1d(np.arange(ndof), clamped)
    static = static_deflections(K[np.ix_(free, free)], loads[free], name)
    shapes = _scatter(free, ndof, static)
    whole = np.einsum("ik,ij,jk->k", shapes, M, shapes)
    for _ in range(2):
        shapes = shapes - modes @ (modes.T @ (M @ shapes))
    outside = np.einsum("ik,ij,jk->k", shapes, M, shapes)
    keep = outside > _IN_SPAN * whole
    return _ritz(M, K, np.hstack([modes, shapes[:, keep]]), name)


def static_deflections(K_ff: np.ndarray, loads: np.ndarray, name: str) -> np.ndarray:
    """The static deflections K_ff^-1 loads (ndof_free, k) of the clamped body under the load
    columns loads (ndof_free, k) [N, N m] (K_ff positive definite).
    Solved on the symmetrically scaled D K_ff D, D = diag(K_ff)^-1/2 (the same solution to
    round-off): a DOF's stiffness scales with its unit (translations E A / L, rotations E I /
    L), so a micrometre beam's K_ff has a reciprocal condition number of 6e-19 and LAPACK warned
    "ill-conditioned", where the scaled matrix's is that of the structure. Raises ValueError
    naming `name` when K_ff is not positive definite."""
    loads = np.asarray(loads, dtype=float).reshape(K_ff.shape[0], -1)
    diag = np.diag(K_ff)
    try:
        if not np.all(diag > 0.0):
            raise np.linalg.LinAlgError("a free DOF has no positive stiffness")
        d = 1.0 / np.sqrt(diag)
        scaled = scipy.linalg.solve(K_ff * np.outer(d, d), loads * d[:, None], assume_a="pos")
    except np.linalg.LinAlgError as error:
        raise ValueError(f"{name}: stiffness matrix must be positive definite on the free DOFs after clamping "
                         f"the reference node(s) [{error}]") from error
    return scaled * d[:, None]


def unit_loads(ndof: int, dofs: np.ndarray) -> np.ndarray:
    """Unit load columns (ndof, len(dofs)) at the DOFs `dofs`."""
    loads = np.zeros((ndof, dofs.size))
    loads[dofs, np.arange(dofs.size)] = 1.0
    return loads


def craig_bampton(
    M: np.ndarray, K: np.ndarray, clamped: np.ndarray, interface: np.ndarray, n_modes: int, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Craig-Bampton basis in the floating frame: fixed-interface normal modes plus constraint modes.

    The reference DOFs `clamped` stay fixed (the body frame is attached there, so the rigid-body
    content is removed).  interface (r, ndof): rows that read the interface displacements from the
    nodal DOFs, e.g. unit rows selecting a node's 6 DOFs, or a beam's interpolation N_t(x), N_r(x) at
    a station between nodes.  Dependent rows (a marker at the reference node, two markers at one
    point) are dropped by an SVD of the rows on the free DOFs.

    Normal modes: the lowest n_modes with the reference and the interface held (interface rows = 0).
    Constraint modes: the static shapes K_ff⁻¹ Cᵀ under the interface loads; they span the same space
    as Craig's unit-interface-displacement shapes (Craig & Bampton 1968), so any load applied through
    the interface is carried exactly in statics.  The union is orthogonalised by the reduced
    eigenproblem (_ritz), so the returned basis is M-orthonormal and K-diagonal: n_modes + r' vectors
    (r' independent interface rows), sorted by frequency.

    Returns (freqs (m,) [rad/s] ascending, modes (ndof, m), zero rows at the clamped DOFs).
    Reference: R. R. Craig, M. C. C. Bampton, "Coupling of substructures for dynamic analyses",
    AIAA Journal 6(7), 1313-1319, 1968 (Craig and Bampton 1968).
    """
    ndof = M.shape[0]
    free = np.setdiff1d(np.arange(ndof), clamped)
    rows = np.asarray(interface, dtype=float).reshape(-1, ndof)[:, free]
    if rows.size == 0 or not np.any(rows):
        return constrained_modes(M, K, clamped, n_modes, name)
    _, singular, vt = scipy.linalg.svd(rows, full_matrices=True)
    rank = int((singular > 1e-10 * singular.max()).sum())
    M_ff, K_ff = M[np.ix_(free, free)], K[np.ix_(free, free)]
    static = static_deflections(K_ff, vt[:rank].T, name)
    # Orthonormal coordinates of the fixed-interface subspace {u_f : rows u_f = 0}.
    Z = vt[rank:].T
    if Z.shape[1] == 0:  # the interface holds every free DOF: the constraint modes span the whole body
        return _ritz(M, K, _scatter(free, ndof, static), name)
    # More normal modes than the held body has DOFs (a short mesh with interfaces): keep them all,
    # so the basis is the whole FE space, never less than asked for.
    if isinstance(n_modes, (int, np.integer)) and not isinstance(n_modes, bool):
        n_modes = min(n_modes, Z.shape[1])
    _, vectors = _lowest_modes(Z.T @ M_ff @ Z, Z.T @ K_ff @ Z, n_modes, name,
                               "the reference node(s) and the interface")
    return _ritz(M, K, _scatter(free, ndof, np.hstack([Z @ vectors, static])), name)


def _scatter(free: np.ndarray, ndof: int, vectors: np.ndarray) -> np.ndarray:
    """Full-DOF vectors (ndof, m) from their values on the free DOFs, zero at the clamped ones."""
    full = np.zeros((ndof, vectors.shape[1]))
    full[free] = vectors
    return full
