"""Driving a built FMU through fmpy's FMU2Slave API, as a scripted master does."""

from __future__ import annotations

import shutil
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave


class Slave:
    """One instance of an FMU: vr by name, set/get by name, step, state."""

    def __init__(self, path: str, instance: str = "plant", logging_on: bool = True) -> None:
        self.md = read_model_description(path)
        self.dir = extract(path)
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.outputs = [v.name for v in self.md.modelVariables if v.causality == "output"]
        self.fmu = FMU2Slave(guid=self.md.guid, unzipDirectory=self.dir,
                             modelIdentifier=self.md.coSimulation.modelIdentifier, instanceName=instance)
        self.fmu.instantiate(loggingOn=logging_on)

    def start(self, params: Optional[Mapping[str, float]] = None, t0: float = 0.0) -> None:
        self.fmu.setupExperiment(startTime=t0)
        self.fmu.enterInitializationMode()
        for name, value in (params or {}).items():
            if isinstance(value, str):
                self.fmu.setString([self.vr[name]], [value])
            else:
                self.fmu.setReal([self.vr[name]], [float(value)])
        self.fmu.exitInitializationMode()

    def set(self, values: Mapping[str, float]) -> None:
        if values:
            self.fmu.setReal([self.vr[n] for n in values], [float(v) for v in values.values()])

    def get(self, names: Sequence[str]) -> np.ndarray:
        return np.array(self.fmu.getReal([self.vr[n] for n in names]))

    def run(self, t0: float, t_end: float, h: float, names: Sequence[str],
            inputs: Optional[Callable[[float], Mapping[str, float]]] = None) -> tuple[np.ndarray, np.ndarray]:
        """Step from t0 to t_end with step h, inputs(t) set before each step; returns the times
        and outputs `names` at every communication point including t0."""
        n = int(round((t_end - t0) / h))
        times = t0 + h * np.arange(n + 1)
        rows = []
        for k in range(n):
            if inputs is not None:
                self.set(inputs(times[k]))
            rows.append(self.get(names))
            self.fmu.doStep(currentCommunicationPoint=times[k], communicationStepSize=h)
        if inputs is not None:
            self.set(inputs(times[n]))
        rows.append(self.get(names))
        return times, np.array(rows)

    def close(self) -> None:
        self.fmu.terminate()
        self.fmu.freeInstance()
        shutil.rmtree(self.dir, ignore_errors=True)
