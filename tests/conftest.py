"""Shared fixtures: the FMUs of every model in models/ and of every block, built once per test
session into one folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flexmbs.model.catalog import models_dir

ROOT = Path(__file__).resolve().parent.parent
MODELS = models_dir()
# the demos' designs (examples/designs.py) are example data, not package code; the benchmarks'
# models (benchmarks/models.py: the chain of coupled four-bars) are test mechanisms too
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))


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
