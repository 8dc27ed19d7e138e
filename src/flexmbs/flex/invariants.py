"""Modal inertia invariants of a flexible body (floating frame of reference, body frame).

The displacement field is u(p, t) = Φ(p) η(t) with the n constrained modes of
:mod:`flexmbs.flex.reduction`.  All integrals ∫ρ (.) dV run over the body including tip/lumped
masses; everything is expressed in the body frame with the origin at the reference node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from .beam import DOFS_PER_NODE, Beam
from .reduction import add_static_modes, clamped_dofs, constrained_modes, craig_bampton, unit_loads
from .sections import Section
from .superelement import Superelement
from ..so3 import skew

# Levi-Civita symbol ε_akl.
_EPS = np.zeros((3, 3, 3))
_EPS[0, 1, 2] = _EPS[1, 2, 0] = _EPS[2, 0, 1] = 1.0
_EPS[0, 2, 1] = _EPS[2, 1, 0] = _EPS[1, 0, 2] = -1.0


def epsilon_contract(Sbkl: np.ndarray) -> np.ndarray:
    """Σ_kl ε_akl Sbkl[k, l, :], shape (3, n): the first-moment part of the ω–η mass coupling [kg m]."""
    return np.einsum("akl,kln->an", _EPS, Sbkl)


def _point_inertia(positions: np.ndarray, masses: np.ndarray) -> np.ndarray:
    """Σ m (|p|² I − p pᵀ) for point masses (q,) at positions (q, 3) [kg m^2]."""
    return np.einsum("q,q->", masses, np.einsum("qk,qk->q", positions, positions)) * np.eye(3) - np.einsum(
        "q,qk,ql->kl", masses, positions, positions
    )


@dataclass(frozen=True, eq=False)
class FlexBodyData:
    """Modal invariants of one flexible body, body frame, SI units (n = number of kept modes).

    Modal quantities refer to the mass-normalised modes (Φᵀ M Φ = I), i.e. per unit modal coordinate η.

    n: number of modes; mass: total mass [kg]; S0 (3,): ∫ρ u0 dV [kg m]; J0 (3, 3): undeformed inertia
    tensor about the origin [kg m^2]; Sb (3, n): ∫ρ Φ dV; Sbkl (3, 3, n): ∫ρ u0_k Φ_l dV;
    C (3, 3, n, n): ∫ρ Φ_kᵀ Φ_l dV; Ir (3, n): rotational coupling with the undeformed ω–η mass coupling
    M_ωη0[a] = Σ_kl ε_akl Sbkl[k, l] + Ir[a]; Me (n, n): modal mass (identity); Ke (n, n): modal
    stiffness diag(ω²); freqs (n,): constrained natural frequencies [rad/s]; Ga, Gb (n, n): foreshortening
    matrices ∫dm H and ∫x dm H (zero for superelements); node_positions (N, 3) [m]; length: beam length
    [m] (0 for superelements); nodal_modes (ndof, n): full-DOF mode matrix (zero at the clamped DOFs);
    beam: the beam mesh (None for superelements); dofs_per_node: 6 or 3; stiffening: whether
    foreshortening is modelled (False: Ga = Gb = 0 and marker H = 0).  Arrays are read-only copies.
    """

    n: int
    mass: float
    S0: np.ndarray
    J0: np.ndarray
    Sb: np.ndarray
    Sbkl: np.ndarray
    C: np.ndarray
    Ir: np.ndarray
    Me: np.ndarray
    Ke: np.ndarray
    freqs: np.ndarray
    Ga: np.ndarray
    Gb: np.ndarray
    node_positions: np.ndarray
    length: float
    nodal_modes: np.ndarray
    point_mass: np.ndarray | None = None
    point_position: np.ndarray | None = None
    point_shapes: np.ndarray | None = None
    point_H: np.ndarray | None = None
    beam: Beam | None = None
    dofs_per_node: int = DOFS_PER_NODE
    stiffening: bool = True

    def __post_init__(self) -> None:
        # Read-only copies: the invariants are shared by the model and must not drift after assembly.
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, np.ndarray):
                frozen = np.array(value, dtype=float)
                frozen.setflags(write=False)
                object.__setattr__(self, item.name, frozen)

    def marker(
        self, x: float | None = None, node: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Kinematics of a body point for the modal coordinates η.

        x: station along the beam axis from the root [m] (beams only, any x in [0, length]);
        node: node index (beams and superelements).  Give exactly one.
        Returns s0 (3,) undeformed position [m]; Phi (3, n) translational mode shapes [m];
        Psi (3, n) small section-rotation mode shapes [th_x, th_y, th_z] [rad]; H (n, n) foreshortening
        matrix [1/m] (axial displacement −½ ηᵀ H η; zero for superelements or without stiffening).
        """
        if (x is None) == (node is None):
            raise ValueError("marker: give exactly one of x (station along the beam [m]) or node (node index)")
        if node is not None:
            n_nodes = self.node_positions.shape[0]
            if isinstance(node, bool) or not isinstance(node, (int, np.integer)) or not 0 <= node < n_nodes:
                raise ValueError(f"marker: node {node} must be an integer index in [0, {n_nodes - 1}]")
        if self.beam is None:
            return self._superelement_marker(x, node)
        station = float(self.node_positions[node, 0]) if node is not None else float(x)
        projected = self.beam.project(np.array([station]), self.nodal_modes)
        H = self.beam.foreshortening(self.nodal_modes, station) if self.stiffening else np.zeros((self.n, self.n))
        return np.array([station, 0.0, 0.0]), projected.translation[0], projected.rotation[0], H

    def _superelement_marker(
        self, x: float | None, node: int | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if x is not None:
            raise ValueError("marker: a superelement has no beam axis; give node=<index> instead of x")
        if self.dofs_per_node != DOFS_PER_NODE:
            raise ValueError(
                f"marker: superelement node {node} has {self.dofs_per_node} DOFs (translations only) "
                f"and no rotation mode shapes; use a model with 6 DOFs per node"
            )
        rows = self.dofs_per_node * node + np.arange(6)
        shapes = self.nodal_modes[rows]
        return self.node_positions[node].copy(), shapes[:3], shapes[3:], np.zeros((self.n, self.n))


def beam_body(
    length: float, n_el: int, n_modes: int, E: float, G: float, rho: float, section: Section,
    tip_mass: float = 0.0, tip_inertia: np.ndarray | None = None, rotary_inertia: bool = False,
    stiffening: bool = True, name: str = "beam", static_modes: bool = False,
    interface: Sequence[float] | None = None, acceleration_modes: bool = False,
) -> FlexBodyData:
    """Flexible-body data of a uniform straight beam clamped at its root (node 0, the body origin).

    length [m], n_el elements, n_modes kept modes, E [Pa], G [Pa], rho [kg/m^3], section constants,
    tip_mass [kg] and tip_inertia (3x3 about the tip point, body axes) [kg m^2] at x = length,
    rotary_inertia: bending rotary inertia in the mass matrix, stiffening: compute Ga, Gb and marker H,
    static_modes, interface and acceleration_modes: the mode basis, see beam_invariants.
    """
    beam = Beam(length, n_el, E, G, rho, section, tip_mass, tip_inertia, rotary_inertia, name)
    return beam_invariants(beam, n_modes, stiffening, static_modes, interface, acceleration_modes)


def beam_invariants(
    beam: Beam, n_modes: int, stiffening: bool = True, static_modes: bool = False,
    interface: Sequence[float] | None = None, acceleration_modes: bool = False,
) -> FlexBodyData:
    """Flexible-body data of a Beam clamped at node 0; every integral by element Gauss quadrature,
    with the tip mass/inertia as an extra point at x = length.

    interface: stations x [m] along the axis where joints or loads attach.  Given (even
    empty), the basis is Craig-Bampton's (reduction.craig_bampton): n_modes normal modes with the root
    and the interface stations held, plus 6 constraint modes per station off the root (3 translations,
    3 section rotations), orthogonalised; static_modes then adds the tip x = length as a station.
    None: the former basis, n_modes cantilever modes, plus (static_modes) the static tip shapes for
    shear forces and bending moments (u_y, u_z, th_y, th_z).
    acceleration_modes: add the static deflections under the beam's own unit accelerations that
    the modes do not carry at all (add_acceleration_shapes: axial, torsional, centrifugal
    stretch), so that a spinning beam stretches with its free tip no interface.
    """
    label = f"beam '{beam.name}'"
    root = clamped_dofs([0], beam.n_nodes, DOFS_PER_NODE, label)
    M, K = beam.mass_matrix(), beam.stiffness_matrix()
    if interface is not None:
        stations = sorted(set(interface) | ({beam.length} if static_modes else set()))
        rows = np.vstack([np.zeros((0, beam.ndof))] + [np.vstack([beam.N_t(x), beam.N_r(x)]) for x in stations])
        freqs, Phi = craig_bampton(M, K, root, rows, n_modes, label)
    else:
        freqs, Phi = constrained_modes(M, K, root, n_modes, label)
    if static_modes and interface is None:
        tip = DOFS_PER_NODE * (beam.n_nodes - 1) + np.array([1, 2, 4, 5])
        freqs, Phi = add_static_modes(M, K, root, Phi, unit_loads(beam.ndof, tip), label)
    if acceleration_modes:
        freqs, Phi = add_acceleration_shapes(M, K, root, freqs, Phi, beam.node_positions, DOFS_PER_NODE, label)
    n = Phi.shape[1]
    gauss_x, gauss_w = beam.quadrature()
    # Mass points: the Gauss stations of the distributed mass plus the tip mass at x = L.
    stations = np.append(gauss_x, beam.length)
    dm = np.append(beam.mass_per_length * gauss_w, beam.tip_mass)
    positions = np.outer(stations, [1.0, 0.0, 0.0])
    shapes = beam.project(stations, Phi)
    # Rotary inertia carried by each point: section inertia per length times weight, tip inertia at the tip.
    rotary = np.concatenate([gauss_w[:, None, None] * beam.section_inertia, beam.tip_inertia[None]])
    s = beam.section
    if stiffening:
        slope = beam.project(gauss_x, Phi).slope
        Ga = np.einsum("q,qri,qrj->ij", gauss_w * beam.outboard_mass(gauss_x), slope, slope)
        Gb = np.einsum("q,qri,qrj->ij", gauss_w * beam.outboard_moment(gauss_x), slope, slope)
    else:
        Ga = Gb = np.zeros((n, n))
    point_H = np.array([beam.foreshortening(Phi, x) if stiffening else np.zeros((n, n)) for x in stations])
    return FlexBodyData(
        n=n,
        mass=float(dm.sum()),
        S0=dm @ positions,
        # Rigid-body inertia always includes the full section rotary inertia, independent of rotary_inertia.
        J0=_point_inertia(positions, dm) + beam.length * beam.rho * np.diag([s.Ip, s.Iy, s.Iz]) + beam.tip_inertia,
        Sb=np.einsum("q,qln->ln", dm, shapes.translation),
        Sbkl=np.einsum("q,qk,qln->kln", dm, positions, shapes.translation),
        C=np.einsum("q,qkm,qln->klmn", dm, shapes.translation, shapes.translation),
        Ir=np.einsum("qab,qbn->an", rotary, shapes.rotation),
        Me=np.eye(n),
        Ke=np.diag(freqs**2),
        freqs=freqs,
        Ga=Ga,
        Gb=Gb,
        node_positions=beam.node_positions,
        length=beam.length,
        nodal_modes=Phi,
        point_mass=dm,
        point_position=positions,
        point_shapes=shapes.translation,
        point_H=point_H,
        beam=beam,
        dofs_per_node=DOFS_PER_NODE,
        stiffening=stiffening,
    )


# An acceleration field whose modal participation is below this fraction of its M-norm is not
# carried by the modes at all (a structural zero, e.g. axial loads on bending modes: round-off
# leaves about 1e-16 there, a real participation far more)
_UNCARRIED = 1e-9


def acceleration_fields(nodes: np.ndarray, dofs_per_node: int) -> np.ndarray:
    """Nodal fields (ndof, 12) of a body's own unit accelerations in its body frame: the rigid
    fields (uniform translational accelerations along x, y, z [m/s^2] and angular accelerations
    about x, y, z [rad/s^2]) and the six fields linear in position that a rotation's centripetal
    acceleration -W x (W x p) is made of (the symmetric fields p_k e_a + p_a e_k [m per rad^2/s^2]).
    nodes (n_nodes, 3) [m] in the body frame. Their inertia loads are M times these fields."""
    T, R = rigid_fields(nodes, dofs_per_node)
    n_nodes = nodes.shape[0]
    symmetric = []
    for a in range(3):
        for k in range(a, 3):
            field = np.zeros((n_nodes, dofs_per_node))
            field[:, a] += nodes[:, k]
            field[:, k] += nodes[:, a]
            symmetric.append(field.reshape(-1))
    return np.hstack([T, R, np.array(symmetric).T])


def add_acceleration_shapes(M: np.ndarray, K: np.ndarray, clamped: np.ndarray, freqs: np.ndarray, Phi: np.ndarray,
                            nodes: np.ndarray, dofs_per_node: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Enrich the mass-normalised basis Phi (ndof, n), frequencies freqs [rad/s], with the static
    deflections under the inertia loads M a of the acceleration fields a (acceleration_fields)
    that the basis does not carry at all: taken in the order centrifugal, angular, translational,
    a field joins when its modal participation Phi^T M a in the basis grown so far is a structural
    zero (below _UNCARRIED of the field's M-norm). On a straight beam with bending modes that is
    the centrifugal stretch (its exact static axial shape; a uniform axial acceleration is then
    carried by it in part) and the torsion under an angular acceleration about the axis. Fields
    the modes carry in part are left to them: their static residuals are stiff for a few per cent
    of deflection (all twelve fields on Huang's arm: 2.2-2.7 kHz shapes, 7.4 times dopri5's steps,
    measured). The count depends on the structure only, not on parameter values (an FMU's states
    are fixed when it is built). Returns (freqs [rad/s], vectors) as reduction.add_static_modes."""
    free = np.setdiff1d(np.arange(M.shape[0]), clamped)
    fields = acceleration_fields(nodes, dofs_per_node)
    fields[clamped] = 0.0
    loads = M @ fields
    norm = np.sqrt(np.maximum(np.einsum("ik,ik->k", fields[free], loads[free]), 0.0))
    for k in (6, 7, 8, 9, 10, 11, 3, 4, 5, 0, 1, 2):
        if norm[k] > 0.0 and np.linalg.norm(Phi.T @ loads[:, k]) <= _UNCARRIED * norm[k]:
            freqs, Phi = add_static_modes(M, K, clamped, Phi, loads[:, k:k + 1], name)
    return freqs, Phi


def rigid_fields(nodes: np.ndarray, dofs_per_node: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodal rigid-body fields about the body origin: T (ndof, 3) unit translations along x, y, z and
    R (ndof, 3) unit small rotations about x, y, z (translation e_a × p, rotation DOFs e_a)."""
    n_nodes = nodes.shape[0]
    T = np.zeros((n_nodes, dofs_per_node, 3))
    R = np.zeros((n_nodes, dofs_per_node, 3))
    T[:, :3, :] = np.eye(3)
    R[:, :3, :] = np.einsum("akl,ik->ila", _EPS, nodes)  # (e_a × p)_l = ε_akl p_k
    if dofs_per_node == DOFS_PER_NODE:
        R[:, 3:, :] = np.eye(3)
    return T.reshape(-1, 3), R.reshape(-1, 3)


def superelement_body(
    superelement: Superelement, n_modes: int, reference_nodes: tuple[int, ...] | list[int] = (0,),
    interface_nodes: Sequence[int] | None = None, acceleration_modes: bool = False,
) -> FlexBodyData:
    """Flexible-body data of a superelement with all DOFs of reference_nodes clamped.

    interface_nodes: nodes where joints or loads attach; given, the basis is Craig-Bampton's
    (n_modes normal modes with the reference and interface nodes held, plus a constraint mode per
    interface DOF, orthogonalised: reduction.craig_bampton); None: n_modes constrained modes.
    acceleration_modes: add the static deflections under the body's own unit accelerations
    (add_acceleration_shapes).

    First-order invariants (mass, S0, J0, Sb and the ω–η coupling Rᵀ M Φ) use the consistent M.
    Second-order ones (Sbkl, C) use row-sum lumped nodal masses m_i = mean_k (M T)[i·d + k, k]
    (the nodal reaction to a unit rigid acceleration), so they need non-negative lumped masses.
    Ir := Rᵀ M Φ − ε·Sbkl, which makes the ω–η coupling equal the consistent Rᵀ M Φ exactly.
    """
    se = superelement
    d = se.dofs_per_node
    clamped = clamped_dofs(reference_nodes, se.n_nodes, d, se.source)
    if interface_nodes is None:
        freqs, Phi = constrained_modes(se.M, se.K, clamped, n_modes, se.source)
    else:
        nodes = np.unique(np.asarray(interface_nodes, dtype=int))
        held = clamped_dofs(nodes, se.n_nodes, d, se.source) if nodes.size else np.zeros(0, int)
        rows = np.eye(se.ndof)[np.setdiff1d(held, clamped)]
        freqs, Phi = craig_bampton(se.M, se.K, clamped, rows, n_modes, se.source)
    if acceleration_modes:
        freqs, Phi = add_acceleration_shapes(se.M, se.K, clamped, freqs, Phi, se.nodes, d, se.source)
    n = Phi.shape[1]
    T, R = rigid_fields(se.nodes, d)
    position_field = np.zeros((se.n_nodes, d))
    position_field[:, :3] = se.nodes  # the identity map u = u0 has zero small rotation
    MT = se.M @ T
    lumped = MT.reshape(se.n_nodes, d, 3)[:, np.arange(3), np.arange(3)].mean(axis=1)
    if lumped.min() < -1e-12 * np.abs(lumped).max():
        node = int(np.argmin(lumped))
        raise ValueError(
            f"{se.source}: row-sum lumped mass {lumped[node]:.6g} kg of node {node} is negative, expected >= 0 "
            f"(typical of higher-order solid elements); export a mass matrix with non-negative nodal row sums"
        )
    translation = Phi.reshape(se.n_nodes, d, n)[:, :3, :]
    Sbkl = np.einsum("i,ik,iln->kln", lumped, se.nodes, translation)
    coupling = R.T @ se.M @ Phi
    return FlexBodyData(
        n=n,
        mass=float(np.trace(T.T @ MT)) / 3.0,
        S0=MT.T @ position_field.ravel(),
        J0=R.T @ se.M @ R,
        Sb=MT.T @ Phi,
        Sbkl=Sbkl,
        C=np.einsum("i,ikm,iln->klmn", lumped, translation, translation),
        Ir=coupling - epsilon_contract(Sbkl),
        Me=np.eye(n),
        Ke=np.diag(freqs**2),
        freqs=freqs,
        Ga=np.zeros((n, n)),
        Gb=np.zeros((n, n)),
        node_positions=se.nodes,
        length=0.0,
        nodal_modes=Phi,
        point_mass=lumped,
        point_position=se.nodes,
        point_shapes=translation,
        point_H=np.zeros((se.n_nodes, n, n)),
        beam=None,
        dofs_per_node=d,
        stiffening=False,
    )


# ---------------------------------------------------------------- body mass matrices at eta = 0
# (the run-time mass matrix of the whole system: kernels/inertia.py)

def rigid_mass_matrix(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """6x6 mass matrix in body-frame velocities [v; w] of the origin: mass [kg], com r_BC [m],
    inertia about the centre of mass [kg m^2]."""
    M = np.zeros((6, 6))
    M[:3, :3] = mass * np.eye(3)
    M[:3, 3:] = -mass * skew(com)
    M[3:, :3] = mass * skew(com)
    M[3:, 3:] = inertia_com + mass * (com @ com * np.eye(3) - np.outer(com, com))
    return M


def consistent_mass_matrix(d: FlexBodyData) -> np.ndarray:
    """(6+n)^2 mass matrix of a flexible body at eta = 0 from its consistent invariants."""
    n = d.n
    M = np.zeros((6 + n, 6 + n))
    M[:3, :3] = d.mass * np.eye(3)
    M[:3, 3:6] = -skew(d.S0)
    M[3:6, :3] = skew(d.S0)
    M[3:6, 3:6] = d.J0
    M[:3, 6:] = d.Sb
    M[3:6, 6:] = epsilon_contract(d.Sbkl) + d.Ir
    M[6:, :6] = M[:6, 6:].T
    M[6:, 6:] = d.Me
    return M


def points_mass_matrix(d: FlexBodyData) -> np.ndarray:
    """(6+n)^2 mass matrix of a flexible body's mass points at eta = 0: sum m G^T G."""
    n = d.n
    M = np.zeros((6 + n, 6 + n))
    for m, r, P in zip(d.point_mass, d.point_position, d.point_shapes):
        G = np.hstack([np.eye(3), -skew(r), P])
        M += m * G.T @ G
    return M


def body_size(d: FlexBodyData) -> float:
    """Characteristic size of a flexible body [m]: beam length or the extent of its nodes."""
    return max(d.length, float(np.ptp(d.node_positions, axis=0).max()), 1e-3)
