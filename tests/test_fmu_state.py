"""FMU state: get/set, serialise into another process, reset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import fmi2Error
from fmu_tools import Slave

NAMES = ["shoulder.q", "elbow.q", "elbow.qd", "link2.eta[1]", "link2.tip_deflection[2]", "energy.total"]


def _torques(t: float) -> dict:
    return {"shoulder.tau": 0.3 * np.sin(4 * t), "elbow.tau": 0.1}


@pytest.mark.parametrize("settings", [{}, {"solver.method": "implicit", "solver.rtol": 1e-4},
                                      {"solver.method": "radau", "solver.rtol": 1e-4}],
                         ids=["default", "implicit", "radau"])
def test_restore_a_saved_state_and_run_again_identically(fmu_path, settings) -> None:
    """A restored state repeats the original run bit for bit; with the implicit method, whose
    Jacobian and LU factors are reused across communication steps, they are part of the state."""
    s = Slave(fmu_path("huang_two_link"))
    s.start({"payload": 0.8, **settings})
    s.run(0.0, 0.2, 0.01, NAMES, _torques)
    state = s.fmu.getFMUstate()
    _, first = s.run(0.2, 0.4, 0.01, NAMES, _torques)
    s.fmu.setFMUstate(state)
    _, again = s.run(0.2, 0.4, 0.01, NAMES, _torques)
    s.fmu.freeFMUstate(state)
    s.close()
    assert np.array_equal(first, again)


def test_serialised_state_continues_identically_in_a_new_process(fmu_path, tmp_path: Path) -> None:
    """The new process has not imported flexmbs and is told to use the FMU's own copy: the FMU
    runs the flexmbs sources it carries."""
    path = fmu_path("huang_two_link")
    s = Slave(path)
    s.start({"payload": 0.8})
    s.run(0.0, 0.2, 0.01, NAMES, _torques)
    blob = s.fmu.serializeFMUstate(s.fmu.getFMUstate())
    _, here = s.run(0.2, 0.4, 0.01, NAMES, _torques)
    s.close()
    (tmp_path / "state.bin").write_bytes(bytes(blob))
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from fmu_tools import Slave
        s = Slave({path!r})
        s.fmu.setupExperiment(startTime=0.0)
        s.fmu.enterInitializationMode()
        s.fmu.exitInitializationMode()
        blob = open({str(tmp_path / "state.bin")!r}, "rb").read()
        s.fmu.setFMUstate(s.fmu.deSerializeFMUstate(blob))
        _, rows = s.run(0.2, 0.4, 0.01, {NAMES!r},
                        lambda t: {{"shoulder.tau": 0.3 * np.sin(4 * t), "elbow.tau": 0.1}})
        s.close()
        print(json.dumps({{"rows": rows.tolist(), "flexmbs": sys.modules["flexmbs"].__file__}}))
    """)
    # the FMU's own sources, not the identical installed package it would prefer
    env = {**os.environ, "FLEXMBS_FMU_SOURCES": "bundle"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(out["flexmbs"]).parts[-4:] == ("resources", "python", "flexmbs", "__init__.py"), out["flexmbs"]
    assert np.array_equal(np.array(out["rows"]), here)


def test_reset_gives_a_fresh_instance(fmu_path) -> None:
    s = Slave(fmu_path("huang_two_link"))
    s.start({"payload": 2.0, "elbow.q0": 0.3})
    s.run(0.0, 0.3, 0.01, NAMES, _torques)
    s.fmu.reset()
    s.start()
    _, after_reset = s.run(0.0, 0.3, 0.01, NAMES, _torques)
    s.close()
    fresh = Slave(fmu_path("huang_two_link"), "fresh")
    fresh.start()
    _, new = fresh.run(0.0, 0.3, 0.01, NAMES, _torques)
    fresh.close()
    assert np.array_equal(after_reset, new)


def test_a_state_of_another_model_is_refused(fmu_path, capsys) -> None:
    """Another FMU's state handle is refused before anything is read (its library made it);
    its serialised bytes are refused for their format. fmi2Error, nothing applied."""
    a = Slave(fmu_path("double_pendulum"), "a")
    a.start()
    foreign = a.fmu.getFMUstate()
    b = Slave(fmu_path("huang_two_link"), "b")
    b.start()
    b.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=0.05)
    before = b.get(NAMES)
    with pytest.raises(FMICallException) as err:     # refused: fmi2Error, nothing applied
        b.fmu.setFMUstate(foreign)
    assert err.value.status == fmi2Error
    assert "the state was not made by fmi2GetFMUstate or fmi2DeSerializeFMUstate of this FMU" in capsys.readouterr().out
    with pytest.raises(FMICallException) as err:
        b.fmu.deSerializeFMUstate(a.fmu.serializeFMUstate(foreign))
    assert err.value.status == fmi2Error
    assert "the state is of format 'flexmbs.plant/" in capsys.readouterr().out
    assert np.array_equal(b.get(NAMES), before)
    b.fmu.doStep(currentCommunicationPoint=0.05, communicationStepSize=0.05)
    a.close()
    b.close()


@pytest.mark.parametrize("saved, taker", [("radau", None), (None, "radau")], ids=["radau-to-default", "default-to-radau"])
def test_a_state_restores_into_a_plant_of_another_method(saved, taker) -> None:
    """A state carries its parameters, the integration method among them: a plant running
    another method takes it (its memory checked against the state's method, not the plant's),
    and the two then run on bit for bit alike."""
    from flexmbs.model import load_model
    from flexmbs.model.catalog import shipped_models
    from flexmbs_fmu.plant import Plant

    def plant(method):
        p = Plant(load_model(shipped_models()["huang_two_link"]))
        if method is not None:
            p.set_parameter("solver.method", method)
        p.initialize(0.0)
        return p

    def run(p, ks):
        for k in ks:
            p.set_input(0, 0.3 * np.sin(k))
            p.step(0.01 * k, 0.01)

    first = plant(saved)
    run(first, range(10))
    second = plant(taker)
    second.restore(json.loads(json.dumps(first.save())))
    run(first, range(10, 20))
    run(second, range(10, 20))
    assert second.save() == first.save()
