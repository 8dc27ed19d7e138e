"""The C front ends (fmu_src/flexmbs_fmu/flexmbs_fmi2.c, flexmbs_fmi3.c and their shared
flexmbs_fmi_core.c) under AddressSanitizer (issue 23; FMI 3.0: issue 28).

Builds the FMUs of Huang's arm, the double pendulum and the DC motor (and FMI 3.0 FMUs of the
double pendulum and the DC motor), recompiles each one's front
end with -fsanitize=address (flexmbs.fmi.frontend.compile_front_end's flags), then runs on them,
each in its own process with the sanitizer's runtime preloaded (neither Python nor the host is
instrumented):
- every pattern of the hostile C host (tests/c_hostile.c: exit-handler free, locking logger on
  two threads, repeated deserialisation, instantiate/free cycles, restore after terminate, calls
  after a discard, a huge step, bad sizes and forged handles);
- the FMI call fuzzer (tests/fmi_fuzz.py) on the plant and on the block, FMI 2.0 and FMI 3.0.

It reports per run, and in total, the invalid accesses AddressSanitizer found anywhere (reads or
writes out of bounds, use after free, double free: each "ERROR: AddressSanitizer" report) and the
definite leaks LeakSanitizer found at exit whose allocation stack passes through the front end.
Leaks of the Python runtime itself (objects it never frees at exit) are counted apart: the
front end's own C allocations show its frames (it is compiled with frame pointers); a Python
object it failed to release would not, which tests/test_fmu_hostile.py's RSS checks cover.

    python benchmarks/sanitize_front_end.py [--sequences 40] [--keep DIR]

Exit status 0 when there are no invalid accesses and no definite leaks in the front end.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import types
import zipfile
from pathlib import Path

from fmpy import extract, read_model_description

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
FLAGS = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address", "-fsanitize-recover=address"]
# the hostile host's patterns: (model, pattern, count)
PATTERNS = [("double_pendulum", "exit-free", None), ("double_pendulum", "locking-logger", 100),
            ("huang_two_link", "deserialize", 2000), ("double_pendulum", "cycles", 20),
            ("double_pendulum", "restore-after-terminate", None), ("double_pendulum", "after-discard", None),
            ("huang_two_link", "huge-step", None), ("double_pendulum", "bad-size", None)]
FUZZED = ["double_pendulum", "dc_motor", "fmi3-double_pendulum", "fmi3-dc_motor"]


def build_fmus(out: Path) -> dict[str, Path]:
    from flexmbs.fmi.build import build, build_component
    from flexmbs.model.catalog import models_dir

    fmus = {name: build(models_dir() / f"{name}.yaml", out).path for name in ("double_pendulum", "huang_two_link")}
    fmus["dc_motor"] = build_component("dc_motor", out).path
    out3 = out / "fmi3"
    fmus["fmi3-double_pendulum"] = build(models_dir() / "double_pendulum.yaml", out3, fmi_version=3).path
    fmus["fmi3-dc_motor"] = build_component("dc_motor", out3, fmi_version=3).path
    return fmus


def instrument(fmu: Path, out: Path) -> Path:
    """A copy of the FMU whose front end is built with AddressSanitizer."""
    from flexmbs.fmi.frontend import compile_front_end

    md = read_model_description(str(fmu))
    ident = md.coSimulation.modelIdentifier
    version = int(md.fmiVersion[0])
    platform = "linux64" if version == 2 else "x86_64-linux"
    with zipfile.ZipFile(fmu) as z:
        module = z.read("resources/slavemodule.txt").decode().strip()
        so = out / f"{ident}.so"
        # the FMU's own variables (FMI 3.0's independent variable follows them), as frontend reads them
        variables = [types.SimpleNamespace(type={"Float64": "Real"}.get(v.type, v.type)) for v in md.modelVariables
                     if v.causality != "independent"]
        why = compile_front_end(so, md.guid, variables, module, ident, flags=FLAGS, fmi_version=version)
        if why is not None:
            raise SystemExit(f"cannot build the instrumented front end: {why}")
        target = out / f"fmi{version}" / fmu.name
        target.parent.mkdir(exist_ok=True)
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as new:
            for item in z.infolist():
                binary = item.filename == f"binaries/{platform}/{ident}.so"
                new.writestr(item, so.read_bytes() if binary else z.read(item.filename))
    return target


def host_args(fmu: Path, folder: Path) -> list[str]:
    md = read_model_description(str(fmu))
    d = Path(extract(str(fmu), unzipdir=str(folder / fmu.stem)))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    torque = next(v.name for v in md.modelVariables if v.causality == "input" and v.name.endswith(".tau"))
    binary = d / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
    return [str(binary), (d / "resources").as_uri(), md.guid, str(vr[torque]), str(vr["elbow.q"])]


def sanitizer_runtime() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    path = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not Path(path).is_file():
        raise SystemExit("AddressSanitizer's runtime (libasan.so) is not installed with the C compiler")
    return path


def run(name: str, cmd: list[str], logs: Path, asan: str) -> tuple[int, int, int, int]:
    """One run under the sanitizer: (exit status, invalid accesses, definite leaks through the
    front end, other definite leaks)."""
    import os

    log = logs / name
    env = {**os.environ, "LD_PRELOAD": asan,
           "ASAN_OPTIONS": f"halt_on_error=0:detect_leaks=1:log_path={log}",
           "LSAN_OPTIONS": "exitcode=0"}
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env, timeout=3600)
    text = "".join(p.read_text(errors="replace") for p in logs.glob(f"{name}.*"))
    invalid = len(re.findall(r"ERROR: AddressSanitizer", text))
    ours = other = 0
    for report in re.split(r"\n(?=(?:Direct|Indirect) leak of)", text):
        if report.startswith("Direct leak of"):
            if re.search(r"flexmbs_fmi(2|3|_core)\.c|/binaries/(linux64|x86_64-linux)/\w+\.so", report):
                ours += 1
            else:
                other += 1
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-3000:], sep="\n")
    return proc.returncode, invalid, ours, other


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=40, help="fuzzer sequences per FMU")
    parser.add_argument("--keep", type=Path, help="keep the FMUs and the sanitizer's logs in this folder")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="sanitize_front_end_"))
    for sub in ("fmus", "asan", "logs", "unpacked"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    asan = sanitizer_runtime()
    plain = build_fmus(work / "fmus")
    fmus = {name: instrument(path, work / "asan") for name, path in plain.items()}
    host = work / "c_hostile"
    subprocess.run([shutil.which("cc") or "gcc", "-O1", "-g", "-o", str(host), str(TESTS / "c_hostile.c"), "-ldl",
                    "-lpthread", "-lm"], check=True)
    runs = [(f"{pattern}-{model}", [str(host), pattern, *host_args(fmus[model], work / "unpacked")]
             + ([str(n)] if n else [])) for model, pattern, n in PATTERNS]
    runs += [(f"fuzz-{model}", [sys.executable, str(TESTS / "fmi_fuzz.py"), str(fmus[model]), str(args.sequences), "5"])
             for model in FUZZED]
    totals = [0, 0, 0, 0]
    print(f"{'run':38s} {'exit':>4s} {'invalid':>8s} {'leaks(front end)':>17s} {'leaks(other)':>13s}")
    for name, cmd in runs:
        result = run(name, cmd, work / "logs", asan)
        print(f"{name:38s} {result[0]:4d} {result[1]:8d} {result[2]:17d} {result[3]:13d}", flush=True)
        totals = [a + (b != 0 if i == 0 else b) for i, (a, b) in enumerate(zip(totals, result))]
    print(f"{'total (failed runs, ...)':38s} {totals[0]:4d} {totals[1]:8d} {totals[2]:17d} {totals[3]:13d}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if totals[:3] == [0, 0, 0] else 1


if __name__ == "__main__":
    sys.exit(main())
