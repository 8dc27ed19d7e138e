"""Model errors: every problem found in a model, each pointing at the entry and, for YAML
models, at file:line.

A location (`Loc`) is the chain of keys and list indices from the top of the model, in the
YAML layout: ("joints", 1, "parent_marker"), ("ground", "markers", 0, "position"). It is
shown with the names of list entries: joints[1] 'elbow'.parent_marker.
"""

from __future__ import annotations

import reprlib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Union

from ..names import did_you_mean

Loc = tuple[Union[str, int], ...]


@dataclass(frozen=True)
class Issue:
    """One problem: where (path, and file/line when known) and what is wrong."""

    path: str
    message: str
    file: Optional[str] = None
    line: Optional[int] = None

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = f"{self.file}:{self.line}: " if self.line is not None else f"{self.file}: "
        return f"{where}{self.path}: {self.message}" if self.path else f"{where}{self.message}"


class ModelError(ValueError):
    """A model is invalid; `issues` lists every problem found, `str()` shows one per line, then
    the `notes`: values that are valid but implausible (Report.note), which may be the cause of
    an issue (E given in MPa, then out of an FMU parameter's range)."""

    def __init__(self, issues: Iterable[Issue], notes: Iterable[Issue] = ()) -> None:
        self.issues, self.notes = list(issues), list(notes)
        super().__init__("\n".join([str(issue) for issue in self.issues]
                                   + [f"note: {note}" for note in self.notes]))


def unknown(subject: str, value: object, choices: Iterable[str], label: str) -> str:
    """Message for a name that is not among `choices`, with a suggestion when one is close:
    "unknown <subject> (did you mean 'x'?); <label>: a, b, c"."""
    choices = list(dict.fromkeys(str(c) for c in choices))
    return f"unknown {subject}{did_you_mean(str(value), choices)}; {label}: {', '.join(choices) or '(none)'}"


def show(value: object) -> str:
    """A short repr of a user value for messages."""
    return reprlib.repr(value)


def format_path(root: Any, loc: Loc) -> str:
    """joints[1] 'elbow'.parent_marker: list indices are followed by the entry's name, looked
    up in `root` (nested dicts/lists as loaded from YAML, or dataclass objects)."""
    text, node = "", root
    for key in loc:
        node = _child(node, key)
        if isinstance(key, int):
            name = _child(node, "name")
            text += f"[{key}] {name!r}" if isinstance(name, str) and name else f"[{key}]"
        else:
            text += f".{key}" if text else key
    return text


def _child(node: Any, key: Union[str, int]) -> Any:
    if isinstance(node, Mapping):
        return node.get(key)
    if isinstance(key, int):
        in_range = isinstance(node, (list, tuple)) and -len(node) <= key < len(node)
        return node[key] if in_range else None
    return getattr(node, key, None)


class PlausibilityWarning(UserWarning):
    """A model value that is valid but far outside what the quantity takes in practice: most
    likely given in other units (a Young's modulus in MPa, a section in mm)."""


class Report:
    """Collects the issues of one model, then raises them all together.

    `lines` maps locations to YAML line numbers (filled by the loader); an issue takes the line
    of its location or of the nearest enclosing one. An issue at or below a location that
    already has one is dropped: it would only be a consequence (e.g. a value rejected while
    loading is not checked again by the validator)."""

    def __init__(self, file: Optional[str] = None) -> None:
        self.file = file
        self.lines: dict[Loc, int] = {}
        self._found: list[tuple[Loc, str, Loc, Optional[int]]] = []
        self._notes: list[tuple[Loc, str]] = []

    def add(self, loc: Loc, message: str, at: Optional[Loc] = None,
            line: Optional[int] = None) -> None:
        """Record `message` for the entry at `loc`; `at` is the exact spot (e.g. a key inside
        the entry) when it is deeper than the path to show; `line` overrides its line."""
        at = loc if at is None else at
        if not any(at[: len(seen)] == seen for _, _, seen, _ in self._found):
            self._found.append((loc, message, at, line))

    @property
    def has_issues(self) -> bool:
        return bool(self._found)

    def has_issues_at(self, loc: Loc) -> bool:
        """True if an issue was recorded at or below `loc`."""
        return any(at[:len(loc)] == loc for _, _, at, _ in self._found)

    def line(self, loc: Loc) -> Optional[int]:
        """The YAML line of `loc` or of its nearest enclosing location."""
        for n in range(len(loc), -1, -1):
            if loc[:n] in self.lines:
                return self.lines[loc[:n]]
        return None

    def note(self, loc: Loc, message: str) -> None:
        """Record a value at `loc` that is valid but implausible (warn_notes warns of it)."""
        self._notes.append((loc, message))

    def warn_notes(self, names: Any, shown: set[tuple[str, str]]) -> None:
        """A PlausibilityWarning per note that is not in `shown` (the (path, message) pairs
        already warned of for the same model: at its load, before its compile checks it again),
        which it joins; `names` as for raise_if_any. For a valid model: an invalid one's errors
        come first."""
        for issue in self._note_issues(names):
            if (issue.path, issue.message) not in shown:
                shown.add((issue.path, issue.message))
                warnings.warn(str(issue), PlausibilityWarning, stacklevel=4)

    def _note_issues(self, names: Any) -> list[Issue]:
        """The notes as Issues with their paths and lines."""
        return [Issue(format_path(names, loc), message, self.file, self.line(loc)) for loc, message in self._notes]

    def raise_if_any(self, names: Any) -> None:
        """Raise ModelError with all issues, sorted by line; `names` is the model (or its
        YAML data) used to show entry names in paths."""
        issues = [Issue(format_path(names, loc), message, self.file, line or self.line(at))
                  for loc, message, at, line in self._found]
        if issues:
            raise ModelError(sorted(issues, key=lambda issue: issue.line or 0), self._note_issues(names))
