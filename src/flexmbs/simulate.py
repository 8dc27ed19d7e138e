"""High-level simulation: Model -> Result with named signals, CSV export and plots."""

from __future__ import annotations

import csv
import time as _time
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy as np

from . import arguments as args
from .model.elements import METHODS, Model
from .names import lookup
from .signals import Evaluator, current_start, output_width, pose_slots, signal_table
from .solvers.stepper import Settings, SolverError, Stepper
from .compile import compile_model
from .system import System, model_argument
from .validity import check_energy, warn_large_deflections
from .warmup import prepare

InputSpec = Union[None, Mapping[str, float], Callable[[float], Mapping[str, float]]]


class Result:
    """Sampled simulation output. `result.time` [s]; `result["elbow.q"]` a signal by name;
    `result.names` all names; `result.units[name]` its unit; `result.stats` solver statistics;
    `result.states` the states [q; u; motor currents] per sample; `result.system` the compiled model (None when
    not known), which `animate` needs."""

    def __init__(self, time: np.ndarray, signals: dict[str, np.ndarray], units: dict[str, str],
                 stats: dict, states: np.ndarray, system: Optional[System] = None) -> None:
        self.time = time
        self.signals = signals
        self.units = units
        self.stats = stats
        self.states = states
        self.system = system

    @property
    def names(self) -> list[str]:
        return list(self.signals)

    def __getitem__(self, name: str) -> np.ndarray:
        return lookup(self.signals, name, "signal")

    def __contains__(self, name: str) -> bool:
        return name in self.signals

    def to_csv(self, path: str) -> None:
        """Write time and every signal as columns, with units in the header."""
        names = self.names
        data = np.column_stack([self.time] + [self.signals[n] for n in names])
        with open(path, "w", newline="") as f:
            # names like "tip.R[1,2]" hold commas: the csv module quotes them
            csv.writer(f).writerow(["time [s]"] + [f"{n} [{self.units.get(n, '')}]" for n in names])
            np.savetxt(f, data, delimiter=",")

    @classmethod
    def from_csv(cls, path: str, system: System) -> Result:
        """A Result (with its states) from a CSV written by to_csv / `flexmbs simulate --out`
        for the compiled model `system`. The position columns (joint q, quat, free-joint r, modal
        eta) must all be there: they hold the pose; velocity columns are taken when present (they do
        not change what is drawn; the modal rates, which have no column, are left at zero)."""
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
        names = [h.rsplit(" [", 1)[0] for h in header]
        if not names or names[0] != "time":
            raise ValueError(f"{path}: not a flexmbs result file (its first column must be 'time [s]')")
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        col = {n: i for i, n in enumerate(names)}
        table = signal_table(system)
        nq, nx = system.nq, system.nx
        missing = [s.name for s in table if s.index < nq and s.name not in col]
        if missing:
            raise ValueError(f"{path}: the position columns {', '.join(missing[:6])}{' ...' if len(missing) > 6 else ''} "
                             f"of model {system.model.name} are missing (write the CSV without --signals)")
        states = np.zeros((data.shape[0], nx))
        nu, ic = system.nq + system.nv, current_start(system)
        for s in table:
            at = s.index if s.index < nu else nu + s.index - ic if s.index >= ic else None
            if at is not None and s.name in col:
                states[:, at] = data[:, col[s.name]]
        signals = {n: data[:, i] for n, i in col.items() if n != "time"}
        units = {s.name: s.unit for s in table}
        return cls(data[:, 0], signals, {n: units.get(n, "") for n in signals}, {}, states, system=system)

    def plot(self, path: Optional[str] = None, signals: Optional[Sequence[str]] = None, title: str = ""):
        """Plot the chosen signals (default: joint positions, tip deflections, energies), one
        panel per unit: the axis names the quantity and its unit, the legend (right of the
        panel) each signal as `name [unit]`. Save to `path` (PNG) when given. Unknown names
        raise KeyError with the closest known names. Returns the matplotlib figure."""
        import matplotlib
        if path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        if signals is None:
            signals = [n for n in self.names if n.endswith(".q") or ".q[" in n or ".tip_deflection" in n
                       or n.startswith("energy.")]
        for n in signals:
            self[n]                       # KeyError naming the closest known signals
        if not signals:
            raise ValueError("no signals to plot")
        groups: dict[str, list[str]] = {}
        for n in signals:
            groups.setdefault(self.units.get(n, ""), []).append(n)
        fig, axes = plt.subplots(len(groups), 1, figsize=(8, 1.2 + 2.3 * len(groups)), sharex=True, squeeze=False)
        for ax, (unit, names) in zip(axes[:, 0], groups.items()):
            for n in names:
                ax.plot(self.time, self[n], label=f"{n} [{unit}]" if unit else n)
            quantity = _quantity(names)
            ax.set_ylabel(f"{quantity} [{unit}]" if unit else quantity)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        axes[-1, 0].set_xlabel("time [s]")
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=120)
            plt.close(fig)
        return fig

    def animate(self, path: str, **options):
        """Write a 3-D animation of the run: .html (interactive player, self-contained),
        .gif/.mp4 (movie) or .png (one frame); options as flexmbs.animate.animate (scale,
        speed, fps, max_frames, at, title). Returns the path written."""
        from .animate import animate

        return animate(self, path, **options)


