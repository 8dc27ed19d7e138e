"""Command line: `flexmbs simulate | animate | modes | linearize | check | models` (and `build`,
`sweep`, `tune`, from flexmbs.fmi.cli through the `flexmbs.commands` entry point).

    flexmbs models
    flexmbs check huang_two_link
    flexmbs simulate huang_two_link --t-end 5 --out run.csv --plot run.png
    flexmbs animate huang_two_link --t-end 5 -o run.html
    flexmbs modes spin_up_beam --n 4 --spin hub=6
    flexmbs linearize huang_two_link_rigid --inputs elbow.tau --outputs elbow.q -o lin.mat

Every user error (an invalid or missing model file, a failed integration, an unknown signal
name) is printed to stderr as one clear message and the command exits with status 1; pass
--debug before the command to see the Python traceback instead.
"""

from __future__ import annotations

import functools
import re
import sys
import time
import warnings
from typing import Any, Callable, Optional, Sequence

import click
import numpy as np

from .animate import MAX_FRAMES
from .model import JOINTS, METHODS, PROFILES, load_model
from .model.elements import Model, Profile
from .names import did_you_mean
from .signals import signal_table
from .simulate import Result, check_effort, settings_of, simulate, step_rate
from .solvers.stepper import Settings, SolverError
from .compile import compile_model
from .system import System
from .compiling import NOTICE_AFTER
from .user_errors import USER_ERRORS, message, show_warning


def _debug() -> bool:
    """True when `flexmbs --debug ...` asked for tracebacks."""
    return bool((click.get_current_context().find_root().obj or {}).get("debug"))


def _user_errors(command: Callable) -> Callable:
    """Turn user errors raised by `command` into a clean message and exit status 1. A pipe
    closed by its reader (`flexmbs sweep ... | head`) is not one: click ends that quietly."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except BrokenPipeError:
            raise
        except USER_ERRORS as exc:
            if _debug():
                raise
            raise click.ClickException(message(exc)) from None

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="flexmbs")
@click.option("--debug", is_flag=True, help="Show the Python traceback of errors.")
@click.option("--allow-outside-data", is_flag=True,
              help="Let a model read data files (superelements) outside its own folder.")
@click.pass_context
def main(ctx: click.Context, debug: bool, allow_outside_data: bool) -> None:
    """flexmbs: flexible multibody dynamics from a YAML model file.

    MODEL is a model file (see docs/model-file.md) or the name of a shipped model (`flexmbs
    models` lists them). Errors go to stderr with exit status 1.
    """
    ctx.obj = {"debug": debug, "allow_outside": allow_outside_data}
    if not debug:
        warnings.showwarning = show_warning


def _load(model_file: str) -> Model:
    """load_model with the group's --allow-outside-data."""
    options = click.get_current_context().find_root().obj or {}
    return load_model(model_file, allow_outside=bool(options.get("allow_outside")))


# ------------------------------------------------------------------------------ helpers

def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _output_names(system: System) -> dict[str, str]:
    """The signals `simulate` produces for this system, with units."""
    return {s.name: s.unit for s in signal_table(system)}


def _index_range(indices: list[str]) -> str:
    """'1', '2', '3' -> '[1..3]'; '1,1' .. '3,3' -> '[1,1..3,3]'; one index -> '[i]'."""
    return f"[{indices[0]}]" if len(indices) == 1 else f"[{indices[0]}..{indices[-1]}]"


def _grouped_outputs(units: dict[str, str]) -> list[str]:
    """One line per signal prefix (a joint, body, sensor or 'energy'), indexed names collapsed:
    'tip: r[1..3] [m], v[1..3] [m/s], ...'."""
    by_prefix: dict[str, dict[tuple[str, str], list[str]]] = {}
    for name, unit in units.items():
        prefix, _, rest = name.partition(".")
        m = re.fullmatch(r"(.*)\[([0-9,]+)\]", rest)
        base, index = (m.group(1), m.group(2)) if m else (rest, "")
        by_prefix.setdefault(prefix, {}).setdefault((base, unit), []).append(index)
    lines = []
    for prefix, groups in by_prefix.items():
        parts = [f"{base}{_index_range(idx) if idx != [''] else ''} [{unit}]"
                 for (base, unit), idx in groups.items()]
        lines.append(f"{prefix}: {', '.join(parts)}")
    return lines


