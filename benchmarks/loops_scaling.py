"""Cost of closed loops against their number: N copies of the four-bar of models/four_bar.yaml
side by side in one model (3N bodies, N cut joints, 3N coordinates, 5N constraint rows of which
3N are redundant), the cost of one right-hand side (mass matrix, forces, constrained solve) and of
one second of motion with dopri5, with the growth exponent p of cost ~ N^p fitted over the table.

    python benchmarks/loops_scaling.py [--max-n 16]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import yaml

import flexmbs
from flexmbs.model import model_from_dict
from flexmbs.solvers.common import f_eval
from flexmbs.solvers.stepper import Settings, Stepper
from flexmbs.system import compile_model

FOUR_BAR = Path(__file__).resolve().parent.parent / "models" / "four_bar.yaml"


def chain(n: int) -> dict:
    """n four-bars 1 m apart along y, each with its own cut joint."""
    base = yaml.safe_load(FOUR_BAR.read_text())
    out = {k: base[k] for k in ("gravity", "solver")}
    out.update(name=f"four_bars_{n}", ground={"markers": []}, bodies=[], joints=[],
               loops={"independent": [], "cuts": []})
    for k in range(n):
        sfx = f"_{k}"
        for m in base["ground"]["markers"]:
            x, y, z = m["position"]
            out["ground"]["markers"].append({"name": m["name"] + sfx, "position": [x, y + k, z]})
        for b in base["bodies"]:
            out["bodies"].append({**b, "name": b["name"] + sfx})
        for j in base["joints"]:
            out["joints"].append({**j, "name": j["name"] + sfx, "child": j["child"] + sfx,
                                  "parent": j["parent"] if j["parent"] == "ground" else j["parent"] + sfx,
                                  "parent_marker": j["parent_marker"] + (sfx if j["parent"] == "ground" else "")})
        cut = base["loops"]["cuts"][0]
        out["loops"]["cuts"].append({**cut, "name": cut["name"] + sfx, "parent": cut["parent"] + sfx,
                                     "child": cut["child"] + sfx})
        out["loops"]["independent"].append(base["loops"]["independent"][0] + sfx)
    return out


def measure(n: int) -> tuple[float, float, int]:
    """(seconds per right-hand side, seconds per simulated second, dopri5 steps per second)."""
    model = model_from_dict(chain(n))
    system = compile_model(model)
    stepper = Stepper(system, Settings(method="dopri5", rtol=1e-8, max_step=0.01))
    x = np.concatenate([system.q0, system.u0])
    xd = np.zeros_like(x)
    f_eval(system.ref, stepper.W, 0.0, x, system.input_defaults, xd)      # compile / warm
    reps = max(200, 20000 // n ** 2)
    start = time.perf_counter()
    for _ in range(reps):
        f_eval(system.ref, stepper.W, 0.0, x, system.input_defaults, xd)
    rhs = (time.perf_counter() - start) / reps
    stepper.advance(0.0, x, 0.01, system.input_defaults)                  # warm the projection path
    start = time.perf_counter()
    stepper.advance(0.01, x, 1.01, system.input_defaults)
    run = time.perf_counter() - start
    return rhs, run, stepper.nsteps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-n", type=int, default=16)
    args = ap.parse_args()
    ns = [n for n in (1, 2, 4, 8, 16, 32) if n <= args.max_n]
    rows = [(n, *measure(n)) for n in ns]
    print(f"flexmbs {flexmbs.__version__}: N four-bars side by side (3N bodies, N loops), dopri5 rtol 1e-8")
    print(f"{'N':>4} {'bodies':>7} {'rows':>5} {'RHS [us]':>10} {'1 s of motion [s]':>18} {'steps':>7}")
    for n, rhs, run, steps in rows:
        print(f"{n:4d} {3 * n:7d} {5 * n:5d} {rhs * 1e6:10.1f} {run:18.3f} {steps:7d}")
    if len(rows) > 2:
        big = rows[len(rows) // 2:]
        p_rhs = np.polyfit(np.log([r[0] for r in big]), np.log([r[1] for r in big]), 1)[0]
        p_run = np.polyfit(np.log([r[0] for r in big]), np.log([r[2] for r in big]), 1)[0]
        print(f"growth exponent (upper half of the table): RHS ~ N^{p_rhs:.2f}, run ~ N^{p_run:.2f}")


if __name__ == "__main__":
    main()
