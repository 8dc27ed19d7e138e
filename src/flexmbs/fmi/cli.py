"""`flexmbs build`, `flexmbs sweep`, `flexmbs tune`: the FMU layer's commands, registered with the core's command line through
the `flexmbs.commands` entry point (so the core never imports the FMU layer)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Callable, Sequence

import click

from flexmbs.cli import _debug, _user_errors
from flexmbs.model.catalog import shipped_models

from .batch import Job, Options, Outcome, default_jobs, plant_route, run
from .build import COMPONENTS


@click.command("build")
@click.argument("model_files", metavar="MODEL...", nargs=-1)
@click.option("--all", "build_all", is_flag=True,
              help="Build every shipped model (`flexmbs models`) and every block (dc_motor, pid_controller, "
                   "trajectory).")
@click.option("--block", "blocks", multiple=True, metavar="NAME",
              help="Build the FMU of a signal-flow block: dc_motor, pid_controller or trajectory (repeatable).")
@click.option("-o", "--out", "out_dir", default="fmus", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the FMUs (<model name>.fmu, <block>.fmu).")
@click.option("--no-check", is_flag=True, help="Skip fmpy validate and fmutool -check (not recommended).")
@click.option("--standalone", is_flag=True,
              help="Carry a Python runtime (libpython, its standard library, numpy, scipy, numba, llvmlite, ...) "
                   "so that a Linux x86-64 host without Python runs the FMU (docs/fmu.md, 'Handing an FMU over').")
@click.option("--no-kernels", is_flag=True,
              help="Do not carry the plant's compiled kernels (a smaller FMU that compiles them on first use on "
                   "every other machine).")
@click.option("--fmi-version", type=click.Choice(["2", "3"]), default="2", show_default=True,
              help="FMI version of the FMUs: 2 (FMI 2.0) or 3 (FMI 3.0); docs/fmu.md says which to pick.")
@click.option("-j", "--jobs", "jobs_at_once", type=click.IntRange(min=1), default=None, metavar="N",
              help="Build N FMUs at a time [default: the CPUs, at most 4]. The first plant of each route compiles "
                   "the kernels the others load, so they wait for it.")
@_user_errors
def build_command(model_files: Sequence[str], build_all: bool, blocks: Sequence[str], out_dir: str,
                  no_check: bool, standalone: bool, no_kernels: bool, fmi_version: str,
                  jobs_at_once: int | None) -> None:
    """Build FMI 2.0 or FMI 3.0 co-simulation FMUs of model files (or shipped model names) and
    blocks, and validate them."""
    names = [*model_files, *(str(p) for p in shipped_models().values())] if build_all else list(model_files)
    blocks = [*blocks, *(name for name in COMPONENTS if build_all and name not in blocks)]
    if not names and not blocks:
        raise click.UsageError("give model files, --block NAME, or --all")
    options = Options(out_dir, not no_check, standalone, not no_kernels, int(fmi_version))
    compiles = options.kernels or standalone   # the builds compile (or load) the kernels they carry
    if compiles and len(names) > 1:   # seconds, more on a first run (the loop closure's kernels): say so
        click.echo(f"reading the {len(names)} models: the first of each route compiles the kernels the others load",
                   err=True)
    jobs = [Job(name, "plant", plant_route(name) if compiles else None) for name in names] + \
        [Job(name, "block") for name in blocks]
    check = "not validated" if no_check else "valid (fmpy validate, fmutool -check)"

    def started(job: Job, k: int) -> None:
        # said as each build starts: a first build compiles for minutes before its own line
        click.echo(f"building {Path(job.what).stem} ({k} of {len(jobs)})", err=True)

    def ended(outcome: Outcome) -> None:
        if outcome.failed is not None:
            click.echo(f"FAILED {outcome.job.what}: {outcome.failed}", err=True)
            return
        built = outcome.built
        size = built.path.stat().st_size / 1e6
        click.echo(f"{built.path}: FMI {built.fmi_version}.0, {built.n_inputs} inputs, {built.n_parameters} "
                   f"parameters, {built.n_outputs} outputs, {size:.1f} MB; {check}")

    outcomes = run(jobs, options, jobs_at_once or default_jobs(), started, ended, debug=_debug())
    failed = sum(o.failed is not None for o in outcomes)
    if failed:
        raise click.ClickException(f"{failed} of {len(jobs)} FMUs failed")


# ------------------------------------------------------------------------------ design studies

def _engine_options(command: Callable) -> Callable:
    """--scheduler, --workers, -o and --progress of sweep and tune."""
    command = click.option("--progress/--no-progress", default=True, show_default=True,
                           help="Show a progress bar.")(command)
    command = click.option("-o", "--out", "out_dir", default=None, type=click.Path(file_okay=False),
                           help="Output folder (default: the spec's `output`, else out/<spec name>).")(command)
    command = click.option("--workers", type=click.IntRange(min=1), default=None,
                           help="Worker processes of the local cluster (default: the machine's cores).")(command)
    return click.option("--scheduler", default=None, metavar="ADDRESS",
                        help="Run on the Dask scheduler at ADDRESS (e.g. tcp://10.0.0.5:8786) instead of a new "
                             "local cluster; its workers must see the FMU folder at the same path.")(command)


def _interruptible(rows: str) -> Callable[[Callable], Callable]:
    """Ctrl-C during a study: one line saying where the finished rows are and how to go on, exit
    status 130 (the rows written stay; a rerun resumes)."""
    def wrap(command: Callable) -> Callable:
        @functools.wraps(command)
        def run(*args, **kwargs):
            try:
                return command(*args, **kwargs)
            except KeyboardInterrupt:
                click.echo(f"\ninterrupted: the finished runs are in {rows} of the output folder; run the same "
                           "command again to resume", err=True)
                sys.exit(130)
        return run
    return wrap


def _prepare(spec_file: str, command: str, out_dir: str | None):
    from .sweep.engine import require_design_extra
    from .sweep.spec import load_spec

    require_design_extra()   # before any FMU is built
    spec = load_spec(spec_file, command)
    if out_dir:
        spec.output = Path(out_dir)
    for path, why in spec.built:
        click.echo(f"built {path} ({why})")
    return spec


@click.command("sweep")
@click.argument("spec_file", metavar="SPEC.yaml", type=click.Path(exists=True, dir_okay=False))
@_engine_options
@_interruptible("rows.csv")
@_user_errors
def sweep_command(spec_file: str, scheduler: str | None, workers: int | None, out_dir: str | None,
                  progress: bool) -> None:
    """Run the design of experiments of SPEC.yaml (docs/design-studies.md) on a Dask cluster:
    one row per run in OUT/rows.csv and rows.parquet, plots in OUT. A rerun skips the rows
    already in OUT/rows.csv; Ctrl-C keeps the rows written."""
    import time

    from .sweep import Engine, sweep
    from .sweep.plots import distributions, metric_map, worst_series

    spec = _prepare(spec_file, "sweep", out_dir)
    out = spec.output
    click.echo(f"{len(spec.sets)} runs of {spec.study.design.model.stem} -> {out}")
    with Engine(scheduler, workers) as engine:
        n_workers = len(engine.client.scheduler_info()["workers"])
        new: list[str] = []
        start = time.perf_counter()
        df = sweep(engine, spec.study, spec.sets, out, progress=progress, on_row=lambda row: new.append(row["key"]))
        wall = time.perf_counter() - start
        counts = df["status"].value_counts().to_dict()
        click.echo(f"rows: {', '.join(f'{n} {s}' for s, n in counts.items())} ({len(df) - len(new)} from an "
                   f"earlier run); {len(new)} runs in {wall:.1f} s on {n_workers} workers "
                   f"({60 * len(new) / max(wall, 1e-9):.1f} runs/min)")
        for row in df[df["status"] != "ok"].head(5).itertuples():
            click.echo(f"  run {row.run} {row.status}: {row.message}")
        click.echo(f"wrote {out / 'rows.csv'}, {out / 'rows.parquet'}")
        ok = df[df["status"] == "ok"]
        if not len(ok):
            raise click.ClickException("no run ended ok (their messages are above and in rows.csv), so there is "
                                       "nothing to plot")
        p = spec.plots
        if len(p.map) == 2:
            for m in p.metrics:
                click.echo(f"wrote {metric_map(df, p.map[0], p.map[1], m, out / f'map_{m}.png')}")
        click.echo(f"wrote {distributions(df, p.metrics, out / 'distributions.png')}")
        if p.worst:
            click.echo(f"wrote {worst_series(engine, spec.study, df, p.worst_metric, p.worst, out / 'worst.png')}")


@click.command("tune")
@click.argument("spec_file", metavar="SPEC.yaml", type=click.Path(exists=True, dir_okay=False))
@_engine_options
@_interruptible("tune_rows.csv")
@_user_errors
def tune_command(spec_file: str, scheduler: str | None, workers: int | None, out_dir: str | None,
                 progress: bool) -> None:
    """Tune the gains of SPEC.yaml robustly (differential evolution against its uncertainty set,
    docs/design-studies.md) on a Dask cluster; every run is a row of OUT/tune_rows.csv (a rerun
    resumes), the best gains go to OUT/best_gains.yaml after a re-check in fresh FMU instances."""
    import yaml

    from .sweep import Engine
    from .sweep.tune import tune

    spec = _prepare(spec_file, "tune", out_dir)
    out = spec.output
    t = spec.tune
    click.echo(f"tuning {', '.join(g.name for g in spec.gains)} against {len(spec.sets)} scenarios "
               f"({t['measure']} {t['metric']}) -> {out}")
    with Engine(scheduler, workers) as engine:
        res = tune(engine, spec.study, spec.gains, spec.sets, out, start=spec.start or None, progress=progress, **t)
    if res.start_value is not None:
        click.echo(f"start gains: {t['measure']} {t['metric']} {res.start_value:.6g}")
    click.echo(f"best gains after {res.generations + 1} generations ({res.evaluations} candidates): "
               + ", ".join(f"{k} {v:.6g}" for k, v in res.gains.items()))
    click.echo(f"  {t['measure']} {t['metric']} {res.value:.6g}; re-run in fresh instances {res.check_value:.6g}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "best_gains.yaml").write_text(yaml.safe_dump(
        {"gains": res.gains, "value": res.value, "start_value": res.start_value, "check_value": res.check_value,
         "measure": t["measure"], "metric": t["metric"]}, sort_keys=False))
    click.echo(f"wrote {out / 'tune_rows.csv'}, {out / 'best_gains.yaml'}")
