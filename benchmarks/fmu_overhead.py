#!/usr/bin/env python
"""Per-step FMI cost and real-time factor of the plant FMU, side by side with the plant run
directly, through three hosts: fmpy, libcosim (the Open Simulation Platform's C++ master) and
a C host (tests/c_host.c, compiled here).

    python benchmarks/fmu_overhead.py [--steps 2000] [--rounds 5] [--json]

Model: Huang's flexible two-link arm with 4 modes (huang_two_link), communication step 1 ms,
torque inputs held per step. Two solver settings: RK4 at 1 ms (one RK4 step per
communication step: the integration is cheap, so the FMI layer shows) and the model file's
default (dopri5, rtol 1e-6).

Per step, every host sets the 2 torque inputs, calls doStep and reads the outputs a servo
master connects (the joint angles and rates, 4 values); libcosim reads them through a
time-series observer started on those 4 (a last-value observer would read every output).

* direct: the same plant object without FMI (flexmbs_fmu.plant.Plant: set 2 inputs, step,
  make the 4 outputs valid), in this process: the integration cost.
* FMI cost per step = host per step - direct per step; real-time factor = 1 ms / host per step.

Times are CPU times of the process (time.process_time; the C host measures its own with
CLOCK_PROCESS_CPUTIME_ID), which a shared machine disturbs less than wall time. Rounds are
interleaved (direct, fmpy, C host, libcosim, direct, ...); reported per step: min and median
over rounds. The servo demo (7 FMUs, 2.5 s) runs once each after a warm-up through our fmpy
master (flexmbs.fmi.cosim.Master, Gauss-Seidel, 1 ms), the C master (benchmarks/c_master.c, the
same scheme, from a plan written here; its final values are compared with the fmpy master's)
and libcosim (Jacobi, on its SSP package at 0.5 ms, the step that scheme needs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

from flexmbs.model.catalog import models_dir

HERE = Path(__file__).resolve().parent
C_HOST = HERE.parent / "tests" / "c_host.c"
C_MASTER = HERE / "c_master.c"
H = 1e-3
TORQUES = {"shoulder.tau": 0.3, "elbow.tau": -0.1}
READ = ["shoulder.q", "shoulder.qd", "elbow.q", "elbow.qd"]


def model_variant(folder: Path, method: str | None) -> Path:
    """huang_two_link.yaml, with solver method RK4 at 1 ms when `method` is 'rk4'."""
    data = yaml.safe_load((models_dir() / "huang_two_link.yaml").read_text())
    name = "huang_two_link"
    if method == "rk4":
        data.setdefault("solver", {}).update({"method": "rk4", "step": H})
        name = "huang_two_link_rk4"
    data["name"] = name
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def per_step_direct(model: Path, steps: int) -> float:
    from flexmbs import load_model
    from flexmbs_fmu.plant import Plant

    plant = Plant(load_model(model))
    plant.initialize(0.0)
    slots = [plant.interface.variables[[v.name for v in plant.interface.variables].index(n)].slot for n in READ]
    inputs = [plant.system.inputs.index(n) for n in TORQUES]
    values = list(TORQUES.values())
    t0 = time.process_time()
    for k in range(steps):
        for i, v in zip(inputs, values):
            plant.set_input(i, v)
        plant.step(k * H, H)
        plant.refresh(1)
        plant.y[slots].sum()
    return (time.process_time() - t0) / steps


class FmpyHost:
    def __init__(self, path: str) -> None:
        from fmpy import extract, read_model_description
        from fmpy.fmi2 import FMU2Slave

        md = read_model_description(path)
        self.vr = {v.name: v.valueReference for v in md.modelVariables}
        self.dir = extract(path)
        self.fmu = FMU2Slave(guid=md.guid, unzipDirectory=self.dir, modelIdentifier=md.coSimulation.modelIdentifier,
                             instanceName="bench")
        self.fmu.instantiate()
        self.t = 0.0

    def per_step(self, steps: int) -> float:
        fmu = self.fmu
        fmu.reset()
        fmu.setupExperiment(startTime=0.0)
        fmu.enterInitializationMode()
        fmu.exitInitializationMode()
        ins, vals = [self.vr[n] for n in TORQUES], list(TORQUES.values())
        outs = [self.vr[n] for n in READ]
        t0 = time.process_time()
        for k in range(steps):
            fmu.setReal(ins, vals)
            fmu.doStep(currentCommunicationPoint=k * H, communicationStepSize=H)
            fmu.getReal(outs)
        return (time.process_time() - t0) / steps


def c_binary(folder: Path, name: str, source: Path) -> Path | None:
    """Compile one of the C hosts into folder/name; None without a C compiler."""
    from flexmbs.fmi.frontend import compiler

    cc = compiler()
    if cc is None:
        return None
    exe = folder / name
    subprocess.run([cc, "-O2", "-o", str(exe), str(source), "-ldl"], check=True)
    return exe


def run_c_master(exe: Path, asm, plan: Path, t_end: float) -> tuple[float, int, np.ndarray]:
    """Run the Assembly (Gauss-Seidel sequence) in the C master: (CPU seconds of the steps after
    the first, their number, the connections' source values at the end)."""
    from fmpy import extract, read_model_description

    lines, described, unzipped = [], {}, {}
    for e in asm.elements:
        fmu = str(e.fmu)
        if fmu not in described:
            described[fmu], unzipped[fmu] = read_model_description(fmu), Path(extract(fmu))
        md, d = described[fmu], unzipped[fmu]
        lines.append(f"element {e.name} {d / 'binaries' / 'linux64' / (md.coSimulation.modelIdentifier + '.so')} "
                     f"{(d / 'resources').as_uri()} {md.guid}")
        types = {v.name: (v.valueReference, v.type) for v in md.modelVariables}
        for name, value in e.parameters.items():
            vr, kind = types[name]
            lines.append(f"{'string' if kind == 'String' else 'real'} {e.name} {vr} {value!r}".replace("'", ""))
    vrs = {e.name: {v.name: v.valueReference for v in described[str(e.fmu)].modelVariables} for e in asm.elements}
    for src, dst in asm.connections:
        (se, sv), (de, dv) = src.split(".", 1), dst.split(".", 1)
        lines.append(f"link {se} {vrs[se][sv]} {de} {vrs[de][dv]}")
    lines += [f"sequence {' '.join(asm.sequence)}", f"run {H!r} {int(round(t_end / H))}"]
    plan.write_text("\n".join(lines) + "\n")
    out = subprocess.run([str(exe), str(plan)], capture_output=True, text=True, check=True, env={}).stdout.split("\n")
    _, seconds, timed = out[0].split()
    links = np.array([float(line.split()[2]) for line in out[1:] if line.startswith("link")])
    return float(seconds), int(timed), links


def per_step_c_host(exe: Path, unzipped: Path, guid: str, ident: str, vr: dict[str, int], steps: int) -> float:
    args = [str(exe), "-t", str(unzipped / "binaries" / "linux64" / f"{ident}.so"), (unzipped / "resources").as_uri(),
            guid, repr(H), str(steps), str(len(TORQUES)), *(str(vr[n]) for n in TORQUES),
            *(repr(v) for v in TORQUES.values()), str(len(READ)), *(str(vr[n]) for n in READ)]
    seconds, timed = subprocess.run(args, capture_output=True, text=True, check=True, env={}).stdout.split()[-2:]
    return float(seconds) / int(timed)


def per_step_libcosim(path: str, vr: dict[str, int], steps: int) -> float | None:
    try:
        from libcosimpy.CosimEnums import CosimVariableType
        from libcosimpy.CosimExecution import CosimExecution
        from libcosimpy.CosimObserver import CosimObserver
        from libcosimpy.CosimSlave import CosimLocalSlave
    except ImportError:
        return None
    from flexmbs.fmi.ssp import quiet_libcosim

    quiet_libcosim()
    execution = CosimExecution.from_step_size(int(H * 1e9))
    slave = execution.add_local_slave(CosimLocalSlave(fmu_path=path, instance_name="plant"))
    for name, value in TORQUES.items():
        execution.real_initial_value(slave, vr[name], value)
    observer = CosimObserver.create_time_series()    # reads only the variables it is started on
    execution.add_observer(observer)
    for name in READ:
        observer.start_time_series(slave, vr[name], CosimVariableType.REAL)
    execution.step(1)
    t0 = time.process_time()
    execution.step(steps)
    return (time.process_time() - t0) / steps


def stats(xs: list[float]) -> dict[str, float]:
    return {"min": min(xs), "median": statistics.median(xs)}


def bench_plant(folder: Path, method: str | None, steps: int, rounds: int, exe: Path | None) -> dict:
    from fmpy import extract, read_model_description

    from flexmbs.fmi.build import build

    model = model_variant(folder, method)
    built = build(model, folder)
    path = str(built.path)
    md = read_model_description(path)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    unzipped = Path(extract(path))
    fmpy_host = FmpyHost(path)
    per_step_direct(model, 5)    # warm-up (kernels loaded from the cache)
    fmpy_host.per_step(5)
    times: dict[str, list[float]] = {"direct": [], "fmpy": [], "c_host": [], "libcosim": []}
    for _ in range(rounds):
        times["direct"].append(per_step_direct(model, steps))
        times["fmpy"].append(fmpy_host.per_step(steps))
        if exe is not None:
            times["c_host"].append(per_step_c_host(exe, unzipped, md.guid, md.coSimulation.modelIdentifier, vr, steps))
        lc = per_step_libcosim(path, vr, steps)
        if lc is not None:
            times["libcosim"].append(lc)
    direct = stats(times["direct"])
    result = {"model": model.stem, "solver": method or "model default", "steps": steps, "rounds": rounds,
              "direct_us": {k: v * 1e6 for k, v in direct.items()}, "hosts": {}}
    for host in ("fmpy", "c_host", "libcosim"):
        if not times[host]:
            continue
        s = stats(times[host])
        cost = [t - d for t, d in zip(times[host], times["direct"])]
        result["hosts"][host] = {"per_step_us": {k: v * 1e6 for k, v in s.items()},
                                 "fmi_cost_us": {k: v * 1e6 for k, v in stats(cost).items()},
                                 "real_time_factor": {"best": H / s["min"], "median": H / s["median"]}}
    return result


def bench_servo(folder: Path) -> dict:
    sys.path.insert(0, str(HERE.parent / "examples"))
    from designs import huang_servo

    from flexmbs.fmi.build import build, build_component
    from flexmbs.fmi.cosim import Master
    from flexmbs.fmi.servo import assembly
    from flexmbs.fmi.ssp import quiet_libcosim, run_libcosim, write_ssp

    design = huang_servo(models_dir())
    design.step_size = H
    fmus = folder / "servo"
    for element in ("dc_motor", "pid_controller", "trajectory"):
        build_component(element, fmus)
    asm = assembly(design, fmus)
    for e in asm.elements:
        if not Path(e.fmu).is_file():
            build(models_dir() / f"{Path(e.fmu).stem}.yaml", fmus)
    T = design.stop_time
    result = {"stop_time_s": T, "step_s": H, "fmus": len(asm.elements)}
    with Master(asm) as m:    # warm-up
        m.initialize()
        m.run(0.01, H)
    start = time.process_time()
    with Master(asm) as m:
        m.initialize()
        m.run(T, H)
        final = m._reader(m._sources)()
    result["fmpy_master_real_time_factor"] = T / (time.process_time() - start)
    exe = c_binary(folder, "c_master", C_MASTER)
    if exe is not None:
        seconds, timed, links = run_c_master(exe, asm, folder / "servo_plan.txt", T)
        result["c_master_real_time_factor_steps_after_first"] = timed * H / seconds
        result["c_master_max_difference_to_fmpy_master"] = float(np.max(np.abs(links - final)))
    try:    # libcosim is a Jacobi master: the demo runs it at 0.5 ms (docs/servo.md)
        ssp = folder / "servo.ssp"
        write_ssp(assembly(replace(design, gauss_seidel=False, step_size=H / 2), fmus), ssp)
        quiet_libcosim()
        start = time.process_time()
        run_libcosim(ssp, T, H / 2, asm.record)
        result["libcosim_jacobi_half_step_real_time_factor"] = T / (time.process_time() - start)
    except ImportError:
        pass
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000, help="communication steps per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print one JSON object per line instead of a table")
    ap.add_argument("--no-servo", action="store_true", help="skip the servo demo")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fmu_overhead_") as tmp:
        folder = Path(tmp)
        tempfile.tempdir = tmp      # fmpy extracts each FMU it opens there, removed with it
        try:
            exe = c_binary(folder, "c_host", C_HOST)
            results = [bench_plant(folder, m, args.steps, args.rounds, exe) for m in ("rk4", None)]
            servo = None if args.no_servo else bench_servo(folder)
        finally:
            tempfile.tempdir = None
    if args.json:
        for r in results:
            print(json.dumps(r))
        if servo:
            print(json.dumps({"servo_demo": servo}))
        return
    for r in results:
        d = r["direct_us"]
        print(f"\n{r['model']} ({r['solver']}), 1 ms steps, {r['steps']} steps x {r['rounds']} rounds "
              f"[us per step, min / median]")
        print(f"  direct (no FMI)   {d['min']:8.1f} / {d['median']:8.1f}")
        for host, h in r["hosts"].items():
            p, c, f = h["per_step_us"], h["fmi_cost_us"], h["real_time_factor"]
            print(f"  {host:16s}  {p['min']:8.1f} / {p['median']:8.1f}   FMI cost {c['min']:6.1f} / {c['median']:6.1f}"
                  f"   real-time factor {f['best']:6.1f} / {f['median']:6.1f}")
    if servo:
        print(f"\nservo demo, {servo['fmus']} FMUs, 1 ms, {servo['stop_time_s']} s: real-time factor "
              f"{servo['fmpy_master_real_time_factor']:.2f} (fmpy master)"
              + (f", {servo['libcosim_jacobi_half_step_real_time_factor']:.2f} (libcosim, Jacobi at 0.5 ms)"
                 if "libcosim_jacobi_half_step_real_time_factor" in servo else "")
              + (f", {servo['c_master_real_time_factor_steps_after_first']:.2f} (C master, Gauss-Seidel, 1 ms; "
                 f"final values {servo['c_master_max_difference_to_fmpy_master']:.1e} from the fmpy master's)"
                 if "c_master_real_time_factor_steps_after_first" in servo else ""))


if __name__ == "__main__":
    main()
