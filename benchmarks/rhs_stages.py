#!/usr/bin/env python
"""Cost of each stage of the right-hand side on the recursive tree route [us per call].

    python benchmarks/rhs_stages.py double_pendulum huang_two_link chain:64 [--rounds 7]

The stages are those of dynamics.rhs and kernels/articulated.articulated_accelerations, in
order, after the loop that runs them: the drives (prescribed motion and joint
forces); pass 1 per body split into its six steps (parent motion, joint motion, child motion,
world motion, tree terms, own inertia); the loads; pass 2 (inertia, leaves to root); pass 3
(accelerations, root to leaves); the rates into the output. A numba loop runs the stages up to
k for every k, and a stage's cost is the difference of two such prefixes: each stage then runs
on what the stages before it left, as it does inside the right-hand side (a stage alone would
run on its own output, and pass 2 on an inertia that grows call after call). The last line is
the whole right-hand side (solvers.common.f_eval) for comparison. The state is copied into the
workspace once, by a first f_eval, not at every call as f_eval does (dynamics.rhs), and the
loop reads the workspace's arrays once. numba inlines the stages of pass 1 (kernel(inline=True)),
so each prefix is optimised on its own, less well than f_eval: the sum of the stages can exceed
f_eval by 20-40 %, and a stage's share is a guide, not an exact split. Rounds are interleaved over the prefixes; a stage's cost
is the difference of the best rounds of its two prefixes (CPU time), with the median of the
rounds' differences in brackets, and its share of the sum of the stages. On a loaded machine a
small stage's difference can come out negative: run more rounds.

The state: a shipped model's initial state; for `chain:N`, the chain_rhs case of run.py
(models.chain_model and models.chain_state). Models whose System takes another route (closed
loops, elastic rods) are refused.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import flexmbs  # before numba: flexmbs then compiles for the CPU its FMUs carry (_cache)
import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))

import models  # noqa: E402
from flexmbs.kernels import articulated as ab  # noqa: E402
from flexmbs.kernels.drives import apply_prescribed, joint_forces  # noqa: E402
from flexmbs.kernels.dynamics import qdot_of  # noqa: E402
from flexmbs.kernels.linalg import fill1  # noqa: E402
from flexmbs.kernels.motor import current_rates  # noqa: E402
from flexmbs.kernels.structs import route_of  # noqa: E402
from flexmbs.model import model_from_dict  # noqa: E402
from flexmbs.solvers.common import f_eval  # noqa: E402

STAGES = ("loop", "drives", "1 parent motion", "1 joint motion", "1 child motion",
          "1 world motion", "1 tree terms", "1 own inertia", "loads", "2 inertia", "3 accelerations",
          "position rates")


@njit
def _prefix(k, S, W, inputs, out, calls):
    """Run the stages 1..k (STAGES) `calls` times on the state in W's copies (rates into out)."""
    nq, nv = S.nq, S.nv
    q, u, udot, cur, tau = W.xq, W.xu, W.xud, W.xi, W.ab_tau
    for _ in range(calls):
        if k >= 1:
            apply_prescribed(S, 0.0, q, u, inputs, udot)
            fill1(tau, 0.0)
            joint_forces(S, 0.0, q, u, cur, inputs, tau)
        for i in range(S.nb):
            if k >= 2:
                ab._parent_motion(S, W, i, q, u)
            if k >= 3:
                ab._joint_motion(S, W, i, q, u)
            if k >= 4:
                ab._child_motion(S, W, i)
            if k >= 5:
                ab._world_motion(S, W, i)
            if k >= 6:
                ab._tree_terms(S, W, i, q, u, udot)
            if k >= 7:
                ab._own_inertia(S, W, i)
        if k >= 8:
            ab._loads(S, W, q, u, inputs)
        if k >= 9:
            ab._inertia_pass(S, W)
        if k >= 10:
            ab._acceleration_pass(S, W, udot)
        if k >= 11:
            for i in range(nv):
                out[nq + i] = udot[i]
            qdot_of(S, q, u, out)
            current_rates(S, u, cur, inputs, out, nq + nv)


@njit
def _whole(S, W, x, inputs, out, calls):
    """The right-hand side `calls` times at state x."""
    for _ in range(calls):
        f_eval(S, W, 0.0, x, inputs, out)


def system_and_state(name: str) -> tuple[flexmbs.System, np.ndarray]:
    """The System of a shipped model or `chain:N`, and the state [q; u; i] it is timed at."""
    if name.startswith("chain:"):
        n = int(name[6:])
        system = flexmbs.compile_model(model_from_dict(models.chain_model(n)))
        return system, np.concatenate(models.chain_state(n))
    system = flexmbs.compile_model(flexmbs.load_model(name))
    return system, np.array(system.x0, float)


def stage_costs(name: str, rounds: int, block: float) -> tuple[list[list[float]], list[float]]:
    """Per round: the cost [s] of every prefix 0..len(STAGES)-1, and of the whole right-hand side."""
    system, x = system_and_state(name)
    route = route_of(system.arrays)
    if route != "recursive tree":
        raise SystemExit(f"{name}: its System takes the {route!r} route; this script splits the "
                         "recursive tree route only")
    S, W = system.ref, system.workspace()
    out = np.zeros_like(x)
    inputs = system.input_defaults.copy()   # writable, as simulate passes them: one compile
    runs = [lambda n, k=k: _prefix(k, S, W, inputs, out, n) for k in range(len(STAGES))]
    runs.append(lambda n: _whole(S, W, x, inputs, out, n))
    runs[-1](1)   # f_eval copies the state x into W, where the stages read it
    for run in runs:
        run(10)
    start = time.process_time()
    runs[-1](1000)
    calls = max(100, int(block / max((time.process_time() - start) / 1000, 1e-9)))
    table = []
    for _ in range(rounds):
        row = []
        for run in runs:
            start = time.process_time()
            run(calls)
            row.append((time.process_time() - start) / calls)
        table.append(row)
    return [r[:-1] for r in table], [r[-1] for r in table]


def report(name: str, rounds: int, block: float) -> None:
    """Print the table of one model."""
    prefixes, whole = stage_costs(name, rounds, block)
    best = [min(r[k] for r in prefixes) for k in range(len(STAGES))]
    print(f"\n{name}: the right-hand side's stages [us per call], best of {rounds} (median)")
    for k, stage in enumerate(STAGES):
        cost = best[k] - (best[k - 1] if k else 0.0)
        spread = statistics.median(r[k] - (r[k - 1] if k else 0.0) for r in prefixes)
        print(f"  {stage:18s} {cost * 1e6:8.3f} ({spread * 1e6:.3f})  {100 * cost / best[-1]:5.1f} %")
    total_median = statistics.median(r[-1] for r in prefixes)
    print(f"  {'sum of stages':18s} {best[-1] * 1e6:8.3f} ({total_median * 1e6:.3f})")
    print(f"  {'f_eval':18s} {min(whole) * 1e6:8.3f} ({statistics.median(whole) * 1e6:.3f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="shipped model names, or chain:N")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--block", type=float, default=0.05, help="seconds per timed block")
    args = parser.parse_args()
    for model in args.models:
        report(model, args.rounds, args.block)
