"""build_fmu.py: every model builds into an FMU that fmpy and fmutool accept, with a complete
model description (units, dependencies, initial unknowns, stable GUID, documentation)."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import MODELS, ROOT
from fmpy import read_model_description
from fmpy.validation import validate_fmu

from flexmbs.model import ModelError
from flexmbs.fmi import build as build_module
from flexmbs.fmi.build import BuildError, build


def test_every_model_builds_and_validates(fmus) -> None:
    """The build itself runs `fmpy validate` and `fmutool -check` and fails on any problem;
    fmpy's validator is run here once more on each FMU (models and blocks)."""
    assert set(fmus) == {p.stem for p in MODELS.glob("*.yaml")} | {"dc_motor", "pid_controller", "trajectory"}
    failed = {name: str(b) for name, b in fmus.items() if isinstance(b, Exception)}
    assert not failed
    for name, b in fmus.items():
        assert b.path.name == f"{name}.fmu"
        assert validate_fmu(str(b.path)) == []


def test_model_description_is_complete(fmu_path) -> None:
    path = fmu_path("huang_two_link")
    md = read_model_description(path)
    units = {u.name for u in md.unitDefinitions}
    by_name = {v.name: v for v in md.modelVariables}
    for v in md.modelVariables:
        if v.type == "Real":
            assert v.unit in units, f"{v.name} has no unit"
    assert by_name["shoulder.q"].unit == "rad" and by_name["shoulder.q"].displayUnit == "deg"
    assert by_name["shoulder.qd"].displayUnit == "rpm"
    assert by_name["shoulder.tau"].causality == "input" and by_name["shoulder.tau"].unit == "N.m"
    assert by_name["payload"].causality == "parameter" and by_name["payload"].unit == "kg"
    assert float(by_name["payload"].min) == 0.0 and float(by_name["payload"].max) == 5.0
    assert md.coSimulation.canGetAndSetFMUstate and md.coSimulation.canSerializeFMUstate
    assert md.author == "flexmbs" and md.version == "1.0"
    de = md.defaultExperiment
    assert (float(de.stopTime), float(de.stepSize)) == (5.0, 0.001)

    # positions and velocities integrate: no direct feedthrough; accelerations depend on torques
    deps = {u.variable.name: {d.name for d in u.dependencies} for u in md.outputs}
    assert deps["elbow.q"] == set() and deps["link2.tip_deflection[2]"] == set()
    assert deps["energy.kinetic"] == set()
    assert deps["elbow.qdd"] == {"shoulder.tau", "elbow.tau"}
    assert [u.variable.name for u in md.initialUnknowns] == [v.name for v in md.modelVariables
                                                             if v.causality == "output"]
    with zipfile.ZipFile(path) as z:
        page = z.read("documentation/_main.html").decode()
    for v in md.modelVariables:
        assert f"<code>{v.name}</code>" in page


def test_motion_inputs_make_kinematics_feed_through(tmp_path: Path) -> None:
    """A joint prescribed by q_ref inputs moves with them within the instant: its position
    output depends on q_ref, and so does a sensor on the body it carries."""
    text = (MODELS / "double_pendulum.yaml").read_text().replace(
        "drive: {type: torque}   # input shoulder.tau [N m], 0 unless set",
        "drive: {type: motion, profile: {type: input}}", 1)
    model = tmp_path / "driven.yaml"
    model.write_text(text.replace("name: double_pendulum", "name: driven_pendulum", 1))
    md = read_model_description(str(build(model, tmp_path, check=False).path))
    deps = {u.variable.name: {d.name for d in u.dependencies} for u in md.outputs}
    assert deps["shoulder.q"] == {"shoulder.q_ref", "shoulder.qd_ref"}
    assert deps["tip.r[1]"] == {"shoulder.q_ref", "shoulder.qd_ref"}
    assert "shoulder.qdd_ref" in deps["shoulder.tau"] and "elbow.tau" in deps["shoulder.tau"]


