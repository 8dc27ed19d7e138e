#!/usr/bin/env python
"""Per-call cost of the right-hand side [us] of shipped models, for A/B runs of two builds.

    PYTHONPATH=<one build> python benchmarks/rhs_per_call.py double_pendulum huang_two_link

RK4 steps of 1e-5 s inside numba (solvers.explicit.rk4_advance: 4 right-hand sides a step and a
few vector updates), best of 7 blocks of 0.02 s simulated (2,000 steps), after one warm-up
block. Run it alternately with two builds (each with its own warm cache) and compare the bests.
"""

import sys
import time

import numpy as np

import flexmbs
from flexmbs.solvers.explicit import rk4_advance
from flexmbs.solvers.stepper import Settings, Stepper


def per_call(name: str) -> float:
    """Best seconds per right-hand side of model `name`."""
    system = flexmbs.compile_model(flexmbs.load_model(name))
    st = Stepper(system, Settings(method="rk4", step=1e-5))
    x0 = np.concatenate([system.q0, system.u0])
    inputs = system.input_defaults.copy()
    rk4_advance(system.ref, st.W, 0.0, x0.copy(), 1e-4, 1e-5, inputs, st.K, st.xs)
    best = np.inf
    for _ in range(7):
        x = x0.copy()
        start = time.process_time()
        status, n = rk4_advance(system.ref, st.W, 0.0, x, 0.02, 1e-5, inputs, st.K, st.xs)
        best = min(best, (time.process_time() - start) / (4 * n))
        if status != 0 or n != 2000:
            raise RuntimeError(f"{name}: status {status} after {n} steps")
    return best


if __name__ == "__main__":
    for model in sys.argv[1:]:
        print(model, f"{per_call(model) * 1e6:.4f} us")
