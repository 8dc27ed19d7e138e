"""The articulated-body recursion (kernels/articulated.py, closed loops by
kernels/loop_closure.py) against the composite mass-matrix route (kernels/dynamics.py), an
independent formulation of the same equations: accelerations, motion-drive torques and loop
multipliers at random states, whole simulations, and energy conservation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import flexmbs
from flexmbs.kernels.entry import composite_accelerations, recursive_accelerations
from flexmbs.kernels.drives import MOTION
from flexmbs.kernels.structs import box, make_workspace
from flexmbs.model import (Body, Damping, Drive, Joint, Load, Marker, Material, Model, Profile, Section,
                           Solver, Spring)
from flexmbs.model import model_from_dict
from flexmbs.compile import compile_model
from flexmbs.compile.loops import LOOP_RECURSION_BODIES

from mechanisms import huang_arm, spin_up_beam
from models import four_bar_chain

JOINT_TYPES = ("revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "free", "fixed")
TOL = 1e-10


def _unit(rng: np.random.Generator) -> np.ndarray:
    a = rng.normal(size=3)
    return a / np.linalg.norm(a)


def _perpendicular(rng: np.random.Generator, a: np.ndarray) -> np.ndarray:
    b = rng.normal(size=3)
    b -= (b @ a) * a
    return b / np.linalg.norm(b)


def _rotation(rng: np.random.Generator) -> dict:
    return {"axis": tuple(_unit(rng)), "angle": float(rng.uniform(-180, 180))}


def _rigid(rng: np.random.Generator, name: str, markers: list[Marker]) -> Body:
    """A rigid body with a random mass, centre of mass and (physical) principal inertia."""
    p = rng.uniform(0.1, 1.0, 3)
    inertia = (p[1] + p[2], p[0] + p[2], p[0] + p[1])      # triangle inequality holds
    return Body(name, mass=float(rng.uniform(0.5, 3.0)), com=tuple(rng.normal(size=3) * 0.3),
                inertia=inertia, markers=markers)


def _joint(rng: np.random.Generator, name: str, jtype: str, parent: str, pm: str, child: str, cm: str,
           **kw) -> Joint:
    a = _unit(rng)
    return Joint(name, jtype, parent, pm, child, cm, axis=tuple(a), axis2=tuple(_perpendicular(rng, a)), **kw)


def rigid_chain(n: int, types: tuple[str, ...], seed: int = 0) -> Model:
    """Serial chain of n rigid bodies with random inertia and rotated markers; joint k of type
    types[k % len(types)], with springs, dampers and rotor inertia on some."""
    rng = np.random.default_rng(seed)
    bodies, joints = [], []
    parent, pm = "ground", "origin"
    for k in range(n):
        name = f"b{k}"
        bodies.append(_rigid(rng, name, [
            Marker("in", position=tuple(rng.normal(size=3) * 0.2), rotation=_rotation(rng)),
            Marker("out", position=tuple(rng.normal(size=3) * 0.5), rotation=_rotation(rng))]))
        jt = types[k % len(types)]
        extra = {}
        if k % 2 == 1 and jt not in ("spherical", "free"):   # quaternion joints take neither
            extra = dict(spring=Spring(stiffness=3.0, damping=0.2, preload=0.1), rotor_inertia=0.07)
        joints.append(_joint(rng, f"j{k}", jt, parent, pm, name, "in", **extra))
        parent, pm = name, "out"
    return Model("chain", gravity=tuple(rng.normal(size=3) * 5), bodies=bodies, joints=joints)


def branched_tree(seed: int = 1) -> Model:
    """A base on a free joint with three branches, one of them two bodies deep."""
    rng = np.random.default_rng(seed)
    mk = [Marker(f"m{i}", position=tuple(rng.normal(size=3) * 0.4), rotation=_rotation(rng)) for i in range(4)]
    bodies = [_rigid(rng, "base", mk)]
    joints = [_joint(rng, "jb", "free", "ground", "origin", "base", "m0")]
    for i, (jt, name) in enumerate((("revolute", "arm1"), ("universal", "arm2"), ("spherical", "arm3"))):
        bodies.append(_rigid(rng, name, [Marker("in", rotation=_rotation(rng)),
                                         Marker("out", position=(0.5, 0.1, 0.0))]))
        joints.append(_joint(rng, f"j_{name}", jt, "base", f"m{i + 1}", name, "in"))
    bodies.append(_rigid(rng, "hand", [Marker("in")]))
    joints.append(_joint(rng, "j_hand", "prismatic", "arm1", "out", "hand", "in"))
    return Model("tree", gravity=(0, 0, -9.81), bodies=bodies, joints=joints)


def _beam(name: str, length: float, modes: int = 3, tip_mass: float = 0.2) -> Body:
    return Body(name, type="beam", length=length, elements=4, modes=modes,
                material=Material(E=7e10, G=2.6e10, rho=2700.0),
                section=Section("rectangle", width=0.02, height=0.01), tip_mass=tip_mass,
                damping=Damping(stiffness_proportional=1e-4),
                markers=[Marker("root", x=0.0), Marker("mid", x=0.4 * length),
                         Marker("tip", x=length, rotation={"axis": (1, 0, 0), "angle": 30})])


def flexible_tree(motion_elbow: bool = False) -> Model:
    """Rigid hub, flexible beam, a second flexible beam on its tip (flexible parent and child) and
    a rigid payload on a spherical joint at the second beam's tip; a servo drive with rotor
    inertia, a torque drive (or a motion drive), a point force with inputs on a flexible marker
    in body axes, a spring-damper along a line and a zero-length bushing between flexible markers."""
    hub = Body("hub", mass=3.0, com=(0.05, 0, 0), inertia=(0.02, 0.03, 0.04),
               markers=[Marker("root"), Marker("out", position=(0.1, 0, 0), rotation={"axis": (1, 0, 0), "angle": 90})])
    payload = Body("payload", mass=0.7, com=(0.05, 0.02, 0.0), inertia=(1e-3, 2e-3, 2.5e-3),
                   markers=[Marker("in"), Marker("p", position=(0.1, 0.0, 0.05))])
    elbow_drive = (Drive("motion", profile=Profile("sine", offset=0.3, amplitude=0.5, frequency=1.3, phase=0.2))
                   if motion_elbow else Drive("torque", torque=0.5))
    joints = [Joint("shoulder", "revolute", "ground", "origin", "hub", "root", axis=(0, 0, 1), rotor_inertia=0.05,
                    drive=Drive("servo", profile=Profile("sine", amplitude=0.4, frequency=0.7), kp=50.0, kd=2.0,
                                motor_inertia=0.01)),
              Joint("elbow", "revolute", "hub", "out", "link1", "root", axis=(0, 0, 1), drive=elbow_drive,
                    spring=Spring(stiffness=2.0, damping=0.1)),
              Joint("wrist", "universal", "link1", "tip", "link2", "root", axis=(0, 0, 1), axis2=(0, 1, 0)),
              Joint("grip", "spherical", "link2", "tip", "payload", "in")]
    loads = [Load("point_force", name="push", body="link1", marker="mid", force=(0.3, -1.0, 2.0),
                  torque=(0.1, 0.2, -0.3), frame="body", input=True),
             Load("spring_damper", name="cable", marker_a="hub.out", marker_b="link2.mid", stiffness=40.0,
                  damping=0.5, rest_length=0.3),
             Load("spring_damper", name="bushing", marker_a="link1.tip", marker_b="payload.p", stiffness=30.0,
                  damping=0.2)]
    return Model("flex_tree", gravity=(0.5, -1.0, -9.81), bodies=[hub, _beam("link1", 0.8), _beam("link2", 0.6), payload],
                 joints=joints, loads=loads)


def _random_state(system, rng: np.random.Generator, deflection: float = 0.2):
    """Random q (unit quaternions; modal coordinates deflecting their body by up to `deflection`
    of its size), random u and inputs."""
    A = system.arrays
    q = system.q0 + rng.normal(size=system.nq)
    u = rng.normal(size=system.nv)
    for i in range(A.nb):
        k = A.quat_q[i]
        if k >= 0:
            qq = rng.normal(size=4)
            q[k:k + 4] = qq / np.linalg.norm(qq)
        n, e0, v0 = A.nm[i], A.eq[i], A.ev[i]
        q[e0:e0 + n] = deflection * A.eta_max[i, :n] * rng.uniform(-1, 1, n)
        u[v0:v0 + n] = 10.0 * deflection * A.eta_max[i, :n] * rng.normal(size=n)
    return q, u, rng.normal(size=len(system.inputs))


def _solve(route, system, t, q, u, inputs):
    ws = make_workspace(system.arrays)
    udot = np.zeros(system.nv)
    ok = route(system.ref, box(ws), t, q.copy(), u.copy(), inputs, udot)
    return ok, udot, ws.tau_drive.copy(), ws.c_lam.copy()


def assert_routes_agree(model: Model, states: int = 4, seed: int = 0, deflection: float = 0.2) -> None:
    system = compile_model(model)
    rng = np.random.default_rng(seed)
    motion = system.arrays.drive == MOTION
    for _ in range(states):
        q, u, inputs = _random_state(system, rng, deflection)
        t = float(rng.uniform(0, 3))
        ok_c, ud_c, tau_c, lam_c = _solve(composite_accelerations, system, t, q, u, inputs)
        ok_r, ud_r, tau_r, lam_r = _solve(recursive_accelerations, system, t, q, u, inputs)
        assert ok_c and ok_r
        assert np.abs(ud_r - ud_c).max() <= TOL * np.abs(ud_c).max()
        if motion.any():
            assert np.abs(tau_r - tau_c)[motion].max() <= TOL * np.abs(tau_c[motion]).max()
        if lam_c.size:
            assert np.abs(lam_c).max() > 0.0
            assert np.abs(lam_r - lam_c).max() <= TOL * np.abs(lam_c).max()


@pytest.mark.parametrize("jtype", JOINT_TYPES)
def test_single_joint_of_every_type(jtype):
    """The joint at the root and between moving bodies, alone and repeated."""
    assert_routes_agree(rigid_chain(2, (jtype, "spherical"), seed=3))
    assert_routes_agree(rigid_chain(2, ("revolute", jtype), seed=4))
    if jtype != "fixed":
        assert_routes_agree(rigid_chain(3, (jtype,), seed=5))


@pytest.mark.parametrize("n", range(1, 11))
def test_rigid_chains_with_every_joint_type(n):
    assert_routes_agree(rigid_chain(n, JOINT_TYPES[n % 8:] + JOINT_TYPES[:n % 8], seed=n))


def test_branched_tree():
    assert_routes_agree(branched_tree())


def test_hinge_axes_off_unit_length_as_the_checks_accept():
    """Axes 5e-7 longer than unit, which the model's checks accept: the recursion's hinge tables
    (compile/joints._hinge_tables) and the composite route's rotation take the same axis."""
    model = rigid_chain(3, ("revolute",), seed=6)
    joints = [replace(j, axis=tuple(np.asarray(j.axis) * (1.0 + 5e-7))) for j in model.joints]
    assert_routes_agree(replace(model, joints=joints))


