#!/usr/bin/env python
"""Speed benchmark: flexmbs side by side with exudyn, in one process.

    python benchmarks/run.py [--quick] [--search] [--repeats N] [--json out.json]

Two problems (see benchmarks/README.md for what is measured and the numbers):

1. Rigid double pendulum, 10 s, classical RK4 with h = 1e-3, angles sampled every 0.01 s
   by both codes.  Timed: the integration only (flexmbs ``Result.stats["wall_time"]``,
   exudyn ``mbs.SolveDynamic``); flexmbs' whole ``simulate()`` call is reported too.
   Goal: ours / exudyn <= 1.
2. Spin-up beam at Ws = 6 rad/s, 20 s, at equal accuracy.  Accuracy is the max-norm error of
   the in-plane tip deflection history (hub frame, 2001 samples every 0.01 s) against
   exudyn's converged nonlinear solution (32 ANCF elements, h = 1e-3, cached in
   benchmarks/spin_up_reference_ws6.json).  For each accuracy level (1e-2 m, 1e-3 m) the
   cheapest measured setting of each code that meets it is compared.  flexmbs has two
   routes: (a) one floating frame with geometric stiffening, (b) a corotational chain of
   floating frames (``segments``).  Goal: exudyn / ours >= 5.

Every case is warmed up once (numba compilation, caches; the warm-up run also gives the
error), then all cases are run in ``repeats`` interleaved rounds, so that load changes on
a shared machine hit both codes alike; the best round is reported.  Without exudyn only
flexmbs is run.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))   # peer_exudyn

import flexmbs  # noqa: E402
import peer_exudyn as pe  # noqa: E402  (exudyn itself is imported lazily)

REFERENCE_FILE = HERE / "spin_up_reference_ws6.json"
OMEGA_S = 6.0
T_END_SPIN = 20.0
T_END_PEND = 10.0
H_PEND = 1e-3
OUTPUT_DT = 0.01
LEVELS = (1e-2, 1e-3)

# ---------------------------------------------------------------------------------------------
# candidate settings
# ---------------------------------------------------------------------------------------------
# The default lists hold the cheapest settings found by `--search` for each accuracy level
# (see README.md) plus, per route, the most accurate setting tried, so that the run shows the
# best accuracy each route reaches.  Steps are at most the output step 0.01 s on both sides
# (exudyn's sensor period must be a multiple of h; flexmbs steps at least once per sample).
#
# flexmbs: route a = `segments: 1`, route b = corotational chain.  `elements` is the total
# over the beam; `modes` are per floating frame (pairs: in-plane + out-of-plane).
OURS = [
    dict(route="a", segments=1, elements=1, modes=2, method="rk4", step=1e-2),
    dict(route="a", segments=1, elements=2, modes=2, method="rk4", step=1e-2),
    dict(route="a", segments=1, elements=16, modes=8, method="dopri5", rtol=1e-8, best=True),
    dict(route="b", segments=2, elements=2, modes=2, method="rk4", step=1e-2),
    dict(route="b", segments=2, elements=4, modes=2, method="rk4", step=1e-2),
    dict(route="b", segments=3, elements=3, modes=2, method="rk4", step=5e-3),
    dict(route="b", segments=4, elements=4, modes=2, method="rk4", step=2.5e-3, best=True),
]
# exudyn: ANCFCable2D elements, generalized-alpha with fixed h, full Newton.  Newton converges
# on the coordinate increment (residualMode 1); 1e-6 m instead of peer_exudyn's 1e-10 m
# changes the tip history by < 1e-11 m with full Newton and saves 15-20 % (README.md).
EXU = [
    dict(n_elements=3, h=1e-2, modified_newton=False, abs_tol=1e-6, rel_tol=1e-6),
    dict(n_elements=4, h=1e-2, modified_newton=False, abs_tol=1e-6, rel_tol=1e-6),
    dict(n_elements=8, h=1e-2, modified_newton=False, abs_tol=1e-6, rel_tol=1e-6),
]


def search_grids():
    """The wider grids of `--search` (several minutes)."""
    ours = []
    for el in (1, 2, 4, 8, 16):
        for modes in (2, 4, 8):
            ours.append(dict(route="a", segments=1, elements=el, modes=modes, method="rk4", step=1e-2))
        ours.append(dict(route="a", segments=1, elements=el, modes=4, method="dopri5", rtol=1e-6))
    ours.append(dict(route="a", segments=1, elements=16, modes=8, method="dopri5", rtol=1e-8, best=True))
    for seg in (2, 3, 4):
        for per in (1, 2):
            for modes in (2, 4):
                for h in (1e-2, 5e-3, 2.5e-3):
                    ours.append(dict(route="b", segments=seg, elements=seg * per, modes=modes,
                                     method="rk4", step=h))
                ours.append(dict(route="b", segments=seg, elements=seg * per, modes=modes,
                                 method="dopri5", rtol=1e-4))
                ours.append(dict(route="b", segments=seg, elements=seg * per, modes=modes,
                                 method="implicit", rtol=1e-3))
    ours.append(dict(route="b", segments=8, elements=8, modes=2, method="implicit", rtol=1e-3,
                     best=True))
    exu = []
    for n in (2, 3, 4, 6, 8, 16):
        for h in (1e-2, 5e-3):
            for mn in (False, True):
                exu.append(dict(n_elements=n, h=h, modified_newton=mn, abs_tol=1e-6, rel_tol=1e-6))
    exu.append(dict(n_elements=8, h=1e-2, modified_newton=False))       # peer default tolerance
    exu.append(dict(n_elements=8, h=2.5e-3, modified_newton=True))      # peer's 1e-4 pick
    return ours, exu


# ---------------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------------

def _clock(fn):
    """Run fn() once; return (its value, wall [s], process CPU [s])."""
    gc.collect()
    c0 = time.process_time()
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0, time.process_time() - c0


@dataclass
class Case:
    """One timed configuration.  `timed` is the time that enters the ratios: flexmbs'
    integration loop (Result.stats["wall_time"]) or exudyn's SolveDynamic; `total` is the
    whole call (flexmbs: simulate(), including model compilation and output sampling)."""

    code: str                       # "flexmbs" | "exudyn"
    name: str
    settings: dict
    run: object = None              # () -> (timed [s] or None, total [s], cpu [s])
    warm: object = None             # () -> dict of results of the warm-up call
    info: dict = field(default_factory=dict)
    timed: list = field(default_factory=list)
    total: list = field(default_factory=list)
    cpu: list = field(default_factory=list)
    failed: str | None = None

    def best(self, key="timed"):
        v = getattr(self, key)
        return min(v) if v else None

    def summary(self) -> dict:
        out = {"code": self.code, "name": self.name, "settings": self.settings, **self.info}
        if self.failed:
            out["failed"] = self.failed
            return out
        k = int(np.argmin(self.timed)) if self.timed else None
        out.update({"time_s": self.best(), "total_s": self.best("total"),
                    "times_s": self.timed, "totals_s": self.total, "cpu_s": self.cpu})
        if k is not None:
            # wall well above CPU in the best round: it was preempted by other load
            out["preempted"] = bool(self.total[k] > 1.1 * self.cpu[k] + 1e-3)
        return out


def _dominated(c: Case, cases: list[Case]) -> bool:
    """Some other case of the same code and route was at least as accurate and took less than
    half the time in the warm-up run: c cannot be the cheapest at any accuracy level."""
    e, w = c.info.get("err_max"), c.info.get("warmup_s")
    if e is None or c.settings.get("best"):
        return False
    return any(d is not c and not d.failed and d.code == c.code
               and d.settings.get("route") == c.settings.get("route")
               and d.info.get("err_max") is not None and d.info["err_max"] <= e
               and d.info["warmup_s"] < 0.5 * w for d in cases)


def run_rounds(cases: list[Case], repeats: int, verbose: bool = True, prune: bool = False) -> None:
    """Warm every case up once, then `repeats` interleaved rounds over all cases (with
    `prune`, only over the cases that are not clearly dominated after the warm-up)."""
    for c in cases:
        try:
            t0 = time.perf_counter()
            c.info.update(c.warm())
            c.info["warmup_s"] = time.perf_counter() - t0
        except Exception as err:  # a setting that diverges or fails is a result, not a crash
            c.failed = f"{type(err).__name__}: {err}"
        if verbose:
            err = c.info.get("err_max")
            print(f"  warm-up {c.code:7s} {c.name:52s} "
                  + (f"FAILED ({c.failed[:70]})" if c.failed else
                     f"{c.info['warmup_s']:7.3f} s" + (f"  err {err:.3e} m" if err is not None else "")),
                  flush=True)
    live = [c for c in cases if not c.failed]
    if prune:
        drop = [c for c in live if _dominated(c, live)]
        for c in drop:
            c.info["not_timed"] = "dominated in the warm-up run"
        live = [c for c in live if c not in drop]
        if verbose:
            print(f"  timing {len(live)} of {len(cases)} cases (the others failed or were "
                  "dominated: as accurate and 2x faster elsewhere)", flush=True)
    for r in range(repeats):
        for c in live:
            timed, total, cpu = c.run()
            c.timed.append(timed if timed is not None else total)
            c.total.append(total)
            c.cpu.append(cpu)
        if verbose:
            print(f"  round {r + 1}/{repeats} done", flush=True)


# ---------------------------------------------------------------------------------------------
# exudyn availability
# ---------------------------------------------------------------------------------------------

def exudyn_status() -> tuple[bool, str]:
    try:
        info = pe.exudyn_info()
    except ImportError as err:
        return False, str(err) or "exudyn is not installed"
    return True, f"exudyn {info['exudyn_version']} ({info['compiled_module']})"


# ---------------------------------------------------------------------------------------------
# 1. double pendulum
# ---------------------------------------------------------------------------------------------

def pendulum_cases(have_exu: bool) -> list[Case]:
    model = flexmbs.load_model("double_pendulum")
    ours = Case("flexmbs", "double pendulum, RK4", {"model": "models/double_pendulum.yaml",
                "method": "rk4", "step": H_PEND, "output_step": OUTPUT_DT, "t_end": T_END_PEND})

    def sim():
        return flexmbs.simulate(model, T_END_PEND, method="rk4", step=H_PEND, output_step=OUTPUT_DT)

    def ours_run():
        r, wall, cpu = _clock(sim)
        return r.stats["wall_time"], wall, cpu

    def ours_warm():
        r, wall, _ = _clock(sim)
        ours.result = r
        return {"first_call_s": wall, "steps": r.stats["steps"],
                "theta1": float(r["shoulder.q"][-1]),
                "theta2": float(r["elbow.q"][-1])}

    ours.run, ours.warm = ours_run, ours_warm
    cases = [ours]
    if have_exu:
        exu = Case("exudyn", "double pendulum, RK44", {"model": "ObjectKinematicTree",
                   "solver": "RK44", "h": H_PEND, "sensor_period": OUTPUT_DT, "t_end": T_END_PEND})
        solve, collect = pe.double_pendulum_case(T_END_PEND, H_PEND, output_dt=OUTPUT_DT)

        def exu_run():
            _, wall, cpu = _clock(solve)
            return wall, wall, cpu

        def exu_warm():
            solve()
            d = collect()
            exu.result = d
            return {"theta1": d["theta1"], "theta2": d["theta2"],
                    "steps": d["solver_info"]["steps_taken"]}

        exu.run, exu.warm = exu_run, exu_warm
        cases.append(exu)
    return cases


def pendulum_check(cases: list[Case]) -> dict:
    """Both codes against the Lagrange reference (scipy DOP853, rtol 1e-12) and each other."""
    ours = next(c for c in cases if c.code == "flexmbs")
    r = ours.result
    t = r.time
    th = np.column_stack([r["shoulder.q"], r["elbow.q"]])
    ref = pe.double_pendulum_reference(t)
    early = t <= 2.0 + 1e-9
    out = {"ours_vs_reference_max_0_2s": float(np.abs(th - ref)[early].max()),
           "ours_vs_reference_at_10s": np.abs(th - ref)[-1].tolist()}
    exu = next((c for c in cases if c.code == "exudyn" and not c.failed), None)
    if exu is not None:
        te, qe = exu.result["t_out"], exu.result["theta_out"]
        assert te.size == t.size and np.abs(te - t).max() < 1e-9
        out["exudyn_vs_reference_max_0_2s"] = float(np.abs(qe - ref)[early].max())
        out["ours_vs_exudyn_max_0_10s"] = float(np.abs(qe - th).max())
    return out


# ---------------------------------------------------------------------------------------------
# 2. spin-up beam
# ---------------------------------------------------------------------------------------------

def load_reference(have_exu: bool, refresh: bool) -> dict | None:
    """exudyn's converged tip history; from the JSON cache, else computed (and cached)."""
    if REFERENCE_FILE.exists() and not refresh:
        d = json.loads(REFERENCE_FILE.read_text())
        d["tip"] = np.asarray(d["tip"])
        return d
    if not have_exu:
        return None
    print(f"computing the reference (exudyn, 32 elements, h = 1e-3) -> {REFERENCE_FILE.name}",
          flush=True)
    t0 = time.perf_counter()
    t, tip = pe.spin_up_reference(omega_s=OMEGA_S, t_end=T_END_SPIN)
    d = {"description": "spin-up beam Ws = 6 rad/s: in-plane tip deflection in the hub frame "
                        "[m], exudyn ANCFCable2D, converged run of benchmarks/peer_exudyn.py "
                        "(spin_up_reference)",
         "omega_s": OMEGA_S, "t_end": T_END_SPIN, "output_dt": OUTPUT_DT,
         "n_elements": max(pe.SPIN_ELEMENTS), "h": min(pe.SPIN_STEPS),
         "newton": "modified, residualMode 1, tolerances 1e-10",
         "exudyn_version": pe.exudyn_info()["exudyn_version"],
         "error_vs_64_elements_h_5e-4": 6.7e-6,
         "t": f"linspace(0, {T_END_SPIN}, {t.size})",
         "tip": [float(f"{v:.12e}") for v in tip]}
    REFERENCE_FILE.write_text(json.dumps(d, indent=0) + "\n")
    print(f"  done in {time.perf_counter() - t0:.1f} s", flush=True)
    d["tip"] = np.asarray(d["tip"])
    return d


