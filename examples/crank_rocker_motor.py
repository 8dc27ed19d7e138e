"""He's crank-rocker with a flexible steel coupler (He 1993 Sec. 9.4) started by a 60 V step on
his DC motor: two FMUs (mechanism and motor) co-simulated by the explicit master.

The motor alone on a rigid, lossless linkage would settle where V = ra i + Kp w and
Kp i = D w: w = Kp V / (ra D + Kp^2) = 73.95 rad/s, i = 24.65 A. The plot shows the run-up
(electrical and mechanical time constants), the speed ripple from the linkage, the current and
the coupler's midspan deflection under its inertia loads.

    python build_fmu.py --all -o fmus
    python examples/crank_rocker_motor.py [--fmus out/fmus] [--out out]
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

from flexmbs.fmi.cosim import Master  # noqa: E402
from designs import HE_MOTOR, crank_rocker_motor, midspan_deflection  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fmus", default="out/fmus", type=Path, help="folder with the built FMUs (build_fmu.py --all -o out/fmus)")
    ap.add_argument("--out", default="out", type=Path, help="folder for the plot crank_rocker_motor.png")
    ap.add_argument("--stop-time", type=float, default=3.0, help="end of the run [s]")
    args = ap.parse_args(argv)

    asm = crank_rocker_motor(args.fmus, voltage=60.0, stop_time=args.stop_time)
    start = time.perf_counter()
    with Master(asm) as m:
        m.initialize()
        run = m.run(asm.stop_time, asm.step_size, progress=True)
    wall = time.perf_counter() - start
    p = HE_MOTOR
    w_ss = p["k_t"] * 60.0 / (p["R"] * p["b_motor"] + p["k_t"] ** 2)
    t, w, i = run["time"], run["mech.crank.qd"], run["motor.current"]
    late = t >= t[-1] - 0.5
    defl = midspan_deflection(run)
    print(f"real-time factor {asm.stop_time / wall:.2f}; last 0.5 s: crank speed {w[late].mean():.3f} rad/s "
          f"(ripple {np.ptp(w[late]):.3f}; rigid lossless linkage: {w_ss:.3f}), current {i[late].mean():.3f} A "
          f"(analytic {p['b_motor'] * w_ss / p['k_t']:.3f}); coupler midspan deflection up to "
          f"{1e3 * np.max(np.abs(defl[late])):.2f} mm")

    fig, ax = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    ax[0, 0].plot(t, w, label="crank speed")
    ax[0, 0].axhline(w_ss, ls="--", color="k", lw=0.8, label=f"motor steady state {w_ss:.2f} rad/s")
    ax[0, 0].set_ylabel("crank speed [rad/s]")
    ax[0, 1].plot(t, np.degrees(run["mech.rocker.q"]), label="rocker angle")
    ax[0, 1].set_ylabel("rocker angle [deg]")
    ax[1, 0].plot(t, i, label="armature current")
    ax[1, 0].set_ylabel("current [A]")
    ax[1, 1].plot(t, 1e3 * defl, lw=0.6, label="coupler midspan deflection")
    ax[1, 1].set_ylabel("deflection [mm]")
    finish(fig, ax.flat, ax[1], "He's crank-rocker with a flexible coupler, DC motor 60 V step (co-simulation of "
           "2 FMUs)", args.out / "crank_rocker_motor.png")
    print(f"plot: {args.out / 'crank_rocker_motor.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
