"""Joint kinematics in the parent-marker frame P (numba).

For each joint type: relative pose (p_J, R_J) of the child marker C in P, the motion subspaces
Sv, Sw (3 x nv) with pdot_J = Sv u_J and w_rel = Sw u_J (both in P), and the velocity-product
term c_w = d/dt(Sw) u_J. Velocity coordinates are coordinate rates, except for spherical and
free joints whose rotational velocities are the relative angular velocity in C (so a unit
quaternion never meets a singular map).
"""

import numpy as np
from numba import njit

from .rotations import JIT, quat_to_matrix, rot_axis, cross

FIXED, REVOLUTE, PRISMATIC, CYLINDRICAL, UNIVERSAL, SPHERICAL, PLANAR, FREE = range(8)
# Joint type codes in flexmbs.model.JOINT_TYPES order.
CODE_OF = {"fixed": FIXED, "revolute": REVOLUTE, "prismatic": PRISMATIC, "cylindrical": CYLINDRICAL,
           "universal": UNIVERSAL, "spherical": SPHERICAL, "planar": PLANAR, "free": FREE}


@njit(**JIT)
def joint_kinematics(jt, a1, a2, q, u, p, R, Sv, Sw, cw):
    """Fill p (3), R (3x3), Sv, Sw (3 x nv, zeroed by caller), cw (3) for joint coordinates q, u."""
    cw[:] = 0.0
    p[:] = 0.0
    if jt == FIXED:
        R[:, :] = np.eye(3)
    elif jt == REVOLUTE:
        R[:, :] = rot_axis(a1, q[0])
        Sw[:, 0] = a1
    elif jt == PRISMATIC:
        R[:, :] = np.eye(3)
        p[:] = a1 * q[0]
        Sv[:, 0] = a1
    elif jt == CYLINDRICAL:
        p[:] = a1 * q[0]
        R[:, :] = rot_axis(a1, q[1])
        Sv[:, 0] = a1
        Sw[:, 1] = a1
    elif jt == UNIVERSAL:
        R1 = rot_axis(a1, q[0])
        R[:, :] = R1 @ rot_axis(a2, q[1])
        b = R1 @ a2
        Sw[:, 0] = a1
        Sw[:, 1] = b
        cross(a1, b, cw)
        cw *= u[0] * u[1]
    elif jt == SPHERICAL:
        R[:, :] = quat_to_matrix(q[0:4])
        Sw[:, :] = R
    elif jt == PLANAR:
        t2 = np.empty(3)
        cross(a1, a2, t2)
        p[:] = a2 * q[0] + t2 * q[1]
        R[:, :] = rot_axis(a1, q[2])
        Sv[:, 0] = a2
        Sv[:, 1] = t2
        Sw[:, 2] = a1
    else:
        p[:] = q[0:3]
        R[:, :] = quat_to_matrix(q[3:7])
        Sv[0, 0] = 1.0
        Sv[1, 1] = 1.0
        Sv[2, 2] = 1.0
        Sw[:, 3:6] = R
