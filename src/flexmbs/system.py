"""Compile a Model into the System: flat, immutable numpy arrays the numba kernels run on.

Coordinate layout: q = [joint coordinates of every body in tree order; modal coordinates of
every flexible body], u likewise (joint velocities; modal rates). Bodies are ordered root to
leaves, so a parent always precedes its children.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .flex import sections as sec
from .flex.blas import one_blas_thread
from .flex.invariants import (
    FlexBodyData,
    beam_body,
    body_size,
    consistent_mass_matrix,
    points_mass_matrix,
    rigid_mass_matrix,
    superelement_body,
)
from .flex.superelement import load_matrix_files, load_npz
from .kernels import profiles as prof
from .kernels.drives import MOTION, SERVO, TORQUE
from .kernels.joints import CODE_OF, FREE, SPHERICAL
from .kernels.structs import SystemArrays, box, make_workspace
from .model import (
    GROUND,
    JOINT_NQ,
    JOINT_NV,
    PROFILE_TYPES,
    Body,
    Issue,
    Marker,
    Model,
    ModelError,
    Section,
    inertia_matrix,
    load_model,
    validate,
)
from .loops import TOL, AssemblyWarning, assemble, cut_rows, row_coupling, row_names
from .so3 import quat_from_rotvec, rotation_matrix
from .model.interfaces import interface_nodes, interface_stations
from .model.segments import expand_segments
from .model.validate import SUPERELEMENT_FILES


@dataclass(frozen=True)
class System:
    """The compiled model: arrays for the kernels plus the names that map them back.

    arrays: SystemArrays; q0, u0: initial coordinates; bodies/joints: names in tree order;
    joint_q/joint_u: name -> (start, count) in q/u; flex: body name -> FlexBodyData;
    inputs: input signal names in order; markers: 'body.marker' -> marker index;
    sensors: marker sensor name -> marker index (strain gauges and section forces: gauges.py); loop_rows: the names of the loop constraints (rows of
    the constraint Jacobian), loop_redundant: those found dependent on the others and dropped;
    loop_corrections: joint or flexible body name -> (largest change of its positions, of its
    velocities) made by loop assembly to the model's q0/qd0 [rad, m, modal amplitudes; per s].
    """

    model: Model
    arrays: tuple
    q0: np.ndarray
    u0: np.ndarray
    bodies: list[str]
    joints: list[str]
    joint_q: dict[str, tuple[int, int]]
    joint_u: dict[str, tuple[int, int]]
    body_eta: dict[str, tuple[int, int]]
    flex: dict[str, FlexBodyData]
    inputs: list[str]
    input_defaults: np.ndarray
    markers: dict[str, int]
    sensors: dict[str, int]
    drives: dict[str, str] = field(default_factory=dict)
    loop_rows: list[str] = field(default_factory=list)
    loop_redundant: list[str] = field(default_factory=list)
    loop_corrections: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def nq(self) -> int:
        return int(self.arrays.nq)

    @property
    def nv(self) -> int:
        return int(self.arrays.nv)

    @property
    def ref(self):
        """The arrays boxed for the kernels (passed by reference, so calls stay cheap). Boxed
        on first use: that loads the numba kernels, which a System built only to describe an
        FMU's interface does not need."""
        if self._ref is None:
            object.__setattr__(self, "_ref", box(self.arrays))
        return self._ref

    def workspace(self):
        """Fresh boxed scratch arrays for the kernels (one per concurrent evaluation)."""
        return box(make_workspace(self.arrays))

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ref", None)


def _section(s: Section) -> sec.Section:
    """The section properties of a model file's cross-section."""
    if s.shape == "rectangle":
        return sec.rectangle(s.width, s.height)
    if s.shape == "circle":
        return sec.circle(s.diameter)
    if s.shape == "tube":
        return sec.tube(s.outer_diameter, s.thickness)
    if s.shape == "box_tube":
        return sec.box_tube(s.width, s.height, s.thickness)
    return sec.explicit(s.A, s.Iy, s.Iz, s.J)


