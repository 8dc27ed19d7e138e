"""The sweep engine on a 2-worker LocalCluster: the same rows as a serial loop on fresh FMU
instances (bit-identical metrics), a killed worker's task rerun, a diverging run as a row with its
error, resume after an interruption; the designs of experiments and the metrics against their
definitions."""

from __future__ import annotations

import math
import os
import signal
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("dask.distributed")
pytest.importorskip("pyarrow")

from designs import huang_servo  # noqa: E402  (examples/, on sys.path through conftest)

from flexmbs.fmi.sweep import (DesignError, Engine, Study, evaluate, parameter, parameter_sets,  # noqa: E402
                               row_key, sweep)
from flexmbs.fmi.sweep.metrics import overshoot, settling_time  # noqa: E402

# unbounded voltage and a huge derivative gain on the elbow: the sampled loop is unstable and
# link 2's deflection grows until the plant's solver refuses the step
DIVERGING = {"c_elbow.kd": 1e3, "c_elbow.u_max": 1e6, "c_elbow.u_min": -1e6}


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Study:
    """The servo demo on a short move (0.3 s run), with the 4 FMUs it needs built once."""
    from flexmbs.model.catalog import models_dir
    from flexmbs.fmi.build import COMPONENTS, build, build_component

    out = tmp_path_factory.mktemp("sweep_fmus")
    build(models_dir() / "huang_two_link.yaml", out)
    for name in COMPONENTS:
        build_component(name, out)
    design = replace(huang_servo(), t_start=0.05, duration=0.2, stop_time=0.3)
    return Study(design, out)


@pytest.fixture(scope="module")
def engine():
    with Engine(workers=2) as e:
        yield e


def gain_sets(n: int) -> list[dict[str, float]]:
    """n parameter sets over payload, stiffness and the elbow's gains (all stable)."""
    return [{"arm.payload": 0.5 + 0.05 * k, "arm.link2_E": 0.69e11 * (1 - 0.05 * k), "c_elbow.kd": 11.4 + k,
             "c_elbow.u_max": 24.0, "c_elbow.u_min": -24.0} for k in range(n)]


def metrics_of(rows, study) -> np.ndarray:
    return np.array([[float(r[c]) for c in study.columns()] for r in rows])


def serial(study: Study, sets) -> list[dict]:
    """The reference: one loop in this process, every run on new FMU instances."""
    digest = study.digest()
    return [evaluate(study, digest, p, fresh=True) for p in sets]


