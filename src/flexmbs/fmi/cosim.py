"""Co-simulation of a system of FMUs: its description (`Assembly`) and an explicit fixed-step
master over fmpy (`Master`).

The master uses the same coupling scheme as fmpy's SSP runner and libcosim's fixed-step
algorithm (Jacobi): at each communication point every FMU steps from t to t + h with the inputs
it was given at t, then every connection copies an output at t + h to its input. So the three
masters give the same results on the same system (tests/test_servo_system.py). Before the
first step the connections are applied once, after initialisation, as libcosim does; fmpy's SSP
runner starts every connection at 0 instead, which is the same for a system starting at rest
at zero (the servo demo).

Variables are named `<element>.<variable>` (the element name has no dot, the variable name may).
Elements may be FMI 2.0 or FMI 3.0 co-simulation FMUs, mixed: an FMI 3.0 one is driven through
`Fmi3Slave`, which gives fmpy's FMU3Slave the FMU2Slave calls the master makes.
"""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

import numpy as np

from .coupling import ImplicitCoupling, StabilityEstimate, estimate


class CosimError(RuntimeError):
    """A co-simulation could not go on; the message names the element and time."""


class Fmi3Slave:
    """An FMI 3.0 co-simulation FMU (fmpy's FMU3Slave) behind the FMU2Slave calls of the master
    and of the implicit coupling: Reals are Float64, fmi2SetupExperiment's times and tolerance
    go with fmi3EnterInitializationMode (Modelica Association, "Functional Mock-up Interface
    Specification 3.0", 2022, section 2.3.2), output derivatives are fmi3GetOutputDerivatives.
    Only what the master calls is here."""

    def __init__(self, guid: str, unzipDirectory: str, modelIdentifier: str, instanceName: str) -> None:
        from fmpy.fmi3 import FMU3Slave

        self.fmu = FMU3Slave(guid=guid, unzipDirectory=unzipDirectory, modelIdentifier=modelIdentifier,
                             instanceName=instanceName)
        self._experiment: dict = {"startTime": 0.0}

    def instantiate(self, loggingOn: bool = False) -> None:
        self.fmu.instantiate(loggingOn=loggingOn)

    def setupExperiment(self, tolerance: float | None = None, startTime: float = 0.0,
                        stopTime: float | None = None) -> None:
        """Kept for fmi3EnterInitializationMode (times [s])."""
        self._experiment = {"tolerance": tolerance, "startTime": startTime, "stopTime": stopTime}

    def enterInitializationMode(self) -> None:
        self.fmu.enterInitializationMode(**self._experiment)

    def exitInitializationMode(self) -> None:
        self.fmu.exitInitializationMode()

    def setReal(self, vr: Sequence[int], values: Sequence[float]) -> None:
        self.fmu.setFloat64(vr, values)

    def getReal(self, vr: Sequence[int]) -> list[float]:
        return self.fmu.getFloat64(vr)

    def setString(self, vr: Sequence[int], values: Sequence[str]) -> None:
        self.fmu.setString(vr, values)

    def doStep(self, currentCommunicationPoint: float, communicationStepSize: float) -> None:
        self.fmu.doStep(currentCommunicationPoint, communicationStepSize)

    def getFMUstate(self) -> object:
        return self.fmu.getFMUState()

    def setFMUstate(self, state: object) -> None:
        self.fmu.setFMUState(state)

    def freeFMUstate(self, state: object) -> None:
        self.fmu.freeFMUState(state)

    def getDirectionalDerivative(self, vUnknown_ref: Sequence[int], vKnown_ref: Sequence[int],
                                 dvKnown: Sequence[float]) -> list[float]:
        return self.fmu.getDirectionalDerivative(vUnknown_ref, vKnown_ref, dvKnown)

    def getRealOutputDerivatives(self, vr: Sequence[int], order: Sequence[int]) -> list[float]:
        return self.fmu.getOutputDerivatives(vr, order)

    def reset(self) -> None:
        self.fmu.reset()

    def terminate(self) -> None:
        self.fmu.terminate()

    def freeInstance(self) -> None:
        self.fmu.freeInstance()


