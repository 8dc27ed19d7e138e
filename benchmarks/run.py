#!/usr/bin/env python
"""Speed of flexmbs side by side with its peers (exudyn, MuJoCo, Pinocchio), in one process.

    python benchmarks/run.py [--quick] [--cases a,b] [--rounds R] [--json]

Cases (benchmarks/README.md says what each one measures and why it is like for like):

* double_pendulum  RK4 h = 1 ms for 10 s: flexmbs.simulate vs exudyn ObjectKinematicTree RK44
                   and MuJoCo RK4 (mujoco.rollout); angles checked against the Lagrange solution.
* chain_rhs        one forward-dynamics call of a spatial chain of N rigid links vs pin.aba,
                   mj_forward and exudyn's kinematic tree; accelerations compared; growth
                   exponents fitted on log-log over the upper half of the N set.
* spin_up          spin-up beam (Ws = 6 rad/s, 20 s) at equal tip accuracy (1e-3 m against
                   exudyn's converged run): CPU time of the cheapest setting of each code.
* huang_arm        Huang's two-link arm at its default settings: wall time over simulated time
                   (peer "real_time"), and its joint-angle error against a run at rtol 1e-10.
* crank_rocker     He's crank-rocker with interface modes, 1 N m on the crank for 0.5 s, at its
                   default settings stepping past the 1 ms samples (interpolate=True): the same,
                   its error against dopri5 at rtol 1e-11; crank_rocker_landing: landing on
                   each sample, as its FMU does on each communication point.
* loops_chain      one right-hand side of N coupled four-bars: joint coordinates vs the
                   natural-coordinate formulation (both ours).

Timing: every timed item is warmed up once (numba compilation, caches, the accuracy checks),
then the items of a case, ours and the peers', run in interleaved rounds, so that load changes
on a shared machine hit all codes alike; best-of and median are reported.  Per-call costs are
measured over blocks of K calls (K chosen so that a block takes --block seconds): ours through a
small numba loop that calls solvers.common.f_eval K times (no Python overhead), the peers
through their Python bindings (pybind overhead included).

Output: a table (on stdout; on stderr with --json) and with --json one JSON object per line on
stdout: {"case", "n", "ours_s", "peer", "peer_s", "ratio" = ours_s / peer_s} (best of the
rounds), followed by extra keys (medians, errors, settings, growth exponents).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import flexmbs  # before numba: flexmbs then compiles for the CPU its FMUs carry (_cache)
import numpy as np
from numba import njit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))   # the benchmark modules beside this file

import models  # noqa: E402
import peer_exudyn as pe  # noqa: E402  (exudyn, mujoco and pinocchio are imported lazily)
import peer_mujoco as pm  # noqa: E402
import peer_pinocchio as pp  # noqa: E402
from flexmbs.model import model_from_dict  # noqa: E402
from flexmbs.names import did_you_mean  # noqa: E402
from flexmbs.natural import compile_natural  # noqa: E402
from flexmbs.natural.kernels import accelerations as natural_accelerations  # noqa: E402
from flexmbs.natural.kernels import make_work as natural_work  # noqa: E402
from flexmbs.natural.run import initial_state as natural_initial_state  # noqa: E402
from flexmbs.solvers.common import OK, f_eval  # noqa: E402
from flexmbs.solvers.stepper import Settings, Stepper  # noqa: E402
from flexmbs.compile import compile_model  # noqa: E402
from flexmbs.system import System  # noqa: E402

CASES = ("double_pendulum", "chain_rhs", "spin_up", "huang_arm", "crank_rocker", "loops_chain")
REFERENCE_FILE = HERE / "spin_up_reference_ws6.json"
SPIN_TOL = 1e-3             # tip accuracy at which the spin-up is compared [m]
SPIN_T_END = 20.0           # [s]
OUTPUT_DT = 0.01            # output sampling of the pendulum and the spin-up [s]

# spin-up candidates: the cheapest one that meets SPIN_TOL is compared (benchmarks/README.md).
# flexmbs: corotational chains of floating frames (the single frame tops out at 2.1e-3 m, its
# foreshortening model's error); `elements` is the total, `modes` per frame; no method = the
# model file's (radau, the default for a flexible model); max_step [s] = OUTPUT_DT unless given
# (larger: the implicit method or radau steps past the 10 ms samples up to it and interpolates
# them, simulate(interpolate=True)).
OURS_SPIN = [
    dict(segments=2, elements=4, modes=2, method="implicit", rtol=1e-3),
    dict(segments=2, elements=4, modes=2, method="implicit", rtol=1e-4),
    dict(segments=3, elements=3, modes=2, method="implicit", rtol=1e-3),
    dict(segments=2, elements=4, modes=2, method="implicit", rtol=1e-3, max_step=0.05),
    dict(segments=3, elements=3, modes=2, method="implicit", rtol=1e-3, max_step=0.05),
    dict(segments=3, elements=3, modes=2, method="implicit", rtol=1e-3, max_step=0.1),
    dict(segments=2, elements=4, modes=2, method="radau", rtol=1e-3, max_step=0.1),
    dict(segments=3, elements=3, modes=2, method="radau", rtol=1e-3, max_step=0.05),
    dict(segments=3, elements=3, modes=2, method="radau", rtol=1e-3, max_step=0.1),
    dict(segments=2, elements=4, modes=2, method="implicit", rtol=1e-3, cantilever=True),
    dict(segments=2, elements=4, modes=2, method="rk4", step=1e-2, cantilever=True),
    dict(segments=3, elements=3, modes=2, method="rk4", step=5e-3, cantilever=True),
    dict(segments=3, elements=3, modes=2),
    dict(segments=1, elements=8, modes=4),   # the shipped file: one frame, the default basis
]
# exudyn: ANCFCable2D elements, generalized-alpha with a fixed step (peer_exudyn.spin_up_case)
EXU_SPIN = [
    dict(n_elements=4, h=1e-2, modified_newton=False, abs_tol=1e-6, rel_tol=1e-6),
    dict(n_elements=8, h=1e-2, modified_newton=False, abs_tol=1e-6, rel_tol=1e-6),
    dict(n_elements=8, h=5e-3, modified_newton=True, abs_tol=1e-6, rel_tol=1e-6),
]


# ---------------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------------

@dataclass
class Timer:
    """One timed item: ``run()`` returns one measurement [s]; ``times`` collects them."""

    label: str
    run: Callable[[], float]
    times: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def interleave(timers: list[Timer], rounds: int) -> None:
    """``rounds`` rounds, each timing every item once, in turn."""
    for _ in range(rounds):
        for t in timers:
            gc.collect()
            t.times.append(t.run())


# The clock of every measurement: process CPU time (all threads) by default, because the
# machine is shared and CPU time leaves out the time other jobs held the core; --wall switches
# to wall time.  Every code timed here computes in one thread.
CLOCK: Callable[[], float] = time.process_time


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    """run() measuring fn() on CLOCK [s]."""
    def run() -> float:
        c0 = CLOCK()
        fn()
        return CLOCK() - c0
    return run


def per_call(block: Callable[[int], object], target: float) -> Callable[[], float]:
    """run() measuring the time of one call [s] as the time of block(K) over K, where block(k)
    makes k calls; K is chosen once so that a block takes about ``target`` s."""
    block(1)
    k = 1
    while True:
        c0 = CLOCK()
        block(k)
        dt = CLOCK() - c0
        if dt >= 0.2 * target or k >= 10 ** 7:
            break
        k *= 10
    k = max(1, int(k * target / max(dt, 1e-9)))
    once = timed(lambda: block(k))
    return lambda: once() / k


def python_block(call: Callable[[], object]) -> Callable[[int], None]:
    """block(k): k calls of ``call`` from a Python loop."""
    def block(k: int) -> None:
        for _ in range(k):
            call()
    return block


@njit(cache=True)
def repeat_f_eval(S, W, x, inputs, out, k):
    """f_eval at (t = 0, x) k times; the status bits of all calls (0: every call OK). Cached, so
    that count_rhs.py's children under valgrind compile nothing."""
    status = 0
    for _ in range(k):
        status |= f_eval(S, W, 0.0, x, inputs, out)
    return status


