"""User-facing model objects: what the engineer wrote, before compilation.

Conventions (all SI units):
- Every body has a body frame B. Rigid bodies: any frame the user chooses; the centre of mass
  and inertia are given in it. Beams: origin at the root (the clamped reference node), x along
  the beam axis, y and z the section axes. Superelements: the frame of the FE node coordinates.
- A marker is a frame fixed on a body (on a flexible body it moves with the deformation at its
  station or node). `position` is r_BM, the marker origin in the body frame [m]; `rotation` is
  the direction-cosine matrix R_BM from marker to body frame.
- A joint connects a marker P on the parent to a marker C on the child; at zero joint
  coordinates the two marker frames coincide. Joint axes are given in the parent marker frame.
- The fixed ground is the body named "ground"; its frame is the world frame W, z up by default
  only through the gravity vector the user gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional, Sequence

import numpy as np
from flexmbs_laws import motor as motor_law

GROUND = "ground"

JointType = Literal[
    "revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "free", "fixed"
]
METHODS: tuple[str, ...] = ("rk4", "dopri5", "implicit", "radau")
# the methods that solve linear systems with a Jacobian (its factors are part of their memory)
IMPLICIT_METHODS: tuple[str, ...] = ("implicit", "radau")


@dataclass
class Marker:
    """A frame on a body. Give `position`/`rotation` on rigid bodies and the ground, and `x`
    (station along the beam [m]) or `node` (FE node index) on flexible bodies."""

    name: str
    position: Sequence[float] = (0.0, 0.0, 0.0)
    rotation: Optional[Sequence[Sequence[float]]] = None
    x: Optional[float] = None
    node: Optional[int] = None


@dataclass
class Section:
    """Beam cross-section. shape: rectangle (width, height), circle (diameter), tube
    (outer_diameter, thickness), box_tube (width, height, thickness) or explicit (A [m^2],
    Iy, Iz [m^4] second moments about y and z, J [m^4] torsion constant). Lengths in m."""

    shape: Literal["rectangle", "circle", "tube", "box_tube", "explicit"]
    width: Optional[float] = None
    height: Optional[float] = None
    diameter: Optional[float] = None
    outer_diameter: Optional[float] = None
    thickness: Optional[float] = None
    A: Optional[float] = None
    Iy: Optional[float] = None
    Iz: Optional[float] = None
    J: Optional[float] = None


@dataclass
class Material:
    """Isotropic material: E [Pa], rho [kg/m^3], and G [Pa] or Poisson's ratio nu."""

    E: float
    rho: float
    G: Optional[float] = None
    nu: Optional[float] = None

    @property
    def shear_modulus(self) -> float:
        if self.G is not None:
            return self.G
        return self.E / (2.0 * (1.0 + (0.3 if self.nu is None else self.nu)))


@dataclass
class Damping:
    """Structural damping of a flexible body: stiffness-proportional D = alpha K [s] and/or
    modal damping ratios zeta_k (one per kept mode, or one value for all)."""

    stiffness_proportional: float = 0.0
    modal: Sequence[float] = ()


# the fields of a superelement that name its data files
SUPERELEMENT_FILES = ("file", "mass_file", "stiffness_file", "nodes_file")


