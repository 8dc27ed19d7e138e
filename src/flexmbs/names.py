"""Name look-ups with suggestions: the one "did you mean" of the package."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TypeVar

V = TypeVar("V")


def closest(name: str, choices: Iterable[str], n: int = 1) -> list[str]:
    """The up to n choices closest to name, closest first (difflib's similarity of at least 0.6)."""
    return difflib.get_close_matches(str(name), [str(c) for c in choices], n=n)


def did_you_mean(name: str, choices: Iterable[str], n: int = 1) -> str:
    """' (did you mean 'a', 'b'?)' for the up to n choices closest to name, or ''."""
    close = closest(name, choices, n)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def known(names: Iterable[str], kind: str, most: int = 40) -> str:
    """'the <kind>s are: a, b, ...' (the first `most`, and how many more), or 'there are no <kind>s'."""
    names = [str(n) for n in names]
    if not names:
        return f"there are no {kind}s"
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return f"the {kind}s are: {', '.join(names[:most])}{more}"


def lookup(table: Mapping[str, V], name: str, kind: str, most: int = 40) -> V:
    """table[name], or a KeyError naming the closest known names and listing the first `most`
    known ones."""
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"no {kind} {name!r}{did_you_mean(name, table, n=3)}; {known(table, kind, most)}") from None