def test_guid_is_stable_and_follows_the_model(tmp_path: Path) -> None:
    a = build(MODELS / "double_pendulum.yaml", tmp_path / "a", check=False)
    b = build(MODELS / "double_pendulum.yaml", tmp_path / "b", check=False)
    assert a.guid == b.guid
    changed = tmp_path / "double_pendulum.yaml"
    changed.write_text((MODELS / "double_pendulum.yaml").read_text().replace("mass: 1.0", "mass: 1.5", 1))
    assert build(changed, tmp_path / "c", check=False).guid != a.guid


def test_a_description_that_does_not_validate_fails_the_build(tmp_path: Path, monkeypatch) -> None:
    real = build_module.model_description

    def broken(*args, **kwargs) -> bytes:
        root = ElementTree.fromstring(real(*args, **kwargs))
        outputs = root.find("ModelStructure/Outputs")
        outputs.remove(outputs[0])            # an output missing from <Outputs>
        return ElementTree.tostring(root, encoding="UTF-8")

    monkeypatch.setattr(build_module, "model_description", broken)
    with pytest.raises(BuildError, match="does not validate") as err:
        build(MODELS / "double_pendulum.yaml", tmp_path)
    assert "fmutool -check" in str(err.value) and "fmpy validate" in str(err.value)
    assert list(tmp_path.glob("*.fmu*")) == [] and list(tmp_path.glob("*.partial")) == []