def test_huang_arm_flexible_child():
    assert_routes_agree(huang_arm(alpha=1e-3, springs=True))


def _cantilever_basis(model: Model) -> Model:
    """The model with its beams on the cantilever basis (interface_modes: false), as these
    comparisons were set up: their random states put 0.3 of the body size on every modal
    coordinate and rk4 at 0.2 ms steps; the default basis's interface modes (up to 3.9 and 5.0 kHz
    here, omega^2 2e5 times the first bending mode's) turn such states into elastic forces that
    swamp the rest, and take rk4 past its stability bound."""
    return replace(model, bodies=[replace(b, interface_modes=False) if b.type == "beam" else b for b in model.bodies])


@pytest.mark.parametrize("motion_elbow", [False, True])
def test_flexible_parents_loads_servos_and_rotor_inertia(motion_elbow):
    """Flexible beams carrying flexible and rigid children, with every kind of drive and load."""
    assert_routes_agree(_cantilever_basis(flexible_tree(motion_elbow)), states=6, deflection=0.3)


def test_spin_up_beam_with_prescribed_motion():
    assert_routes_agree(spin_up_beam(4.0, modes=4))


def test_space_manipulator():
    assert_routes_agree(flexmbs.load_model("he_space_manipulator"))


@pytest.mark.parametrize("name", ["four_bar", "slider_crank", "bricard", "he_crank_rocker"])
def test_shipped_loops(name):
    """Planar and spatial loops, redundant rows dropped, a motion-driven crank (slider_crank),
    a flexible coupler with interface modes (he_crank_rocker)."""
    model = flexmbs.load_model(name)
    assert_routes_agree(model, deflection=0.05)


