"""Geared DC motors inside the plant (numba): the motor law of the DC motor block
(flexmbs_laws/motor.py, compiled here) on the joints with a `motor` drive.

Each motor adds its armature current i [A] to the state, x = [q; u; i]:
    L di/dt = V - R i - k_t ratio qd        (V: the joint's voltage input [V])
and its joint gets the gear's torque load_torque(i, qd, ...) [N m] (ratio * efficiency * k_t i
less the shaft friction while the motor drives, the loss fading below the motor speed w_band).
The rotor's reflected inertia ratio^2 J_rotor is in S.motor_J (compile/joints.py). He 1993
(Sec. 9.4) couples the same motor to the crank-rocker; integrating i with the mechanism keeps
the back-EMF coupling inside one step.
"""

from types import FunctionType

from flexmbs_laws import motor as motor_law
from numba import njit

from .settings import KERNEL, kernel

# compiled without a cache of their own: the kernels that call them carry their code in theirs
# (a cache is found by the file's place in flexmbs, and the law lives in flexmbs_laws)
_LAW = dict(KERNEL, cache=False)


def _law(fn, **callees):
    """The law function fn compiled (_LAW), calling the compiled callees where the plain module
    has the plain functions of those names (numba calls no plain Python function)."""
    return njit(**_LAW)(FunctionType(fn.__code__, {**vars(motor_law), **callees}, fn.__name__))


armature_rate = _law(motor_law.armature_rate)
_gear_factor = _law(motor_law.gear_factor, loss_side=_law(motor_law.loss_side))
load_torque = _law(motor_law.load_torque, gear_factor=_gear_factor)


@kernel
def motor_torque(S, c, u, cur):
    """Torque [N m] the motor of velocity coordinate c applies at rates u and currents cur [A]."""
    return load_torque(cur[S.mot_i[c]], u[c], S.mot_kt[c], S.mot_b[c], S.mot_ratio[c], S.mot_eff[c],
                       S.mot_wb[c])


@kernel
def current_rates(S, u, cur, inputs, xd, i0):
    """xd[i0 + k] = d(current k)/dt [A/s] at rates u, currents cur and the voltage inputs (an
    offset into the caller's array, not a slice of it: a slice is a new array, whose reference
    counts cost every right-hand side, motors or not)."""
    for k in range(S.mot_c.shape[0]):
        c = S.mot_c[k]
        xd[i0 + k] = armature_rate(cur[k], inputs[S.drive_in[c]], S.mot_ratio[c] * u[c], S.mot_R[c],
                                   S.mot_L[c], S.mot_kt[c])