def test_an_interrupted_build_leaves_no_partial_fmu(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C while the FMU's kernels compile (here: as they are added) removes the half-built
    archive (an interrupted `build --all` had left one .partial file per running build)."""
    def interrupted(*args, **kwargs) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "_carry", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(MODELS / "double_pendulum.yaml", tmp_path, check=False)
    assert list(tmp_path.iterdir()) == []


def test_a_bad_model_is_reported_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((MODELS / "double_pendulum.yaml").read_text().replace("mass: 1.0", "mass: -1.0", 1))
    with pytest.raises(ModelError, match=r"bad.yaml:\d+"):
        build(bad, tmp_path)


def test_build_fmu_script_builds_and_reports(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(ROOT / "build_fmu.py"), str(MODELS / "double_pendulum.yaml"),
                          "-o", str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "2 inputs" in run.stdout and "valid (fmpy validate, fmutool -check)" in run.stdout
    assert "building double_pendulum (1 of 1)" in run.stderr     # each build is announced as it starts
    assert (tmp_path / "double_pendulum.fmu").is_file()
    run = subprocess.run([sys.executable, str(ROOT / "build_fmu.py"), str(tmp_path / "missing.yaml")],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "missing.yaml" in run.stderr and "Traceback" not in run.stderr


def test_two_builds_into_one_folder_at_once_both_succeed(tmp_path: Path) -> None:
    """Two build_fmu.py processes writing the same FMU into one folder at the same time (two
    shells, two CI jobs): each writes an archive of its own and moves it into place, so both
    succeed, the FMU left validates, and no partial file stays. (Sharing one partial name, they
    wrote into each other's zip: 'not a ZIP archive', found by running the README's first
    command twice.)"""
    command = [sys.executable, str(ROOT / "build_fmu.py"), str(MODELS / "double_pendulum.yaml"), "-o", str(tmp_path)]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for run in runs:
        out, err = run.communicate(timeout=900)
        assert run.returncode == 0, err[-3000:]
        assert "valid (fmpy validate, fmutool -check)" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["double_pendulum.fmu"]
    assert read_model_description(str(tmp_path / "double_pendulum.fmu")).modelName == "double_pendulum"


def test_a_build_says_when_it_compiles_the_kernels_it_carries(fmu_path, tmp_path: Path, monkeypatch,
                                                               caplog) -> None:
    """The kernels an FMU carries compile in a run of its own, whose output is captured and whose
    startup alone takes seconds: the build says it is compiling exactly when that run compiles.
    Counted with the notice threshold at 0 s, in a cache of the test's own (the user's is shared
    with other processes) holding the kernels the session's FMU carries but one: the build
    compiles that one and says so once, with the line that it is done; the next build loads
    every kernel and says nothing."""
    import flexmbs
    from flexmbs import compiling
    from flexmbs._cache import kernel_cache

    monkeypatch.setattr(compiling, "NOTICE_AFTER", 0.0)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    generic = kernel_cache(Path(flexmbs.__file__).parent) / "generic"
    left_out = "structs._box_work-"     # a small kernel the FMU calls from Python
    with zipfile.ZipFile(fmu_path("double_pendulum")) as z:
        carried = [n for n in z.namelist() if n.startswith("resources/kernels/flexmbs/")]
        assert any(left_out in n for n in carried), carried
        for name in carried:
            if left_out not in name:
                target = generic / name.removeprefix("resources/kernels/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(name))

    def said(out: str) -> tuple[int, int]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="flexmbs"):
            build(MODELS / "double_pendulum.yaml", tmp_path / out, check=False)
        lines = [r.getMessage() for r in caplog.records]
        # the estimate is the one of the model's route: another route compiles other kernels
        return (sum(m.startswith("compiling the numba kernels of the double_pendulum FMU (every solver method, "
                                 "recursive tree route") for m in lines),
                sum(m.startswith("compiled the numba kernels of the double_pendulum FMU") for m in lines))

    assert said("cold") == (1, 1), caplog.text
    assert list(generic.rglob(f"{left_out}*"))
    assert said("warm") == (0, 0), caplog.text


def test_natural_formulation_is_refused_with_the_reason(tmp_path: Path) -> None:
    """FMUs run the joint-coordinate formulation; a model asking for natural coordinates gets a
    message saying so, and no FMU."""
    text = (MODELS / "four_bar.yaml").read_text().replace("solver:\n", "solver:\n  formulation: natural\n")
    path = tmp_path / "four_bar.yaml"
    path.write_text(text)
    with pytest.raises(BuildError, match="solver.formulation is 'natural'; FMUs run the joint-coordinate"):
        build(path, tmp_path / "out")
    assert not (tmp_path / "out" / "four_bar.fmu").exists()


def _bundle_record(fmu: str) -> tuple[str, tuple[str, ...]]:
    """BUNDLE (digest) and FILES of the slave module inside a built FMU."""
    with zipfile.ZipFile(fmu) as z:
        name = next(n for n in z.namelist() if n.startswith("resources/flexmbs_plant_") and n.endswith(".py"))
        namespace: dict = {}
        for line in z.read(name).decode().splitlines():
            if line.startswith(("BUNDLE = ", "FILES = ")):
                exec(line, namespace)   # noqa: S102 - two literals written by the build
    return namespace["BUNDLE"], namespace["FILES"]


def test_a_plant_bundles_what_its_slave_imports_and_no_host_tool(fmu_path, tmp_path: Path) -> None:
    """The bundle is the slave's import closure: an edit to a host tool (the SSP writer, a
    sweep plot, the build) leaves a plant FMU's bundle digest as it was; an edit to a module
    the plant runs changes it."""
    import flexmbs_fmu.bundle as bundle
    from flexmbs.fmi.closure import import_closure, package_roots

    digest, files = _bundle_record(fmu_path("huang_two_link"))
    assert "flexmbs_fmu/plant.py" in files and "flexmbs/kernels/dynamics.py" in files
    assert not [f for f in files if f.startswith("flexmbs/fmi/") or f == "flexmbs/cli.py"]
    copy = {}
    for name, root in package_roots(build_module.RUNTIME_PACKAGES).items():
        copy[name] = tmp_path / name
        shutil.copytree(root, copy[name], ignore=shutil.ignore_patterns("__pycache__"))
    entries = ("flexmbs_fmu.base", "flexmbs_fmu.plant")

    def digest_now() -> str:
        return bundle.tree_digest(copy, import_closure(copy, entries))

    assert import_closure(copy, entries) == files and digest_now() == digest
    for tool in ("fmi/ssp.py", "fmi/sweep/plots.py", "fmi/build.py", "cli.py"):
        with open(copy["flexmbs"] / tool, "a") as f:
            f.write("\n# an edit to a host tool\n")
    assert digest_now() == digest
    with open(copy["flexmbs_fmu"] / "plant.py", "a") as f:
        f.write("\n# an edit to the plant\n")
    assert digest_now() != digest
