"""The elastic rod (a pin-ended two-force member with distributed mass) and Verlinden's
slider-crank, whose loop it closes by its elasticity, with no constraint: against the analytic
axial frequency, the rigid limit (a cut-joint slider-crank with a rigid rod), energy
conservation and convergence in the crank's modes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import flexmbs
from flexmbs.model import Body, Drive, Joint, Load, Loops, Marker, Material, Model, Section, Solver
from flexmbs.model.catalog import models_dir

MODELS = models_dir()
E, RHO, A = 2.1e6, 7.8e-3, 9.0                 # Table 1 of Verlinden et al. (3 m x 3 m section)
L1, L2, SLIDER = 10.0, 20.0, 5.0


def pulse(t: float) -> dict:
    """The placeholder torque of the model file: 500 sin^2(pi t / 2) N m for t < 2 s."""
    return {"crank.tau": 500.0 * np.sin(np.pi * t / 2) ** 2 if t < 2.0 else 0.0}


def rod_load(E_rod: float = E) -> Load:
    return Load("elastic_rod", name="rod", marker_a="crank.tip", marker_b="slider.pin", length=L2,
                material=Material(E=E_rod, rho=RHO), section=Section("rectangle", width=3.0, height=3.0))


def bar(name: str, length: float) -> Body:
    """A rigid uniform slender bar of the Table-1 section along x from its root."""
    m = RHO * A * length
    return Body(name, mass=m, com=(length / 2, 0, 0), inertia=(1e-9, m * length**2 / 12, m * length**2 / 12),
                markers=[Marker("root"), Marker("tip", position=(length, 0, 0))])


def slider_crank(rod: str, E_rod: float = E) -> Model:
    """Rigid crank, slider on x, torque-driven crank; the rod either an elastic_rod load
    (rod='elastic') or a rigid bar closed by a cut revolute joint at the slider (rod='rigid')."""
    slider = Body("slider", mass=SLIDER, com=(0, 0, 0), inertia=(1.0, 1.0, 1.0), markers=[Marker("pin")])
    joints = [Joint("crank", "revolute", "ground", "hinge", "crank", "root", drive=Drive("torque")),
              Joint("slide", "prismatic", "ground", "hinge", "slider", "pin", axis=(1, 0, 0), q0=(L1 + L2,))]
    bodies, loads, loops = [bar("crank", L1), slider], [], Loops()
    if rod == "elastic":
        loads = [rod_load(E_rod)]
    else:
        bodies.append(bar("rod", L2))
        joints.append(Joint("rod_pin", "revolute", "crank", "tip", "rod", "root"))
        loops = Loops(cuts=[Joint("wrist", "revolute", "rod", "tip", "slider", "pin")], independent=["crank"])
    return Model("slider_crank_" + rod, gravity=(0, 0, 0), ground_markers=[Marker("hinge")], bodies=bodies,
                 joints=joints, loads=loads, loops=loops,
                 solver=Solver(method="dopri5", rtol=1e-9, max_step=0.01, output_step=0.01))


def test_rod_axial_frequency_is_the_consistent_bar_with_a_tip_mass() -> None:
    """A slider held by a rod to the ground: omega^2 = (E A / L) / (m_slider + m_rod / 3)
    (the consistent mass of the linear bar puts a third of its mass at the moving end)."""
    slider = Body("slider", mass=SLIDER, com=(0, 0, 0), inertia=(1.0, 1.0, 1.0), markers=[Marker("pin")])
    model = Model("rod_oscillator", gravity=(0, 0, 0), ground_markers=[Marker("o")], bodies=[slider],
                  joints=[Joint("slide", "prismatic", "ground", "o", "slider", "pin", axis=(1, 0, 0), q0=(L2,))],
                  loads=[replace(rod_load(), marker_a="ground.o")])
    omega = flexmbs.modes(model, n=1).frequencies_hz[0] * 2 * np.pi
    m_rod = RHO * A * L2
    assert omega == pytest.approx(np.sqrt(E * A / L2 / (SLIDER + m_rod / 3)), rel=1e-6)


def test_rod_mass_energy_and_gravity_are_those_of_a_uniform_bar() -> None:
    """A rod between the ground and a pendulum's tip, at rest: kinetic 0, potential m g h of its
    midpoint; spun, kinetic energy m/6 (va^2 + va.vb + vb^2) with va = 0: m vb^2 / 6."""
    pend = Body("arm", mass=1.0, com=(0.5, 0, 0), inertia=(1e-3, 0.1, 0.1),
                markers=[Marker("root"), Marker("tip", position=(1.0, 0, 0))])
    model = Model("rod_energy", gravity=(0, -9.81, 0), ground_markers=[Marker("o"), Marker("top", position=(1, 2, 0))],
                  bodies=[pend], joints=[Joint("hinge", "revolute", "ground", "o", "arm", "root", qd0=(3.0,))],
                  loads=[Load("elastic_rod", marker_a="ground.top", marker_b="arm.tip", length=2.0,
                              material=Material(E=1e3, rho=10.0), section=Section("circle", diameter=0.1))])
    res = flexmbs.simulate(model, 0.0, output_step=0.01)
    m_rod = 10.0 * np.pi * 0.05**2 * 2.0
    arm_kinetic = 0.5 * (0.1 + 1.0 * 0.25) * 9.0
    assert res["energy.kinetic"][0] == pytest.approx(arm_kinetic + m_rod * 3.0**2 / 6, rel=1e-12)
    assert res["energy.potential"][0] == pytest.approx(m_rod * 9.81 * (2 + 0) / 2 + 0.0, rel=1e-12)


def test_rod_between_two_moving_bodies_conserves_energy() -> None:
    """A 3-D double pendulum in gravity with a stretching rod from the first link's middle to
    the second link's tip (both ends moving, the second on a chain, so its velocity-product
    acceleration is not across its Jacobian): the rod's inertia, velocity-product and gravity
    terms are those of its energy, or the total would drift."""
    def arm(name: str) -> Body:
        return Body(name, mass=1.0, com=(0.5, 0.1, 0), inertia=(1e-2, 0.1, 0.1),
                    markers=[Marker("root"), Marker("mid", position=(0.5, 0, 0)), Marker("tip", position=(1.0, 0, 0))])
    tilted = tuple(np.array([0.2, 0.3, 1.0]) / np.linalg.norm([0.2, 0.3, 1.0]))
    model = Model("rod_pendulums", gravity=(0, -9.81, 0), ground_markers=[Marker("o")], bodies=[arm("a"), arm("b")],
                  joints=[Joint("ja", "revolute", "ground", "o", "a", "root", qd0=(2.0,)),
                          Joint("jb", "revolute", "a", "tip", "b", "root", axis=tilted, q0=(2.0,), qd0=(-1.0,))],
                  loads=[Load("elastic_rod", marker_a="a.mid", marker_b="b.tip", length=0.9,
                              material=Material(E=1e4, rho=500.0), section=Section("circle", diameter=0.1))],
                  solver=Solver(rtol=1e-11, output_step=0.01))
    res = flexmbs.simulate(model, 2.0)
    e = res["energy.total"]
    assert np.ptp(res["energy.kinetic"]) > 1.0 and np.ptp(res["energy.potential"]) > 1.0
    assert np.ptp(e) < 1e-8 * np.max(np.abs(res["energy.kinetic"]))


def test_elastic_rod_tends_to_the_rigid_cut_joint_slider_crank() -> None:
    """Rigid limit: as the rod's E grows the elastic slider-crank (no constraint) approaches the
    rigid one closed by a cut joint (Lagrange multipliers), with the error falling like 1/E."""
    rigid = flexmbs.simulate(slider_crank("rigid"), 4.0, inputs=pulse)
    assert np.ptp(rigid["crank.q"]) > np.pi                     # a large motion, through a dead point
    errors = []
    for factor in (1.0, 10.0, 100.0):
        elastic = flexmbs.simulate(slider_crank("elastic", E * factor), 4.0, inputs=pulse)
        errors.append(max(np.max(np.abs(elastic["crank.q"] - rigid["crank.q"])),
                          np.max(np.abs(elastic["slide.q"] - rigid["slide.q"])) / L1))
    assert errors[-1] < 1e-4
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 5) & (ratios < 20)), errors


@pytest.fixture(scope="module")
def verlinden():
    model = flexmbs.load_model(MODELS / "verlinden_slider_crank.yaml")
    return model, flexmbs.simulate(model, 4.0, inputs=pulse)


def test_verlinden_loop_is_closed_by_the_rod_alone(verlinden) -> None:
    model, res = verlinden
    assert not model.loops.cuts
    tip = np.column_stack([res[f"crank_tip.r[{i}]"] for i in (1, 2, 3)])
    slider = np.column_stack([res[f"slider.r[{i}]"] for i in (1, 2, 3)])
    elongation = np.linalg.norm(slider - tip, axis=1) - L2
    assert 1e-5 * L2 < np.max(np.abs(elongation)) < 1e-3 * L2          # it stretches, a little
    assert np.max(res["crank.qd"]) > 3.0 and np.ptp(res["crank.q"]) > np.pi      # past the inner dead point
    # the slider follows the rigid kinematics to within the rod's stretch and the crank's bending
    th = res["crank.q"]
    x = L1 * np.cos(th) + np.sqrt(L2**2 - (L1 * np.sin(th)) ** 2)
    assert np.max(np.abs(res["slide.q"] - x)) < 3 * (np.max(np.abs(elongation))
                                                     + np.max(np.abs(res["crank.tip_deflection[2]"])))
    # the crank bends under the rod's pull and its own inertia
    assert np.max(np.abs(res["crank.tip_deflection[2]"])) > 1e-4


def test_verlinden_conserves_energy_after_the_pulse(verlinden) -> None:
    _, res = verlinden
    after = res.time >= 2.0
    e = res["energy.total"][after]
    assert e[0] > 100.0
    assert np.ptp(e) < 1e-7 * e[0]


def test_verlinden_converges_with_the_crank_modes(verlinden) -> None:
    """The second bending pair of the crank (3130 rad/s) hardly changes the motion."""
    model, res = verlinden
    finer = replace(model, bodies=[replace(b, modes=4) if b.name == "crank" else b for b in model.bodies])
    ref = flexmbs.simulate(finer, 4.0, inputs=pulse)
    # the motion to 1e-4; the rate, which carries the 400-500 rad/s vibration, to 1 %
    assert np.max(np.abs(res["crank.q"] - ref["crank.q"])) < 1e-4 * np.ptp(ref["crank.q"])
    assert np.max(np.abs(res["crank.qd"] - ref["crank.qd"])) < 1e-2 * np.max(np.abs(ref["crank.qd"]))
    # the tip deflection, mostly the first bending vibration (80 Hz, above the output rate), to 15 %
    tip_peak = np.max(np.abs(ref["crank.tip_deflection[2]"]))
    assert np.max(np.abs(res["crank.tip_deflection[2]"] - ref["crank.tip_deflection[2]"])) < 0.15 * tip_peak


def test_bad_rod_is_a_model_error_naming_the_field() -> None:
    model = flexmbs.load_model(MODELS / "verlinden_slider_crank.yaml")
    model.loads[0].length = -20.0
    model.loads[0].material = None
    with pytest.raises(flexmbs.ModelError) as err:
        flexmbs.compile_model(model)
    text = str(err.value)
    assert "loads[0] 'rod'.length" in text and "positive" in text
    assert "loads[0] 'rod'.material" in text and "an elastic rod needs a material" in text
