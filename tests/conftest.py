"""Shared fixtures: the FMUs of every model in models/ and of every block, built once per test
session into one folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from flexmbs.model.catalog import models_dir

ROOT = Path(__file__).resolve().parent.parent
MODELS = models_dir()
# the demos' designs (examples/designs.py) are example data, not package code; the benchmarks'
# models (benchmarks/models.py: the chain of coupled four-bars) are test mechanisms too
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))


@contextmanager
def _temporary_files_in(folder: Path):
    """TMPDIR and tempfile's default folder set to `folder` for this process and the processes
    it starts, restored on exit."""
    before = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = tempfile.tempdir = str(folder)
    try:
        yield
    finally:
        if before[0] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before[0]
        tempfile.tempdir = before[1]


@pytest.fixture(scope="session", autouse=True)
def scratch(tmp_path_factory):
    """Every temporary file of the session, of the tests and of the processes they start, in one
    folder removed at its end: fmpy extracts each FMU it opens into a new temporary folder
    (10-140 MB) that many hosts in the tests, like hosts in the field, never remove."""
    folder = tmp_path_factory.mktemp("scratch")
    with _temporary_files_in(folder):
        yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def module_scratch(scratch):
    """Each test module's temporary files in a folder of their own inside the session's,
    removed when the module ends, so that a session holds one module's extracted FMUs at a
    time, not all of them."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    with _temporary_files_in(folder):
        yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def fmus(tmp_path_factory) -> dict:
    """Model or block name -> Built FMU (or the exception its build raised), every models/*.yaml
    and every block built and validated with fmpy validate and fmutool -check."""
    from flexmbs.fmi.build import COMPONENTS, build, build_component

    out = tmp_path_factory.mktemp("fmus")
    built = {}
    for path in sorted(MODELS.glob("*.yaml")):
        try:
            built[path.stem] = build(path, out)
        except Exception as err:  # noqa: BLE001 - reported by the test that checks builds
            built[path.stem] = err
    for name in COMPONENTS:
        try:
            built[name] = build_component(name, out)
        except Exception as err:  # noqa: BLE001
            built[name] = err
    return built


@pytest.fixture(scope="session")
def fmu_path(fmus):
    """fmu_path(name) -> path of the built FMU of models/<name>.yaml."""
    def get(name: str) -> str:
        b = fmus[name]
        if isinstance(b, Exception):
            pytest.fail(f"the FMU of {name} did not build: {b}")
        return str(b.path)
    return get


@pytest.fixture(scope="session")
def fmu_dir(fmus, fmu_path) -> Path:
    """The folder holding every built FMU (as the servo assemblies expect); fails if one did not build."""
    for name in fmus:
        fmu_path(name)
    return Path(fmu_path(next(iter(fmus)))).parent


@pytest.fixture(scope="session")
def c_program(tmp_path_factory):
    """c_program(name, *libraries) -> tests/<name>.c compiled once with the system C compiler
    (skips the test when there is none)."""
    from flexmbs.fmi.frontend import compiler

    built: dict[str, Path] = {}

    def get(name: str, *libraries: str) -> Path:
        cc = compiler()
        if cc is None:
            pytest.skip(f"no C compiler (cc, gcc or $CC): {name}.c needs one")
        if name not in built:
            exe = tmp_path_factory.mktemp(name) / name
            source = Path(__file__).resolve().parent / f"{name}.c"
            subprocess.run([cc, "-O1", "-o", str(exe), str(source), *(f"-l{lib}" for lib in libraries)], check=True)
            built[name] = exe
        return built[name]
    return get


@pytest.fixture(scope="session")
def fmu3_path(tmp_path_factory):
    """fmu3_path(name) -> path of the FMI 3.0 FMU of models/<name>.yaml or of the block `name`,
    built (and validated with fmpy validate and fmutool -check) on first use."""
    from flexmbs.fmi.build import COMPONENTS, build, build_component

    out = tmp_path_factory.mktemp("fmus3")
    built: dict[str, str] = {}

    def get(name: str) -> str:
        if name not in built:
            made = (build_component(name, out, fmi_version=3) if name in COMPONENTS
                    else build(MODELS / f"{name}.yaml", out, fmi_version=3))
            built[name] = str(made.path)
        return built[name]
    return get
