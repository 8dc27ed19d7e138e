"""The servo demo: Huang's two-link arm (link 2 flexible) driven by two geared DC motors under
two discrete PID controllers, moving from (0, 0) to (1.2, 0.6) rad, co-simulated from FMUs by
three masters: the explicit fmpy loop (flexmbs_fmu.cosim.Master), fmpy's SSP runner and
libcosim (OSP) on the same .ssp package. Writes the plot and the .ssp; prints how the masters
agree and their real-time factors.

    python build_fmu.py --all -o out/fmus
    python examples/servo_demo.py [--fmus out/fmus] [--out out]
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

from flexmbs_fmu.cosim import Master, max_difference  # noqa: E402
from designs import huang_servo  # noqa: E402
from flexmbs_fmu.servo import assembly  # noqa: E402
from flexmbs_fmu.ssp import quiet_libcosim, run_fmpy, run_libcosim, write_ssp  # noqa: E402
from flexmbs.model.catalog import models_dir

MODELS = models_dir()


def plot(run: dict[str, np.ndarray], joints: list[str], out: Path) -> None:
    """Joint angles against references, tip deflection, motor currents and voltages."""
    t = run["time"]
    fig, ax = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    for j in joints:
        line, = ax[0, 0].plot(t, np.degrees(run[f"arm.{j}.q"]), label=f"{j}")
        ax[0, 0].plot(t, np.degrees(run[f"r_{j}.q_ref"]), "--", color=line.get_color(), label=f"{j} reference")
        ax[1, 0].plot(t, run[f"m_{j}.current"], label=f"{j} motor")
        ax[1, 1].plot(t, run[f"c_{j}.voltage"], label=f"{j} controller")
    for k, name in ((2, "in link 2's y"), (3, "in link 2's z")):
        ax[0, 1].plot(t, 1e3 * run[f"arm.link2.tip_deflection[{k}]"], label=f"tip deflection {name}")
    ax[0, 0].set_ylabel("joint angle [deg]")
    ax[0, 1].set_ylabel("tip deflection of link 2 [mm]")
    ax[1, 0].set_ylabel("armature current [A]")
    ax[1, 1].set_ylabel("armature voltage [V]")
    finish(fig, ax.flat, ax[1], "Flexible two-link arm under PID servo control: co-simulation of 7 FMUs", out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fmus", default="out/fmus", type=Path, help="folder with the built FMUs (build_fmu.py --all -o out/fmus)")
    ap.add_argument("--out", default="out", type=Path, help="folder for the plot servo_demo.png and the SSP package servo_arm.ssp")
    ap.add_argument("--stop-time", type=float, default=None, help="end of the run [s] (default: the design's 2.5 s)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    ssp, png = args.out / "servo_arm.ssp", args.out / "servo_demo.png"

    design = huang_servo(MODELS)
    if args.stop_time:
        design.stop_time = args.stop_time
    asm = assembly(design, args.fmus)
    missing = [str(e.fmu) for e in asm.elements if not Path(e.fmu).is_file()]
    if missing:
        print(f"missing FMUs: {', '.join(missing)}; build them with: python build_fmu.py --all -o {args.fmus}",
              file=sys.stderr)
        return 2
    T, h = design.stop_time, design.step_size
    write_ssp(asm, ssp)
    print(f"{ssp}: {len(asm.elements)} FMU instances, {len(asm.connections)} connections, step {h * 1e3:g} ms")

    quiet_libcosim()
    runs, wall = {}, {}
    start = time.perf_counter()
    with Master(asm) as m:
        m.initialize()
        runs["explicit master"] = m.run(T, h, progress=True)
    wall["explicit master"] = time.perf_counter() - start
    start = time.perf_counter()
    runs["fmpy SSP"] = run_fmpy(ssp, T, h)
    wall["fmpy SSP"] = time.perf_counter() - start
    start = time.perf_counter()
    runs["libcosim SSP"] = run_libcosim(ssp, T, h, asm.record)
    wall["libcosim SSP"] = time.perf_counter() - start

    ref = runs["explicit master"]
    joints = [a.joint for a in design.axes]
    for name, run in runs.items():
        diff = max(max_difference(run, ref, asm.record).values())
        print(f"{name:16s} real-time factor {T / wall[name]:5.2f} (wall {wall[name]:5.2f} s for {T:g} s, "
              f"instantiation included); max difference to the explicit master {diff:.1e}")
    if wall["explicit master"] > 5.0 * wall["fmpy SSP"]:
        print("(the explicit master ran first and compiled the plant's numba kernels, cached for every later run)")
    final = {j: float(ref[f"arm.{j}.q"][-1]) for j in joints}
    print("final joint angles [rad]: " + ", ".join(f"{j} {q:.4f}" for j, q in final.items()))
    plot(ref, joints, png)
    print(f"plot: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
