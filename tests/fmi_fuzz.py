"""A random FMI call fuzzer with an oracle: seeded random sequences of fmi2* or fmi3* calls
(legal and illegal, with good and bad arguments, state handles real and forged) on the raw C API
of an FMU's binary, each status compared with the one the co-simulation state machine (the
Reference-FMUs' masks, stepFailed / "step discarded" after a discard) and the FMU's documented
refusals give. The FMU's fmiVersion picks the calls (Fmi2Calls, Fmi3Calls): the oracle is the
same, but for FMI 3.0's start time, which fmi3EnterInitializationMode takes (FMI 2.0:
fmi2SetupExperiment), FMI 3.0's lastSuccessfulTime, which fmi3DoStep returns (FMI 2.0:
fmi2GetRealStatus), and the calls one version lacks (fmi2SetRealInputDerivatives; an always
refused call is fmi2CancelStep in FMI 2.0, fmi3EnterEventMode in FMI 3.0).

Used by tests/test_fmu_fuzz.py (a bounded budget) and by benchmarks/sanitize_front_end.py (the
same sequences on a front end built with AddressSanitizer). Run alone:
    python tests/fmi_fuzz.py FMU_FILE SEQUENCES SEED
prints "sequences N calls M status0 ... status3 ..." (calls by status) and exits 0 when every
status was the expected one.
"""

from __future__ import annotations

import collections
import copy
import ctypes as C
import math
import random
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from fmpy import extract, read_model_description
from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
from fmpy.fmi3 import fmi3LogMessageCallback

OK, WARNING, DISCARD, ERROR = 0, 1, 2, 3
LAST_SUCCESSFUL_TIME = 2
TIME_LIMIT = 1e8          # flexmbs_fmu.base.TIME_LIMIT (this module runs without flexmbs too)
SET = {"instantiated", "init", "complete"}
GET = {"init", "complete", "failed", "terminated"}
STATUS = {"complete", "failed", "terminated"}
DERIVATIVES = {"complete", "failed", "terminated"}     # fmi2GetRealOutputDerivatives

# What each FMU under test offers the fuzzer: a Real input, a parameter that is fixed after
# initialisation with good and bad values, outputs, and the steps its budget refuses.
PROFILES = {
    "double_pendulum": dict(input="shoulder.tau", parameter="gravity[3]", good=(-9.81, -3.0), bad=(math.nan,),
                            outputs=("elbow.q", "shoulder.qd", "energy.total"), budget=lambda h: h > 1e4),
    "dc_motor": dict(input="voltage", parameter="R", good=(2.0, 0.5), bad=(0.0, math.nan),
                     outputs=("current", "tau_load"), budget=lambda h: False),
}


class FuzzFailure(AssertionError):
    pass


@dataclass
class Model:
    """What the FMU must be: its FMI state, time [s], start time [s], an input refused as NaN."""

    state: str = "instantiated"
    t: float = 0.0
    start: float = 0.0
    pending: bool = False


@dataclass
class Pool:
    """Live state handles with the model each was saved from."""

    handles: list = field(default_factory=list)
    models: list = field(default_factory=list)


def _bind(lib: C.CDLL, sig: dict) -> None:
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args


vp, d, i, sz, u32 = C.c_void_p, C.c_double, C.c_int, C.c_size_t, C.c_uint32


def _vrs(refs) -> C.Array:
    return (u32 * len(refs))(*refs)


