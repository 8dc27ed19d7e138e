"""The errors a user can cause (a bad model, a failed integration, a missing file, an unknown
name), and the one message each is shown as; anything else is a bug and keeps its traceback.
Apart from the command line, so that what runs commands elsewhere (fmi/batch.py's workers) says
the same without importing it."""

from __future__ import annotations

from typing import Any

import click

from .model import ModelError
from .solvers.stepper import SolverError

USER_ERRORS = (ModelError, SolverError, OSError, ValueError, KeyError)


def message(exc: BaseException) -> str:
    """The text a user is shown for `exc` (one of USER_ERRORS): what is wrong and where."""
    if isinstance(exc, ModelError):
        count = len(exc.issues)
        head = "invalid model" if count <= 1 else f"invalid model ({count} problems)"
        text = str(exc)
        return f"{head}:\n{text}" if "\n" in text else f"{head}: {text}"
    if isinstance(exc, SolverError):
        return f"simulation failed {exc}"
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def show_warning(message: Warning | str, category: type, *_: Any, **__: Any) -> None:
    """A warning as one line on stderr, `warning: <message>` (without the source line that
    Python's default format quotes, which means nothing to a user of a command)."""
    click.echo(f"warning: {message}", err=True)
