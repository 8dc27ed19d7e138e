"""Straight 3-D Euler-Bernoulli beam finite elements in the body frame.

Body frame: origin at the root node, x along the beam axis, y and z the section axes.  The beam is
split into ``n_el`` equal 2-node elements; node ``i`` sits at x = i·l.  Each node carries 6 DOFs in
the order [u_x, u_y, u_z, th_x, th_y, th_z] with the small-rotation convention
th_y = −dw/dx, th_z = dv/dx (v = u_y, w = u_z).

Interpolation: u_x and th_x linear, v and w cubic Hermite.  Every matrix (mass, stiffness, geometric
stiffness) and every integral used by the modal invariants is evaluated from these interpolation
functions by Gauss quadrature: 4 points per element integrate polynomials up to degree 7 exactly,
which covers all integrands here (the highest is x-weighted cubic·cubic, degree 7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .sections import Section

DOFS_PER_NODE = 6
_ELEMENT_DOFS = 2 * DOFS_PER_NODE

# Gauss-Legendre rule mapped to the element coordinate xi in [0, 1].
_GAUSS_POINTS, _GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(4)
_GAUSS_POINTS = 0.5 * (_GAUSS_POINTS + 1.0)
_GAUSS_WEIGHTS = 0.5 * _GAUSS_WEIGHTS

# Element DOFs and signs of the Hermite functions [H1, H2, H3, H4] for each bending plane; the w-plane
# rotation DOFs enter with a minus sign because th_y = -dw/dx.
_V_DOFS, _V_SIGNS = np.array([1, 5, 7, 11]), np.array([1.0, 1.0, 1.0, 1.0])
_W_DOFS, _W_SIGNS = np.array([2, 4, 8, 10]), np.array([1.0, -1.0, 1.0, -1.0])
_U_DOFS = np.array([0, 6])
_TX_DOFS = np.array([3, 9])


class ElementFields(NamedTuple):
    """Interpolation matrices of one element at q stations; the last axis is the 12 element DOFs.

    translation: (q, 3, 12) [u_x, u_y, u_z] [m per DOF unit]
    rotation:    (q, 3, 12) section rotation [th_x, th_y, th_z] [rad per DOF unit]
    slope:       (q, 2, 12) [dv/dx, dw/dx] [1/m per DOF unit]
    curvature:   (q, 2, 12) [d²v/dx², d²w/dx²] [1/m² per DOF unit]
    strain:      (q, 2, 12) [du_x/dx, dth_x/dx] axial strain and twist rate
    third:       (q, 2, 12) [d³v/dx³, d³w/dx³] [1/m³ per DOF unit] (constant over an element)
    """

    translation: np.ndarray
    rotation: np.ndarray
    slope: np.ndarray
    curvature: np.ndarray
    strain: np.ndarray
    third: np.ndarray


def _hermite(xi: np.ndarray, l: float, order: int) -> np.ndarray:
    """Cubic Hermite functions [H1, l·H2, H3, l·H4] or their x-derivatives, shape (q, 4).

    xi: element coordinate in [0, 1]; l: element length [m]; order: derivative order in x (0 to 3).
    """
    if order == 0:
        return np.stack([1 - 3 * xi**2 + 2 * xi**3, l * (xi - 2 * xi**2 + xi**3),
                         3 * xi**2 - 2 * xi**3, l * (-(xi**2) + xi**3)], axis=-1)
    if order == 1:
        return np.stack([(-6 * xi + 6 * xi**2) / l, 1 - 4 * xi + 3 * xi**2,
                         (6 * xi - 6 * xi**2) / l, -2 * xi + 3 * xi**2], axis=-1)
    if order == 2:
        return np.stack([(-6 + 12 * xi) / l**2, (-4 + 6 * xi) / l,
                         (6 - 12 * xi) / l**2, (-2 + 6 * xi) / l], axis=-1)
    one = np.ones_like(xi)
    return np.stack([12 / l**3 * one, 6 / l**2 * one, -12 / l**3 * one, 6 / l**2 * one], axis=-1)


def _linear(xi: np.ndarray, l: float, order: int) -> np.ndarray:
    """Linear functions [1 − xi, xi] or their x-derivatives, shape (q, 2)."""
    if order == 0:
        return np.stack([1 - xi, xi], axis=-1)
    return np.stack([np.full_like(xi, -1.0 / l), np.full_like(xi, 1.0 / l)], axis=-1)


def element_fields(xi: np.ndarray, l: float) -> ElementFields:
    """All interpolation matrices of an element of length l [m] at element coordinates xi in [0, 1]."""
    xi = np.atleast_1d(np.asarray(xi, dtype=float))

    def scatter(values: np.ndarray, dofs: np.ndarray, signs: np.ndarray | None = None) -> np.ndarray:
        row = np.zeros((xi.size, _ELEMENT_DOFS))
        row[:, dofs] = values if signs is None else values * signs
        return row

    v = [scatter(_hermite(xi, l, k), _V_DOFS, _V_SIGNS) for k in range(4)]
    w = [scatter(_hermite(xi, l, k), _W_DOFS, _W_SIGNS) for k in range(4)]
    u = [scatter(_linear(xi, l, k), _U_DOFS) for k in range(2)]
    tx = [scatter(_linear(xi, l, k), _TX_DOFS) for k in range(2)]
    return ElementFields(
        translation=np.stack([u[0], v[0], w[0]], axis=1),
        rotation=np.stack([tx[0], -w[1], v[1]], axis=1),
        slope=np.stack([v[1], w[1]], axis=1),
        curvature=np.stack([v[2], w[2]], axis=1),
        strain=np.stack([u[1], tx[1]], axis=1),
        third=np.stack([v[3], w[3]], axis=1),
    )


def _real(label: str, quantity: str, value: object, unit: str, allow_zero: bool) -> float:
    """value as a float after checking it is a finite real number > 0 (>= 0 with allow_zero)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{label}: {quantity} must be a real number [{unit}], got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{label}: {quantity} {value} {unit} must be a finite number {'>=' if allow_zero else '>'} 0")
    return value


