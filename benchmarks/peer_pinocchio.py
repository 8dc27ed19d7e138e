"""Peer: Pinocchio (https://github.com/stack-of-tasks/pinocchio, PyPI package ``pin``).

Builds the serial chains of benchmarks/models.py as a ``pinocchio.Model`` and evaluates the
forward dynamics with the articulated-body algorithm ``pin.aba`` (Featherstone 2008, Rigid
Body Dynamics Algorithms, ch. 7), in two ways:

* ``chain_rhs``: ``pin.aba`` called from Python; each call pays the binding's argument
  conversion (about 0.5-1 us on this machine), which is part of the reported time.
* ``compiled_chain_rhs``: ``pinocchio::aba`` in a C++ loop (benchmarks/pin_loop.cpp, compiled
  here against the headers and libraries of the pin wheel and the cmeel-eigen wheel, both in
  the ``bench`` extra), called through ctypes once per block of calls.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Callable

import numpy as np

from models import GRAVITY, Link


def version() -> str:
    import pinocchio as pin

    return pin.__version__


def chain(links: list[Link]):
    """(model, data) of the serial chain ``links``: joint k is a revolute joint about the link
    frame's z or y at ``offset`` in link k - 1's frame; body inertia about the COM."""
    import pinocchio as pin

    model = pin.Model()
    model.gravity.linear = GRAVITY
    joint = {"z": pin.JointModelRZ, "y": pin.JointModelRY}
    parent = 0
    for k, lk in enumerate(links):
        placement = pin.SE3(np.eye(3), np.asarray(lk.offset, dtype=float))
        parent = model.addJoint(parent, joint[lk.axis](), placement, f"j{k}")
        model.appendBodyToJoint(parent, pin.Inertia(lk.mass, np.asarray(lk.com, dtype=float),
                                                    np.diag(lk.inertia)), pin.SE3.Identity())
    return model, model.createData()


def chain_rhs(links: list[Link], q: np.ndarray, qd: np.ndarray):
    """A closure that runs one ``pin.aba`` at (q, qd, tau = 0) and returns the accelerations
    [rad/s^2] (a view of data.ddq)."""
    import pinocchio as pin

    model, data = chain(links)
    q, qd, tau = np.array(q, dtype=float), np.array(qd, dtype=float), np.zeros(len(links))

    def call() -> np.ndarray:
        return pin.aba(model, data, q, qd, tau)

    call.keep_alive = (model, data)
    return call


LOOP_SOURCE = Path(__file__).resolve().parent / "pin_loop.cpp"
PIN_DEFINITIONS = ("BOOST_MPL_LIMIT_LIST_SIZE=30", "BOOST_MPL_LIMIT_VECTOR_SIZE=30",
                   "BOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "BOOST_FUSION_INVOKE_MAX_ARITY=12",
                   "PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION")


def _prefix() -> Path:
    """The cmeel prefix of the pin wheel: include/ (pinocchio, boost, eigen3) and lib/."""
    try:
        import cmeel
    except ImportError as err:
        raise RuntimeError(f"no cmeel prefix ({err}): pip install pin") from None
    return Path(cmeel.__path__[0]).parent / "cmeel.prefix"


def _loop_library() -> ctypes.CDLL:
    """pin_loop.cpp compiled (once per source and pin version, in the user's cache) and loaded.
    Raises RuntimeError, naming what is missing, when it cannot be built."""
    prefix = _prefix()
    eigen = prefix / "include" / "eigen3"
    if not eigen.is_dir():
        raise RuntimeError(f"no Eigen headers in {eigen}: pip install cmeel-eigen (in the bench extra)")
    cxx = os.environ.get("CXX", "g++")
    # -O3 -DNDEBUG as the wheel's own build, no -march as our kernels (generic CPU), and the
    # definitions the wheel's CMake targets pinocchio_headers and pinocchio_default give their
    # users (aba from the library's own instantiation, as pin.aba calls it)
    flags = [cxx, "-O3", "-DNDEBUG", "-std=c++17", "-fPIC", "-shared", str(LOOP_SOURCE),
             *(f"-D{d}" for d in PIN_DEFINITIONS),
             "-I", str(prefix / "include"), "-I", str(eigen), "-L", str(prefix / "lib"),
             "-lpinocchio_default", f"-Wl,-rpath,{prefix / 'lib'}"]
    # the key: the source, pin's version and the command (its paths: a library linked against
    # a venv that has since moved is built anew)
    key = hashlib.sha256(LOOP_SOURCE.read_bytes() + version().encode() + "\0".join(flags).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "flexmbs-bench"
    lib = cache / f"pin_loop-{key}.so"
    if not lib.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            out = Path(tmp) / lib.name
            cmd = flags + ["-o", str(out)]
            print(f"  compiling {LOOP_SOURCE.name} against pin {version()} (about a minute)",
                  file=sys.stderr, flush=True)
            try:
                done = subprocess.run(cmd, capture_output=True, text=True)
            except FileNotFoundError:
                raise RuntimeError(f"no C++ compiler {cxx!r} (set CXX, or apt install g++)") from None
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
            os.replace(out, lib)
    try:
        so = ctypes.CDLL(str(lib))
    except OSError as err:
        raise RuntimeError(f"{lib} does not load: {err}") from None
    dp = ctypes.POINTER(ctypes.c_double)
    so.pin_chain_new.restype = ctypes.c_void_p
    so.pin_chain_new.argtypes = [ctypes.c_int, ctypes.c_char_p] + [dp] * 5
    so.pin_chain_aba.restype = None
    so.pin_chain_aba.argtypes = [ctypes.c_void_p, dp, dp, ctypes.c_long, dp]
    so.pin_chain_free.restype = None
    so.pin_chain_free.argtypes = [ctypes.c_void_p]
    return so


def compiled_chain_rhs(links: list[Link], q: np.ndarray, qd: np.ndarray
                       ) -> tuple[Callable[[int], None], np.ndarray]:
    """(block, ddq): block(k) runs ``pinocchio::aba`` k times at (q, qd, tau = 0) in a C++ loop;
    ddq the accelerations [rad/s^2]. Raises RuntimeError when the loop cannot be built."""
    so = _loop_library()

    def arr(values) -> np.ndarray:
        return np.ascontiguousarray(values, dtype=float)

    def ptr(a: np.ndarray):
        return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))

    data = [arr([lk.offset for lk in links]), arr([lk.mass for lk in links]),
            arr([lk.com for lk in links]), arr([lk.inertia for lk in links]), arr(GRAVITY)]
    handle = so.pin_chain_new(len(links), "".join(lk.axis for lk in links).encode(), *map(ptr, data))
    if not handle:
        raise RuntimeError("pin_chain_new refused the chain (an axis other than 'z' or 'y', or "
                           "Pinocchio threw)")
    q, qd, ddq = arr(q), arr(qd), np.zeros(len(links))

    def block(k: int) -> None:
        so.pin_chain_aba(handle, ptr(q), ptr(qd), k, ptr(ddq))

    weakref.finalize(block, so.pin_chain_free, handle)
    block(1)
    block.keep_alive = (so, q, qd, ddq)
    return block, ddq.copy()