def test_sweep_matches_serial_loop_and_survives_a_killed_worker(study, engine, tmp_path) -> None:
    sets = gain_sets(6)
    before = set(engine.client.scheduler_info()["workers"])
    killed = []

    def kill_one(row) -> None:
        if not killed:   # after the first row: a worker that is running a task dies (SIGKILL)
            busy = {w: keys for w, keys in engine.client.processing().items() if keys}
            victim = sorted(busy)[0]
            pid = engine.client.run(os.getpid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            killed.append((victim, [str(k) for k in busy[victim]]))

    df = sweep(engine, study, sets, tmp_path, progress=False, on_row=kill_one)
    victim, running = killed[0]
    assert victim in before and victim not in engine.client.scheduler_info()["workers"]
    assert list(df["status"]) == ["ok"] * len(sets), df["message"].tolist()
    # the tasks the dead worker was running were rerun elsewhere: their rows are there
    assert running and {k.removeprefix("flexmbs-run-") for k in running} <= set(df["key"])
    ref = serial(study, sets)
    assert [r["status"] for r in ref] == ["ok"] * len(sets)
    # bit-identical: reused instances (fmi2Reset) on workers vs fresh ones here
    assert np.array_equal(df[study.columns()].to_numpy(), metrics_of(ref, study), equal_nan=True)
    # the Parquet table holds the same numbers
    import pandas as pd
    pq = pd.read_parquet(tmp_path / "rows.parquet")
    assert np.array_equal(pq[study.columns()].to_numpy(), metrics_of(ref, study), equal_nan=True)
    assert list(pq["arm.payload"]) == [p["arm.payload"] for p in sets]


def test_diverging_run_is_a_row_with_its_error(study, engine, tmp_path) -> None:
    """Also: a second client on the running cluster by its scheduler's address (--scheduler)."""
    sets = [{"c_elbow.kd": 11.4, "c_elbow.u_max": 24.0, "c_elbow.u_min": -24.0}, DIVERGING,
            {"c_elbow.kd": 12.0, "c_elbow.u_max": 24.0, "c_elbow.u_min": -24.0}]
    with Engine(scheduler=engine.cluster.scheduler_address) as remote:
        assert remote.cluster is None
        df = sweep(remote, study, sets, tmp_path, progress=False)
    assert list(df["status"]) == ["ok", "diverged", "ok"]
    msg = df["message"][1]
    assert "element arm" in msg and "diverged" in msg, msg
    assert all(math.isnan(v) for v in df.loc[1, study.columns()])


def test_a_run_that_ends_ok_keeps_what_its_fmus_warned_of(study) -> None:
    """Link 2 at E = 10 GPa (7 times softer) bends beyond one floating frame's range in the
    0.3 s run: the row is ok and its message carries the plant's warning, naming the body (the
    row's message was empty, a new user's trial, stop 52); the nominal arm's row has none."""
    soft = evaluate(study, study.digest(), {"arm.link2_E": 1e10}, fresh=True)
    assert soft["status"] == "ok" and "body 'link2' deforms beyond one floating frame's range" in soft["message"], soft
    nominal = evaluate(study, study.digest(), {}, fresh=True)
    assert nominal["status"] == "ok" and nominal["message"] == "", nominal


def test_interrupted_sweep_keeps_rows_and_resume_skips_them(study, engine, tmp_path) -> None:
    sets = gain_sets(5)
    seen = []

    def interrupt(row) -> None:
        seen.append(row["key"])
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(engine, study, sets, tmp_path, progress=False, on_row=interrupt)
    with open(tmp_path / "rows.csv") as f:
        assert len(f.readlines()) == 1 + 2          # header and the two finished rows
    again = []
    df = sweep(engine, study, sets, tmp_path, progress=False, on_row=lambda r: again.append(r["key"]))
    digest = study.digest()
    keys = [row_key(digest, p) for p in sets]
    assert len(again) == 3 and not set(again) & set(seen)
    assert list(df["key"]) == keys and list(df["status"]) == ["ok"] * 5
    rerun = []
    sweep(engine, study, sets, tmp_path, progress=False, on_row=lambda r: rerun.append(r))
    assert rerun == []


def test_unknown_parameter_is_refused_before_running(study, engine, tmp_path) -> None:
    with pytest.raises(KeyError, match=r"arm.paylod.*did you mean 'arm.payload'"):
        sweep(engine, study, [{"arm.paylod": 1.0}], tmp_path, progress=False)
    with pytest.raises(KeyError, match="is an output, not a parameter"):
        sweep(engine, study, [{"arm.elbow.q": 1.0}], tmp_path, progress=False)


# ----------------------------------------------------------------------------- designs, metrics

def test_grid_is_every_combination_and_relative_scales_the_nominal() -> None:
    ps = [parameter("a.x", {"values": [1, 2]}), parameter("b.y", {"low": 0.7, "high": 1.3, "num": 3, "relative": True})]
    sets = parameter_sets("grid", ps, {"b.y": 10.0})
    assert [(s["a.x"], s["b.y"]) for s in sets] == [(a, b) for a in (1.0, 2.0) for b in (7.0, 10.0, 13.0)]


def test_lhs_has_one_sample_per_stratum_and_is_reproducible() -> None:
    ps = [parameter("a.x", {"low": 0.0, "high": 10.0}), parameter("b.y", {"low": -1.0, "high": 1.0})]
    sets = parameter_sets("lhs", ps, {}, samples=20, seed=3)
    for name, lo, hi in (("a.x", 0.0, 10.0), ("b.y", -1.0, 1.0)):
        strata = np.floor((np.array([s[name] for s in sets]) - lo) / (hi - lo) * 20).astype(int)
        assert sorted(strata) == list(range(20))      # the Latin property
    assert sets == parameter_sets("lhs", ps, {}, samples=20, seed=3)
    assert sets != parameter_sets("lhs", ps, {}, samples=20, seed=4)


def test_monte_carlo_follows_its_distribution() -> None:
    from scipy import stats
    ps = [parameter("a.x", {"distribution": "norm", "args": {"loc": 2.0, "scale": 0.5}})]
    x = np.array([s["a.x"] for s in parameter_sets("monte_carlo", ps, {}, samples=4000, seed=1)])
    assert stats.kstest(x, stats.norm(2.0, 0.5).cdf).pvalue > 1e-3
    assert abs(x.mean() - 2.0) < 4 * 0.5 / np.sqrt(x.size)


@pytest.mark.parametrize("spec, match", [
    ({"distribution": "normal"}, "did you mean 'norm'"),
    ({"low": 2.0, "high": 1.0}, "low < high"),
    ({"lo": 1.0}, "unknown entry 'lo'"),
])
def test_bad_parameter_specs_are_named(spec, match) -> None:
    with pytest.raises(DesignError, match=f"parameter a.x.*{match}"):
        parameter("a.x", spec)


def test_step_metrics_of_a_second_order_response() -> None:
    """Underdamped step response 1 - e^{-z w t}(cos w_d t + z/sqrt(1-z^2) sin w_d t): overshoot
    exp(-pi z / sqrt(1 - z^2)), and it leaves the 2 % band for the last time where the envelope
    e^{-z w t}/sqrt(1-z^2) reaches 0.02 or before."""
    z, w = 0.3, 10.0
    wd = w * np.sqrt(1 - z * z)
    t = np.linspace(0, 5, 500001)
    y = 1 - np.exp(-z * w * t) * (np.cos(wd * t) + z / np.sqrt(1 - z * z) * np.sin(wd * t))
    assert overshoot(t, y, 0.0, 1.0, 0.0) == pytest.approx(100 * np.exp(-np.pi * z / np.sqrt(1 - z * z)), rel=1e-6)
    ts = settling_time(t, y, 0.0, 1.0, 0.0, 0.02)
    envelope = -np.log(0.02 * np.sqrt(1 - z * z)) / (z * w)
    assert envelope - np.pi / wd < ts <= envelope
    assert settling_time(t, y, 0.0, 1.0, 0.0, 1e-12) == math.inf


# ----------------------------------------------------------------------------- tuning

def test_robust_measures_follow_their_definitions() -> None:
    from flexmbs.fmi.sweep.tune import robust_value
    v = [0.5, 3.0, 1.0, 2.0, 4.0]
    assert robust_value(v, "worst") == 4.0
    assert robust_value(v, "mean") == pytest.approx(2.1)
    assert robust_value(v, "cvar", 0.4) == pytest.approx(3.5)        # the 2 largest of 5
    assert robust_value(v, "cvar", 0.1) == 4.0                       # ceil(0.5) = 1 value
    with pytest.raises(ValueError, match="expected one of worst, cvar, mean"):
        robust_value(v, "median")


def test_robust_tuning_improves_on_its_start_and_resumes(study, engine, tmp_path) -> None:
    from flexmbs.fmi.sweep.tune import Gain, tune
    scenarios = [{"arm.payload": 0.35}, {"arm.payload": 0.65}]
    gains = [Gain("c_elbow.kd", 3.0, 40.0)]
    kwargs = dict(start={"c_elbow.kd": 11.4}, measure="worst", popsize=5, maxiter=1, seed=2, progress=False)
    res = tune(engine, study, gains, scenarios, tmp_path, **kwargs)
    assert res.value <= res.start_value
    # the worst case over the scenarios, recomputed here on fresh instances, is the reported value
    digest = study.digest()
    by_hand = [evaluate(study, digest, {**res.gains, **s}, fresh=True)["objective"] for s in scenarios]
    assert res.value == max(by_hand) and res.check_value == res.value and res.check == by_hand
    start = [evaluate(study, digest, {"c_elbow.kd": 11.4, **s}, fresh=True)["objective"] for s in scenarios]
    assert res.start_value == max(start)
    lines = (tmp_path / "tune_rows.csv").read_text().count("\n")
    # a row per distinct candidate and scenario: a candidate proposed twice (scipy 1.11 does, with
    # this seed) is run once, its rows reused as a resume reuses them
    distinct = {tuple(sorted(g.items())) for g, _ in res.history}
    assert len(res.history) == res.evaluations and lines == 1 + len(scenarios) * len(distinct)
    again = tune(engine, study, gains, scenarios, tmp_path, **kwargs)
    assert (tmp_path / "tune_rows.csv").read_text().count("\n") == lines      # nothing rerun
    assert again.gains == res.gains and again.value == res.value


# ----------------------------------------------------------------------------- command line

SPEC = """
servo:
  model: huang_two_link
  fmus: {fmus}
  axes:
    - {{joint: shoulder, move: [0.0, 1.2], inertia_parameter: shoulder_inertia, inertia_base: 0.04862,
       controller: {{kp: 200.0, kd: 0.68, ki: 10.0}}, motor: {{ratio: 60.0}}}}
    - {{joint: elbow, move: [0.0, 0.6], inertia_parameter: elbow_inertia,
       controller: {{kp: 39.0, kd: 11.4, ki: 100.0}}, motor: {{ratio: 60.0}}}}
  plant: {{solver.rtol: 1.0e-6}}
  vibration: ["link2.tip_deflection[2]"]
  t_start: 0.05
  duration: 0.2
  stop_time: 0.3
  step_size: 5.0e-4
design:
  kind: grid
  parameters:
    arm.payload: {{values: [0.9, 1.1], relative: true}}
    c_elbow.kd: {{values: [10.0, 13.0]}}
output: out
plots: {{worst: 1}}
"""


def test_sweep_command_writes_table_and_plots(study, tmp_path) -> None:
    from click.testing import CliRunner
    from flexmbs.cli import main
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(fmus=study.fmu_dir))
    res = CliRunner().invoke(main, ["sweep", str(spec), "--workers", "2", "--no-progress"])
    assert res.exit_code == 0, res.output
    import pandas as pd
    df = pd.read_parquet(tmp_path / "out" / "rows.parquet")
    assert list(df["status"]) == ["ok"] * 4
    assert sorted(zip(df["arm.payload"], df["c_elbow.kd"])) == [(0.45, 10.0), (0.45, 13.0), (0.55, 10.0), (0.55, 13.0)]
    for name in ("map_objective.png", "distributions.png", "worst.png"):
        assert (tmp_path / "out" / name).stat().st_size > 1000


