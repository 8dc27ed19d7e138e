"""Python's entry points into kernels that other kernels also call (numba).

The kernels are compiled without numba's runtime (settings.KERNEL), and numba compiles a
function that a kernel calls in the kernel's setting, whatever its own: a function that both
Python and a kernel call would, depending on which compiled it first, lose the runtime, and
then take a reference on the System and Workspace boxes at every call from Python without
giving it back. So Python calls these wrappers, compiled with the runtime (settings.JIT), and
no kernel calls them. (Functions only Python and other entry points call, such as
solvers.common.f_eval and outputs.sample, are entry points themselves.)
"""

from numba import njit

from . import drives, dynamics, kinematics
from .settings import JIT


@njit(**JIT)
def forward(S, W, q, u):
    """kinematics.forward."""
    kinematics.forward(S, W, q, u)


@njit(**JIT)
def marker_world(S, W, k, q, u, r, A, v, w, Jv, Jw, a, al, with_jac):
    """kinematics.marker_world."""
    kinematics.marker_world(S, W, k, q, u, r, A, v, w, Jv, Jw, a, al, with_jac)


@njit(**JIT)
def apply_prescribed(S, t, q, u, inputs, udot):
    """drives.apply_prescribed."""
    drives.apply_prescribed(S, t, q, u, inputs, udot)


@njit(**JIT)
def drive_profile(S, c, inputs, t):
    """drives.drive_profile: (q, qd, qdd) of coordinate c's motion profile at time t."""
    return drives.drive_profile(S, c, inputs, t)


@njit(**JIT)
def assemble(S, W, t, q, u, inputs):
    """dynamics.assemble."""
    dynamics.assemble(S, W, t, q, u, inputs)


@njit(**JIT)
def qdot_of(S, q, u, qd):
    """dynamics.qdot_of."""
    dynamics.qdot_of(S, q, u, qd)


@njit(**JIT)
def composite_accelerations(S, W, t, q, u, inputs, udot):
    """dynamics.composite_accelerations."""
    return dynamics.composite_accelerations(S, W, t, q, u, inputs, udot)


@njit(**JIT)
def recursive_accelerations(S, W, t, q, u, inputs, udot):
    """dynamics.recursive_accelerations."""
    return dynamics.recursive_accelerations(S, W, t, q, u, inputs, udot)