class Fmi2Calls:
    """The fmi2* calls the fuzzer makes, by purpose."""

    version, binaries, separate_setup, input_rates = 2, "linux64", True, True
    get_states = GET          # where the Real getter answers
    positive_step = False     # a step of 0 s is taken

    def __init__(self, lib: C.CDLL, md, folder: Path, log) -> None:
        self.lib = lib
        _bind(lib, {
            "fmi2Instantiate": (vp, [C.c_char_p, i, C.c_char_p, C.c_char_p, C.POINTER(fmi2CallbackFunctions), i, i]),
            "fmi2FreeInstance": (None, [vp]),
            "fmi2SetupExperiment": (i, [vp, i, d, d, i, d]),
            "fmi2EnterInitializationMode": (i, [vp]), "fmi2ExitInitializationMode": (i, [vp]),
            "fmi2Terminate": (i, [vp]), "fmi2Reset": (i, [vp]), "fmi2CancelStep": (i, [vp]),
            "fmi2SetReal": (i, [vp, C.POINTER(u32), sz, C.POINTER(d)]),
            "fmi2GetReal": (i, [vp, C.POINTER(u32), sz, C.POINTER(d)]),
            "fmi2DoStep": (i, [vp, d, d, i]),
            "fmi2GetFMUstate": (i, [vp, C.POINTER(vp)]), "fmi2SetFMUstate": (i, [vp, vp]),
            "fmi2FreeFMUstate": (i, [vp, C.POINTER(vp)]),
            "fmi2SerializedFMUstateSize": (i, [vp, vp, C.POINTER(sz)]),
            "fmi2SerializeFMUstate": (i, [vp, vp, C.c_char_p, sz]),
            "fmi2DeSerializeFMUstate": (i, [vp, C.c_char_p, sz, C.POINTER(vp)]),
            "fmi2GetRealStatus": (i, [vp, i, C.POINTER(d)]),
            "fmi2SetDebugLogging": (i, [vp, i, sz, C.POINTER(C.c_char_p)]),
            "fmi2GetDirectionalDerivative": (i, [vp, C.POINTER(u32), sz, C.POINTER(u32), sz, C.POINTER(d),
                                                 C.POINTER(d)]),
            "fmi2SetRealInputDerivatives": (i, [vp, C.POINTER(u32), sz, C.POINTER(C.c_int), C.POINTER(d)]),
            "fmi2GetRealOutputDerivatives": (i, [vp, C.POINTER(u32), sz, C.POINTER(C.c_int), C.POINTER(d)]),
        })
        self.token = md.guid.encode()
        self.resources = (folder / "resources").as_uri().encode()
        self.logger = fmi2CallbackLoggerTYPE(lambda env, name, status, cat, msg: log(status, msg))
        self.callbacks = fmi2CallbackFunctions()
        self.callbacks.logger = self.logger

    def instantiate(self):
        return self.lib.fmi2Instantiate(b"fuzz", 1, self.token, self.resources, C.byref(self.callbacks), 0, 0)

    def free(self, c) -> None:
        self.lib.fmi2FreeInstance(c)

    def setup(self, c, t0: float) -> int:
        return self.lib.fmi2SetupExperiment(c, 0, 0.0, t0, 0, 0.0)

    def enter(self, c, t0: float) -> int:
        return self.lib.fmi2EnterInitializationMode(c)

    def exit(self, c) -> int:
        return self.lib.fmi2ExitInitializationMode(c)

    def terminate(self, c) -> int:
        return self.lib.fmi2Terminate(c)

    def reset(self, c) -> int:
        return self.lib.fmi2Reset(c)

    def refused(self, c) -> tuple[str, int]:
        return "cancelStep", self.lib.fmi2CancelStep(c)

    def set_reals(self, c, refs, values) -> int:
        return self.lib.fmi2SetReal(c, _vrs(refs), len(refs), (d * len(values))(*values))

    def get_reals(self, c, refs, values) -> int:
        return self.lib.fmi2GetReal(c, _vrs(refs), len(refs), values)

    def step(self, c, t: float, h: float) -> tuple[int, float | None]:
        """The status and, unless refused, the last successful time [s]."""
        got = self.lib.fmi2DoStep(c, t, h, 1)
        if got == ERROR:
            return got, None
        last = C.c_double(math.nan)
        if self.lib.fmi2GetRealStatus(c, LAST_SUCCESSFUL_TIME, C.byref(last)) != OK:
            raise FuzzFailure("fmi2GetRealStatus(fmi2LastSuccessfulTime) refused after a step")
        return got, last.value

    def directional(self, c, outs, known, seed, out) -> int:
        return self.lib.fmi2GetDirectionalDerivative(c, _vrs(outs), len(outs), _vrs([known]), 1,
                                                     (d * 1)(seed), out)

    def input_rate(self, c, vr, order, rate) -> int:
        return self.lib.fmi2SetRealInputDerivatives(c, _vrs([vr]), 1, (C.c_int * 1)(order), (d * 1)(rate))

    def output_rates(self, c, outs, order, out) -> int:
        return self.lib.fmi2GetRealOutputDerivatives(c, _vrs(outs), len(outs), (C.c_int * len(outs))(*[order] * len(outs)),
                                                     out)

    def logging(self, c, on: int, n: int) -> int:
        return self.lib.fmi2SetDebugLogging(c, on, n, (C.c_char_p * 1)(b"logAll"))

    def get_state(self, c, handle) -> int:
        return self.lib.fmi2GetFMUstate(c, C.byref(handle))

    def set_state(self, c, handle) -> int:
        return self.lib.fmi2SetFMUstate(c, handle)

    def free_state(self, c, handle) -> int:
        return self.lib.fmi2FreeFMUstate(c, C.byref(handle))

    def state_size(self, c, handle, size) -> int:
        return self.lib.fmi2SerializedFMUstateSize(c, handle, C.byref(size))

    def serialize(self, c, handle, buf, n) -> int:
        return self.lib.fmi2SerializeFMUstate(c, handle, buf, n)

    def deserialize(self, c, blob, n, target) -> int:
        return self.lib.fmi2DeSerializeFMUstate(c, blob, n, C.byref(target))