def test_bad_spec_is_a_clean_error(study, tmp_path) -> None:
    from click.testing import CliRunner
    from flexmbs.cli import main
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(fmus=study.fmu_dir).replace("kind: grid", "kind: gird"))
    res = CliRunner().invoke(main, ["sweep", str(spec), "--no-progress"])
    assert res.exit_code == 1 and "design kind 'gird' (did you mean 'grid'?)" in res.output, res.output
    spec.write_text(SPEC.format(fmus=study.fmu_dir).replace("step_size:", "step_sise:"))
    res = CliRunner().invoke(main, ["sweep", str(spec), "--no-progress"])
    assert res.exit_code == 1 and "unknown entry 'step_sise' (did you mean 'step_size'?)" in res.output, res.output


def test_tune_command_writes_best_gains(study, tmp_path) -> None:
    import yaml
    from click.testing import CliRunner
    from flexmbs.cli import main
    spec = tmp_path / "tune.yaml"
    text = SPEC.format(fmus=study.fmu_dir).split("design:")[0]
    text += """tune:
  gains: {c_elbow.kd: {low: 5.0, high: 20.0}}
  uncertainty: {kind: grid, parameters: {arm.payload: {values: [0.8, 1.2], relative: true}}}
  measure: cvar
  alpha: 0.5
  popsize: 5
  maxiter: 0
  seed: 1
output: out
"""
    spec.write_text(text)
    res = CliRunner().invoke(main, ["tune", str(spec), "--workers", "2", "--no-progress"])
    assert res.exit_code == 0, res.output
    best = yaml.safe_load((tmp_path / "out" / "best_gains.yaml").read_text())
    assert 5.0 <= best["gains"]["c_elbow.kd"] <= 20.0
    assert best["value"] <= best["start_value"] and best["check_value"] == best["value"]
    assert best["measure"] == "cvar"