@njit
def _repeat_natural(N, W, y, yd, a, k):
    dropped = 0
    for _ in range(k):
        dropped = natural_accelerations(N, W, y, yd, a)
    return dropped


def _rhs_arguments(system: System, x: np.ndarray) -> tuple:
    """(S, W, x, inputs, out): f_eval's arguments at state x and the default inputs, with the
    workspace the integrators use."""
    x = np.array(x, dtype=float)
    return system.ref, Stepper(system, Settings(method="rk4")).W, x, system.input_defaults, np.zeros_like(x)


def ours_rhs(system: System, x: np.ndarray) -> tuple[Callable[[int], None], np.ndarray]:
    """(block, xdot): block(k) evaluates the right-hand side f_eval at (t = 0, x, default
    inputs) k times inside one numba loop (with the workspace the integrators use); xdot =
    [qdot; udot] at x."""
    S, W, x, inputs, out = _rhs_arguments(system, x)

    def block(k: int) -> None:
        status = repeat_f_eval(S, W, x, inputs, out, k)
        if status != OK:
            raise RuntimeError(f"f_eval failed on {system.model.name} (status {status})")

    block(1)
    return block, out.copy()


def ours_call(system: System, x: np.ndarray) -> Callable[[], int]:
    """call(): one right-hand side f_eval at (t = 0, x, default inputs) called from Python, as
    a user's script or an FMU calls it (numba's dispatch of the arguments included)."""
    S, W, x, inputs, out = _rhs_arguments(system, x)

    def call() -> int:
        return f_eval(S, W, 0.0, x, inputs, out)

    if call() != OK:
        raise RuntimeError(f"f_eval failed on {system.model.name}")
    return call