@dataclass
class Body:
    """A rigid body, a beam or a superelement.

    Rigid: mass [kg], com r_BC [m], inertia about the centre of mass in body axes [kg m^2]
    given as [Ixx, Iyy, Izz] or [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] (tensor components, Ixy = -∫xy dm)
    or a 3x3 matrix.
    Beam: length [m], elements, modes, material, section, tip_mass [kg], tip_inertia about the
    tip point [kg m^2], rotary_inertia of bending, geometric_stiffening (default on), damping,
    segments: split into this many floating frames joined rigidly (a corotational chain);
    interface_modes (beams and superelements, default true): Craig-Bampton basis, i.e. `modes`
    normal modes with the reference and every interface marker (one used by a joint, cut joint,
    or load) held, plus 6 constraint modes per interface point off the reference (3 for
    3-DOF superelement nodes), orthogonalised; false: `modes` modes clamped at the reference only
    (the former basis). static_modes: with interface modes, make the beam tip an interface point
    too; without, add the static tip deflections under shear forces and bending moments to the
    modes (4 more coordinates; exact statics for loads at the tip, as a chain's segments need).
    acceleration_modes (beams and superelements, default true): add the static deflections under
    the body's own unit accelerations that its modes do not carry at all (on a beam with bending
    modes: axial and torsional accelerations and the centrifugal stretch), so that a spinning
    beam with a free tip stretches (flex/invariants.py add_acceleration_shapes).
    Superelement: file (.npz with M, K, nodes) or mass_file/stiffness_file (Matrix Market) and
    nodes_file; reference_nodes clamped for the constrained modes; modes.
    """

    name: str
    type: Literal["rigid", "beam", "superelement"] = "rigid"
    markers: list[Marker] = field(default_factory=list)
    mass: Optional[float] = None
    com: Sequence[float] = (0.0, 0.0, 0.0)
    inertia: Optional[Sequence] = None
    length: Optional[float] = None
    elements: int = 4
    modes: int = 4
    material: Optional[Material] = None
    section: Optional[Section] = None
    tip_mass: float = 0.0
    tip_inertia: Optional[Sequence] = None
    rotary_inertia: bool = False
    geometric_stiffening: bool = True
    segments: int = 1
    static_modes: bool = False
    interface_modes: bool = True
    acceleration_modes: bool = True
    damping: Damping = field(default_factory=Damping)
    file: Optional[str] = None
    mass_file: Optional[str] = None
    stiffness_file: Optional[str] = None
    nodes_file: Optional[str] = None
    dofs_per_node: int = 6
    reference_nodes: Sequence[int] = (0,)


def inertia_matrix(spec: Sequence) -> np.ndarray:
    """3x3 inertia tensor [kg m^2] from [Ixx, Iyy, Izz], [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] or a 3x3
    matrix (a Body's `inertia`, a beam's `tip_inertia`). Raises ValueError for any other shape."""
    values = np.asarray(spec, dtype=float)
    if values.shape == (3, 3):
        return values
    if values.shape == (3,):
        return np.diag(values)
    if values.shape == (6,):
        ixx, iyy, izz, ixy, ixz, iyz = values
        return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    raise ValueError(f"inertia must have 3, 6 or 3x3 entries, got shape {values.shape}")


@dataclass
class Profile:
    """A prescribed time function q(t) with exact derivatives qd, qdd.

    constant: value + rate t (rate [1/s], default 0). ramp: quintic from q0 to q1 over [t0, t1]
    (zero velocity and acceleration at both ends). cycloidal: q0 + (q1 - q0)(s - sin(2 pi s)/(2 pi)),
    s = (t - t0)/(t1 - t0) (He 1993 eqs. 9.21-9.26; zero rate at both ends). sine: offset + amplitude sin(2 pi frequency t + phase) (frequency [Hz], phase
    [rad]). table: times and values, interpolated by a C2 cubic spline (clamped, zero end slope),
    held constant outside. spin_up: He 1993 eq. 9.18 angle with final rate omega_s [rad/s]
    reached at t_s [s]. input: taken from the model inputs at run time (FMU).
    """

    type: Literal["constant", "ramp", "sine", "table", "spin_up", "input", "cycloidal"]
    value: float = 0.0
    rate: float = 0.0
    q0: float = 0.0
    q1: float = 0.0
    t0: float = 0.0
    t1: float = 1.0
    offset: float = 0.0
    amplitude: float = 0.0
    frequency: float = 0.0
    phase: float = 0.0
    times: Sequence[float] = ()
    values: Sequence[float] = ()
    omega_s: float = 0.0
    t_s: float = 1.0


