"""A received FMU (issue "The FMU travels"): built here, run where the build's Python is not.

(a) from a second virtual environment at another path holding only numpy, scipy, numba,
    pyyaml, threadpoolctl and fmpy, with an empty cache: with this Python version it compiles nothing (the
    kernels it carries); with another minor version it compiles, and says so first;
(b) from a C host after the virtual environment it was built in is gone (the build record
    names a missing interpreter: the front end finds one on PATH); with no usable Python the
    instantiation fails with the one command that installs what is missing; a C host whose
    only Python is of another minor version starts it;
(c) the standalone build from a C host in a mount namespace where every Python installation
    is hidden, with an empty HOME: it compiles nothing;
(d) a planted package in a world-writable or foreign cache folder is refused and never imported.

Each run is compared with fmpy's run of the same FMU in this process, to 1e-12. Compiles are
counted by FLEXMBS_COMPILE_LOG (one line per function numba compiles), never timed. Slow
(virtual environments, builds): the venvs and FMUs are shared by the module's tests.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from importlib.metadata import requires, version
from pathlib import Path

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmu_tools import Slave

HERE = Path(__file__).resolve().parent
MODEL = "huang_two_link"
INPUTS = {"shoulder.tau": 0.3, "elbow.tau": -0.1}
OUTS = ["shoulder.q", "elbow.q", "shoulder.qd", "elbow.qd", "energy.total"]
H, N = 0.01, 10
# what a receiver installs: the FMU carries our sources and pythonfmu's
RECEIVER = ("numpy", "scipy", "numba", "llvmlite", "PyYAML", "threadpoolctl", "FMPy")

# a Python host: the FMU through fmpy, the rows and every message of the FMI logger
HOST = textwrap.dedent(f"""
    import json, sys
    import numpy as np
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
    path = sys.argv[1]
    md = read_model_description(path)
    vr = {{v.name: v.valueReference for v in md.modelVariables}}
    msgs = []
    cb = fmi2CallbackFunctions()
    cb.logger = fmi2CallbackLoggerTYPE(lambda env, name, status, cat, msg: msgs.append(msg.decode()))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=extract(path), modelIdentifier=md.coSimulation.modelIdentifier,
                    instanceName="received")
    try:
        fmu.instantiate(callbacks=cb)
    except Exception:
        print(json.dumps({{"instance": False, "messages": msgs}}))
        sys.exit(0)
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    if len(sys.argv) > 2:   # a solver method other than the file's
        fmu.setString([vr["solver.method"]], [sys.argv[2]])
    fmu.exitInitializationMode()
    inputs, outs = {INPUTS!r}, {OUTS!r}
    rows = []
    for k in range({N} + 1):
        fmu.setReal([vr[n] for n in inputs], list(inputs.values()))
        rows.append([k * {H}] + fmu.getReal([vr[n] for n in outs]))
        if k < {N}:
            fmu.doStep(currentCommunicationPoint=k * {H}, communicationStepSize={H})
    fmu.terminate()
    fmu.freeInstance()
    print(json.dumps({{"rows": rows, "messages": msgs, "flexmbs": sys.modules["flexmbs"].__file__}}))
""")


def _reference(path: str) -> np.ndarray:
    """fmpy's rows of the FMU in this process (the installed package): t and OUTS."""
    s = Slave(path, "reference")
    s.start()
    times, rows = s.run(0.0, N * H, H, OUTS, lambda t: INPUTS)
    s.close()
    return np.column_stack([times, rows])


def _compiles(log: Path) -> list[str]:
    return [json.loads(line)["function"] for line in log.read_text().splitlines()] if log.exists() else []


def _venv(python: str, folder: Path, pins: bool) -> Path:
    """A virtual environment of `python` at `folder` with just the receiver's packages (the
    versions installed here when `pins`, else the newest that fit); its python."""
    subprocess.run([python, "-m", "venv", str(folder)], check=True, capture_output=True)
    exe = folder / "bin" / "python"
    specs = [f"{d}=={version(d)}" if pins else d for d in RECEIVER]
    run = subprocess.run([str(exe), "-m", "pip", "install", "-q", *specs], capture_output=True, text=True)
    if run.returncode != 0:
        pytest.skip(f"the receiver's packages could not be installed from PyPI: {run.stderr[-500:]}")
    return exe