def _ours_name(s: dict) -> str:
    how = f"h={s['step']:g}" if s["method"] == "rk4" else f"rtol={s['rtol']:g}"
    return (f"({s['route']}) seg={s['segments']} el={s['elements']} modes={s['modes']} "
            f"{s['method']} {how}")


def _exu_name(s: dict) -> str:
    tol = s.get("abs_tol", pe.SPIN_NEWTON_ABS_TOL)
    return (f"ANCF el={s['n_elements']} GA h={s['h']:g} "
            f"{'modified' if s['modified_newton'] else 'full'} Newton tol={tol:g}")


def ours_spin_case(s: dict, ref_tip) -> Case:
    model = flexmbs.load_model("spin_up_beam")
    beam = model.bodies[0]
    model.bodies[0] = replace(beam, segments=s["segments"], elements=s["elements"], modes=s["modes"])
    kw = dict(method=s["method"], output_step=OUTPUT_DT, max_step=OUTPUT_DT)
    if s["method"] == "rk4":
        kw["step"] = s["step"]
    else:
        kw["rtol"] = s["rtol"]
    case = Case("flexmbs", _ours_name(s), dict(s))

    def sim():
        return flexmbs.simulate(model, T_END_SPIN, **kw)

    def tip_of(r):
        if s["segments"] == 1:   # the body frame turns with the hub: already the hub frame
            return r["beam.tip_deflection[2]"]
        th = r["hub.q"]          # chain: tip sensor (world) rotated into the hub frame
        return -np.sin(th) * r["tip.r[1]"] + np.cos(th) * r["tip.r[2]"]

    def warm():
        r = sim()
        tip = tip_of(r)
        out = {"steps": r.stats["steps"], "rejected": r.stats["rejected"],
               "n_states": int(r.states.shape[1]), "peak_tip": float(tip.min()),
               "tip_end": float(tip[-1])}
        if ref_tip is not None:
            assert tip.size == ref_tip.size
            out["err_max"] = float(np.abs(tip - ref_tip).max())
        return out

    def run():
        r, wall, cpu = _clock(sim)
        return r.stats["wall_time"], wall, cpu

    case.run, case.warm = run, warm
    return case


