"""The single-frame validity check of a run: the measured section rotation against the static
tip rotation of a cantilever, F L^2 / (2 E I), and the warning past the documented limit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import flexmbs
from flexmbs import equilibrium
from flexmbs.model import Body, Joint, Load, Marker, Material, Model, Section
from flexmbs.model import model_from_dict
from flexmbs.validity import (ENERGY_DRIFT_LIMIT, ROTATION_LIMIT, EnergyDriftWarning, LargeDeflectionWarning,
                               largest_deflections)

L, E, W, H = 1.0, 7.0e10, 0.02, 0.01


def loaded_cantilever(tip_rotation: float) -> Model:
    """A clamped beam (all 24 FE modes of 4 elements, no gravity, no stiffening) with a tip
    force along y giving the static tip rotation F L^2 / (2 E Iz) = tip_rotation [rad]."""
    iz = H * W ** 3 / 12
    force = 2 * E * iz * tip_rotation / L ** 2
    beam = Body("beam", type="beam", length=L, elements=4, modes=24, material=Material(E=E, G=2.6e10, rho=2700.0),
                section=Section("rectangle", width=W, height=H), geometric_stiffening=False,
                markers=[Marker("root", x=0.0), Marker("tip", x=L)])
    return Model("loaded", gravity=(0, 0, 0), bodies=[beam],
                 joints=[Joint("clamp", "fixed", "ground", "origin", "beam", "root")],
                 loads=[Load("point_force", body="beam", marker="tip", force=(0.0, force, 0.0), frame="world")])


@pytest.mark.parametrize("rotation", [0.3 * ROTATION_LIMIT, 1.5 * ROTATION_LIMIT])
def test_static_cantilever_rotation_is_measured_and_warned_past_the_limit(rotation: float) -> None:
    """Started at its static equilibrium the beam stays there; the measure is the tip section's
    rotation F L^2 / (2 E I) (1e-6) at the tip node, and simulate warns (naming the body, the
    measure and segments) only when it exceeds ROTATION_LIMIT."""
    system = flexmbs.compile_model(loaded_cantilever(rotation))
    x0 = equilibrium(system)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # rtol 1e-10: at the default tolerance the integrator's own error rings the 24th FE mode
        # (a rate of 4-16 in mass-normalised units), which the measure then sees at 1e-7 - 1e-6
        res = flexmbs.simulate(system, 0.01, output_step=0.005, x0=x0, rtol=1e-10)
    (found,) = largest_deflections(system, res.time, res.states)
    assert found.body == "beam" and found.value == pytest.approx(rotation, rel=1e-6)
    assert np.allclose(found.where, [L, 0, 0])
    messages = [str(w.message) for w in caught if issubclass(w.category, LargeDeflectionWarning)]
    if rotation > ROTATION_LIMIT:
        assert len(messages) == 1
        assert "body 'beam'" in messages[0] and "section rotation" in messages[0] and "segments" in messages[0]
    else:
        assert not messages


def test_check_reports_a_run_beyond_the_single_frame() -> None:
    """`flexmbs check MODEL --t-end T` runs the model and names the body, its measure and time:
    Huang's free arm bends its link 2 to about 0.17 rad at the tip section within 3 s."""
    from click.testing import CliRunner

    from flexmbs.cli import main

    result = CliRunner().invoke(main, ["check", "huang_two_link", "--t-end", "3"])
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if ln.strip().startswith("link2: section rotation"))
    assert "BEYOND" in line and "segments" in line
    assert 0.1 < float(line.split("[rad]")[1].split()[0]) < 0.3


FLEX_PENDULUM = {
    "name": "flex_pendulum", "gravity": [0, 0, -9.81],
    "ground": {"markers": [{"name": "pivot", "position": [0, 0, 0], "rotation": {"axis": [0, 1, 0], "angle": 90}}]},
    "bodies": [{"name": "rod", "type": "beam", "length": 0.8, "elements": 6, "modes": 4,
                "material": {"E": 2.1e11, "rho": 7850, "nu": 0.3}, "section": {"shape": "circle", "diameter": 0.01},
                "tip_mass": 0.5, "markers": [{"name": "root", "x": 0}, {"name": "tip", "x": 0.8}]}],
    "joints": [{"name": "swing", "type": "revolute", "parent": "ground", "parent_marker": "pivot", "child": "rod",
                "child_marker": "root", "axis": [0, 1, 0], "q0": 0.3}]}


def _axial_hz() -> float:
    """First axial frequency of the rod clamped at the pivot with its tip mass: u = sin(beta x /
    L) satisfies rho u_tt = E u_xx and u(0) = 0, and the tip condition E A u_x(L) = m_tip
    omega^2 u(L) with omega = beta / L sqrt(E / rho) gives beta tan(beta) = m_rod / m_tip."""
    from scipy.optimize import brentq

    L, E, rho, d, tip = 0.8, 2.1e11, 7850.0, 0.01, 0.5
    ratio = rho * np.pi * d ** 2 / 4 * L / tip
    beta = brentq(lambda b: b * np.tan(b) - ratio, 1e-6, np.pi / 2 - 1e-9)
    return beta / L * np.sqrt(E / rho) / (2 * np.pi)