def _profile_text(p: Optional[Profile]) -> str:
    if p is None:
        return "(no profile)"
    params = ", ".join(f"{k}={_fmt(v) if isinstance(v, float) else list(v)}"
                       for k in (PROFILES[p.type].fields if p.type in PROFILES else ()) for v in [getattr(p, k)])
    return f"{p.type}({params})"


def _drive_text(system: System, model: Model, joint_name: str) -> str:
    j = model.joint(joint_name)
    d = j.drive
    if d.type == "passive":
        return "passive"
    if d.type == "torque":
        return f"torque (input {j.name}.tau, default {_fmt(d.torque)})"
    if d.type == "motion":
        return f"motion {_profile_text(d.profile)}"
    if d.type == "motor":
        m = d.motor
        return (f"motor (input {j.name}.voltage, default {_fmt(d.voltage)} V): R {_fmt(m.R)} ohm, L {_fmt(m.L)} H, "
                f"k_t {_fmt(m.k_t)} N m/A, ratio {_fmt(m.ratio)}, efficiency {_fmt(m.efficiency)} "
                f"(fading below {_fmt(m.w_band)} rad/s), J_rotor {_fmt(m.J_rotor)} kg m^2, b_motor {_fmt(m.b_motor)} N m s/rad")
    return (f"servo {_profile_text(d.profile)}, kp {_fmt(d.kp)}, kd {_fmt(d.kd)}, "
            f"motor inertia {_fmt(d.motor_inertia)} kg m^2")


def _parse_signals(text: Optional[str]) -> Optional[list[str]]:
    if text is None:
        return None
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise click.BadParameter("expected a comma-separated list of signal names", param_hint="--signals")
    return names


def _check_signal_names(names: Sequence[str], known: Sequence[str]) -> None:
    """KeyError for the first unknown name, with the closest known names as suggestions."""
    for name in names:
        if name not in known:
            raise KeyError(f"no signal {name!r}{did_you_mean(name, known, n=3)} (flexmbs check MODEL lists them all)")


def _subset(result: Result, names: Sequence[str]) -> Result:
    """A Result with only the named signals (unknown names raise KeyError with suggestions)."""
    signals = {n: result[n] for n in names}
    return Result(result.time, signals, {n: result.units.get(n, "") for n in names}, result.stats,
                  result.states)


# ------------------------------------------------------------------------------ simulate

@main.command("simulate")
@click.argument("model_file", metavar="MODEL")
@click.option("--t-end", type=click.FloatRange(min=0.0, min_open=True), required=True,
              help="End time [s].")
@click.option("--method", type=click.Choice(METHODS), default=None,
              help="Integrator (default: the model's solver.method, else radau for a model with a flexible "
                   "body, dopri5 for a rigid one).")
@click.option("--rtol", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="Relative tolerance of dopri5/implicit/radau (default: the model's solver.rtol, else the "
                   "method's: 1e-5 for radau, 1e-6 for the others).")
@click.option("--atol", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="Absolute tolerance (default: rtol times the state scales).")
@click.option("--step", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="RK4 step / initial step [s].")
@click.option("--max-step", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="Largest internal step of dopri5/implicit/radau [s].")
@click.option("--output-step", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="Sampling interval of the results [s] (default: solver.output_step).")
@click.option("--out", "out_csv", type=click.Path(dir_okay=False), default=None,
              help="Write the signals to this CSV file (units in the header).")
@click.option("--plot", "out_png", type=click.Path(dir_okay=False), default=None,
              help="Save a plot of the signals to this PNG file.")
@click.option("--signals", "signals_text", default=None, metavar="A,B,...",
              help="Only these signals in the CSV and plot (e.g. elbow.q,link2.tip_deflection[2]); when none "
                   "needs the dynamics (accelerations, torques, energies, loop residuals and forces), they are not evaluated.")