@one_blas_thread
def flex_data(body: Body, model: Optional[Model] = None) -> Optional[FlexBodyData]:
    """Modal data of a flexible body (None for rigid bodies). With interface modes on (the default),
    the markers of `body` that `model`'s joints and loads use are its interface points
    (none without a model). Computed on one BLAS thread (flex/blas.py): the same bits in every
    process."""
    interface = body.interface_modes and body.type != "rigid"
    if body.type == "beam":
        tip_j = None if body.tip_inertia is None else inertia_matrix(body.tip_inertia)
        stations = (interface_stations(model, body) if model is not None else []) if interface else None
        return beam_body(body.length, body.elements, body.modes, body.material.E,
                         body.material.shear_modulus, body.material.rho, _section(body.section),
                         body.tip_mass, tip_j, body.rotary_inertia, body.geometric_stiffening, body.name,
                         body.static_modes, stations)
    if body.type == "superelement":
        if body.file is not None:
            se = load_npz(body.file)
        else:
            se = load_matrix_files(body.mass_file, body.stiffness_file, body.nodes_file, body.dofs_per_node)
        nodes = (interface_nodes(model, body) if model is not None else []) if interface else None
        return superelement_body(se, body.modes, tuple(body.reference_nodes), nodes)
    return None


def _flex_data_of(model: Model, body: Body) -> Optional[FlexBodyData]:
    """flex_data, with a superelement data error or a number too large to compute turned into a
    ModelError naming the body (and file), as the validator would have."""
    try:
        return flex_data(body, model)
    except ModelError:
        raise
    except (ValueError, OverflowError, FloatingPointError) as err:
        if body.type != "superelement" and not isinstance(err, (OverflowError, FloatingPointError)):
            raise
        index = next((i for i, b in enumerate(model.bodies) if b.name == body.name), None)
        where = f"bodies[{index}] {body.name!r}" if index is not None else f"body {body.name!r}"
        if body.type == "superelement":
            named = [n for n in SUPERELEMENT_FILES if getattr(body, n) and str(getattr(body, n)) in str(err)]
            where += f".{(named or ['file' if body.file is not None else 'mass_file'])[0]}"
            message = str(err)
        else:
            message = f"its numbers are beyond what can be computed ({err}); check the dimensions and units"
        raise ModelError([Issue(where, message, model.source)]) from None


# relative size of a correction worth reporting (joint values in rad, m, rad/s, m/s; modal ones
# in units of their state scales)
CORRECTION_TOL = 1e-6


def _report_corrections(system: System, q_given: np.ndarray, u_given: np.ndarray) -> None:
    """Record in system.loop_corrections {joint or body name: (largest position change, largest
    velocity change)} what assembly changed from the model's initial values (q_given, u_given), and warn (per joint
    or body, with the size) where it changed what the model stated: the qd0 given to a joint
    that is not motion-driven (its velocity is then not the one asked for) or a flexible body's modal coordinates (the
    change is elastic energy put into the initial state, estimated here for mass-normalised
    modes: strain 1/2 d_eta^T K d_eta, kinetic 1/2 |d_etadot|^2)."""
    import warnings

    from .solvers.stepper import state_scales

    model, S = system.model, system.arrays
    dq, du = system.q0 - q_given, system.u0 - u_given
    scales = state_scales(system)
    for jn in system.joints:
        (q0, nq), (u0, nv) = system.joint_q[jn], system.joint_u[jn]
        pos = float(np.max(np.abs(dq[q0:q0 + nq]), initial=0.0))
        vel = float(np.max(np.abs(du[u0:u0 + nv]), initial=0.0))
        if max(pos, vel) > TOL:
            system.loop_corrections[jn] = (pos, vel)
        given = np.ravel(np.asarray(model.joint(jn).qd0, dtype=float))
        prescribed = bool(np.any(S.drive[u0:u0 + nv] == MOTION))  # its profile sets the rate, loops or not
        if given.size and not prescribed and vel > CORRECTION_TOL * max(1.0, float(np.max(np.abs(given)))):
            warnings.warn(f"model {model.name}: loop assembly changed the initial velocity of joint {jn!r} by "
                          f"{vel:.3g} (rad/s or m/s): its qd0 is not consistent with the loops; the velocities "
                          "follow from the qd0 of the joints in loops.independent (list it there to hold it)",
                          AssemblyWarning, stacklevel=3)
    for name, (e0, n) in system.body_eta.items():
        v0 = S.ev[system.bodies.index(name)]
        d_eta, d_rate = dq[e0:e0 + n], du[v0:v0 + n]
        pos, vel = float(np.max(np.abs(d_eta), initial=0.0)), float(np.max(np.abs(d_rate), initial=0.0))
        if max(pos, vel) > TOL:
            system.loop_corrections[name] = (pos, vel)
        moved = np.max(np.abs(d_eta) / scales[e0:e0 + n], initial=0.0)
        moved = max(moved, np.max(np.abs(d_rate) / scales[S.nq + v0:S.nq + v0 + n], initial=0.0))
        if moved > CORRECTION_TOL:
            energy = 0.5 * float(d_eta @ system.flex[name].Ke @ d_eta) + 0.5 * float(d_rate @ d_rate)
            warnings.warn(f"model {model.name}: loop assembly deformed flexible body {name!r}: its modal "
                          f"coordinates moved by up to {pos:.3g}, their rates by up to {vel:.3g}, about "
                          f"{energy:.3g} J of elastic energy in the initial state; give q0/qd0 consistent "
                          "with the loops or hold the joints that set them in loops.independent",
                          AssemblyWarning, stacklevel=3)


