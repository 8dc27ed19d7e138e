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


def tree_digest(roots: dict, files: tuple) -> str:
    """Digest of `files` ("package/relative/path.py", the FMU's bundle), each read from the
    folder of its package in `roots` (package name -> folder), by name and content. 16 hex
    digits; raises OSError when a file is missing."""
    h = hashlib.sha256()
    for name in files:
        package, rel = name.split("/", 1)
        h.update(name.encode())
        h.update((Path(roots[package]) / rel).read_bytes())
    return h.hexdigest()[:16]


def _digest_or_none(roots: dict, files: tuple):
    try:
        return tree_digest(roots, files)
    except OSError:
        return None


def choose_sources(bundle: Path, digest: str, packages: tuple, files: tuple) -> str:
    """Make `packages` importable from the installed copy if its `files` have the digest
    `digest`, else from a verified per-user copy of `bundle` (the FMU's resources/python, which
    holds just `files`). Returns "installed", "loaded" (already imported in this process) or
    the folder put first on sys.path. Raises RuntimeError, naming both, when this process
    already imported other sources of these packages (one process holds one flexmbs)."""
    loaded = [p for p in packages if p in sys.modules]
    if loaded:
        import re

        def root(p):   # the folder a package is (or would be) imported from
            try:
                where = importlib.util.find_spec(p).submodule_search_locations   # a loaded one's own spec
            except (AttributeError, ValueError):
                where = None
            return list(where)[0] if where else "(nowhere)"

        roots = {p: root(p) for p in packages}
        have = _digest_or_none(roots, files)
        if have == digest:
            return "loaded"
        text = (Path(bundle) / "flexmbs" / "__init__.py")
        match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", text.read_text()) if text.is_file() else None
        what = ", ".join(f"{p} {getattr(sys.modules[p], '__version__', '(no version)')} from {roots[p]}" for p in loaded)
        raise RuntimeError(
            f"this process already imported {what} (its sources for this FMU have the digest "
            f"{have or '(files missing)'}), but this FMU needs flexmbs {match.group(1) if match else '(unknown)'} "
            f"with the sources of digest {digest} (carried in {bundle}); one process can hold only one flexmbs: "
            "load the FMU in a process that has not imported flexmbs, or in one that imports the flexmbs it was "
            "built with")
    # FLEXMBS_FMU_SOURCES=bundle: always the FMU's own copy (to test it, or to pin a version)
    if os.environ.get("FLEXMBS_FMU_SOURCES") != "bundle":
        specs = [importlib.util.find_spec(p) for p in packages]
        if all(s is not None and s.submodule_search_locations for s in specs):
            roots = {p: list(s.submodule_search_locations)[0] for p, s in zip(packages, specs)}
            if _digest_or_none(roots, files) == digest:
                return "installed"
    base = writable_cache("bundles")
    target = base / digest
    if target.is_dir() and _digest_or_none({p: target / p for p in packages}, files) != digest:
        logging.getLogger("flexmbs.fmu").warning(
            "the cached sources in %s do not match their digest %s (changed or incomplete); copying them again",
            target, digest)
        shutil.rmtree(target, ignore_errors=True)
    if not target.is_dir():
        partial = base / f".{digest}.{os.getpid()}"
        shutil.copytree(bundle, partial, dirs_exist_ok=True)
        if _digest_or_none({p: partial / p for p in packages}, files) != digest:
            shutil.rmtree(partial, ignore_errors=True)
            raise RuntimeError(f"the sources inside the FMU ({bundle}) do not match their digest {digest}: "
                               "the FMU is damaged; rebuild it")
        try:
            os.replace(partial, target)
        except OSError:   # another process was first
            shutil.rmtree(partial, ignore_errors=True)
    sys.path.insert(0, str(target))
    return str(target)
