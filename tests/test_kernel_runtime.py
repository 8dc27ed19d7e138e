"""The kernels run without numba's reference counting (settings.KERNEL) and Python reaches
them through entry points compiled with it (settings.JIT): after every way the package calls
the kernels, the System and Workspace boxes hold exactly the references Python holds, so a
System that goes out of use is freed, and no call left a count behind."""

import numpy as np

import flexmbs
from flexmbs.linearize import linearize
from flexmbs.scene import _kernel_poses
from flexmbs.solvers.stepper import Settings, Stepper
from flexmbs.compile import compile_model


def _counts(*boxes) -> list[int]:
    return [b._meminfo.refcount for b in boxes]


def test_entry_points_leave_no_references_behind():
    for name, method in (("huang_two_link", "dopri5"), ("four_bar", "implicit"), ("double_pendulum", "rk4")):
        system = compile_model(flexmbs.load_model(name))
        stepper = Stepper(system, Settings(method=method, step=1e-3))
        before = _counts(system.ref, stepper.W)
        x = np.concatenate([system.q0, system.u0])
        for k in range(5):
            stepper.advance(0.01 * k, x, 0.01 * (k + 1), system.input_defaults)
        result = flexmbs.simulate(system, 0.05, method=method, step=1e-3)
        linearize(system)
        _kernel_poses(system, result.states[-2:])
        assert _counts(system.ref, stepper.W) == before, name
