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
import stat
import typing
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any, Literal, Optional, Sequence, Union, get_args, get_origin

import yaml

from ..names import closest
from .catalog import resolve
from .elements import SUPERELEMENT_FILES, Joint, Marker, Model
from .errors import Issue, Loc, ModelError, Report, show, unknown
from .validate import check_model, noted


def load_model(path: Union[str, os.PathLike], *, allow_outside: bool = False) -> Model:
    """Read a model YAML file, check it, and return the Model (source = `path`). `path` may also
    be the name of a shipped model (`flexmbs models` lists them), e.g. "huang_two_link".

    Data files the model names (superelement matrices) must lie inside the model file's folder
    (symbolic links resolved) unless `allow_outside` is true, and so must the model file itself
    when `path` is a symbolic link. The file must be a regular file within the limits of
    `FILE_LIMITS` (size, nesting depth, scalar length, alias expansion)."""
    path = resolve(path)
    source = str(path)
    if not allow_outside:
        _inside_its_folder(path, source)
    report = Report(source)
    data = _parse(_read_text(path, source), source, report)
    return _build(data, source, report, allow_outside)


def model_from_dict(data: Any, source: Optional[str] = None, *, allow_outside: bool = False) -> Model:
    """Build and check a Model from parsed YAML-layout data. `source` names the file the data
    came from: it is shown in errors, relative superelement paths resolve against its folder and
    must stay inside it unless `allow_outside` is true."""
    return _build(data, source, Report(source), allow_outside)


def _build(data: Any, source: Optional[str], report: Report, allow_outside: bool) -> Model:
    model = _Converter(report).model(data, source, allow_outside)
    check_model(model, report)
    report.raise_if_any(names=data)
    report.warn_notes(data, noted(model))
    return model


# ---------------------------------------------------------------- reading the file safely

@dataclass(frozen=True)
class Limits:
    """Bounds on a model file, so that a hostile or broken file fails fast instead of hanging
    or exhausting memory (docs/model-file.md, "Limits"). bytes: file size; depth: nesting of
    mappings and lists; scalar: characters of one value; nodes: values after expanding every
    alias (`*name`) as often as it is used."""

    bytes: int = 256 * 1024
    depth: int = 40
    scalar: int = 4096
    nodes: int = 100_000


FILE_LIMITS = Limits()


def _fail(source: str, message: str, line: Optional[int] = None) -> ModelError:
    return ModelError([Issue("", message, source, line)])


def _inside_its_folder(path: Path, source: str) -> None:
    """Refuse a model path that is a symbolic link to a file outside the link's own folder, as a
    data file outside the model's folder is refused: a model path from elsewhere must not make
    flexmbs read (and quote in its errors) an arbitrary file."""
    real, home = os.path.realpath(path), os.path.realpath(path.parent)
    if os.path.commonpath([real, home]) != home:
        raise _fail(source, f"the model path is a symbolic link to {real}, outside its folder {home}; give "
                            "the file's own path, or allow files elsewhere (load_model(..., allow_outside=True), "
                            "flexmbs --allow-outside-data)")


def _read_text(path: Path, source: str) -> str:
    """The file's text, refusing at once what is not a regular file (a device such as /dev/zero
    or a FIFO would block or never end), a file above the size limit, and bytes that are not
    UTF-8 (with line and column)."""
    try:
        # O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _fail(source, f"cannot read model file: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _fail(source, "not a regular file (a device, FIFO, socket or folder); a model must "
                                "be a YAML text file")
        if info.st_size > FILE_LIMITS.bytes:
            raise _fail(source, f"the file has {info.st_size} bytes, more than the limit of "
                                f"{FILE_LIMITS.bytes} for a model file")
        data = os.read(fd, FILE_LIMITS.bytes + 1)
    finally:
        os.close(fd)
    if len(data) > FILE_LIMITS.bytes:  # grew while being read
        raise _fail(source, f"the file has more than the limit of {FILE_LIMITS.bytes} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _fail(source, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} "
                            "(save the file as UTF-8)", line) from None
    bad = _NON_PRINTABLE.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        column = bad.start() - (text.rfind("\n", 0, bad.start()) + 1) + 1
        raise _fail(source, f"control character U+{ord(bad.group()):04X} at column {column}; YAML "
                            "allows tabs, line breaks and printable characters only", line)
    return text