def describe(fmu: Path):
    """fmpy's model description of the FMU file. For FMI 3.0, providesDirectionalDerivative is
    set from FMI 3.0's attribute providesDirectionalDerivatives, which fmpy does not read into
    it (the coupling's derivatives and stability estimate look for it)."""
    from fmpy import read_model_description

    md = read_model_description(str(fmu), validate=False)
    if md.fmiVersion.startswith("3.") and md.coSimulation is not None:
        with zipfile.ZipFile(fmu) as z:
            cs = ElementTree.fromstring(z.read("modelDescription.xml")).find("CoSimulation")
        md.coSimulation.providesDirectionalDerivative = cs.get("providesDirectionalDerivatives") in ("true", "1")
    return md


def open_slave(md, folder: str, name: str, logging: bool = False):
    """An instantiated slave of the FMU described by `md` (fmpy's model description), extracted
    in `folder`: fmpy's FMU2Slave for FMI 2.0, an Fmi3Slave for FMI 3.0."""
    from fmpy.fmi2 import FMU2Slave

    cls = Fmi3Slave if md.fmiVersion.startswith("3.") else FMU2Slave
    slave = cls(guid=md.guid, unzipDirectory=folder, modelIdentifier=md.coSimulation.modelIdentifier,
                instanceName=name)
    slave.instantiate(loggingOn=logging)
    return slave


@dataclass
class Element:
    """One FMU instance: name (no dot), fmu file, parameter values by variable name."""

    name: str
    fmu: Path
    parameters: dict[str, float | str] = field(default_factory=dict)


@dataclass
class Assembly:
    """FMUs and their wiring. connections: (output, input) pairs `<element>.<variable>`;
    record: the variables a run returns; stop_time [s], step_size [s]: the default experiment;
    sequence: None for a Jacobi master (every element steps from the values of the last
    communication point), or the element names in the order a Gauss-Seidel master steps them,
    each after its inputs were set from the latest outputs (Master; an SSP package carries no
    order: fmpy's and libcosim's masters are Jacobi)."""

    name: str
    elements: list[Element]
    connections: list[tuple[str, str]]
    record: list[str]
    stop_time: float = 1.0
    step_size: float = 1e-3
    sequence: list[str] | None = None

    def element(self, name: str) -> Element:
        for e in self.elements:
            if e.name == name:
                return e
        raise KeyError(f"{self.name}: no element {name!r}; elements: {', '.join(e.name for e in self.elements)}")


def split(path: str) -> tuple[str, str]:
    """`<element>.<variable>` -> (element, variable)."""
    element, dot, variable = path.partition(".")
    if not dot or not variable:
        raise ValueError(f"{path!r} is not <element>.<variable>")
    return element, variable


def algebraic_loop(connections: Sequence[tuple[str, str]], feedthrough: dict[str, list[str]]) -> list[str]:
    """A cycle of same-instant dependencies (output -> connected input -> output that depends on
    it directly ...) as the list of variables on it, or [] if there is none."""
    graph: dict[str, list[str]] = {}
    for src, dst in connections:
        graph.setdefault(src, []).append(dst)
    for out, deps in feedthrough.items():
        for d in deps:
            graph.setdefault(d, []).append(out)
    state: dict[str, int] = {}     # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for node in list(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