def growth(ns: list[int], times: list[float]) -> float:
    """Exponent p of time ~ N^p: least squares on log-log over the upper half of the N set."""
    h = len(ns) // 2
    if len(ns) - h < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns[h:]), np.log(times[h:]), 1)[0])


# ---------------------------------------------------------------------------------------------
# peers
# ---------------------------------------------------------------------------------------------

def peer_versions() -> dict[str, str | None]:
    """Version of each peer, or None with the reason printed when it cannot be imported."""
    out: dict[str, str | None] = {}
    for name, get in (("exudyn", lambda: pe.exudyn_info()["exudyn_version"]),
                      ("mujoco", pm.version), ("pinocchio", pp.version)):
        try:
            out[name] = get()
        except ImportError as err:
            out[name] = None
            log(f"{name} is not available ({err}): its comparisons are skipped; "
                "pip install -e '.[bench]' installs the peers")
    return out


# ---------------------------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------------------------

class Report:
    """Rows of the comparison: printed as a table at the end, and as JSON lines with --json."""

    def __init__(self, json_lines: bool, clock: str) -> None:
        self.json_lines = json_lines
        self.clock = clock
        self.rows: list[dict] = []

    def add(self, case: str, n: int | None, ours: Timer, peer: str, peer_t: Timer | float,
            **extra) -> None:
        peer_s = peer_t if isinstance(peer_t, float) else peer_t.best
        peer_med = peer_t if isinstance(peer_t, float) else peer_t.median
        row = {"case": case, "n": n, "ours_s": ours.best, "peer": peer, "peer_s": peer_s,
               "ratio": ours.best / peer_s,
               "ours_median_s": ours.median, "peer_median_s": peer_med,
               "ratio_median": ours.median / peer_med, "rounds": len(ours.times),
               "clock": self.clock, **extra}
        self.rows.append(row)
        if self.json_lines:
            print(json.dumps(row, default=_json_default), flush=True)

    def table(self) -> None:
        log("\n" + "=" * 104)
        log(f"{'case':16s} {'n':>4s} {'ours best':>11s} {'(median)':>11s}  {'peer':14s} "
            f"{'peer best':>11s} {'(median)':>11s}  {'ratio':>7s} {'(median)':>8s}")
        for r in self.rows:
            log(f"{r['case']:16s} {'' if r['n'] is None else r['n']:>4} {_t(r['ours_s']):>11s} "
                f"{_t(r['ours_median_s']):>11s}  {r['peer']:14s} {_t(r['peer_s']):>11s} "
                f"{_t(r['peer_median_s']):>11s}  {r['ratio']:7.3g} {r['ratio_median']:8.3g}")
        log(f"{self.clock} time; ratio = ours / peer (best of the rounds; median of the rounds in "
            "brackets); for real_time the peer time is the simulated time, so ratio = 1 / "
            "real-time factor")


