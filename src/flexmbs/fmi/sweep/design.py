"""Designs of experiments: the parameter sets of a sweep.

A parameter is named `<element>.<variable>` as in the co-simulation (`arm.payload`,
`c_shoulder.kp`); its spec says how it varies:

- `values: [a, b, ...]`, or `low`, `high` and `num` (evenly spaced): for a `grid` (every
  combination);
- `low`, `high`: for a `lhs` (Latin hypercube, scipy.stats.qmc.LatinHypercube) or a
  `monte_carlo` design (uniform between them); Latin hypercube: McKay et al. 1979
  (docs/references.md);
- `distribution: NAME` with that scipy.stats distribution's keyword arguments under `args`
  (e.g. `{distribution: norm, args: {loc: 1, scale: 0.1}}`): for a `monte_carlo` design;
- `relative: true`: the numbers above are factors of the nominal value (the design's own value
  of the parameter), e.g. `{low: 0.7, high: 1.3, relative: true}` for +-30 %.

Samples come from scipy (qmc and scipy.stats) seeded by `seed`, so the same spec gives the same
parameter sets: that is what lets a rerun skip the rows already computed.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats
from scipy.stats import qmc

from flexmbs.names import did_you_mean

KINDS = ("grid", "lhs", "monte_carlo")


class DesignError(ValueError):
    """A design spec that cannot be sampled; the message names the parameter and the entry."""


@dataclass(frozen=True)
class Parameter:
    """How one parameter `<element>.<variable>` varies (see the module notes)."""

    name: str
    values: tuple[float, ...] = ()
    low: float | None = None
    high: float | None = None
    num: int | None = None
    distribution: str | None = None
    args: Mapping[str, float] = field(default_factory=dict)
    relative: bool = False


def _number(where: str, value: object) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(float(value)):
        raise DesignError(f"{where} = {value!r}: expected a finite number")
    return float(value)


def parameter(name: str, spec: Mapping[str, object]) -> Parameter:
    """A Parameter from its spec mapping (the YAML entry under `parameters: {name: spec}`)."""
    where = f"parameter {name}"
    if not isinstance(spec, Mapping):
        raise DesignError(f"{where}: expected a mapping (values, low/high/num, distribution/args, relative), "
                          f"got {spec!r}")
    known = ("values", "low", "high", "num", "distribution", "args", "relative")
    for key in spec:
        if key not in known:
            raise DesignError(f"{where}: unknown entry {key!r}{did_you_mean(str(key), known)}; "
                              f"known: {', '.join(known)}")
    values = spec.get("values", ())
    if not isinstance(values, Sequence) or isinstance(values, str):
        raise DesignError(f"{where}: values = {values!r}: expected a list of numbers")
    low = None if spec.get("low") is None else _number(f"{where}: low", spec["low"])
    high = None if spec.get("high") is None else _number(f"{where}: high", spec["high"])
    if (low is None) != (high is None) or (low is not None and not low < high):
        raise DesignError(f"{where}: low = {low}, high = {high}: give both, with low < high")
    num = spec.get("num")
    if num is not None and (not isinstance(num, numbers.Integral) or isinstance(num, bool) or num < 1):
        raise DesignError(f"{where}: num = {num!r}: expected an integer >= 1")
    distribution = spec.get("distribution")
    if distribution is not None:
        dist = getattr(stats, str(distribution), None)
        if not isinstance(dist, (stats.rv_continuous, stats.rv_discrete)):
            names = [n for n in dir(stats) if isinstance(getattr(stats, n), (stats.rv_continuous, stats.rv_discrete))]
            raise DesignError(f"{where}: distribution {distribution!r} is not a scipy.stats distribution"
                              f"{did_you_mean(str(distribution), names, n=3)}")
    args = spec.get("args", {}) or {}
    if not isinstance(args, Mapping):
        raise DesignError(f"{where}: args = {args!r}: expected a mapping of the distribution's keyword arguments")
    args = {str(k): _number(f"{where}: args.{k}", v) for k, v in args.items()}
    return Parameter(name, tuple(_number(f"{where}: values[{i}]", v) for i, v in enumerate(values)), low, high,
                     None if num is None else int(num), None if distribution is None else str(distribution),
                     args, bool(spec.get("relative", False)))


def _grid_values(p: Parameter) -> np.ndarray:
    if p.values:
        return np.array(p.values)
    if p.low is None or p.num is None:
        raise DesignError(f"parameter {p.name}: a grid needs values: [...] or low, high and num")
    return np.linspace(p.low, p.high, p.num)


def _range(p: Parameter, kind: str) -> tuple[float, float]:
    if p.low is None:
        raise DesignError(f"parameter {p.name}: a {kind} design needs low and high")
    return p.low, p.high


def parameter_sets(kind: str, parameters: Sequence[Parameter], nominal: Mapping[str, float],
                   samples: int | None = None, seed: int | None = None) -> list[dict[str, float]]:
    """The parameter sets ({name: value}) of a design of `kind` (grid, lhs or monte_carlo) over
    `parameters`; `nominal`: the design's own value of each parameter (for `relative` ones);
    `samples`: the number of sets of an lhs or monte_carlo design; `seed`: their random seed."""
    if kind not in KINDS:
        raise DesignError(f"design kind {kind!r}{did_you_mean(kind, KINDS)}: expected one of {', '.join(KINDS)}")
    if not parameters:
        raise DesignError("the design has no parameters")
    for p in parameters:
        if p.relative and p.name not in nominal:
            raise DesignError(f"parameter {p.name}: relative: true needs a nominal value, and the design has none "
                              "for it (give absolute numbers)")
    if kind == "grid":
        columns = [_grid_values(p) for p in parameters]
        table = np.array(list(itertools.product(*columns)), dtype=float)
    else:
        if samples is None or samples < 1:
            raise DesignError(f"a {kind} design needs samples >= 1, got {samples!r}")
        rng = np.random.default_rng(seed)
        if kind == "lhs":
            ranges = [_range(p, kind) for p in parameters]
            unit = qmc.LatinHypercube(d=len(parameters), seed=rng).random(samples)
            table = qmc.scale(unit, [r[0] for r in ranges], [r[1] for r in ranges])
        else:
            cols = []
            for p in parameters:
                if p.distribution is not None:
                    dist = getattr(stats, p.distribution)(**p.args)
                else:
                    low, high = _range(p, "monte_carlo (without a distribution)")
                    dist = stats.uniform(loc=low, scale=high - low)
                cols.append(np.asarray(dist.rvs(size=samples, random_state=rng), dtype=float))
            table = np.column_stack(cols)
    scale = np.array([nominal[p.name] if p.relative else 1.0 for p in parameters])
    return [{p.name: float(v) for p, v in zip(parameters, row)} for row in table * scale]
