"""Shared fixtures: the FMUs of every model in models/, built once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"


@pytest.fixture(scope="session")
def fmus(tmp_path_factory) -> dict:
    """Model name -> Built FMU (or the exception its build raised), every models/*.yaml built
    and validated with fmpy validate and fmutool -check."""
    from flexmbs_fmu.build import build

    out = tmp_path_factory.mktemp("fmus")
    built = {}
    for path in sorted(MODELS.glob("*.yaml")):
        try:
            built[path.stem] = build(path, out)
        except Exception as err:  # noqa: BLE001 - reported by the test that checks builds
            built[path.stem] = err
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
