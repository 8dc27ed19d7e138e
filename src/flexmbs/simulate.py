"""High-level simulation: Model -> Result with named signals, CSV export and plots."""

from __future__ import annotations

import csv
import time as _time
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy as np

from .model.elements import Model
from .names import lookup
from .signals import Evaluator, output_width, signal_table
from .solvers.stepper import Settings, SolverError, Stepper
from .system import System, compile_model

InputSpec = Union[None, Mapping[str, float], Callable[[float], Mapping[str, float]]]


class Result:
    """Sampled simulation output. `result.time` [s]; `result["elbow.q"]` a signal by name;
    `result.names` all names; `result.units[name]` its unit; `result.stats` solver statistics."""

    def __init__(self, time: np.ndarray, signals: dict[str, np.ndarray], units: dict[str, str],
                 stats: dict, states: np.ndarray) -> None:
        self.time = time
        self.signals = signals
        self.units = units
        self.stats = stats
        self.states = states

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

    def plot(self, path: Optional[str] = None, signals: Optional[Sequence[str]] = None, title: str = ""):
        """Plot the chosen signals (default: joint angles, tip deflections, energies), one axis
        per unit; save to `path` (PNG) when given. Returns the matplotlib figure."""
        import matplotlib
        if path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        if signals is None:
            signals = [n for n in self.names if n.endswith(".q") or ".tip_deflection" in n
                       or n.startswith("energy.")]
        groups: dict[str, list[str]] = {}
        for n in signals:
            groups.setdefault(self.units.get(n, ""), []).append(n)
        fig, axes = plt.subplots(len(groups), 1, figsize=(8, 2.6 * len(groups)), sharex=True, squeeze=False)
        for ax, (unit, names) in zip(axes[:, 0], groups.items()):
            for n in names:
                ax.plot(self.time, self[n], label=n)
            ax.set_ylabel(unit)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7, loc="best")
        axes[-1, 0].set_xlabel("time [s]")
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=120)
            plt.close(fig)
        return fig


def _input_vector(system: System, spec: InputSpec, t: float) -> np.ndarray:
    u = system.input_defaults.copy()
    if spec is None:
        return u
    values = spec(t) if callable(spec) else spec
    for name, val in values.items():
        if name not in system.inputs:
            raise KeyError(f"unknown input {name!r}; the model's inputs are: {', '.join(system.inputs) or '(none)'}")
        u[system.inputs.index(name)] = val
    return u


def settings_of(model: Model, **overrides) -> Settings:
    """Solver settings from the model file, with keyword overrides (None values ignored)."""
    s = model.solver
    base = dict(method=s.method, step=s.step, rtol=s.rtol, atol=s.atol, max_step=s.max_step)
    base.update({k: v for k, v in overrides.items() if v is not None})
    return Settings(**base)


def simulate(model: Union[Model, System], t_end: float, *, method: Optional[str] = None,
             step: Optional[float] = None, rtol: Optional[float] = None, atol: Optional[float] = None,
             max_step: Optional[float] = None, output_step: Optional[float] = None,
             inputs: InputSpec = None, x0: Optional[np.ndarray] = None, progress: bool = False) -> Result:
    """Simulate from t = 0 to t_end [s].

    model: a Model (compiled here) or a compiled System. method/step/rtol/atol/max_step override
    the model's solver settings. output_step [s]: sampling of the result (default the model's).
    inputs: {input name: value} held constant, or a function t -> dict sampled at each output
    time and held until the next (zero-order hold, as in co-simulation). x0: initial [q; u].
    """
    system = model if isinstance(model, System) else compile_model(model)
    mdl = system.model
    settings = settings_of(mdl, method=method, step=step, rtol=rtol, atol=atol, max_step=max_step)
    dt = output_step or mdl.solver.output_step
    n_out = int(round(t_end / dt))
    t = np.linspace(0.0, n_out * dt, n_out + 1)
    if t[-1] < t_end - 1e-12:
        t = np.append(t, t_end)
    t[-1] = t_end
    if mdl.solver.formulation == "natural":
        return _natural(system, t, settings, inputs, x0)
    stepper = Stepper(system, settings)
    nx = system.nq + system.nv
    x = np.concatenate([system.q0, system.u0]) if x0 is None else np.array(x0, dtype=float)
    X = np.zeros((t.size, nx))
    U = np.zeros((t.size, max(1, len(system.inputs))))
    X[0] = x
    U[0, :len(system.inputs)] = _input_vector(system, inputs, 0.0)
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=t.size - 1, unit="samples", desc=mdl.name)
    wall = _time.perf_counter()

    def stats() -> dict:
        return dict(method=settings.method, steps=stepper.nsteps, rejected=stepper.nrejected,
                    jacobians=stepper.njacobians, factorizations=stepper.nfactorizations,
                    wall_time=_time.perf_counter() - wall)

    try:
        for k in range(1, t.size):
            stepper.advance(t[k - 1], x, t[k], U[k - 1])
            X[k] = x
            U[k, :len(system.inputs)] = _input_vector(system, inputs, t[k])
            if bar is not None:
                bar.update(1)
    except SolverError as err:
        # keep what was computed: the samples before the failing step
        err.partial = _result(system, stepper.W, stats(), t[:k], X[:k], U[:k])
        raise
    finally:
        if bar is not None:
            bar.close()
    return _result(system, stepper.W, stats(), t, X, U)


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
    return res


def _result(system: System, W, stats: dict, t: np.ndarray, X: np.ndarray, U: np.ndarray) -> Result:
    """Evaluate the output signals at the sampled states (W: a joint-coordinate workspace)."""
    table = signal_table(system)
    Y = np.zeros((t.size, output_width(system)))
    Evaluator(system, W).evaluate(t, X, U, Y)
    sig = {s.name: np.ascontiguousarray(Y[:, s.index]) for s in table}
    units = {s.name: s.unit for s in table}
    return Result(t, sig, units, stats, Y[:, :system.nq + system.nv].copy())
