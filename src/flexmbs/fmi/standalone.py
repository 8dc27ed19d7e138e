"""The Python runtime a self-contained FMU carries (`build_fmu.py MODEL --standalone`), so that
a Linux host with no Python runs it with nothing to set: resources/runtime holds

- lib/libpythonX.Y.so.1.0 of the building interpreter, and the shared libraries that the
  carried extension modules need beyond the C and C++ runtimes every Linux has (libffi for
  ctypes, zlib for llvmlite, ...), loaded first by the front end;
- lib/pythonX.Y: the standard library without what an FMU never runs (tests, IDLE, Tk, curses,
  2to3, ensurepip, the static library), and site-packages with the distributions the slave
  imports at module level and theirs (numpy, scipy, numba, llvmlite, PyYAML, threadpoolctl), without their
  tests; of scipy only the subpackages our sources import (and what those import);
- every .py compiled to unchecked-hash bytecode, so the first start compiles no Python;
- flexmbs_runtime.txt: the version, the libpython and the libraries to load first, for the
  front end (flexmbs_fmi2.c, carried_runtime), which starts this runtime isolated from the
  host's PYTHON* variables.

Our own packages are not here: they are the FMU's verified bundle (resources/python).
"""

from __future__ import annotations

import compileall
import importlib.metadata as metadata
import json
import py_compile
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

# Standard-library folders and extension modules an FMU never runs.
_STDLIB_SKIP = {"site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data",
                "__pycache__", "venv"}
_DYNLOAD_SKIP = re.compile(r"^(_tkinter|_curses|_curses_panel|readline|_test|_ctypes_test|xxlimited|_xxtestfuzz|"
                           r"_ssl|_hashlib|_sqlite3|_dbm|_gdbm|nis|_crypt|ossaudiodev|spwd)[.-]")
# Libraries every glibc-based Linux has (the manylinux policy's base set).
_BASE_LIBS = re.compile(r"^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libresolv|libgcc_s|"
                        r"libstdc\+\+)[.-]")


def _distributions(requires: dict) -> list[str]:
    """The distributions of `requires` ({module: (distribution, spec)}) and those they require
    (without extras), by name."""
    todo = [dist for dist, _ in requires.values()]
    seen: dict[str, str] = {}
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen[key] = metadata.distribution(name).metadata["Name"]
        for req in metadata.requires(name) or []:
            if "extra ==" not in req:
                todo.append(re.match(r"[A-Za-z0-9_.-]+", req).group())
    return sorted(seen.values())


def _scipy_used(python_src: Path) -> set[str]:
    """scipy's subpackages loaded by importing every scipy module our bundled sources name."""
    named = set()
    for path in python_src.rglob("*.py"):
        named.update(re.findall(r"(?:from|import)\s+(scipy(?:\.\w+)+)", path.read_text()))
    code = "import sys, importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in sorted(named)) + \
        "print(' '.join(sorted({m.split('.')[1] for m in sys.modules if m.startswith('scipy.')})))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(run.stdout.split())


def _keep(rel: Path, scipy: set[str]) -> bool:
    """Whether a distribution's file is carried: no tests, no bytecode (compiled again here),
    of scipy only the subpackages in `scipy`."""
    parts = rel.parts
    if any(p in ("tests", "__pycache__") for p in parts[:-1]) or rel.suffix == ".pyc":
        return False
    return not (parts[0] == "scipy" and len(parts) > 2 and parts[1] not in scipy)


def _copy_stdlib(dest: Path) -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    dest.mkdir(parents=True)
    for path in stdlib.iterdir():
        if path.name in _STDLIB_SKIP or path.name.startswith("config-"):
            continue
        if path.name == "lib-dynload":
            (dest / path.name).mkdir()
            for ext in path.iterdir():
                if not _DYNLOAD_SKIP.match(ext.name):
                    shutil.copy2(ext, dest / path.name / ext.name)
        elif path.is_dir():
            shutil.copytree(path, dest / path.name, ignore=shutil.ignore_patterns("__pycache__", "test", "tests"))
        else:
            shutil.copy2(path, dest / path.name)


