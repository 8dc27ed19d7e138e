"""Where numba keeps the compiled kernels: a persistent, private per-user cache, so a second
process (or an FMU instantiated again) starts without recompiling.

- Folders are created with mode 0700 and refused when another user owns them or others may
  write to them (`private_folder`): a folder someone else could write holds nothing we load.
- The cache of a kernel is found by the kernel's path inside the package, not by the absolute
  path of its source (`PackageLocator`): the sources an FMU carries, wherever the host unpacks
  them, find the kernels compiled for the same sources, including those the FMU carries itself
  (flexmbs_fmu/bundle.py places them). Below the digest folder, one folder per CPU target:
  `host` (numba's default, the machine's own CPU) and `generic` (NUMBA_CPU_NAME=generic, the
  portable code an FMU carries).
- flexmbs compiles for the generic CPU in every process that imports it before numba
  (`choose_cpu_target`), so that one compile serves the FMUs built here and the runs in-process.
- FLEXMBS_COMPILE_LOG=<file>: every kernel numba compiles in this process is appended to that
  file as one JSON line (function, signature, seconds), so a test or a benchmark can count
  compiles and see where the compile time goes; the file appears when a first compile begins.

- numba's cache entries are written and read under a lock per kernel, and an entry whose code
  is not of the signature asked for is compiled anew (`_guard_cache_entries`): the processes of
  a sweep, an FMU and its host share one cache.

The functions `source_digest`, `private_folder`, `writable_cache`, `kernel_cache` and
`kernel_lock` use the standard library only: the FMU's slave module carries a copy of their
source and runs it before flexmbs can be imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import re
import stat
import sys
import tempfile
import time
from pathlib import Path


def source_digest(root: Path, laws: tuple[str, ...] = ("flexmbs_laws/motor.py",)) -> str:
    """Digest of every module under `root` that holds numba code (found by a numba import, or the
    kernels' settings, and a numba decorator, `kernel`, structref or a dispatcher class, so a
    new kernel module anywhere in the package is never left out, while a tool that only talks to numba, like this module, is): a new version gets a
    fresh cache folder, so a stale index (whose pickled types no longer exist) is never read.
    numba itself checks each kernel's own file, not the files whose kernels it calls. laws:
    modules beside the package (in site-packages or an FMU's bundle) whose plain-Python functions
    our kernels compile (kernels/motor.py); a default argument, not a module constant, because
    a built FMU carries this function's source alone (fmi/build.py)."""
    h = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        source = path.read_bytes()
        if re.search(rb"(from|import) numba|from \.settings import", source) and \
                re.search(rb"@\w*\.?(njit|jit|overload\w*|intrinsic|kernel)\b|structref\.|class \w+\(CPUDispatcher\)", source):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(source)
    for law in laws:   # compiled into our kernels from beside the package: numba never checks them
        path = root.parent / law
        h.update(law.encode())
        h.update(path.read_bytes() if path.is_file() else b"")
    return h.hexdigest()[:12]


def private_folder(base: Path, *parts: str) -> Path:
    """base/parts, each missing folder created with mode 0700; raises PermissionError naming
    the folder when base or a part is not a folder of this user that only this user may write
    (another owner, group- or world-writable), or when the folder that holds base may be
    written by others without the sticky bit (someone could swap base). OSError when it
    cannot be created or written."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    os.makedirs(base.parent, exist_ok=True)   # ~/.cache or the temporary folder: not ours to restrict
    parent = os.stat(base.parent)
    if parent.st_mode & stat.S_IWOTH and not parent.st_mode & stat.S_ISVTX:
        raise PermissionError(f"{base.parent} may be written by any user (mode {stat.filemode(parent.st_mode)}, "
                              "no sticky bit)")
    folder = base
    for part in ("", *parts):
        folder = folder / part if part else folder
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        st = os.stat(folder)
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(f"{folder} is not a folder")
        if uid is not None and (st.st_uid != uid or os.lstat(folder).st_uid != uid):
            raise PermissionError(f"{folder} belongs to another user (uid {st.st_uid}, this is uid {uid})")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise PermissionError(f"{folder} may be written by other users (mode {stat.filemode(st.st_mode)})")
    probe = folder / f".probe.{os.getpid()}"
    probe.write_bytes(b"")
    probe.unlink()
    return folder


def writable_cache(*parts: str) -> Path:
    """~/.cache (or $XDG_CACHE_HOME)/flexmbs/<parts>, created private (private_folder); when that
    cannot be written (a read-only or missing home) or is refused, $TMPDIR/flexmbs-<uid>/<parts>
    with the same checks, and when that is refused too (a folder another user planted there),
    a new private temporary folder; each fallback with a logged warning that says why."""
    log = logging.getLogger("flexmbs")
    user = os.getuid() if hasattr(os, "getuid") else "user"
    try:
        home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except RuntimeError as err:   # Path.home() without a home
        home, why = None, err
    candidates = ([home / "flexmbs"] if home is not None else []) + [Path(tempfile.gettempdir()) / f"flexmbs-{user}"]
    for base in candidates:
        try:
            folder = private_folder(base, *parts)
        except OSError as err:
            why = err
            log.warning("cache folder %s cannot be written or is not private (%s)", base.joinpath(*parts), err)
            continue
        if base != candidates[0]:
            log.warning("using the cache folder %s instead", folder)
        return folder
    folder = Path(tempfile.mkdtemp(prefix=f"flexmbs-{user}-"))
    log.warning("no private cache folder could be used (%s); using the new folder %s for this process only", why,
                folder)
    return private_folder(folder, *parts)


def _source_stamp(py_func, py_file: str) -> str:
    """Content digest of a kernel's source, read through its module's loader (which serves an
    FMU's verified sources from memory), else from the file."""
    module = sys.modules.get(py_func.__module__)
    loader = getattr(module, "__loader__", None)
    try:
        data = loader.get_data(py_file)
    except (AttributeError, OSError, TypeError):
        data = Path(py_file).read_bytes()
    return hashlib.sha256(data).hexdigest()


def cpu_target() -> str:
    """The cache folder of numba's CPU target in this process: `generic`, `host` or a CPU name."""
    from numba.core import config

    return (config.CPU_NAME or "host").lower()


def choose_cpu_target() -> str:
    """Make numba compile for its generic x86-64 (or other architecture's) CPU, NUMBA_CPU_NAME=
    generic, unless numba is imported already or the user chose: NUMBA_CPU_NAME set, or
    FLEXMBS_CPU=host (numba's default, the machine's own CPU; it also drops a generic
    NUMBA_CPU_NAME inherited from a parent process, which sets it for its children too).

    Why: the FMUs built here carry kernels compiled for the generic CPU (fmi/kernels.py), and a
    process holds one target. With the host's CPU, the README's first command compiled the demo
    plant's kernels twice, once into the FMUs and once more (141 s on the development machine)
    for the demo that runs them in-process; with one target the second finds them cached.
    The generic code ran Huang's arm at 1.00x the host's speed (min 1.00, max 1.01 of 3;
    benchmarks/first_start.py): our kernels are scalar loops over small arrays that gain
    nothing from the newer vector instructions. It holds for the whole process: numba code of
    the user's own compiles for the generic CPU too, unless numba was imported first.

    Returns the target the environment names now, as cpu_target names it (`generic`, `host`
    or a CPU name). Standard library only: an FMU's slave runs it before numba is imported
    (flexmbs_fmu/bundle.ready_kernels)."""
    choice = os.environ.get("FLEXMBS_CPU", "").lower()
    if choice not in ("", "host", "generic"):
        logging.getLogger("flexmbs").warning("FLEXMBS_CPU=%s is not a CPU target flexmbs knows (host, generic): "
                                             "compiling for the generic CPU", os.environ["FLEXMBS_CPU"])
    if "numba" not in sys.modules:
        if choice == "host":   # wins over the generic target a parent flexmbs process passed on
            if os.environ.get("NUMBA_CPU_NAME") == "generic":
                del os.environ["NUMBA_CPU_NAME"]
        elif "NUMBA_CPU_NAME" not in os.environ:
            os.environ["NUMBA_CPU_NAME"] = "generic"
    return (os.environ.get("NUMBA_CPU_NAME") or "host").lower()


def kernel_cache(root: Path) -> Path:
    """The folder numba keeps the kernels of the flexmbs sources at `root` in, for the numba
    installed here: ~/.cache/flexmbs/numba/<digest of the sources>-numba<version>. One folder
    per numba version: numba drops an index another version wrote and writes its own over it,
    so two environments with two numba versions on one folder each compiled everything anew
    (minutes) whenever the other had run."""
    try:
        numba = importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:
        numba = "-missing"
    return writable_cache("numba", f"{source_digest(root)}-numba{numba}")


@contextlib.contextmanager
def kernel_lock(index: Path):
    """Hold, against other processes, the lock of one kernel's cache entry: its index file
    `index` and the data files that index names (a POSIX advisory lock, flock, on `index`.lock).
    Without flock (Windows), a lock file (a read-only cache folder) or locks on the file system
    (ENOLCK, ENOSYS): no lock, numba's own behaviour. Standard library only (see the module's doc)."""
    handle, locked = None, False
    try:
        import fcntl
        handle = open(f"{index}.lock", "a")
        fcntl.flock(handle, fcntl.LOCK_EX)
        locked = True
    except (ImportError, OSError):
        pass
    try:
        yield
    finally:
        if locked:   # before closing: a child forked meanwhile shares the open file, and the lock
            fcntl.flock(handle, fcntl.LOCK_UN)
        if handle is not None:
            handle.close()


def _guard_cache_entries(caching) -> None:
    """numba's cache made safe for several processes at once, and checked as it loads.

    numba saves an entry by reading the function's index, choosing a data file, and writing
    both, without a lock (numba.core.caching.IndexDataCacheFile.save). Two processes compiling
    one kernel for two signatures at once (a sweep's workers, an FMU's process beside its host,
    all on one cache) can leave an index that names one signature over the other's data file,
    and numba then runs that code on the wrong argument types without a word (a plain numba
    function f(x) = 2 x + 1 so damaged returned f(1.5) = 3). Each save and load of an entry
    now holds its lock (kernel_lock), and an entry whose loaded signature is not the one asked
    for is dropped with a warning: numba compiles it anew, and its save repairs the entry."""
    from numba.core import sigutils
    from numba.core.compiler import CompileResult

    files = caching.IndexDataCacheFile
    if getattr(files.save, "locked", False):
        return
    save, load, load_overload = files.save, files.load, caching.Cache._load_overload

    def locked_save(self, key, data) -> None:
        with kernel_lock(Path(self._index_path)):
            save(self, key, data)

    def locked_load(self, key):
        with kernel_lock(Path(self._index_path)):
            return load(self, key)

    def checked_load_overload(self, sig, target_context):
        entry = load_overload(self, sig, target_context)
        got = entry.signature if isinstance(entry, CompileResult) else None   # a gufunc's library has none
        if got is not None and tuple(got.args) != tuple(sigutils.normalize_signature(sig)[0]):
            logging.getLogger("flexmbs").warning(
                "numba's cache entry of %s for %s held the code of %s (written by two processes at once, or damaged): "
                "compiling it anew", f"{self._py_func.__module__}.{self._py_func.__qualname__}", sig, got)
            return None
        return entry

    locked_save.locked = True
    files.save, files.load = locked_save, locked_load
    caching.Cache._load_overload = checked_load_overload


def _locator_class():
    """PackageLocator, defined once numba is imported (it subclasses numba's locator)."""
    from numba.core import caching, config

    root = Path(__file__).resolve().parent

    class PackageLocator(caching._CacheLocator):
        """numba cache locator for flexmbs' kernels: <NUMBA_CACHE_DIR>/<target>/<path of the
        kernel's folder inside the package>, with the digest of the kernel's source as stamp,
        so that identical sources anywhere share one cache."""

        def __init__(self, py_func, py_file: str, rel: Path) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._parts = (cpu_target(), root.name, *rel.parent.parts)
            self._stamp = _source_stamp(py_func, py_file)

        def ensure_cache_path(self) -> None:
            private_folder(Path(config.CACHE_DIR), *self._parts)

        def get_cache_path(self) -> str:
            return str(Path(config.CACHE_DIR).joinpath(*self._parts))

        def get_source_stamp(self) -> str:
            return self._stamp

        def get_disambiguator(self) -> str:
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file: str):
            if not config.CACHE_DIR:
                return None
            try:
                rel = Path(py_file).resolve().relative_to(root)
            except ValueError:
                return None
            self = cls(py_func, py_file, rel)
            try:
                self.ensure_cache_path()
            except OSError as err:
                logging.getLogger("flexmbs").warning("numba cache folder %s refused (%s): kernels not cached",
                                                     self.get_cache_path(), err)
                return None
            return self

    return PackageLocator


class _CompileLog:
    """numba compile-event listener: one JSON line per compiled function (module.qualname,
    signature, inclusive and exclusive seconds, nesting depth) appended to `path`."""

    def __init__(self, path: str) -> None:
        from numba.core import event

        self.path = path
        self.stack: list[list[float]] = []   # [start, seconds spent in nested compiles]

        class Listener(event.Listener):
            def on_start(_, ev) -> None:
                if not self.stack:   # the file exists once a compile has begun (fmi/kernels.carry_kernels)
                    open(self.path, "a").close()
                self.stack.append([time.process_time(), 0.0])

            def on_end(_, ev) -> None:
                start, nested = self.stack.pop()
                seconds = time.process_time() - start
                if self.stack:
                    self.stack[-1][1] += seconds
                fn = ev.data["dispatcher"].py_func
                row = {"function": f"{fn.__module__}.{fn.__qualname__}", "signature": str(ev.data["args"]),
                       "seconds": round(seconds, 4), "own_seconds": round(seconds - nested, 4),
                       "depth": len(self.stack), "target": cpu_target()}
                with open(self.path, "a") as f:
                    f.write(json.dumps(row) + "\n")

        event.register("numba:compile", Listener())


_CONFIGURED: list = []


def numba_cache_folder() -> Path:
    """The folder numba keeps this version's compiled kernels in (NUMBA_CACHE_DIR, which
    configure_numba_cache sets when importing flexmbs unless the user did)."""
    return Path(os.environ.get("NUMBA_CACHE_DIR") or writable_cache("numba"))


def configure_numba_cache() -> None:
    """Choose numba's CPU target (choose_cpu_target), point its cache at
    kernel_cache's folder unless NUMBA_CACHE_DIR is set,
    find flexmbs' kernels there by their place in the package (PackageLocator), and log
    compiles to $FLEXMBS_COMPILE_LOG if set. Once per process."""
    if _CONFIGURED:
        return
    choose_cpu_target()
    import numba.core.config
    from numba.core import caching

    if "NUMBA_CACHE_DIR" not in os.environ:
        path = str(kernel_cache(Path(__file__).resolve().parent))
        os.environ["NUMBA_CACHE_DIR"] = path
        numba.core.config.CACHE_DIR = path
    _guard_cache_entries(caching)
    impl = caching.CacheImpl
    locator = _locator_class()
    impl._locator_classes = [locator, *impl._locator_classes]
    if os.environ.get("FLEXMBS_COMPILE_LOG"):
        _CONFIGURED.append(_CompileLog(os.environ["FLEXMBS_COMPILE_LOG"]))
    _CONFIGURED.append(locator)
