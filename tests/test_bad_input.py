"""Bad input never hangs, crashes or silently answers wrong (issue 13): hostile model files,
data files outside the model's folder, out-of-range numbers, every faulty argument of simulate,
linearize, equilibrium and modes, references to segmented beams, and loop assembly corrections.

Each fault must give the package's error naming what and where, within a time limit; the
physics checks compare against closed forms (Freudenstein's four-bar equation) and limits.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import sys
import warnings
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import flexmbs
from flexmbs import ModelError, load_model
from flexmbs.compile import AssemblyWarning
from flexmbs.model import Body, Joint, Marker, Material, Model, Section, model_from_dict, validate
from flexmbs.model import catalog
from flexmbs.model.catalog import models_dir
from flexmbs.model.errors import PlausibilityWarning
from flexmbs.model.loader import FILE_LIMITS
from flexmbs.model.paths import set_value
from flexmbs.compile import compile_model

MODELS = models_dir()
HUANG = (MODELS / "huang_two_link.yaml").read_text()


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Fail the test if the block runs longer than `seconds` (SIGALRM: Python-level hangs)."""
    def expire(signum, frame):
        raise TimeoutError(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def load_error(path: Path, seconds: int = 10) -> ModelError:
    with within(seconds), pytest.raises(ModelError) as info:
        load_model(path)
    return info.value


# ---------------------------------------------------------------- hostile model files

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))
MERGE_BOMB = "a: &a {k: 1}\n" + "".join(
    f"{b}: &{b} {{<<: [*{a}, *{a}, *{a}, *{a}]}}\n" for a, b in zip("abcdefghijklmnopqrst", "bcdefghijklmnopqrstu"))

HOSTILE = [
    ("billion laughs", BOMB.encode(), "with every alias expanded", None),
    ("merge-key bomb", MERGE_BOMB.encode(), "with every alias expanded", None),
    ("recursive alias", b"a: &a [*a]\n", "contains it", 1),
    # PyYAML >= 6.0.4 refuses this depth itself before our limit is reached: only the
    # behaviour (one ModelError naming the file and line) is asserted, not whose words say it
    ("deep nesting", b"name: m\nbodies: " + b"[" * 5000 + b"]" * 5000 + b"\n", None, 2),
    ("nesting past our limit", b"name: m\nbodies: " + b"[" * (FILE_LIMITS.depth + 5)
     + b"]" * (FILE_LIMITS.depth + 5) + b"\n", f"nested more than {FILE_LIMITS.depth} levels", 2),
    ("5000-digit integer", b"name: m\ngravity: [0, 0, " + b"9" * 5000 + b"]\n", "characters", 2),
    ("long value", b"name: " + b"x" * (FILE_LIMITS.scalar + 1) + b"\n", "characters", 1),
    ("NUL character", b"name: m\ndescription: a\x00b\n", "U+0000", 2),
    ("control character", b"name: m\n\x1bdescription: a\n", "U+001B", 2),
    ("non-UTF-8 bytes", b"name: m\ndescription: caf\xe9\n", "not UTF-8", 2),
    ("impossible date", b"name: m\ndescription: 2001-13-45\n", "month must be", 2),
    ("file too large", b"# " + b"x" * FILE_LIMITS.bytes + b"\n", "limit", None),
]


@pytest.mark.parametrize("content, words, line", [case[1:] for case in HOSTILE],
                         ids=[case[0] for case in HOSTILE])
def test_hostile_file_is_a_model_error_with_file_and_line(tmp_path: Path, content: bytes, words: str | None,
                                                           line: int | None) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(content)
    err = load_error(path)
    assert len(err.issues) == 1 and err.issues[0].file == str(path)
    if words is not None:
        assert words in err.issues[0].message, str(err)
    if line is not None:
        assert err.issues[0].line == line, str(err)


def test_devices_fifos_and_folders_are_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "model.yaml"
    os.mkfifo(fifo)
    for path in (Path("/dev/zero"), fifo, tmp_path):
        assert "not a regular file" in str(load_error(path, seconds=5))


def test_aliases_within_the_limits_still_work(tmp_path: Path) -> None:
    """Sharing a material by an alias (and a merge key) is fine: the bounds refuse bombs only."""
    text = HUANG.replace("material: {", "material: &steel {", 1)
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert load_model(path).body("link2").material.E == pytest.approx(6.9e10)


def test_a_null_list_of_names_is_a_model_error() -> None:
    """Found by the fuzzer: `independent: null` raised a KeyError while describing the type."""
    with pytest.raises(ModelError, match=r"loops.independent: expected a list of texts, got None"):
        model_from_dict({"loops": {"independent": None}})


# ---------------------------------------------------------------- data files

