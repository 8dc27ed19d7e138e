"""Cost of one right-hand side (forward dynamics) by the composite mass-matrix route and by the
articulated-body recursion, side by side.

Cases: serial chains of N = 2 ... 64 rigid links (revolute joints about alternating axes), with
the growth exponent of each route fitted over N; and the shipped models (double pendulum,
Huang's arm, spin-up beam, He's space manipulator). Each round times both routes back to back
(interleaved), in two ways: inside a numba loop (no Python call overhead) and through one
Python call each. Printed: per route the minimum and median over the rounds [us], and the
ratio composite / recursive of minima and its median over rounds.

    python benchmarks/rhs_scaling.py [--rounds 7] [--quick]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import flexmbs  # before numba: flexmbs then compiles for the CPU its FMUs carry (_cache)
import numpy as np

from flexmbs.model import Body, Joint, Marker, Model
from flexmbs.compile import compile_model
from flexmbs.solvers.common import f_eval
from run import repeat_f_eval

ROUTES = ("composite", "recursive")


def chain(n: int) -> Model:
    """n uniform links of 0.1 m and 0.5 kg, revolute joints alternating about z and y."""
    bodies, joints = [], []
    parent, pm = "ground", "origin"
    for k in range(n):
        bodies.append(Body(f"l{k}", mass=0.5, com=(0.05, 0, 0), inertia=(1e-4, 4e-4, 4e-4),
                           markers=[Marker("in"), Marker("out", position=(0.1, 0, 0))]))
        joints.append(Joint(f"j{k}", "revolute", parent, pm, f"l{k}", "in",
                            axis=(0, 0, 1) if k % 2 == 0 else (0, 1, 0), q0=(0.3,), qd0=(0.2,)))
        parent, pm = f"l{k}", "out"
    return Model(f"chain{n}", gravity=(0, 0, -9.81), bodies=bodies, joints=joints)


def _setup(model: Model, dynamics: str):
    system = compile_model(replace(model, solver=replace(model.solver, dynamics=dynamics)))
    assert system.arrays.recursive == (dynamics == "recursive")
    x = np.concatenate([system.q0, system.u0])
    return system.ref, system.workspace(), x, system.input_defaults.copy(), np.zeros_like(x)


def _per_call_numba(args, k: int) -> float:
    t0 = time.perf_counter()
    repeat_f_eval(*args, k)
    return (time.perf_counter() - t0) / k


def _per_call_python(args, k: int) -> float:
    S, W, x, inputs, xd = args
    t0 = time.perf_counter()
    for _ in range(k):
        f_eval(S, W, 0.0, x, inputs, xd)
    return (time.perf_counter() - t0) / k


def measure(model: Model, rounds: int, budget: float = 0.05) -> dict:
    """{(way, route): array of per-call seconds over rounds}, both routes interleaved per round."""
    setups = {r: _setup(model, r) for r in ROUTES}
    ks = {}
    for r in ROUTES:                       # warm up, and choose a repetition count per route
        if repeat_f_eval(*setups[r], 1) != 0 or f_eval(*setups[r][:2], 0.0, *setups[r][2:]) != 0:
            raise RuntimeError(f"f_eval failed on {model.name} ({r})")
        ks[r] = max(10, int(budget / max(_per_call_numba(setups[r], 10), 1e-8)))
    out = {(w, r): [] for w in ("numba", "python") for r in ROUTES}
    for _ in range(rounds):
        for r in ROUTES:
            out["numba", r].append(_per_call_numba(setups[r], ks[r]))
            out["python", r].append(_per_call_python(setups[r], max(10, ks[r] // 4)))
    return {key: np.array(v) for key, v in out.items()}


def _row(label: str, m: dict, way: str) -> str:
    c, r = m[way, "composite"], m[way, "recursive"]
    return (f"{label:28s} {way:6s} composite {1e6 * c.min():9.2f} {1e6 * np.median(c):9.2f}   "
            f"recursive {1e6 * r.min():9.2f} {1e6 * np.median(r):9.2f}   ratio {c.min() / r.min():6.2f} "
            f"(median over rounds {np.median(c / r):6.2f}, range {np.min(c / r):.2f}-{np.max(c / r):.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="chains up to N = 16 only")
    a = ap.parse_args()
    print("one RHS [us]: min median per route; ratio = composite / recursive")
    ns = [2, 4, 8, 16] if a.quick else [2, 4, 8, 16, 32, 64]
    best = {r: [] for r in ROUTES}
    for n in ns:
        m = measure(chain(n), a.rounds)
        for way in ("numba", "python"):
            print(_row(f"chain N={n}", m, way))
        for r in ROUTES:
            best[r].append(m["numba", r].min())
    for r in ROUTES:
        k_all = np.polyfit(np.log(ns), np.log(best[r]), 1)[0]
        k_hi = np.polyfit(np.log(ns[-3:]), np.log(best[r][-3:]), 1)[0]
        print(f"growth exponent {r:9s}: {k_all:.2f} over N = {ns[0]}..{ns[-1]}, {k_hi:.2f} over N = {ns[-3]}..{ns[-1]}")
    for name in ("double_pendulum", "huang_two_link", "spin_up_beam", "he_space_manipulator"):
        m = measure(flexmbs.load_model(name), a.rounds)
        for way in ("numba", "python"):
            print(_row(name, m, way))


if __name__ == "__main__":
    main()