def test_chain_of_coupled_loops():
    """Eight four-bars, each driving the next: every loop shares a subtree with its neighbours."""
    assert_routes_agree(model_from_dict(four_bar_chain(8)), states=3)


def test_loop_rows_couple_only_their_neighbours():
    """The coupling of the kept rows in G M^-1 G^T follows the tree: in a chain of n four-bars
    (two kept rows each) a row meets the rows of its own and the neighbouring loops only, so the
    envelope grows as n (what makes the loop solve O(n)); and it is the envelope of the dense
    G M^-1 G^T of the composite route, which is zero outside it."""
    for n in (4, 16):
        system = compile_model(model_from_dict(four_bar_chain(n)))
        A = system.arrays
        assert A.cr_act.size == 2 * n
        assert np.all(np.diff(A.cr_nbr_ptr) <= 4)
        assert np.all(np.arange(2 * n) - A.cr_env <= 3)
    ws = make_workspace(A)
    q, u = system.q0 + 0.01, system.u0
    ok = composite_accelerations(system.ref, box(ws), 0.0, q.copy(), u.copy(), system.input_defaults, np.zeros(A.nv))
    assert ok
    G = ws.c_G[A.cr_act]
    M = ws.M.copy()
    S = G @ np.linalg.solve(M, G.T)
    coupled = np.zeros(S.shape, bool)
    for i in range(A.cr_act.size):
        coupled[i, A.cr_nbr[A.cr_nbr_ptr[i]:A.cr_nbr_ptr[i + 1]]] = True
    coupled |= coupled.T
    assert np.abs(S[~coupled]).max() <= 1e-12 * np.abs(S).max()
    assert np.abs(S[coupled]).max() > 0.0