def _quantity(names: Sequence[str]) -> str:
    """The quantity a panel shows, from its signal names: the part after the last dot shared
    by all (without indices), e.g. 'q', 'tip_deflection', or 'energy' for energies."""
    if all(n.startswith("energy.") for n in names):
        return "energy"
    kinds = {n.rsplit(".", 1)[-1].split("[")[0] for n in names}
    return kinds.pop() if len(kinds) == 1 else ", ".join(sorted(kinds))


def _input_vector(system: System, spec: InputSpec, t: float) -> np.ndarray:
    """The inputs at time t [s]: the defaults overridden by `spec` (checked: known names, finite
    values, so that a NaN input is reported as such, not as a solver failure)."""
    u = system.input_defaults.copy()
    if spec is None:
        return u
    values = args.input_values("simulate", spec(t) if callable(spec) else spec, system.inputs,
                               t if callable(spec) else None)
    for name, val in values.items():
        u[system.inputs.index(name)] = val
    return u


def _check_arguments(t_end: float, method: Optional[str], step: Optional[float], rtol: Optional[float],
                     atol: Optional[float], max_step: Optional[float], output_step: Optional[float],
                     inputs: InputSpec) -> None:
    """The arguments of simulate that need no compiled model, checked before compiling."""
    where = "simulate"
    args.number(where, "t_end", t_end, "non-negative", "s")
    if method is not None and method not in METHODS:
        raise ValueError(f"{where}: method = {method!r}: expected one of {', '.join(METHODS)}")
    for name, value in (("step", step), ("max_step", max_step), ("output_step", output_step)):
        args.optional_number(where, name, value, "positive", "s")
    args.tolerances(where, rtol, atol)
    if inputs is not None and not callable(inputs) and not isinstance(inputs, Mapping):
        raise ValueError(f"{where}: inputs = {inputs!r}: expected a mapping {{input name: value}} or a "
                         "function of time returning one")


def step_rate(system: System, settings: Settings) -> tuple[float, str] | None:
    """Integration steps per simulated second that a run will need at least, with the reason;
    None where no bound is known (the implicit method, a rigid model under dopri5). RK4 takes
    1 / step; DOPRI5 needs h <= 3.3 / omega_max for stability (its stability region reaches
    about 3.3 along the imaginary axis; Hairer & Wanner, Solving Ordinary Differential Equations
    II, 2nd ed., Springer 1996, Sec. IV.2), so omega_max / 3.3 for the highest kept mode
    omega_max [rad/s]."""
    if settings.method == "rk4":
        return 1.0 / settings.step, f"RK4 at step {settings.step:.3g} s"
    if settings.method == "dopri5" and system.flex:
        name, d = max(system.flex.items(), key=lambda item: float(np.max(item[1].freqs, initial=0.0)))
        omega = float(np.max(d.freqs, initial=0.0))
        return omega / 3.3, (f"the highest kept mode of body {name!r} at {omega / (2 * np.pi):.3g} Hz limits "
                             f"dopri5's step to about {3.3 / omega:.3g} s")
    return None


def check_effort(where: str, system: System, settings: Settings, t_end: float) -> None:
    """Refuse a run of t_end [s] whose number of integration steps (step_rate) would be
    impractical (beyond arguments.STEP_BUDGET), with the estimate and what to change."""
    rate = step_rate(system, settings)
    if rate is not None and rate[0] * t_end > args.STEP_BUDGET:
        raise ValueError(f"{where}: about {rate[0] * t_end:.3g} integration steps for {t_end:.3g} s ({rate[1]}), "
                         f"beyond the budget of {args.STEP_BUDGET:.3g}: keep fewer modes, check the body's "
                         "dimensions and units, use method='radau' (the default for a flexible model), or a shorter t_end")


