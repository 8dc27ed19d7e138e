"""Bad inputs and failing steps inside an FMU: an FMI discard or error with a logged message,
the state kept at the last good communication point, and the host goes on."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import fmi2Discard, fmi2LastSuccessfulTime
from fmu_tools import Slave

NAMES = ["shoulder.q", "elbow.q", "elbow.qd", "link2.eta[1]"]


def _discarded(s: Slave, t: float, h: float) -> None:
    with pytest.raises(FMICallException) as err:
        s.fmu.doStep(currentCommunicationPoint=t, communicationStepSize=h)
    assert err.value.status == fmi2Discard
    assert s.fmu.getRealStatus(fmi2LastSuccessfulTime) == pytest.approx(t)


def test_nan_input_is_refused_and_the_run_recovers(fmu_path, capsys, caplog) -> None:
    clean = Slave(fmu_path("huang_two_link"), "clean")
    clean.start()
    _, want = clean.run(0.0, 0.2, 0.01, NAMES, lambda t: {"elbow.tau": 0.1})
    clean.close()

    s = Slave(fmu_path("huang_two_link"))
    s.start()
    s.run(0.0, 0.1, 0.01, NAMES, lambda t: {"elbow.tau": 0.1})
    before = s.get(NAMES)
    s.set({"elbow.tau": math.nan})
    assert "input elbow.tau was set to nan at t = 0.1 s" in capsys.readouterr().out
    _discarded(s, 0.1, 0.01)
    assert "not taken: input elbow.tau was set to nan" in caplog.text   # Python logging too
    assert np.array_equal(s.get(NAMES), before)
    assert s.get(["elbow.tau"])[0] == 0.1          # the last good value is kept
    _, rest = s.run(0.1, 0.2, 0.01, NAMES, lambda t: {"elbow.tau": 0.1})
    s.close()
    assert np.array_equal(rest, want[10:])


def test_a_diverging_solver_is_a_discard_with_the_state_kept(fmu_path, capsys) -> None:
    s = Slave(fmu_path("huang_two_link"))
    s.start()
    s.run(0.0, 0.05, 0.01, NAMES)
    before = s.get(NAMES)
    s.set({"elbow.tau": 1e9})
    _discarded(s, 0.05, 0.01)
    out = capsys.readouterr().out
    assert "[ERROR]" in out and "step from t = 0.05 s to 0.06 s not taken" in out
    assert "the state is kept at t = 0.05 s" in out
    assert np.array_equal(s.get(NAMES), before)
    s.set({"elbow.tau": 0.0})
    s.fmu.doStep(currentCommunicationPoint=0.05, communicationStepSize=0.01)   # the host goes on
    assert np.all(np.isfinite(s.get(NAMES)))
    s.close()


def _torque(t: float) -> dict:
    return {"elbow.tau": 0.1}


def _state_data(s: Slave) -> dict:
    """The slave's part of a serialised state (the front end's FMI part removed)."""
    state = s.fmu.getFMUstate()
    data = json.loads(bytes(s.fmu.serializeFMUstate(state)))["data"]
    s.fmu.freeFMUstate(state)
    return data


@pytest.mark.parametrize("method", ["dopri5", "implicit"])
def test_a_refused_step_leaves_the_plant_bit_for_bit_as_it_was(fmu_path, method) -> None:
    """A step the solver refuses (a torque that makes the arm diverge) leaves everything that
    shapes the future as it was: state, inputs, step size, step counts and, for the implicit
    method, its Jacobian, LU factors and their validity (they were left changed before, and the
    run after a refused step drifted from the twin's by 2e-6 rad)."""
    s = Slave(fmu_path("huang_two_link"))
    s.start({"solver.method": method, "solver.rtol": 1e-5})
    s.run(0.0, 0.05, 0.01, NAMES, _torque)
    s.set({"elbow.tau": 1e9})
    before = _state_data(s)
    _discarded(s, 0.05, 0.01)
    assert _state_data(s) == before
    s.close()
def test_parameter_out_of_range_is_refused_and_the_old_value_kept(fmu_path, capsys) -> None:
    s = Slave(fmu_path("huang_two_link"))
    s.start({"payload": -1.0, "solver.method": "euler"})
    out = capsys.readouterr().out
    assert "parameter payload = -1.0 is not a finite value in [0.0, 5.0]; kept 0.5" in out
    assert "solver.method 'euler' unknown; choose one of rk4, dopri5, implicit" in out
    assert s.get(["payload"])[0] == 0.5
    s.fmu.setReal([s.vr["payload"]], [2.0])      # after initialisation: fixed
    assert "fixed once initialisation has ended" in capsys.readouterr().out
    assert s.get(["payload"])[0] == 0.5
    s.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=0.01)
    s.close()


def test_a_step_from_the_wrong_time_is_refused(fmu_path, capsys) -> None:
    s = Slave(fmu_path("double_pendulum"))
    s.start()
    with pytest.raises(FMICallException):
        s.fmu.doStep(currentCommunicationPoint=5.0, communicationStepSize=0.01)
    assert "the step starts at t = 5.0 s but the FMU is at t = 0.0 s" in capsys.readouterr().out
    s.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=0.01)
    s.close()


def test_setting_an_output_is_refused(fmu_path, capsys) -> None:
    s = Slave(fmu_path("double_pendulum"))
    s.start()
    s.fmu.setReal([s.vr["elbow.q"]], [1.0])
    assert "elbow.q is an output and cannot be set" in capsys.readouterr().out
    assert s.get(["elbow.q"])[0] == 0.0
    s.close()
