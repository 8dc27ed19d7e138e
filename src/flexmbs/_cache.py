"""Where numba keeps the compiled kernels: a persistent per-user cache, so a second process (or
an FMU instantiated again) starts without recompiling."""

import hashlib
import os
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


def configure_numba_cache() -> None:
    """Point numba's cache at ~/.cache/flexmbs/numba/<digest> unless NUMBA_CACHE_DIR is set."""
    if "NUMBA_CACHE_DIR" in os.environ:
        return
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    path = str(base / "flexmbs" / "numba" / _source_digest())
    os.environ["NUMBA_CACHE_DIR"] = path
    import numba.core.config

    numba.core.config.CACHE_DIR = path
