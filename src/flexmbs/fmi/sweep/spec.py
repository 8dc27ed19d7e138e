"""Sweep and tune specs (YAML, docs/design-studies.md): the servo system, the design of
experiments or the tuning problem, the output folder and the plots. Paths in a spec are relative
to the spec file; a model is a file or a shipped model's name. Every error names the spec file
and the entry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from flexmbs.model.catalog import resolve
from flexmbs.names import did_you_mean

from ..servo import Axis, ServoDesign
from .design import DesignError, parameter, parameter_sets
from .engine import Study
from .tune import MEASURES, Gain


class SpecError(ValueError):
    """An invalid spec; the message names the file and the entry."""


def _keys(where: str, value: Any, required: Sequence[str], optional: Sequence[str]) -> Mapping[str, Any]:
    """`value` as a mapping with the required keys and no unknown ones."""
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: expected a mapping, got {value!r}")
    known = [*required, *optional]
    for key in value:
        if key not in known:
            raise SpecError(f"{where}: unknown entry {key!r}{did_you_mean(str(key), known)}; known: {', '.join(known)}")
    for key in required:
        if key not in value:
            raise SpecError(f"{where}: missing entry {key!r}")
    return value


def _float(where: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{where} = {value!r}: expected a number") from None


def _floats(where: str, value: Any) -> dict[str, float]:
    value = _keys(where, value or {}, (), tuple(value or {}))
    return {str(k): _float(f"{where}.{k}", v) for k, v in value.items()}


def _plant_values(where: str, value: Any) -> dict[str, float | str]:
    """Plant FMU parameters: numbers, and words for its String parameters (solver.method);
    checked against the FMU's variables by _check_plant once the FMU exists."""
    value = _keys(where, value or {}, (), tuple(value or {}))
    out: dict[str, float | str] = {}
    for k, v in value.items():
        if isinstance(v, str) and not _is_number(v):
            out[str(k)] = v
        else:
            out[str(k)] = _float(f"{where}.{k}", v)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_plant(where: str, study: Study) -> None:
    """Every plant value names a parameter of the plant FMU and has its type (a word for a String
    parameter, a number for a Real one)."""
    plant = study.assembly().elements[0]
    variables = study.variables()[plant.name]
    params = [n for n, v in variables.items() if v.causality == "parameter"]
    for name, value in study.design.plant.items():
        v = variables.get(name)
        if v is None or v.causality != "parameter":
            raise SpecError(f"{where}.{name}: not a parameter of the plant FMU {plant.fmu.name}"
                            f"{did_you_mean(name, params)}; its parameters: {', '.join(params)}")
        if (v.type == "String") != isinstance(value, str):
            raise SpecError(f"{where}.{name} = {value!r}: expected {'a word' if v.type == 'String' else 'a number'} "
                            f"({v.description})")


@dataclass
class Plots:
    """What the sweep plots: a metric map over two parameters, the metrics' distributions, and
    the time series of the `worst` runs by `worst_metric`."""

    map: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=lambda: ["objective", "peak_tip_deflection", "energy"])
    worst_metric: str = "objective"
    worst: int = 3


@dataclass
class Spec:
    """A parsed spec: the study, its design's parameter sets (sweep) or the tuning problem
    (tune), the output folder, the plots, and the FMUs built while reading it."""

    path: Path
    study: Study
    output: Path
    sets: list[dict[str, float]] = field(default_factory=list)
    plots: Plots = field(default_factory=Plots)
    gains: list[Gain] = field(default_factory=list)
    start: dict[str, float] = field(default_factory=dict)
    tune: dict[str, Any] = field(default_factory=dict)
    built: list[tuple[Path, str]] = field(default_factory=list)


def _servo(where: str, value: Any, base: Path) -> tuple[ServoDesign, Path, float]:
    s = _keys(where, value, ("model", "axes"),
              ("fmus", "plant", "vibration", "t_start", "duration", "stop_time", "step_size", "band"))
    model = str(s["model"])
    path = base / model
    model_path = path if path.is_file() else Path(resolve(model))
    axes = []
    if not isinstance(s["axes"], Sequence) or not s["axes"]:
        raise SpecError(f"{where}.axes: expected a list of axes")
    for i, a in enumerate(s["axes"]):
        w = f"{where}.axes[{i}]"
        a = _keys(w, a, ("joint", "move"), ("motor", "controller", "inertia_parameter", "inertia_base"))
        move = a["move"]
        if not isinstance(move, Sequence) or len(move) != 2:
            raise SpecError(f"{w}.move = {move!r}: expected [q_start, q_end]")
        axes.append(Axis(str(a["joint"]), _floats(f"{w}.motor", a.get("motor")),
                         _floats(f"{w}.controller", a.get("controller")),
                         (_float(f"{w}.move[0]", move[0]), _float(f"{w}.move[1]", move[1])),
                         str(a.get("inertia_parameter", "")), _float(f"{w}.inertia_base", a.get("inertia_base", 0.0))))
    vibration = s.get("vibration", [])
    if not isinstance(vibration, Sequence) or isinstance(vibration, str):
        raise SpecError(f"{where}.vibration = {vibration!r}: expected a list of plant output names")
    times = {k: _float(f"{where}.{k}", s[k]) for k in ("t_start", "duration", "stop_time", "step_size") if k in s}
    design = ServoDesign(model_path, axes, _plant_values(f"{where}.plant", s.get("plant")), [str(v) for v in vibration],
                         **times)
    return design, (base / str(s.get("fmus", "fmus"))).resolve(), _float(f"{where}.band", s.get("band", 0.02))