def _t(s: float) -> str:
    """A time [s] with a readable unit."""
    if s < 1e-3:
        return f"{s * 1e6:.3g} us"
    if s < 1.0:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


_LOG = sys.stdout


def log(msg: str) -> None:
    print(msg, file=_LOG, flush=True)


# ---------------------------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------------------------

def double_pendulum(cfg: argparse.Namespace, peers: dict, rep: Report) -> None:
    """RK4 h = 1 ms for 10 s, angles sampled every 10 ms: simulate() on the compiled model vs
    exudyn's SolveDynamic and MuJoCo's rollout (model building excluded everywhere)."""
    t_end, h = 10.0, 1e-3
    log(f"\n=== double_pendulum: RK4 h = {h:g} s, {t_end:g} s ===")
    system = compile_model(flexmbs.load_model("double_pendulum"))

    def ours_sim():
        return flexmbs.simulate(system, t_end, method="rk4", step=h, output_step=OUTPUT_DT)

    r = ours_sim()
    t = r.time
    theta = {"ours": np.column_stack([r["shoulder.q"], r["elbow.q"]])}
    timers = {"ours": Timer("flexmbs.simulate", timed(ours_sim))}
    if peers["exudyn"]:
        solve, collect = pe.double_pendulum_case(t_end, h, output_dt=OUTPUT_DT)
        solve()
        d = collect()
        assert d["t_out"].size == t.size and np.abs(d["t_out"] - t).max() < 1e-9
        theta["exudyn"] = d["theta_out"]
        timers["exudyn"] = Timer("exudyn SolveDynamic RK44", timed(solve))
    if peers["mujoco"]:
        solve, collect = pm.double_pendulum_case(models.DOUBLE_PENDULUM, t_end, h)
        solve()
        d = collect()
        every = int(round(OUTPUT_DT / h))
        assert np.abs(d["t"][::every] - t).max() < 1e-9
        theta["mujoco"] = d["q"][::every]
        timers["mujoco"] = Timer("mujoco rollout RK4", timed(solve))
    ref = pe.double_pendulum_reference(t)
    early = t <= 2.0 + 1e-9
    for code, th in theta.items():
        err = np.abs(th - ref)[early].max()
        diff = "" if code == "ours" else f", vs ours over 10 s {np.abs(th - theta['ours']).max():.1e}"
        log(f"  {code:7s} angles vs the Lagrange solution (DOP853, rtol 1e-12) over [0, 2] s: "
            f"{err:.1e} rad{diff}")
        # RK4 at 1 ms is 7e-10 rad off over [0, 2] s: more means a different model or scheme
        if err > 1e-8:
            raise RuntimeError(f"double_pendulum: {code} is {err:.2e} rad off the Lagrange "
                               "solution over [0, 2] s: not the same problem")
    interleave(list(timers.values()), cfg.rounds)
    for code in ("exudyn", "mujoco"):
        if code in timers:
            rep.add("double_pendulum", None, timers["ours"], code, timers[code],
                    max_angle_diff_rad=float(np.abs(theta[code] - theta["ours"]).max()))


# chain_rhs: which of our two timings each peer is compared with, and how both were called
CHAIN_PAIRING = {"pinocchio": ("ours_python", "both from Python, one call at a time"),
                 "pinocchio_loop": ("ours", "both in a compiled loop (numba; C++)")}