@click.option("--input", "input_values", multiple=True, metavar="NAME=VALUE",
              help="Hold an input constant during the run, e.g. elbow.tau=0.5 (repeatable).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Show a progress bar.")
@click.option("--interpolate", is_flag=True,
              help="Implicit and radau methods: step past the output samples (up to --max-step) and interpolate them, "
                   "where by default it lands on each as an FMU does (faster with a --max-step above "
                   "--output-step; the results then differ from an FMU's within the tolerance).")
@_user_errors
def simulate_command(model_file: str, t_end: float, method: Optional[str], rtol: Optional[float],
                     atol: Optional[float], step: Optional[float], max_step: Optional[float],
                     output_step: Optional[float], out_csv: Optional[str], out_png: Optional[str],
                     signals_text: Optional[str], input_values: Sequence[str], progress: bool,
                     interpolate: bool) -> None:
    """Simulate MODEL from t = 0 to --t-end and print a summary."""
    names = _parse_signals(signals_text)
    model = _load(model_file)
    system = compile_model(model)
    if names is not None:  # check the names before a possibly long run
        _check_signal_names(names, list(_output_names(system)))
    wall = time.perf_counter()
    try:
        result = simulate(system, t_end, method=method, rtol=rtol, atol=atol, step=step, max_step=max_step,
                          output_step=output_step, progress=progress, interpolate=interpolate, signals=names,
                          inputs=_parse_pairs(input_values, "NAME=VALUE", "elbow.tau=0.5", "--input") or None)
    except SolverError:
        if progress:
            click.echo("", err=True)  # leave the unfinished progress bar line
        raise
    wall = time.perf_counter() - wall
    shown = _subset(result, names) if names is not None else result
    if out_csv:
        shown.to_csv(out_csv)
    if out_png:
        shown.plot(out_png, signals=names, title=model.name)
    settings = settings_of(model, method=method, step=step, rtol=rtol, atol=atol, max_step=max_step)
    _print_summary(model, system, result, settings, t_end, wall)
    if out_csv:
        click.echo(f"wrote {out_csv} ({len(shown.names)} signals, {result.time.size} samples)")
    if out_png:
        click.echo(f"wrote {out_png}")


def _print_summary(model: Model, system: System, result: Result, settings: Settings, t_end: float,
                   wall: float) -> None:
    st = result.stats
    how = (f"step {_fmt(settings.step)} s" if settings.method == "rk4"
           else f"rtol {_fmt(settings.rtol)}, max_step {_fmt(settings.max_step)} s")
    integ = st.get("wall_time", wall)
    click.echo(f"model    {model.name} ({model.source})")
    if "evaluations" in st:          # the natural-coordinate formulation (scipy's DOP853)
        click.echo(f"solver   {st['method']} (rtol {_fmt(settings.rtol)}): {st['evaluations']} evaluations, "
                   f"{st['redundant']} of {st['rows']} rows redundant")
    else:
        click.echo(f"solver   {settings.method} ({how}): {st.get('steps', 0)} steps, "
                   f"{st.get('rejected', 0)} rejected")
    compiling = st.get("compile_time", 0.0)
    compiled = f", {compiling:.3g} s compiling kernels (once per machine)" if compiling > NOTICE_AFTER else ""
    click.echo(f"time     {_fmt(t_end)} s simulated in {wall:.3g} s wall ({integ:.3g} s integrating, "
               f"{t_end / max(integ, 1e-12):.3g}x real time{compiled})")
    if "energy.total" not in result:   # --signals named pose signals only: no dynamics evaluated
        click.echo("energy   not evaluated (the --signals need no dynamics)")
    elif "energy_drift" in st:   # simulate measured it: a conservative model with zero inputs
        drift = abs(st["energy_drift"])
        click.echo(f"energy   conservative model: drift max|E - E(0)| = {drift:.3g} J "
                   f"({drift / st['energy_exchanged']:.2g} times the energy its motion exchanges)")
    else:
        e = result["energy.total"]
        click.echo(f"energy   E(0) = {_fmt(e[0])} J, E(end) = {_fmt(e[-1])} J "
                   "(not conservative: damping, drives or forces)")
    click.echo(f"final joint values at t = {_fmt(result.time[-1])} s:")
    width = max([len(n) for n in system.joints] + [4])
    for jn in system.joints:
        parts = []
        for name in result.names:
            prefix, _, rest = name.partition(".")
            if prefix == jn and re.fullmatch(r"(q|qd|r|v|quat|w)(\[\d+\])?", rest):
                parts.append(f"{rest} = {_fmt(result[name][-1])} {result.units[name]}")
        click.echo(f"  {jn:<{width}}  " + (", ".join(parts) if parts else "(fixed)"))


