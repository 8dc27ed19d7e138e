"""The model evaluated about a reference for the linear analyses: the System to analyse (spin
turns joints at a constant rate), the reference state and inputs checked, f(dz, u) through the
right-hand-side kernel, and its Jacobians by central differences.

The position rows use the kinematic definitions directly (qdot = u for joint and modal coordinates,
the J_r^-1 map above for rotation vectors); the velocity rows come from the dynamics kernel `rhs`.

Jacobians are central finite differences with steps eps^(1/3) times the state scales of
flexmbs.system.state_scales (1 for joint coordinates, a small modal amplitude for eta).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import numpy as np

from .. import arguments as args
from .. import signals
from ..compile import compile_model
from ..kernels.drives import MOTION
from ..model import JOINTS
from ..model.elements import Drive, Model, Profile
from ..solvers.common import OK, f_eval
from ..system import System, model_argument
from .coordinates import Coordinates


FD = np.finfo(float).eps ** (1.0 / 3.0)


def kernel_args(system: System) -> tuple:
    """(system argument, workspace argument, workspace tuple) for the kernels. The kernels take
    either the plain tuples or boxes of them (System.ref); with boxes the workspace tuple is kept
    here too (its arrays are shared with the box) so results can be read from Python."""
    ref = getattr(system, "ref", None)
    if ref is None:
        W = system.workspace()
        return system.arrays, W, W
    from ..kernels.structs import box, make_workspace
    W = make_workspace(system.arrays)
    return ref, box(W), W


def system_of(model_or_system: Model | System, spin: Mapping[str, float] | None = None,
               where: str = "linearize") -> System:
    """The System to analyse; with spin = {joint: rate [rad/s or m/s]} the named single-coordinate
    joints become motion drives q = q0 + rate t (on a deep copy of the Model, then compiled)."""
    if spin is not None and not isinstance(spin, Mapping):
        raise ValueError(f"{where}: spin = {spin!r}: expected a mapping {{joint name: rate}}")
    for jn, rate in (spin or {}).items():
        args.number(where, f"spin[{jn!r}]", rate, "finite", "rad/s or m/s")
    model_or_system = model_argument(where, model_or_system)
    if not spin:
        return model_or_system if isinstance(model_or_system, System) else compile_model(model_or_system)
    base = model_or_system.model if isinstance(model_or_system, System) else model_or_system
    model = copy.deepcopy(base)
    for jn, rate in spin.items():
        j = model.joint(jn)
        if JOINTS[j.type].nv != 1:
            raise ValueError(f"spin: joint {jn!r} is a {j.type} joint; only single-coordinate joints "
                             f"(revolute, prismatic) can be spun")
        q0 = np.ravel(np.asarray(j.q0, dtype=float))
        value = float(q0[0]) if q0.size else 0.0
        j.drive = Drive(type="motion", profile=Profile(type="constant", value=value, rate=float(rate)))
        j.qd0 = [float(rate)]
    return compile_model(model)


def input_vector(system: System, inputs, where: str = "linearize") -> np.ndarray:
    """Input values (defaults overridden by a {name: value} mapping or a full array), checked
    finite; length >= 1 so that the kernels always see the same array type."""
    u = np.zeros(max(1, len(system.inputs)))
    u[:len(system.inputs)] = system.input_defaults
    if inputs is None:
        return u
    if isinstance(inputs, Mapping):
        for name, val in args.input_values(where, inputs, system.inputs).items():
            u[system.inputs.index(name)] = val
        return u
    arr = args.vector(where, "inputs", np.ravel(np.asarray(inputs, dtype=object)), len(system.inputs),
                      f"the inputs {', '.join(system.inputs) or '(none)'}")
    u[:arr.size] = arr
    return u


def reference_state(system: System, x, where: str = "linearize", name: str = "x") -> np.ndarray:
    nx = system.nq + system.nv
    if x is None:
        return np.concatenate([system.q0, system.u0]).astype(float)
    return args.vector(where, name, np.ravel(np.asarray(x, dtype=object)), nx, "the full state [q; u]")


class Evaluator:
    """f(dz, inputs) -> (d(dz)/dt, outputs) about a reference state, via the rhs kernel."""

    def __init__(self, system: System, coords: Coordinates, t: float, x_ref: np.ndarray,
                 outputs: Sequence[str]) -> None:
        self.system, self.coords, self.t, self.x_ref = system, coords, float(t), x_ref
        self.outputs = list(outputs)
        for name in self.outputs:
            coords.lookup(name)
        self.S_arg, self.W_arg, self.W = kernel_args(system)
        self.xd = np.zeros(system.nq + system.nv)
        # the sensors' poses come from the signals' kinematics (only when asked for)
        self.poses = None
        if any(coords.lookup(name)[0] == "pose" for name in self.outputs):
            self.poses = signals.Evaluator(system, self.W)
        self.y = np.zeros((1, signals.output_width(system)))
        # a loop model's motion-driven coordinates: set from their profiles at (t, inputs) before
        # the loop is closed, or it would close about other values than the kernel then applies
        self.prescribed = coords.loops is not None and bool(np.any(system.arrays.drive == MOTION))

    def __call__(self, dz: np.ndarray, inputs: np.ndarray) -> np.ndarray:
        c = self.coords
        x = c.state(self.x_ref, dz)
        if self.prescribed:
            self._prescribe(x, inputs)
        if f_eval(self.S_arg, self.W_arg, self.t, x, inputs, self.xd) != OK:
            raise RuntimeError("the mass matrix is singular or indefinite at the linearization point")
        zd = c.rates(self.W, self.xd, dz)
        if self.poses is not None:   # (Coordinates refuses models with motor currents: x is [q; u])
            self.poses.evaluate(np.array([self.t]), x[None, :], inputs[None, :], self.y, dynamics=False)
        y = np.array([c.output(n, self.W, self.xd, self.x_ref, self.y[0]) for n in self.outputs])
        return np.concatenate([zd, y])

    def _prescribe(self, x: np.ndarray, inputs: np.ndarray) -> None:
        """x's motion-driven positions and rates set to their profiles at (t, inputs), as the
        kernel applies them (into W's copies of q and u), and the loop closed again with them."""
        nq, nv = self.system.nq, self.system.nv
        f_eval(self.S_arg, self.W_arg, self.t, x, inputs, self.xd)
        x[:nq] = self.W.xq
        x[nq:nq + nv] = self.W.xu
        self.coords.project(x)


def jacobian(f, n_out: int, z0: np.ndarray, steps: np.ndarray) -> np.ndarray:
    J = np.zeros((n_out, z0.size))
    for j in range(z0.size):
        h = steps[j]
        zp = z0.copy()
        zm = z0.copy()
        zp[j] += h
        zm[j] -= h
        J[:, j] = (f(zp) - f(zm)) / (2.0 * h)
    return J