class Fmi3Calls(Fmi2Calls):
    """The fmi3* calls of the same purposes (Modelica Association, "Functional Mock-up Interface
    Specification 3.0", 2022, sections 2.3 and 4.2)."""

    version, binaries, separate_setup, input_rates = 3, "x86_64-linux", False, False
    get_states = GET | {"instantiated"}     # section 2.3.2: start values before initialisation
    positive_step = True                    # section 4.2.1: communicationStepSize > 0

    def __init__(self, lib: C.CDLL, md, folder: Path, log) -> None:
        self.lib = lib
        b = C.c_bool
        _bind(lib, {
            "fmi3InstantiateCoSimulation": (vp, [C.c_char_p, C.c_char_p, C.c_char_p, b, b, b, b, C.POINTER(u32), sz,
                                                 vp, fmi3LogMessageCallback, vp]),
            "fmi3FreeInstance": (None, [vp]),
            "fmi3EnterInitializationMode": (i, [vp, b, d, d, b, d]), "fmi3ExitInitializationMode": (i, [vp]),
            "fmi3Terminate": (i, [vp]), "fmi3Reset": (i, [vp]), "fmi3EnterEventMode": (i, [vp]),
            "fmi3SetFloat64": (i, [vp, C.POINTER(u32), sz, C.POINTER(d), sz]),
            "fmi3GetFloat64": (i, [vp, C.POINTER(u32), sz, C.POINTER(d), sz]),
            "fmi3DoStep": (i, [vp, d, d, b, C.POINTER(b), C.POINTER(b), C.POINTER(b), C.POINTER(d)]),
            "fmi3GetFMUState": (i, [vp, C.POINTER(vp)]), "fmi3SetFMUState": (i, [vp, vp]),
            "fmi3FreeFMUState": (i, [vp, C.POINTER(vp)]),
            "fmi3SerializedFMUStateSize": (i, [vp, vp, C.POINTER(sz)]),
            "fmi3SerializeFMUState": (i, [vp, vp, C.c_char_p, sz]),
            "fmi3DeserializeFMUState": (i, [vp, C.c_char_p, sz, C.POINTER(vp)]),
            "fmi3SetDebugLogging": (i, [vp, b, sz, C.POINTER(C.c_char_p)]),
            "fmi3GetDirectionalDerivative": (i, [vp, C.POINTER(u32), sz, C.POINTER(u32), sz, C.POINTER(d), sz,
                                                 C.POINTER(d), sz]),
            "fmi3GetOutputDerivatives": (i, [vp, C.POINTER(u32), sz, C.POINTER(C.c_int32), C.POINTER(d), sz]),
        })
        self.token = md.guid.encode()   # fmpy keeps the FMI 3.0 instantiationToken in guid
        self.resources = (str(folder / "resources") + "/").encode()
        self.logger = fmi3LogMessageCallback(lambda env, status, cat, msg: log(status, msg))

    def instantiate(self):
        return self.lib.fmi3InstantiateCoSimulation(b"fuzz", self.token, self.resources, False, False, False, False,
                                                    None, 0, None, self.logger, None)

    def free(self, c) -> None:
        self.lib.fmi3FreeInstance(c)

    def enter(self, c, t0: float) -> int:
        return self.lib.fmi3EnterInitializationMode(c, False, 0.0, t0, False, 0.0)

    def exit(self, c) -> int:
        return self.lib.fmi3ExitInitializationMode(c)

    def terminate(self, c) -> int:
        return self.lib.fmi3Terminate(c)

    def reset(self, c) -> int:
        return self.lib.fmi3Reset(c)

    def refused(self, c) -> tuple[str, int]:
        return "enterEventMode", self.lib.fmi3EnterEventMode(c)

    def set_reals(self, c, refs, values) -> int:
        return self.lib.fmi3SetFloat64(c, _vrs(refs), len(refs), (d * len(values))(*values), len(values))

    def get_reals(self, c, refs, values) -> int:
        return self.lib.fmi3GetFloat64(c, _vrs(refs), len(refs), values, len(values))

    def step(self, c, t: float, h: float) -> tuple[int, float | None]:
        """The status and the last successful time [s] fmi3DoStep wrote (on every return: a
        refused step must leave the time the FMU is at, and say no event, no termination, no
        early return)."""
        flags = [C.c_bool(True) for _ in range(3)]
        last = C.c_double(math.nan)
        got = self.lib.fmi3DoStep(c, t, h, True, *(C.byref(f) for f in flags), C.byref(last))
        if any(f.value for f in flags):
            raise FuzzFailure(f"fmi3DoStep({t}, {h}) returned {got} with the flags {[f.value for f in flags]}")
        return got, last.value

    def directional(self, c, outs, known, seed, out) -> int:
        return self.lib.fmi3GetDirectionalDerivative(c, _vrs(outs), len(outs), _vrs([known]), 1, (d * 1)(seed), 1,
                                                     out, len(out))

    def output_rates(self, c, outs, order, out) -> int:
        return self.lib.fmi3GetOutputDerivatives(c, _vrs(outs), len(outs), (C.c_int32 * len(outs))(*[order] * len(outs)),
                                                 out, len(out))

    def logging(self, c, on: int, n: int) -> int:
        return self.lib.fmi3SetDebugLogging(c, bool(on), n, (C.c_char_p * 1)(b"logAll"))

    def get_state(self, c, handle) -> int:
        return self.lib.fmi3GetFMUState(c, C.byref(handle))

    def set_state(self, c, handle) -> int:
        return self.lib.fmi3SetFMUState(c, handle)

    def free_state(self, c, handle) -> int:
        return self.lib.fmi3FreeFMUState(c, C.byref(handle))

    def state_size(self, c, handle, size) -> int:
        return self.lib.fmi3SerializedFMUStateSize(c, handle, C.byref(size))

    def serialize(self, c, handle, buf, n) -> int:
        return self.lib.fmi3SerializeFMUState(c, handle, buf, n)

    def deserialize(self, c, blob, n, target) -> int:
        return self.lib.fmi3DeserializeFMUState(c, blob, n, C.byref(target))