# ------------------------------------------------------------------------------ modes

def _parse_pairs(values: Sequence[str], form: str, example: str, option: str) -> dict[str, float]:
    """NAME=NUMBER pairs of a repeatable option, e.g. --spin hub=6 or --input crank.tau=2."""
    out: dict[str, float] = {}
    for text in values:
        name, sep, value = text.partition("=")
        try:
            if not (sep and name.strip()):
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise click.BadParameter(f"expected {form} (e.g. {example}), got {text!r}",
                                     param_hint=option) from None
    return out


@main.command("modes")
@click.argument("model_file", metavar="MODEL")
@click.option("--n", "n_modes", type=click.IntRange(min=1), default=None,
              help="Number of modes, lowest first (default: all).")
@click.option("--spin", multiple=True, metavar="JOINT=RATE",
              help="Turn JOINT at a constant RATE [rad/s] (repeatable).")
@click.option("--input", "input_values", multiple=True, metavar="NAME=VALUE",
              help="Hold an input at VALUE, e.g. the torques that hold an arm in its pose (default: its "
                   "default; repeatable).")
@_user_errors
def modes_command(model_file: str, n_modes: Optional[int], spin: Sequence[str], input_values: Sequence[str]) -> None:
    """Natural frequencies and damping ratios of MODEL, linearized about its static
    equilibrium (in the frame turning with the --spin joints, with the --input values held)."""
    spin_rates = _parse_pairs(spin, "JOINT=RATE", "hub=6", "--spin")
    values = _parse_pairs(input_values, "NAME=VALUE", "elbow.tau=0.5", "--input") or None
    try:
        from . import modes as modes_fn
    except ImportError:
        raise click.ClickException("modal analysis (flexmbs.modes) is not available in this "
                                   "flexmbs version") from None
    model = _load(model_file)
    try:
        res = modes_fn(model, n=n_modes, spin=spin_rates or None, inputs=values)
    except RuntimeError as exc:  # no equilibrium found, singular mass matrix, ...
        if isinstance(exc, SolverError) or _debug():
            raise
        raise click.ClickException(
            f"modal analysis failed: {exc}\n(the modes are computed about the static equilibrium "
            "nearest to the model's initial state q0 under the held inputs: start q0 near the equilibrium you "
            "mean, or hold the pose with --input, e.g. the joint torques that balance gravity there)") from None
    about = ", ".join(f"{j} = {_fmt(r)} rad/s" for j, r in spin_rates.items())
    click.echo(f"natural modes of {model.name}" + (f" spinning ({about})" if about else ""))
    freqs = np.asarray(res.frequencies_hz, dtype=float)
    zetas = np.asarray(res.damping_ratios, dtype=float)
    labels = list(getattr(res, "labels", []))
    header = f"{'mode':>4}  {'f [Hz]':>12}  {'omega [rad/s]':>14}  {'zeta':>9}"
    has_dom = len(labels) == freqs.size > 0
    click.echo(header + ("  dominant motion" if has_dom else ""))
    for k, (f, z) in enumerate(zip(freqs, zetas)):
        note = ""
        if f < 0:
            note = "  (divergent: statically unstable)"
        elif f == 0:
            note = "  (rigid-body)"
        dom = ""
        if has_dom:
            dom = "  " + labels[k]
        zt = "-" if not np.isfinite(z) else f"{0.0 if abs(z) < 1e-9 else z:.4g}"
        click.echo(f"{k + 1:>4}  {f:>12.6g}  {2 * np.pi * f:>14.6g}  {zt:>9}{dom}{note}")
    if n_modes is not None and freqs.size < n_modes:
        click.echo(f"(the model has only {freqs.size} modes)")