def exu_spin_case(s: dict, ref_tip) -> Case:
    solve, collect = pe.spin_up_case(omega_s=OMEGA_S, t_end=T_END_SPIN, output_dt=OUTPUT_DT, **s)
    case = Case("exudyn", _exu_name(s), dict(s))

    def warm():
        solve()
        d = collect()
        out = {"newton_it_per_step": d["newton_iterations"] / d["n_steps"],
               "n_dof": d["n_dof"], "peak_tip": d["min_tip"], "tip_end": d["tip_end"]}
        if ref_tip is not None:
            out["err_max"] = float(np.abs(d["tip"] - ref_tip).max())
        return out

    def run():
        _, wall, cpu = _clock(solve)
        return wall, wall, cpu

    case.run, case.warm = run, warm
    return case


def pick(cases: list[Case], tol: float) -> Case | None:
    ok = [c for c in cases if not c.failed and c.info.get("err_max") is not None
          and c.info["err_max"] <= tol and c.timed]
    return min(ok, key=lambda c: c.best()) if ok else None


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------

def _fmt(x, nd=3):
    return "-" if x is None else f"{x:.{nd}f}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="3 rounds instead of 5, and skip the most-accurate settings")
    p.add_argument("--search", action="store_true",
                   help="time the wide grids of settings the defaults were chosen from (~15 min)")
    p.add_argument("--repeats", type=int, help="timed rounds (default 5, --quick 3)")
    p.add_argument("--no-exudyn", action="store_true", help="run flexmbs only")
    p.add_argument("--skip-pendulum", action="store_true")
    p.add_argument("--skip-spinup", action="store_true")
    p.add_argument("--refresh-reference", action="store_true",
                   help=f"recompute {REFERENCE_FILE.name} with exudyn")
    p.add_argument("--json", metavar="PATH", help="also write the results to PATH")
    a = p.parse_args(argv)
    repeats = a.repeats or (3 if a.quick else 5)

    have_exu, exu_msg = (False, "disabled by --no-exudyn") if a.no_exudyn else exudyn_status()
    if not have_exu:
        print(f"exudyn is missing ({exu_msg}): timing flexmbs only. "
              "Install it with: pip install -e '.[bench]'  (needs exudyn >= 1.13)")
    res = {
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()},
        "versions": {"flexmbs": getattr(flexmbs, "__version__", "?"),
                     "numpy": np.__version__,
                     "exudyn": exu_msg if have_exu else None},
        "repeats": repeats, "timing": "best of the interleaved rounds, after one warm-up run",
    }
    print(f"flexmbs {res['versions']['flexmbs']}, {exu_msg if have_exu else 'no exudyn'}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; best of {repeats}")
    rows = []

    # ------------------------------------------------------------------ double pendulum
    if not a.skip_pendulum:
        print(f"\n=== 1. double pendulum: RK4 h = {H_PEND:g}, {T_END_PEND:g} s, "
              f"output every {OUTPUT_DT:g} s ===", flush=True)
        cases = pendulum_cases(have_exu)
        run_rounds(cases, repeats)
        check = pendulum_check(cases)
        ours = cases[0]
        exu = cases[1] if len(cases) > 1 and not cases[1].failed else None
        ratio = ours.best() / exu.best() if exu else None
        rows.append({"benchmark": "double pendulum, RK4 h=1e-3, 10 s",
                     "ours_s": ours.best(), "ours_total_s": ours.best("total"),
                     "exudyn_s": exu.best() if exu else None,
                     "ratio": ratio, "ratio_is": "ours/exudyn", "goal": "<= 1"})
        res["double_pendulum"] = {"cases": [c.summary() for c in cases], "check": check,
                                  "ratio_ours_over_exudyn": ratio}
        print(f"  theta(10 s): ours {ours.info['theta1']:.10f} {ours.info['theta2']:.10f}"
              + (f", exudyn {exu.info['theta1']:.10f} {exu.info['theta2']:.10f}" if exu else ""))
        print("  check: " + ", ".join(f"{k} {np.max(v):.1e}" for k, v in check.items()))

    # ------------------------------------------------------------------ spin-up
    if not a.skip_spinup:
        print(f"\n=== 2. spin-up beam Ws = {OMEGA_S:g}: equal accuracy "
              f"(max-norm tip error vs exudyn's converged run) ===", flush=True)
        ref = load_reference(have_exu, a.refresh_reference)
        if ref is None:
            print("  no reference (benchmarks/spin_up_reference_ws6.json missing and no exudyn):"
                  " errors unknown, timing the default settings only")
        ref_tip = None if ref is None else ref["tip"]
        ours_set, exu_set = search_grids() if a.search else (OURS, EXU)
        if a.quick:
            ours_set = [s for s in ours_set if not s.get("best")]
        cases = [ours_spin_case(s, ref_tip) for s in ours_set]
        if have_exu:
            cases += [exu_spin_case(s, ref_tip) for s in exu_set]
        run_rounds(cases, repeats, prune=a.search)
        ours_c = [c for c in cases if c.code == "flexmbs"]
        exu_c = [c for c in cases if c.code == "exudyn"]
        spin = {"reference": None if ref is None else {k: v for k, v in ref.items() if k != "tip"},
                "cases": [c.summary() for c in cases], "levels": {}, "best_accuracy": {}}
        route_name = {"a": "(a) floating frame", "b": "(b) corotational chain"}
        for route in ("a", "b"):
            rc = [c for c in ours_c if c.settings["route"] == route and not c.failed
                  and c.info.get("err_max") is not None]
            if rc:
                b = min(rc, key=lambda c: c.info["err_max"])
                spin["best_accuracy"][route] = {"err_max": b.info["err_max"], "case": b.name,
                                                "time_s": b.best()}
        if ref is not None:
            for tol in LEVELS:
                e = pick(exu_c, tol)
                for route in ("a", "b"):
                    o = pick([c for c in ours_c if c.settings["route"] == route], tol)
                    ratio = e.best() / o.best() if (e and o) else None
                    row = {"benchmark": f"spin-up Ws=6, err <= {tol:g} m, {route_name[route]}",
                           "ours_s": o.best() if o else None,
                           "ours_total_s": o.best("total") if o else None,
                           "exudyn_s": e.best() if e else None,
                           "ratio": ratio, "ratio_is": "exudyn/ours", "goal": ">= 5",
                           "ours_case": o.name if o else None,
                           "ours_err": o.info["err_max"] if o else None,
                           "exudyn_case": e.name if e else None,
                           "exudyn_err": e.info["err_max"] if e else None}
                    if o is None:
                        best = spin["best_accuracy"].get(route)
                        row["note"] = ("not reached" + (f" (best {best['err_max']:.2e} m of the "
                                                        "settings run)" if best else ""))
                    rows.append(row)
                    spin["levels"][f"{tol:g}/{route}"] = row
        else:  # no reference: times only, accuracy unknown
            for c in ours_c:
                if c.timed:
                    rows.append({"benchmark": f"spin-up {c.name} (error unknown)",
                                 "ours_s": c.best(), "ours_total_s": c.best("total"),
                                 "exudyn_s": None, "ratio": None, "note": "no reference"})
        res["spin_up"] = spin

    # ------------------------------------------------------------------ table
    res["table"] = rows
    res["machine"]["loadavg_end"] = os.getloadavg()
    print("\n" + "=" * 100)
    print(f"{'benchmark':52s} {'ours [s]':>9s} {'(total)':>8s} {'exudyn [s]':>11s}  ratio")
    for r in rows:
        ratio = (f"{r['ratio']:.2f} ({r['ratio_is']}, goal {r['goal']})" if r["ratio"] is not None
                 else r.get("note", "exudyn missing" if not have_exu else "-"))
        print(f"{r['benchmark']:52s} {_fmt(r['ours_s']):>9s} {_fmt(r['ours_total_s']):>8s} "
              f"{_fmt(r['exudyn_s']):>11s}  {ratio}")
    if any("ours_case" in r for r in rows):
        print("\nsettings at each accuracy level (achieved max-norm error):")
        for r in rows:
            if "ours_case" in r:
                print(f"  {r['benchmark']}\n    ours:   {r['ours_case'] or '-'}"
                      + (f"  [{r['ours_err']:.2e} m]" if r["ours_err"] is not None else "")
                      + f"\n    exudyn: {r['exudyn_case'] or '-'}"
                      + (f"  [{r['exudyn_err']:.2e} m]" if r["exudyn_err"] is not None else ""))
        for route, b in res["spin_up"]["best_accuracy"].items():
            print(f"  best accuracy of route ({route}) among the settings run: {b['err_max']:.2e} m"
                  f" ({b['case']}, {b['time_s']:.3f} s)")
    if have_exu and "spin_up" in res and res["spin_up"]["reference"] is not None:
        print("  exudyn is measured against its own converged run (error 0 by construction; "
              "that run is within 6.7e-6 m of 64 elements, h = 5e-4)")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f} "
          "(shared machine: timings vary by +-20-30 % between runs)")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1, default=_json_default) + "\n")
        print(f"wrote {a.json}")
    return 0


def _json_default(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, float) and math.isnan(o):
        return None
    raise TypeError(type(o))


if __name__ == "__main__":
    sys.exit(main())