@dataclass
class Motor:
    """A geared DC motor inside the plant (a `motor` drive): the DC motor block's parameters and
    law (flexmbs_laws/motor.py; tables.MOTOR gives units and bounds). R [ohm], L [H], k_t
    [N m/A = V s/rad], J_rotor [kg m^2] (motor side; ratio^2 J_rotor is added to the joint's
    inertia), b_motor [N m s/rad] (motor side), ratio (motor speed / joint speed), efficiency
    (fraction of the power the gear passes on), w_band [rad/s] (motor speed below which the
    gear's loss fades to none at standstill), i0 [A] the armature current at the start.
    Every default is the block's but those of motor_law.PLANT_DEFAULTS (w_band), which says why."""

    R: float = 2.0
    L: float = 1e-3
    k_t: float = 0.05
    J_rotor: float = 1e-5
    b_motor: float = 1e-5
    ratio: float = 50.0
    efficiency: float = 0.9
    w_band: float = motor_law.PLANT_DEFAULTS["w_band"]
    i0: float = 0.0


@dataclass
class Drive:
    """How a single-coordinate joint is driven.

    passive: no drive. torque: a joint torque [N m] (force [N] for prismatic) from the input
    named `<joint>.tau` (value `torque` until set). motion: q follows `profile` exactly; the
    driving torque is an output. servo: PD servo with motor inertia (Huang 1998 Ch. 3),
    tau = kp (q_ref - q) + kd (qd_ref - qd), motor_inertia [kg m^2] reflected to the joint side.
    motor: a geared DC motor on a rotation (`motor`), its armature voltage [V] the input
    `<joint>.voltage` (value `voltage` until set), its armature current a state of the plant.
    """

    type: Literal["passive", "torque", "motion", "servo", "motor"] = "passive"
    torque: float = 0.0
    profile: Optional[Profile] = None
    kp: float = 0.0
    kd: float = 0.0
    motor_inertia: float = 0.0
    voltage: float = 0.0
    motor: Optional[Motor] = None


@dataclass
class Spring:
    """Joint spring-damper on each joint coordinate: tau = -stiffness (q - preload) - damping qd.
    Units N m/rad and N m s/rad (N/m, N s/m for translations)."""

    stiffness: float = 0.0
    damping: float = 0.0
    preload: float = 0.0


@dataclass
class Joint:
    """Joint between parent marker and child marker. axis (revolute, prismatic, cylindrical,
    the first axis of universal, the plane normal of planar) and axis2 (second universal axis,
    in the frame after the first rotation; first in-plane axis of planar) in the parent marker
    frame, unit vectors. rotor_inertia [kg m^2]: inertia that turns with the joint coordinate
    but belongs to no body (bearings, a motor rotor reflected through its gearbox); it adds to
    the joint's diagonal mass entry. q0/qd0: initial coordinates/velocities (spherical: q0 is a unit
    quaternion [w, x, y, z] or a rotation vector [rad]; free: position [m] then orientation)."""

    name: str
    type: JointType
    parent: str
    parent_marker: str
    child: str
    child_marker: str
    axis: Sequence[float] = (0.0, 0.0, 1.0)
    axis2: Sequence[float] = (0.0, 1.0, 0.0)
    q0: Sequence[float] = ()
    qd0: Sequence[float] = ()
    spring: Optional[Spring] = None
    drive: Drive = field(default_factory=Drive)
    rotor_inertia: float = 0.0


@dataclass
class Loops:
    """Kinematic loops: `cuts` are loop-closing joints between two markers (the joints of the
    tree stay in `joints`); each adds its joint's constraints on the relative pose of the two
    markers, enforced with Lagrange multipliers. `axis` is given in both marker frames (the
    markers are defined so that the joint axis has the same components in each); a universal
    cut takes `axis` (cross arm fixed in the parent marker frame) and `axis2` (the arm fixed in
    the child marker frame), given as perpendicular unit vectors (as for a universal joint).
    `independent`: joints whose coordinates are held at their q0 while the mechanism is assembled
    from the other joints' approximate q0."""

    cuts: list[Joint] = field(default_factory=list)
    independent: list[str] = field(default_factory=list)