def chain_rhs(cfg: argparse.Namespace, peers: dict, rep: Report) -> None:
    """One forward-dynamics call of the chains of models.chain_links(n), each code called two
    ways where it can be: from Python one call at a time (ours through numba's dispatcher, the
    peers through their bindings), and in a compiled loop (ours in numba, Pinocchio's aba in
    C++: peer_pinocchio.compiled_chain_rhs). Pinocchio is compared both ways; MuJoCo and exudyn,
    called from Python only, with ours in the loop."""
    ns = [2, 4, 8, 16] if cfg.quick else [2, 4, 8, 16, 32, 64]
    log(f"\n=== chain_rhs: one forward-dynamics call, spatial chain of N rigid links, "
        f"N = {', '.join(map(str, ns))} ===")
    results: dict[str, dict[int, Timer]] = {}
    diffs: dict[str, dict[int, float]] = {}
    loop_error: str | None = None
    for n in ns:
        links = models.chain_links(n)
        q, qd = models.chain_state(n)
        system = compile_model(model_from_dict(models.chain_model(n)))
        assert [system.joint_q[f"j{k}"] for k in range(n)] == [(k, 1) for k in range(n)]
        x = np.concatenate([q, qd])
        block, xdot = ours_rhs(system, x)
        acc = xdot[system.nq:]
        timers = {"ours": Timer("ours f_eval (numba loop)", per_call(block, cfg.block)),
                  "ours_python": Timer("ours f_eval (from Python)",
                                       per_call(python_block(ours_call(system, x)), cfg.block))}
        blocks: dict[str, tuple[Callable[[int], None], np.ndarray]] = {}
        if peers["pinocchio"]:
            call = pp.chain_rhs(links, q, qd)
            blocks["pinocchio"] = python_block(call), np.array(call())
            if loop_error is None:
                try:
                    blocks["pinocchio_loop"] = pp.compiled_chain_rhs(links, q, qd)
                except RuntimeError as err:
                    loop_error = str(err)
                    results.pop("pinocchio_loop", None)     # no partial N set in the fit
                    log(f"  Pinocchio in a compiled loop is skipped: {loop_error}")
        if peers["mujoco"]:
            call = pm.chain_rhs(links, q, qd)
            blocks["mujoco"] = python_block(call), np.array(call())
        if peers["exudyn"]:
            blk, accel = pe.chain_rhs_case([lk.axis for lk in links], [lk.offset for lk in links],
                                           [lk.mass for lk in links], [lk.com for lk in links],
                                           [lk.inertia for lk in links], models.GRAVITY, q, qd)
            blocks["exudyn"] = blk, accel()
        for code, (blk, a) in blocks.items():
            diffs.setdefault(code, {})[n] = d = float(np.abs(a - acc).max())
            if d > 1e-9 * max(1.0, np.abs(acc).max()):
                raise RuntimeError(f"chain_rhs N = {n}: {code}'s accelerations differ from ours "
                                   f"by {d:.2e} rad/s^2: not the same model")
            timers[code] = Timer(code, per_call(blk, cfg.block))
        interleave(list(timers.values()), cfg.rounds)
        for code, tm in timers.items():
            results.setdefault(code, {})[n] = tm
        log(f"  N = {n:3d}: " + ", ".join(f"{c} {_t(tm.best)}" for c, tm in timers.items())
            + "; max |acc - ours| [rad/s^2]: "
            + ", ".join(f"{c} {diffs[c][n]:.1e}" for c in blocks) + f" (|acc| up to {np.abs(acc).max():.2g})")
    exps = {c: growth(ns, [results[c][n].best for n in ns]) for c in results}
    log("  growth exponents (time ~ N^p, least squares on log-log over N >= "
        f"{ns[len(ns) // 2]}): " + ", ".join(f"{c} {p:.2f}" for c, p in exps.items()))
    for code in results:
        if code.startswith("ours"):
            continue
        ours = CHAIN_PAIRING.get(code, ("ours", "ours in a numba loop, the peer from Python"))
        for n in ns:
            rep.add("chain_rhs", n, results[ours[0]][n], code, results[code][n], calls=ours[1],
                    max_acc_diff=diffs[code][n], ours_growth=exps[ours[0]], peer_growth=exps[code])


def _spin_reference() -> np.ndarray | None:
    """exudyn's converged tip history (benchmarks/spin_up_reference_ws6.json), or None."""
    if not REFERENCE_FILE.exists():
        return None
    d = json.loads(REFERENCE_FILE.read_text())
    assert d["omega_s"] == 6.0 and d["t_end"] == SPIN_T_END and d["output_dt"] == OUTPUT_DT
    return np.asarray(d["tip"])


