"""Control design on the co-simulated servo system, and why the flexible link matters.

1. A first design from the linearised rigid arm (flexmbs.linearize): PD pole placement per joint
   at 8 rad/s, plus integral action.
2. Tune kp and kd of both joints by Nelder-Mead on the co-simulated RIGID arm (FMU
   huang_two_link_rigid): the objective is the tracking error alone there (no tip deflection).
3. Tune the same gains on the co-simulated FLEXIBLE arm (huang_two_link): tracking error plus the
   residual tip vibration after the move.
4. Run both designs on the flexible arm and plot them: the rigid design excites link 2.

Every tuning reuses one set of FMU instances: the state after initialisation is saved once and
restored before each evaluation (fmi2SetFMUstate), and the tunable gains are set.

    python build_fmu.py --all -o fmus
    python examples/servo_design.py [--fmus out/fmus] [--evaluations 40] [--out out]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _figures import finish  # noqa: E402

from flexmbs.fmi.cosim import Master  # noqa: E402
from designs import FIRST_KI, huang_servo  # noqa: E402
from flexmbs.fmi.servo import assembly, first_design, objective, tune  # noqa: E402
from flexmbs.model.catalog import models_dir

MODELS = models_dir()


def run(design, fmu_dir: Path) -> dict[str, np.ndarray]:
    with Master(assembly(design, fmu_dir)) as m:
        m.initialize()
        return m.run(design.stop_time, design.step_size)


def describe(gains: dict[str, dict[str, float]]) -> str:
    return "; ".join(f"{j}: " + ", ".join(f"{k} {v:.3g}" for k, v in g.items()) for j, g in gains.items())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fmus", default="out/fmus", type=Path, help="folder with the built FMUs (build_fmu.py --all -o out/fmus)")
    ap.add_argument("--evaluations", type=int, default=40, help="objective evaluations per tuning")
    ap.add_argument("--out", default="out", type=Path, help="folder for the plot servo_design.png")
    args = ap.parse_args(argv)

    flexible, rigid = huang_servo(MODELS), huang_servo(MODELS, rigid=True)
    start = first_design(rigid, bandwidth=8.0)
    print(f"first design (rigid linearisation, 8 rad/s): {describe(start)}; ki {FIRST_KI}")
    ki = {j: {"ki": k} for j, k in FIRST_KI.items()}
    flexible, rigid = flexible.with_gains(ki), rigid.with_gains(ki)
    print(f"tuning on the rigid arm ({args.evaluations} co-simulations) ...")
    on_rigid = tune(rigid, args.fmus, start, args.evaluations)
    print(f"  objective {on_rigid.start_value:.4g} -> {on_rigid.value:.4g}: {describe(on_rigid.gains)}")
    print(f"tuning on the flexible arm ({args.evaluations} co-simulations) ...")
    on_flex = tune(flexible, args.fmus, start, args.evaluations)
    print(f"  objective {on_flex.start_value:.4g} -> {on_flex.value:.4g}: {describe(on_flex.gains)}")

    designs = {"rigid-model design": flexible.with_gains(on_rigid.gains),
               "flexible-model design": flexible.with_gains(on_flex.gains)}
    runs = {name: run(d, args.fmus) for name, d in designs.items()}
    print("on the flexible arm:")
    for name, r in runs.items():
        after = r["time"] >= flexible.t_start + flexible.duration + 0.2
        tip = r["arm.link2.tip_deflection[2]"][after]
        ripple = tip - np.convolve(tip, np.ones(101) / 101, mode="same")     # minus a 50 ms moving mean
        print(f"  {name:22s} objective {objective(r, flexible):.4g}; after the move: tip vibration "
              f"{1e3 * np.ptp(ripple[50:-50]):.2f} mm peak-to-peak, joint errors "
              + ", ".join(f"{j} {np.degrees(np.max(np.abs((r[f'arm.{j}.q'] - r[f'r_{j}.q_ref'])[after]))):.2f} deg"
                          for j in ("shoulder", "elbow")))

    fig, ax = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    for name, r in runs.items():
        t = r["time"]
        for j, style in (("shoulder", "-"), ("elbow", "--")):
            ax[0].plot(t, np.degrees(r[f"arm.{j}.q"] - r[f"r_{j}.q_ref"]), style, label=f"{name}, {j}")
        ax[1].plot(t, 1e3 * r["arm.link2.tip_deflection[2]"], label=name)
        ax[2].plot(t, r["c_elbow.voltage"], label=name)
    ax[0].set_ylabel("tracking error [deg]")
    ax[1].set_ylabel("tip deflection, link 2 y [mm]")
    ax[2].set_ylabel("elbow voltage [V]")
    finish(fig, ax, ax[2:], "Gains tuned on the rigid model vs on the flexible model, both run on the flexible arm",
           args.out / "servo_design.png")
    print(f"plot: {args.out / 'servo_design.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
