"""Joint kinematics in the parent-marker frame P (numba).

For each joint type: relative pose (p_J, R_J) of the child marker C in P, the motion subspaces
Sv, Sw (3 x nv) with pdot_J = Sv u_J and w_rel = Sw u_J (both in P), and the velocity-product
term c_w = d/dt(Sw) u_J. Velocity coordinates are coordinate rates, except for spherical and
free joints whose rotational velocities are the relative angular velocity in C (so a unit
quaternion never meets a singular map).
"""


from .linalg import copy2, mm
from .rotations import quat_to_matrix, rot_axis
from .settings import kernel

FIXED, REVOLUTE, PRISMATIC, CYLINDRICAL, UNIVERSAL, SPHERICAL, PLANAR, FREE = range(8)
# The code of each joint type of the model (flexmbs.model.JOINTS), as joint_kinematics branches on it.
CODE_OF = {"fixed": FIXED, "revolute": REVOLUTE, "prismatic": PRISMATIC, "cylindrical": CYLINDRICAL,
           "universal": UNIVERSAL, "spherical": SPHERICAL, "planar": PLANAR, "free": FREE}


@kernel(inline=True)
def joint_kinematics(jt, axes1, axes2, i, q, kq, u, ku, p, R, Sv, Sw, cw, R1, R2, b):
    """Fill p (3), R (3x3), Sv, Sw (3 x nv, zeroed by caller), cw (3) for the joint of body i:
    axes axes1[i], axes2[i] (unit, in P), coordinates q[kq:], rates u[ku:] (read by offset, so
    that the hot path takes no array views). R1, R2 (3x3) and b (3) are scratch."""
    for k in range(3):
        cw[k] = 0.0
        p[k] = 0.0
    x1, y1, z1 = axes1[i, 0], axes1[i, 1], axes1[i, 2]
    if jt == REVOLUTE:
        rot_axis(x1, y1, z1, q[kq], R)
        _set_col(Sw, 0, x1, y1, z1)
    elif jt == PRISMATIC:
        _identity(R)
        _set_col(Sv, 0, x1, y1, z1)
        for k in range(3):
            p[k] = axes1[i, k] * q[kq]
    elif jt == CYLINDRICAL:
        rot_axis(x1, y1, z1, q[kq + 1], R)
        _set_col(Sv, 0, x1, y1, z1)
        _set_col(Sw, 1, x1, y1, z1)
        for k in range(3):
            p[k] = axes1[i, k] * q[kq]
    elif jt == UNIVERSAL:
        x2, y2, z2 = axes2[i, 0], axes2[i, 1], axes2[i, 2]
        rot_axis(x1, y1, z1, q[kq], R1)
        rot_axis(x2, y2, z2, q[kq + 1], R2)
        mm(R1, R2, R)
        for k in range(3):
            b[k] = R1[k, 0] * x2 + R1[k, 1] * y2 + R1[k, 2] * z2
        _set_col(Sw, 0, x1, y1, z1)
        _set_col(Sw, 1, b[0], b[1], b[2])
        uu = u[ku] * u[ku + 1]
        cw[0] = (y1 * b[2] - z1 * b[1]) * uu
        cw[1] = (z1 * b[0] - x1 * b[2]) * uu
        cw[2] = (x1 * b[1] - y1 * b[0]) * uu
    elif jt == SPHERICAL:
        quat_to_matrix(q, kq, R)
        copy2(R, Sw)
    elif jt == PLANAR:
        x2, y2, z2 = axes2[i, 0], axes2[i, 1], axes2[i, 2]
        bx, by, bz = y1 * z2 - z1 * y2, z1 * x2 - x1 * z2, x1 * y2 - y1 * x2
        rot_axis(x1, y1, z1, q[kq + 2], R)
        _set_col(Sv, 0, x2, y2, z2)
        _set_col(Sv, 1, bx, by, bz)
        _set_col(Sw, 2, x1, y1, z1)
        for k in range(3):
            p[k] = Sv[k, 0] * q[kq] + Sv[k, 1] * q[kq + 1]
    elif jt == FREE:
        quat_to_matrix(q, kq + 3, R)
        for k in range(3):
            p[k] = q[kq + k]
            Sv[k, k] = 1.0
            for l in range(3):
                Sw[k, 3 + l] = R[k, l]
    else:
        _identity(R)


@kernel
def _identity(R):
    for i in range(3):
        for j in range(3):
            R[i, j] = 1.0 if i == j else 0.0


@kernel
def _set_col(A, c, x, y, z):
    A[0, c] = x
    A[1, c] = y
    A[2, c] = z