def _other_python() -> str | None:
    """An interpreter of another minor version than this one, with a shared libpython."""
    mine = "%d.%d" % sys.version_info[:2]
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")), reverse=True)
    found += [p for m in range(10, 15) if (p := shutil.which(f"python3.{m}"))]
    for exe in found:
        run = subprocess.run([exe, "-c", "import sys, sysconfig; print('%d.%d' % sys.version_info[:2], "
                              "sysconfig.get_config_var('Py_ENABLE_SHARED'))"], capture_output=True, text=True)
        got = run.stdout.split()
        if run.returncode == 0 and got[0] != mine and got[1] == "1" and tuple(map(int, got[0].split("."))) >= (3, 10):
            return exe
    return None


def _env(home: Path, **extra: str) -> dict[str, str]:
    """An environment with nothing of this one but PATH's system part and the temporary folder
    (the tests' own, removed after them): an empty HOME."""
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "PATH": "/usr/bin:/bin", "FLEXMBS_COMPILE_LOG": str(home / "compiles.jsonl"),
            "TMPDIR": tempfile.gettempdir(), **extra}


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("travel")


@pytest.fixture(scope="module")
def plant(work) -> dict:
    """The plant FMU built here, and fmpy's reference rows of it."""
    from flexmbs.fmi.build import build
    from flexmbs.model.catalog import resolve

    built = build(resolve(MODEL), work / "fmus")
    return {"path": str(built.path), "reference": _reference(str(built.path))}


@pytest.fixture(scope="module")
def same_venv(work) -> Path:
    return _venv(sys._base_executable, work / "venv same", pins=True)


@pytest.fixture(scope="module")
def other_venv(work) -> Path:
    """A venv of another minor version of Python with the receiver's packages (the newest)."""
    other = _other_python()
    if other is None:
        pytest.skip("no Python of another minor version with a shared libpython on this machine")
    return _venv(other, work / "venv other", pins=False)


@pytest.fixture(scope="module")
def c_host(work) -> Path:
    from flexmbs.fmi.frontend import compiler

    cc = compiler()
    if cc is None:
        pytest.skip("no C compiler (cc, gcc or $CC): the C host tests need one")
    exe = work / "c_host"
    subprocess.run([cc, "-O1", "-o", str(exe), str(HERE / "c_host.c"), "-ldl"], check=True)
    return exe


def _stack(python: Path) -> tuple[str, str]:
    """(numpy, scipy) versions of an interpreter's environment."""
    run = subprocess.run([str(python), "-c", "import numpy, scipy; print(numpy.__version__, scipy.__version__)"],
                         capture_output=True, text=True, check=True)
    numpy_version, scipy_version = run.stdout.split()
    return numpy_version, scipy_version


def _python_host(python: Path, fmu: str, env: dict, first: str = "", method: str | None = None) -> dict:
    """HOST's run of `fmu` in `python`, after the statement `first`, with the solver `method`
    set at initialisation (None: the file's)."""
    run = subprocess.run([str(python), "-c", first + "\n" + HOST, fmu, *([method] if method else [])],
                         capture_output=True, text=True, env=env, timeout=1500)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert "rows" in got, got
    return got


def _c_args(c_host: Path, fmu: str, folder: Path) -> list[str]:
    md = read_model_description(fmu)
    extract(fmu, unzipdir=str(folder))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    binary = folder / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
    return [str(c_host), str(binary), (folder / "resources").as_uri(), md.guid, repr(H), str(N), str(len(INPUTS)),
            *(str(vr[k]) for k in INPUTS), *(repr(v) for v in INPUTS.values()), str(len(OUTS)),
            *(str(vr[k]) for k in OUTS)]


def _rows(stdout: str) -> np.ndarray:
    return np.array([[float(x) for x in line.split()] for line in stdout.splitlines()])


