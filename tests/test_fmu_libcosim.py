"""The Open Simulation Platform's master (libcosimpy, C++) runs a plant FMU and gets the
outputs fmpy gets."""

from __future__ import annotations

import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu

libcosimpy = pytest.importorskip("libcosimpy")
from libcosimpy.CosimExecution import CosimExecution  # noqa: E402
from libcosimpy.CosimObserver import CosimObserver  # noqa: E402
from libcosimpy.CosimSlave import CosimLocalSlave  # noqa: E402

NS = 1_000_000_000


@pytest.mark.parametrize("name", ["double_pendulum", "huang_two_link"])
def test_libcosim_runs_the_plant_like_fmpy(fmu_path, name) -> None:
    path = fmu_path(name)
    vr = {v.name: v.valueReference for v in read_model_description(path).modelVariables}
    outputs = ["shoulder.q", "elbow.q", "elbow.qd", "elbow.qdd", "tip.r[2]", "energy.total"]
    torques = {"shoulder.tau": 0.7, "elbow.tau": -0.3}
    h, n = 0.01, 30

    execution = CosimExecution.from_step_size(int(h * NS))
    slave = execution.add_local_slave(CosimLocalSlave(fmu_path=path, instance_name="plant"))
    for k, v in torques.items():
        execution.real_initial_value(slave, vr[k], v)
    observer = CosimObserver.create_last_value()
    execution.add_observer(observer)
    rows = []
    for _ in range(n):
        assert execution.step(1)
        rows.append(observer.last_real_values(slave, [vr[o] for o in outputs]))
    assert execution.status().current_time == n * int(h * NS)

    ref = simulate_fmu(path, stop_time=n * h, output_interval=h, start_values=torques, output=outputs)
    assert ref["time"][-1] == pytest.approx(n * h)
    got = np.array(rows)
    for i, o in enumerate(outputs):
        scale = max(np.max(np.abs(ref[o])), 1e-12)
        assert np.max(np.abs(got[:, i] - ref[o][1:])) / scale <= 1e-9, o
