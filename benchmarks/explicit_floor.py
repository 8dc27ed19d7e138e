#!/usr/bin/env python
"""How many right-hand sides explicit Runge-Kutta methods need on Huang's arm for a joint error
of at most 1e-5 rad, and the real-time factor that caps at the measured cost of one.

    python benchmarks/explicit_floor.py [--t-end 5] [--goal 1e-5]

Huang's arm (models/huang_two_link.yaml, free release) rings in its 202 Hz coupled mode with
about 3e-5 rad on the elbow for the whole run (nothing damps it): a method that does not follow
that ripple over its ~1,000 periods ends about 3e-5 rad off, so a joint error of 1e-5 rad is
bought by resolving it, not by the slow swing. This script counts the right-hand sides that
costs, per simulated second, for three explicit methods on the same right-hand side
(`solvers.common.f_eval`): flexmbs' dopri5 (its own error norm), and SciPy's RK45 (the same
Dormand-Prince pair, SciPy's norm) and DOP853 (order 8, 12 stages; E. Hairer, S. P. Norsett,
G. Wanner, "Solving Ordinary Differential Equations I", 2nd ed., Springer 1993, Sec. II.10), each
over a range of tolerances. The error is the largest joint-angle deviation over the 5 ms samples
from flexmbs' dopri5 at rtol 1e-10 (run.py's reference). Counts, not times: they do not move
with the machine's load.

The last lines divide: with the cheapest count that meets the goal and the cost of one
right-hand side inside numba (rhs_per_call.per_call, best of 7 blocks), the real-time factor
cannot exceed 1 / (count x cost) however little the rest of a step costs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import flexmbs
from flexmbs.solvers.common import f_eval
from flexmbs.solvers.stepper import Settings, Stepper

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rhs_per_call import per_call  # noqa: E402

MODEL = Path(__file__).resolve().parents[1] / "models" / "huang_two_link.yaml"
JOINTS = ("shoulder.q", "elbow.q")
OURS_RTOL = (1e-5, 3e-6, 2e-6, 1e-6, 5e-7)
SCIPY_RTOL = {"RK45": (1e-5, 3e-6, 1e-6, 3e-7), "DOP853": (3e-5, 1e-5, 6e-6, 3e-6, 1e-6)}


def scipy_rows(system, t: np.ndarray, ref: np.ndarray) -> list[tuple[str, float, float, float]]:
    """(method, rtol, right-hand sides per simulated second, joint error [rad]) of SciPy's
    explicit methods on f_eval, atol = rtol, sampled at t by their dense output."""
    st = Stepper(system, Settings(method="rk4", step=1e-3))    # for its workspace only
    x0 = system.x0
    inputs = system.input_defaults.copy()
    out = np.zeros_like(x0)
    iq = [system.joint_q[j.split(".")[0]][0] for j in JOINTS]

    def f(time: float, x: np.ndarray) -> np.ndarray:
        f_eval(system.ref, st.W, time, np.ascontiguousarray(x), inputs, out)
        return out.copy()

    rows = []
    for method, rtols in SCIPY_RTOL.items():
        for rtol in rtols:
            sol = solve_ivp(f, (0.0, t[-1]), x0, method=method, rtol=rtol, atol=rtol, t_eval=t)
            rows.append((f"scipy {method}", rtol, sol.nfev / t[-1], float(np.abs(sol.y[iq].T - ref).max())))
    return rows


def ours_rows(system, t_end: float, ref: np.ndarray) -> list[tuple[str, float, float, float]]:
    """The same for flexmbs' dopri5 (simulate, the model's other settings): 6 right-hand sides
    per trial step, the seventh being the next step's first."""
    rows = []
    for rtol in OURS_RTOL:
        r = flexmbs.simulate(system, t_end, method="dopri5", rtol=rtol)
        nrhs = 6 * (r.stats["steps"] + r.stats["rejected"])
        err = max(float(np.abs(r[j] - ref[:, k]).max()) for k, j in enumerate(JOINTS))
        rows.append(("flexmbs dopri5", rtol, nrhs / t_end, err))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=5.0, help="simulated seconds [s]")
    ap.add_argument("--goal", type=float, default=1e-5, help="joint-angle error goal [rad]")
    cfg = ap.parse_args()
    system = flexmbs.compile_model(flexmbs.load_model(str(MODEL)))
    tight = flexmbs.simulate(system, cfg.t_end, method="dopri5", rtol=1e-10)
    ref = np.stack([tight[j] for j in JOINTS], axis=1)
    rows = ours_rows(system, cfg.t_end, ref) + scipy_rows(system, tight.time, ref)
    print(f"Huang's arm, {cfg.t_end:g} s free release; error against dopri5 at rtol 1e-10 [rad]")
    print(f"{'method':<16} {'rtol':>8} {'RHS per s':>10} {'error':>9}")
    for name, rtol, per_s, err in rows:
        print(f"{name:<16} {rtol:8.0e} {per_s:10.0f} {err:9.2e}{'  meets' if err <= cfg.goal else ''}")
    cost = per_call(str(MODEL))
    print(f"one right-hand side inside numba: {cost * 1e6:.2f} us (best of 7 blocks)")
    for name in dict.fromkeys(r[0] for r in rows):
        meets = [per_s for n, _, per_s, err in rows if n == name and err <= cfg.goal]
        if meets:
            least = min(meets)
            print(f"{name}: at least {least:.0f} right-hand sides per simulated second for <= "
                  f"{cfg.goal:g} rad; real-time factor at most {1.0 / (least * cost):.1f}; "
                  f"100 needs one in {1e6 / (100 * least):.2f} us")


if __name__ == "__main__":
    main()
