"""What an FMU checks and prepares before it imports flexmbs: the Python packages it needs, the
sources it runs (the installed packages when they are the very sources the FMU carries, else
the FMU's own copy, verified and served from memory) and the compiled kernels it carries.

- The FMU's own copy (resources/python) is read once, checked against its digest and imported
  from those bytes only (`VerifiedSources`, a finder for our packages alone): nothing of that
  folder is put on sys.path, no other file of it is ever imported, and a bytecode file planted
  beside a source is never read.
- numba finds a kernel's cache by the kernel's place in the package (flexmbs._cache), so the
  FMU's sources, wherever the host unpacks them, find the kernels it carries
  (resources/kernels: compiled at build time for numba's generic CPU) once `ready_kernels` has
  put them into the private numba cache folder. With FLEXMBS_CPU=host the machine's own (host
  CPU) kernels are preferred where they exist.

The functions below use the standard library only, because they run before flexmbs can be
imported; build.py writes their source into each generated slave module.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.metadata
import importlib.util
import os
import platform
import re
import sys
from pathlib import Path

from flexmbs._cache import choose_cpu_target, kernel_cache, kernel_lock, private_folder


def tree_digest(roots: dict, files: tuple) -> str:
    """Digest of `files` ("package/relative/path.py", the FMU's bundle), each read from the
    folder of its package in `roots` (package name -> folder), by name and content. 16 hex
    digits; raises OSError when a file is missing."""
    return _digest({name: (Path(roots[name.split("/", 1)[0]]) / name.split("/", 1)[1]).read_bytes()
                    for name in files})


def _digest(sources: dict) -> str:
    """tree_digest of sources given as {"package/relative/path.py": bytes}."""
    h = hashlib.sha256()
    for name in sorted(sources):
        h.update(name.encode())
        h.update(sources[name])
    return h.hexdigest()[:16]


def _digest_or_none(roots: dict, files: tuple):
    try:
        return tree_digest(roots, files)
    except OSError:
        return None


def _version_key(text: str) -> tuple:
    """A release number as a tuple of ints ("1.26.4" -> (1, 26, 4); "2.0rc1" -> (2, 0))."""
    found = re.match(r"\d+(\.\d+)*", text.strip())
    return tuple(int(p) for p in found.group().split(".")) if found else ()


def _fits(version: str, spec: str) -> bool:
    """Whether `version` meets `spec` (clauses like ">=1.26,<3", compared by release number)."""
    ops = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
           "<": lambda a, b: a < b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        op, bound = re.match(r"(>=|<=|==|!=|>|<)?\s*(.*)", clause).groups()
        a, b = _version_key(version), _version_key(bound)
        n = max(len(a), len(b))
        if not ops[op or "=="](a + (0,) * (n - len(a)), b + (0,) * (n - len(b))):
            return False
    return True


def missing_requirements(requires: dict) -> list:
    """What this interpreter lacks of `requires` ({import name: (distribution, version spec)}):
    one "distribution<spec> (why)" per package that is missing or of another version."""
    missing = []
    for module, (dist, spec) in requires.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(f"{dist}{spec} (not installed)")
            continue
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue    # importable without metadata (a vendored copy): accepted as it is
        if not _fits(version, spec):
            missing.append(f"{dist}{spec} (found {version})")
    return missing


def check_requirements(requires: dict) -> None:
    """Raise ImportError naming what this interpreter lacks of `requires` and the one command
    that installs it."""
    missing = missing_requirements(requires)
    if missing:
        specs = " ".join(f'"{m.split(" (")[0]}"' for m in missing)
        python = sys.executable or "python"
        python = f'"{python}"' if " " in python else python
        raise ImportError(f"this FMU runs in the host's Python ({platform.python_version()}, {sys.executable}), "
                          f"which lacks {', '.join(missing)}. Install with: {python} -m pip install {specs}   "
                          "(or build the FMU with --standalone: it then needs no Python)")


class VerifiedSources(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports `packages` from verified bytes ({"package/relative/path.py": bytes}) and nothing
    else: a module of these packages that is not among the sources is not found (never looked
    for on disk). __file__ is the file under `folder` the bytes were read from."""

    def __init__(self, folder: Path, packages: tuple, sources: dict) -> None:
        self.folder, self.packages, self.sources = folder, packages, sources

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in self.packages:
            return None
        rel = fullname.replace(".", "/")
        for name, package in ((f"{rel}/__init__.py", True), (f"{rel}.py", False)):
            if name in self.sources:
                return importlib.util.spec_from_file_location(
                    fullname, str(self.folder / name), loader=self,
                    submodule_search_locations=[] if package else None)
        raise ModuleNotFoundError(f"No module named {fullname!r} in the FMU's verified sources", name=fullname)

    def _name(self, path) -> str:
        return Path(path).relative_to(self.folder).as_posix()

    def get_data(self, path) -> bytes:
        try:
            return self.sources[self._name(path)]
        except (KeyError, ValueError):
            raise OSError(f"{path} is not one of the FMU's verified sources") from None

    def get_source(self, fullname) -> str:
        rel = fullname.replace(".", "/")
        data = self.sources.get(f"{rel}/__init__.py", self.sources.get(f"{rel}.py"))
        return None if data is None else importlib.util.decode_source(data)

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        source = self.get_data(module.__spec__.origin)
        exec(compile(source, module.__spec__.origin, "exec", dont_inherit=True), module.__dict__)


def _loaded_digest(packages: tuple, files: tuple):
    """The digest of `files` as this process imported them: from the verified sources of an
    earlier FMU, or from the folders the packages were imported from (a package not imported
    yet: from where it would be); None when unknown."""
    for finder in sys.meta_path:
        # each FMU's module defines its own VerifiedSources (build._MODULE): match by name, as
        # an earlier FMU's may be the one here and its folder gone (fmpy's simulate_fmu
        # removes what it unpacked)
        if type(finder).__name__ == "VerifiedSources" and getattr(finder, "packages", None) == packages:
            try:
                return _digest({name: finder.sources[name] for name in files})
            except (KeyError, AttributeError, TypeError):
                return None
    roots = {}
    for p in packages:
        where = getattr(sys.modules.get(p), "__path__", None)
        if where is None:
            spec = importlib.util.find_spec(p)
            where = spec.submodule_search_locations if spec is not None else None
        roots[p] = list(where)[0] if where else "(nowhere)"
    return _digest_or_none(roots, files)


def _same_as_loaded(bundle: Path, digest: str, packages: tuple, files: tuple, loaded: list) -> None:
    """Raise RuntimeError naming the flexmbs this process imported and the one the FMU needs
    unless they are the same sources (digest)."""
    have = _loaded_digest(packages, files)
    if have == digest:
        return
    text = Path(bundle) / "flexmbs" / "__init__.py"
    match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", text.read_text()) if text.is_file() else None
    what = ", ".join(f"{p} {getattr(sys.modules[p], '__version__', '(no version)')} from "
                     f"{list(getattr(sys.modules[p], '__path__', ['(nowhere)']))[0]}" for p in loaded)
    raise RuntimeError(
        f"this process already imported {what} (its sources for this FMU have the digest {have or '(files missing)'}), "
        f"but this FMU needs flexmbs {match.group(1) if match else '(unknown)'} with the sources of digest {digest} "
        f"(carried in {bundle}); one process can hold only one flexmbs: load the FMU in a process that has not "
        "imported flexmbs, or in one that imports the flexmbs it was built with")


def choose_sources(bundle: Path, digest: str, packages: tuple, files: tuple) -> dict:
    """Make `packages` importable from the installed copy if its `files` have the digest
    `digest`, else from the FMU's copy `bundle` (resources/python, which holds just `files`),
    read once and verified against the digest (VerifiedSources). Returns the folder of each
    package ({} when they were all imported in this process already). Raises RuntimeError,
    naming both, when this process already imported other sources of these packages (one
    process holds one flexmbs). FLEXMBS_FMU_SOURCES=bundle: always the FMU's own copy (to test
    it, or to pin a version)."""
    loaded = [p for p in packages if p in sys.modules]
    if loaded:
        _same_as_loaded(bundle, digest, packages, files, loaded)
        return {}
    if os.environ.get("FLEXMBS_FMU_SOURCES") != "bundle":
        specs = [importlib.util.find_spec(p) for p in packages]
        if all(s is not None and s.submodule_search_locations for s in specs):
            roots = {p: list(s.submodule_search_locations)[0] for p, s in zip(packages, specs)}
            if _digest_or_none(roots, files) == digest:
                return {p: Path(r) for p, r in roots.items()}
    try:
        sources = {name: (bundle / name).read_bytes() for name in files}
    except OSError as err:
        raise RuntimeError(f"the sources inside the FMU ({bundle}) are incomplete ({err}): the FMU is damaged; "
                           "rebuild it") from None
    if _digest(sources) != digest:
        raise RuntimeError(f"the sources inside the FMU ({bundle}) do not match their digest {digest}: the FMU is "
                           "damaged or was changed; rebuild it")
    for p in packages:   # a stale half-import of another copy must not mix with this one
        for name in [m for m in sys.modules if m == p or m.startswith(f"{p}.")]:
            del sys.modules[name]
    sys.meta_path.insert(0, VerifiedSources(bundle, packages, sources))
    return {p: bundle / p for p in packages}


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_index(raw: bytes, numba_version: str | None = None) -> tuple:
    """A numba cache index (its bytes: numba.core.caching.IndexDataCacheFile): (numba version,
    source stamp, {key: data file name}), pickled as the version, then (stamp, entries). Its
    keys hold numba types: unpickling them imports numba and the modules of our types. With
    numba_version, an index of another version comes back as (its version, None, {}) unread,
    as numba reads one."""
    import io
    import pickle

    stream = io.BytesIO(raw)
    version_ = pickle.load(stream)
    if numba_version is not None and version_ != numba_version:
        return version_, None, {}
    stamp, entries = pickle.loads(stream.read())
    return version_, stamp, entries


def index_bytes(numba_version: str, stamp, entries: dict) -> bytes:
    """The bytes of a numba cache index, pickled as numba pickles one."""
    import pickle

    from numba.core.serialize import dumps

    return pickle.dumps(numba_version, protocol=-1) + dumps((stamp, entries))


def _place_kernels(carried: Path, target: Path, files: dict) -> None:
    """Copy the carried kernel files ({relative path: sha256}) into the private folder
    `target`, each verified before it is put in place (a file already there with the right
    digest is kept). A kernel's data files and then its index go in under the kernel's lock
    (flexmbs._cache.kernel_lock), so a process that loads the kernel meanwhile reads the old
    entry or the new one, never an index over another's data file. An index already there with
    other entries (this user's own compiles, another FMU's) keeps them and gains the carried
    ones (_merge_kernel): an FMU carries its own entries alone (fmi/kernels.py), and put over
    the index it would drop the others, which would compile again. Reading an index imports
    numba, so NUMBA_CPU_NAME must be set before."""
    kernels: dict[str, list[str]] = {}   # index: its data files, then itself
    for rel in sorted(files, key=lambda rel: rel.endswith(".nbi")):
        kernels.setdefault(re.sub(r"\.\d+\.nbc$", ".nbi", rel), []).append(rel)
    for folder in {Path(index).parent for index in kernels}:   # once each: it writes a probe file
        private_folder(target, *folder.parts)
    for index, own in kernels.items():
        there = target / index
        # read before the lock where a merge is likely: unpickling the keys imports numba and
        # our types' modules
        entries = read_index(_verified(carried / index, files[index])) if _other_index(there, files[index]) else None
        with kernel_lock(there):
            if _other_index(there, files[index]):
                _merge_kernel(carried, target, index, files,
                              entries or read_index(_verified(carried / index, files[index])))
            else:
                for rel in own:
                    _place_file(carried / rel, target / rel, files[rel])


def _other_index(there: Path, sha: str) -> bool:
    """An index file is at `there`, and it is not the carried one (digest sha)."""
    return there.is_file() and _file_digest(there) != sha


def _all_cached(folder: Path, manifest: dict) -> bool:
    """Every index file the FMU carries is in the cache's target `folder` (host, a CPU name)."""
    return all((folder / name).is_file() for name in manifest["index"])


def _merge_kernel(carried: Path, target: Path, index: str, files: dict, entries: tuple) -> None:
    """Put the carried entries (`entries`: read_index of the carried index) of the kernel
    `index` into the index in `target` (its lock held): a key it lacks, or whose data file is
    gone, gets the carried file, under its carried name or, where the index names that file for
    another key, the first free number (numba's own numbering); a key it has keeps its entry.
    An index of another numba version or source stamp, or unreadable, is replaced."""
    numba_version, stamp, carried_entries = entries
    try:
        there_version, there_stamp, merged = read_index((target / index).read_bytes(), numba_version)
    except Exception:   # unreadable (a partial or foreign file): numba would discard it too
        there_version, there_stamp, merged = None, None, {}
    changed = (there_version, there_stamp) != (numba_version, stamp)
    if changed:
        merged = {}
    folder = Path(index).parent
    base = Path(index).name[:-len(".nbi")]
    for key, name in carried_entries.items():
        if key in merged and (target / folder / merged[key]).is_file():
            continue
        data = _verified(carried / folder / name, files.get((folder / name).as_posix()))
        taken = {n for k, n in merged.items() if k != key}
        number = 1
        while name in taken:
            name = f"{base}.{number}.nbc"
            number += 1
        _write_file(target / folder / name, data)
        merged[key] = name
        changed = True
    if changed:   # else the index there already finds every carried entry: left as it is
        _write_file(target / index, index_bytes(numba_version, stamp, merged))


def _verified(source: Path, sha) -> bytes:
    """The bytes of a carried file, checked against its digest (RuntimeError, the FMU damaged,
    when it is missing, has no digest in the manifest or does not match it)."""
    try:
        data = source.read_bytes()
    except OSError as err:
        raise RuntimeError(f"the compiled kernel {source} cannot be read ({err}): the FMU is damaged") from None
    if sha is None or hashlib.sha256(data).hexdigest() != sha:
        raise RuntimeError(f"the compiled kernel {source} does not match its digest: the FMU is damaged")
    return data


def _place_file(source: Path, dest: Path, sha: str) -> None:
    """source copied to dest (a file already there with the digest `sha` kept), verified first."""
    if dest.is_file() and _file_digest(dest) == sha:
        return
    _write_file(dest, _verified(source, sha))


def _write_file(dest: Path, data: bytes) -> None:
    """dest replaced by data at once (a reader sees the old file or the new one)."""
    partial = dest.parent / f".{dest.name}.{os.getpid()}"
    partial.write_bytes(data)
    os.replace(partial, dest)


def ready_kernels(carried: Path, root, manifest) -> str:
    """Prepare numba's cache for the kernels of the flexmbs sources at `root`, before numba is
    imported. `manifest` describes the kernels the FMU carries in `carried` (compiled at build
    time for numba's generic CPU): python, numba, machine, files {path: sha256}, index (the
    index files) and seconds (their compile time at build). Where the process compiles for the
    host CPU (FLEXMBS_CPU=host; flexmbs._cache.choose_cpu_target), keeps the machine's own kernels
    where they are all cached; else, when the carried ones fit this interpreter, puts
    them into the cache and makes numba use the generic CPU (NUMBA_CPU_NAME=generic); else
    returns what will be compiled and about how long it takes (to be logged before), or ''.
    Where numba is loaded already (another plant FMU in this process, of another route, whose
    carried index files name only its own entries) and compiles for the generic CPU, the
    carried entries join those in the cache too (_place_kernels): both FMUs find theirs."""
    if not manifest:
        return ""
    numba = sys.modules.get("numba")
    if numba is not None:   # its target is set: the carried kernels serve a generic one
        # its cache folder: as set, else the one flexmbs will set when it is imported (_cache)
        cpu = numba.config.CPU_NAME or "host"
        folder = numba.config.CACHE_DIR or (str(kernel_cache(Path(root))) if root is not None else "")
        if cpu != "generic":
            if folder and _all_cached(Path(folder) / cpu.lower(), manifest):
                return ""
            return (f"numba was loaded in this process before this FMU, compiling for the {cpu} CPU: the kernels this "
                    f"FMU carries (for numba's generic CPU) do not serve it, so they compile, about "
                    f"{manifest['seconds']:.0f} s of CPU on the build machine, once per machine.")
        if not folder:
            return ""
        base = Path(folder)
    elif root is None:      # no sources of our own to run (choose_sources)
        return ""
    else:
        cache = os.environ.get("NUMBA_CACHE_DIR")
        base = Path(cache) if cache else kernel_cache(Path(root))
        os.environ["NUMBA_CACHE_DIR"] = str(base)   # where flexmbs would put it (a fallback folder is chosen once)
        if choose_cpu_target() == "host" and _all_cached(base / "host", manifest):
            return ""   # the target flexmbs will compile for, and all its kernels are here
    here = {"python": "%d.%d" % sys.version_info[:2], "machine": platform.machine()}
    try:
        here["numba"] = importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:
        here["numba"] = "?"
    if all(manifest[k] == v for k, v in here.items()):
        os.environ["NUMBA_CPU_NAME"] = "generic"   # before _place_kernels, which may import numba
        try:
            _place_kernels(carried, base / "generic", manifest["files"])
        except OSError as err:   # a folder we may not write: the kernels compile, and the log says so
            return (f"the compiled numba kernels this FMU carries could not be put into {base / 'generic'} ({err}): "
                    f"they compile instead, about {manifest['seconds']:.0f} s of CPU on the build machine, once.")
        return ""
    return (f"compiling the numba kernels of this model for this machine: this FMU carries them compiled for Python "
            f"{manifest['python']}, numba {manifest['numba']} on {manifest['machine']}, and this is Python "
            f"{here['python']}, numba {here['numba']} on {here['machine']}. This takes about "
            f"{10 * round(manifest['seconds'] / 10 + 0.5):.0f} s of CPU ({len(manifest['index'])} kernels; "
            f"{manifest['seconds']:.0f} s on the build machine), once per machine: they are kept in {base}. "
            "The instantiation and the first steps are slow until then.")
