#!/usr/bin/env python
"""FMI overhead of the plant FMU, side by side with flexmbs.simulate in one process.

    python benchmarks/fmu_overhead.py [--t-end 2] [--repeats 5] [--json out.json]

Model: Huang's flexible two-link arm with 4 modes (models/huang_two_link.yaml), torque inputs
0.4 sin(2 pi t) and 0.1 N m at both joints, communication (and output) step 1 ms.

* direct: flexmbs.simulate(model, t_end, output_step=1e-3, inputs=f) (samples held like a
  co-simulation master holds them; outputs evaluated for every sample).
* fmu: the built FMU in fmpy's FMU2Slave API, a master loop that sets both inputs, calls
  doStep and reads every output at each of the t_end / 1 ms steps.

Reported: wall times (best of `repeats` interleaved rounds), the ratio fmu / direct (goal
<= 1.3) and the real-time factor t_end / wall of the FMU run (goal > 50). Also, in a new
process once the per-user caches are warm: the time of fmi2Instantiate (imports, model file,
FE model; goal well under 1 s) and of initialisation up to the first step (loading the cached
numba kernels).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

from flexmbs.model.catalog import models_dir

MODEL = models_dir() / "huang_two_link.yaml"
H = 1e-3


def torques(t: float) -> dict:
    return {"shoulder.tau": 0.4 * np.sin(2 * np.pi * t), "elbow.tau": 0.1}


def run_direct(t_end: float) -> float:
    import flexmbs

    model = flexmbs.load_model(MODEL)
    t0 = time.perf_counter()
    flexmbs.simulate(model, t_end, output_step=H, inputs=torques)
    return time.perf_counter() - t0


def run_fmu(path: str, t_end: float) -> float:
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    md = read_model_description(path)
    unzipped = extract(path)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    ins = [vr["shoulder.tau"], vr["elbow.tau"]]
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipped, modelIdentifier=md.coSimulation.modelIdentifier,
                    instanceName="bench")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    n = int(round(t_end / H))
    t0 = time.perf_counter()
    for k in range(n):
        t = k * H
        u = torques(t)
        fmu.setReal(ins, [u["shoulder.tau"], u["elbow.tau"]])
        fmu.getReal(outs)
        fmu.doStep(currentCommunicationPoint=t, communicationStepSize=H)
    fmu.getReal(outs)
    wall = time.perf_counter() - t0
    fmu.terminate()
    fmu.freeInstance()
    return wall


_INSTANTIATE = """
import time
t0 = time.perf_counter()
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave
md = read_model_description({path!r})
d = extract({path!r})
t1 = time.perf_counter()
fmu = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier, instanceName="i")
fmu.instantiate()
t2 = time.perf_counter()
fmu.setupExperiment(startTime=0.0)
fmu.enterInitializationMode()
fmu.exitInitializationMode()
fmu.getReal([v.valueReference for v in md.modelVariables if v.causality == "output"])
fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=1e-3)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def instantiate_in_new_process(path: str) -> tuple[float, float, float]:
    """(fmpy import + unzip, fmi2Instantiate, initialisation + first output + first step) [s]
    in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(_INSTANTIATE.format(path=path))],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[-3]), float(out[-2]), float(out[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=2.0, help="simulated time per run [s]")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    from flexmbs_fmu.build import build

    with tempfile.TemporaryDirectory() as tmp:
        path = str(build(MODEL, tmp).path)
        print(f"built {Path(path).name}; warming up (numba compilation on a first run)...")
        run_direct(0.01)
        run_fmu(path, 0.01)
        first = instantiate_in_new_process(path)
        second = instantiate_in_new_process(path)
        direct, fmu = [], []
        for _ in range(args.repeats):
            direct.append(run_direct(args.t_end))
            fmu.append(run_fmu(path, args.t_end))
    d, f = min(direct), min(fmu)
    steps = int(round(args.t_end / H))
    res = {
        "model": MODEL.name, "t_end": args.t_end, "communication_step": H,
        "direct_wall_s": d, "fmu_wall_s": f, "ratio_fmu_over_direct": f / d,
        "real_time_factor_fmu": args.t_end / f, "real_time_factor_direct": args.t_end / d,
        "per_step_overhead_us": (f - d) / steps * 1e6,
        "new_process_first": dict(zip(("fmpy_import_and_unzip_s", "instantiate_s", "initialise_and_first_step_s"),
                                      first)),
        "new_process_again": dict(zip(("fmpy_import_and_unzip_s", "instantiate_s", "initialise_and_first_step_s"),
                                      second)),
    }
    print(f"\nHuang two-link arm, 4 modes, {args.t_end} s at a {H * 1e3:g} ms communication step "
          f"(best of {args.repeats}):")
    print(f"  flexmbs.simulate      {d:8.3f} s   real-time factor {args.t_end / d:6.1f}")
    print(f"  FMU through fmpy      {f:8.3f} s   real-time factor {args.t_end / f:6.1f}   (goal > 50)")
    print(f"  ratio fmu / direct    {f / d:8.2f}     (goal <= 1.3); FMI cost per step "
          f"{res['per_step_overhead_us']:.1f} us")
    print(f"  new process, warm caches: fmi2Instantiate {second[1]:.3f} s, then initialisation + first "
          f"step {second[2]:.3f} s (goal: instantiation well under 1 s); first run in this build "
          f"{first[1]:.3f} s + {first[2]:.3f} s")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
