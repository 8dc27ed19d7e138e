"""The natural-coordinate formulation (flexmbs.natural: points and unit vectors, constant mass
matrix, every joint a constraint, block factorisation in topology order), selected with
solver.formulation: natural, against the joint-coordinate formulation with cut joints (two
independent formulations of the same rigid closed-loop mechanisms must agree), against a dense
solve of the same equations, and against the fill bound of Kraus et al. 2001."""

from __future__ import annotations


import numpy as np
import pytest

import flexmbs
from flexmbs.model import Body, Joint, Loops, Marker, Model, Solver
from flexmbs.natural import compile_natural
from flexmbs.natural.kernels import accelerations, make_work, project
from flexmbs.model.catalog import models_dir

MODELS = models_dir()
STATES = [".q", ".qd"]


def both(model: Model, t_end: float, dt: float = 0.01):
    # the joint formulation at rtol 1e-11: its dopri5 serves the output points from dense
    # output, whose error on the joint rates is about 20 rtol (2e-9 rad/s at the files' 1e-10)
    joint = flexmbs.simulate(model, t_end, output_step=dt, rtol=min(model.solver_rtol(), 1e-11))
    model.solver.formulation = "natural"
    natural = flexmbs.simulate(model, t_end, output_step=dt)
    return joint, natural


def largest_difference(a, b, suffixes=(".q", ".qd", ".r[1]", ".r[2]", ".r[3]")) -> float:
    names = [n for n in a.names if n.endswith(suffixes)]
    assert names
    return max(np.max(np.abs(a[n] - b[n])) for n in names)


def test_four_bar_formulations_agree_and_conserve_energy() -> None:
    joint, natural = both(flexmbs.load_model(MODELS / "four_bar.yaml"), 1.0)
    assert largest_difference(joint, natural) < 1e-9
    e = natural["natural.energy"]                      # from its own constant mass matrix
    assert e[0] == pytest.approx(joint["energy.total"][0], rel=1e-12)
    assert np.ptp(e) < 1e-9 * e[0]
    assert np.max(natural["natural.residual"]) < 1e-11
    assert natural.stats["redundant"] == 3             # a planar loop in 3-D: 3 of the cut's 5 rows
    assert natural.stats["redundant_max"] == 3         # at every evaluation: no near-singular pose


def test_slider_crank_formulations_agree_with_the_closed_form() -> None:
    joint, natural = both(flexmbs.load_model(MODELS / "slider_crank.yaml"), 0.5)
    assert largest_difference(joint, natural) < 1e-9
    th = 10.0 * natural.time
    x = 0.1 * np.cos(th) + np.sqrt(0.09 - 0.01 * np.sin(th) ** 2)
    assert np.max(np.abs(natural["slider.r[1]"] - x)) < 1e-9


def test_driven_joint_between_bodies_with_rotated_markers() -> None:
    """A sine-profile motion drive (its angular acceleration enters gamma) on a revolute joint
    between two bodies about an oblique axis, markers rotated, under gravity: the driven angle
    read back from the natural coordinates is the profile, and the free joint agrees."""
    from flexmbs.model import Drive, Profile
    from flexmbs.natural import simulate_natural

    def bar(name: str) -> Body:
        return Body(name, mass=1.3, com=(0.5, 0.05, 0.02), inertia=(0.1, 0.15, 0.12),
                    markers=[Marker("root", rotation={"axis": [0.3, 0.2, 0.1], "angle": 0.7}),
                             Marker("tip", position=(1.0, 0, 0), rotation={"axis": [0.1, -0.4, 0.2], "angle": -0.5})])
    axis = np.array([0.4, -0.7, 0.5]) / np.linalg.norm([0.4, -0.7, 0.5])
    drive = Drive("motion", profile=Profile("sine", offset=0.2, amplitude=0.7, frequency=0.9, phase=0.3))
    model = Model("driven", gravity=(0, -9.81, 0), ground_markers=[Marker("o")], bodies=[bar("b0"), bar("b1")],
                  joints=[Joint("j0", "revolute", "ground", "o", "b0", "root", axis=(0, 0.6, 0.8)),
                          Joint("j1", "revolute", "b0", "tip", "b1", "root", axis=tuple(axis), drive=drive)])
    joint, natural = both(model, 1.0, dt=0.05)
    assert np.max(np.abs(joint["j0.q"] - natural["j0.q"])) < 1e-9
    assert np.max(np.abs(joint["j0.qd"] - natural["j0.qd"])) < 1e-9
    system = flexmbs.compile_model(model)
    run = simulate_natural(compile_natural(system), joint.time)          # the read-back itself
    iq = system.joint_q["j1"][0]
    assert np.max(np.abs(run["X"][:, iq] - joint["j1.q"])) < 1e-9