def _gram(fields: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_q weights_q · F_q^T F_q for F of shape (q, r, m); weights (q,) or (q, r)."""
    weights = np.broadcast_to(weights.reshape(weights.shape + (1,) * (2 - weights.ndim)), fields.shape[:2])
    return np.einsum("qr,qri,qrj->ij", weights, fields, fields)


@dataclass(frozen=True, eq=False)
class Beam:
    """Uniform straight beam mesh with its material, section and tip body (body frame, root at x = 0).

    length: beam length along x [m]; n_el: number of equal elements; E: Young's modulus [Pa];
    G: shear modulus [Pa]; rho: density [kg/m^3]; section: cross-section constants;
    tip_mass: point mass at the last node [kg]; tip_inertia: 3x3 inertia tensor of the tip body
    about the tip point in body axes [kg m^2]; rotary_inertia: include the bending rotary inertia
    ρ Iy, ρ Iz in the mass matrix (False = classical Euler-Bernoulli); name: used in error messages.
    """

    length: float
    n_el: int
    E: float
    G: float
    rho: float
    section: Section
    tip_mass: float = 0.0
    tip_inertia: np.ndarray | None = field(default=None, repr=False)
    rotary_inertia: bool = False
    name: str = "beam"

    def __post_init__(self) -> None:
        label = f"beam '{self.name}'"
        for quantity, unit in (("length", "m"), ("E", "Pa"), ("G", "Pa"), ("rho", "kg/m^3"), ("tip_mass", "kg")):
            value = _real(label, quantity, getattr(self, quantity), unit, allow_zero=quantity == "tip_mass")
            object.__setattr__(self, quantity, value)
        if not isinstance(self.section, Section):
            raise ValueError(f"{label}: section must be a flexmbs.flex.sections.Section, got {type(self.section)}")
        if isinstance(self.n_el, bool) or not isinstance(self.n_el, (int, np.integer)) or self.n_el < 1:
            raise ValueError(f"{label}: n_el {self.n_el} must be an integer >= 1")
        object.__setattr__(self, "n_el", int(self.n_el))
        inertia = np.zeros((3, 3)) if self.tip_inertia is None else np.array(self.tip_inertia, dtype=float)
        if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
            raise ValueError(f"{label}: tip_inertia must be a finite 3x3 array [kg m^2], got shape {inertia.shape}")
        scale = max(np.abs(inertia).max(), np.finfo(float).tiny)
        if np.abs(inertia - inertia.T).max() > 1e-12 * scale:
            raise ValueError(f"{label}: tip_inertia must be symmetric")
        if np.linalg.eigvalsh(inertia).min() < -1e-12 * scale:
            raise ValueError(f"{label}: tip_inertia must be positive semi-definite")
        inertia.setflags(write=False)
        object.__setattr__(self, "tip_inertia", inertia)

    # --- mesh ---------------------------------------------------------------------------------

    @property
    def element_length(self) -> float:
        """Element length l = L / n_el [m]."""
        return self.length / self.n_el

    @property
    def n_nodes(self) -> int:
        return self.n_el + 1

    @property
    def ndof(self) -> int:
        return DOFS_PER_NODE * self.n_nodes

    @property
    def node_positions(self) -> np.ndarray:
        """Undeformed node positions in the body frame, (n_nodes, 3) [m]."""
        positions = np.zeros((self.n_nodes, 3))
        positions[:, 0] = np.linspace(0.0, self.length, self.n_nodes)
        return positions

    def element_dofs(self, element: np.ndarray | int) -> np.ndarray:
        """Global DOF indices of element(s): (12,) or (q, 12)."""
        return DOFS_PER_NODE * np.asarray(element)[..., None] + np.arange(_ELEMENT_DOFS)

    def locate(self, x: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """Element index and element coordinate xi in [0, 1] of stations x [m] along the axis from the root."""
        x = np.atleast_1d(np.asarray(x, dtype=float))
        tolerance = 1e-12 * self.length
        bad = ~np.isfinite(x) | (x < -tolerance) | (x > self.length + tolerance)
        if np.any(bad):
            raise ValueError(
                f"beam '{self.name}': station x {float(x[bad][0])} m must lie in [0, length {self.length} m]"
            )
        scaled = np.clip(x, 0.0, self.length) / self.element_length
        element = np.minimum(np.floor(scaled).astype(int), self.n_el - 1)
        return element, scaled - element

    def fields(self, x: np.ndarray | float) -> tuple[np.ndarray, ElementFields]:
        """Element indices (q,) and element interpolation matrices at stations x [m]."""
        element, xi = self.locate(x)
        return element, element_fields(xi, self.element_length)

    def quadrature(self, x_end: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Gauss stations x (q,) [m] and weights (q,) [m] integrating exactly (degree <= 7 per element)
        over [0, x_end] (default: the whole beam); the element containing x_end is integrated only up to it."""
        x_end = self.length if x_end is None else float(x_end)
        element, xi_end = self.locate(x_end)
        l = self.element_length
        starts = l * np.arange(element[0] + 1)
        spans = np.full(element[0] + 1, l)
        spans[-1] = l * xi_end[0]
        stations = (starts[:, None] + spans[:, None] * _GAUSS_POINTS).ravel()
        weights = (spans[:, None] * _GAUSS_WEIGHTS).ravel()
        return stations, weights

    # --- global interpolation -----------------------------------------------------------------

    def _global_rows(self, rows: np.ndarray, element: np.ndarray) -> np.ndarray:
        matrix = np.zeros((rows.shape[1], self.ndof))
        matrix[:, self.element_dofs(element[0])] = rows[0]
        return matrix

    def N_t(self, x: float) -> np.ndarray:
        """Translational interpolation at station x [m]: (3, ndof), maps nodal DOFs to [u_x, u_y, u_z] [m]."""
        element, f = self.fields(x)
        return self._global_rows(f.translation, element)

    def N_r(self, x: float) -> np.ndarray:
        """Section-rotation interpolation at station x [m]: (3, ndof), maps nodal DOFs to [th_x, th_y, th_z]."""
        element, f = self.fields(x)
        return self._global_rows(f.rotation, element)

    def N_slope(self, x: float) -> np.ndarray:
        """Transverse slope interpolation at station x [m]: (2, ndof) rows [N_v', N_w'] (dv/dx, dw/dx)."""
        element, f = self.fields(x)
        return self._global_rows(f.slope, element)

    def project(self, x: np.ndarray, modes: np.ndarray) -> ElementFields:
        """Fields of the nodal vectors `modes` (ndof, n) interpolated at stations x (q,) [m]: arrays (q, r, n)
        with the rows r of ElementFields (translation, rotation, slope, curvature, strain, third)."""
        element, f = self.fields(x)
        local = modes[self.element_dofs(element)]  # (q, 12, n)
        return ElementFields(*(np.einsum("qri,qin->qrn", array, local) for array in f))

    # --- matrices -----------------------------------------------------------------------------

    @property
    def section_inertia(self) -> np.ndarray:
        """Rotary inertia per unit length of the section used in the mass matrix, (3, 3) [kg m]:
        ρ diag(Iy + Iz, Iy, Iz), the bending entries only when rotary_inertia is set."""
        s = self.section
        bending = 1.0 if self.rotary_inertia else 0.0
        return self.rho * np.diag([s.Iy + s.Iz, bending * s.Iy, bending * s.Iz])

    def _element_gauss(self) -> ElementFields:
        return element_fields(_GAUSS_POINTS, self.element_length)

    def element_mass(self) -> np.ndarray:
        """Consistent element mass matrix (12, 12) [kg, kg m, kg m^2]."""
        f = self._element_gauss()
        w = self.element_length * _GAUSS_WEIGHTS
        rho_a = self.rho * self.section.A
        rotary = np.einsum("qai,ab,qbj->ij", f.rotation * w[:, None, None], self.section_inertia, f.rotation)
        return rho_a * _gram(f.translation, w) + rotary

    def element_stiffness_families(self) -> dict[str, np.ndarray]:
        """The element stiffness (12, 12) split by deformation family, each from its own DOFs:
        'axial' (E A, u_x), 'torsion' (G J, th_x), 'bending_xy' (E Iz, v in the x-y plane),
        'bending_xz' (E Iy, w in the x-z plane); they sum to element_stiffness."""
        f = self._element_gauss()
        w = self.element_length * _GAUSS_WEIGHTS
        s = self.section
        return {"axial": _gram(f.strain[:, :1], w * self.E * s.A),
                "torsion": _gram(f.strain[:, 1:], w * self.G * s.J),
                "bending_xy": _gram(f.curvature[:, :1], w * self.E * s.Iz),
                "bending_xz": _gram(f.curvature[:, 1:], w * self.E * s.Iy)}

    def element_stiffness(self) -> np.ndarray:
        """Element stiffness matrix (12, 12) [N/m, N, N m]: EA, EIz (v-plane), EIy (w-plane), GJ."""
        return sum(self.element_stiffness_families().values())

    def element_geometric(self) -> np.ndarray:
        """Element geometric stiffness per unit axial tension ∫ (N_v'^T N_v' + N_w'^T N_w') dx (12, 12) [1/m]."""
        f = self._element_gauss()
        return _gram(f.slope, self.element_length * _GAUSS_WEIGHTS)

    def _assemble(self, element_matrix: np.ndarray) -> np.ndarray:
        matrix = np.zeros((self.ndof, self.ndof))
        for e in range(self.n_el):
            dofs = slice(DOFS_PER_NODE * e, DOFS_PER_NODE * e + _ELEMENT_DOFS)
            matrix[dofs, dofs] += element_matrix
        return matrix

    def mass_matrix(self) -> np.ndarray:
        """Assembled consistent mass matrix (ndof, ndof), including the tip mass and tip inertia."""
        mass = self._assemble(self.element_mass())
        tip = DOFS_PER_NODE * self.n_el
        mass[tip:tip + 3, tip:tip + 3] += self.tip_mass * np.eye(3)
        mass[tip + 3:tip + 6, tip + 3:tip + 6] += self.tip_inertia
        return mass

    def stiffness_matrix(self) -> np.ndarray:
        """Assembled stiffness matrix (ndof, ndof)."""
        return self._assemble(self.element_stiffness())

    def stiffness_families(self) -> dict[str, np.ndarray]:
        """Assembled stiffness matrices (ndof, ndof) of each deformation family (see
        element_stiffness_families); the strain energy of a nodal displacement d splits into
        d^T K_f d / 2 per family."""
        return {k: self._assemble(v) for k, v in self.element_stiffness_families().items()}

    def kg_axial(self) -> np.ndarray:
        """Assembled geometric stiffness for a uniform unit axial tension (ndof, ndof) [1/m]; multiply by
        the tension force [N]."""
        return self._assemble(self.element_geometric())

    # --- mass distribution ----------------------------------------------------------------------

    @property
    def mass_per_length(self) -> float:
        """ρ A [kg/m]."""
        return self.rho * self.section.A

    def outboard_mass(self, x: np.ndarray) -> np.ndarray:
        """Mass outboard of stations x [m] (beam plus tip mass) [kg]."""
        return self.mass_per_length * (self.length - x) + self.tip_mass

    def outboard_moment(self, x: np.ndarray) -> np.ndarray:
        """First moment about the root of the mass outboard of stations x, ∫_{ξ>x} ξ dm [kg m]."""
        return 0.5 * self.mass_per_length * (self.length**2 - x**2) + self.tip_mass * self.length

    def foreshortening(self, modes: np.ndarray, x: float) -> np.ndarray:
        """Foreshortening matrix H(x) = modesᵀ [∫_0^x (N_v'^T N_v' + N_w'^T N_w') dξ] modes, (n, n) [1/m];
        the axial displacement of station x [m] due to the transverse slopes is −½ ηᵀ H(x) η [m]."""
        stations, weights = self.quadrature(x)
        return _gram(self.project(stations, modes).slope, weights)


def beam_matrices(beam: Beam) -> tuple[np.ndarray, np.ndarray]:
    """Assembled full mass and stiffness matrices (ndof, ndof) of a beam, all DOFs free."""
    return beam.mass_matrix(), beam.stiffness_matrix()
