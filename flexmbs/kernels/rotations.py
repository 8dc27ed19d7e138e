"""Small 3-D rotation helpers (numba). Quaternions are [w, x, y, z], unit norm."""

import numpy as np
from numba import njit

JIT = dict(cache=True, nogil=True, fastmath=False)


@njit(**JIT)
def cross(a, b, out):
    """out = a x b (out must not alias a or b)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(**JIT)
def cross3(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@njit(**JIT)
def skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


@njit(**JIT)
def rot_axis(axis, angle):
    """Rotation matrix for a rotation of `angle` [rad] about the unit vector `axis`."""
    c = np.cos(angle)
    s = np.sin(angle)
    k = skew(axis)
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)


@njit(**JIT)
def quat_to_matrix(q):
    w, x, y, z = q[0], q[1], q[2], q[3]
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


@njit(**JIT)
def quat_rate(q, w_body, out):
    """Quaternion derivative for body-frame angular velocity: qdot = 1/2 q (x) [0, w]."""
    out[0] = -0.5 * (q[1] * w_body[0] + q[2] * w_body[1] + q[3] * w_body[2])
    out[1] = 0.5 * (q[0] * w_body[0] + q[2] * w_body[2] - q[3] * w_body[1])
    out[2] = 0.5 * (q[0] * w_body[1] + q[3] * w_body[0] - q[1] * w_body[2])
    out[3] = 0.5 * (q[0] * w_body[2] + q[1] * w_body[1] - q[2] * w_body[0])


@njit(**JIT)
def expmap(psi):
    """exp(skew(psi)): rotation by the rotation vector psi [rad]."""
    th = np.sqrt(psi[0] ** 2 + psi[1] ** 2 + psi[2] ** 2)
    a, b = _dexp_coeffs(th)
    k = skew(psi)
    # sin(th)/th = 1 - th^2 b; (1-cos th)/th^2 = a
    return np.eye(3) + (1.0 - th * th * b) * k + a * (k @ k)


@njit(**JIT)
def _dexp_coeffs(th):
    """a = (1 - cos th)/th^2, b = (th - sin th)/th^3, with series near zero."""
    if th < 1e-3:
        t2 = th * th
        return 0.5 - t2 / 24.0 + t2 * t2 / 720.0, 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
    return (1.0 - np.cos(th)) / (th * th), (th - np.sin(th)) / (th * th * th)


@njit(**JIT)
def _dexp_coeff_rates(th):
    """a'(th)/th and b'(th)/th, with series near zero."""
    if th < 1e-2:
        t2 = th * th
        return -1.0 / 12.0 + t2 / 180.0 - t2 * t2 / 6720.0, -1.0 / 60.0 + t2 / 1260.0 - t2 * t2 / 60480.0
    s = np.sin(th)
    c = np.cos(th)
    da = (th * s - 2.0 * (1.0 - c)) / th ** 4
    db = (th * (1.0 - c) - 3.0 * (th - s)) / th ** 5
    return da, db


@njit(**JIT)
def dexp(psi):
    """T(psi) with d/dt exp(skew psi) exp(skew psi)^T = skew(T(psi) psi_dot) (spatial tangent)."""
    th = np.sqrt(psi[0] ** 2 + psi[1] ** 2 + psi[2] ** 2)
    a, b = _dexp_coeffs(th)
    k = skew(psi)
    return np.eye(3) + a * k + b * (k @ k)


@njit(**JIT)
def dexp_bias(psi, psid):
    """d/dt(T(psi)) psid: the velocity-product part of the angular acceleration."""
    th = np.sqrt(psi[0] ** 2 + psi[1] ** 2 + psi[2] ** 2)
    a, b = _dexp_coeffs(th)
    da, db = _dexp_coeff_rates(th)
    pp = psi[0] * psid[0] + psi[1] * psid[1] + psi[2] * psid[2]
    c1 = cross3(psi, psid)
    c2 = cross3(psi, c1)
    c3 = cross3(psid, c1)
    return da * pp * c1 + db * pp * c2 + b * c3
