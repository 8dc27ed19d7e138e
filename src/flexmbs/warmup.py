"""The numba kernels a run needs, compiled (or loaded from the cache) before the run starts, so
that compile time is said as such and never counted as integration time, in a real-time factor
or in a progress bar's estimate.

numba compiles a kernel at its first call. Loading compiled kernels from the cache is quick,
compiling them takes a minute or more: the preparation runs under compiling.Compiling, which
says so when it lasts (and, with `progress`, counts the seconds against the longest compile of
the same kind on this machine).

Once a process has prepared a kind of run, the kernels stay loaded for its life: a later
preparation of the same kind returns at once (_PREPARED). It had been half of the fixed cost
of a short `simulate` call (0.7 of 1.5 ms: a throwaway integrator and its workspace, RK4's
stability check, the output evaluation), which an optimisation loop pays at every call.
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import typeof

from .compiling import Compiling
from .kernels.structs import route_of
from .signals import Evaluator, output_width
from .solvers.stepper import Settings, StabilityWarning, Stepper
from .system import System

# the kinds of run this process has prepared: (route, method, samples, dynamics, numba types of
# the state and the inputs), which fix every kernel signature a run calls (a read-only inputs
# array, e.g. System.input_defaults, is a signature of its own)
_PREPARED: set[tuple] = set()


def prepare(system: System, settings: Settings, x: np.ndarray, inputs: np.ndarray, t: float = 0.0,
            progress: bool = False, samples: bool = False, dynamics: bool = True) -> float:
    """Compile or load every kernel a run of `system` with `settings` calls (the integrator
    entered for a zero-length step, the outputs evaluated once), on throwaway copies: nothing of
    the caller's changes; samples: the run integrates through its samples at once
    (Stepper.advance_samples); dynamics: its outputs are evaluated with the dynamics
    (Evaluator.evaluate). Returns the seconds it took (compiling, when above
    compiling.NOTICE_AFTER); 0.0 at once when this process has prepared the same kind of run."""
    route = route_of(system.arrays)   # what compiles: kernels/structs.ROUTES
    kind = (route, settings.method, samples, dynamics, typeof(x), typeof(inputs))
    if kind in _PREPARED:
        return 0.0
    with Compiling(f"{settings.method} {route}", f"the {settings.method} method on the {route} route",
                   progress) as compiling:
        stepper = Stepper(system, settings)
        with warnings.catch_warnings():   # RK4's stability check warns in the run itself
            warnings.simplefilter("ignore", StabilityWarning)
            stepper.advance(t, x.copy(), t, inputs)
            if samples:
                stepper.advance_samples(np.array([t, t]), np.tile(x, (2, 1)), inputs)
        y = np.zeros((1, output_width(system)))
        Evaluator(system, stepper.W).evaluate(np.array([t]), x[None, :].copy(), inputs[None, :], y, dynamics)
    # RK4 calls its Jacobian kernel only in the stability check, which a state where the
    # right-hand side fails skips (bound inf): such a preparation is not remembered
    if settings.method != "rk4" or np.isfinite(stepper.stability_bound):
        _PREPARED.add(kind)
    return compiling.seconds