# ----------------------------------------------------------------------------- resume and interruptions

def test_a_last_line_cut_short_is_dropped_with_a_warning(tmp_path) -> None:
    from flexmbs.fmi.sweep.engine import RowsRepairedWarning, Table

    path = tmp_path / "rows.csv"
    table = Table(path, ["p"], ["m"])
    for k in range(2):
        table.append({"key": f"k{k}", "run": k, "p": 0.5 * k, "m": 1.0 + k, "status": "ok", "message": "",
                      "wall_s": 0.1})
    whole = path.read_bytes()
    path.write_bytes(whole[:-9])                       # a crash while the second row was written
    with pytest.warns(RowsRepairedWarning, match=str(path)):
        again = Table(path, ["p"], ["m"])
    assert list(again.rows()) == ["k0"]
    assert path.read_bytes() == whole[:whole.rstrip(b"\r\n").rfind(b"\n") + 1]
    Table(path, ["p"], ["m"])                          # whole now: opened without a warning


def test_the_table_reads_back_every_float_bit_for_bit(tmp_path) -> None:
    """A resumed or finished study's numbers are the ones its runs returned: floats written by
    repr read back identical (pandas' default CSV float parser before 3.0 missed last bits)."""
    from flexmbs.fmi.sweep.engine import Table

    values = np.random.default_rng(7).standard_normal(2000) * 10.0 ** np.random.default_rng(8).integers(-12, 12, 2000)
    values[:4] = 0.1 + 0.2, 1 / 3, 5e-324, 1.7976931348623157e308
    table = Table(tmp_path / "rows.csv", ["p"], ["m"])
    for k, v in enumerate(values):
        table.append({"key": f"k{k}", "run": k, "p": v, "m": -v, "status": "ok", "message": "", "wall_s": 0.1})
    df = table.frame()
    assert np.array_equal(df["p"].to_numpy(), values) and np.array_equal(df["m"].to_numpy(), -values)


