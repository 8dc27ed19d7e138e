"""Small 3-D rotation helpers (numba); results go into caller-provided arrays.
Quaternions are [w, x, y, z], unit norm."""

import numpy as np

from .settings import kernel


@kernel
def cross(a, b, out):
    """out = a x b (out must not alias a or b)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@kernel
def cross_add(a, b, out, alpha):
    """out += alpha a x b."""
    out[0] += alpha * (a[1] * b[2] - a[2] * b[1])
    out[1] += alpha * (a[2] * b[0] - a[0] * b[2])
    out[2] += alpha * (a[0] * b[1] - a[1] * b[0])


@kernel
def _rodrigues(x, y, z, c1, c2, out):
    """out = I + c1 skew(k) + c2 skew(k)^2 for k = (x, y, z)."""
    out[0, 0] = 1.0 - c2 * (y * y + z * z)
    out[1, 1] = 1.0 - c2 * (x * x + z * z)
    out[2, 2] = 1.0 - c2 * (x * x + y * y)
    out[0, 1] = -c1 * z + c2 * x * y
    out[1, 0] = c1 * z + c2 * x * y
    out[0, 2] = c1 * y + c2 * x * z
    out[2, 0] = -c1 * y + c2 * x * z
    out[1, 2] = -c1 * x + c2 * y * z
    out[2, 1] = c1 * x + c2 * y * z


@kernel
def rot_axis(x, y, z, angle, out):
    """out = rotation by `angle` [rad] about the unit vector (x, y, z)."""
    _rodrigues(x, y, z, np.sin(angle), 1.0 - np.cos(angle), out)


@kernel
def quat_to_matrix(q, k, out):
    """out = rotation matrix of the unit quaternion q[k:k + 4] = [w, x, y, z]."""
    w, x, y, z = q[k], q[k + 1], q[k + 2], q[k + 3]
    out[0, 0] = 1 - 2 * (y * y + z * z)
    out[0, 1] = 2 * (x * y - w * z)
    out[0, 2] = 2 * (x * z + w * y)
    out[1, 0] = 2 * (x * y + w * z)
    out[1, 1] = 1 - 2 * (x * x + z * z)
    out[1, 2] = 2 * (y * z - w * x)
    out[2, 0] = 2 * (x * z - w * y)
    out[2, 1] = 2 * (y * z + w * x)
    out[2, 2] = 1 - 2 * (x * x + y * y)


@kernel
def quat_rate(q, k, w, kw, out):
    """out[k:k + 4] = d/dt q[k:k + 4] = 1/2 q (x) [0, w] for the body-frame angular velocity
    w[kw:kw + 3] [rad/s] (offsets instead of views)."""
    q0, q1, q2, q3 = q[k], q[k + 1], q[k + 2], q[k + 3]
    w0, w1, w2 = w[kw], w[kw + 1], w[kw + 2]
    out[k] = -0.5 * (q1 * w0 + q2 * w1 + q3 * w2)
    out[k + 1] = 0.5 * (q0 * w0 + q2 * w2 - q3 * w1)
    out[k + 2] = 0.5 * (q0 * w1 + q3 * w0 - q1 * w2)
    out[k + 3] = 0.5 * (q0 * w2 + q1 * w1 - q2 * w0)


@kernel
def _dexp_coeffs(th):
    """a = (1 - cos th)/th^2, b = (th - sin th)/th^3, with series near zero."""
    if th < 1e-3:
        t2 = th * th
        return 0.5 - t2 / 24.0 + t2 * t2 / 720.0, 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
    return (1.0 - np.cos(th)) / (th * th), (th - np.sin(th)) / (th * th * th)


@kernel
def _dexp_coeff_rates(th):
    """a'(th)/th and b'(th)/th, with series near zero."""
    if th < 1e-2:
        t2 = th * th
        return -1.0 / 12.0 + t2 / 180.0 - t2 * t2 / 6720.0, -1.0 / 60.0 + t2 / 1260.0 - t2 * t2 / 60480.0
    s = np.sin(th)
    c = np.cos(th)
    return (th * s - 2.0 * (1.0 - c)) / th ** 4, (th * (1.0 - c) - 3.0 * (th - s)) / th ** 5


@kernel
def expmap(psi, out):
    """out = exp(skew(psi)): rotation by the rotation vector psi [rad]."""
    th = np.sqrt(psi[0] ** 2 + psi[1] ** 2 + psi[2] ** 2)
    a, b = _dexp_coeffs(th)
    _rodrigues(psi[0], psi[1], psi[2], 1.0 - th * th * b, a, out)


@kernel
def dexp(psi, out):
    """out = T(psi), with d/dt exp(skew psi) exp(skew psi)^T = skew(T(psi) psi_dot)."""
    th = np.sqrt(psi[0] ** 2 + psi[1] ** 2 + psi[2] ** 2)
    a, b = _dexp_coeffs(th)
    _rodrigues(psi[0], psi[1], psi[2], a, b, out)


@kernel
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
