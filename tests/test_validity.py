"""The single-frame validity check of a run: the measured section rotation against the static
tip rotation of a cantilever, F L^2 / (2 E I), and the warning past the documented limit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import flexmbs
from flexmbs import equilibrium
from flexmbs.model import Body, Joint, Load, Marker, Material, Model, Section
from flexmbs.validity import ROTATION_LIMIT, LargeDeflectionWarning, largest_deflections

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
