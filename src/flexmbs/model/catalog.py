"""The model files shipped with the package (`flexmbs/models/*.yaml`), addressable by name:
`load_model("huang_two_link")` reads the shipped file, a path reads that file."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Union

from .errors import Issue, ModelError, did_you_mean


def models_dir() -> Path:
    """Folder of the shipped model files (inside the installed package)."""
    return Path(str(resources.files("flexmbs") / "models"))


def shipped_models() -> dict[str, Path]:
    """Name -> path of every shipped model file, sorted by name."""
    return {p.stem: p for p in sorted(models_dir().glob("*.yaml"))}


def model_description(path: Path) -> str:
    """First line of a model file's leading comment block (its one-line description)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = line.strip()
            if text.startswith("#") and text.lstrip("# ").strip():
                return text.lstrip("# ").strip()
            if text and not text.startswith("#"):
                break
    return ""


def resolve(spec: Union[str, os.PathLike]) -> Path:
    """A model file path: `spec` itself when it names an existing file, otherwise the shipped
    model of that name (with or without `.yaml`). Raises ModelError naming the known models."""
    path = Path(spec)
    if path.exists() or path.parent != Path("."):
        return path
    name = path.stem if path.suffix in (".yaml", ".yml") else path.name
    known = shipped_models()
    if name in known:
        return known[name]
    shipped = (f"shipped models: {', '.join(known)}" if known else
               f"the flexmbs in this process ({Path(str(resources.files('flexmbs')))}) has no shipped models "
               "(the copy a plant FMU carries and a source tree have none); pass a model file's path")
    raise ModelError([Issue("", f"no model file {str(spec)!r} and no shipped model of that name"
                             f"{did_you_mean(name, known)}; {shipped}", str(spec))])