class Master:
    """Explicit fixed-step master over the FMI 2.0 and FMI 3.0 FMUs of an Assembly (fmpy's
    FMU2Slave, or Fmi3Slave): Jacobi, or
    Gauss-Seidel in the order `assembly.sequence`. Both hold each input constant over a step
    and converge at first order in the step; Gauss-Seidel removes the one-step delay along
    the sequence (a controller's voltage reaches the motor, the motor's torque the plant, in
    the same step), which keeps stiff feedback loops stable at larger steps (Kuebler and
    Schiehlen, "Two methods of simulator coupling", Math. Comput. Model. Dyn. Syst. 6(2), 2000).

    coupling "implicit" takes each step linearly implicitly instead (fmi/coupling.py: predictor,
    step sensitivities of the coupled outputs to the inputs, the linearised coupling solved,
    corrector; `jacobian` "steps" or "derivatives", renewed every `jacobian_interval` steps), in
    the same Jacobi or Gauss-Seidel order: stable on stiff couplings at steps where the explicit
    scheme diverges, at about twice the cost per step.

    `initialize()` then `run(t_end, h)`, which may be called again to go on; `save()` / `restore()` keep and bring back the state of
    every FMU (fmi2GetFMUstate), `reset()` returns every FMU to its fresh state (fmi2Reset) for a
    new `initialize()`, so a design loop reuses the same instances. `set()` changes an input or a
    tunable parameter between steps."""

    def __init__(self, assembly: Assembly, logging: bool = False, coupling: str = "explicit",
                 jacobian: str = "steps", jacobian_interval: int = 10) -> None:
        from fmpy import extract

        if coupling not in ("explicit", "implicit"):
            raise CosimError(f"{assembly.name}: coupling {coupling!r} unknown; choose explicit or implicit")

        self.assembly = assembly
        self.dirs: dict[Path, str] = {}
        self.slaves: dict[str, object] = {}   # FMU2Slave or Fmi3Slave
        self.initialized: set[str] = set()    # the elements out of initialisation mode (free terminates them)
        self.vars: dict[str, dict] = {}
        self.feedthrough: dict[str, list[str]] = {}   # `<element>.<output>` -> the inputs it depends on
        descriptions = {}
        for e in assembly.elements:
            fmu = Path(e.fmu)
            if not fmu.is_file():
                raise CosimError(f"{assembly.name}: element {e.name}: no FMU file {fmu}")
            md = descriptions[e.name] = describe(fmu)
            self.vars[e.name] = {v.name: v for v in md.modelVariables}
            inputs = [v.name for v in md.modelVariables if v.causality == "input"]
            for u in md.outputs:   # no dependencies attribute: it may depend on every input
                deps = inputs if u.dependencies is None else [d.name for d in u.dependencies]
                self.feedthrough[f"{e.name}.{u.variable.name}"] = [f"{e.name}.{d}" for d in deps]
        for src, dst in assembly.connections:
            for path, wanted in ((src, "output"), (dst, "input")):
                self._ref(path)
                element, name = split(path)
                causality = self.vars[element][name].causality
                if causality != wanted:
                    raise CosimError(f"{assembly.name}: connection {src} -> {dst}: {path} is a {causality}, "
                                     f"not an {wanted}")
        self.links = [(self._ref(src), self._ref(dst)) for src, dst in assembly.connections]
        loop = algebraic_loop(assembly.connections, self.feedthrough)
        if loop:
            raise CosimError(f"{assembly.name}: algebraic loop {' -> '.join(loop)}: each of these outputs depends "
                             "on an input of the same instant; a Jacobi master would silently delay it. Break it "
                             "with a block that has no direct feedthrough")
        # one setReal per destination element per exchange, with the links' values in link order
        self._sources = [src for src, _ in self.links]
        sinks: dict[str, tuple[list[int], list[int]]] = {}
        for i, (_, (element, vr, _)) in enumerate(self.links):
            sinks.setdefault(element, ([], []))
            sinks[element][0].append(vr)
            sinks[element][1].append(i)
        self._sinks = [(element, vrs, np.array(links)) for element, (vrs, links) in sinks.items()]
        self.sequence = self._sequence(assembly)
        self.descriptions = descriptions
        self.stability: StabilityEstimate | None = None     # the coupling's, from initialize()
        self.t = 0.0
        self.implicit = ImplicitCoupling(self, jacobian, jacobian_interval) if coupling == "implicit" else None
        try:
            for e in assembly.elements:
                fmu = Path(e.fmu)
                if fmu not in self.dirs:
                    self.dirs[fmu] = extract(str(fmu))
                self.slaves[e.name] = open_slave(descriptions[e.name], self.dirs[fmu], e.name, logging)
        except Exception:
            self.free()
            raise

    def _sequence(self, assembly: Assembly) -> list[str] | None:
        if assembly.sequence is None:
            return None
        names = [e.name for e in assembly.elements]
        if sorted(assembly.sequence) != sorted(names):
            raise CosimError(f"{assembly.name}: the sequence {assembly.sequence} must name every element once: "
                             f"{', '.join(names)}")
        return list(assembly.sequence)

    def _ref(self, path: str) -> tuple[str, int, str]:
        element, name = split(path)
        if element not in self.vars:
            raise CosimError(f"{self.assembly.name}: {path}: no element {element!r}")
        if name not in self.vars[element]:
            raise CosimError(f"{self.assembly.name}: {path}: element {element} has no variable {name!r}")
        v = self.vars[element][name]
        return element, v.valueReference, v.type

    def set(self, path: str, value: float | str) -> None:
        element, vr, type_ = self._ref(path)
        slave = self.slaves[element]
        if type_ == "String":
            slave.setString([vr], [str(value)])
        else:
            slave.setReal([vr], [float(value)])

    def get(self, path: str) -> float:
        element, vr, _ = self._ref(path)
        return self.slaves[element].getReal([vr])[0]

    def initialize(self, start_time: float = 0.0, parameters: Mapping[str, float | str] | None = None) -> None:
        """Set the parameters, end initialisation of every FMU, apply the connections once.
        parameters: values by `<element>.<variable>` that replace or add to the Assembly's for
        this initialisation only (a design study after `reset()`)."""
        overrides: dict[str, dict[str, float | str]] = {}
        for path, value in (parameters or {}).items():
            self._ref(path)
            element, name = split(path)
            overrides.setdefault(element, {})[name] = value
        for e in self.assembly.elements:
            slave = self.slaves[e.name]
            slave.setupExperiment(startTime=start_time)
            for name, value in {**e.parameters, **overrides.get(e.name, {})}.items():
                self.set(f"{e.name}.{name}", value)
            slave.enterInitializationMode()
            slave.exitInitializationMode()
            self.initialized.add(e.name)
        self.t = start_time
        self._exchange()
        try:
            self.stability = estimate(self)
        except Exception:   # noqa: BLE001 - an FMU that claims derivatives and fails them: no estimate, no harm
            self.stability = None

    def _reader(self, refs: list[tuple[str, int, str]]):
        """A function returning the values of `refs` in their order, with one getReal per element."""
        groups: dict[str, list[int]] = {}
        for element, vr, _ in refs:
            groups.setdefault(element, []).append(vr)
        start, offset = {}, 0
        for element, vrs in groups.items():
            start[element], offset = offset, offset + len(vrs)
        seen: dict[str, int] = {}
        order = []
        for element, _, _ in refs:
            order.append(start[element] + seen.get(element, 0))
            seen[element] = seen.get(element, 0) + 1
        items, order = list(groups.items()), np.array(order, dtype=int)

        def read() -> np.ndarray:
            if not items:
                return np.zeros(0)
            return np.concatenate([self.slaves[element].getReal(vrs) for element, vrs in items])[order]
        return read

    def _exchange(self, values: np.ndarray | None = None) -> None:
        """Copy each connection's output to its input; `values`: the outputs in link order, if
        already read."""
        if values is None:
            values = self._reader(self._sources)()
        for element, vrs, links in self._sinks:
            self.slaves[element].setReal(vrs, values[links].tolist())

    def _step(self, name: str, h: float) -> None:
        try:
            self.slaves[name].doStep(currentCommunicationPoint=self.t, communicationStepSize=h)
        except Exception as err:   # fmpy raises FMICallException on any status but fmi2OK
            why = {2: "refused (fmi2Discard)", 3: "failed (fmi2Error)",
                   4: "failed fatally (fmi2Fatal)"}.get(getattr(err, "status", None), f"failed ({err})")
            raise CosimError(f"{self.assembly.name}: element {name} {why} the step from t = {self.t:.9g} s "
                             f"by h = {h:.6g} s; see its log. {self._diagnosis(h)}") from err

    def _diagnosis(self, h: float) -> str:
        """Whether the coupling explains a failed step (coupling.StabilityEstimate.diagnosis)."""
        if self.stability is None:
            return "(No estimate of the coupling's stability: an FMU gives no directional or output derivatives.)"
        return self.stability.diagnosis(h, [f"{s} -> {d}" for s, d in self.assembly.connections],
                                        self.implicit is not None)

    def _advance(self, h: float) -> None:
        for name in self.slaves:
            self._step(name, h)
        self.t += h

    def _sequential(self, refs: list[tuple[str, int, str]]):
        """A Gauss-Seidel step over `values` (the links' sources, then `refs`, as run() reads
        them): each element in sequence gets its inputs from `values`, steps, and its entries of
        `values` are read at once (no later element changes them within the step)."""
        feeds = {element: (vrs, links) for element, vrs, links in self._sinks}
        reads = {}
        for i, (element, vr, _) in enumerate(self._sources + refs):
            reads.setdefault(element, ([], []))
            reads[element][0].append(vr)
            reads[element][1].append(i)
        plan = [(name, self.slaves[name], feeds.get(name), reads.get(name)) for name in self.sequence]

        def step(values: np.ndarray, h: float) -> None:
            for name, slave, feed, read in plan:
                if feed is not None:
                    slave.setReal(feed[0], values[feed[1]].tolist())
                self._step(name, h)
                if read is not None:
                    values[read[1]] = slave.getReal(read[0])
            self.t += h
        return step

    def run(self, t_end: float, h: float, record: Sequence[str] | None = None,
            progress: bool = False) -> dict[str, np.ndarray]:
        """Step from the current time to t_end [s] with steps h [s]; returns `time` and every
        recorded variable at every communication point, the start included."""
        names = list(self.assembly.record if record is None else record)
        refs = [self._ref(n) for n in names]
        n = int(round((t_end - self.t) / h))
        if n < 0 or abs(self.t + n * h - t_end) > 1e-9 * max(1.0, t_end):
            raise CosimError(f"{self.assembly.name}: t_end = {t_end} s is not the current time {self.t} s "
                             f"plus a whole number of steps of {h} s")
        out = np.empty((n + 1, len(names)))
        time = self.t + h * np.arange(n + 1)
        steps = range(n)
        if progress:
            from tqdm import tqdm
            steps = tqdm(steps, desc=self.assembly.name, unit="step", mininterval=0.5)

        # the links' outputs and the recorded ones, read together after each step and before the
        # connections set new inputs, as fmpy and libcosim do (an output with direct feedthrough
        # would otherwise show the next step's input)
        read = self._reader(self._sources + refs)
        nl = len(self._sources)
        values = read()
        out[0] = values[nl:]
        sequential = None if self.sequence is None else self._sequential(refs)
        for k in steps:
            if self.implicit is not None:
                self.implicit.step(h)
                values = read()
                self._exchange(values[:nl])
            elif sequential is None:
                self._advance(h)
                values = read()
                self._exchange(values[:nl])
            else:
                sequential(values, h)
            out[k + 1] = values[nl:]
        self.t = float(time[-1])
        return {"time": time, **{name: out[:, j] for j, name in enumerate(names)}}

    def save(self) -> dict[str, object]:
        """The state of every FMU (by element) and the master's time."""
        return {"t": self.t, "states": {name: s.getFMUstate() for name, s in self.slaves.items()}}

    def restore(self, saved: dict[str, object]) -> None:
        for name, s in self.slaves.items():
            s.setFMUstate(saved["states"][name])
        self.t = float(saved["t"])

    def reset(self) -> None:
        """fmi2Reset every FMU: the same instances, fresh; set inputs if needed, then initialize()."""
        for s in self.slaves.values():
            s.reset()
        self.initialized.clear()
        self.t = 0.0

    def free(self) -> None:
        """Terminate the initialised instances (fmi2Terminate is not allowed before; calling it
        there made every FMU log an error) and free them all."""
        for name, s in self.slaves.items():
            if name in self.initialized:
                try:
                    s.terminate()
                except Exception:   # noqa: BLE001 - a failed instance: free it all the same
                    pass
            s.freeInstance()
        self.slaves = {}
        self.initialized.clear()
        for d in self.dirs.values():
            shutil.rmtree(d, ignore_errors=True)

    def __enter__(self) -> Master:
        return self

    def __exit__(self, *exc) -> None:
        self.free()


def max_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray], names: Sequence[str]) -> dict[str, float]:
    """Largest absolute difference of each variable between two runs, on the communication
    points both have (times matched to the nanosecond)."""
    ta, tb = np.round(a["time"] * 1e9).astype(np.int64), np.round(b["time"] * 1e9).astype(np.int64)
    common, ia, ib = np.intersect1d(ta, tb, return_indices=True)
    if common.size == 0:
        raise ValueError("the two runs have no communication point in common")
    return {n: float(np.max(np.abs(a[n][ia] - b[n][ib]))) for n in names}
