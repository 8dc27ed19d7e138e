"""Robustness of the servo demo's gains against +-30 % payload and link-2 stiffness, and robust
tuning, on a Dask cluster (flexmbs.fmi.sweep).

1. Sweep: the demo's gains (examples/designs.py) over a Latin hypercube of the payload (tip mass
   of link 2, nominal 0.5 kg) and link 2's Young's modulus (nominal 69 GPa), each 0.7 to 1.3
   times nominal; the worst case by the design objective (flexmbs.fmi.servo.objective: tracking
   error, residual tip vibration, voltage chatter).
2. Robust tuning: kp and kd of both joints by differential evolution against an uncertainty set
   (the 4 corners of the box plus a Latin-hypercube sample), minimising the worst-case objective
   over the set; the demo's gains are in the first generation; the best gains are re-run in
   fresh FMU instances.
3. The tuned gains over the same sweep: their worst case against the demo gains' worst case.
4. --throughput N: runs per minute of the first N runs on 1 and on 2 workers (after a warm-up
   run on each worker), and the speed-up.

    python build_fmu.py --all -o out/fmus      (or let this script build the 4 FMUs it needs)
    python examples/robustness.py [--fmus out/fmus] [--out out/robustness] [--samples 200] [--workers 2]
                                  [--throughput 40] [--scheduler tcp://host:8786]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _figures import finish  # noqa: E402

from designs import huang_servo  # noqa: E402
from flexmbs.fmi.sweep import Engine, Study, parameter, parameter_sets, simulate, sweep  # noqa: E402
from flexmbs.fmi.sweep.plots import metric_map  # noqa: E402
from flexmbs.fmi.sweep.tune import Gain, tune  # noqa: E402

UNCERTAIN = {"arm.payload": {"low": 0.7, "high": 1.3, "relative": True},
             "arm.link2_E": {"low": 0.7, "high": 1.3, "relative": True}}
GAINS = ("c_shoulder.kp", "c_shoulder.kd", "c_elbow.kp", "c_elbow.kd")


def throughput(study: Study, sets, out: Path, workers: int) -> float:
    """Runs per minute of `sets` on a new LocalCluster of `workers`, each worker warmed up by one
    run first (process start, numba's cached kernels, FMU instantiation not counted)."""
    with Engine(workers=workers) as engine:
        digest = study.digest()
        warm = [engine.client.submit(simulate, study, sets[0], None, digest, pure=False, workers=[w])
                for w in engine.client.scheduler_info()["workers"]]
        engine.client.gather(warm)
        start = time.perf_counter()
        df = sweep(engine, study, sets, out / f"throughput_{workers}", progress=False)
        wall = time.perf_counter() - start
    assert (df["status"] == "ok").all(), df["message"].tolist()
    return 60.0 * len(sets) / wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fmus", default="out/fmus", type=Path, help="folder of the FMUs (missing ones are built)")
    ap.add_argument("--out", default="out/robustness", type=Path, help="folder for the tables and plots")
    ap.add_argument("--samples", type=int, default=200, help="runs of the robustness sweep")
    ap.add_argument("--tune-samples", type=int, default=2, help="Latin-hypercube scenarios added to the 4 corners")
    ap.add_argument("--popsize", type=int, default=3, help="differential evolution: candidates per gain")
    ap.add_argument("--maxiter", type=int, default=3, help="differential evolution: generations after the first")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of the local cluster")
    ap.add_argument("--scheduler", default=None, help="address of an existing Dask scheduler")
    ap.add_argument("--throughput", type=int, default=0, help="also measure runs/min of this many runs on 1 and 2 workers")
    args = ap.parse_args(argv)

    design = huang_servo()
    study = Study(design, args.fmus.resolve())
    study.build_needed()
    nominal = study.nominal()
    params = [parameter(n, s) for n, s in UNCERTAIN.items()]
    sets = parameter_sets("lhs", params, nominal, samples=args.samples, seed=16)
    corners = [parameter(n, {"values": [0.7, 1.3], "relative": True}) for n in UNCERTAIN]
    scenarios = (parameter_sets("grid", corners, nominal)
                 + parameter_sets("lhs", params, nominal, samples=args.tune_samples, seed=7))
    start = {g: nominal[g] for g in GAINS}

    if args.throughput:
        rates = {w: throughput(study, sets[:args.throughput], args.out, w) for w in (1, 2)}
        print(f"throughput over {args.throughput} runs: 1 worker {rates[1]:.1f} runs/min, 2 workers "
              f"{rates[2]:.1f} runs/min, speed-up {rates[2] / rates[1]:.2f}")

    with Engine(args.scheduler, args.workers) as engine:
        new: list[str] = []
        t0 = time.perf_counter()
        before = sweep(engine, study, sets, args.out / "demo_gains", on_row=lambda row: new.append(row["key"]))
        wall = time.perf_counter() - t0
        print(f"demo gains: {len(sets)} runs, {len(new)} run now in {wall:.0f} s ({60 * len(new) / wall:.1f} runs/min "
              f"on {len(engine.client.scheduler_info()['workers'])} workers), the others from an earlier run's table")
        worst_before = before.loc[before["objective"].idxmax()]
        print(f"  worst case: objective {worst_before['objective']:.5g} at payload {worst_before['arm.payload']:.3f} kg, "
              f"E {worst_before['arm.link2_E'] / 1e9:.1f} GPa; failed runs: {int((before['status'] != 'ok').sum())}")

        gains = [Gain(g, nominal[g] / 3, nominal[g] * 3) for g in GAINS]
        res = tune(engine, study, gains, scenarios, args.out / "tuning", start=start, measure="worst",
                   popsize=args.popsize, maxiter=args.maxiter, seed=3)
        print(f"robust tuning ({res.evaluations} candidates x {len(scenarios)} scenarios): worst-case objective "
              f"{res.start_value:.5g} (demo gains) -> {res.value:.5g}; fresh instances {res.check_value:.5g}")
        print("  tuned gains: " + ", ".join(f"{k} {v:.4g}" for k, v in res.gains.items()))

        tuned_sets = [{**res.gains, **p} for p in sets]
        after = sweep(engine, study, tuned_sets, args.out / "tuned_gains")
        worst_after = after.loc[after["objective"].idxmax()]
        print(f"tuned gains over the same {len(sets)} runs: worst objective {worst_after['objective']:.5g} "
              f"(demo gains {worst_before['objective']:.5g}); failed runs: {int((after['status'] != 'ok').sum())}")
        for m in ("objective", "peak_tip_deflection", "rms_error.shoulder", "rms_error.elbow", "energy"):
            print(f"  {m:20s} worst: demo {before[m].max():.4g}, tuned {after[m].max():.4g}; "
                  f"median: demo {before[m].median():.4g}, tuned {after[m].median():.4g}")

        case = {n: float(worst_before[n]) for n in UNCERTAIN}
        digest = study.digest()
        runs = {"demo gains": engine.client.submit(simulate, study, case, None, digest, pure=False),
                "robust-tuned gains": engine.client.submit(simulate, study, {**res.gains, **case}, None, digest,
                                                           pure=False)}
        runs = {k: f.result() for k, f in runs.items()}

    metric_map(before, "arm.payload", "arm.link2_E", "objective", args.out / "map_objective_demo_gains.png")
    fig, ax = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    for name, r in runs.items():
        t = r["time"]
        for j, style in (("shoulder", "-"), ("elbow", "--")):
            ax[0].plot(t, np.degrees(r[f"arm.{j}.q"] - r[f"r_{j}.q_ref"]), style, label=f"{name}, {j}")
        ax[1].plot(t, 1e3 * r["arm.link2.tip_deflection[2]"], label=name)
        ax[2].plot(t, r["c_elbow.voltage"], label=name)
    ax[0].set_ylabel("tracking error [deg]")
    ax[1].set_ylabel("tip deflection, link 2 y [mm]")
    ax[2].set_ylabel("elbow voltage [V]")
    finish(fig, ax, ax[2:], f"Worst case of the demo gains (payload {case['arm.payload']:.3f} kg, "
           f"E {case['arm.link2_E'] / 1e9:.1f} GPa): demo vs robust-tuned gains", args.out / "robustness_worst.png")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    bins = np.linspace(0, max(before["objective"].max(), after["objective"].max()), 40)
    ax.hist(before["objective"], bins=bins, alpha=0.6, label="demo gains")
    ax.hist(after["objective"], bins=bins, alpha=0.6, label="robust-tuned gains")
    ax.set_xlabel("objective [rad^2 s]")
    ax.set_ylabel("runs")
    ax.legend()
    ax.set_title(f"Objective over {len(sets)} runs, payload and stiffness +-30 %")
    fig.tight_layout()
    fig.savefig(args.out / "robustness_distribution.png", dpi=120)
    plt.close(fig)
    print(f"plots: {args.out / 'robustness_worst.png'}, {args.out / 'robustness_distribution.png'}, "
          f"{args.out / 'map_objective_demo_gains.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