PLATE_MODEL = """
name: plate_on_ground
bodies:
  - {{name: plate, type: superelement, {files}, modes: 2, markers: [{{name: n, node: 1}}]}}
joints:
  - {{name: weld, type: fixed, parent: ground, parent_marker: origin, child: plate, child_marker: n}}
"""


def plate_arrays() -> dict:
    """Two nodes joined by unit springs, unit masses: a valid 12-DOF superelement."""
    M = np.eye(12)
    K = np.kron(np.array([[1.0, -1.0], [-1.0, 1.0]]), np.eye(6)) + 1e-3 * np.eye(12)
    return dict(M=M, K=K, nodes=np.array([[0.0, 0, 0], [1.0, 0, 0]]))


def test_data_files_outside_the_model_folder_need_the_opt_in(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    np.savez(outside / "plate.npz", **plate_arrays())
    home = tmp_path / "model"
    home.mkdir()
    (home / "link.npz").symlink_to(outside / "plate.npz")
    for name in ("../elsewhere/plate.npz", str(outside / "plate.npz"), "link.npz"):
        path = home / "m.yaml"
        path.write_text(PLATE_MODEL.format(files=f"file: {name}"))
        err = load_error(path)
        assert err.issues[0].path == "bodies[0] 'plate'.file"
        assert "outside the model's folder" in err.issues[0].message and "allow_outside" in err.issues[0].message
        loaded = load_model(path, allow_outside=True).body("plate").file
        assert os.path.realpath(loaded) == str(outside / "plate.npz")


def test_data_file_errors_never_print_the_file_contents(tmp_path: Path) -> None:
    secret = "root:x:0:0:SECRET-LINE:/root:/bin/bash"
    (tmp_path / "nodes.txt").write_text(secret + "\n")
    (tmp_path / "M.mtx").write_text(secret + "\n")
    (tmp_path / "plate.npz").write_text(secret + "\n")
    np.savetxt(tmp_path / "good_nodes.txt", plate_arrays()["nodes"])
    cases = {
        "nodes_file": ("mass_file: M.mtx, stiffness_file: M.mtx, nodes_file: nodes.txt", "line 1, value 1"),
        "mass_file": ("mass_file: M.mtx, stiffness_file: M.mtx, nodes_file: good_nodes.txt", "cannot be read"),
        "file": ("file: plate.npz", "cannot be read as .npz"),
    }
    for field, (files, words) in cases.items():
        path = tmp_path / "m.yaml"
        path.write_text(PLATE_MODEL.format(files=files))
        model = load_model(path)
        with within(20), pytest.raises(ModelError) as info:
            compile_model(model)
        text = str(info.value)
        assert "SECRET" not in text and "root:x" not in text, text
        assert info.value.issues[0].path == f"bodies[0] 'plate'.{field}", text
        assert words in text and str(tmp_path) in text, text


def test_a_device_as_data_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(PLATE_MODEL.format(files="mass_file: /dev/zero, stiffness_file: /dev/zero, "
                                             "nodes_file: /dev/zero"))
    with within(10), pytest.raises(ModelError, match="not a regular file"):
        load_model(path, allow_outside=True)


# ---------------------------------------------------------------- numbers the physics cannot hold

def huang_with(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    text = HUANG
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


def test_a_section_that_overflows_is_refused_at_validation(tmp_path: Path) -> None:
    err = load_error(huang_with(tmp_path, ("height: 0.0127", "height: 1.27e298")))
    assert err.issues[0].path == "bodies[1] 'link2'.section" and "double precision" in err.issues[0].message
    model = flexmbs.load_model("huang_two_link_rigid")
    model.bodies.append(Body("rod", type="beam", length=1.0, elements=2, modes=2, material=Material(E=1e300, rho=1e300),
                             section=Section("explicit", A=1e10, Iy=1e10, Iz=1e-200, J=1.0), markers=[Marker("root", x=0.0)]))
    model.joints.append(Joint("weld", "fixed", "ground", "origin", "rod", "root"))
    with pytest.raises(ModelError) as info:        # validate itself, before any compile
        validate(model)
    (issue,) = info.value.issues
    assert issue.path == "bodies[2] 'rod'"
    for words in ("mass rho A L = inf", "bending stiffness E Iy = inf", "second moment Iz = 1e-200"):
        assert words in issue.message, issue.message


def test_too_many_elements_are_refused_with_the_estimate(tmp_path: Path) -> None:
    err = load_error(huang_with(tmp_path, ("elements: 4", "elements: 5000")))
    assert err.issues[0].path == "bodies[1] 'link2'.elements"
    assert "30006 DOFs" in err.issues[0].message and "GiB" in err.issues[0].message


def test_a_nanometre_beam_is_refused_with_the_step_estimate(tmp_path: Path) -> None:
    """A 1e-9 m link: its modes are ~1e9 times faster, so dopri5 would need ~1e12 steps."""
    model = load_model(huang_with(tmp_path, ("length: 1.02", "length: 1.0e-9"), ("x: 1.02", "x: 1.0e-9")))
    with within(120), pytest.raises(ValueError, match=r"simulate: about .* integration steps .* 'link2'"):
        flexmbs.simulate(model, 1.0)


@pytest.mark.parametrize("old, new, where, words", [
    ("E: 0.69e11", "E: 6.9e4", "bodies[1] 'link2'.material.E", "if it is in MPa or GPa, give it in Pa"),  # MPa
    ("G: 0.26e11", "G: 26.0e9", None, None),
    ("G: 0.26e11", "G: 26.0", "bodies[1] 'link2'.material.G", "if it is in MPa or GPa, give it in Pa"),
    ("rho: 2770", "rho: 2.77", "bodies[1] 'link2'.material.rho", "as a density in g/cm^3 reads"),
    ("width: 0.0127, height: 0.0127, thickness: 0.0016", "width: 12.7, height: 12.7, thickness: 1.6",
     "bodies[1] 'link2'.section", "if the section is in mm, give it in m"),
])
def test_a_value_in_other_units_is_warned_of_with_file_and_line(tmp_path: Path, old: str, new: str,
                                                                where: str | None, words: str | None) -> None:
    """A modulus, density or section that is valid but no solid's in SI units (E in MPa, rho in
    g/cm^3, a section in mm): one PlausibilityWarning naming the file, line and entry and the
    unit to give, though the model is loaded and then compiled (which checks it again), and one
    again at the next load; it still runs. The same values in SI units are warned of nothing."""
    path = huang_with(tmp_path, (old, new), ("min: 1.0e9, max: 1.0e13", "min: 1.0, max: 1.0e13"))  # the FMU's E range
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compile_model(load_model(path))
    notes = [str(w.message) for w in caught if issubclass(w.category, PlausibilityWarning)]
    if where is None:
        assert notes == []
        return
    assert len(notes) == 1 and re.match(rf"{re.escape(str(path))}:\d+: {re.escape(where)}: ", notes[0]), notes
    assert words in notes[0], notes
    with warnings.catch_warnings(record=True) as again:   # another load is another model: warned of again
        warnings.simplefilter("always")
        load_model(path)
    assert [str(w.message) for w in again if issubclass(w.category, PlausibilityWarning)] == notes


def test_an_error_a_value_in_other_units_caused_shows_that_value_too(tmp_path: Path) -> None:
    """E given in MPa in a model whose FMU parameter link2_E has an SI range: the range error
    is the model's one issue, and the modulus that caused it follows as a note with its own
    line and the unit to give (it was shown only once the range was removed, a new user's
    trial, stop 52)."""
    path = huang_with(tmp_path, ("E: 0.69e11", "E: 6.9e4"))
    with pytest.raises(ModelError) as refused:
        load_model(path)
    err = refused.value
    assert len(err.issues) == 1 and "link2_E" in str(err.issues[0]), str(err)
    assert len(err.notes) == 1 and err.notes[0].path == "bodies[1] 'link2'.material.E", str(err)
    assert re.search(rf"^note: {re.escape(str(path))}:\d+: bodies\[1\] 'link2'.material.E: .*MPa or GPa, give it in Pa",
                     str(err), re.M), str(err)


# ---------------------------------------------------------------- API arguments

@pytest.fixture(scope="module")
def arm():
    return compile_model(load_model("huang_two_link_rigid"))


NAN = math.nan
SIMULATE_FAULTS = [
    (dict(method="rk4", step=-1e-3), "step = -0.001"),
    (dict(method="rk4", step=NAN), "step = nan"),
    (dict(step=0), "step = 0"),
    (dict(atol=-1e-9), "atol = -1e-09"),
    (dict(rtol=0), "rtol = 0"),
    (dict(rtol=-1), "rtol = -1"),
    (dict(rtol=NAN), "rtol = nan"),
    (dict(max_step=0), "max_step = 0"),
    (dict(max_step=-1), "max_step = -1"),
    (dict(t_end=-1.0), "t_end = -1"),
    (dict(t_end=NAN), "t_end = nan"),
    (dict(output_step=-0.01), "output_step = -0.01"),
    (dict(output_step=NAN), "output_step = nan"),
    (dict(t_end=1e6, output_step=1e-6), "TiB"),
    (dict(x0=[0.0, 0.0]), "x0 has shape (2,)"),
    (dict(x0=[NAN, 0.0, 0.0, 0.0]), "x0[0] = nan"),
    (dict(inputs={"shoulder.tau": NAN}), "inputs['shoulder.tau'] = nan"),
    (dict(inputs=lambda t: {"elbow.tau": NAN}), "inputs['elbow.tau'] (at t = 0 s) = nan"),
    (dict(method="euler"), "method = 'euler'"),
    (dict(step="1e-3"), "step = '1e-3'"),
    (dict(rtol=1e10), "rtol = 10000000000.0: expected a number in [1e-14, 1]"),
    (dict(rtol=1e-20), "rtol = 1e-20"),
    (dict(atol=10.0), "atol = 10.0: expected a number in (0, 1]"),
]


@pytest.mark.parametrize("kwargs, words", SIMULATE_FAULTS, ids=[w for _, w in SIMULATE_FAULTS])
def test_simulate_refuses_a_bad_argument_by_name(arm, kwargs: dict, words: str) -> None:
    kwargs = {"t_end": 0.1, **kwargs}
    with within(120), pytest.raises(ValueError) as info:
        flexmbs.simulate(arm, **kwargs)
    text = str(info.value)
    assert text.startswith("simulate: ") and words in text, text
    assert "singular" not in text and "spinning" not in text and "fell below" not in text


def test_simulate_zero_duration_returns_the_initial_state(arm) -> None:
    res = flexmbs.simulate(arm, 0.0)
    assert res.time.tolist() == [0.0]
    np.testing.assert_array_equal(res.states[0], np.concatenate([arm.q0, arm.u0]))


LINEAR_FAULTS = [
    ("linearize", dict(x=[0.0]), "linearize: x has shape (1,)"),
    ("linearize", dict(x=[NAN, 0, 0, 0]), "linearize: x[0] = nan"),
    ("linearize", dict(t=NAN), "linearize: t = nan"),
    ("linearize", dict(inputs={"elbow.tau": NAN}), "inputs['elbow.tau'] = nan"),
    ("linearize", dict(inputs=[1.0]), "linearize: inputs has shape (1,)"),
    ("linearize", dict(spin={"shoulder": NAN}), "spin['shoulder'] = nan"),
    ("linearize", dict(outputs="shoulder.q"), "outputs = 'shoulder.q'"),
    ("equilibrium", dict(tol=-1.0), "equilibrium: tol = -1"),
    ("equilibrium", dict(max_iter=0), "equilibrium: max_iter = 0"),
    ("equilibrium", dict(tol=10.0), "equilibrium: tol = 10.0: expected a number in [1e-15, 1]"),
    ("equilibrium", dict(max_iter=10**9), "equilibrium: max_iter = 1000000000: expected an integer from 1 to 1000"),
    ("modes", dict(n=10**9), "modes: n = 1000000000: expected an integer from 1 to 2 (the model has 2 free"),
    ("equilibrium", dict(x_guess=[1.0, 2.0]), "equilibrium: x_guess has shape (2,)"),
    ("equilibrium", dict(inputs={"shoulder.tau": math.inf}), "inputs['shoulder.tau'] = inf"),
    ("modes", dict(n=0), "modes: n = 0"),
    ("modes", dict(zero_tol=-1.0), "modes: zero_tol = -1"),
    ("modes", dict(about="initial", x=[NAN] * 4), "modes: x[0] = nan"),
    ("modes", dict(about="rest"), "modes: about = 'rest'"),
]


@pytest.mark.parametrize("function, kwargs, words", LINEAR_FAULTS, ids=[w for _, _, w in LINEAR_FAULTS])
def test_linear_analysis_refuses_a_bad_argument_by_name(arm, function: str, kwargs: dict, words: str) -> None:
    with within(120), pytest.raises(ValueError) as info:
        getattr(flexmbs, function)(arm, **kwargs)
    assert words in str(info.value), str(info.value)
    assert "singular" not in str(info.value)


@pytest.mark.parametrize("function", ["simulate", "linearize", "equilibrium", "modes"])
@pytest.mark.parametrize("model", [None, 3.0, ["huang_two_link"]])
def test_a_model_argument_that_is_no_model_is_refused_by_name(function: str, model) -> None:
    args = (model, 0.1) if function == "simulate" else (model,)
    with within(60), pytest.raises(TypeError) as info:
        getattr(flexmbs, function)(*args)
    assert str(info.value).startswith(f"{function}: model = {model!r}"), str(info.value)
    assert "a model file path or a shipped model's name" in str(info.value)


def test_a_model_given_by_name_or_path_runs_as_the_loaded_model() -> None:
    loaded = flexmbs.simulate(load_model("double_pendulum"), 0.05)
    for spec in ("double_pendulum", MODELS / "double_pendulum.yaml"):
        np.testing.assert_array_equal(flexmbs.simulate(spec, 0.05).states, loaded.states)
    with pytest.raises(ModelError, match="no shipped model of that name"):
        flexmbs.simulate("no_such_model", 0.05)


def test_a_name_where_no_models_are_shipped_says_to_pass_a_path(monkeypatch, tmp_path: Path) -> None:
    """The flexmbs a plant FMU carries, or a source tree, has no models folder: a name then gets
    the reason and the fix instead of an empty list of shipped models."""
    monkeypatch.setattr(catalog, "models_dir", lambda: tmp_path)
    with pytest.raises(ModelError) as info:
        load_model("three_link_arm")
    assert "has no shipped models" in str(info.value) and "pass a model file's path" in str(info.value)


@pytest.mark.parametrize("replacement", ["rtol: 50", "rtol: 1.0e-16", "rtol: 1.0e-6\n  atol: 3.0"])
def test_a_model_file_tolerance_out_of_range_is_a_model_error(tmp_path: Path, replacement: str) -> None:
    err = load_error(huang_with(tmp_path, ("rtol: 1.0e-6", replacement)))
    (issue,) = err.issues
    assert issue.path in ("solver.rtol", "solver.atol") and issue.line is not None, str(err)
    assert ("from 1e-14" in issue.message) if issue.path == "solver.rtol" else ("at most 1" in issue.message)


def test_a_model_path_linking_outside_its_folder_is_refused_without_quoting_the_target(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:SECRET-LINE:/root:/bin/bash\n")
    home = tmp_path / "models"
    home.mkdir()
    (home / "m.yaml").symlink_to(secret)
    err = load_error(home / "m.yaml")
    assert "symbolic link" in str(err) and "allow_outside" in str(err) and "SECRET" not in str(err)
    (home / "huang.yaml").write_text(HUANG)
    (home / "inside.yaml").symlink_to(home / "huang.yaml")       # a link within the folder is a file there
    assert load_model(home / "inside.yaml").name == load_model(home / "huang.yaml").name
    (home / "out.yaml").symlink_to(huang_with(tmp_path, ("rtol: 1.0e-6", "rtol: 1.0e-6")))
    load_error(home / "out.yaml")
    assert load_model(home / "out.yaml", allow_outside=True).name == load_model(home / "huang.yaml").name


def test_flexmbs_check_refuses_what_simulate_would_refuse_with_the_estimate(tmp_path: Path) -> None:
    """`flexmbs check` applies simulate's step estimate to the model's default run (fmu.stop_time):
    a 1e-9 m link needs ~1e12 dopri5 steps per second and is refused; the shipped arm passes
    and shows its estimate."""
    from click.testing import CliRunner

    from flexmbs.cli import main

    tiny = huang_with(tmp_path, ("length: 1.02", "length: 1.0e-9"), ("x: 1.02", "x: 1.0e-9"))
    with within(120):
        bad = CliRunner().invoke(main, ["check", str(tiny)])
        good = CliRunner().invoke(main, ["check", "huang_two_link"])
    assert bad.exit_code == 1 and "integration steps" in bad.output and "'link2'" in bad.output, bad.output
    assert "Traceback" not in bad.output
    assert good.exit_code == 0 and "integration steps per simulated second" in good.output, good.output


# ---------------------------------------------------------------- segmented beams in loops

A, B, C, D = 0.102, 0.610, 0.406, 0.559          # crank, coupler, rocker, ground [m]


def freudenstein(theta2: np.ndarray) -> np.ndarray:
    """Rocker angle of the rigid four-bar for crank angle theta2 (branch above the ground line),
    from Freudenstein's equation K1 cos t4 - K2 cos t2 + K3 = cos(t2 - t4)."""
    K1, K2, K3 = D / A, D / C, (A ** 2 - B ** 2 + C ** 2 + D ** 2) / (2 * A * C)
    P, Q, R = K1 - np.cos(theta2), -np.sin(theta2), K2 * np.cos(theta2) - K3
    return np.arctan2(Q, P) + np.arccos(R / np.hypot(P, Q))


def rigid_pose(theta2: float) -> tuple[float, float]:
    """(coupler angle relative to the crank, rocker angle) [rad] of the rigid four-bar."""
    t4 = float(freudenstein(np.array(theta2)))
    tip = np.array([D + C * math.cos(t4), C * math.sin(t4)])
    pin = np.array([A * math.cos(theta2), A * math.sin(theta2)])
    return math.atan2(*(tip - pin)[::-1]) - theta2, t4


def beam_four_bar(segments: int, E: float) -> Model:
    """A crank-rocker whose coupler is a steel beam (6 elements, in `segments` corotational
    segments), the loop closed by a cut joint on the coupler's end marker; the crank is driven
    at a constant 10 rad/s and gravity is off, so a stiff coupler moves as the rigid linkage."""
    rigid = lambda name, m, L: {  # noqa: E731 - a uniform bar
        "name": name, "type": "rigid", "mass": m, "com": [L / 2, 0, 0],
        "inertia": [1e-6, m * L * L / 12, m * L * L / 12],
        "markers": [{"name": "root", "position": [0, 0, 0]}, {"name": "tip", "position": [L, 0, 0]}]}
    data = {
        "name": f"beam_four_bar_{segments}", "gravity": [0, 0, 0],
        "ground": {"markers": [{"name": "a", "position": [0, 0, 0]}, {"name": "d", "position": [D, 0, 0]}]},
        "bodies": [rigid("crank", 1.0, A), rigid("rocker", 0.8, C),
                   # the cantilever basis (axially rigid): its departure from the rigid linkage falls as
                   # 1/E^2 (bending shortens the chord at second order); interface modes (or the
                   # acceleration shapes) add the axial stretch, a departure falling as 1/E (1.25e-7
                   # rad at 10x, 1.25e-8 at 100x steel's E)
                   {"name": "coupler", "type": "beam", "length": B, "elements": 6, "segments": segments, "modes": 3,
                    "interface_modes": False, "acceleration_modes": False,
                    "material": {"E": E, "nu": 0.3, "rho": 7800.0},
                    "section": {"shape": "rectangle", "width": 0.010, "height": 0.015},
                    "markers": [{"name": "root", "x": 0}, {"name": "mid", "node": 3}, {"name": "end", "x": B}]}],
        "joints": [
            {"name": "crank", "type": "revolute", "parent": "ground", "parent_marker": "a", "child": "crank",
             "child_marker": "root", "q0": 0.0, "qd0": 10.0,
             "drive": {"type": "motion", "profile": {"type": "constant", "value": 0.0, "rate": 10.0}}},
            {"name": "coupler_pin", "type": "revolute", "parent": "crank", "parent_marker": "tip", "child": "coupler",
             "child_marker": "root", "q0": 0.7},
            {"name": "rocker", "type": "revolute", "parent": "ground", "parent_marker": "d", "child": "rocker",
             "child_marker": "root", "q0": 1.6}],
        "loops": {"independent": ["crank"], "cuts": [
            {"name": "rocker_pin", "type": "revolute", "parent": "coupler", "parent_marker": "end",
             "child": "rocker", "child_marker": "tip"}]},
        "sensors": [{"name": "mid", "body": "coupler", "marker": "mid"},
                    {"name": "end", "body": "coupler", "marker": "end"}],
        "solver": {"rtol": 1e-9, "max_step": 1e-3, "output_step": 1e-3},
    }
    # start on the rigid linkage's closed pose and velocities (rates by central differences), so
    # that the assembly has nothing to correct and puts no energy into the coupler
    (q_c, q_r), h = rigid_pose(0.0), 1e-6
    rates = (np.array(rigid_pose(h)) - np.array(rigid_pose(-h))) / (2 * h) * 10.0
    for joint, q0, qd0 in zip(data["joints"][1:], (q_c, q_r), rates):
        joint["q0"], joint["qd0"] = q0, float(qd0)
    return model_from_dict(data)


def test_a_cut_joint_on_a_segmented_beam_tends_to_the_rigid_linkage() -> None:
    """The cut joint sits on a marker of the second segment; as the coupler stiffens (E 10 and
    100 times steel's) the segmented and the single-frame coupler both tend to Freudenstein's
    rigid closed form, and agree with each other; the sensors moved to their segments stay on
    the beam."""
    results = {}
    for segments in (1, 2):
        errors = []
        for factor in (10.0, 100.0):
            with warnings.catch_warnings(), within(600):
                warnings.simplefilter("error", AssemblyWarning)  # started consistent: nothing corrected
                res = flexmbs.simulate(beam_four_bar(segments, 2.07e11 * factor), 0.3)
            errors.append(np.max(np.abs(res["rocker.q"] - freudenstein(res["crank.q"]))))
            assert np.max(np.abs(res["rocker_pin.gap"])) < 1e-9
        # the departure from the rigid linkage shrinks as the coupler stiffens (measured: 1.4e-9
        # rad at 10x, 1.5e-11 rad at 100x, for one and for two segments)
        assert errors[1] < 0.1 * errors[0] and errors[1] < 1e-10, (segments, errors)
        # the end sensor (moved to the last segment) sits on the rocker's pin: |end - d| = C
        np.testing.assert_allclose(np.hypot(res["end.r[1]"] - D, res["end.r[2]"]), C, atol=1e-6)
        results[segments] = res
    np.testing.assert_allclose(results[2]["rocker.q"], results[1]["rocker.q"], atol=1e-10)
    # the midpoint carries the (truncated, differently resolved) bending of ~1e-7 m
    np.testing.assert_allclose(results[2]["mid.r[1]"], results[1]["mid.r[1]"], atol=1e-6)


def test_parameter_paths_name_the_whole_segmented_beam() -> None:
    """FMU parameter paths are set on the model before segment expansion: quadrupling E of the
    segmented coupler doubles every segment's modal frequencies (omega ~ sqrt(E))."""
    model = beam_four_bar(2, 2.07e11)
    base = compile_model(model)
    set_value(model, "bodies.coupler.material.E", 4 * 2.07e11)
    stiff = compile_model(model)
    segments = [name for name in base.flex if name.startswith("coupler")]
    assert len(segments) == 2
    for name in segments:
        np.testing.assert_allclose(stiff.flex[name].freqs, 2 * base.flex[name].freqs, rtol=1e-9)


# ---------------------------------------------------------------- loop assembly corrections

def test_an_inconsistent_velocity_on_a_dependent_joint_is_reported() -> None:
    """The four-bar's rocker rate follows from the crank's: a qd0 given on the rocker that
    disagrees is changed by the assembly, with a warning naming the joint and the size."""
    model = flexmbs.load_model("four_bar")
    model.joint("rocker").qd0 = (3.0,)
    with pytest.warns(AssemblyWarning, match=r"joint 'rocker' by [0-9.]+") as record:
        system = compile_model(model)
    changed = system.loop_corrections["rocker"][1]
    u0, _ = system.joint_u["rocker"]
    assert changed == pytest.approx(abs(system.u0[u0] - 3.0), rel=1e-12)
    assert f"{changed:.3g}" in str(record[0].message)
    # the consistent value (taken from the assembled state) passes silently
    model.joint("rocker").qd0 = (float(system.u0[u0]),)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssemblyWarning)
        compile_model(model)


def test_a_flexible_loop_closes_with_its_joints_first() -> None:
    """The beam four-bar (with the axial interface modes a default beam has) from joint angles
    0.05 rad off its closed pose: the assembly closes the loop with the joint angles alone, as
    the rigid linkage does (Freudenstein's rocker angle, to 1e-9 rad), and leaves the coupler
    undeformed and at rest, without a warning. Least-norm steps over the modal coordinates too
    put 236 J into the axial mode of a user's flexible coupler, and the run diverged at 0.02 s."""
    model = beam_four_bar(1, 2.07e11)
    model.body("coupler").interface_modes = True
    model.joint("coupler_pin").q0 = (model.joint("coupler_pin").q0[0] + 0.05,)
    model.joint("rocker").q0 = (model.joint("rocker").q0[0] - 0.05,)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssemblyWarning)
        system = compile_model(model)
    e0, n = system.body_eta["coupler"]
    v0 = system.arrays.ev[system.bodies.index("coupler")]
    assert n > 3 and not np.any(system.q0[e0:e0 + n]) and not np.any(system.u0[v0:v0 + n])
    assert system.q0[system.joint_q["rocker"][0]] == pytest.approx(float(freudenstein(np.array(0.0))), abs=1e-9)


def test_a_flexible_body_deformed_by_assembly_is_reported_with_its_energy() -> None:
    """The beam four-bar driven at 10 rad/s with its rocker held at rest (loops.independent)
    and its coupler joint given no rate: no joint rate can close the loop's velocities, so the
    assembly takes the coupler's modal rates, i.e. starts the coupler vibrating. That was
    silent; now the warning names the body and the elastic energy, 1/2 |d etadot|^2 for
    mass-normalised modes."""
    model = beam_four_bar(1, 2.07e11)
    model.body("coupler").interface_modes = True
    model.loops.independent = ["crank", "rocker"]
    model.joint("coupler_pin").qd0 = ()
    model.joint("rocker").qd0 = (0.0,)
    with pytest.warns(AssemblyWarning) as record:
        system = compile_model(model)
    (message,) = [str(r.message) for r in record]
    assert "flexible body 'coupler'" in message, message
    energy = float(message.split("about ")[1].split(" J of elastic energy")[0])
    v0, n = system.arrays.ev[system.bodies.index("coupler")], system.body_eta["coupler"][1]
    rates = system.u0[v0:v0 + n]  # the modal rates started at 0: all of them is the correction
    assert energy == pytest.approx(0.5 * float(rates @ rates), rel=1e-2) and energy > 1e-3
    assert system.loop_corrections["coupler"][1] == pytest.approx(np.max(np.abs(rates)))


def _diverging_run(model: Model) -> str:
    """The message of a run of `model` from its assembled state with the coupler's first modal
    coordinate at twice the amplitude that deflects it by its own size (eta_max)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssemblyWarning)
        system = compile_model(model)
    x0 = system.x0.copy()
    x0[system.body_eta["coupler"][0]] = 2.0 * system.arrays.eta_max[system.bodies.index("coupler"), 0]
    with pytest.raises(flexmbs.SolverError) as failed:
        flexmbs.simulate(system, 0.01, x0=x0)
    return str(failed.value)


def test_a_run_that_diverges_names_the_body_and_what_may_have_made_it() -> None:
    """A flexible four-bar whose run diverges: where the loop assembly put elastic energy into
    the coupler (as warned), the message names that body, the energy and what to change, not a
    spinning body; where the assembly deformed nothing, it names the coupler and, by what the
    coupler is, a load (a steel coupler with geometric stiffening), a spinning body (one
    without), or a material in other units (E in MPa: its lowest mode at 1e-3 of steel's)."""
    deformed = beam_four_bar(1, 2.07e11)
    deformed.body("coupler").interface_modes = True
    deformed.loops.independent = ["crank", "rocker"]
    deformed.joint("coupler_pin").qd0 = ()
    deformed.joint("rocker").qd0 = (0.0,)
    message = _diverging_run(deformed)
    assert "elastic deflection exceeded the size of its body" in message, message
    assert "flexible body 'coupler'" in message and "J of elastic energy" in message, message
    assert "loops.independent" in message and "spinning" not in message, message
    consistent = beam_four_bar(1, 2.07e11)
    consistent.body("coupler").interface_modes = True
    message = _diverging_run(consistent)
    assert "flexible body 'coupler': a load or motion beyond" in message and "tighter rtol" in message, message
    assert "assembly" not in message and "spinning" not in message, message
    consistent.body("coupler").geometric_stiffening = False
    message = _diverging_run(consistent)
    assert "flexible body 'coupler': it has no geometric stiffening" in message, message
    assert "spinning faster than its first bending frequency" in message, message
    in_mpa = beam_four_bar(1, 2.07e5)
    in_mpa.body("coupler").interface_modes = True
    message = _diverging_run(in_mpa)
    assert "flexible body 'coupler': its lowest mode is" in message and "E and G in Pa" in message, message


@pytest.mark.parametrize("method", ["rk4", "dopri5", "radau"])
def test_a_modulus_in_mpa_diverges_with_the_body_and_the_units_named(tmp_path: Path, method: str) -> None:
    """Huang's arm with link 2's E given in MPa (6.9e4): the link sags beyond its own length
    under gravity within 0.3 s, and every method's message names the link, its lowest mode
    (1e-3 of the steel one's: a frequency goes as sqrt(E)) and the units to check (RK4 runs its
    samples in one kernel: the message reads the state where it stopped, not where it began)."""
    path = huang_with(tmp_path, ("E: 0.69e11", "E: 6.9e4"), ("min: 1.0e9, max: 1.0e13", "min: 1.0, max: 1.0e13"))
    hz = compile_model(load_model("huang_two_link")).flex["link2"].freqs.min() / (2 * np.pi) * 1e-3
    with warnings.catch_warnings(), pytest.raises(flexmbs.SolverError) as failed:
        warnings.simplefilter("ignore", PlausibilityWarning)
        flexmbs.simulate(path, 1.0, method=method, step=1e-3)
    assert f"flexible body 'link2': its lowest mode is {hz:.3g} Hz" in str(failed.value), failed.value
    assert "E and G in Pa" in str(failed.value), failed.value


def test_rk4_past_its_stability_bound_names_the_bound_when_it_diverges() -> None:
    """Huang's arm with its link's acceleration shapes (torsion at 650 Hz) under RK4 at 1 ms:
    warned at the start, and the divergence's message names RK4's stability bound and the mode
    that sets it, not a spinning body. The bound: 2.83 / omega for an undamped mode."""
    from flexmbs.solvers.stepper import StabilityWarning

    model = load_model("huang_two_link")
    model.body("link2").acceleration_modes = True
    with pytest.warns(StabilityWarning), pytest.raises(flexmbs.SolverError) as failed:
        flexmbs.simulate(model, 1.0, method="rk4", step=1e-3)
    message = str(failed.value)
    assert "exceeds RK4's stability bound" in message and "spinning" not in message, message
    bound_ms = float(message.split("stability bound ")[1].split(" ms")[0])
    hz = float(message.split("mode of ")[1].split(" Hz")[0])
    assert bound_ms == pytest.approx(2.83 / (2 * math.pi * hz) * 1e3, rel=0.02) and bound_ms < 1.0


# ---------------------------------------------------------------- the command line

def test_cli_refuses_hostile_files_quickly(tmp_path: Path) -> None:
    """Real processes (the console script), each within its time limit: a clean message, exit 1."""
    import subprocess

    (tmp_path / "bomb.yaml").write_text(BOMB)
    os.mkfifo(tmp_path / "fifo.yaml")
    exe = Path(sys.executable).with_name("flexmbs")
    for target in (tmp_path / "bomb.yaml", tmp_path / "fifo.yaml", "/dev/zero"):
        run = subprocess.run([str(exe), "check", str(target)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
        assert run.stderr.startswith("Error: invalid model"), run.stderr
