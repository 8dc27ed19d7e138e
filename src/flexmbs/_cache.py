"""Where numba keeps the compiled kernels: a persistent per-user cache, so a second process (or
an FMU instantiated again) starts without recompiling."""

import hashlib
import logging
import os
import tempfile
from pathlib import Path


def _source_digest() -> str:
    """Digest of every module that holds numba code (found by its numba import, so a new kernel
    module anywhere in the package is never left out): a new version gets a fresh cache
    folder, so a stale index (whose pickled types no longer exist) is never read."""
    root = Path(__file__).parent
    h = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        source = path.read_bytes()
        if b"from numba" in source or b"import numba" in source:
            h.update(path.relative_to(root).as_posix().encode())
            h.update(source)
    return h.hexdigest()[:12]


def writable_cache(*parts: str) -> Path:
    """~/.cache (or $XDG_CACHE_HOME)/flexmbs/<parts>, created; when that cannot be written (a
    read-only or missing home), a folder under the system's temporary directory, with a logged
    warning. (The FMU's slave module carries a copy of this function's source: it runs before
    flexmbs can be imported.)"""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "flexmbs"
    folder = base.joinpath(*parts)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe.{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        return folder
    except (OSError, RuntimeError) as err:   # RuntimeError: Path.home() without a home
        user = os.getuid() if hasattr(os, "getuid") else "user"
        fallback = Path(tempfile.gettempdir()).joinpath(f"flexmbs-{user}", *parts)
        fallback.mkdir(parents=True, exist_ok=True)
        logging.getLogger("flexmbs").warning("cache folder %s cannot be written (%s); using %s instead", folder,
                                             err, fallback)
        return fallback


def numba_cache_folder() -> Path:
    """The folder numba keeps this version's compiled kernels in (NUMBA_CACHE_DIR, which
    configure_numba_cache sets when importing flexmbs unless the user did)."""
    return Path(os.environ.get("NUMBA_CACHE_DIR") or writable_cache("numba"))


def configure_numba_cache() -> None:
    """Point numba's cache at ~/.cache/flexmbs/numba/<digest> unless NUMBA_CACHE_DIR is set."""
    if "NUMBA_CACHE_DIR" in os.environ:
        return
    path = str(writable_cache("numba", _source_digest()))
    os.environ["NUMBA_CACHE_DIR"] = path
    import numba.core.config

    numba.core.config.CACHE_DIR = path
