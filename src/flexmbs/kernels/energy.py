"""Mechanical energies [J] (numba): kinetic, gravitational potential, strain, and spring."""

import numpy as np

from .body import first_moment
from .dynamics import assemble
from .kinematics import marker_world
from .linalg import dot, mv, quad
from .settings import kernel


@kernel
def energies(S, W, t, q, u, inputs, out):
    """out = [kinetic, gravity potential, strain, spring]. q, u hold prescribed values."""
    assemble(S, W, t, q, u, inputs)
    out[0] = 0.5 * quad(u, W.M, u)
    vg = 0.0
    ve = 0.0
    s = W.e_s
    for b in range(S.nb):
        n = S.nm[b]
        eta = q[S.eq[b]:S.eq[b] + n]
        m = first_moment(S, b, eta, s)
        mv(W.A[b], s, W.e_t)
        for k in range(3):
            vg -= S.gravity[k] * (m * W.r[b, k] + W.e_t[k])
        ve += 0.5 * quad(eta, S.Ke[b, :n, :n], eta)
    out[2] = ve
    vs = 0.0
    for c in range(S.nv):
        if S.uq[c] >= 0:
            vs += 0.5 * S.k_spring[c] * (q[S.uq[c]] - S.q_preload[c]) ** 2
    for k in range(S.sd_a.shape[0]):
        marker_world(S, W, S.sd_a[k], q, u, W.e_ra, W.e_A, W.e_v, W.e_w, W.e_Jv, W.e_Jw, W.e_a, W.e_al, False)
        marker_world(S, W, S.sd_b[k], q, u, W.e_rb, W.e_A, W.e_v, W.e_w, W.e_Jv, W.e_Jw, W.e_a, W.e_al, False)
        d = W.e_t
        for i in range(3):
            d[i] = W.e_rb[i] - W.e_ra[i]
        vs += 0.5 * S.sd_k[k] * (np.sqrt(dot(d, d)) - S.sd_l0[k]) ** 2
        for i in range(3):
            vg -= 0.5 * S.sd_m[k] * S.gravity[i] * (W.e_ra[i] + W.e_rb[i])
    out[1] = vg
    out[3] = vs