def tree_groups(parent: np.ndarray) -> dict[str, np.ndarray]:
    """tree_top, tree_sub_ptr, tree_sub (SYSTEM_FIELDS) of a tree given by its parent array
    (tree order: parents first)."""
    nb = parent.size
    top = np.arange(nb, dtype=np.int64)
    for b in range(nb):
        if parent[b] >= 0:
            top[b] = top[parent[b]]
    order = np.argsort(top, kind="stable").astype(np.int64)
    ptr = np.searchsorted(top[order], np.arange(nb + 1)).astype(np.int64)
    return {"tree_top": top, "tree_sub_ptr": ptr, "tree_sub": order}


# Bodies from which the recursion with closed loops beats the composite route (one RHS, the
# shipped loop models and benchmarks/models.four_bar_chain: four-bar (3 bodies) 4.2 against
# 3.6 us, Bricard (5) 7.5 against 6.2 us, 2 coupled four-bars (5) 7.5 against 6.9 us, 3 (7)
# 10.8 against 11.1 us, 8 (17) 26.1 against 46.7 us)
LOOP_RECURSION_BODIES = 7


def uses_recursion(dynamics: str, arrays: SystemArrays) -> bool:
    """Whether forward dynamics runs the articulated-body recursion (closed loops through
    kernels/loop_closure.py): for 'recursive' on every model without massive elastic rods
    (which couple bodies outside the tree), for 'auto' on those trees, and on those models with
    cut joints from LOOP_RECURSION_BODIES bodies on, where it is the faster route; otherwise
    (and for 'composite') the composite mass matrix."""
    if dynamics == "composite" or np.any(arrays.sd_m > 0.0):
        return False
    return dynamics == "recursive" or arrays.cr_a.size == 0 or arrays.nb >= LOOP_RECURSION_BODIES


def _moment_cost(npt: int, n: int, foreshortening: bool) -> tuple[float, float]:
    """Estimated floating-point operations of one body_terms call by the mass-point sum and by
    the point moments (kernels/body.py), for npt points and n modes: the moments are used when
    cheaper (their foreshortening part grows as n^4, the point sum as npt n^2)."""
    points = npt * (3.5 * n * n + 25.0 * n + 40.0)
    moments = 30.0 * n * n + 40.0 * n + ((2.0 * n + 12.0) * n**3 if foreshortening else 0.0)
    return points, moments