def settings_of(model: Model, **overrides) -> Settings:
    """Solver settings from the model file, with keyword overrides (None values ignored); an rtol
    given by neither is the default of the method that runs (Model.solver_rtol)."""
    s = model.solver
    method = overrides.get("method") or model.solver_method()
    base = dict(method=method, step=s.step, rtol=model.solver_rtol(method), atol=s.atol, max_step=s.max_step)
    base.update({k: v for k, v in overrides.items() if v is not None})
    return Settings(**base)


def simulate(model: Union[Model, System], t_end: float, *, method: Optional[str] = None,
             step: Optional[float] = None, rtol: Optional[float] = None, atol: Optional[float] = None,
             max_step: Optional[float] = None, output_step: Optional[float] = None,
             inputs: InputSpec = None, x0: Optional[np.ndarray] = None, progress: bool = False,
             interpolate: bool = False, signals: Optional[Sequence[str]] = None) -> Result:
    """Simulate from t = 0 to t_end [s].

    model: a Model (compiled here), a compiled System, or a model file path or shipped model
    name (loaded and compiled here). method/step/rtol/atol/max_step override
    the model's solver settings. output_step [s]: sampling of the result (default the model's).
    inputs: {input name: value} held constant, or a function t -> dict sampled at each output
    time and held until the next (zero-order hold, as in co-simulation). x0: initial [q; u; i]
    (i: the armature currents [A] of the motor drives, none without them). interpolate: the
    implicit and radau methods step past the output samples (up to max_step) and interpolate
    them (implicit: cubic Hermite, of its order; radau: its collocation polynomial), where by default it lands on each, as an FMU does on each
    communication point; with a max_step above output_step that can take several times fewer
    steps (the spin-up beam at 10 ms samples, max_step 50 ms: 403 steps instead of 2,002), and
    the result then differs from an FMU's within the tolerance. With closed loops each step
    and each sample is projected onto the constraints (He's crank-rocker at 1 ms samples:
    about 100 steps for 0.5 s instead of 510). Constant inputs only; with an input function,
    and for the other methods, it changes nothing.
    signals: the names the result must hold (default: every signal). When each follows from the
    poses (joint coordinates and rates, sensors, tip deflections, gauges, motor currents), the
    samples are evaluated without the dynamics, and the result holds those pose signals only
    (no accelerations, drive torques, energies or loop forces, and no energy-drift check): an
    output sample of the 3-frame spin-up beam is then its forward kinematics. An unknown name
    is a KeyError naming the closest ones, before the run. (The natural formulation's result is
    always whole.)

    Every argument is checked before the run: a ValueError names the argument and what was
    expected (t_end >= 0, positive finite steps, rtol and atol within their ranges
    (arguments.tolerances), x0 of nq + nv + ni finite values,
    finite inputs, a result within arguments.OUTPUT_BUDGET, at most arguments.STEP_BUDGET steps).
    """
    _check_arguments(t_end, method, step, rtol, atol, max_step, output_step, inputs)
    model = model_argument("simulate", model)
    system = model if isinstance(model, System) else compile_model(model)
    mdl = system.model
    dynamics = mdl.solver.formulation == "natural" or _needs_dynamics(system, signals)   # names checked first
    settings = settings_of(mdl, method=method, step=step, rtol=rtol, atol=atol, max_step=max_step)
    settings.check("simulate")
    dt = output_step or mdl.solver.output_step
    nx = system.nx
    args.output_size("simulate", t_end / dt + 2, nx + output_width(system) + len(system.inputs))
    if x0 is not None:
        x0 = args.vector("simulate", "x0", x0, nx, "the initial state [q; u; motor currents]")
    if isinstance(inputs, Mapping):
        _input_vector(system, inputs, 0.0)  # names and values (a function's: at each sample)
    if mdl.solver.formulation != "natural":
        check_effort("simulate", system, settings, t_end)
    n_out = int(round(t_end / dt))
    t = np.linspace(0.0, n_out * dt, n_out + 1)
    if t[-1] < t_end - 1e-12:
        t = np.append(t, t_end)
    t[-1] = t_end
    if mdl.solver.formulation == "natural":   # its result is whole: `signals` changes nothing
        return _natural(system, t, settings, inputs, x0)
    stepper = Stepper(system, settings, interpolate=interpolate)
    x = system.x0 if x0 is None else np.array(x0, dtype=float)
    X = np.zeros((t.size, nx))
    U = np.zeros((t.size, max(1, len(system.inputs))))
    X[0] = x
    U[0, :len(system.inputs)] = _input_vector(system, inputs, 0.0)
    # the samples at once in numba (no Python between them) when nothing needs a call per sample
    at_once = stepper.samples_at_once and not callable(inputs) and t.size > 1
    compile_time = prepare(system, settings, x, U[0], 0.0, progress, samples=at_once, dynamics=dynamics)
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=t.size - 1, unit="samples", desc=mdl.name)
    wall = _time.perf_counter()

    def stats() -> dict:
        return dict(method=settings.method, steps=stepper.nsteps, rejected=stepper.nrejected,
                    jacobians=stepper.njacobians, factorizations=stepper.nfactorizations,
                    wall_time=_time.perf_counter() - wall, compile_time=compile_time)

    k = 1
    try:
        if at_once:
            U[1:] = U[0]
            k, error = stepper.advance_samples(t, X, U[0], None if bar is None else bar.update)
            if error is not None:
                raise error
        for k in range(k, t.size):
            stepper.advance(t[k - 1], x, t[k], U[k - 1])
            X[k] = x
            U[k, :len(system.inputs)] = _input_vector(system, inputs, t[k])
            if bar is not None:
                bar.update(1)
    except SolverError as err:
        # keep what was computed: the samples before the failing step
        err.partial = _result(system, stepper.W, stats(), t[:k], X[:k], U[:k], dynamics)
        raise
    finally:
        if bar is not None:
            bar.close()
    warn_large_deflections(system, t, X)
    result = _result(system, stepper.W, stats(), t, X, U, dynamics)
    if dynamics:
        check_energy(system, result, U[:, :len(system.inputs)], settings)
    return result