@dataclass
class Load:
    """point_force: force [N] and torque [N m] on `marker` of `body`, in `frame` (world or
    body); with `input: true` the inputs `<name>.force[1..3]` and `<name>.torque[1..3]` add to
    them at run time (FMU inputs, or `inputs=` of simulate). spring_damper: between marker_a
    and marker_b ('body.marker'), stiffness [N/m],
    damping [N s/m], rest_length [m], acting along the line between the markers; with
    rest_length 0 it is an isotropic bushing, force k d + c d' with d the vector from a to b
    (a compliant pin: it can close a kinematic loop). elastic_rod: a slender elastic rod pinned
    at marker_a and marker_b ('body.marker'), of unstretched `length` [m], `material` (E, rho) and
    `section` (its area A): axial stiffness E A / length along the line between the ends, axial
    `damping` [N s/m], and its mass rho A length with the consistent (linear) distribution
    between the ends, exact for its rigid motion; it bends not (a two-force member). It closes a
    loop by its elasticity, with no constraint (Verlinden et al., Example 3)."""

    type: Literal["point_force", "spring_damper", "elastic_rod"]
    name: str = ""
    body: Optional[str] = None
    marker: Optional[str] = None
    force: Sequence[float] = (0.0, 0.0, 0.0)
    torque: Sequence[float] = (0.0, 0.0, 0.0)
    frame: Literal["world", "body"] = "world"
    input: bool = False
    marker_a: Optional[str] = None
    marker_b: Optional[str] = None
    stiffness: float = 0.0
    damping: float = 0.0
    rest_length: float = 0.0
    length: Optional[float] = None
    material: Optional[Material] = None
    section: Optional[Section] = None


@dataclass
class Sensor:
    """type marker (default): position, velocity and orientation of `marker` of `body` in the
    world frame. On a beam body, at station `x` [m] along the beam from its root:
    strain_gauge: the surface strain [m/m] at the section point (`y`, `z`) [m] (body axes) in the
    unit `direction` (body axes, default axial (1, 0, 0)), small strain from the modal fields;
    section_force: the force [N] and moment [N.m] the outboard part (beyond x) exerts on the
    inboard part at the section centroid, body axes: axial force, two shear forces, torsion and
    two bending moments."""

    name: str
    body: str
    marker: Optional[str] = None
    type: Literal["marker", "strain_gauge", "section_force"] = "marker"
    x: Optional[float] = None
    y: float = 0.0
    z: float = 0.0
    direction: Sequence[float] = (1.0, 0.0, 0.0)


# Tolerances that can mean something. rtol: below 1e-14 no double-precision run meets it (the
# steps shrink until the solver gives up); above 1 (100 %) the error control is off. atol is in
# the units of each state (rad, m, rad/s, m/s; modal coordinates by their scale): up to 1.
RTOL_RANGE = (1e-14, 1.0)
ATOL_MAX = 1.0
# rtol where none is given, per method (default_rtol). radau (order 5, its Newton iterations
# converged to 1e-4 of the tolerance) ends 3 to 1000 times closer to the solution than the
# implicit method at the same rtol, and at 1e-5 closer than the implicit method at 1e-6 for
# about the same CPU or less on every flexible model measured (docs/work-precision.md, "Choice
# of defaults"; dopri5 at 1e-6 stays closer still where its steps are stable).
RTOL_DEFAULT = 1e-6
RTOL_RADAU = 1e-5


def default_rtol(method: str) -> float:
    """The relative tolerance of `method` when the solver settings give none."""
    return RTOL_RADAU if method == "radau" else RTOL_DEFAULT


