"""Model parameters by path (what FMU parameters and sweeps set), the fmu: section of a model
file, and point-force inputs."""

from __future__ import annotations

import numpy as np
import pytest
from mechanisms import compound_pendulum

import flexmbs
from flexmbs.model import Body, Joint, Load, Marker, Model, ModelError, Solver
from flexmbs.model.elements import Export, Parameter
from flexmbs.model.paths import PathError, get_value, set_value, unit_of
from flexmbs.simulate import settings_of
from flexmbs_fmu.plant import Plant


def test_paths_read_and_write_numbers_and_list_items() -> None:
    model = compound_pendulum(m=2.0, Ic=0.05)
    assert get_value(model, "bodies.bar.mass") == 2.0
    assert unit_of(model, "bodies.bar.mass") == "kg"
    set_value(model, "bodies.bar.inertia[2]", 0.07)
    assert model.body("bar").inertia == (0.005, 0.07, 0.05)
    set_value(model, "gravity[2]", -1.62)
    assert tuple(model.gravity) == (0.0, -1.62, 0.0)
    assert unit_of(model, "gravity[2]") == "m/s2"
    assert unit_of(model, "joints.hinge.q0[1]") == "rad"


@pytest.mark.parametrize("path, words", [
    ("bodies.bra.mass", "no entry 'bra' in bodies; known: bar"),
    ("bodies.bar.weight", "'weight' is not a field of bodies.bar"),
    ("bodies.bar.inertia", "not a number; add [i]"),
    ("bodies.bar.inertia[4]", "index 4 outside 1..3"),
    ("bodies.bar.mass[1]", "not a list"),
    ("bodies", "name an entry of bodies"),
])
def test_bad_paths_say_what_is_wrong(path: str, words: str) -> None:
    with pytest.raises(PathError, match=words.replace("[", r"\[")):
        get_value(compound_pendulum(), path)


def test_an_unset_rtol_is_the_default_of_the_method_that_runs() -> None:
    """A model without solver.rtol takes its method's default (model-file.md `rtol`: radau 1e-5,
    the others 1e-6), through a parameter path too; a method chosen at run time runs at its own
    default unless an rtol is given, in simulate's settings and in a plant FMU alike (whose
    solver.rtol left at its start value counts as not given)."""
    flexible = flexmbs.load_model("three_link_arm")
    assert flexible.solver.rtol is None and flexible.solver_method() == "radau"
    assert flexible.solver_rtol() == get_value(flexible, "solver.rtol") == 1e-5
    assert settings_of(flexible).rtol == 1e-5
    assert settings_of(flexible, method="implicit").rtol == 1e-6
    assert settings_of(flexible, method="implicit", rtol=3e-5).rtol == 3e-5
    rigid = compound_pendulum()
    assert (rigid.solver_method(), rigid.solver_rtol()) == ("dopri5", 1e-6)
    assert settings_of(rigid, method="radau").rtol == 1e-5
    runs = {}
    for given in ({}, {"solver.method": "implicit"}, {"solver.method": "implicit", "solver.rtol": 3e-5}):
        plant = Plant(flexible)
        for name, value in given.items():
            plant.set_parameter(name, value)
        plant.configure()
        runs[tuple(given)] = (plant.settings.method, plant.settings.rtol)
    assert list(runs.values()) == [("radau", 1e-5), ("implicit", 1e-6), ("implicit", 3e-5)]


def test_parameter_changes_the_physics_it_names() -> None:
    """Small-angle period of a compound pendulum 2 pi sqrt(I_O / (m g d)) follows the mass set
    through its path (I_O = Ic + m d^2). The bar hangs at q = -pi/2."""
    d, Ic = 0.4, 0.05
    for m in (1.0, 3.0):
        model = compound_pendulum(m=2.0, d=d, Ic=Ic, q0=-np.pi / 2 + 1e-3)
        set_value(model, "bodies.bar.mass", m)
        T = 2 * np.pi * np.sqrt((Ic + m * d**2) / (m * 9.81 * d))
        res = flexmbs.simulate(model, T, method="dopri5", rtol=1e-10, output_step=T / 200)
        swing = res["hinge.q"] + np.pi / 2
        assert swing[-1] == pytest.approx(1e-3, rel=1e-5)
        assert swing[100] == pytest.approx(-1e-3, rel=1e-5)


def test_fmu_section_is_checked_against_the_model() -> None:
    model = compound_pendulum()
    model.fmu = Export(parameters=[
        Parameter("m_bar", "bodies.bar.mass", min=0.0, max=1.0),          # model value 2 outside
        Parameter("bad name!", "bodies.bar.mass"),
        Parameter("x", "bodies.bar.colour"),
        Parameter("y", "joints.hinge.axis[3]"),                            # unit unknown
    ], stop_time=-1.0)
    with pytest.raises(ModelError) as err:
        flexmbs.compile_model(model)
    text = str(err.value)
    assert "outside [0, 1]" in text
    assert "'bad name!' is not a valid variable name" in text
    assert "'colour' is not a field of bodies.bar" in text
    assert "give the unit of 'joints.hinge.axis[3]'" in text
    assert "stop_time" in text


def test_point_force_input_accelerates_a_slider_as_newton_says() -> None:
    """x = F t^2 / (2 m) for a force input on a free slider (no gravity along the axis)."""
    m, F = 2.5, 3.0
    body = Body("block", mass=m, inertia=(0.1, 0.1, 0.1), markers=[Marker("c")])
    joint = Joint("slide", "prismatic", "ground", "origin", "block", "c", axis=(1, 0, 0))
    model = Model("slider", gravity=(0, 0, -9.81), bodies=[body], joints=[joint],
                  loads=[Load("point_force", name="push", body="block", marker="c", input=True)],
                  solver=Solver(method="rk4", step=1e-3))
    system = flexmbs.compile_model(model)
    assert system.inputs == [f"push.{k}[{i}]" for k in ("force", "torque") for i in (1, 2, 3)]
    res = flexmbs.simulate(system, 2.0, output_step=0.5, inputs={"push.force[1]": F})
    assert np.allclose(res["slide.q"], F * res.time**2 / (2 * m), rtol=1e-12, atol=1e-14)


def test_load_input_needs_a_name() -> None:
    model = compound_pendulum()
    model.loads = [Load("point_force", body="bar", marker="pivot", input=True)]
    with pytest.raises(ModelError, match="needs a name"):
        flexmbs.compile_model(model)
