"""High-level simulation: Model -> Result with named signals, CSV export and plots."""

from __future__ import annotations

import csv
import difflib
import time as _time
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy as np

from .kernels.outputs import sample
from .model.elements import Model
from .solvers.stepper import Settings, SolverError, Stepper
from .system import System, compile_model

InputSpec = Union[None, Mapping[str, float], Callable[[float], Mapping[str, float]]]


def lookup(table: Mapping, name: str, kind: str):
    """table[name], or a KeyError naming the closest known names."""
    try:
        return table[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(table), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"no {kind} {name!r}{hint}") from None


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


def _joint_unit(jtype: str, k: int) -> tuple[str, str]:
    """(position unit, torque unit) of coordinate k of a joint type."""
    if jtype == "prismatic" or (jtype == "cylindrical" and k == 0) or (jtype == "planar" and k < 2):
        return "m", "N"
    return "rad", "N.m"


def _signals(system: System, t: np.ndarray, X: np.ndarray, Ud: np.ndarray, Tau: np.ndarray,
             En: np.ndarray, Sens: np.ndarray) -> tuple[dict, dict]:
    """Name the sampled arrays."""
    S = system.arrays
    nq = S.nq
    sig: dict[str, np.ndarray] = {}
    units: dict[str, str] = {}

    def put(name: str, values: np.ndarray, unit: str) -> None:
        sig[name] = np.ascontiguousarray(values)
        units[name] = unit

    for jn in system.joints:
        j = system.model.joint(jn)
        q0, nqj = system.joint_q[jn]
        u0, nvj = system.joint_u[jn]
        if j.type in ("spherical", "free"):
            k0 = 3 if j.type == "free" else 0
            if j.type == "free":
                for i in range(3):
                    put(f"{jn}.r[{i + 1}]", X[:, q0 + i], "m")
                    put(f"{jn}.v[{i + 1}]", X[:, nq + u0 + i], "m/s")
            for i in range(4):
                put(f"{jn}.quat[{i + 1}]", X[:, q0 + k0 + i], "1")
            for i in range(3):
                put(f"{jn}.w[{i + 1}]", X[:, nq + u0 + k0 + i], "rad/s")
            continue
        for i in range(nvj):
            sfx = "" if nvj == 1 else f"[{i + 1}]"
            pu, tu = _joint_unit(j.type, i)
            put(f"{jn}.q{sfx}", X[:, q0 + i], pu)
            put(f"{jn}.qd{sfx}", X[:, nq + u0 + i], pu + "/s")
            put(f"{jn}.qdd{sfx}", Ud[:, u0 + i], pu + "/s2")
            if system.drives.get(jn, "passive") != "passive":
                put(f"{jn}.tau", Tau[:, u0 + i], tu)
    for bn, (e0, n) in system.body_eta.items():
        d = system.flex[bn]
        eta = X[:, e0:e0 + n]
        for i in range(n):
            put(f"{bn}.eta[{i + 1}]", eta[:, i], "1")
        tip = tip_marker(d)
        s0, Phi, _, H = tip
        u = eta @ Phi.T
        u[:, 0] -= 0.5 * np.einsum("ki,ij,kj->k", eta, H, eta)
        for i in range(3):
            put(f"{bn}.tip_deflection[{i + 1}]", u[:, i], "m")
    for s, name in enumerate(system.sensors):
        for i in range(3):
            put(f"{name}.r[{i + 1}]", Sens[:, s, i], "m")
            put(f"{name}.v[{i + 1}]", Sens[:, s, 3 + i], "m/s")
            put(f"{name}.w[{i + 1}]", Sens[:, s, 15 + i], "rad/s")
        for i in range(9):
            put(f"{name}.R[{i // 3 + 1},{i % 3 + 1}]", Sens[:, s, 6 + i], "1")
    put("energy.kinetic", En[:, 0], "J")
    put("energy.potential", En[:, 1] + En[:, 3], "J")
    put("energy.strain", En[:, 2], "J")
    put("energy.total", En.sum(axis=1), "J")
    return sig, units


def tip_marker(d):
    """Marker data of the tip: beam end, or the superelement node farthest from the origin."""
    if d.beam is not None:
        return d.marker(x=d.length)
    return d.marker(node=int(np.argmax(np.linalg.norm(d.node_positions, axis=1))))


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
    try:
        for k in range(1, t.size):
            stepper.advance(t[k - 1], x, t[k], U[k - 1])
            X[k] = x
            U[k, :len(system.inputs)] = _input_vector(system, inputs, t[k])
            if bar is not None:
                bar.update(1)
    except SolverError as err:
        # keep what was computed: the samples before the failing step
        err.partial = _result(system, stepper, settings, t[:k], X[:k], U[:k], _time.perf_counter() - wall)
        raise
    finally:
        if bar is not None:
            bar.close()
    return _result(system, stepper, settings, t, X, U, _time.perf_counter() - wall)


def _result(system: System, stepper: Stepper, settings: Settings, t: np.ndarray, X: np.ndarray,
            U: np.ndarray, wall: float) -> Result:
    """Evaluate the output signals at the sampled states."""
    S = system.arrays
    sensors = np.array(list(system.sensors.values()), dtype=np.int64)
    Xo = np.zeros_like(X)
    Ud = np.zeros((t.size, S.nv))
    Tau = np.zeros((t.size, S.nv))
    En = np.zeros((t.size, 4))
    Sens = np.zeros((t.size, sensors.size, 18))
    sample(system.ref, stepper.W, sensors, t, X, U, Xo, Ud, Tau, En, Sens)
    sig, units = _signals(system, t, Xo, Ud, Tau, En, Sens)
    stats = dict(method=settings.method, steps=stepper.nsteps, rejected=stepper.nrejected, wall_time=wall)
    return Result(t, sig, units, stats, Xo)
