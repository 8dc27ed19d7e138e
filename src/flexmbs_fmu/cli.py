"""`flexmbs build`: the FMU layer's command, registered with the core's command line through
the `flexmbs.commands` entry point (so the core never imports the FMU layer)."""

from __future__ import annotations

from typing import Sequence

import click

from flexmbs.cli import _message, _user_errors
from flexmbs.model import ModelError
from flexmbs.model.catalog import shipped_models

from .build import COMPONENTS, BuildError, build, build_component


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
@_user_errors
def build_command(model_files: Sequence[str], build_all: bool, blocks: Sequence[str], out_dir: str,
                  no_check: bool) -> None:
    """Build FMI 2.0 co-simulation FMUs of model files (or shipped model names) and blocks, and
    validate them."""
    jobs = [(path, build) for path in model_files] + [(name, build_component) for name in blocks]
    if build_all:
        jobs += [(str(p), build) for p in shipped_models().values()]
        jobs += [(name, build_component) for name in COMPONENTS if name not in blocks]
    if not jobs:
        raise click.UsageError("give model files, --block NAME, or --all")
    failed = 0
    for what, run in jobs:
        try:
            built = run(what, out_dir, check=not no_check)
        except (BuildError, ModelError, OSError) as exc:
            failed += 1
            click.echo(f"FAILED {what}: {_message(exc)}", err=True)
            continue
        check = "not validated" if no_check else "valid (fmpy validate, fmutool -check)"
        click.echo(f"{built.path}: {built.n_inputs} inputs, {built.n_parameters} parameters, "
                   f"{built.n_outputs} outputs; {check}")
    if failed:
        raise click.ClickException(f"{failed} of {len(jobs)} FMUs failed")