def test_a_received_fmu_in_another_venv_of_this_python_compiles_nothing(plant, same_venv, work) -> None:
    """(a) Another venv at another path, only the receiver's packages (no flexmbs, no
    pythonfmu), an empty cache: the FMU runs its own sources with the kernels it carries."""
    lacks = subprocess.run([str(same_venv), "-c", "import importlib.util as u; "
                            "print(u.find_spec('flexmbs'), u.find_spec('pythonfmu'))"], capture_output=True, text=True)
    assert lacks.stdout.split() == ["None", "None"], lacks.stdout
    home = work / "home a"
    got = _python_host(same_venv, plant["path"], _env(home))
    assert Path(got["flexmbs"]).parts[-3:-1] == ("python", "flexmbs")      # the FMU's own copy
    assert np.max(np.abs(np.array(got["rows"]) - plant["reference"])) <= 1e-12
    assert _compiles(home / "compiles.jsonl") == []
    generic = list(home.glob(".cache/flexmbs/numba/*/generic"))
    assert generic and all(oct(p.stat().st_mode)[-3:] == "700" for p in (*generic, home / ".cache" / "flexmbs"))


@pytest.mark.parametrize("method", ["radau", "implicit"])
def test_a_received_fmu_switched_to_another_method_compiles_nothing(plant, same_venv, work, method) -> None:
    """(a) again, with the solver.method parameter set to each method the file does not use
    (Huang's arm runs dopri5; RK4 at its default step is past its stability bound): the FMU
    carries every method's kernels, so the receiver compiles nothing, and the joints agree with
    the file's method within 1e-4 rad over 0.1 s."""
    home = work / f"home {method}"
    got = _python_host(same_venv, plant["path"], _env(home), method=method)
    assert _compiles(home / "compiles.jsonl") == []
    rows = np.array(got["rows"])
    assert np.max(np.abs(rows[:, 1:3] - plant["reference"][:, 1:3])) < 1e-4


def test_a_script_that_imports_flexmbs_runs_on_the_kernels_the_build_compiled(plant, work) -> None:
    """The builder's machine after a build: its cache holds the kernels the build compiled (for
    numba's generic CPU, the ones the FMU carries) and nothing else. A script that imports
    flexmbs and runs the FMU (in its own process, as the servo demo does) compiles nothing: it
    compiles for the same CPU (flexmbs._cache.choose_cpu_target), so one compile serves both."""
    import flexmbs
    from flexmbs._cache import kernel_cache, private_folder

    home = work / "home builder"
    env = _env(home)
    with pytest.MonkeyPatch.context() as patch:   # the folder flexmbs picks under that home
        patch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        generic = kernel_cache(Path(flexmbs.__file__).resolve().parent) / "generic"
    folder = work / "unpacked builder"
    extract(plant["path"], unzipdir=str(folder))
    carried = folder / "resources" / "kernels"
    manifest = json.loads((carried / "manifest.json").read_text())
    for rel in manifest["files"]:
        target = private_folder(generic, *Path(rel).parent.parts)
        shutil.copyfile(carried / rel, target / Path(rel).name)
    got = _python_host(Path(sys.executable), plant["path"], env, first="import flexmbs")
    assert Path(got["flexmbs"]).parent == Path(flexmbs.__file__).parent    # the script's own flexmbs
    assert np.max(np.abs(np.array(got["rows"]) - plant["reference"])) <= 1e-12
    assert _compiles(home / "compiles.jsonl") == []


# a Python host that runs two FMUs in one process, one after the other: t and its outputs of each
TWO_HOSTED = textwrap.dedent("""
    import json, sys
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    runs = []
    for path in sys.argv[1:]:
        md = read_model_description(path)
        outs = [v.valueReference for v in md.modelVariables if v.causality == "output"][:4]
        fmu = FMU2Slave(guid=md.guid, unzipDirectory=extract(path), modelIdentifier=md.coSimulation.modelIdentifier,
                        instanceName=md.modelName)
        fmu.instantiate()
        fmu.setupExperiment(startTime=0.0)
        fmu.enterInitializationMode()
        fmu.exitInitializationMode()
        for k in range(5):
            fmu.doStep(currentCommunicationPoint=k * 1e-3, communicationStepSize=1e-3)
        runs.append(fmu.getReal(outs))
        fmu.terminate()
        fmu.freeInstance()
    print(json.dumps(runs))
""")