def test_loop_simulations_agree():
    """Three coupled four-bars for 0.5 s: the routes' crank and last rocker angles and the cut
    joints' reaction forces agree along the whole run (dopri5 at rtol 1e-10)."""
    model = model_from_dict(four_bar_chain(3))
    kw = dict(rtol=1e-10, output_step=0.01)
    rc = flexmbs.simulate(_with_dynamics(model, "composite"), 0.5, **kw)
    rr = flexmbs.simulate(_with_dynamics(model, "recursive"), 0.5, **kw)
    assert rc.system.arrays.recursive == 0 and rr.system.arrays.recursive == 1
    names = ["crank.q", "rocker_2.q"] + [n for n in rc.names if ".force[" in n and np.abs(rc[n]).max() > 1e-3]
    assert len(names) >= 5
    for name in names:
        scale = np.abs(rc[name]).max()
        assert np.abs(rr[name] - rc[name]).max() <= 1e-7 * scale, name


def test_selection():
    """recursive chooses the recursion wherever it applies (trees and loops), auto on trees and
    on loop models from LOOP_RECURSION_BODIES bodies on; composite always the composite route;
    massive rods always the composite route."""
    tree = flexible_tree()
    assert compile_model(tree).arrays.recursive == 1
    assert compile_model(replace(tree, solver=Solver(dynamics="composite"))).arrays.recursive == 0
    four_bar = flexmbs.load_model("four_bar")
    assert compile_model(four_bar).arrays.recursive == 0
    assert compile_model(_with_dynamics(four_bar, "recursive")).arrays.recursive == 1
    assert compile_model(model_from_dict(four_bar_chain(LOOP_RECURSION_BODIES // 2))).arrays.recursive == 1
    rods = flexmbs.load_model("verlinden_slider_crank")
    assert compile_model(_with_dynamics(rods, "recursive")).arrays.recursive == 0


def test_unknown_dynamics_option_is_named():
    with pytest.raises(flexmbs.ModelError, match="dynamics"):
        compile_model(replace(huang_arm(), solver=Solver(dynamics="fast")))


def _with_dynamics(model: Model, dynamics: str) -> Model:
    return replace(model, solver=replace(model.solver, dynamics=dynamics))


def test_simulations_agree():
    model = _cantilever_basis(flexible_tree(motion_elbow=True))
    kw = dict(method="rk4", step=2e-4, output_step=0.01)
    rc = flexmbs.simulate(_with_dynamics(model, "composite"), 0.3, inputs={"push.force[2]": 1.5}, **kw)
    rr = flexmbs.simulate(_with_dynamics(model, "recursive"), 0.3, inputs={"push.force[2]": 1.5}, **kw)
    for name in ("shoulder.q", "wrist.q[2]", "elbow.tau", "link1.eta[1]", "link2.eta[2]"):
        scale = np.abs(rc[name]).max()
        assert np.abs(rr[name] - rc[name]).max() <= 1e-8 * scale, name


def test_recursive_conserves_energy_of_flexible_tree():
    """A conservative flexible tree (no damping, drives or dissipative loads) keeps its energy,
    evaluated by the composite route's kinetic energy, to 1e-6 of the largest kinetic energy."""
    model = flexible_tree()
    bodies = [replace(b, damping=Damping()) if b.type == "beam" else b for b in model.bodies]
    joints = [replace(j, drive=Drive(), spring=None) for j in model.joints]
    joints[0] = replace(joints[0], qd0=(2.0,))
    model = replace(model, bodies=bodies, joints=joints, loads=[],
                    solver=Solver(method="dopri5", rtol=1e-11, max_step=1e-3, output_step=0.01, dynamics="recursive"))
    r = flexmbs.simulate(model, 0.5)
    e = r["energy.total"]
    assert np.abs(e - e[0]).max() < 1e-6 * r["energy.kinetic"].max()