@pytest.mark.parametrize("method, rtol, warned", [("dopri5", 1e-6, True), ("dopri5", 1e-9, False),
                                                  ("implicit", 1e-6, False)])
def test_energy_drift_of_a_conservative_model_is_warned_naming_the_mode(method: str, rtol: float, warned: bool):
    """A steel pendulum rod with a tip mass, written from the docs, released from 0.3 rad (no
    damping, no inputs: conservative). dopri5 at rtol 1e-6 lets its error accumulate in the
    rod's undamped axial shape (an explicit method's per-step error there is not damped), and in
    1 s the energy rises by about four times what the swing exchanges: the run warns, naming the
    axial mode, whose frequency is the clamped bar-with-tip-mass formula's (1 %), and the two
    fixes. At rtol 1e-9, or with the L-stable implicit method, the energy stays within
    ENERGY_DRIFT_LIMIT and nothing is warned. The drift is measured here from the energy
    signals, against the range of the potential energy (the swing's: it starts at its top)."""
    model = model_from_dict(FLEX_PENDULUM)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = flexmbs.simulate(model, 1.0, method=method, rtol=rtol)
    e = result["energy.total"]
    swing = np.ptp(result["energy.potential"])
    # the rigid pendulum's: g (m_tip L + m_rod L / 2) (1 - cos 0.3)
    assert swing == pytest.approx(9.81 * (0.5 * 0.8 + 7850 * np.pi / 4 * 0.01 ** 2 * 0.8 * 0.4) * (1 - np.cos(0.3)), rel=1e-2)
    drifted = np.max(np.abs(e - e[0])) > ENERGY_DRIFT_LIMIT * swing
    assert abs(result.stats["energy_drift"]) == np.max(np.abs(e - e[0]))   # recorded for flexmbs simulate
    drift_warnings = [w for w in caught if issubclass(w.category, EnergyDriftWarning)]
    assert drifted == warned and len(drift_warnings) == int(warned)
    if warned:
        message = str(drift_warnings[0].message)
        assert f"{method} at rtol {rtol:g}" in message and "tighten rtol" in message and "method radau" in message
        named = float(message.split("Hz)")[0].rsplit("(", 1)[1])
        assert named == pytest.approx(_axial_hz(), rel=1e-2)


def test_a_run_that_hardly_moves_does_not_warn_on_the_round_off_of_its_energy():
    """The double pendulum 1e-7 rad off its hanging pose, q = (-pi/2, 0) (RK4, its own
    setting): its motion exchanges about 1e-13 J, and energy.total (-19.6 J) moves by its
    round-off alone; no warning (the limit once measured that round-off against the motion)."""
    system = flexmbs.compile_model(flexmbs.load_model("double_pendulum"))
    x0 = np.array([-np.pi / 2 + 1e-7, 0.0, 0.0, 0.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = flexmbs.simulate(system, 2.0, x0=x0)
    e = result["energy.total"]
    assert np.ptp(result["energy.potential"]) < 1e-12 and 0.0 < np.max(np.abs(e - e[0])) < 1e-13 < np.max(np.abs(e))
    assert not [w for w in caught if issubclass(w.category, EnergyDriftWarning)]


@pytest.mark.parametrize("method, rtol, verb", [("dopri5", 2e-2, "rose"), ("implicit", 1e-2, "fell")])
def test_energy_drift_is_measured_against_the_energy_the_motion_exchanges(method: str, rtol: float, verb: str):
    """A spring oscillator, inertia 1 kg m^2 and stiffness 200^2 N m/rad, released from 1 rad:
    its motion exchanges k q0^2 / 2 = 20,000 J. Over 2 s dopri5's error at rtol 2e-2 pumps it
    up to several times that (3 times; at rtol 1e-2 0.6 times, since its step controller is
    Gustafsson's, 6.8 times before), and the L-stable implicit method's at rtol 1e-2 damps about
    a sixth of it away. The warning states the drift in units of those 20,000 J (to 1 %), also when the
    growing motion has raised the potential energy's range many times over, and asks for a
    tighter rtol (no flexible mode to name)."""
    omega, q0 = 200.0, 1.0
    model = model_from_dict(dict(
        name="joint_oscillator", gravity=[0, 0, 0], ground=dict(markers=[dict(name="origin")]),
        bodies=[dict(name="bar", mass=1.0, inertia=[1.0] * 3, markers=[dict(name="pivot")])],
        joints=[dict(name="j", type="revolute", parent="ground", parent_marker="origin", child="bar",
                     child_marker="pivot", q0=[q0], spring=dict(stiffness=omega ** 2, damping=0.0))]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = flexmbs.simulate(model, 2.0, method=method, rtol=rtol, output_step=1e-3)
    e = result["energy.total"]
    exchanged = 0.5 * omega ** 2 * q0 ** 2
    drift = np.max(np.abs(e - e[0]))
    message = str(next(w.message for w in caught if issubclass(w.category, EnergyDriftWarning)))
    ratio = float(message.split(" times the energy its motion exchanges")[0].rsplit(", ", 1)[1])
    assert f"{verb} by" in message and message.endswith("tighten rtol")
    assert ratio == pytest.approx(drift / exchanged, rel=1e-2)
    assert (drift > exchanged) if verb == "rose" else (0.01 * exchanged < drift < 0.5 * exchanged)