def test_two_plants_of_other_routes_in_one_process_run_on_what_they_carry(plant, fmu_path, same_venv, work) -> None:
    """A receiver that runs a plant of the recursive tree route and one of the loops route in
    one Python process (a system of two plants), from an empty cache: each FMU carries the
    cache entries of its own route alone, and the second, placed once the first has loaded
    numba, joins its entries to the first's index files: nothing compiles (the second compiled
    its route's kernels for about 90 s when its index files were put over the first's, or not
    put in at all). Both orders, and a process whose first FMU finds the index files of both."""
    tree, loops = plant["path"], fmu_path("four_bar")
    # a fresh cache in each order; then the first order's cache again, where the first FMU's
    # entries join the index files both left (before numba is loaded) and the second's are kept
    for folder, fmus in [("a", (tree, loops)), ("b", (loops, tree)), ("a", (loops, tree))]:
        home = work / f"home two {folder}"
        run = subprocess.run([str(same_venv), "-c", TWO_HOSTED, *fmus], capture_output=True, text=True,
                             env=_env(home), timeout=1500)
        assert run.returncode == 0, run.stderr[-3000:]
        runs = json.loads(run.stdout.strip().splitlines()[-1])
        assert len(runs) == 2 and all(np.all(np.isfinite(r)) for r in runs)
        assert _compiles(home / "compiles.jsonl") == [], fmus


TWICE = textwrap.dedent("""
    import json, sys
    from fmpy import simulate_fmu
    ends = []
    for _ in range(2):   # fmpy unpacks the FMU anew each time and removes the folder after the run
        r = simulate_fmu(sys.argv[1], stop_time=0.005, output_interval=1e-3, output=["shoulder.q", "elbow.q"])
        ends.append([float(r["shoulder.q"][-1]), float(r["elbow.q"][-1])])
    print(json.dumps(ends))
""")