def _point_moments(d: FlexBodyData, nmax: int, foreshortening: bool) -> dict[str, np.ndarray]:
    """Moments of a flexible body's mass points (m_q at r_q = s_q + P_q eta - 1/2 e_x eta^T H_q
    eta, body axes) that make the kernels' sums over points exact polynomials in eta
    (kernels/body.py), padded to nmax modes: iv_m [kg], iv_S, iv_A, iv_Sb, iv_Sk, iv_C, iv_Me
    and, with foreshortening, iv_G, iv_HS, iv_HP, iv_HH (SYSTEM_FIELDS has their meaning)."""
    n = d.n
    m, s, P = d.point_mass, d.point_position, d.point_shapes
    # the kernels' sums take H symmetric (the rate of eta^T H eta is 2 eta^T H etad)
    H = 0.5 * (d.point_H + np.swapaxes(d.point_H, 1, 2))
    pad = [(0, 0)]
    out = dict(
        iv_m=np.array(m.sum()), iv_S=m @ s, iv_A=np.einsum("q,qk,ql->kl", m, s, s),
        iv_Sb=np.pad(np.einsum("q,qkj->kj", m, P), pad + [(0, nmax - n)]),
        iv_Sk=np.pad(np.einsum("q,qk,qlj->klj", m, s, P), pad * 2 + [(0, nmax - n)]),
        iv_C=np.pad(np.einsum("q,qki,qlj->klij", m, P, P), pad * 2 + [(0, nmax - n)] * 2),
        iv_Me=np.pad(np.einsum("q,qki,qkj->ij", m, P, P), [(0, nmax - n)] * 2),
    )
    if foreshortening:
        e = (0, nmax - n)
        out.update(
            iv_G=np.pad(np.einsum("q,qab->ab", m, H), [e] * 2),
            iv_HS=np.pad(np.einsum("q,qab,qk->abk", m, H, s), [e, e, (0, 0)]),
            iv_HP=np.pad(np.einsum("q,qab,qkc->abkc", m, H, P), [e, e, (0, 0), e]),
            iv_HH=np.pad(np.einsum("q,qab,qcd->abcd", m, H, H), [e] * 4),
        )
    return out


def _stack_moments(slots: list[dict], fslots: list[dict], nmax: int) -> dict[str, np.ndarray]:
    """The System's iv_* arrays: one row per slot (_point_moments of the bodies that use them;
    fslots: those with foreshortening), shaped as SYSTEM_FIELDS declares even when empty."""
    out = {}
    for group, shapes in ((slots, dict(iv_m=(), iv_S=(3,), iv_A=(3, 3), iv_Sb=(3, nmax), iv_Sk=(3, 3, nmax),
                                       iv_C=(3, 3, nmax, nmax), iv_Me=(nmax, nmax))),
                          (fslots, dict(iv_G=(nmax, nmax), iv_HS=(nmax, nmax, 3), iv_HP=(nmax, nmax, 3, nmax),
                                        iv_HH=(nmax,) * 4))):
        for name, shape in shapes.items():
            out[name] = np.array([sl[name] for sl in group], dtype=float).reshape((len(group),) + shape)
    return out


def _tree_order(model: Model) -> list[int]:
    """Joint indices ordered so that every parent body precedes its children."""
    by_parent: dict[str, list[int]] = {}
    for k, j in enumerate(model.joints):
        by_parent.setdefault(j.parent, []).append(k)
    order, frontier = [], [GROUND]
    while frontier:
        nxt = []
        for name in frontier:
            for k in by_parent.get(name, []):
                order.append(k)
                nxt.append(model.joints[k].child)
        frontier = nxt
    return order


def _initial_joint_q(jtype: str, q0) -> np.ndarray:
    """Initial joint coordinates, with rotation vectors turned into unit quaternions."""
    nq = JOINT_NQ[jtype]
    q0 = np.asarray(q0, dtype=float).ravel()
    if jtype in ("spherical", "free"):
        lin = q0[:3] if jtype == "free" and q0.size >= 6 else np.zeros(0)
        rot = q0[lin.size:]
        if rot.size == 0:
            quat = np.array([1.0, 0.0, 0.0, 0.0])
        elif rot.size == 3:
            quat = quat_from_rotvec(rot)
        else:
            quat = rot / np.linalg.norm(rot)
        if jtype == "free":
            lin = lin if lin.size else np.zeros(3)
            return np.concatenate([lin, quat])
        return quat
    return q0 if q0.size else np.zeros(nq)