def _natural(system: System, t: np.ndarray, settings: Settings, inputs: InputSpec, x0) -> Result:
    """The natural-coordinate formulation (flexmbs.natural): its states read back as joint
    coordinates, evaluated into the usual signals, plus natural.energy [J] (from its own
    constant mass matrix), natural.residual (largest constraint residual after projection)."""
    from .natural import compile_natural, simulate_natural

    ns = compile_natural(system)          # refuses what the formulation does not model, by name
    if inputs or x0 is not None or system.inputs:
        raise ValueError(f"model {system.model.name}: the natural-coordinate formulation takes no inputs and no "
                         "initial state; it starts from the model's (assembled) initial values")
    if settings.method != "dopri5":
        raise ValueError(f"model {system.model.name}: the natural-coordinate formulation integrates with DOP853 "
                         f"(solver.method dopri5), not {settings.method}")
    run = simulate_natural(ns, t, rtol=settings.rtol, atol=settings.atol)
    stats = dict(method="natural coordinates, DOP853", evaluations=run["evaluations"], redundant=run["redundant"],
                 redundant_max=run["redundant_max"], rows=run["rows"], fill=run["fill"], wall_time=run["wall_time"])
    U = np.zeros((t.size, 1))
    res = _result(system, system.workspace(), stats, t, run["X"], U)
    res.signals["natural.energy"], res.units["natural.energy"] = run["energy"], "J"
    res.signals["natural.residual"], res.units["natural.residual"] = run["residual"], "1"
    check_energy(system, res, U[:, :0], settings)
    return res


def _needs_dynamics(system: System, names: Optional[Sequence[str]]) -> bool:
    """Whether the signals `names` (None: all) need the samples' dynamics (Evaluator.evaluate);
    a KeyError names an unknown one and the closest known."""
    if names is None:
        return True
    table = {s.name: s.index for s in signal_table(system)}
    poses = set(pose_slots(system).tolist())
    return any(lookup(table, name, "signal") not in poses for name in names)


def _result(system: System, W, stats: dict, t: np.ndarray, X: np.ndarray, U: np.ndarray,
            dynamics: bool = True) -> Result:
    """Evaluate the output signals at the sampled states (W: a joint-coordinate workspace);
    without the dynamics, the pose signals only (Evaluator.evaluate)."""
    table = signal_table(system)
    if not dynamics:
        poses = set(pose_slots(system).tolist())
        table = [s for s in table if s.index in poses]
    Y = np.zeros((t.size, output_width(system)))
    Evaluator(system, W).evaluate(t, X, U, Y, dynamics)
    sig = {s.name: np.ascontiguousarray(Y[:, s.index]) for s in table}
    units = {s.name: s.unit for s in table}
    states = np.hstack([Y[:, :system.nq + system.nv], Y[:, current_start(system):]])
    return Result(t, sig, units, stats, states, system=system)