def _ours_spin(s: dict) -> tuple[str, Callable[[], np.ndarray]]:
    """(label, simulate) for one flexmbs spin-up setting; simulate() returns the in-plane tip
    deflection in the hub frame [m] at the output samples (the model is compiled once, here)."""
    model = flexmbs.load_model("spin_up_beam")
    model.bodies[0] = replace(model.bodies[0], segments=s["segments"], elements=s["elements"],
                              modes=s["modes"])
    if s.get("cantilever"):     # the basis before interface modes: clamped root, bending modes only
        model.bodies[0] = replace(model.bodies[0], interface_modes=False, static_modes=False,
                                  acceleration_modes=False)
    system = compile_model(model)
    kw = {"max_step": OUTPUT_DT, **{k: s[k] for k in ("method", "step", "rtol", "max_step") if k in s}}
    kw["interpolate"] = kw["max_step"] > OUTPUT_DT
    how = " ".join(f"{k}={v:g}" if isinstance(v, float) else str(v) for k, v in kw.items()
                   if k in s)
    label = (f"seg={s['segments']} el={s['elements']} modes={s['modes']}"
             f"{' cantilever' if s.get('cantilever') else ''} "
             f"{how or 'default ' + system.model.solver_method()}{' interpolated' if kw['interpolate'] else ''}")

    # the signals read below: the samples' dynamics (accelerations, energies) are not evaluated
    read = ["beam.tip_deflection[2]"] if s["segments"] == 1 else ["hub.q", "tip.r[1]", "tip.r[2]"]

    def sim() -> np.ndarray:
        r = flexmbs.simulate(system, SPIN_T_END, output_step=OUTPUT_DT, signals=read, **kw)
        if s["segments"] == 1:
            return r["beam.tip_deflection[2]"]
        th = r["hub.q"]          # the tip sensor's world position rotated into the hub frame
        return -np.sin(th) * r["tip.r[1]"] + np.cos(th) * r["tip.r[2]"]

    return label, sim


def spin_up(cfg: argparse.Namespace, peers: dict, rep: Report) -> None:
    """The cheapest setting of each code whose tip error is <= SPIN_TOL: time of the
    integration (flexmbs: simulate() of the compiled model; exudyn: SolveDynamic)."""
    log(f"\n=== spin_up: Ws = 6 rad/s, {SPIN_T_END:g} s, tip error <= {SPIN_TOL:g} m against "
        "exudyn's converged run ===")
    ref = _spin_reference()
    if ref is None:
        log(f"  {REFERENCE_FILE.name} is missing: spin_up skipped "
            "(python benchmarks/peer_exudyn.py rebuilds the reference)")
        return
    # only the settings that meet the tolerance can be picked, so only those are timed
    cands: dict[str, list[Timer]] = {"ours": [], "exudyn": []}
    errors: dict[str, float] = {}
    settings = [("ours", s) for s in OURS_SPIN]
    if peers["exudyn"]:
        settings += [("exudyn", s) for s in EXU_SPIN]
    for code, s in settings:
        t0 = time.perf_counter()
        try:
            if code == "ours":
                label, sim = _ours_spin(s)
                tip = sim()
            else:
                solve, collect = pe.spin_up_case(omega_s=6.0, t_end=SPIN_T_END, output_dt=OUTPUT_DT, **s)
                label = (f"ANCF el={s['n_elements']} GA h={s['h']:g} "
                         f"{'modified' if s['modified_newton'] else 'full'} Newton")
                sim = solve
                solve()
                tip = collect()["tip"]
        except Exception as err:  # a setting that fails is a result, not a crash
            log(f"  {code:6s} {s}: FAILED ({type(err).__name__}: {str(err)[:80]})")
            continue
        warm = time.perf_counter() - t0
        err = float(np.abs(tip - ref).max())
        log(f"  {code:6s} {label:48s} error {err:.2e} m, first run {warm:.2f} s")
        if err <= SPIN_TOL:
            cands[code].append(Timer(label, timed(sim)))
            errors[label] = err
    timers = cands["ours"] + cands["exudyn"]
    interleave(timers, cfg.rounds)
    for tm in timers:
        log(f"  timed: {tm.label:48s} {_t(tm.best)} (median {_t(tm.median)})")
    picks = {}
    for code, cs in cands.items():
        if cs:
            picks[code] = min(cs, key=lambda tm: tm.best)
            log(f"  {code}: cheapest at {SPIN_TOL:g} m: {picks[code].label} "
                f"({_t(picks[code].best)})")
        else:
            log(f"  {code}: no setting met {SPIN_TOL:g} m")
    if "ours" in picks and "exudyn" in picks:
        rep.add("spin_up", None, picks["ours"], "exudyn", picks["exudyn"],
                ours_setting=picks["ours"].label, peer_setting=picks["exudyn"].label,
                ours_err_m=errors[picks["ours"].label], peer_err_m=errors[picks["exudyn"].label],
                tol_m=SPIN_TOL,
                timed={tm.label: [errors[tm.label], tm.best, tm.median] for tm in timers})


