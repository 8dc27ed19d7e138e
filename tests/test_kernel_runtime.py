"""The kernels run without numba's reference counting (settings.KERNEL) and Python reaches
them through entry points compiled with it (settings.JIT): after every way the package calls
the kernels, the System and Workspace boxes hold exactly the references Python holds, so a
System that goes out of use is freed, and no call left a count behind."""

import dis
import importlib
import pkgutil
import types

import numpy as np

import flexmbs
from flexmbs import kernels, solvers
from flexmbs.kernels.settings import _Kernel
from flexmbs.linearize import linearize
from flexmbs.scene import _kernel_poses
from flexmbs.solvers.stepper import Settings, Stepper
from flexmbs.compile import compile_model
from flexmbs.kernels.structs import box, make_workspace
from flexmbs.model import Body, Joint, Load, Marker, Model
from flexmbs.solvers.common import OK, f_eval
from numba.core.dispatcher import Dispatcher  # after flexmbs, which sets numba's target CPU first


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


def _loaded_chain() -> Model:
    """Two hinged links with a world-frame point force on the second and a spring-damper from
    the ground to it: loads that read the bodies' world motion inside the right-hand side."""
    link = dict(mass=1.0, com=(0.25, 0.0, 0.0), inertia=(0.001, 0.02, 0.02))
    return Model(
        gravity=(0.0, 0.0, -9.81),
        ground_markers=[Marker("origin"), Marker("anchor", position=(0.3, 0.4, -0.2))],
        bodies=[Body(n, **link, markers=[Marker("hinge"), Marker("tip", position=(0.5, 0.0, 0.0))]) for n in "ab"],
        joints=[Joint("j1", "revolute", "ground", "origin", "a", "hinge", axis=(0, 1, 0), q0=[0.3], qd0=[0.5]),
                Joint("j2", "revolute", "a", "tip", "b", "hinge", axis=(0, 0, 1), q0=[-0.4], qd0=[1.0])],
        loads=[Load("point_force", "push", body="b", marker="tip", force=(0.0, 2.0, 1.0), frame="world"),
               Load("spring_damper", "sd", marker_a="ground.anchor", marker_b="b.tip", stiffness=50.0,
                    damping=2.0, rest_length=0.2)])


def test_rates_only_right_hand_side_skips_world_motion_nothing_reads():
    """While an integrator's kernel runs (W.rates_only = 1) the recursion leaves the bodies' world
    position and motion unset where nothing in the right-hand side reads them: with those arrays
    poisoned with NaN, the rates are bit for bit those of a full evaluation, and the poison stays
    for a model without loads (the work was skipped) but not for one whose point force and
    spring-damper read them, nor for closed loops."""
    cases = [("double_pendulum", compile_model(flexmbs.load_model("double_pendulum")), True),
             ("huang_two_link", compile_model(flexmbs.load_model("huang_two_link")), True),
             ("four_bar", compile_model(flexmbs.load_model("four_bar")), False),
             ("loaded chain", compile_model(_loaded_chain()), False)]
    for name, system, skipped in cases:
        arrays = make_workspace(system.arrays)
        W = box(arrays)
        x = np.concatenate([system.q0, system.u0 + 0.3])
        full, lean = np.zeros(x.size), np.zeros(x.size)
        assert f_eval(system.ref, W, 0.1, x, system.input_defaults, full) == OK
        world = (arrays.r, arrays.v, arrays.w, arrays.a, arrays.al)
        for arr in world:
            arr[:] = np.nan
        arrays.rates_only[0] = 1.0
        assert f_eval(system.ref, W, 0.1, x, system.input_defaults, lean) == OK
        assert np.array_equal(lean, full), name
        assert all(np.isnan(arr).all() == skipped for arr in world), name


def _called_dispatchers(fn) -> list[tuple[str, object]]:
    """(dotted name, object) of every global name or module attribute that fn's bytecode loads
    (`rhs`, `dynamics.rhs`): the functions fn can call."""
    found, chain = [], []
    for ins in dis.get_instructions(fn):
        if ins.opname == "LOAD_GLOBAL":
            chain = [ins.argval]
            obj = fn.__globals__.get(ins.argval)
        elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and chain and isinstance(obj, types.ModuleType):
            chain.append(ins.argval)
            obj = getattr(obj, ins.argval, None)
        else:
            chain = []
            continue
        found.append((".".join(chain), obj))
    return found


def test_no_kernel_calls_an_entry_point():
    """The rule of kernels/settings.py: a kernel (compiled without numba's runtime) calls no
    function compiled with it (settings.JIT; the motor laws, compiled without it, may be called). numba would compile the callee in the kernel's
    setting, and Python's own calls to it would then keep a reference on the boxes at every
    call (qdot_of was one, stop 43). Checked on the bytecode of every kernel of the package,
    so it holds for models no test compiles."""
    modules = [importlib.import_module(m.name) for m in pkgutil.iter_modules(kernels.__path__, "flexmbs.kernels.")]
    modules += [importlib.import_module(m.name) for m in pkgutil.iter_modules(solvers.__path__, "flexmbs.solvers.")]
    checked, wrong = 0, []
    for module in modules:
        for name, obj in vars(module).items():
            if not isinstance(obj, _Kernel) or obj.py_func.__module__ != module.__name__:
                continue
            checked += 1
            for called, target in _called_dispatchers(obj.py_func):
                if isinstance(target, Dispatcher) and target.targetoptions.get("_nrt", True):
                    wrong.append(f"{module.__name__}.{name} calls {called}")
    assert checked > 50, f"only {checked} kernels found: the search no longer sees them"
    assert not wrong, "kernels calling entry points compiled with the runtime:\n" + "\n".join(wrong)
