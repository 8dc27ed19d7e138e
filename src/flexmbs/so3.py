"""Rotations in numpy for model compilation and analysis (the numba kernels have their own,
allocation-free versions in kernels/rotations.py). Quaternions are [w, x, y, z]."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional, Union

import numpy as np


def skew(a: np.ndarray) -> np.ndarray:
    """skew(a) b = a x b."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def rotation_about(axis: Sequence[float], angle: float) -> np.ndarray:
    """Rotation by `angle` [rad] about `axis` (any length > 0), by Rodrigues' formula."""
    k = skew(np.asarray(axis, dtype=float) / np.linalg.norm(axis))
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def rotation_matrix(spec: Optional[Union[Sequence[Sequence[float]], Mapping]]) -> np.ndarray:
    """R_BM of a model file's `rotation`: a 3x3 matrix, or {axis: [..], angle: deg}; None ->
    identity."""
    if spec is None:
        return np.eye(3)
    if isinstance(spec, Mapping):
        return rotation_about(spec["axis"], np.deg2rad(float(spec.get("angle", 0.0))))
    return np.asarray(spec, dtype=float).reshape(3, 3)


def frame_with_axis(axis: Sequence[float]) -> np.ndarray:
    """E = [e1 e2 e3], right-handed, with e3 along `axis` (e1 from the coordinate axis least
    aligned with it, so the frame is well conditioned)."""
    e3 = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.eye(3)[int(np.argmin(np.abs(e3)))]
    e1 = np.cross(helper, e3)
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(e3, e1), e3])


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a (x) b."""
    aw, av = a[0], a[1:]
    bw, bv = b[0], b[1:]
    return np.concatenate([[aw * bw - av @ bv], aw * bv + bw * av + np.cross(av, bv)])


def quat_from_rotvec(rv: np.ndarray) -> np.ndarray:
    """Unit quaternion of the rotation vector rv [rad] (exp of the pure quaternion rv/2)."""
    rv = np.asarray(rv, dtype=float)
    th = float(np.linalg.norm(rv))
    if th < 1e-8:
        return np.concatenate([[1.0 - th * th / 8.0], 0.5 * rv])
    return np.concatenate([[np.cos(th / 2)], np.sin(th / 2) / th * rv])


def rotvec_from_quat(q: np.ndarray) -> np.ndarray:
    """Rotation vector [rad] of a unit quaternion (the shortest rotation)."""
    q = q / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-12:
        return 2.0 * q[1:]
    return 2.0 * np.arctan2(s, q[0]) / s * q[1:]


def right_jacobian_inv(rv: np.ndarray) -> np.ndarray:
    """Inverse right Jacobian of SO(3): d(rv)/dt = J_r(rv)^-1 w for R = R_ref exp(rv), w in body axes."""
    th = float(np.linalg.norm(rv))
    k = skew(rv)
    if th < 1e-4:
        c = 1.0 / 12.0 + th * th / 720.0
    else:
        c = 1.0 / th ** 2 - (1.0 + np.cos(th)) / (2.0 * th * np.sin(th))
    return np.eye(3) + 0.5 * k + c * (k @ k)