def test_resume_reruns_the_run_whose_row_was_cut_short(study, engine, tmp_path) -> None:
    from flexmbs.fmi.sweep.engine import RowsRepairedWarning

    sets = gain_sets(3)
    first = sweep(engine, study, sets, tmp_path, progress=False)
    rows = tmp_path / "rows.csv"
    rows.write_bytes(rows.read_bytes()[:-20])
    rerun = []
    with pytest.warns(RowsRepairedWarning, match="rows.csv"):
        df = sweep(engine, study, sets, tmp_path, progress=False, on_row=lambda r: rerun.append(r["key"]))
    assert len(rerun) == 1 and list(df["status"]) == ["ok"] * 3
    assert np.array_equal(df[study.columns()].to_numpy(), first[study.columns()].to_numpy())


def test_sweep_command_builds_missing_fmus_and_sets_any_solver_setting(tmp_path) -> None:
    """An empty FMU folder: the command builds the four FMUs first (as the docs say), and the
    spec sets the plant's solver method (a word) next to its tolerance (a number)."""
    from click.testing import CliRunner

    from flexmbs.cli import main

    spec = tmp_path / "spec.yaml"
    text = (SPEC.format(fmus=tmp_path / "fmus")
            .replace("plant: {solver.rtol: 1.0e-6}", "plant: {solver.method: implicit, solver.rtol: 1.0e-5}")
            .replace("values: [0.9, 1.1], relative: true", "values: [1.0], relative: true")
            .replace("values: [10.0, 13.0]", "values: [12.0]"))
    spec.write_text(text)
    res = CliRunner().invoke(main, ["sweep", str(spec), "--workers", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert res.output.count("built ") == 4 and len(list((tmp_path / "fmus").glob("*.fmu"))) == 4, res.output
    import pandas as pd
    assert list(pd.read_parquet(tmp_path / "out" / "rows.parquet")["status"]) == ["ok"]
    for plant, words in (("{solver.method: 5}", "solver.method = 5.0: expected a word"),
                         ("{solver.methd: implicit}", "did you mean 'solver.method'")):
        spec.write_text(text.replace("{solver.method: implicit, solver.rtol: 1.0e-5}", plant))
        res = CliRunner().invoke(main, ["sweep", str(spec), "--no-progress"])
        assert res.exit_code == 1 and words in res.output, res.output


def test_ctrl_c_leaves_one_line_and_the_finished_rows(study, tmp_path) -> None:
    """Ctrl-C in a terminal sends SIGINT to the whole process group, workers included: the
    command prints one line saying where the rows are, no traceback, and exits with 130."""
    import subprocess
    import sys
    import time

    spec = tmp_path / "spec.yaml"
    # 48 runs: seconds of work left after the first row, so the study cannot finish between the
    # first row and the signal even when the machine is loaded
    gains = ", ".join(str(10.0 + 0.25 * i) for i in range(24))
    spec.write_text(SPEC.format(fmus=study.fmu_dir).replace("values: [10.0, 13.0]", f"values: [{gains}]"))
    rows = tmp_path / "out" / "rows.csv"
    exe = [sys.executable, "-m", "flexmbs", "sweep", str(spec), "--workers", "2", "--no-progress"]
    # a terminal's foreground job starts with SIGINT at its default; this process may have it
    # ignored (an ignored disposition is inherited, and Python then keeps it ignored)
    proc = subprocess.Popen(exe, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 600      # a hang guard, not a speed assertion
    while time.monotonic() < deadline and proc.poll() is None:
        if rows.is_file() and rows.read_text().count("\n") >= 2:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.count("interrupted: the finished runs are in rows.csv") == 1, err
    finished = rows.read_text().splitlines()[1:]
    assert finished and all(line.count(",") >= 4 for line in finished)


def test_an_fmu_of_another_version_of_the_model_is_built_again(study, tmp_path) -> None:
    """FMUs built from an earlier version of the model file (here one without the elbow_inertia
    parameter that the spec's axis sets): the command builds the plant again, says why, and
    runs; a parameter that the model does not have at all is refused before any run, naming
    the closest ones."""
    import shutil

    from click.testing import CliRunner

    from flexmbs.cli import main
    from flexmbs.fmi.build import build
    from flexmbs.model.catalog import models_dir

    text = (models_dir() / "huang_two_link.yaml").read_text()
    elbow = next(line for line in text.splitlines() if "name: elbow_inertia" in line)
    model, fmus = tmp_path / "huang_two_link.yaml", tmp_path / "fmus"
    model.write_text(text.replace(elbow + "\n", ""))
    build(model, fmus)
    for block in study.fmu_dir.glob("*.fmu"):
        if block.stem != "huang_two_link":
            shutil.copy(block, fmus)
    model.write_text(text)
    spec = tmp_path / "spec.yaml"
    base = (SPEC.format(fmus=fmus).replace("model: huang_two_link", f"model: {model}")
            .replace("values: [0.9, 1.1], relative: true", "values: [1.0], relative: true")
            .replace("values: [10.0, 13.0]", "values: [12.0]"))
    spec.write_text(base)
    res = CliRunner().invoke(main, ["sweep", str(spec), "--workers", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert [line.startswith("built ") for line in res.output.splitlines()].count(True) == 1, res.output
    why = "built from another version of huang_two_link.yaml or by another flexmbs"
    assert f"built {fmus / 'huang_two_link.fmu'} ({why})" in res.output, res.output
    import pandas as pd
    assert list(pd.read_parquet(tmp_path / "out" / "rows.parquet")["status"]) == ["ok"]
    spec.write_text(base.replace("inertia_parameter: elbow_inertia", "inertia_parameter: elbow_inertis"))
    res = CliRunner().invoke(main, ["sweep", str(spec), "--no-progress"])
    assert res.exit_code == 1 and "has no parameter 'elbow_inertis' (did you mean 'elbow_inertia'" in res.output, \
        res.output


def test_a_sweep_without_a_run_that_ended_ok_fails(study, tmp_path) -> None:
    """Every run diverging: the rows are written with their messages, and the command says that
    there is nothing to plot and exits with status 1 (a script sees it)."""
    from click.testing import CliRunner

    from flexmbs.cli import main

    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(fmus=study.fmu_dir).replace(
        "    arm.payload: {values: [0.9, 1.1], relative: true}\n    c_elbow.kd: {values: [10.0, 13.0]}",
        "\n".join(f"    {k}: {{values: [{v}]}}" for k, v in DIVERGING.items())))
    res = CliRunner().invoke(main, ["sweep", str(spec), "--workers", "1", "--no-progress"])
    assert res.exit_code == 1 and "no run ended ok" in res.output, res.output
    assert "1 diverged" in res.output and (tmp_path / "out" / "rows.csv").is_file(), res.output


def test_a_missing_design_extra_is_named_before_anything_is_built(study, tmp_path, monkeypatch) -> None:
    """Without Dask (the design extra) the command says what to install, before it builds."""
    import importlib.util

    from click.testing import CliRunner

    from flexmbs.cli import main

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "distributed" else find_spec(name, *a))
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(fmus=tmp_path / "fmus"))
    res = CliRunner().invoke(main, ["sweep", str(spec), "--no-progress"])
    assert res.exit_code == 1 and "pip install 'flexmbs[design]'" in res.output, res.output
    assert not (tmp_path / "fmus").exists()


def test_freeing_instances_never_initialised_logs_no_error(study, capfd) -> None:
    """A run that fails before initialisation (a refused parameter) frees its instances without
    calling fmi2Terminate, which the FMI 2.0 state machine does not allow there."""
    from flexmbs.fmi.cosim import Master

    master = Master(study.assembly(), logging=True)
    master.free()
    out = capfd.readouterr()
    assert "not allowed" not in out.out + out.err


def test_a_sweep_returns_its_own_rows_where_the_table_holds_another_studys(study, engine, tmp_path) -> None:
    """Two studies into one folder (the second another settling band, as an edited model would
    be another plant): rows.csv keeps both, the second sweep returns and writes to rows.parquet
    only its own rows."""
    import pandas as pd

    sets = gain_sets(1)
    sweep(engine, study, sets, tmp_path)
    other = replace(study, band=0.05)
    df = sweep(engine, other, sets, tmp_path)
    assert len(pd.read_csv(tmp_path / "rows.csv")) == 2
    assert list(df["key"]) == [row_key(other.digest(), sets[0])]
    assert list(pd.read_parquet(tmp_path / "rows.parquet")["key"]) == list(df["key"])