def _real_time(cfg: argparse.Namespace, rep: Report, case: str, name: str, t_end: float, joints: tuple,
               reference: dict, inputs: dict | None = None, interpolate: bool = False) -> None:
    """Real-time factor of the shipped model `name` at its file's settings (simulate() of the
    compiled model over t_end [s], `inputs` held, `interpolate` passed on) and its largest error
    on the joint angles `joints` [rad] against a run with the `reference` settings.  The
    real-time factor is meant in wall time: it is the same as CPU time on a quiet machine (one
    thread)."""
    system = compile_model(flexmbs.load_model(name))

    def sim():
        return flexmbs.simulate(system, t_end, inputs=inputs, interpolate=interpolate)

    r = sim()
    log(f"  default: {system.model.solver_method()} at rtol {system.model.solver_rtol():g}, "
        f"{r.stats.get('steps', '?')} steps; reference: {reference} ...")
    tight = flexmbs.simulate(system, t_end, inputs=inputs, **reference)
    err = max(float(np.abs(r[j] - tight[j]).max()) for j in joints)
    log(f"  max joint-angle error against the reference: {err:.2e} rad")
    ours = Timer("flexmbs.simulate", timed(sim))
    interleave([ours], cfg.rounds)
    rep.add(case, None, ours, "real_time", t_end, real_time_factor=t_end / ours.best,
            joint_error_rad=err, steps=r.stats.get("steps"), interpolate=interpolate)


def huang_arm(cfg: argparse.Namespace, peers: dict, rep: Report) -> None:
    """Huang's arm (free release) at its file's settings against the same run at rtol 1e-10."""
    t_end = 1.0 if cfg.quick else 5.0
    log(f"\n=== huang_arm: default settings, {t_end:g} s (free release) ===")
    _real_time(cfg, rep, "huang_arm", "huang_two_link", t_end, ("shoulder.q", "elbow.q"), dict(rtol=1e-10))


def crank_rocker(cfg: argparse.Namespace, peers: dict, rep: Report) -> None:
    """He's crank-rocker with interface modes (coupler modes up to 2.3 kHz) under a crank torque of
    1 N m from rest for 0.5 s at its file's settings (its 1 ms output samples), against dopri5 at
    rtol 1e-11 (another method: the crank turns about 10 rad), stepping past the samples
    (simulate's interpolate=True: each step and sample projected onto the loop), and as an FMU
    runs it, landing on each sample (crank_rocker_landing)."""
    for case, interpolate in (("crank_rocker", True), ("crank_rocker_landing", False)):
        log(f"\n=== {case}: default settings{', interpolated samples' if interpolate else ''}, 0.5 s at "
            "crank.tau = 1 N m ===")
        _real_time(cfg, rep, case, "he_crank_rocker", 0.5, ("crank.q", "rocker.q"),
                   dict(method="dopri5", rtol=1e-11), inputs={"crank.tau": 1.0}, interpolate=interpolate)


