"""Robust tuning of controller gains on the co-simulated system, on the sweep engine.

The optimiser is scipy's differential evolution (Storn and Price 1997; scipy.optimize.
differential_evolution) over the logarithms of the gains (they stay positive and a factor counts
the same everywhere in the box), with `workers=` a map that sends a whole generation through
the engine at once: every (candidate, scenario) pair is one task, so a generation of P
candidates over an uncertainty set of N scenarios keeps P N runs in flight. Why this optimiser:
it needs no gradients (a co-simulation gives none, and a diverged run is a plateau of penalty
values), it is global within the box, its generations are embarrassingly parallel, and with a
seed it is deterministic; optuna would add a dependency and a storage for little gain here.

The robust objective of candidate gains g is a measure over the uncertainty set {p_1 .. p_N} of
the metric m(g, p_i) (default `objective`, see flexmbs.fmi.servo.objective): `worst` (max_i),
`cvar` (conditional value at risk: the mean of the ceil(alpha N) largest values, Rockafellar and
Uryasev 2000) or `mean`. A run that fails scores `penalty`.

Every run is a row of the tuning table (gains, scenario parameters, metrics), keyed like a
sweep's rows: a rerun with the same seed follows the same path and takes every row it already
has from the table (resume). The best gains are finally re-run in fresh FMU instances.

Full references: docs/references.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .engine import OK, Engine, Study, Table, run_rows

MEASURES = ("worst", "cvar", "mean")


def robust_value(values: Sequence[float], measure: str = "worst", alpha: float = 0.2) -> float:
    """The `measure` of the values over the uncertainty set: worst (max), cvar (mean of the
    ceil(alpha n) largest), mean."""
    v = np.sort(np.asarray(values, dtype=float))[::-1]
    if measure == "worst":
        return float(v[0])
    if measure == "cvar":
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"cvar: alpha = {alpha}: expected 0 < alpha <= 1")
        return float(np.mean(v[:math.ceil(alpha * v.size)]))
    if measure == "mean":
        return float(np.mean(v))
    raise ValueError(f"measure {measure!r}: expected one of {', '.join(MEASURES)}")


@dataclass(frozen=True)
class Gain:
    """A tuned parameter `<element>.<variable>` searched between low and high (> 0) on a log scale."""

    name: str
    low: float
    high: float

    def __post_init__(self) -> None:
        if not (0.0 < self.low < self.high and math.isfinite(self.high)):
            raise ValueError(f"gain {self.name}: low = {self.low}, high = {self.high}: expected 0 < low < high")


@dataclass
class TuneResult:
    """The best gains and their robust value on the tuning set; `start_value`: that of the
    start gains (None without them); `check_value`: the best gains' value re-run in fresh
    instances; `values`/`check`: the per-scenario metric of the best gains (tuning, fresh);
    `evaluations`: candidate gains evaluated (each over every scenario)."""

    gains: dict[str, float]
    value: float
    start_value: float | None
    check_value: float
    values: list[float]
    check: list[float]
    evaluations: int
    generations: int
    history: list[tuple[dict[str, float], float]] = field(default_factory=list)


class RobustProblem:
    """The robust objective over log-gains z, evaluated generation by generation on the engine
    (`map`), every run a row of `table`."""

    def __init__(self, engine: Engine, study: Study, gains: Sequence[Gain], scenarios: Sequence[Mapping[str, float]],
                 table: Table, metric: str = "objective", measure: str = "worst", alpha: float = 0.2,
                 penalty: float = 1e3, progress: bool = True) -> None:
        if metric not in study.columns():
            raise ValueError(f"metric {metric!r}: expected one of {', '.join(study.columns())}")
        robust_value([0.0], measure, alpha)   # checks measure and alpha
        if not scenarios:
            raise ValueError("the uncertainty set has no scenarios")
        self.engine, self.study, self.gains, self.scenarios = engine, study, list(gains), list(scenarios)
        self.table, self.metric, self.measure, self.alpha = table, metric, measure, alpha
        self.penalty, self.progress = penalty, progress
        self.digest = study.digest()
        self.history: list[tuple[dict[str, float], float]] = []

    def gains_of(self, z: np.ndarray) -> dict[str, float]:
        return {g.name: float(v) for g, v in zip(self.gains, np.exp(z))}

    def sets(self, gains: Mapping[str, float]) -> list[dict[str, float]]:
        return [{**gains, **s} for s in self.scenarios]

    def metrics(self, rows: Iterable[Mapping[str, object]]) -> list[float]:
        """The metric of each row, `penalty` for a failed run or a non-finite value."""
        out = []
        for r in rows:
            v = float(r[self.metric])
            out.append(v if r["status"] == OK and math.isfinite(v) else self.penalty)
        return out

    def map(self, func: Callable, population: Iterable[np.ndarray]) -> list[float]:
        """The robust value of every candidate of a generation (the `workers=` map of
        differential_evolution; `func` is its wrapper of this problem and is not needed: the
        whole generation goes to the engine at once)."""
        candidates = [self.gains_of(np.asarray(z)) for z in population]
        sets = [p for g in candidates for p in self.sets(g)]
        rows = run_rows(self.engine, self.study, sets, self.table, progress=self.progress, digest=self.digest)
        n = len(self.scenarios)
        values = []
        for i, g in enumerate(candidates):
            v = robust_value(self.metrics(rows[i * n:(i + 1) * n]), self.measure, self.alpha)
            self.history.append((g, v))
            values.append(v)
        return values

    def __call__(self, z: np.ndarray) -> float:
        return self.map(None, [z])[0]


def tune(engine: Engine, study: Study, gains: Sequence[Gain], scenarios: Sequence[Mapping[str, float]],
         out_dir: str | Path, start: Mapping[str, float] | None = None, metric: str = "objective",
         measure: str = "worst", alpha: float = 0.2, popsize: int = 5, maxiter: int = 5, seed: int = 0,
         penalty: float = 1e3, progress: bool = True) -> TuneResult:
    """Differential evolution of `gains` against the uncertainty set `scenarios` (parameter
    sets of the plant), rows in out_dir/tune_rows.csv (resumable) and the fresh re-check of the
    best gains in out_dir/tune_check.csv. start: gains (clipped to the box) put first in the first
    generation, e.g. the nominal design's, whose robust value is reported. popsize: candidates per gain per
    generation (scipy's popsize); maxiter: generations after the first."""
    from scipy.optimize import differential_evolution

    study.check([g.name for g in gains] + list(scenarios[0] if scenarios else []))
    out_dir = Path(out_dir)
    names = [g.name for g in gains] + list(scenarios[0])
    problem = RobustProblem(engine, study, gains, scenarios, Table(out_dir / "tune_rows.csv", names, study.columns()),
                            metric, measure, alpha, penalty, progress)
    bounds = [(math.log(g.low), math.log(g.high)) for g in gains]
    x0 = None
    if start is not None:
        missing = [g.name for g in gains if g.name not in start]
        if missing:
            raise KeyError(f"start gains: no value for {', '.join(missing)}")
        x0 = np.clip(np.log([start[g.name] for g in gains]), [b[0] for b in bounds], [b[1] for b in bounds])
    res = differential_evolution(problem, bounds, popsize=popsize, maxiter=maxiter, seed=seed,
                                 polish=False, updating="deferred", workers=problem.map, x0=x0, tol=0.0)
    start_value = problem.history[0][1] if x0 is not None else None   # x0 leads the first generation
    best_gains, best_value = min(problem.history, key=lambda h: h[1])
    values = problem.metrics(run_rows(engine, study, problem.sets(best_gains), problem.table, progress=False,
                                      digest=problem.digest))
    check_table = Table(out_dir / "tune_check.csv", names, study.columns())
    check = problem.metrics(run_rows(engine, study, problem.sets(best_gains), check_table, progress=False,
                                     fresh=True, digest=problem.digest))
    return TuneResult(best_gains, best_value, start_value, robust_value(check, measure, alpha), values, check,
                      len(problem.history), int(res.nit), problem.history)
