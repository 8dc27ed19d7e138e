"""The shipped model files: conservative ones conserve energy, damped ones dissipate it."""


import numpy as np
import pytest

import flexmbs
from flexmbs.model.catalog import models_dir

MODELS = models_dir()


@pytest.mark.parametrize("name, t_end", [("double_pendulum", 3.0), ("huang_two_link", 1.0),
                                         ("verlinden_pendulum", 6.0)])
def test_conservative_model_conserves_energy(name, t_end):
    model = flexmbs.load_model(MODELS / f"{name}.yaml")
    r = flexmbs.simulate(model, t_end, output_step=0.01)
    e = r["energy.total"]
    scale = max(r["energy.strain"].max(), 1e-3 * r["energy.kinetic"].max())
    assert np.abs(e - e[0]).max() < 1e-4 * scale


@pytest.mark.parametrize("name", ["huang_two_link_damped", "huang_test_rig"])
def test_damped_model_dissipates_energy(name):
    model = flexmbs.load_model(MODELS / f"{name}.yaml")
    r = flexmbs.simulate(model, 2.0, output_step=0.01)
    e = r["energy.total"]
    assert np.all(np.diff(e) < 1e-8)
    assert e[-1] < e[0]