def loops_chain(cfg: argparse.Namespace, peers: dict, rep: Report) -> None:
    """One right-hand side of models.four_bar_chain(n): joint coordinates (f_eval) vs natural
    coordinates (natural.kernels.accelerations), both in numba loops."""
    ns = [1, 2, 4, 8, 16] if cfg.quick else [1, 2, 4, 8, 16, 32, 64]
    log(f"\n=== loops_chain: one RHS of N coupled four-bars, N = {', '.join(map(str, ns))} ===")
    res: dict[str, dict[int, Timer]] = {"joint": {}, "natural": {}}
    for n in ns:
        system = compile_model(model_from_dict(models.four_bar_chain(n)))
        joint, _ = ours_rhs(system, np.concatenate([system.q0, system.u0]))
        nat = compile_natural(system)
        W = natural_work(nat.arrays, len(nat.drives))
        y, yd = natural_initial_state(system)
        a = np.zeros(nat.n)

        def natural(k: int, N=nat.arrays, W=W, y=y, yd=yd, a=a) -> None:
            _repeat_natural(N, W, y, yd, a, k)

        timers = [Timer("joint", per_call(joint, cfg.block)),
                  Timer("natural", per_call(natural, cfg.block))]
        interleave(timers, cfg.rounds)
        res["joint"][n], res["natural"][n] = timers
        log(f"  N = {n:3d}: joint {_t(timers[0].best)}, natural {_t(timers[1].best)}")
    exps = {c: growth(ns, [res[c][n].best for n in ns]) for c in res}
    log(f"  growth exponents (over N >= {ns[len(ns) // 2]}): joint {exps['joint']:.2f}, "
        f"natural {exps['natural']:.2f}")
    for n in ns:
        rep.add("loops_chain", n, res["joint"][n], "ours_natural", res["natural"][n],
                ours_growth=exps["joint"], peer_growth=exps["natural"])


RUNNERS = {"double_pendulum": double_pendulum, "chain_rhs": chain_rhs, "spin_up": spin_up,
           "huang_arm": huang_arm, "crank_rocker": crank_rocker, "loops_chain": loops_chain}


def parse_cases(text: str | None) -> list[str]:
    """The --cases list, in the order of CASES; unknown names are an error with a suggestion."""
    if not text:
        return list(CASES)
    names = [c.strip() for c in text.split(",") if c.strip()]
    for c in names:
        if c not in CASES:
            raise SystemExit(f"--cases: unknown case {c!r}{did_you_mean(c, CASES)}; "
                             f"choose from {', '.join(CASES)}")
    return [c for c in CASES if c in names]


def main(argv: list[str] | None = None) -> int:
    global _LOG, CLOCK
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="3 rounds, 5 ms blocks, smaller N sets, 1 s of Huang's arm (~2 min)")
    p.add_argument("--cases", help=f"comma-separated subset of {','.join(CASES)}")
    p.add_argument("--rounds", type=int, help="interleaved timed rounds (default 7, --quick 3)")
    p.add_argument("--block", type=float,
                   help="seconds per block of calls for per-call costs (default 0.05, --quick 0.005)")
    p.add_argument("--wall", action="store_true",
                   help="time in wall-clock seconds instead of process CPU seconds")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per comparison on stdout (the table goes to stderr)")
    cfg = p.parse_args(argv)
    cases = parse_cases(cfg.cases)
    cfg.rounds = cfg.rounds or (3 if cfg.quick else 7)
    cfg.block = cfg.block or (0.005 if cfg.quick else 0.05)
    if cfg.json:
        _LOG = sys.stderr
    if cfg.wall:
        CLOCK = time.perf_counter
    peers = peer_versions()
    log(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; Python "
        f"{platform.python_version()}, flexmbs {flexmbs.__version__}, "
        + ", ".join(f"{k} {v}" for k, v in peers.items() if v)
        + f"; {cfg.rounds} rounds{' (quick)' if cfg.quick else ''}, "
        + ("wall" if cfg.wall else "CPU") + " time")
    rep = Report(cfg.json, "wall" if cfg.wall else "cpu")
    t0 = time.perf_counter()
    for c in cases:
        RUNNERS[c](cfg, peers, rep)
    rep.table()
    log(f"{time.perf_counter() - t0:.0f} s; load average at the end {os.getloadavg()[0]:.2f} "
        "(on a shared machine absolute times vary between runs; the interleaved ratios less)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
