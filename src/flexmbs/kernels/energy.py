"""Mechanical energies [J] (numba): kinetic, gravitational potential, strain, and spring."""

import numpy as np
from numba import njit

from .body import first_moment
from .dynamics import assemble
from .kinematics import marker_world
from .linalg import dot, mv, quad
from .rotations import JIT


@njit(**JIT)
def energies(S, W, t, q, u, inputs, out):
    """out = [kinetic, gravity potential, strain, spring]. q, u hold prescribed values."""
    assemble(S, W, t, q, u, inputs)
    out[0] = 0.5 * quad(u, W.M, u)
    vg = 0.0
    ve = 0.0
    s = W.m_t1
    for b in range(S.nb):
        n = S.nm[b]
        eta = q[S.eq[b]:S.eq[b] + n]
        m = first_moment(S, b, eta, s)
        mv(W.A[b], s, W.m_t2)
        for k in range(3):
            vg -= S.gravity[k] * (m * W.r[b, k] + W.m_t2[k])
        ve += 0.5 * quad(eta, S.Ke[b, :n, :n], eta)
    out[2] = ve
    vs = 0.0
    for c in range(S.nv):
        if S.uq[c] >= 0:
            vs += 0.5 * S.k_spring[c] * (q[S.uq[c]] - S.q_preload[c]) ** 2
    for k in range(S.sd_a.shape[0]):
        marker_world(S, W, S.sd_a[k], q, u, W.l_r, W.l_A, W.l_v, W.l_w, W.l_Jv, W.l_Jw, W.l_a, W.l_al, False)
        marker_world(S, W, S.sd_b[k], q, u, W.l_r2, W.l_A2, W.l_v2, W.l_w2, W.l_Jv2, W.l_Jw2, W.l_a, W.l_al, False)
        d = W.l_F
        for i in range(3):
            d[i] = W.l_r2[i] - W.l_r[i]
        vs += 0.5 * S.sd_k[k] * (np.sqrt(dot(d, d)) - S.sd_l0[k]) ** 2
        for i in range(3):
            vg -= 0.5 * S.sd_m[k] * S.gravity[i] * (W.l_r[i] + W.l_r2[i])
    out[1] = vg
    out[3] = vs