# Characters YAML 1.1 does not allow in a stream (PyYAML's Reader refuses them, outside our
# error handling): C0 controls but tab and line breaks, DEL, C1 controls but NEL, surrogates,
# U+FFFE and U+FFFF.
_NON_PRINTABLE = re.compile("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010FFFF]")


# ---------------------------------------------------------------- YAML with line numbers

class _LimitExceeded(Exception):
    """A file limit was exceeded while composing (message, 1-based line)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


if yaml.__with_libyaml__:
    from yaml._yaml import CParser as _Parser  # libyaml events: 3.4x faster (median, 100 kB)

    def _init_parser(loader: Any, text: str) -> None:
        _Parser.__init__(loader, text)
else:  # pragma: no cover - PyYAML built without libyaml
    class _Parser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
        """PyYAML's pure-Python event parser."""

    def _init_parser(loader: Any, text: str) -> None:
        yaml.reader.Reader.__init__(loader, text)
        yaml.scanner.Scanner.__init__(loader)
        yaml.parser.Parser.__init__(loader)


class _Loader(yaml.composer.Composer, _Parser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
    """Safe loader (events from libyaml when available, composed here in Python) that also reads
    1e-8 (no decimal point) as a float, as YAML 1.2 does, and stops at the nesting-depth and
    scalar-length limits while composing (the recursion of composing would otherwise end in a
    RecursionError on deep nesting)."""

    _depth = 0

    def __init__(self, text: str) -> None:
        _init_parser(self, text)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)

    def compose_node(self, parent: Optional[yaml.Node], index: Any) -> yaml.Node:
        self._depth += 1
        try:
            if self._depth > FILE_LIMITS.depth:
                raise _LimitExceeded(f"nested more than {FILE_LIMITS.depth} levels deep",
                                     self.peek_event().start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_scalar_node(self, anchor: Optional[str]) -> yaml.Node:
        node = super().compose_scalar_node(anchor)
        if len(node.value) > FILE_LIMITS.scalar:
            raise _LimitExceeded(f"a value of {len(node.value)} characters, more than the limit of "
                                 f"{FILE_LIMITS.scalar}", node.start_mark.line + 1)
        return node


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _check_graph(root: yaml.Node) -> None:
    """Walk the composed document as the conversion will, aliases expanded: refuse a node that
    contains itself (`a: &a [*a]`), nesting beyond the depth limit through aliases, and more
    nodes than the limit (an alias bomb: each level using the previous one several times)."""
    count = 0
    open_nodes: set[int] = set()  # ids of the nodes on the current path
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, leaving = stack.pop()
        if leaving:
            open_nodes.discard(id(node))
            continue
        line = node.start_mark.line + 1
        if id(node) in open_nodes:
            raise _LimitExceeded("an alias refers to a node that contains it (a recursive structure)", line)
        count += 1
        if count > FILE_LIMITS.nodes:
            raise _LimitExceeded(f"more than {FILE_LIMITS.nodes} values with every alias expanded "
                                 "(aliases used too many times, or a file too large)", line)
        if depth > FILE_LIMITS.depth:
            raise _LimitExceeded(f"nested more than {FILE_LIMITS.depth} levels deep (through aliases)", line)
        if isinstance(node, yaml.ScalarNode):
            continue
        open_nodes.add(id(node))
        stack.append((node, depth, True))
        children = (node.value if isinstance(node, yaml.SequenceNode)
                    else [n for pair in node.value for n in pair])
        stack.extend((child, depth + 1, False) for child in reversed(children))


def _parse(text: str, source: str, report: Report) -> Any:
    """Parse YAML into plain dicts/lists/scalars, recording in `report.lines` the line of every
    key and list item. A syntax error or an exceeded limit is raised at once (nothing after it
    can be trusted)."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_graph(root)
        return _node_data(root, (), loader, report)
    except _LimitExceeded as exc:
        raise _fail(source, f"file limit exceeded: {exc}", exc.line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at column {mark.column + 1}" if mark else ""
        context = f" ({exc.context} on line {exc.context_mark.line + 1})" if exc.context_mark else ""
        raise _fail(source, f"YAML syntax error{where}: {exc.problem}{context}",
                    mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise _fail(source, f"YAML error: {exc}") from None
    finally:
        loader.dispose()


def _construct(node: yaml.Node, loader: _Loader, loc: Loc, report: Report) -> Any:
    """The value of a scalar (or key) node; a value YAML recognises but cannot build (an
    impossible date, an integer beyond Python's digit limit) is reported and becomes _INVALID."""
    try:
        return loader.construct_object(node, deep=True)
    except (ValueError, OverflowError) as exc:
        report.add(loc, f"cannot read the value {show(node.value)}: {exc}", line=node.start_mark.line + 1)
        return _INVALID


def _node_data(node: yaml.Node, loc: Loc, loader: _Loader, report: Report) -> Any:
    """Plain data of a YAML node, recording lines; a duplicated key keeps its first value."""
    report.lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.SequenceNode):
        return [_node_data(item, loc + (i,), loader, report) for i, item in enumerate(node.value)]
    if not isinstance(node, yaml.MappingNode):
        return _construct(node, loader, loc, report)
    loader.flatten_mapping(node)
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = _construct(key_node, loader, loc, report)
        line = key_node.start_mark.line + 1
        if key is _INVALID:
            continue
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
    return {float: "numbers", int: "integers", str: "texts", bool: "true or false values"}[hint]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Converter:
    """Turns parsed YAML data into dataclasses, reporting every key and type problem."""

    def __init__(self, report: Report) -> None:
        self.report = report

    def model(self, data: Any, source: Optional[str], allow_outside: bool) -> Model:
        values = self.record(data, Model, ())
        ground = values.pop("ground", None)
        if ground is not None:
            values["ground_markers"] = ground.markers
        model = Model(**values, source=source)
        if source is not None:
            folder = Path(source).parent
            for i, body in enumerate(model.bodies or ()):
                for name in SUPERELEMENT_FILES:
                    if isinstance(getattr(body, name, None), str):
                        path = os.path.abspath(folder / getattr(body, name))
                        setattr(body, name, path)
                        if not allow_outside:
                            self.inside(("bodies", i, name), path, folder)
        return model

    def inside(self, loc: Loc, path: str, folder: Path) -> None:
        """Report a data file that lies outside the model's folder once symbolic links and
        `..` are resolved: a model file from elsewhere must not read arbitrary files."""
        real, home = os.path.realpath(path), os.path.realpath(folder)
        if os.path.commonpath([real, home]) != home:
            self.report.add(loc, f"the data file {path} is outside the model's folder {home}; move it "
                                 "there, or allow files elsewhere (load_model(..., allow_outside=True), "
                                 "flexmbs --allow-outside-data)")

    def record(self, data: Any, cls: type, loc: Loc) -> dict[str, Any]:
        """The keyword arguments of `cls` from a YAML mapping. Rejected values and missing
        required ones become None: the entry still exists (list indices stay right) and the
        validator, which skips what was already reported, does not check a stand-in value."""
        schema = _schema(cls)
        if not isinstance(data, dict):
            self.report.add(loc, f"expected {_describe(cls)}, got {show(data)}")
            data = {}
        for key in [key for key in data if key not in schema]:
            # a misspelt key stands for the one it resembles, when that is not given: the
            # validator's "missing" for it would repeat the same mistake
            meant = closest(key, [name for name in schema if name not in data])
            self.report.add(loc, unknown(f"key {key!r}", key, schema, "valid keys"),
                            at=loc + (meant[0] if meant else key,), line=self.report.line(loc + (key,)))
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
            if value not in args:   # reported here; kept, so that the checks of what it resembles run
                self.report.add(loc, unknown(repr(value), value, args, "valid choices"))
            return value
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