def _copy_site_packages(dest: Path, requires: dict, python_src: Path) -> list[str]:
    scipy = _scipy_used(python_src)
    names = _distributions(requires)
    for name in names:
        dist = metadata.distribution(name)
        for file in dist.files or []:
            src = Path(dist.locate_file(file))
            rel = Path(str(file))
            if rel.parts[0] == ".." or not src.is_file() or not _keep(rel, scipy):
                continue
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return names


def _needed_libs(root: Path) -> dict[str, Path]:
    """Shared libraries the carried binaries need outside the base set and outside the
    runtime itself (name -> path on this machine), found with ldd."""
    own = {p.name for p in root.rglob("*.so*")}
    libs: dict[str, Path] = {}
    for so in root.rglob("*.so*"):
        run = subprocess.run(["ldd", str(so)], capture_output=True, text=True)
        for name, path in re.findall(r"^\s*(\S+) => (/\S+)", run.stdout, re.M):
            if not _BASE_LIBS.match(name) and name not in own:
                libs[name] = Path(path)
    return libs


def _glibc(root: Path) -> str:
    """The newest glibc symbol version any carried binary needs (objdump -T), e.g. "2.34"."""
    newest = (2, 0)
    for so in root.rglob("*.so*"):
        out = subprocess.run(["objdump", "-T", str(so)], capture_output=True, text=True).stdout
        for v in re.findall(r"GLIBC_(\d+)\.(\d+)", out):
            newest = max(newest, (int(v[0]), int(v[1])))
    return "%d.%d" % newest


def build_runtime(stage: Path, requires: dict, python_src: Path) -> dict:
    """Write the runtime into `stage` (which becomes resources/runtime). Returns what it holds:
    version, libpython, distributions, preloaded libraries, glibc (newest symbol version
    needed). Raises RuntimeError when this interpreter has no shared libpython."""
    soname = sysconfig.get_config_var("INSTSONAME")
    lib = Path(sysconfig.get_config_var("LIBDIR") or "") / (soname or "")
    if not soname or not lib.is_file():
        raise RuntimeError("this interpreter has no shared libpython (built without --enable-shared): a standalone "
                           "FMU needs one")
    version = "%d.%d" % sys.version_info[:2]
    pylib = stage / "lib" / f"python{version}"
    _copy_stdlib(pylib)
    dists = _copy_site_packages(pylib / "site-packages", requires, python_src)
    shutil.copy2(lib, stage / "lib" / soname)
    preload = _needed_libs(stage)
    for name, path in preload.items():
        shutil.copy2(path, stage / "lib" / name)
    if shutil.which("strip"):   # llvmlite's LLVM library comes with its symbol tables (about half its size)
        for so in (pylib / "site-packages" / "llvmlite").rglob("*.so"):
            subprocess.run(["strip", "--strip-unneeded", str(so)], check=True)
    compileall.compile_dir(str(pylib), quiet=2, workers=0,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    info = {"version": version, "libpython": f"lib/{soname}", "preload": [f"lib/{n}" for n in sorted(preload)],
            "distributions": dists, "glibc": _glibc(stage)}
    lines = [f"version={version}", f"libpython={info['libpython']}", *(f"preload={p}" for p in info["preload"]),
             f"glibc={info['glibc']}", f"distributions={json.dumps(dists)}"]
    (stage / "flexmbs_runtime.txt").write_text("\n".join(lines) + "\n")
    return info


def add_runtime(fmu: zipfile.ZipFile, stage: Path) -> int:
    """Write the runtime folder `stage` into the FMU as resources/runtime; returns its size in
    bytes unpacked."""
    size = 0
    for path in sorted(stage.rglob("*")):
        if path.is_file():
            fmu.write(path, f"resources/runtime/{path.relative_to(stage).as_posix()}")
            size += path.stat().st_size
    return size


def unpacked_size(fmu: Path) -> int:
    """Bytes of an FMU unpacked."""
    with zipfile.ZipFile(fmu) as z:
        return sum(i.file_size for i in z.infolist())

