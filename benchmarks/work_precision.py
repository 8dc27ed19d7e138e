"""Work-precision study of the integrators: error against a tight reference versus CPU time,
for every method over a range of tolerances (dopri5, implicit, radau) or steps (rk4).

Cases (short runs, so the study takes minutes on a busy 2-core machine):
- huang: Huang's two-link arm (huang_two_link, 4 modes), 1 s free release; error: largest
  joint-angle deviation [rad] over the 5 ms samples; reference: RK4 at h = 20 us.
- spin_up: the spin-up beam (spin_up_beam, one floating frame: 4 modes and its free tip's
  interface modes), 4 s of the spin-up, sampled (and max_step) every 50 ms so that the step is
  the method's choice; error: tip deflection [m]; reference: dopri5 at rtol 1e-11 (RK4 at
  h = 0.5 ms, the former reference, agrees with it to 7e-9 m).
- spin_up_seg4: the same beam as 4 corotational segments (segments: 4), 1 s; error: the tip
  sensor's position [m]; reference: dopri5 at rtol 1e-11.
- crank_rocker: He's crank-rocker with a flexible coupler closing the loop (he_crank_rocker),
  crank torque 1 N m from rest for 0.5 s; error: crank and rocker angles [rad]; reference:
  dopri5 at rtol 1e-11.
- crank_rocker_static: the same with the coupler's static modes (static_modes: true: the tip
  shear and moment shapes, stiff kHz coordinates), 0.2 s; reference: implicit at rtol 1e-9.
- spin_up_plain: the spin-up beam written without flags and without a solver section: every
  setting at its default (the acceleration shapes in the basis, radau at rtol 1e-5, max_step
  10 ms), 4 s; error: tip deflection [m]; reference: RK4 at h = 0.5 ms (hω = 0.38 for the
  121 Hz axial shape).
- three_link_arm: the three-link arm as shipped (a flexible forearm whose tip carries the wrist
  on its interface modes, kHz and undamped; every solver setting at its default), 1 s of free
  fall from rest; error: the three joint angles [rad]; reference: dopri5 at rtol 1e-10.
- slider_crank_flex: a slider-crank with an aluminium rod written from the docs
  (benchmarks/models.flexible_slider_crank: interface modes, 2 % damping, every solver setting
  at its default), 0.5 N m on the crank from rest for 1 s (it turns about 64 rad); error: the
  crank and rod angles [rad]; reference: dopri5 at rtol 1e-10.
- loops_chain: 4 coupled rigid four-bars (benchmarks/models.four_bar_chain(4): 9 bodies, 4 cut
  joints, the recursive route with loops) falling from rest under gravity for 2 s, max_step
  50 ms (its file's 10 ms bounds every tolerance's step); error: the crank's and the last
  rocker's angles [rad]; reference: dopri5 at rtol 1e-11.

Every case also runs once as its model (file) is written, its own method and tolerance: the
row marked "model" in the table and the star in the plot (the default a user gets).

CPU time is time.process_time() of the whole simulate() call (output evaluation included), the
best of `--repeat` runs after one warm-up run that compiles the kernels. Prints a table and,
with --json, one JSON object per line; --plot writes docs/img/work_precision_<case>.png.

    python benchmarks/work_precision.py [--cases huang,spin_up] [--repeat 2] [--plot] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

import flexmbs
from flexmbs.model import Solver, model_from_dict
from flexmbs.simulate import simulate
from flexmbs.solvers.stepper import StabilityWarning

import models  # benchmarks/models.py, beside this script

SWEEPS = {
    "dopri5": [("rtol", r) for r in (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)],
    "implicit": [("rtol", r) for r in (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)],
    "radau": [("rtol", r) for r in (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)],
}


def _changed(name: str, body: str, **changes) -> flexmbs.Model:
    """A shipped model with fields of one body changed (e.g. segments, static_modes)."""
    model = flexmbs.load_model(name)
    for key, value in changes.items():
        setattr(model.body(body), key, value)
    return model


def cases() -> dict:
    """name -> (model, t_end [s], inputs, signals compared, reference settings, rk4 steps [s],
    settings common to every run)."""
    coarse = dict(output_step=0.05, max_step=0.05)
    return {
        "huang": (flexmbs.load_model("huang_two_link"), 1.0, None, ["shoulder.q", "elbow.q"],
                  dict(method="rk4", step=2e-5), [4e-4, 1e-3, 2e-3], {}),
        "spin_up": (flexmbs.load_model("spin_up_beam"), 4.0, None, ["beam.tip_deflection[2]"],
                    dict(method="dopri5", rtol=1e-11), [5e-3, 1e-2, 2.5e-2, 5e-2], coarse),
        "spin_up_seg4": (_changed("spin_up_beam", "beam", segments=4), 1.0, None, ["tip.r[1]", "tip.r[2]"],
                         dict(method="dopri5", rtol=1e-11), [2e-4, 5e-4, 1e-3], {}),
        "crank_rocker": (flexmbs.load_model("he_crank_rocker"), 0.5, {"crank.tau": 1.0},
                         ["crank.q", "rocker.q"], dict(method="dopri5", rtol=1e-11), [1e-4, 2e-4, 5e-4], {}),
        "crank_rocker_static": (_changed("he_crank_rocker", "coupler", static_modes=True), 0.2, {"crank.tau": 1.0},
                                ["crank.q", "rocker.q"], dict(method="implicit", rtol=1e-9), [2e-5, 5e-5], {}),
        "spin_up_plain": (_plain_spin_up(), 4.0, None, ["beam.tip_deflection[2]"], dict(method="rk4", step=5e-4),
                          [5e-3, 1e-2, 2.5e-2], {}),
        "three_link_arm": (flexmbs.load_model("three_link_arm"), 1.0, None, ["shoulder.q", "elbow.q", "wrist.q"],
                           dict(method="dopri5", rtol=1e-10), [5e-5, 1e-4, 2e-4], {}),
        "slider_crank_flex": (model_from_dict(models.flexible_slider_crank()), 1.0, {"crank.tau": 0.5},
                              ["crank.q", "rod_pin.q"], dict(method="dopri5", rtol=1e-10), [2e-5, 5e-5], {}),
        "loops_chain": (model_from_dict(models.four_bar_chain(4)), 2.0, None, ["crank.q", "rocker_3.q"],
                        dict(method="dopri5", rtol=1e-11), [1e-3, 2e-3, 5e-3], dict(max_step=0.05)),
    }


def _plain_spin_up() -> flexmbs.Model:
    """The shipped spin-up beam as a user would write it: no flags, default solver settings."""
    model = _changed("spin_up_beam", "beam", acceleration_modes=flexmbs.model.Body("b").acceleration_modes)
    model.solver = Solver()
    return model


def _as_written(model) -> tuple[str, tuple[str, float]]:
    """The method and its setting (rk4: step, else rtol) of the model's own solver section."""
    own, method = model.solver, model.solver_method()
    return method, (("step", own.step) if method == "rk4" else ("rtol", model.solver_rtol()))