def test_a_python_host_without_flexmbs_runs_one_fmu_twice(plant, same_venv, work) -> None:
    """fmpy's simulate_fmu called twice on one FMU in a process without flexmbs (a parameter
    loop): the second run imports nothing new and ends where the first did. It was refused,
    "this process already imported flexmbs ... (files missing)": the check looked for the
    first run's sources on disk, in the folder fmpy had removed, not in memory (a new user's
    trial, stop 52)."""
    run = subprocess.run([str(same_venv), "-c", TWICE, plant["path"]], capture_output=True, text=True,
                         env=_env(work / "home twice"), timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    first, second = json.loads(run.stdout.strip().splitlines()[-1])
    assert first == second and all(np.isfinite(first)), (first, second)


def test_a_python_host_with_only_fmpy_is_told_what_to_install(plant, work) -> None:
    """A Python host whose interpreter has fmpy alone: no instance, and the FMI logger names
    what is missing and the one command that installs it."""
    folder = work / "venv fmpy"
    subprocess.run([sys._base_executable, "-m", "venv", str(folder)], check=True, capture_output=True)
    python = folder / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"FMPy=={version('FMPy')}"], check=True,
                   capture_output=True)
    run = subprocess.run([str(python), "-c", HOST, plant["path"]], capture_output=True, text=True,
                         env=_env(work / "home fmpy"), timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    message = " ".join(got["messages"])
    declared = next(r for r in requires("flexmbs") if r.startswith("numba"))[len("numba"):]
    named = re.search(r"numba([^ ]*) \(not installed\)", message)
    command = re.search(f'"{re.escape(str(python))}" -m pip install "llvmlite" "numba([^"]*)"', message)
    assert got.get("instance") is False and named and command, message
    for spec in (named.group(1), command.group(1)):   # the bound flexmbs declares, clause by clause
        assert set(spec.split(",")) == set(declared.split(",")), (spec, declared)


def test_a_received_fmu_in_another_python_compiles_after_saying_so(plant, other_venv, work) -> None:
    """(a) Another minor version: the carried kernels do not fit; the FMI logger says what
    is compiled and about how long it takes, at instantiation, and the results agree."""
    home = work / "home other"
    got = _python_host(other_venv, plant["path"], _env(home))
    notice = [m for m in got["messages"] if "compiling the numba kernels" in m]
    assert notice and "s of CPU" in notice[0], got["messages"]
    # 1e-12 where the receiver's numpy and scipy are the builder's; the lowest-bounds job's
    # builder has older ones than the other Python can install, whose LAPACK gives the flexible
    # body's modes other last bits (2e-12 after 0.1 s measured there)
    same = _stack(Path(sys.executable)) == _stack(other_venv)
    tol = 1e-12 if same else 1e-10
    assert np.max(np.abs(np.array(got["rows"]) - plant["reference"])) <= tol
    assert _compiles(home / "compiles.jsonl")


def test_a_c_host_finds_a_python_when_the_build_venv_is_gone(plant, same_venv, c_host, work) -> None:
    """(b) Built in a venv that is then deleted: the record names an interpreter that is gone;
    the C host finds python3 on PATH (the receiver's venv) and runs the plant; with only a
    bare Python on PATH, no instance and a message naming the command that installs the rest."""
    from flexmbs.model.catalog import resolve

    gone = work / "venv gone"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(gone)], check=True)
    site = subprocess.run([str(gone / "bin" / "python"), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    here = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "here.pth").write_text("\n".join(here) + "\n")     # this venv's packages, by a .pth file
    build = f"from flexmbs.fmi.build import build; build({str(resolve(MODEL))!r}, {str(work / 'gone')!r})"
    built = subprocess.run([str(gone / "bin" / "python"), "-c", build], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    fmu = str(work / "gone" / f"{MODEL}.fmu")
    shutil.rmtree(gone)
    args = _c_args(c_host, fmu, work / "unpacked gone")
    env = _env(work / "home b")
    env["PATH"] = f"{same_venv.parent}:/usr/bin:/bin"
    run = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1500)
    assert run.returncode == 0, run.stderr[-3000:]
    assert np.max(np.abs(_rows(run.stdout) - plant["reference"])) <= 1e-12

    bare = work / "venv bare"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    env["PATH"] = str(bare / "bin")
    run = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 4, run.stderr
    assert "does not exist" in run.stderr and f'"{bare / "bin" / "python3"}" -m pip install' in run.stderr
    assert '"numba>=' in run.stderr and '"PyYAML>=' in run.stderr


def test_a_c_host_starts_a_python_of_another_minor_version(plant, other_venv, c_host, work) -> None:
    """A C host whose only Python is of another minor version than the build's: the front end
    (compiled against the build's headers) starts it through the older initialisation API and
    runs the plant (the kernels that interpreter compiled in the test above are reused)."""
    env = _env(work / "home other")
    env["PATH"] = f"{other_venv.parent}:/usr/bin:/bin"
    run = subprocess.run(_c_args(c_host, plant["path"], work / "unpacked other"), capture_output=True, text=True,
                         env=env, timeout=1500)
    assert run.returncode == 0, run.stderr[-3000:]
    assert np.max(np.abs(_rows(run.stdout) - plant["reference"])) <= 1e-12


def _hidden(command: list[str]) -> list[str]:
    """`command` in a new mount namespace where every Python installation is hidden: tmpfs over
    the interpreters' folders, /dev/null over every libpython and python executable."""
    folders = {Path(sys.base_prefix).parent, Path(sys.prefix), *map(Path, glob.glob("/usr/lib/python3*")),
               *map(Path, glob.glob("/usr/local/lib/python3*"))}
    files = [f for pattern in ("/usr/lib/x86_64-linux-gnu/libpython3*", "/usr/local/lib/libpython3*",
                               "/usr/bin/python3*", "/usr/local/bin/python3*") for f in glob.glob(pattern)]
    script = "set -e\n" + "".join(f"mount -t tmpfs tmpfs '{d}'\n" for d in sorted(folders) if d.is_dir())
    script += "".join(f"mount --bind /dev/null '{f}'\n" for f in files if not os.path.islink(f))
    script += 'if python3 -c pass 2>/dev/null; then echo "a Python is still visible" >&2; exit 97; fi\nexec "$@"\n'
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "hide", *command]


