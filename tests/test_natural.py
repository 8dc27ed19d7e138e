"""The natural-coordinate formulation (flexmbs.natural: points and unit vectors, constant mass
matrix, every joint a constraint) against the joint-coordinate formulation with cut joints:
two independent formulations of the same rigid closed-loop mechanisms must agree."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import flexmbs
from flexmbs.model import Sensor
from flexmbs.natural import simulate_natural

MODELS = Path(__file__).resolve().parent.parent / "models"


def sensor(res, name: str) -> np.ndarray:
    return np.column_stack([res[f"{name}.r[{i}]"] for i in (1, 2, 3)])


def test_four_bar_agrees_and_conserves_energy() -> None:
    model = flexmbs.load_model(MODELS / "four_bar.yaml")
    nat = simulate_natural(model, 1.0, output_step=0.01)
    res = flexmbs.simulate(model, 1.0, output_step=0.01)
    assert np.max(np.abs(nat.markers["rocker.tip"] - sensor(res, "rocker_tip"))) < 1e-9
    assert np.max(np.abs(nat.markers["coupler.end"] - sensor(res, "coupler_end"))) < 1e-9
    assert nat.energy[0] == pytest.approx(res["energy.total"][0], rel=1e-12)
    assert np.ptp(nat.energy) < 1e-8 * nat.energy[0]
    assert nat.redundant > 0                     # many rows of a planar loop in 3-D are redundant


def test_slider_crank_agrees_with_a_driven_crank() -> None:
    model = flexmbs.load_model(MODELS / "slider_crank.yaml")
    nat = simulate_natural(model, 0.5, output_step=0.01)
    res = flexmbs.simulate(model, 0.5, output_step=0.01)
    assert np.max(np.abs(nat.markers["slider.pin"] - sensor(res, "slider"))) < 1e-9
    th = 10.0 * nat.time
    x = 0.1 * np.cos(th) + np.sqrt(0.09 - 0.01 * np.sin(th) ** 2)
    assert np.max(np.abs(nat.markers["slider.pin"][:, 0] - x)) < 1e-9


def test_bricard_agrees() -> None:
    """The overconstrained 6R loop (natural coordinates need no spanning tree and no cut)."""
    model = flexmbs.load_model(MODELS / "bricard.yaml")
    model.joint("j1").spring = None            # springs are not in the natural formulation
    model.joint("j1").qd0 = (0.3,)
    model.sensors = [Sensor("s3", "link3", "out"), Sensor("s5", "link5", "out")]
    nat = simulate_natural(model, 1.5, output_step=0.01)
    res = flexmbs.simulate(model, 1.5, output_step=0.01)
    assert np.ptp(res["j1.q"]) > 0.4
    for s, marker in (("s3", "link3.out"), ("s5", "link5.out")):
        assert np.max(np.abs(nat.markers[marker] - sensor(res, s))) < 1e-9
    assert np.ptp(nat.energy) < 1e-9 * nat.energy[0]


def test_natural_coordinates_refuse_what_they_do_not_model() -> None:
    with pytest.raises(ValueError, match="natural coordinates: body coupler is beam; only rigid bodies"):
        simulate_natural(flexmbs.load_model(MODELS / "he_crank_rocker.yaml"), 0.1)


def test_natural_coordinates_refuse_springs_and_loads() -> None:
    """The shipped Bricard has a joint spring the natural formulation does not model: refused,
    not silently dropped."""
    with pytest.raises(ValueError, match="joint j1 has a spring, which this formulation does not model"):
        simulate_natural(flexmbs.load_model(MODELS / "bricard.yaml"), 0.1)
