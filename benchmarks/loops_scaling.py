"""Cost of closed loops against their number, in both formulations, on a coupled chain of
four-bars: loop 1 is the four-bar of models/four_bar.yaml; the rocker of loop k carries the
input lever of loop k + 1 (a crank of the same length on the rocker's pivot), whose coupler and
rocker repeat loop 1 0.559 m further along x. N loops: 2N + 1 bodies, N cut joints, 1 degree
of freedom; every loop is planar, so 3 rows per cut are redundant.

Per N the cost of one right-hand side (accelerations from the state):
- joint coordinates: dense mass matrix and constraint Schur complement (kernels/dynamics.py),
- natural coordinates: the topology-ordered block factorisation (flexmbs/natural/kernels.py),
and of one second of motion with the joint-coordinate dopri5 (rtol 1e-8), with the growth
exponent p of cost ~ N^p fitted over the upper half of the table, and the ratio of the two.

    python benchmarks/loops_scaling.py [--max-n 64]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import yaml

import flexmbs
from flexmbs.model import model_from_dict
from flexmbs.natural import compile_natural
from flexmbs.natural.kernels import accelerations, make_work
from flexmbs.natural.run import initial_state
from flexmbs.solvers.common import f_eval
from flexmbs.solvers.stepper import Settings, Stepper
from flexmbs.system import compile_model
from flexmbs.model.catalog import models_dir

FOUR_BAR = models_dir() / "four_bar.yaml"
ROCKER_ANGLE = 1.6            # approximate rocker angle of loop 1 at the start [rad]


def chain(n: int) -> dict:
    """The model dict of n coupled four-bars."""
    base = yaml.safe_load(FOUR_BAR.read_text())
    bodies = {b["name"]: b for b in base["bodies"]}
    joints = {j["name"]: j for j in base["joints"]}
    cut = base["loops"]["cuts"][0]
    ground = base["ground"]["markers"][0]["position"]
    pitch = np.asarray(base["ground"]["markers"][1]["position"]) - np.asarray(ground)
    c, s = np.cos(-ROCKER_ANGLE), np.sin(-ROCKER_ANGLE)
    lever = {"name": "lever", "position": [0.102 * c, 0.102 * s, 0.0],
             "rotation": [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]}
    out = {k: base[k] for k in ("gravity", "solver")}
    out.update(name=f"four_bar_chain_{n}", ground={"markers": [base["ground"]["markers"][0]]},
               bodies=[bodies["crank"]], joints=[joints["crank"]], loops={"independent": ["crank"], "cuts": []})
    for k in range(n):
        sfx = f"_{k}"
        pivot = {"name": "d" + sfx, "position": list(np.asarray(ground) + (k + 1) * pitch)}
        out["ground"]["markers"].append(pivot)
        rocker = dict(bodies["rocker"], name="rocker" + sfx)
        if k < n - 1:
            rocker["markers"] = rocker["markers"] + [lever]
        out["bodies"] += [dict(bodies["coupler"], name="coupler" + sfx), rocker]
        driver, at = ("crank", "pin") if k == 0 else (f"rocker_{k - 1}", "lever")
        out["joints"] += [dict(joints["coupler_pin"], name="coupler_pin" + sfx, parent=driver, parent_marker=at,
                               child="coupler" + sfx),
                          dict(joints["rocker"], name="rocker" + sfx, parent_marker="d" + sfx, child="rocker" + sfx)]
        out["loops"]["cuts"].append(dict(cut, name=cut["name"] + sfx, parent="coupler" + sfx, child="rocker" + sfx))
    return out


def per_call(f, reps: int) -> float:
    f()
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(reps):
            f()
        best = min(best, (time.perf_counter() - start) / reps)
    return best


def measure(n: int, run_joint: bool) -> dict:
    system = compile_model(model_from_dict(chain(n)))
    stepper = Stepper(system, Settings(method="dopri5", rtol=1e-8, max_step=0.01))
    x = np.concatenate([system.q0, system.u0])
    xd = np.zeros_like(x)
    reps = max(50, 20000 // n ** 2)
    joint = per_call(lambda: f_eval(system.ref, stepper.W, 0.0, x, system.input_defaults, xd), reps)
    ns = compile_natural(system)
    W = make_work(ns.arrays, len(ns.drives))
    y, yd = initial_state(system)
    a = np.zeros(ns.n)
    dropped = accelerations(ns.arrays, W, y, yd, a)
    natural = per_call(lambda: accelerations(ns.arrays, W, y, yd, a), max(200, 20000 // n))
    run = steps = np.nan
    if run_joint:
        stepper.advance(0.0, x, 0.01, system.input_defaults)
        start = time.perf_counter()
        stepper.advance(0.01, x, 1.01, system.input_defaults)
        run, steps = time.perf_counter() - start, stepper.nsteps
    return dict(n=n, bodies=len(system.bodies), rows=len(system.loop_rows), joint=joint, natural=natural,
                dropped=dropped, redundant=len(system.loop_redundant), fill=ns.fill, run=run, steps=steps)


def exponent(rows: list[dict], key: str) -> float:
    big = [r for r in rows[len(rows) // 2:] if np.isfinite(r[key])]
    if len(big) < 2:
        return np.nan
    return float(np.polyfit(np.log([r["n"] for r in big]), np.log([r[key] for r in big]), 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-n", type=int, default=64)
    ap.add_argument("--max-run-n", type=int, default=16, help="largest N also run for 1 s with dopri5")
    args = ap.parse_args()
    ns = [n for n in (1, 2, 4, 8, 16, 32, 64, 128) if n <= args.max_n]
    rows = [measure(n, n <= args.max_run_n) for n in ns]
    print(f"flexmbs {flexmbs.__version__}: coupled chain of N four-bars (2N + 1 bodies, N loops, 1 DOF)")
    print(f"{'N':>4} {'bodies':>7} {'cut rows':>9} {'redundant':>10} {'fill':>5} {'joint RHS [us]':>15} "
          f"{'natural RHS [us]':>17} {'joint/natural':>14} {'1 s dopri5 [s]':>15} {'steps':>6}")
    for r in rows:
        print(f"{r['n']:4d} {r['bodies']:7d} {r['rows']:9d} {r['redundant']:4d}/{r['dropped']:<5d} {r['fill']:5d} "
              f"{r['joint'] * 1e6:15.1f} {r['natural'] * 1e6:17.1f} {r['joint'] / r['natural']:14.2f} "
              f"{r['run']:15.3f} {r['steps']:6.0f}")
    print("redundant: rows dropped by the joint-coordinate assembly (pivoted QR) / by the natural factorisation")
    if len(rows) > 2:
        print(f"growth exponent (upper half of the table): joint RHS ~ N^{exponent(rows, 'joint'):.2f}, "
              f"natural RHS ~ N^{exponent(rows, 'natural'):.2f}, 1 s of motion (joint) ~ N^{exponent(rows, 'run'):.2f}")


if __name__ == "__main__":
    main()
