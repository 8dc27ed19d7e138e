"""Which flexmbs sources an FMU imports: the installed packages when they are the very sources
the FMU carries (same digest), else the FMU's bundled copy, through a per-user cache folder
whose files are checked against the digest before anything is imported from it.

numba keys its cache of compiled kernels by source path: importing the installed package
reuses the kernels any earlier run compiled (a bundled copy at another path recompiles all of
them once, about 165 s). The functions below use the standard library only, because they run
before flexmbs can be imported; build.py writes their source into each generated slave module.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import sys
from pathlib import Path

from flexmbs._cache import writable_cache


def tree_digest(roots: dict) -> str:
    """Digest of the .py files under each package folder in `roots` (package name -> folder),
    by package-relative path and content; __pycache__ is ignored. 16 hex digits."""
    h = hashlib.sha256()
    for name, src in roots.items():
        src = Path(src)
        for path in sorted(src.rglob("*.py")):
            rel = path.relative_to(src)
            if "__pycache__" in rel.parts:
                continue
            h.update(f"{name}/{rel.as_posix()}".encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def choose_sources(bundle: Path, digest: str, packages: tuple) -> str:
    """Make `packages` importable from the installed copy if its digest is `digest`, else from
    a verified per-user copy of `bundle` (the FMU's resources/python). Returns "installed",
    "loaded" (already imported in this process) or the folder put first on sys.path."""
    if packages[-1] in sys.modules:
        return "loaded"
    # FLEXMBS_FMU_SOURCES=bundle: always the FMU's own copy (to test it, or to pin a version)
    if os.environ.get("FLEXMBS_FMU_SOURCES") != "bundle":
        specs = [importlib.util.find_spec(p) for p in packages]
        if all(s is not None and s.submodule_search_locations for s in specs):
            roots = {p: list(s.submodule_search_locations)[0] for p, s in zip(packages, specs)}
            if tree_digest(roots) == digest:
                return "installed"
    base = writable_cache("bundles")
    target = base / digest
    if target.is_dir() and tree_digest({p: target / p for p in packages}) != digest:
        logging.getLogger("flexmbs.fmu").warning(
            "the cached sources in %s do not match their digest %s (changed or incomplete); copying them again",
            target, digest)
        shutil.rmtree(target, ignore_errors=True)
    if not target.is_dir():
        partial = base / f".{digest}.{os.getpid()}"
        shutil.copytree(bundle, partial, dirs_exist_ok=True)
        if tree_digest({p: partial / p for p in packages}) != digest:
            shutil.rmtree(partial, ignore_errors=True)
            raise RuntimeError(f"the sources inside the FMU ({bundle}) do not match their digest {digest}: "
                               "the FMU is damaged; rebuild it")
        try:
            os.replace(partial, target)
        except OSError:   # another process was first
            shutil.rmtree(partial, ignore_errors=True)
    sys.path.insert(0, str(target))
    return str(target)