def _design(where: str, value: Any, nominal: Mapping[str, float]) -> list[dict[str, float]]:
    """The parameter sets of one design mapping, or of a list of them (concatenated)."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [p for i, d in enumerate(value) for p in _design(f"{where}[{i}]", d, nominal)]
    d = _keys(where, value, ("kind", "parameters"), ("samples", "seed"))
    params = _keys(f"{where}.parameters", d["parameters"], (), tuple(d["parameters"] or {}))
    try:
        return parameter_sets(str(d["kind"]), [parameter(str(n), p) for n, p in params.items()], nominal,
                              d.get("samples"), d.get("seed"))
    except DesignError as err:
        raise SpecError(f"{where}: {err}") from None


def load_spec(path: str | Path, command: str) -> Spec:
    """Read a spec for `command` (sweep or tune). The FMUs of its servo system that are not in its
    FMU folder yet, or were built from another version of their source, are built first
    (Spec.built: each path and why), since the design's nominal values come from them."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise SpecError(f"{path}: not valid YAML: {err}") from None
    section = {"sweep": ("design", "plots"), "tune": ("tune",)}[command]
    raw = _keys(str(path), raw, ("servo", section[0]), ("output", *section[1:]))
    base = path.resolve().parent
    design, fmu_dir, band = _servo(f"{path}: servo", raw["servo"], base)
    study = Study(design, fmu_dir, band)
    built = study.build_needed()
    _check_plant(f"{path}: servo.plant", study)
    try:
        study.check_assembly()
    except KeyError as err:
        raise SpecError(f"{path}: servo: {err.args[0]}") from None
    spec = Spec(path, study, (base / str(raw.get("output", f"out/{path.stem}"))).resolve(), built=built)
    nominal = study.nominal()
    if command == "sweep":
        spec.sets = _design(f"{path}: design", raw["design"], nominal)
        p = _keys(f"{path}: plots", raw.get("plots") or {}, (), ("map", "metrics", "worst_metric", "worst"))
        names = list(spec.sets[0]) if spec.sets else []
        spec.plots = Plots(list(p.get("map", names[:2])), list(p.get("metrics", Plots().metrics)),
                           str(p.get("worst_metric", "objective")), int(p.get("worst", 3)))
        for m in [*spec.plots.metrics, spec.plots.worst_metric]:
            if m not in study.columns():
                raise SpecError(f"{path}: plots: metric {m!r}{did_you_mean(m, study.columns())}; "
                                f"metrics: {', '.join(study.columns())}")
        return spec
    t = _keys(f"{path}: tune", raw["tune"], ("gains", "uncertainty"),
              ("metric", "measure", "alpha", "popsize", "maxiter", "seed", "penalty", "start"))
    where = f"{path}: tune"
    for name, g in _keys(f"{where}.gains", t["gains"], (), tuple(t["gains"] or {})).items():
        g = _keys(f"{where}.gains.{name}", g, ("low", "high"), ())
        try:
            spec.gains.append(Gain(str(name), _float(f"{where}.gains.{name}.low", g["low"]),
                                   _float(f"{where}.gains.{name}.high", g["high"])))
        except ValueError as err:
            raise SpecError(f"{where}.gains: {err}") from None
    spec.sets = _design(f"{where}.uncertainty", t["uncertainty"], nominal)
    start = t.get("start", "nominal")
    spec.start = ({g.name: nominal[g.name] for g in spec.gains if g.name in nominal} if start == "nominal"
                  else _floats(f"{where}.start", start))
    measure = str(t.get("measure", "worst"))
    if measure not in MEASURES:
        raise SpecError(f"{where}.measure = {measure!r}: expected one of {', '.join(MEASURES)}")
    spec.tune = {"metric": str(t.get("metric", "objective")), "measure": measure,
                 "alpha": _float(f"{where}.alpha", t.get("alpha", 0.2)), "popsize": int(t.get("popsize", 5)),
                 "maxiter": int(t.get("maxiter", 5)), "seed": int(t.get("seed", 0)),
                 "penalty": _float(f"{where}.penalty", t.get("penalty", 1e3))}
    if spec.tune["metric"] not in study.columns():
        raise SpecError(f"{where}.metric = {spec.tune['metric']!r}{did_you_mean(spec.tune['metric'], study.columns())}")
    return spec