@dataclass
class Solver:
    """method: rk4 (fixed step h [s], warns past its stability bound), dopri5 (adaptive,
    rtol/atol), implicit (adaptive L-stable Rosenbrock-W ROS34PW2 reusing its Jacobian and LU
    factors), radau (adaptive Radau IIA of order 5 with simplified Newton iterations, for stiff
    flexible models); None (the default, Model.solver_method): radau for a model with a flexible
    body, dopri5 for a rigid one. max_step [s] bounds the internal step of the adaptive
    methods; output_step [s] is the sampling of results. rtol within RTOL_RANGE (None: the
    method's default, default_rtol: 1e-5 for radau, 1e-6 for the others), atol (None: rtol
    times each state's scale) at most ATOL_MAX. formulation: joint
    (minimal coordinates, the default, also in FMUs) or natural (rigid mechanisms only: points
    and unit vectors with a constant mass matrix, flexmbs.natural; a cross-check in simulate).
    dynamics: how joint-coordinate forward dynamics is solved: recursive (articulated-body
    algorithm, O(bodies), closed loops solved on its factorisation), composite (dense mass
    matrix and Cholesky), or auto (recursive on trees and on loop models of 7 or more bodies,
    where it is faster; composite otherwise); massive elastic rods always take the composite
    route."""

    method: Optional[Literal["rk4", "dopri5", "implicit", "radau"]] = None
    step: float = 1e-3
    rtol: Optional[float] = None
    atol: Optional[float] = None
    max_step: float = 1e-2
    output_step: float = 1e-2
    formulation: Literal["joint", "natural"] = "joint"
    dynamics: Literal["auto", "recursive", "composite"] = "auto"


@dataclass
class Parameter:
    """A model value exposed as an FMU parameter named `name`. `path` points at a number in the
    model: `<section>.<entry name>.<field>[.<field>...]`, a 1-based `[i]` indexing a list, e.g.
    `joints.elbow.spring.stiffness`, `bodies.link2.tip_mass`, `bodies.hub.inertia[3]`. `unit`
    defaults to the unit of the field where it is unambiguous; min/max bound accepted values."""

    name: str
    path: str
    unit: Optional[str] = None
    min: Optional[float] = None
    max: Optional[float] = None
    description: str = ""


@dataclass
class Export:
    """How the model is exported as an FMU: author and version of the model, the parameters it
    exposes, and the default experiment (stop_time [s], step_size [s]: communication step,
    default the solver's output_step)."""

    author: str = ""
    version: str = "1.0"
    parameters: list[Parameter] = field(default_factory=list)
    stop_time: float = 1.0
    step_size: Optional[float] = None


@dataclass
class Model:
    """A mechanism: bodies connected by a tree of joints, with loads and sensors."""

    name: str = "model"
    description: str = ""
    gravity: Sequence[float] = (0.0, 0.0, -9.81)
    ground_markers: list[Marker] = field(default_factory=lambda: [Marker("origin")])
    bodies: list[Body] = field(default_factory=list)
    joints: list[Joint] = field(default_factory=list)
    loads: list[Load] = field(default_factory=list)
    sensors: list[Sensor] = field(default_factory=list)
    loops: Loops = field(default_factory=Loops)
    solver: Solver = field(default_factory=Solver)
    fmu: Export = field(default_factory=Export)
    source: Optional[str] = None

    def solver_method(self) -> str:
        """The integration method: solver.method, or where it is not given, radau for a model
        with a flexible body and dopri5 for a rigid one. Its flexible bodies' elastic and
        interface modes (hundreds of Hz to kHz) bound dopri5's step by stability and ring
        undamped at its tolerance; the L-stable radau steps over them, and at its default rtol
        ends closer than the implicit method at 1e-6 for about the same CPU or less on every
        flexible model measured (docs/work-precision.md, "Choice of defaults")."""
        if self.solver.method is not None:
            return self.solver.method
        return "radau" if any(b.type != "rigid" for b in self.bodies) else "dopri5"

    def solver_rtol(self, method: Optional[str] = None) -> float:
        """The relative tolerance: solver.rtol, or where it is not given, the default of `method`
        (None: the model's, solver_method) (default_rtol)."""
        return self.solver.rtol if self.solver.rtol is not None else default_rtol(method or self.solver_method())

    def body(self, name: str) -> Body:
        for b in self.bodies:
            if b.name == name:
                return b
        raise KeyError(f"no body named {name!r}; known bodies: {', '.join(b.name for b in self.bodies)}")

    def joint(self, name: str) -> Joint:
        for j in self.joints:
            if j.name == name:
                return j
        raise KeyError(f"no joint named {name!r}; known joints: {', '.join(j.name for j in self.joints)}")