def run(model, t_end, inputs, settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        t0 = time.process_time()
        try:
            r = simulate(model, t_end, inputs=inputs, **settings)
        except flexmbs.SolverError:
            return None, time.process_time() - t0
        return r, time.process_time() - t0


def _sweeps(model, rk4_steps) -> dict:
    """method -> [(setting, value)] of the study, with the model's own setting among them."""
    sweeps = {**SWEEPS, "rk4": [("step", h) for h in rk4_steps]}
    method, (key, value) = _as_written(model)
    if (key, value) not in sweeps[method]:
        sweeps[method] = sorted(sweeps[method] + [(key, value)], key=lambda kv: -kv[1])
    return sweeps


def study(name, model, t_end, inputs, signals, ref_settings, rk4_steps, common, repeat):
    ref, ref_cpu = run(model, t_end, inputs, dict(ref_settings, **common))
    rows = []
    own = _as_written(model)
    for method, sweep in _sweeps(model, rk4_steps).items():
        run(model, t_end, inputs, dict(method=method, **dict([sweep[0]]), **common))   # compile
        for key, value in sweep:
            settings = {"method": method, key: value, **common}
            cpus, r = [], None
            for _ in range(repeat):
                r, cpu = run(model, t_end, inputs, settings)
                cpus.append(cpu)
            row = dict(case=name, method=method, **{key: value}, model_setting=(method, (key, value)) == own,
                       cpu_s=min(cpus))
            if r is None:
                rows.append(dict(row, error=None, failed=True))
                continue
            err = max(float(np.abs(r[s] - ref[s]).max()) for s in signals)
            rows.append(dict(row, error=err, cpu_median_s=float(np.median(cpus)), t_end=t_end,
                             steps_per_s=r.stats["steps"] / t_end, rejected=r.stats["rejected"],
                             jacobians=r.stats["jacobians"], factorizations=r.stats["factorizations"],
                             real_time_factor=t_end / min(cpus)))
    return rows, ref_cpu


def plot(name, rows, unit, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for method, marker in (("rk4", "s"), ("dopri5", "o"), ("implicit", "^"), ("radau", "D")):
        ok = [r for r in rows if r["method"] == method and r.get("error")]
        if not ok:
            continue
        ax.loglog([r["cpu_s"] for r in ok], [r["error"] for r in ok], marker=marker, label=method)
        for r in ok:
            if r["model_setting"]:
                ax.plot(r["cpu_s"], r["error"], marker="*", markersize=16, color="k", fillstyle="none",
                        linestyle="none", label="the model's own setting")
            label = f"{r['rtol']:.0e}" if "rtol" in r else f"{r['step'] * 1e3:g} ms"
            ax.annotate(label, (r["cpu_s"], r["error"]), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("CPU time [s]")
    ax.set_ylabel(f"max error [{unit}]")
    ax.set_title(f"work-precision: {name}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="huang,spin_up,spin_up_plain,spin_up_seg4,crank_rocker,crank_rocker_static,"
                                         "three_link_arm,slider_crank_flex,loops_chain")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    units = {"huang": "rad", "spin_up": "m", "spin_up_seg4": "m", "crank_rocker": "rad", "crank_rocker_static": "rad",
             "spin_up_plain": "m", "three_link_arm": "rad", "slider_crank_flex": "rad",
             "loops_chain": "rad"}
    all_cases = cases()
    img = Path(__file__).resolve().parent.parent / "docs" / "img"
    for name in args.cases.split(","):
        rows, ref_cpu = study(name, *all_cases[name], args.repeat)
        if args.json:
            for r in rows:
                print(json.dumps(r), flush=True)
        else:
            print(f"\n{name} (reference {ref_cpu:.1f} s CPU)")
            print("* the model's own setting")
            print(f"{'method':9} {'setting':>9} {'error':>9} {'CPU s':>8} {'steps/s':>8} {'rej':>5} {'jac':>5} {'LU':>6}")
            for r in rows:
                setting = (f"{r['rtol']:.0e}" if "rtol" in r else f"{r['step'] * 1e3:g}ms") + \
                    ("*" if r["model_setting"] else "")
                if r.get("failed"):
                    print(f"{r['method']:9} {setting:>9} {'failed':>9} {r['cpu_s']:8.3f}")
                    continue
                print(f"{r['method']:9} {setting:>9} {r['error']:9.2e} {r['cpu_s']:8.3f} {r['steps_per_s']:8.0f} "
                      f"{r['rejected']:5d} {r['jacobians']:5d} {r['factorizations']:6d}", flush=True)
        if args.plot:
            plot(name, rows, units[name], img / f"work_precision_{name}.png")


if __name__ == "__main__":
    main()