def test_fast_joints_are_read_back_on_the_right_turn() -> None:
    """A pendulum spinning at 20 rad/s sampled every 0.2 s (4 rad per sample): the angle
    continues through whole turns, as in the joint formulation."""
    body = Body("arm", mass=1.0, com=(0.5, 0, 0), inertia=(0.01, 0.1, 0.1), markers=[Marker("root")])
    model = Model("spin", gravity=(0, 0, 0), ground_markers=[Marker("o")], bodies=[body],
                  joints=[Joint("hinge", "revolute", "ground", "o", "arm", "root", qd0=(20.0,))],
                  solver=Solver(rtol=1e-10))
    joint, natural = both(model, 1.0, dt=0.2)
    assert natural["hinge.q"][-1] == pytest.approx(20.0, rel=1e-9)
    assert np.max(np.abs(joint["hinge.q"] - natural["hinge.q"])) < 1e-9


def test_bricard_formulations_agree() -> None:
    """Overconstrained 6R loop: one row redundant in both formulations, free motion conserved."""
    model = flexmbs.load_model(MODELS / "bricard.yaml")
    model.joint("j1").spring = None            # springs are not in the natural formulation
    model.joint("j1").qd0 = (0.3,)
    joint, natural = both(model, 1.5)
    assert np.ptp(natural["j1.q"]) > 0.4
    assert largest_difference(joint, natural) < 1e-9
    assert natural.stats["redundant"] == 1
    e = natural["natural.energy"]
    assert np.ptp(e) < 1e-9 * e[0]


def test_natural_coordinates_refuse_what_they_do_not_model() -> None:
    model = flexmbs.load_model(MODELS / "he_crank_rocker.yaml")
    model.solver.formulation = "natural"
    with pytest.raises(ValueError, match="natural coordinates: body coupler is beam; only rigid bodies"):
        flexmbs.simulate(model, 0.1)
    model = flexmbs.load_model(MODELS / "bricard.yaml")       # its joint spring is refused, not dropped
    model.solver.formulation = "natural"
    with pytest.raises(ValueError, match="joint j1 has a spring, which this formulation does not model"):
        flexmbs.simulate(model, 0.1)
    disk = Body("disk", mass=1.0, com=(0, 0, 0), inertia=(0.1, 0.1, 0.2), markers=[Marker("c")])
    flat = Model("flat", ground_markers=[Marker("o")], bodies=[disk],
                 joints=[Joint("hub", "revolute", "ground", "o", "disk", "c")])
    flat.solver.formulation = "natural"
    with pytest.raises(ValueError, match="body disk is flat"):
        flexmbs.simulate(flat, 0.1)


def test_unknown_formulation_is_a_model_error() -> None:
    model = flexmbs.load_model(MODELS / "four_bar.yaml")
    model.solver.formulation = "natral"
    with pytest.raises(flexmbs.ModelError, match="solver.formulation"):
        flexmbs.compile_model(model)


# ----------------------------------------------------------------------------- the factorisation

def mechanism(parents: list[int], cuts: list[tuple[int, int, str]], seed: int) -> Model:
    """Rigid bars of length 1 m with random masses and inertias; body k hangs from body
    parents[k] (-1: the ground) by a revolute joint about a random axis, all q0 = 0, so every
    bar lies along x from its parent's tip. cuts: (body, other body or -1 for the ground, joint
    type) closing a loop at the body's tip, where a marker is placed on the other body."""
    rng = np.random.default_rng(seed)
    bodies, joints, ground, tips = [], [], [Marker("o")], {-1: np.zeros(3)}
    for k, p in enumerate(parents):
        m = rng.uniform(0.5, 2.0)
        bodies.append(Body(f"b{k}", mass=m, com=(0.5 + rng.uniform(-0.1, 0.1), rng.uniform(-0.05, 0.05), 0.0),
                           inertia=tuple(rng.uniform(0.1, 0.2, 3)),
                           markers=[Marker("root"), Marker("tip", position=(1.0, 0.0, 0.0))]))
        axis = rng.normal(size=3)
        joints.append(Joint(f"j{k}", "revolute", "ground" if p < 0 else f"b{p}", "o" if p < 0 else "tip",
                            f"b{k}", "root", axis=tuple(axis / np.linalg.norm(axis))))
        tips[k] = tips[p] + np.array([1.0, 0.0, 0.0])
    loop_cuts = []
    for i, (k, other, jt) in enumerate(cuts):
        at = Marker(f"c{i}", position=tuple(tips[k] - (tips[parents[other]] if other >= 0 else 0.0)))
        (bodies[other].markers if other >= 0 else ground).append(at)
        loop_cuts.append(Joint(f"cut{i}", jt, f"b{k}", "tip", f"b{other}" if other >= 0 else "ground", f"c{i}",
                               axis=(0, 0, 1)))
    return Model("random", gravity=(0.0, -9.81, 0.0), ground_markers=ground, bodies=bodies, joints=joints,
                 loops=Loops(cuts=loop_cuts))