# ------------------------------------------------------------------------------ linearize

# Largest residual acceleration [rad/s2, m/s2] of a reference that counts as an equilibrium
# (the equilibrium's Newton leaves about 1e-10 of the first residual).
RESIDUAL_ACCELERATION = 1e-6

def _names(text: Optional[str], option: str) -> Optional[list[str]]:
    if text is None:
        return None
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise click.BadParameter("expected a comma-separated list of names", param_hint=option)
    return names


@main.command("linearize")
@click.argument("model_file", metavar="MODEL")
@click.option("--inputs", "inputs_text", default=None, metavar="A,B,...",
              help="The inputs of the linear model, in this order (default: every input of MODEL).")
@click.option("--outputs", "outputs_text", default=None, metavar="A,B,...",
              help="The outputs, e.g. elbow.q,link2.tip_deflection[2] (default: every free joint coordinate).")
@click.option("--input", "input_values", multiple=True, metavar="NAME=VALUE",
              help="Value of an input at the reference (default: its default; repeatable).")
@click.option("--t", "t_ref", type=float, default=0.0, show_default=True, help="Time of the reference [s].")
@click.option("--at", "at", type=click.Choice(["equilibrium", "initial"]), default="equilibrium", show_default=True,
              help="The reference state: the static equilibrium nearest the initial state (Newton from it, with "
                   "the --input values held), or the initial state itself.")
@click.option("-o", "--out", "out_path", type=click.Path(dir_okay=False), required=True,
              help="Write A, B, C, D with state, input and output names to this .npz or .mat file.")
@_user_errors
def linearize_command(model_file: str, inputs_text: Optional[str], outputs_text: Optional[str],
                      input_values: Sequence[str], t_ref: float, at: str, out_path: str) -> None:
    """Linearize MODEL about its static equilibrium (or, with --at initial, its initial state;
    flexmbs.linearize) and write the matrices. A reference that is not an equilibrium is
    reported with its residual acceleration."""
    from .linearize import equilibrium, linearize

    if not out_path.endswith((".npz", ".mat")):
        raise click.BadParameter(f"{out_path}: the name must end in .npz or .mat", param_hint="-o/--out")
    values = _parse_pairs(input_values, "NAME=VALUE", "elbow.tau=0.5", "--input") or None
    model = _load(model_file)
    x = None
    if at == "equilibrium":
        try:
            x = equilibrium(model, t=t_ref, inputs=values)
        except RuntimeError as exc:
            if isinstance(exc, SolverError) or _debug():
                raise
            raise click.ClickException(f"no static equilibrium found near the initial state ({exc}); to linearise "
                                       "about the initial state itself use --at initial") from None
    lin = linearize(model, t=t_ref, x=x, inputs=values, outputs=_names(outputs_text, "--outputs"))
    acc, coordinate = lin.residual_acceleration()
    off = acc > RESIDUAL_ACCELERATION
    if off:
        warnings.warn(f"the reference is not an equilibrium: {coordinate} has a residual acceleration of {acc:.3g} "
                      f"(rad/s2 or m/s2); the linear model holds near a state the system leaves at once"
                      + (" (linearise about the equilibrium: --at equilibrium)" if at == "initial" else
                         f" (the equilibrium search ended there, above {RESIDUAL_ACCELERATION:g}: a coordinate that "
                         "barely resists, or inputs that cannot hold the pose)"),
                      stacklevel=1)
    lin = lin.select(_names(inputs_text, "--inputs"))
    lin.save(out_path)
    lam = lin.eigs()
    click.echo(f"{lin.A.shape[0]} states, {len(lin.input_names)} inputs ({', '.join(lin.input_names) or 'none'}), "
               f"{len(lin.output_names)} outputs ({', '.join(lin.output_names)}); t = {_fmt(t_ref)} s, about the "
               + ("initial state" if at == "initial" else "state the equilibrium search ended at (the warning above)"
                  if off else "static equilibrium"))
    if lam.size:
        click.echo(f"eigenvalues [1/s], smallest first: {', '.join(f'{z:.4g}' for z in lam[:6])}"
                   + (" ..." if lam.size > 6 else ""))
    click.echo(f"wrote {out_path}")