def _good_time(t: float) -> bool:
    return math.isfinite(t) and abs(t) <= TIME_LIMIT


class Fuzzer:
    """Random sequences on one FMU; `sequence(rng)` runs one (instantiate ... free)."""

    def __init__(self, fmu: str, workdir: Path) -> None:
        md = read_model_description(fmu)
        self.dir = Path(extract(fmu, unzipdir=str(workdir / Path(fmu).stem)))
        kind = Fmi3Calls if md.fmiVersion.startswith("3.") else Fmi2Calls
        lib = C.CDLL(str(self.dir / "binaries" / kind.binaries / f"{md.coSimulation.modelIdentifier}.so"))
        self.api = kind(lib, md, self.dir, lambda status, msg: self.messages.append(
            (status, msg.decode(errors="replace"))))
        self.t0 = 0.0              # FMI 3.0: the start time the next fmi3EnterInitializationMode takes
        vr = {v.name: v.valueReference for v in md.modelVariables}
        p = PROFILES[md.modelName if md.modelName in PROFILES else Path(fmu).stem]
        self.p = p
        self.vr_in, self.vr_par = vr[p["input"]], vr[p["parameter"]]
        self.vr_out = [vr[n] for n in p["outputs"]]
        self.messages: list[tuple[int, str]] = []
        self.forged = C.create_string_buffer(64)     # never a state: a handle the FMU did not make
        self.calls = 0
        self.statuses: collections.Counter = collections.Counter()   # status -> calls that returned it
        self.trace: list[str] = []

    # ------------------------------------------------------------------ checking

    def expect(self, what: str, got: int, want: int) -> None:
        self.calls += 1
        self.statuses[got] += 1
        self.trace.append(f"{what} -> {got}")
        logged = [m for m in self.messages if m[0] >= DISCARD]
        self.messages.clear()
        if got != want:
            raise FuzzFailure(f"{what} returned {got}, expected {want}; calls so far:\n  " + "\n  ".join(self.trace[-25:]))
        if got >= DISCARD and not logged:
            raise FuzzFailure(f"{what} returned {got} without a logged message")

    # ------------------------------------------------------------------ calls

    def setup(self, c, m: Model, rng: random.Random) -> None:
        """The start time: set by fmi2SetupExperiment, or kept for fmi3EnterInitializationMode."""
        t0 = rng.choice([0.0, 0.25, math.nan, math.inf, 2 * TIME_LIMIT])
        if not self.api.separate_setup:
            self.t0 = t0
            return
        ok = m.state == "instantiated" and _good_time(t0)
        self.expect(f"setup({t0})", self.api.setup(c, t0), OK if ok else ERROR)
        if ok:
            m.start = m.t = t0

    def enter(self, c, m: Model, rng: random.Random) -> None:
        ok = m.state == "instantiated" and (self.api.separate_setup or _good_time(self.t0))
        self.expect("enter", self.api.enter(c, self.t0), OK if ok else ERROR)
        if ok:
            m.state = "init"
            if not self.api.separate_setup:
                m.start = m.t = self.t0

    def exit(self, c, m: Model, rng: random.Random) -> None:
        ok = m.state == "init"
        self.expect("exit", self.api.exit(c), OK if ok else ERROR)
        if ok:
            m.state, m.t = "complete", m.start

    def set_input(self, c, m: Model, rng: random.Random) -> None:
        u = rng.choice([0.1, -0.3, 0.0, math.nan, math.inf])
        want = ERROR if m.state not in SET else OK if math.isfinite(u) else WARNING
        self.expect(f"setReal(input, {u})", self.api.set_reals(c, [self.vr_in], [u]), want)
        if want != ERROR:
            m.pending = not math.isfinite(u)

    def set_parameter(self, c, m: Model, rng: random.Random) -> None:
        v = rng.choice(self.p["good"] + self.p["bad"])
        good = v in self.p["good"] and m.state in ("instantiated", "init")
        want = ERROR if m.state not in SET else OK if good else WARNING
        self.expect(f"setReal(parameter, {v})", self.api.set_reals(c, [self.vr_par], [v]), want)

    def get(self, c, m: Model, rng: random.Random) -> None:
        refs = rng.sample(self.vr_out + [self.vr_in], rng.randint(1, len(self.vr_out) + 1))
        values = (C.c_double * len(refs))()
        got = self.api.get_reals(c, refs, values)
        self.expect(f"getReal({refs})", got, OK if m.state in self.api.get_states else ERROR)
        if got == OK and not all(math.isfinite(v) for v in values):
            raise FuzzFailure(f"getReal({refs}) gave {list(values)}")

    def step(self, c, m: Model, rng: random.Random) -> None:
        t = rng.choice([m.t, m.t, m.t, m.t + 1.0, math.nan])
        h = rng.choice([1e-3, 1e-3, 5e-3, 0.0, -1e-3, math.nan, 1e6, 2 * TIME_LIMIT])
        if m.state != "complete" or not (math.isfinite(t) and math.isfinite(h) and h >= 0) \
                or (h == 0 and self.api.positive_step) \
                or abs(t + h) > TIME_LIMIT or abs(t - m.t) > 1e-9 * max(1.0, abs(m.t)):
            want = ERROR
        elif m.pending or (h > 0 and self.p["budget"](h)):
            want = DISCARD
        else:
            want = OK
        got, last = self.api.step(c, t, h)
        self.expect(f"doStep({t}, {h})", got, want)
        if want == OK:
            m.t = t + h
        elif want == DISCARD:
            m.state = "failed"
        if last is not None and last != m.t:
            raise FuzzFailure(f"last successful time {last} s, expected {m.t} s")

    def directional(self, c, m: Model, rng: random.Random) -> None:
        """Outputs with respect to the input, with a good seed, a NaN seed, or an output as the known."""
        how = rng.choice(["good", "good", "nan", "known output"])
        known = self.vr_out[0] if how == "known output" else self.vr_in
        seed = math.nan if how == "nan" else rng.choice([1.0, -0.5, 0.0])
        out = (C.c_double * len(self.vr_out))()
        got = self.api.directional(c, self.vr_out, known, seed, out)
        self.expect(f"getDirectionalDerivative({how})", got, OK if m.state in GET and how == "good" else ERROR)
        if got == OK and not all(math.isfinite(v) for v in out):
            raise FuzzFailure(f"getDirectionalDerivative gave {list(out)}")

    def input_rate(self, c, m: Model, rng: random.Random) -> None:
        """The input's rate: order 1 taken; order 2, a NaN rate or an output refused."""
        how = rng.choice(["good", "good", "order 2", "nan", "output"])
        vr = self.vr_out[0] if how == "output" else self.vr_in
        got = self.api.input_rate(c, vr, 2 if how == "order 2" else 1,
                                  math.nan if how == "nan" else rng.choice([0.5, -2.0]))
        self.expect(f"setRealInputDerivatives({how})", got, OK if m.state in SET and how == "good" else ERROR)

    def output_rates(self, c, m: Model, rng: random.Random) -> None:
        """The outputs' first derivatives (order 2 refused)."""
        order = rng.choice([1, 1, 1, 2])
        out = (C.c_double * len(self.vr_out))()
        got = self.api.output_rates(c, self.vr_out, order, out)
        self.expect(f"getRealOutputDerivatives(order {order})", got,
                    OK if m.state in DERIVATIVES and order == 1 else ERROR)
        if got == OK and not all(math.isfinite(v) for v in out):
            raise FuzzFailure(f"getRealOutputDerivatives gave {list(out)}")

    def terminate(self, c, m: Model, rng: random.Random) -> None:
        ok = m.state in ("complete", "failed")
        self.expect("terminate", self.api.terminate(c), OK if ok else ERROR)
        if ok:
            m.state = "terminated"

    def reset(self, c, m: Model, rng: random.Random) -> None:
        self.expect("reset", self.api.reset(c), OK)
        m.state, m.t, m.start, m.pending = "instantiated", 0.0, 0.0, False
        self.t0 = 0.0

    def cancel(self, c, m: Model, rng: random.Random) -> None:
        """A call the FMU always refuses."""
        what, got = self.api.refused(c)
        self.expect(what, got, ERROR)

    def logging(self, c, m: Model, rng: random.Random) -> None:
        self.expect("setDebugLogging", self.api.logging(c, rng.randint(0, 1), rng.randint(0, 1)), OK)

    def get_state(self, c, m: Model, rng: random.Random, pool: Pool) -> None:
        k = rng.randrange(len(pool.handles)) if pool.handles and (len(pool.handles) > 3 or rng.random() < 0.3) else -1
        handle = C.c_void_p(pool.handles[k] if k >= 0 else None)
        self.expect(f"getFMUstate(reuse {k >= 0})", self.api.get_state(c, handle), OK)
        if k >= 0:
            if handle.value != pool.handles[k]:
                raise FuzzFailure("fmi2GetFMUstate did not reuse the state it was given")
            pool.models[k] = copy.copy(m)
        else:
            pool.handles.append(handle.value)
            pool.models.append(copy.copy(m))

    def set_state(self, c, m: Model, rng: random.Random, pool: Pool) -> None:
        if pool.handles and rng.random() < 0.8:
            k = rng.randrange(len(pool.handles))
            self.expect("setFMUstate", self.api.set_state(c, pool.handles[k]), OK)
            vars(m).update(vars(copy.copy(pool.models[k])))
        else:
            self.expect("setFMUstate(forged)", self.api.set_state(c, C.addressof(self.forged)), ERROR)

    def free_state(self, c, m: Model, rng: random.Random, pool: Pool) -> None:
        if pool.handles and rng.random() < 0.8:
            k = rng.randrange(len(pool.handles))
            handle = C.c_void_p(pool.handles.pop(k))
            pool.models.pop(k)
            self.expect("freeFMUstate", self.api.free_state(c, handle), OK)
            if handle.value is not None:
                raise FuzzFailure("fmi2FreeFMUstate left the handle set")
        else:
            handle = C.c_void_p(C.addressof(self.forged))
            self.expect("freeFMUstate(forged)", self.api.free_state(c, handle), ERROR)

    def roundtrip(self, c, m: Model, rng: random.Random, pool: Pool) -> None:
        """Serialise a state and read it back: into a new handle, into a handle of the pool
        (reused), or damaged (refused, the given handle untouched)."""
        if not pool.handles:
            return
        k = rng.randrange(len(pool.handles))
        size = C.c_size_t(0)
        self.expect("serializedFMUstateSize", self.api.state_size(c, pool.handles[k], size), OK)
        buf = C.create_string_buffer(size.value)
        self.expect("serializeFMUstate", self.api.serialize(c, pool.handles[k], buf, size.value), OK)
        blob, n = buf.raw, size.value
        how = rng.choice(["new", "reuse", "truncated", "garbage", "huge", "empty"])
        j = rng.randrange(len(pool.handles))
        target = C.c_void_p(None if how == "new" else pool.handles[j])
        if how == "truncated":
            n = rng.randrange(1, n)
        elif how == "garbage":
            blob = bytes(rng.randrange(256) for _ in range(n))
        elif how == "huge":
            n = rng.choice([2 ** 64 - 1, 2 ** 62, 2 ** 31])
        elif how == "empty":
            n = 0
        good = how in ("new", "reuse")
        got = self.api.deserialize(c, blob, n, target)
        self.expect(f"deSerializeFMUstate({how})", got, OK if good else ERROR)
        if how == "new":
            pool.handles.append(target.value)
            pool.models.append(copy.copy(pool.models[k]))
        elif how == "reuse":
            if target.value != pool.handles[j]:
                raise FuzzFailure("deserialising did not reuse the state it was given")
            pool.models[j] = copy.copy(pool.models[k])
        elif target.value != pool.handles[j]:
            raise FuzzFailure("a refused deserialisation changed the handle it was given")

    # ------------------------------------------------------------------ sequences

    def sequence(self, rng: random.Random) -> None:
        self.trace.clear()
        c = self.api.instantiate()
        if not c:
            raise FuzzFailure(f"instantiation failed: {self.messages}")
        self.messages.clear()
        m, pool = Model(), Pool()
        self.t0 = 0.0
        plain = [self.setup, self.enter, self.exit, self.set_input, self.set_parameter, self.get, self.step,
                 self.step, self.step, self.terminate, self.reset, self.cancel, self.logging, self.directional,
                 *([self.input_rate] if self.api.input_rates else []), self.output_rates]
        stateful = [self.get_state, self.set_state, self.free_state, self.roundtrip]
        for _ in range(rng.randint(5, 40)):
            # a legal path to stepping is likely: initialise first most of the time
            if m.state == "instantiated" and rng.random() < 0.5:
                for call in (self.setup, self.enter, self.exit):
                    call(c, m, rng)
                continue
            call = rng.choice(plain + stateful)
            if call in stateful:
                call(c, m, rng, pool)
            else:
                call(c, m, rng)
        while pool.handles and rng.random() < 0.5:   # the rest are freed with the instance
            self.free_state(c, m, rng, pool)
        self.api.free(c)
        self.calls += 1


def fuzz(fmu: str, sequences: int, seed: int) -> tuple[int, int, dict[int, int]]:
    """Run `sequences` random sequences on the FMU file; returns (sequences, calls, the number
    of calls by status). Raises FuzzFailure (naming the seed) at the first unexpected status."""
    work = Path(tempfile.mkdtemp(prefix="fmi_fuzz_"))
    try:
        f = Fuzzer(fmu, work)
        for k in range(sequences):
            try:
                f.sequence(random.Random(seed * 100003 + k))
            except FuzzFailure as err:
                raise FuzzFailure(f"{Path(fmu).name}, seed {seed}, sequence {k}: {err}") from None
        return sequences, f.calls, dict(f.statuses)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    n, calls, statuses = fuzz(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    print(f"sequences {n} calls {calls} " + " ".join(f"status{k} {v}" for k, v in sorted(statuses.items())))
