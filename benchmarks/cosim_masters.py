#!/usr/bin/env python
"""Co-simulation runs per minute of each master at 1 ms, side by side (issue 26): the servo
demo (Huang's arm, two motors, two PID controllers, two trajectories, 2.5 s) and the three-link
arm of tests/test_cosim_coupling.py (wrist on the flexible forearm, three motors and PID
controllers with a stiff derivative loop, 0.25 s), each with the explicit Jacobi and
Gauss-Seidel masters and their linearly implicit variants (flexmbs.fmi.cosim.Master).

    python benchmarks/cosim_masters.py [--fmus DIR] [--rounds 3]

The FMUs are built into DIR first if missing. Rounds are interleaved (every master once per
round, one warm-up run first); reported per case and master: runs per minute from the median
wall time of a run (instances created, initialised, run, freed), with the min-max spread over
rounds, and the run's final joint angles, so a master that diverged or rang shows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "tests"))

MASTERS = {"jacobi": (False, "explicit"), "gauss_seidel": (True, "explicit"),
           "implicit_jacobi": (False, "implicit"), "implicit_gauss_seidel": (True, "implicit")}


def designs():
    from designs import huang_servo
    from test_cosim_coupling import arm_design

    return {"servo_demo": lambda gs: replace(huang_servo(), step_size=1e-3, gauss_seidel=gs),
            "three_link_arm": lambda gs: arm_design(1e-3, gs)}


def one_run(design, fmu_dir: Path, coupling: str) -> tuple[float, str]:
    from flexmbs.fmi.cosim import CosimError, Master
    from flexmbs.fmi.servo import assembly

    start = time.perf_counter()
    try:
        with Master(assembly(design, fmu_dir), coupling=coupling) as m:
            m.initialize()
            run = m.run(design.stop_time, design.step_size)
        final = " ".join(f"{a.joint} {run[f'arm.{a.joint}.q'][-1]:.5f}" for a in design.axes)
    except CosimError:
        final = "failed"
    return time.perf_counter() - start, final


def build_missing(fmu_dir: Path) -> None:
    from flexmbs.fmi.build import COMPONENTS, build, build_component
    from flexmbs.model.catalog import models_dir

    fmu_dir.mkdir(parents=True, exist_ok=True)
    for model in ("huang_two_link", "three_link_arm"):
        if not (fmu_dir / f"{model}.fmu").is_file():
            build(models_dir() / f"{model}.yaml", fmu_dir)
    for name in COMPONENTS:
        if not (fmu_dir / f"{name}.fmu").is_file():
            build_component(name, fmu_dir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fmus", type=Path, default=Path("out/fmus"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    build_missing(args.fmus)
    for case, make in designs().items():
        times: dict[str, list[float]] = {m: [] for m in MASTERS}
        finals: dict[str, str] = {}
        for r in range(args.rounds + 1):
            for master, (gs, coupling) in MASTERS.items():
                wall, finals[master] = one_run(make(gs), args.fmus, coupling)
                if r:
                    times[master].append(wall)
        print(f"{case} at 1 ms ({make(True).stop_time} s simulated), {args.rounds} rounds:")
        for master, t in times.items():
            print(f"  {master:22s} {60 / statistics.median(t):6.2f} runs/min "
                  f"({60 / max(t):.2f} - {60 / min(t):.2f})   final: {finals[master]}")


if __name__ == "__main__":
    main()
