"""Load a model from YAML (or an already parsed dict) into the dataclasses of `elements`.

The YAML layout mirrors the dataclasses field by field, except that the ground markers are
written `ground: {markers: [...]}`. The expected type of every key is taken from the
dataclass annotations, so the schema cannot drift from `elements`. Lists of numbers are
stored as tuples, like the dataclass defaults. All problems of a file (syntax aside) are
collected and raised together as one ModelError with file:line.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import os
import re
import typing
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any, Literal, Optional, Sequence, Union, get_args, get_origin

import yaml

from .catalog import resolve
from .elements import Joint, Marker, Model
from .errors import Issue, Loc, ModelError, Report, show, unknown
from .validate import SUPERELEMENT_FILES, check_model


def load_model(path: Union[str, os.PathLike]) -> Model:
    """Read a model YAML file, check it, and return the Model (source = `path`). `path` may also
    be the name of a shipped model (`flexmbs models` lists them), e.g. "huang_two_link"."""
    path = resolve(path)
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError([Issue("", f"cannot read model file: {exc.strerror}", source)]) from None
    report = Report(source)
    data = _parse(text, source, report)
    return _build(data, source, report)


def model_from_dict(data: Any, source: Optional[str] = None) -> Model:
    """Build and check a Model from parsed YAML-layout data. `source` names the file the data
    came from: it is shown in errors and relative superelement paths resolve against its
    folder."""
    return _build(data, source, Report(source))


def _build(data: Any, source: Optional[str], report: Report) -> Model:
    model = _Converter(report).model(data, source)
    check_model(model, report)
    report.raise_if_any(names=data)
    return model


# ---------------------------------------------------------------- YAML with line numbers

class _Loader(yaml.SafeLoader):
    """Safe loader that also reads 1e-8 (no decimal point) as a float, as YAML 1.2 does."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _parse(text: str, source: str, report: Report) -> Any:
    """Parse YAML into plain dicts/lists/scalars, recording in `report.lines` the line of every
    key and list item. A syntax error is raised at once (nothing after it can be trusted)."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        return None if root is None else _node_data(root, (), loader, report)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at column {mark.column + 1}" if mark else ""
        context = f" ({exc.context} on line {exc.context_mark.line + 1})" if exc.context_mark else ""
        raise ModelError([Issue("", f"YAML syntax error{where}: {exc.problem}{context}", source,
                                mark.line + 1 if mark else None)]) from None
    except yaml.YAMLError as exc:
        raise ModelError([Issue("", f"YAML error: {exc}", source)]) from None
    finally:
        loader.dispose()


def _node_data(node: yaml.Node, loc: Loc, loader: _Loader, report: Report) -> Any:
    """Plain data of a YAML node, recording lines; a duplicated key keeps its first value."""
    report.lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.SequenceNode):
        return [_node_data(item, loc + (i,), loader, report) for i, item in enumerate(node.value)]
    if not isinstance(node, yaml.MappingNode):
        return loader.construct_object(node)
    loader.flatten_mapping(node)
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if not isinstance(key, str):
            report.add(loc, f"expected a name as key, got {show(key)}", line=line)
        elif key in out:
            report.add(loc + (key,), f"duplicate key {key!r} (first given on line "
                                     f"{report.lines[loc + (key,)]})", line=line)
        else:
            report.lines[loc + (key,)] = line
            out[key] = _node_data(value_node, loc + (key,), loader, report)
    return out


# ---------------------------------------------------------------- conversion to dataclasses

@dataclass
class _Ground:
    """The YAML `ground:` section."""

    markers: list[Marker] = dataclasses.field(default_factory=lambda: Model().ground_markers)


@dataclass
class _AxisAngle:
    """A marker rotation given as a rotation of `angle` degrees about `axis`."""

    axis: Sequence[float]
    angle: float


class _Coordinates:
    """q0/qd0: a list of numbers, or one number for a single-coordinate joint."""

    describe = "a number or a list of numbers"


class _Rotation:
    """Marker rotation: a 3x3 matrix R_BM, or {axis, angle} (kept as a dict)."""

    describe = "a 3x3 matrix (a list of 3 rows) or {axis: [x, y, z], angle: degrees}"


_HINT_OVERRIDES: dict[tuple[type, str], Any] = {
    (Joint, "q0"): _Coordinates,
    (Joint, "qd0"): _Coordinates,
    (Marker, "rotation"): Optional[_Rotation],
}

_INVALID = object()  # a rejected value (already reported)


@dataclass(frozen=True)
class _Key:
    hint: Any
    required: bool


@functools.cache
def _schema(cls: type) -> dict[str, _Key]:
    """The YAML keys of a dataclass: its fields with their annotated types."""
    hints = typing.get_type_hints(cls)
    schema = {f.name: _Key(_HINT_OVERRIDES.get((cls, f.name), hints[f.name]),
                           f.default is MISSING and f.default_factory is MISSING)
              for f in dataclasses.fields(cls)}
    if cls is Model:
        del schema["ground_markers"], schema["source"]
        schema["ground"] = _Key(_Ground, False)
    return schema


def _describe(hint: Any) -> str:
    """What a value of type `hint` looks like, for 'expected ...' messages."""
    origin, args = get_origin(hint), get_args(hint)
    if hasattr(hint, "describe"):
        return hint.describe
    if origin is Union:
        return " or ".join(_describe(arm) for arm in args if arm is not type(None))
    if origin is Literal:
        return "one of " + ", ".join(map(str, args))
    if dataclasses.is_dataclass(hint):
        return f"a {hint.__name__.lstrip('_')} mapping"
    if origin in (list, collections.abc.Sequence):
        return f"a list of {_plural(args[0])}" if args else "a list of numbers or a 3x3 matrix"
    return {float: "a number", int: "an integer", bool: "true or false", str: "a text"}[hint]


def _plural(hint: Any) -> str:
    if dataclasses.is_dataclass(hint):
        return "mappings"
    if get_origin(hint) is collections.abc.Sequence:
        return f"lists of {_plural(get_args(hint)[0])}"
    return {float: "numbers", int: "integers"}[hint]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Converter:
    """Turns parsed YAML data into dataclasses, reporting every key and type problem."""

    def __init__(self, report: Report) -> None:
        self.report = report

    def model(self, data: Any, source: Optional[str]) -> Model:
        values = self.record(data, Model, ())
        ground = values.pop("ground", None)
        if ground is not None:
            values["ground_markers"] = ground.markers
        model = Model(**values, source=source)
        if source is not None:
            folder = Path(source).parent
            for body in model.bodies or ():
                for name in SUPERELEMENT_FILES:
                    if isinstance(getattr(body, name), str):
                        setattr(body, name, os.path.abspath(folder / getattr(body, name)))
        return model

    def record(self, data: Any, cls: type, loc: Loc) -> dict[str, Any]:
        """The keyword arguments of `cls` from a YAML mapping. Rejected values and missing
        required ones become None: the entry still exists (list indices stay right) and the
        validator, which skips what was already reported, does not check a stand-in value."""
        schema = _schema(cls)
        if not isinstance(data, dict):
            self.report.add(loc, f"expected {_describe(cls)}, got {show(data)}")
            data = {}
        for key in [key for key in data if key not in schema]:
            self.report.add(loc, unknown(f"key {key!r}", key, schema, "valid keys"), at=loc + (key,))
        values: dict[str, Any] = {}
        for name, key in schema.items():
            if name in data:
                value = self.convert(data[name], key.hint, loc + (name,))
                values[name] = None if value is _INVALID else value
            elif key.required:
                values[name] = None
                self.report.add(loc, f"missing required key {name!r}", at=loc + (name,))
        return values

    def convert(self, value: Any, hint: Any, loc: Loc) -> Any:
        """`value` checked against the type `hint`, or _INVALID after reporting what was
        expected."""
        origin, args = get_origin(hint), get_args(hint)
        if origin is Union:
            if value is None and type(None) in args:
                return None
            (hint,) = [arm for arm in args if arm is not type(None)]
            return self.convert(value, hint, loc)
        if dataclasses.is_dataclass(hint):
            return hint(**self.record(value, hint, loc))
        if hint is _Rotation and isinstance(value, dict):
            return dataclasses.asdict(self.convert(value, _AxisAngle, loc))
        if hint is _Coordinates and _is_number(value):
            return (float(value),)
        if origin is list and isinstance(value, (list, tuple)):
            return [self.convert(item, args[0], loc + (i,)) for i, item in enumerate(value)]
        if origin is Literal and isinstance(value, str):
            if value in args:
                return value
            self.report.add(loc, unknown(repr(value), value, args, "valid choices"))
            return _INVALID
        result = _plain_value(value, _LIST_FORMS.get(hint, hint))
        if result is _INVALID:
            self.report.add(loc, f"expected {_describe(hint)}, got {show(value)}")
        return result


_LIST_FORMS = {_Coordinates: Sequence[float], _Rotation: Sequence[Sequence[float]]}


def _plain_value(value: Any, hint: Any) -> Any:
    """`value` if it is of the plain type `hint` (float, int, bool, str, or a Sequence of
    them, nested), else _INVALID. Lists become tuples, ints in float places floats."""
    if get_origin(hint) is collections.abc.Sequence:
        if not isinstance(value, (list, tuple)):
            return _INVALID
        # A bare Sequence (inertia) holds numbers or rows of numbers.
        rows = bool(value) and isinstance(value[0], (list, tuple))
        (item,) = get_args(hint) or (Sequence[float] if rows else float,)
        items = tuple(_plain_value(v, item) for v in value)
        return _INVALID if _INVALID in items else items
    if hint is float and _is_number(value):
        return float(value)
    if hint in (int, bool, str) and isinstance(value, hint):
        return _INVALID if hint is int and isinstance(value, bool) else value
    return _INVALID
