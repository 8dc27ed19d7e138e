"""Small 3-D rotation helpers (numba); results go into caller-provided arrays.
Quaternions are [w, x, y, z], unit norm."""

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
def cross_add(a, b, out, alpha):
    """out += alpha a x b."""
    out[0] += alpha * (a[1] * b[2] - a[2] * b[1])
    out[1] += alpha * (a[2] * b[0] - a[0] * b[2])
    out[2] += alpha * (a[0] * b[1] - a[1] * b[0])


@njit(**JIT)
def _rodrigues(k, c1, c2, out):
    """out = I + c1 skew(k) + c2 skew(k)^2."""
    x, y, z = k[0], k[1], k[2]
    out[0, 0] = 1.0 - c2 * (y * y + z * z)
    out[1, 1] = 1.0 - c2 * (x * x + z * z)
    out[2, 2] = 1.0 - c2 * (x * x + y * y)
    out[0, 1] = -c1 * z + c2 * x * y
    out[1, 0] = c1 * z + c2 * x * y
    out[0, 2] = c1 * y + c2 * x * z
    out[2, 0] = -c1 * y + c2 * x * z
    out[1, 2] = -c1 * x + c2 * y * z
    out[2, 1] = c1 * x + c2 * y * z


@njit(**JIT)
def rot_axis(axis, angle, out):
    """out = rotation by `angle` [rad] about the unit vector `axis`."""
    _rodrigues(axis, np.sin(angle), 1.0 - np.cos(angle), out)


@njit(**JIT)
def quat_to_matrix(q, out):
    w, x, y, z = q[0], q[1], q[2], q[3]
    out[0, 0] = 1 - 2 * (y * y + z * z)
    out[0, 1] = 2 * (x * y - w * z)
    out[0, 2] = 2 * (x * z + w * y)
    out[1, 0] = 2 * (x * y + w * z)
    out[1, 1] = 1 - 2 * (x * x + z * z)
    out[1, 2] = 2 * (y * z - w * x)
    out[2, 0] = 2 * (x * z - w * y)
    out[2, 1] = 2 * (y * z + w * x)
    out[2, 2] = 1 - 2 * (x * x + y * y)


@njit(**JIT)
def quat_rate(q, w_body, out):
    """Quaternion derivative for body-frame angular velocity: qdot = 1/2 q (x) [0, w]."""
    out[0] = -0.5 * (q[1] * w_body[0] + q[2] * w_body[1] + q[3] * w_body[2])
    out[1] = 0.5 * (q[0] * w_body[0] + q[2] * w_body[2] - q[3] * w_body[1])
    out[2] = 0.5 * (q[0] * w_body[1] + q[3] * w_body[0] - q[1] * w_body[2])
    out[3] = 0.5 * (q[0] * w_body[2] + q[1] * w_body[1] - q[2] * w_body[0])


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
    return (th * s - 2.0 * (1.0 - c)) / th ** 4, (th * (1.0 - c) - 3.0 * (th - s)) / th ** 5


@njit(**JIT)
def expmap(psi, out):
    """out = exp(skew(psi)): rotation by the rotation vector psi [rad]."""
    th = np.sqrt(psi[0] ** 2 + psi[1] ** 2 + psi[2] ** 2)
    a, b = _dexp_coeffs(th)
    _rodrigues(psi, 1.0 - th * th * b, a, out)


@njit(**JIT)
def dexp(psi, out):
    """out = T(psi), with d/dt exp(skew psi) exp(skew psi)^T = skew(T(psi) psi_dot)."""
    th = np.sqrt(psi[0] ** 2 + psi[1] ** 2 + psi[2] ** 2)
    a, b = _dexp_coeffs(th)
    _rodrigues(psi, a, b, out)


@njit(**JIT)
def dexp_bias(psi, psid, out):
    """out = d/dt(T(psi)) psid: the velocity-product part of the angular acceleration."""
    th = np.sqrt(psi[0] ** 2 + psi[1] ** 2 + psi[2] ** 2)
    _, b = _dexp_coeffs(th)
    da, db = _dexp_coeff_rates(th)
    pp = psi[0] * psid[0] + psi[1] * psid[1] + psi[2] * psid[2]
    c1x = psi[1] * psid[2] - psi[2] * psid[1]
    c1y = psi[2] * psid[0] - psi[0] * psid[2]
    c1z = psi[0] * psid[1] - psi[1] * psid[0]
    # psi x c1 and psid x c1
    c2x = psi[1] * c1z - psi[2] * c1y
    c2y = psi[2] * c1x - psi[0] * c1z
    c2z = psi[0] * c1y - psi[1] * c1x
    c3x = psid[1] * c1z - psid[2] * c1y
    c3y = psid[2] * c1x - psid[0] * c1z
    c3z = psid[0] * c1y - psid[1] * c1x
    out[0] = da * pp * c1x + db * pp * c2x + b * c3x
    out[1] = da * pp * c1y + db * pp * c2y + b * c3y
    out[2] = da * pp * c1z + db * pp * c2z + b * c3z