# ------------------------------------------------------------------------------ check

@main.command("check")
@click.argument("model_file", metavar="MODEL")
@click.option("--t-end", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="Also simulate to this time [s] and report each flexible body's largest deformation "
                   "against the range of one floating frame.")
@_user_errors
def check_command(model_file: str, t_end: Optional[float]) -> None:
    """Load, validate and compile MODEL; print its bodies, joints, inputs and outputs (and,
    with --t-end, whether a run stays within the single floating frame's range). A model whose
    default run (fmu.stop_time, or --t-end) would need more integration steps than simulate
    accepts is refused with the estimate."""
    model = _load(model_file)
    system = compile_model(model)
    settings = settings_of(model)
    check_effort(str(model.source or model.name), system, settings, t_end if t_end is not None else model.fmu.stop_time)
    click.echo(f"model {model.name!r} ({model.source}): valid")
    if model.description:
        click.echo(f"  {model.description}")
    click.echo(f"  gravity {list(model.gravity)} m/s^2; {system.nq} position and {system.nv} velocity "
               f"coordinates")
    s = model.solver
    how = f"step {_fmt(s.step)} s" if settings.method == "rk4" else f"rtol {_fmt(settings.rtol)}, max_step {_fmt(s.max_step)} s"
    given = "" if s.method is not None else (", the default for a model with flexible bodies"
                                             if settings.method == "radau" else ", the default for a rigid model")
    click.echo(f"  solver {settings.method} ({how}{given}), output_step {_fmt(s.output_step)} s")
    rate = step_rate(system, settings)
    if rate is not None:
        click.echo(f"  at least {_fmt(rate[0])} integration steps per simulated second: {rate[1]}")

    click.echo(f"bodies ({len(system.bodies)}):")
    for bn in system.bodies:
        b = model.body(bn)
        d = system.flex.get(bn)
        if d is None:
            click.echo(f"  {bn}: rigid, mass {_fmt(b.mass)} kg, com {list(b.com)} m")
            continue
        what = (f"beam, length {_fmt(b.length)} m, {b.elements} elements" if b.type == "beam"
                else f"superelement, {d.node_positions.shape[0]} nodes")
        extra = f", tip mass {_fmt(b.tip_mass)} kg" if b.type == "beam" and b.tip_mass else ""
        click.echo(f"  {bn}: {what}, mass {_fmt(d.mass)} kg{extra}")
        freqs = ", ".join(_fmt(f) for f in np.asarray(d.freqs) / (2 * np.pi))
        stiff = "" if b.type != "beam" else (", geometric stiffening on" if b.geometric_stiffening
                                             else ", geometric stiffening OFF")
        extra_modes = d.n - b.modes
        kind = ("interface" if b.interface_modes else "static") + ("/acceleration" if b.acceleration_modes else "")
        split = f" ({b.modes} normal + {extra_modes} {kind})" if extra_modes else ""
        click.echo(f"    {d.n} modes{split} [Hz]: {freqs}{stiff}")

    click.echo(f"joints ({len(system.joints)}):")
    for jn in system.joints:
        j = model.joint(jn)
        nq, nv = JOINTS[j.type].nq, JOINTS[j.type].nv
        coords = f"{nq} coordinate{'s' if nq != 1 else ''}" if nq == nv else f"{nq} q / {nv} u"
        axis = f", axis {list(j.axis)}" if JOINTS[j.type].axes else ""
        click.echo(f"  {jn}: {j.type} {j.parent}.{j.parent_marker} -> {j.child}.{j.child_marker}, "
                   f"{coords}{axis}")
        details = [f"drive {_drive_text(system, model, jn)}"]
        if j.spring is not None:
            details.append(f"spring {_fmt(j.spring.stiffness)}, damper {_fmt(j.spring.damping)}, "
                           f"preload {_fmt(j.spring.preload)}")
        if j.rotor_inertia:
            details.append(f"rotor inertia {_fmt(j.rotor_inertia)} kg m^2")
        q_start, q_count = system.joint_q[jn]
        q0 = system.q0[q_start:q_start + q_count]
        if nq:
            details.append(f"q0 {[float(_fmt(v)) for v in q0]}")
        click.echo("    " + "; ".join(details))

    if model.loads:
        click.echo(f"loads ({len(model.loads)}):")
        for ld in model.loads:
            label = ld.name or ld.type
            if ld.type == "point_force":
                where = (f"on {ld.body}.{ld.marker}, force {list(ld.force)} N, torque {list(ld.torque)} N m "
                         f"({ld.frame} frame)")
            elif ld.type == "elastic_rod":
                i = [x for x in model.loads if x.type != "point_force"].index(ld)     # its spring-damper row
                k, m = system.arrays.sd_k[i], system.arrays.sd_m[i]
                where = (f"{ld.marker_a} - {ld.marker_b}, length {_fmt(ld.length)} m, E A / L {_fmt(k)} N/m, "
                         f"mass {_fmt(m)} kg, c {_fmt(ld.damping)} N s/m")
            else:
                where = (f"{ld.marker_a} - {ld.marker_b}, k {_fmt(ld.stiffness)} N/m, "
                         f"c {_fmt(ld.damping)} N s/m, rest length {_fmt(ld.rest_length)} m")
            click.echo(f"  {label}: {ld.type} {where}")
    if model.loops.cuts:
        held = ", ".join(model.loops.independent) or "none"
        click.echo(f"loops ({len(model.loops.cuts)} cut joints, assembled with {held} held):")
        for cut in model.loops.cuts:
            click.echo(f"  {cut.name}: {cut.type} {cut.parent}.{cut.parent_marker} -> {cut.child}.{cut.child_marker}, "
                       f"axis {list(cut.axis)}")
        redundant = ", ".join(system.loop_redundant) or "none"
        click.echo(f"  {len(system.loop_rows)} constraint rows; redundant, dropped: {redundant}")
        moved = "; ".join(f"{name} {_fmt(dq)} / {_fmt(du)}" for name, (dq, du) in system.loop_corrections.items())
        click.echo(f"  assembly changed the initial values (largest position / velocity change): {moved or 'none'}")

    click.echo(f"inputs ({len(system.inputs)}):")
    for name, default in zip(system.inputs, system.input_defaults):
        click.echo(f"  {name} (default {_fmt(default)})")
    if not system.inputs:
        click.echo("  (none)")
    units = _output_names(system)
    click.echo(f"outputs ({len(units)} signals):")
    for line in _grouped_outputs(units):
        click.echo(f"  {line}")
    if t_end is not None:
        _check_run(system, t_end)


