"""The FMU's C front end (flexmbs_fmi2.c): compiled per FMU at build time with the system C
compiler and shipped as binaries/linux64/<modelIdentifier>.so (in place of pythonfmu's C++
library), with a record of this interpreter in the resources.

Why it exists (docs/fmu.md, "The C front end"): the FMI 2.0 state machine and argument checks
before any Python runs, no host crash on a bad resource location, no exit abort, inputs and
outputs exchanged in C every step, and C hosts that need no environment variables.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Optional, Sequence

import flexmbs_fmu
from flexmbs_fmu.base import TIME_LIMIT
from flexmbs_fmu.variables import Variable

SOURCE = Path(flexmbs_fmu.__file__).parent / "flexmbs_fmi2.c"   # runs inside the FMU: in fmu_src
RECORD = "flexmbs_python.txt"       # in the FMU's resources
_LETTER = {"Real": "R", "Integer": "I", "Boolean": "B", "String": "S", "Enumeration": "I"}


def compiler() -> Optional[str]:
    """The C compiler to use ($CC, else cc or gcc on PATH), or None."""
    for cc in (os.environ.get("CC"), "cc", "gcc"):
        if cc and shutil.which(cc):
            return shutil.which(cc)
    return None


def libpython() -> Optional[str]:
    """Path of this interpreter's shared libpython, or None (a statically linked interpreter)."""
    libdir, name = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LDLIBRARY")
    if not libdir or not name or not name.endswith(".so") and ".so." not in name:
        return None
    path = Path(libdir) / name
    return str(path) if path.exists() else None


def record(exclude: Path) -> str:
    """The interpreter record the front end reads in a process without Python: libpython, the
    executable (which locates a virtual environment's site-packages), home (sys.base_prefix, used
    when there is no executable) and every folder of sys.path (added with site.addsitedir, so
    .pth files are honoured) except those under `exclude` (the build's temporary folder)."""
    lines = [f"libpython={libpython() or ''}", f"executable={sys.executable}", f"home={sys.base_prefix}"]
    lines += [f"path={p}" for p in sys.path
              if p and Path(p).is_dir() and "\n" not in p and not Path(p).resolve().is_relative_to(exclude.resolve())]
    return "\n".join(lines) + "\n"


def compile_front_end(dest: Path, guid: str, variables: list[Variable], module: str, cls: str,
                      flags: Sequence[str] = ("-O2",)) -> Optional[str]:
    """Compile the front end for one FMU into `dest`: the slave is class `cls` of module
    `module` (in the FMU's resources), `variables` in value-reference order; `flags` are the
    optimisation and instrumentation flags (benchmarks/sanitize_front_end.py builds it with
    AddressSanitizer). The front end refuses times beyond flexmbs_fmu.base.TIME_LIMIT, as the
    slave does. Returns None on success, else the reason it could not be built (no compiler,
    no Python headers or shared libpython, a compiler error); the caller then keeps
    pythonfmu's binary."""
    if not sys.platform.startswith("linux"):
        return f"the C front end is built on Linux only (this is {sys.platform})"
    cc = compiler()
    if cc is None:
        return "no C compiler (cc, gcc or $CC) found"
    include = sysconfig.get_paths().get("include")
    if not include or not (Path(include) / "Python.h").exists():
        return f"Python's C headers are missing ({include}/Python.h; install the python3-dev package)"
    if libpython() is None:
        return "this interpreter has no shared libpython (built without --enable-shared): C hosts cannot load it"
    types = "".join(_LETTER[v.type] for v in variables)
    with tempfile.TemporaryDirectory(prefix="flexmbs_shim_") as tmp:
        config = Path(tmp) / "flexmbs_shim_config.h"
        config.write_text(f"#define SHIM_GUID {json.dumps(guid)}\n#define SHIM_VAR_TYPES {json.dumps(types)}\n"
                          f"#define SHIM_MODULE {json.dumps(module)}\n#define SHIM_CLASS {json.dumps(cls)}\n"
                          f"#define SHIM_RECORD {json.dumps(RECORD)}\n#define SHIM_TIME_LIMIT {TIME_LIMIT!r}\n")
        cmd = [cc, "-shared", "-fPIC", *flags, "-std=c11", "-Wall", "-fvisibility=hidden", f"-I{tmp}", f"-I{include}",
               "-o", str(dest), str(SOURCE), "-ldl", "-lpthread", "-lm"]
        run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        return f"{' '.join(cmd)} failed:\n{run.stderr.strip()}"
    return None
