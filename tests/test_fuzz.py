"""Fuzzing the model loader (issue 13): structural and byte-level mutations of the shipped model
files and hostile files. Every outcome must be a Model or a ModelError (API), or a clean CLI
message with exit status 1 and no traceback (`flexmbs check`, in-process through click's
CliRunner, plus a few real processes), each within a time limit per file.

The budget (examples per test, per-example deadline) keeps the file well under a minute on a
busy two-core machine; raise FUZZ_EXAMPLES to fuzz longer locally.
"""

from __future__ import annotations

import copy
import math
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flexmbs import ModelError, load_model
from flexmbs.cli import main
from flexmbs.model.catalog import shipped_models
from flexmbs.compile import compile_model

from test_bad_input import HOSTILE, within

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
SHIPPED = {name: path.read_bytes() for name, path in shipped_models().items()}
PARSED = {name: yaml.safe_load(text) for name, text in SHIPPED.items()}
FUZZ = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=10), database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Replacement values: wrong types, non-finite and extreme numbers, empty and odd containers.
# Integers stay small or absurd (never a large-but-accepted mesh, which would only be slow).
ODD = st.sampled_from([None, True, False, 0, -1, 1, 3, 10**30, -(10**30), 0.0, -0.5, 1e-300, 1e300, 1.27e298,
                       math.nan, math.inf, -math.inf, "", "x", "ground", "origin", [], [0], [1, 2, 3],
                       [[1, 0, 0], [0, 1, 0], [0, 0, 1]], {}, {"unknown": 1}, {"type": "beam"}])


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key/index path into parsed YAML data."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, prefix + (i,))
    return out


PATHS = {name: _paths(data) for name, data in PARSED.items()}


@st.composite
def structural_mutation(draw) -> tuple[str, bytes]:
    """A shipped model with one to three entries replaced, deleted, duplicated or given an
    unknown key, dumped back to YAML."""
    name = draw(st.sampled_from(sorted(PARSED)))
    data = copy.deepcopy(PARSED[name])
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        action = draw(st.sampled_from(["replace", "delete", "duplicate", "unknown key"]))
        if action == "replace":
            parent[key] = copy.deepcopy(draw(ODD))  # a later mutation must not edit the constant
        elif action == "delete":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif isinstance(parent[key], dict):
            parent[key]["not_a_key"] = copy.deepcopy(draw(ODD))
    return name, yaml.safe_dump(data, allow_unicode=True).encode()


@st.composite
def byte_mutation(draw) -> tuple[str, bytes]:
    """A shipped model file with a few bytes overwritten, inserted or deleted (any byte value:
    control characters, invalid UTF-8, YAML indicators)."""
    name = draw(st.sampled_from(sorted(SHIPPED)))
    data = bytearray(SHIPPED[name])
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["set", "insert", "delete"]))
        if action == "set":
            data[at] = draw(st.integers(0, 255))
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4) | st.sampled_from(
                [b"&a ", b"*a", b"[", b"{", b"\x00", b"\t", b"!!python/object ", b"<<: ", b"\xff\xfe"]))
        else:
            del data[at:at + draw(st.integers(1, 8))]
    return name, bytes(data)


def assert_model_or_model_error(path: Path, seconds: int = 10) -> None:
    with within(seconds):
        try:
            load_model(path)
        except ModelError as err:
            assert str(err) and all(issue.file == str(path) for issue in err.issues), str(err)


def cli_check(path: Path) -> Any:
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart
        runner = CliRunner()
    with within(30):
        return runner.invoke(main, ["check", str(path)])


def assert_clean_cli(result) -> None:
    """Exit 0 (valid), or 1 with an `Error:` message and no traceback."""
    assert result.exit_code in (0, 1), (result.exit_code, result.stdout, result.stderr, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    if result.exit_code == 1:
        assert result.stderr.startswith("Error: "), result.stderr


@FUZZ
@given(structural_mutation())
def test_structural_mutations_are_models_or_model_errors(tmp_path: Path, case: tuple[str, bytes]) -> None:
    path = tmp_path / f"{case[0]}.yaml"
    path.write_bytes(case[1])
    assert_model_or_model_error(path)


@FUZZ
@given(byte_mutation())
def test_byte_mutations_are_models_or_model_errors(tmp_path: Path, case: tuple[str, bytes]) -> None:
    path = tmp_path / f"{case[0]}.yaml"
    path.write_bytes(case[1])
    assert_model_or_model_error(path)


@pytest.fixture(scope="module")
def compiled_kernels() -> None:
    """Compile (or load from numba's cache) the loop kernels that `check` runs on loop models,
    so that the per-example deadline measures the check, not a one-time compilation."""
    compile_model(load_model("four_bar"))


@settings(FUZZ, max_examples=max(5, EXAMPLES // 4))
@given(st.one_of(structural_mutation(), byte_mutation()))
def test_flexmbs_check_on_mutations_exits_cleanly(tmp_path: Path, compiled_kernels: None,
                                                   case: tuple[str, bytes]) -> None:
    """`flexmbs check` loads and compiles: a mutation that loads must compile or fail cleanly."""
    path = tmp_path / f"{case[0]}.yaml"
    path.write_bytes(case[1])
    assert_clean_cli(cli_check(path))


@pytest.mark.parametrize("content", [case[1] for case in HOSTILE], ids=[case[0] for case in HOSTILE])
def test_flexmbs_check_on_hostile_files(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_bytes(content)
    result = cli_check(path)
    assert result.exit_code == 1
    assert_clean_cli(result)
    assert result.stderr.startswith(f"Error: invalid model: {path}"), result.stderr


def test_flexmbs_check_in_real_processes(tmp_path: Path) -> None:
    """The console script itself (no CliRunner) on three hostile files and a device."""
    cases = {name: content for name, content, *_ in HOSTILE
             if name in ("deep nesting", "non-UTF-8 bytes", "NUL character")}
    exe = Path(sys.executable).with_name("flexmbs")
    targets = []
    for k, content in enumerate(cases.values()):
        targets.append(tmp_path / f"m{k}.yaml")
        targets[-1].write_bytes(content)
    for target in [*targets, Path("/dev/zero")]:
        run = subprocess.run([str(exe), "check", str(target)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
        assert run.stderr.startswith(f"Error: invalid model: {target}"), run.stderr