def _check_run(system, t_end: float) -> None:
    """Simulate to t_end and print each flexible body's largest deformation against the limit."""
    from .simulate import simulate
    from .validity import ROTATION_LIMIT, LargeDeflectionWarning, largest_deflections

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LargeDeflectionWarning)  # reported below instead
        res = simulate(system, t_end)
    click.echo(f"run to {_fmt(t_end)} s: largest deformation of the flexible bodies (single frame valid up to "
               f"{ROTATION_LIMIT}):")
    found = largest_deflections(system, res.time, res.states)
    for f in found:
        verdict = "BEYOND the single frame's range: use segments" if f.value > ROTATION_LIMIT else "ok"
        click.echo(f"  {f.body}: {f.measure} {_fmt(f.value)} at t = {_fmt(f.t)} s, node at "
                   f"{[float(_fmt(v)) for v in f.where]} m: {verdict}")
    if not found:
        click.echo("  (no flexible bodies)")


# ------------------------------------------------------------------------------ animate

@main.command("animate")
@click.argument("model_file", metavar="MODEL")
@click.option("-o", "--out", "out_path", type=click.Path(dir_okay=False), required=True,
              help="Output file: .html (interactive 3-D player), .gif or .mp4 (movie), .png (one frame).")
@click.option("--result", "result_csv", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Animate this CSV of `flexmbs simulate --out` instead of simulating.")
@click.option("--t-end", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="End time [s] of the run to simulate (needed without --result).")
@click.option("--input", "inputs", multiple=True, metavar="NAME=VALUE",
              help="Hold an input constant during the run, e.g. crank.tau=2 (repeatable).")
@click.option("--scale", type=click.FloatRange(min=0.0), default=1.0, show_default=True,
              help="Deformation scale factor of the flexible bodies (adjustable in the HTML player).")
@click.option("--reference", type=click.Choice(["body", "chord"]), default="body", show_default=True,
              help="What the scaled deformation of a beam is measured from: its floating frame (body) "
                   "or the line from its root to its deformed end (chord: for beams held at both ends).")
@click.option("--speed", type=click.FloatRange(min=0.0, min_open=True), default=1.0, show_default=True,
              help="Playback speed, times real time.")
@click.option("--fps", type=click.FloatRange(min=0.0, min_open=True), default=25.0, show_default=True,
              help="Frames per second of a GIF/MP4.")
@click.option("--max-frames", type=click.IntRange(min=2), default=MAX_FRAMES, show_default=True,
              help="Most output samples the HTML player holds (evenly spread over the run, exact samples).")
@click.option("--at", "at_time", type=float, default=None,
              help="Time [s] of the frame of a .png (default: the end).")
@click.option("--progress/--no-progress", default=False, show_default=True,
              help="Show a progress bar while simulating.")
@_user_errors
def animate_command(model_file: str, out_path: str, result_csv: Optional[str], t_end: Optional[float],
                    inputs: Sequence[str], scale: float, reference: str, speed: float, fps: float,
                    max_frames: int, at_time: Optional[float], progress: bool) -> None:
    """Animate a run of MODEL in 3-D: simulate to --t-end (or read --result) and write -o."""
    from .animate import FORMATS, animate
    from .scene import frame_indices

    if not out_path.lower().endswith(FORMATS):
        raise click.BadParameter(f"{out_path}: the name must end in one of {', '.join(FORMATS)}",
                                 param_hint="-o/--out")
    if (result_csv is None) == (t_end is None):
        raise click.UsageError("give either --t-end (simulate now) or --result run.csv (a finished run)")
    if result_csv is not None and inputs:
        raise click.UsageError("--input applies to a simulation; --result replays a finished run")
    system = compile_model(load_model(model_file))
    if result_csv is not None:
        result = Result.from_csv(result_csv, system)
    else:
        result = simulate(system, t_end, inputs=_parse_pairs(inputs, "NAME=VALUE", "crank.tau=2", "--input") or None,
                          progress=progress)
    path = animate(result, out_path, scale=scale, speed=speed, fps=fps, max_frames=max_frames, at=at_time,
                   title=system.model.name, reference=reference)
    shown = frame_indices(result.time, max_frames=max_frames).size
    if path.suffix.lower() == ".html" and shown < result.time.size:
        click.echo(f"the page holds {shown} of the run's {result.time.size} output samples, evenly spread "
                   f"(raise --max-frames for more)")
    click.echo(f"wrote {path}")


@main.command("models")
def models_command() -> None:
    """List the model files shipped with flexmbs (use a name wherever a MODEL is asked for)."""
    from .model.catalog import model_description, shipped_models

    known = shipped_models()
    width = max(map(len, known), default=0)
    for name, path in known.items():
        click.echo(f"{name:<{width}}  {model_description(path)}")
    click.echo(f"({len(known)} models in {next(iter(known.values())).parent if known else '-'})")


def _register_plugins() -> None:
    """Add the commands other installed packages register under the entry-point group
    `flexmbs.commands` (the FMU layer's `build`): the core does not import them."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="flexmbs.commands"):
        if ep.name not in main.commands:
            main.add_command(ep.load(), ep.name)


_register_plugins()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
