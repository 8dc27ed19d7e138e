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


def constrained_modes(
    M: np.ndarray, K: np.ndarray, clamped: np.ndarray, n_modes: int, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Lowest constrained modes of (K, M) with the DOFs `clamped` fixed.

    M, K: full symmetric mass and stiffness matrices (ndof, ndof); clamped: DOF indices held at zero;
    n_modes: number of modes to keep; name: used in error messages.
    Returns (freqs (n,) [rad/s] ascending, modes (ndof, n) mass-normalised, zero rows at clamped DOFs).
    """
    ndof = M.shape[0]
    free = np.setdiff1d(np.arange(ndof), clamped)
    if isinstance(n_modes, bool) or not isinstance(n_modes, (int, np.integer)) or n_modes < 1:
        raise ValueError(f"{name}: n_modes {n_modes} must be an integer >= 1")
    if n_modes > free.size:
        raise ValueError(
            f"{name}: n_modes {n_modes} exceeds the {free.size} free DOFs left after clamping the reference node(s)"
        )
    n_solve = min(n_modes + _LOOKAHEAD, free.size)
    M_ff, K_ff = M[np.ix_(free, free)], K[np.ix_(free, free)]
    # Solve M φ = μ K φ for the largest μ = 1/ω²: the lowest modes then come out with full relative
    # precision, whereas K φ = ω² M φ loses it as ω²_max/ω²_min grows with mesh refinement.  It needs K
    # positive definite (true for a properly clamped body) and admits massless DOFs (μ = 0).
    try:
        mu, vectors = scipy.linalg.eigh(M_ff, K_ff, subset_by_index=[free.size - n_solve, free.size - 1])
    except np.linalg.LinAlgError as error:
        raise ValueError(
            f"{name}: stiffness matrix must be positive definite on the free DOFs, but clamping the reference "
            f"node(s) leaves a rigid-body motion or mechanism (3-DOF nodes need >= 3 non-collinear reference "
            f"nodes) [{error}]"
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
    modes = np.zeros((ndof, n_modes))
    modes[free] = vectors
    return np.sqrt(eigenvalues[:n_modes]), modes


def add_static_modes(M: np.ndarray, K: np.ndarray, clamped: np.ndarray, modes: np.ndarray,
                     load_dofs: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Enrich constrained modes with the static deflections under unit loads at `load_dofs`
    (Craig-Bampton-like attachment shapes), so that loads transmitted at an interface are
    carried exactly in statics. Returns Ritz vectors of span[modes, static shapes]: frequencies
    (m,) [rad/s] ascending and mass-normalised vectors (ndof, m), m = n + number of independent
    new shapes."""
    ndof = M.shape[0]
    free = np.setdiff1d(np.arange(ndof), clamped)
    F = np.zeros((free.size, load_dofs.size))
    F[np.searchsorted(free, load_dofs), np.arange(load_dofs.size)] = 1.0
    static = np.zeros((ndof, load_dofs.size))
    static[free] = scipy.linalg.solve(K[np.ix_(free, free)], F, assume_a="pos")
    static /= np.sqrt(np.einsum("ik,ij,jk->k", static, M, static))
    basis = np.hstack([modes, static])
    # M-orthonormalise, dropping directions already in the span
    mu, U = scipy.linalg.eigh(basis.T @ M @ basis)
    keep = mu > 1e-10 * mu.max()
    basis = basis @ (U[:, keep] / np.sqrt(mu[keep]))
    w2, V = scipy.linalg.eigh(basis.T @ K @ basis)
    if w2.min() <= 0.0:
        raise ValueError(f"{name}: static modes gave a non-positive stiffness; is the body clamped?")
    return np.sqrt(w2), _fix_signs(basis @ V)
