"""The servo demo: Huang's two-link arm (link 2 flexible) driven by two geared DC motors under
two discrete PID controllers, moving from (0, 0) to (1.2, 0.6) rad, co-simulated from FMUs by
masters: our explicit fmpy loop (flexmbs.fmi.cosim.Master) in Gauss-Seidel order at the
design's 1 ms step (the plot), and three Jacobi masters at 0.5 ms, the step Jacobi coupling
needs here: ours, fmpy's SSP runner and libcosim (OSP) on the .ssp package written for them.
Prints how the masters agree and their real-time factors.

    python build_fmu.py --all -o out/fmus
    python examples/servo_demo.py [--fmus out/fmus] [--out out]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _figures import finish  # noqa: E402

from flexmbs.fmi.cosim import Master, max_difference  # noqa: E402
from designs import huang_servo  # noqa: E402
from flexmbs.fmi.servo import assembly  # noqa: E402
from flexmbs.fmi.ssp import quiet_libcosim, run_fmpy, run_libcosim, write_ssp  # noqa: E402
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
    # fmpy's and libcosim's SSP masters are Jacobi: the package carries the step they are stable at
    jacobi = assembly(replace(design, gauss_seidel=False, step_size=h / 2), args.fmus)
    write_ssp(jacobi, ssp)
    print(f"{ssp}: {len(asm.elements)} FMU instances, {len(asm.connections)} connections, step {h / 2 * 1e3:g} ms")

    quiet_libcosim()
    runs, wall, scheme = {}, {}, {}

    def timed(name: str, how: str, run) -> None:
        start = time.perf_counter()
        runs[name] = run()
        wall[name], scheme[name] = time.perf_counter() - start, how

    def master(name: str, how: str, a, progress: bool = False) -> None:
        """Our master: instantiation and initialisation (where the FMUs compile or load their
        kernels) timed apart from the run, whose wall time alone gives the real-time factor."""
        start = time.perf_counter()
        with Master(a) as m:
            m.initialize()
            ready = time.perf_counter()
            print(f"{name}: {len(a.elements)} FMUs instantiated and initialised in {ready - start:.2f} s"
                  + (" (compiling the plant's kernels: once per machine)" if ready - start > 10 else ""))
            timed(name, how, lambda: m.run(T, a.step_size, progress=progress))

    gs, jh = f"Gauss-Seidel, {h * 1e3:g} ms", f"Jacobi, {h / 2 * 1e3:g} ms"
    master("explicit master", gs, asm, progress=True)
    master("explicit Jacobi", jh, jacobi)
    timed("fmpy SSP", jh, lambda: run_fmpy(ssp, T, h / 2))
    timed("libcosim SSP", jh, lambda: run_libcosim(ssp, T, h / 2, asm.record))

    ref, jac = runs["explicit master"], runs["explicit Jacobi"]
    joints = [a.joint for a in design.axes]
    angles = [f"arm.{j}.q" for j in joints]
    for name, run in runs.items():
        # the SSP masters against our Jacobi master (same scheme: every recorded value to
        # round-off), the Jacobi runs against the Gauss-Seidel one at their common points (two
        # first-order schemes: joint angles [rad])
        if "SSP" in name:
            what, diff = "every value against the Jacobi master", max(max_difference(run, jac, asm.record).values())
        else:
            what, diff = "joint angles against Gauss-Seidel [rad]", max(max_difference(run, ref, angles).values())
        setup = "instantiation included" if "SSP" in name else "the run alone"
        print(f"{name:16s} ({scheme[name]}) real-time factor {T / wall[name]:5.2f} (wall {wall[name]:5.2f} s for "
              f"{T:g} s, {setup}); max difference, {what}: {diff:.1e}")
    final = {j: float(ref[f"arm.{j}.q"][-1]) for j in joints}
    print("final joint angles [rad]: " + ", ".join(f"{j} {q:.4f}" for j, q in final.items()))
    plot(ref, joints, png)
    print(f"plot: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