def test_the_standalone_fmu_runs_where_no_python_is(plant, c_host, work) -> None:
    """(c) --standalone: the C host in a namespace without any Python and with an empty HOME
    runs the plant with the runtime and the kernels the FMU carries: nothing compiled."""
    from flexmbs.fmi.build import build
    from flexmbs.model.catalog import resolve

    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode != 0:
        pytest.skip("no mount namespace here (unshare from util-linux, as root)")
    built = build(resolve(MODEL), work / "standalone", standalone=True)
    args = _c_args(c_host, str(built.path), work / "unpacked standalone")
    home = work / "home c"
    run = subprocess.run(_hidden(args), capture_output=True, text=True, env=_env(home), timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert np.max(np.abs(_rows(run.stdout) - plant["reference"])) <= 1e-12
    assert _compiles(home / "compiles.jsonl") == []


@pytest.mark.parametrize("how", ["writable by others", "another user's"])
def test_a_planted_package_in_the_fallback_cache_folder_is_refused(plant, work, how) -> None:
    """(d) The home cache cannot be written; the fallback $TMPDIR/flexmbs-<uid> was created by
    someone else (another owner, or writable by all) with a planted yaml package in it and in
    the folders the FMU would use: the folder is refused with a logged reason, the FMU runs
    from a fresh private folder, and the planted package is never imported."""
    tmp = work / f"tmp {how}"
    marker = work / f"imported {how}"
    fallback = tmp / f"flexmbs-{os.getuid()}"
    for folder in (fallback, fallback / "bundles" / "x", fallback / "numba"):
        (folder / "yaml").mkdir(parents=True, exist_ok=True)
        (folder / "yaml" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    for path in (*fallback.rglob("*"), fallback):
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    os.chmod(tmp, 0o1777)                       # as /tmp: anyone may create, the sticky bit keeps it theirs
    if how == "another user's":
        for path in (fallback, *fallback.rglob("*")):
            os.chown(path, 12345, 12345)
        os.chmod(fallback, 0o755)
    blocker = work / f"home file {how}"
    blocker.write_text("")                      # a file where the home cache should be
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}    # this process set it
    env.update(TMPDIR=str(tmp), XDG_CACHE_HOME=str(blocker), FLEXMBS_FMU_SOURCES="bundle")
    run = subprocess.run([sys.executable, "-c", HOST, plant["path"]], capture_output=True, text=True, env=env,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert np.max(np.abs(np.array(got["rows"]) - plant["reference"])) <= 1e-12
    reason = "may be written by other users" if how == "writable by others" else "belongs to another user"
    assert reason in run.stderr and str(fallback) in run.stderr, run.stderr[-3000:]
    assert not marker.exists()


def test_the_machines_own_kernels_are_preferred_to_the_carried_ones(tmp_path) -> None:
    """ready_kernels (as the slave module runs it, before numba is imported): with FLEXMBS_CPU=host
    and every index file the FMU carries already cached for the host CPU, numba keeps the host's
    kernels; by default, or with one missing, the carried generic ones are put in place
    (verified) and numba is told to use the generic CPU; a carried file that does not match its
    digest is refused. Where the host loaded numba first, for its own CPU, the host's kernels
    serve when all are cached, else the FMU's notice says its kernels compile."""
    import hashlib

    from flexmbs._cache import kernel_cache
    from flexmbs.fmi.build import _MODULE, _chooser_source

    carried = tmp_path / "kernels"
    names = ["flexmbs/solvers/common.f_eval-49.py311.nbi", "flexmbs/solvers/common.f_eval-49.py311.1.nbc"]
    for name in names:
        (carried / name).parent.mkdir(parents=True, exist_ok=True)
        (carried / name).write_bytes(name.encode())
    here = "%d.%d" % sys.version_info[:2]
    manifest = {"python": here, "numba": version("numba"), "machine": __import__("platform").machine(),
                "files": {n: hashlib.sha256(n.encode()).hexdigest() for n in names}, "index": names[:1],
                "seconds": 10.0}
    # the generated slave module's own imports, then what it runs before flexmbs is imported
    header = [line for line in _MODULE.split("\nBUNDLE = ")[0].splitlines()
              if line.startswith(("import ", "from ")) and "__future__" not in line]
    code = "\n".join(header) + textwrap.dedent("""
        exec(open(sys.argv[1]).read())
        notice = ready_kernels(Path(sys.argv[2]), Path(sys.argv[3]), json.loads(sys.argv[4]))
        print(json.dumps([notice, os.environ.get("NUMBA_CPU_NAME"), "numba" in sys.modules]))
    """)
    source = tmp_path / "chooser.py"
    source.write_text("from __future__ import annotations\n" + _chooser_source())

    def ready(cache: Path | None, kernels: dict, before: str = "", **extra: str) -> list:
        """ready_kernels' notice, NUMBA_CPU_NAME after it and whether numba is loaded, with the
        cache folder NUMBA_CACHE_DIR=cache (None: unset, flexmbs' own folder under XDG_CACHE_HOME)."""
        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_NAME", "FLEXMBS_CPU", "NUMBA_CACHE_DIR")}
        env.update({"NUMBA_CACHE_DIR": str(cache)} if cache is not None else {}, **extra)
        run = subprocess.run([sys.executable, "-c", before + code, str(source), str(carried), str(tmp_path),
                              json.dumps(kernels)], capture_output=True, text=True, env=env)
        assert run.returncode == 0 or "damaged" in run.stderr, run.stderr
        return json.loads(run.stdout) if run.returncode == 0 else ["damaged", None, False]

    host = tmp_path / "with host"
    (host / "host" / names[0]).parent.mkdir(parents=True)
    (host / "host" / names[0]).write_bytes(b"the host's own index")
    assert ready(host, manifest, FLEXMBS_CPU="host") == ["", None, False]
    assert not (host / "generic").exists()
    # by default flexmbs compiles for the generic CPU (_cache.choose_cpu_target): the carried ones serve
    assert ready(host, manifest) == ["", "generic", False]
    assert all((host / "generic" / n).read_bytes() == n.encode() for n in names)
    fresh = tmp_path / "without"
    assert ready(fresh, manifest) == ["", "generic", False]
    assert all((fresh / "generic" / n).read_bytes() == n.encode() for n in names)
    assert oct((fresh / "generic").stat().st_mode)[-3:] == "700"
    bad = dict(manifest, files={**manifest["files"], names[1]: "0" * 64})
    assert ready(tmp_path / "bad", bad)[0] == "damaged"
    # numba loaded by the host before the FMU, for its own CPU: the host's kernels serve where they
    # are all cached, else the FMU says that its kernels compile
    assert ready(host, manifest, before="import numba\n") == ["", None, True]
    notice, cpu, _ = ready(tmp_path / "loaded", manifest, before="import numba\n")
    assert "numba was loaded in this process before this FMU" in notice and "compile" in notice and cpu is None
    # ... also where the host set no cache folder: the one flexmbs will choose is looked in
    xdg = tmp_path / "xdg"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(xdg))
        own = kernel_cache(tmp_path)
    (own / "host" / names[0]).parent.mkdir(parents=True)
    (own / "host" / names[0]).write_bytes(b"the host's own index")
    assert ready(None, manifest, before="import numba\n", XDG_CACHE_HOME=str(xdg)) == ["", None, True]
    other = dict(manifest, python="2.7")
    notice, cpu, _ = ready(tmp_path / "other", other)
    # they compile, for the target flexmbs chooses by default (_cache.choose_cpu_target)
    assert "compiling the numba kernels" in notice and "Python 2.7" in notice and cpu == "generic"