def _profile_row(p) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Profile -> (code, par, spline knots, spline coefficients rows [c0, c1, c2, c3])."""
    code = PROFILE_TYPES.index(p.type)
    par = np.zeros(prof.NPAR)
    knots = np.zeros(0)
    coef = np.zeros((0, 4))
    if p.type == "constant":
        par[:2] = p.value, p.rate
    elif p.type in ("ramp", "cycloidal"):
        par[:4] = p.q0, p.q1, p.t0, p.t1
    elif p.type == "sine":
        par[:4] = p.offset, p.amplitude, p.frequency, p.phase
    elif p.type == "spin_up":
        par[:2] = p.omega_s, p.t_s
    elif p.type == "table":
        knots = np.asarray(p.times, dtype=float)
        from scipy.interpolate import CubicSpline  # imported here: it costs 0.4 s at start-up

        cs = CubicSpline(knots, np.asarray(p.values, dtype=float), bc_type="clamped")
        coef = np.zeros((knots.size, 4))
        coef[:-1] = cs.c[::-1].T
        coef[-1, 0] = p.values[-1]
    return code, par, knots, coef


def model_argument(where: str, value: object) -> Model | System:
    """What a function of the API (`where`) was given as its model: a Model or a System as they
    are, a model file path or a shipped model's name loaded (load_model); anything else a
    TypeError naming the argument and what is accepted."""
    if isinstance(value, (Model, System)):
        return value
    if isinstance(value, (str, os.PathLike)):
        return load_model(value)
    raise TypeError(f"{where}: model = {value!r} ({type(value).__name__}): expected a Model (flexmbs.load_model), "
                    "a compiled System, a model file path or a shipped model's name")


def compile_model(model: Model) -> System:
    """Validate the model and compile it into a System (segmented beams become chains)."""
    validate(model)
    model = expand_segments(model)
    order = _tree_order(model)
    joints = [model.joints[k] for k in order]
    bodies = [model.body(j.child) for j in joints]
    body_index = {b.name: i for i, b in enumerate(bodies)}
    flex = {b.name: d for b in bodies if (d := _flex_data_of(model, b)) is not None}
    nb = len(bodies)
    nmax = max([1] + [d.n for d in flex.values()])

    # coordinates
    jq, jnq, ju, jnv = (np.zeros(nb, np.int64) for _ in range(4))
    nq = nv = 0
    for i, j in enumerate(joints):
        jq[i], jnq[i], ju[i], jnv[i] = nq, JOINT_NQ[j.type], nv, JOINT_NV[j.type]
        nq += jnq[i]
        nv += jnv[i]
    nm, eq, ev = (np.zeros(nb, np.int64) for _ in range(3))
    for i, b in enumerate(bodies):
        nm[i] = flex[b.name].n if b.name in flex else 0
        eq[i], ev[i] = nq, nv
        nq += nm[i]
        nv += nm[i]

    # inertia: mass points (exact in eta) plus a constant matrix Mc (see kernels/body.py)
    npmax = max([1] + [d.point_mass.size for d in flex.values()])
    mass = np.zeros(nb)
    pt_n = np.zeros(nb, np.int64)
    pt_m = np.zeros((nb, npmax))
    pt_s = np.zeros((nb, npmax, 3))
    pt_P = np.zeros((nb, npmax, 3, nmax))
    pt_H = np.zeros((nb, npmax, nmax, nmax))
    Mc = np.zeros((nb, 6 + nmax, 6 + nmax))
    Ke, De = (np.zeros((nb, nmax, nmax)) for _ in range(2))
    eta_max = np.full((nb, nmax), np.inf)
    iv_k, iv_h = np.full(nb, -1, np.int64), np.full(nb, -1, np.int64)
    slots: list[dict] = []
    fslots: list[dict] = []
    for i, b in enumerate(bodies):
        d = flex.get(b.name)
        if d is None:
            mass[i] = b.mass
            Mc[i, :6, :6] = rigid_mass_matrix(b.mass, np.asarray(b.com, float), inertia_matrix(b.inertia))
            continue
        n, npt = d.n, d.point_mass.size
        mass[i] = d.mass
        pt_n[i] = npt
        pt_m[i, :npt], pt_s[i, :npt] = d.point_mass, d.point_position
        pt_P[i, :npt, :, :n], pt_H[i, :npt, :n, :n] = d.point_shapes, d.point_H
        Mc[i, :6 + n, :6 + n] = consistent_mass_matrix(d) - points_mass_matrix(d)
        Ke[i, :n, :n] = d.Ke
        eta_max[i, :n] = body_size(d) / np.maximum(np.abs(d.nodal_modes).max(axis=0), 1e-300)
        # one ratio per normal mode: the interface modes past them take the last one
        ratios = np.asarray(b.damping.modal, dtype=float)
        zeta = np.pad(ratios, (0, n - ratios.size), mode="edge")[:n] if ratios.size else np.zeros(n)
        De[i, :n, :n] = b.damping.stiffness_proportional * d.Ke + np.diag(2.0 * zeta * d.freqs)
        foreshortening = bool(np.any(d.point_H != 0.0))
        points, moments = _moment_cost(npt, n, foreshortening)
        if moments < points:
            iv_k[i] = len(slots)
            slots.append(_point_moments(d, nmax, foreshortening))
            if foreshortening:
                iv_h[i] = len(fslots)
                fslots.append(slots[-1])
    moment_arrays = _stack_moments(slots, fslots, nmax)

    # markers: ground first, then each body's
    mk_body, mk_s0, mk_R0, mk_Phi, mk_Psi, mk_H = [], [], [], [], [], []
    markers: dict[str, int] = {}

    def add_marker(owner: str, bidx: int, mk: Marker, d: Optional[FlexBodyData]) -> None:
        Phi = np.zeros((3, nmax))
        Psi = np.zeros((3, nmax))
        H = np.zeros((nmax, nmax))
        if d is None:
            s0 = np.asarray(mk.position, dtype=float)
        else:
            s0, Phi[:, :d.n], Psi[:, :d.n], H[:d.n, :d.n] = d.marker(x=mk.x, node=mk.node)
        markers[f"{owner}.{mk.name}"] = len(mk_body)
        mk_body.append(bidx)
        mk_s0.append(s0)
        mk_R0.append(rotation_matrix(mk.rotation))
        mk_Phi.append(Phi)
        mk_Psi.append(Psi)
        mk_H.append(H)

    for mk in model.ground_markers:
        add_marker(GROUND, -1, mk, None)
    for i, b in enumerate(bodies):
        for mk in b.markers:
            add_marker(b.name, i, mk, flex.get(b.name))

    # joints
    parent = np.array([body_index.get(j.parent, -1) for j in joints], dtype=np.int64)
    jtype = np.array([CODE_OF[j.type] for j in joints], dtype=np.int64)
    pmark = np.array([markers[f"{j.parent}.{j.parent_marker}"] for j in joints], dtype=np.int64)
    cmark = [markers[f"{j.child}.{j.child_marker}"] for j in joints]
    for j, k in zip(joints, cmark):
        if np.any(mk_Phi[k]) or np.any(mk_Psi[k]):
            raise ModelError([Issue(
                f"joints '{j.name}'.child_marker",
                f"marker '{j.child_marker}' on flexible body '{j.child}' deforms; a joint must attach a "
                f"flexible child at its clamped reference (beam: x = 0; superelement: a reference node)")])
    c_pos = np.array([mk_s0[k] for k in cmark]).reshape(nb, 3)
    c_R = np.array([mk_R0[k] for k in cmark]).reshape(nb, 3, 3)
    axis1 = np.array([np.asarray(j.axis, float) for j in joints]).reshape(nb, 3)
    axis2 = np.array([np.asarray(j.axis2, float) for j in joints]).reshape(nb, 3)
    quat_q = np.full(nb, -1, np.int64)
    quat_u = np.full(nb, -1, np.int64)
    for i in range(nb):
        if jtype[i] == SPHERICAL:
            quat_q[i], quat_u[i] = jq[i], ju[i]
        elif jtype[i] == FREE:
            quat_q[i], quat_u[i] = jq[i] + 3, ju[i] + 3

    # per velocity coordinate
    uq = np.full(nv, -1, np.int64)
    k_spring, c_spring, q_preload, kp, kd, motor_J = (np.zeros(nv) for _ in range(6))
    drive = np.zeros(nv, np.int64)
    drive_in = np.full(nv, -1, np.int64)
    drive_prof = np.full(nv, -1, np.int64)
    profiles_rows: list = []
    inputs: list[str] = []
    input_defaults: list[float] = []
    drives: dict[str, str] = {}
    for i, j in enumerate(joints):
        for c in range(jnv[i]):
            if quat_u[i] >= 0 and ju[i] + c >= quat_u[i]:
                continue
            uq[ju[i] + c] = jq[i] + c
        motor_J[ju[i]:ju[i] + jnv[i]] = j.rotor_inertia + j.drive.motor_inertia
        if j.spring is not None:
            sl = slice(ju[i], ju[i] + jnv[i])
            k_spring[sl], c_spring[sl], q_preload[sl] = j.spring.stiffness, j.spring.damping, j.spring.preload
        dr = j.drive
        c = ju[i]
        drives[j.name] = dr.type
        if dr.type == "torque":
            drive[c] = TORQUE
            drive_in[c] = len(inputs)
            inputs.append(f"{j.name}.tau")
            input_defaults.append(dr.torque)
        elif dr.type in ("motion", "servo"):
            drive[c] = MOTION if dr.type == "motion" else SERVO
            drive_prof[c] = len(profiles_rows)
            row = _profile_row(dr.profile)
            if dr.profile.type == "input":
                row[1][0] = len(inputs)
                inputs.extend(f"{j.name}.{s}" for s in ("q_ref", "qd_ref", "qdd_ref"))
                input_defaults.extend([0.0, 0.0, 0.0])
            profiles_rows.append(row)
            kp[c], kd[c] = dr.kp, dr.kd
    nprof = max(1, len(profiles_rows))
    ntab = max([1] + [r[2].size for r in profiles_rows])
    prof_code = np.zeros(nprof, np.int64)
    prof_par = np.zeros((nprof, prof.NPAR))
    prof_t = np.zeros((nprof, ntab))
    prof_c = np.zeros((nprof, ntab, 4))
    prof_n = np.zeros(nprof, np.int64)
    for k, (code, par, knots, coef) in enumerate(profiles_rows):
        prof_code[k], prof_par[k], prof_n[k] = code, par, knots.size
        prof_t[k, :knots.size] = knots
        prof_c[k, :knots.size] = coef

    # loads
    pfs = [ld for ld in model.loads if ld.type == "point_force"]
    sds = [ld for ld in model.loads if ld.type in ("spring_damper", "elastic_rod")]
    # an elastic rod is a spring-damper along its ends with E A / L, rest length L and its mass
    rods = {id(ld): (_section(ld.section).A, ld.material) for ld in sds if ld.type == "elastic_rod"}
    pf_input = np.full(len(pfs), -1, np.int64)
    for f, ld in enumerate(pfs):
        if ld.input:
            pf_input[f] = len(inputs)
            inputs.extend([f"{ld.name}.force[{k}]" for k in (1, 2, 3)] + [f"{ld.name}.torque[{k}]" for k in (1, 2, 3)])
            input_defaults.extend([0.0] * 6)
    arrays = SystemArrays(
        nb=nb, nq=nq, nv=nv, gravity=np.asarray(model.gravity, dtype=float),
        parent=parent, jtype=jtype, pmark=pmark, c_pos=c_pos, c_R=c_R, axis1=axis1, axis2=axis2,
        jq=jq, jnq=jnq, ju=ju, jnv=jnv, quat_q=quat_q, quat_u=quat_u, **tree_groups(parent),
        nm=nm, eq=eq, ev=ev, eta_max=eta_max, mass=mass, pt_n=pt_n, pt_m=pt_m, pt_s=pt_s, pt_P=pt_P, pt_H=pt_H, Mc=Mc,
        iv_k=iv_k, iv_h=iv_h, **moment_arrays,
        Ke=Ke, De=De,
        mk_body=np.array(mk_body, np.int64), mk_s0=np.array(mk_s0).reshape(-1, 3),
        mk_R0=np.array(mk_R0).reshape(-1, 3, 3), mk_Phi=np.array(mk_Phi).reshape(-1, 3, nmax),
        mk_Psi=np.array(mk_Psi).reshape(-1, 3, nmax), mk_H=np.array(mk_H).reshape(-1, nmax, nmax),
        uq=uq, k_spring=k_spring, c_spring=c_spring, q_preload=q_preload, drive=drive, drive_in=drive_in,
        drive_prof=drive_prof, kp=kp, kd=kd, motor_J=motor_J,
        prof_code=prof_code, prof_par=prof_par, prof_t=prof_t, prof_c=prof_c, prof_n=prof_n,
        pf_marker=np.array([markers[f"{ld.body}.{ld.marker}"] for ld in pfs], np.int64),
        pf_force=np.array([ld.force for ld in pfs], float).reshape(-1, 3),
        pf_torque=np.array([ld.torque for ld in pfs], float).reshape(-1, 3),
        pf_frame=np.array([1 if ld.frame == "body" else 0 for ld in pfs], np.int64),
        pf_input=pf_input,
        sd_a=np.array([markers[ld.marker_a] for ld in sds], np.int64),
        sd_b=np.array([markers[ld.marker_b] for ld in sds], np.int64),
        sd_k=np.array([rods[id(ld)][1].E * rods[id(ld)][0] / ld.length if id(ld) in rods else ld.stiffness
                       for ld in sds], float),
        sd_c=np.array([ld.damping for ld in sds], float),
        sd_l0=np.array([ld.length if id(ld) in rods else ld.rest_length for ld in sds], float),
        sd_m=np.array([rods[id(ld)][1].rho * rods[id(ld)][0] * ld.length if id(ld) in rods else 0.0
                       for ld in sds], float),
        **cut_rows(model.loops.cuts, markers), cr_act=np.zeros(0, np.int64), cr_nbr_ptr=np.zeros(1, np.int64),
        cr_nbr=np.zeros(0, np.int64), cr_env=np.zeros(0, np.int64),
        recursive=0,
    )
    arrays = arrays._replace(**row_coupling(arrays))
    arrays = arrays._replace(recursive=int(uses_recursion(model.solver.dynamics, arrays)))

    q0 = np.zeros(nq)
    u0 = np.zeros(nv)
    for i, j in enumerate(joints):
        q0[jq[i]:jq[i] + jnq[i]] = _initial_joint_q(j.type, j.q0)
        if len(j.qd0):
            u0[ju[i]:ju[i] + jnv[i]] = np.asarray(j.qd0, dtype=float).ravel()
    joint_u = {j.name: (int(ju[i]), int(jnv[i])) for i, j in enumerate(joints)}
    loop_rows = [name for cut in model.loops.cuts for name in row_names(cut)]
    defaults = np.array(input_defaults, float)
    redundant: list[str] = []
    if model.loops.cuts:
        # consistent initial conditions and the independent constraint rows, evaluated on the
        # provisional arrays; the System is then built once, with the result
        done = assemble(model, arrays, box(arrays), joint_u, loop_rows, q0, u0, defaults)
        given = (q0, u0)
        q0, u0 = done.q0, done.u0
        arrays = arrays._replace(cr_on=done.active.astype(np.int64))
        arrays = arrays._replace(**row_coupling(arrays))
        redundant = [loop_rows[k] for k in done.redundant]
    system = System(
        model=model, arrays=arrays, q0=q0, u0=u0,
        bodies=[b.name for b in bodies], joints=[j.name for j in joints],
        joint_q={j.name: (int(jq[i]), int(jnq[i])) for i, j in enumerate(joints)},
        joint_u=joint_u,
        body_eta={b.name: (int(eq[i]), int(nm[i])) for i, b in enumerate(bodies) if nm[i] > 0},
        flex=flex, inputs=inputs, input_defaults=defaults,
        markers=markers, sensors={s.name: markers[f"{s.body}.{s.marker}"] for s in model.sensors
                                  if s.type == "marker"},
        drives=drives, loop_rows=loop_rows, loop_redundant=redundant,
    )
    if model.loops.cuts:
        _report_corrections(system, *given)
    return system