def dense_accelerations(ns, W) -> np.ndarray:
    """The same equations solved densely: [M G^T; G 0] by least squares (a is unique even when
    rows are redundant; lambda is not)."""
    N = ns.arrays
    n = ns.n
    G = np.zeros((N.kind.size, n))
    for r in range(N.kind.size):
        for side, J in ((N.ra[r], W.Ja[r]), (N.rb[r], W.Jb[r])):
            if side >= 0:
                G[r, 12 * side:12 * side + 12] += J
    M = np.zeros((n, n))
    for i in range(N.nb):
        M[12 * i:12 * i + 12, 12 * i:12 * i + 12] = ns.M[i]
    K = np.block([[M, G.T], [G, np.zeros((G.shape[0], G.shape[0]))]])
    sol = np.linalg.lstsq(K, np.concatenate([N.Qg.ravel(), W.gam]), rcond=1e-12)[0]
    return sol[:n]


@pytest.mark.parametrize("shape", ["chain", "tree", "one loop", "two loops", "planar loop"])
def test_block_factorisation_equals_a_dense_solve(shape: str) -> None:
    """At perturbed (inconsistent) poses and random velocities, or on the manifold where rows
    are redundant: the block factorisation gives the accelerations of a dense least-squares
    solve of the full equations."""
    from flexmbs.natural.run import initial_state

    n = 12
    parents = {"chain": list(range(-1, n - 1)), "tree": [-1, 0, 0, 1, 1, 2, 2, 3, 4, 5, 6, 7],
               "one loop": list(range(-1, n - 1)), "two loops": [-1, 0, 1, 2, 3, 4, -1, 6, 7, 8, 9, 10],
               "planar loop": list(range(-1, 3))}[shape]
    cuts = {"chain": [], "tree": [], "one loop": [(n - 1, 2, "spherical")],
            "two loops": [(5, -1, "spherical"), (11, 3, "spherical")], "planar loop": [(3, -1, "revolute")]}[shape]
    model = mechanism(parents, cuts, seed=len(shape))
    if shape == "planar loop":
        for j in model.joints:
            j.axis = (0.0, 0.0, 1.0)
        model.ground_markers[1].position = (3.0, 0.8, 0.0)      # a closable, non-stretched loop
    ns = compile_natural(flexmbs.compile_model(model))
    W = make_work(ns.arrays, 0)
    rng = np.random.default_rng(7)
    x, xd = initial_state(ns.system)
    xd = xd + rng.normal(size=x.size)
    if shape == "planar loop":
        # redundant rows are consistent only on the constraint manifold: project the velocities
        project(ns.arrays, W, x, xd, 1e-12, 20)
    else:
        x = x + 1e-2 * rng.normal(size=x.size)
    a = np.zeros(ns.n)
    dropped = accelerations(ns.arrays, W, x, xd, a)
    assert dropped == (3 if shape == "planar loop" else 0)
    ref = dense_accelerations(ns, W)
    assert np.max(np.abs(a - ref)) < 1e-9 * np.max(np.abs(ref))


def test_fill_grows_with_the_loop_not_the_mechanism() -> None:
    """Seed 002: a tree factors without fill; a loop closing over l bodies adds fill of at most
    two blocks per body along it; the factor stays linear in the number of bodies."""
    for n in (8, 32):
        ns = compile_natural(flexmbs.compile_model(mechanism(list(range(-1, n - 1)), [], seed=1)))
        assert ns.fill == 0 and ns.arrays.bcol.size == 2 * n - 1      # block-banded chain
    fills = []
    for loop in (4, 8, 16, 32):
        parents = list(range(-1, 39))
        model = mechanism(parents, [(loop, 0, "spherical")], seed=2)   # closes over bodies 0 ... loop
        ns = compile_natural(flexmbs.compile_model(model))
        fills.append(ns.fill)
        assert ns.fill <= 2 * loop
        assert ns.arrays.bcol.size <= 2 * 41 + 2 * loop
    assert fills[-1] > fills[0]
