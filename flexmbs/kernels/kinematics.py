"""Forward kinematics over the tree (numba): poses, velocities, velocity-product accelerations
and world Jacobians of every body frame, root to leaves.

Notation: r_i position of body frame origin in W [m]; A_i = R_WB rotation body->world;
v_i, w_i velocity [m/s] and angular velocity [rad/s] in W; a_i, al_i the parts of the
accelerations that remain when all generalised accelerations are zero (Jdot u) in W;
Jv_i, Jw_i (3 x nv) with v_i = Jv_i u, w_i = Jw_i u.
"""

import numpy as np
from numba import njit

from .joints import joint_kinematics
from .rotations import JIT, cross, dexp, dexp_bias, expmap


@njit(**JIT)
def marker_local(S, k, q, u, s, Ds, sd, sbias, Rrel, wrel, wbias):
    """Pose and motion of marker k relative to its body frame B (all in B).

    s: r_BM [m] with the elastic displacement and axial foreshortening -1/2 eta^T H eta;
    Ds = ds/d(eta) (3 x n); sd = Ds etad; sbias = d/dt(Ds) etad; Rrel = R_BM;
    wrel = angular velocity of M relative to B; wbias its velocity-product rate.
    """
    b = S.mk_body[k]
    n = S.nm[b] if b >= 0 else 0
    s[:] = S.mk_s0[k]
    Rrel[:, :] = S.mk_R0[k]
    sd[:] = 0.0
    sbias[:] = 0.0
    wrel[:] = 0.0
    wbias[:] = 0.0
    if n == 0:
        return
    eta = q[S.eq[b]:S.eq[b] + n]
    etad = u[S.ev[b]:S.ev[b] + n]
    Phi = S.mk_Phi[k, :, :n]
    H = S.mk_H[k, :n, :n]
    Heta = H @ eta
    Hetad = H @ etad
    Ds[:, :n] = Phi
    Ds[0, :n] -= Heta
    s += Phi @ eta
    s[0] -= 0.5 * (eta @ Heta)
    sd[:] = Ds[:, :n] @ etad
    sbias[0] = -(etad @ Hetad)
    psi = S.mk_Psi[k, :, :n] @ eta
    psid = S.mk_Psi[k, :, :n] @ etad
    Rrel[:, :] = expmap(psi) @ S.mk_R0[k]
    wrel[:] = dexp(psi) @ psid
    wbias[:] = dexp_bias(psi, psid)


@njit(**JIT)
def marker_world(S, W, k, q, u, r, A, v, w, Jv, Jw, a, al, with_jac):
    """World pose (r, A), velocity (v, w), velocity-product acceleration (a, al) and, when
    with_jac, Jacobians (Jv, Jw: 3 x nv) of marker k. Needs W filled by `forward` for its body."""
    b = S.mk_body[k]
    s, Ds, sd, sb, Rrel, wr, wb = W.m_s, W.m_Ds, W.m_sd, W.m_sb, W.m_R, W.m_wr, W.m_wb
    marker_local(S, k, q, u, s, Ds, sd, sb, Rrel, wr, wb)
    if b < 0:
        r[:] = s
        A[:, :] = Rrel
        v[:] = 0.0
        w[:] = 0.0
        a[:] = 0.0
        al[:] = 0.0
        if with_jac:
            Jv[:, :] = 0.0
            Jw[:, :] = 0.0
        return
    Ab = W.A[b]
    sw = Ab @ s
    sdw = Ab @ sd
    wrw = Ab @ wr
    wb_ = W.w[b]
    tmp = W.m_t1
    tmp2 = W.m_t2
    r[:] = W.r[b] + sw
    A[:, :] = Ab @ Rrel
    cross(wb_, sw, tmp)
    v[:] = W.v[b] + tmp + sdw
    w[:] = wb_ + wrw
    # a = a_b + al_b x s + w x (w x s) + 2 w x sd + A sbias
    cross(W.al[b], sw, tmp)
    a[:] = W.a[b] + tmp + Ab @ sb
    cross(wb_, sw, tmp)
    cross(wb_, tmp, tmp2)
    a += tmp2
    cross(wb_, sdw, tmp)
    a += 2.0 * tmp
    cross(wb_, wrw, tmp)
    al[:] = W.al[b] + tmp + Ab @ wb
    if with_jac:
        Jw[:, :] = W.Jw[b]
        _sub_skew_times(sw, W.Jw[b], W.Jv[b], Jv)
        n = S.nm[b]
        if n > 0:
            e0 = S.ev[b]
            psi = S.mk_Psi[k, :, :n] @ q[S.eq[b]:S.eq[b] + n]
            Jw[:, e0:e0 + n] += Ab @ (dexp(psi) @ S.mk_Psi[k, :, :n])
            Jv[:, e0:e0 + n] += Ab @ Ds[:, :n]


@njit(**JIT)
def _sub_skew_times(d, Jw, Jv_in, Jv_out):
    """Jv_out = Jv_in - skew(d) Jw, i.e. the velocity of a point offset by d from a frame."""
    for c in range(Jw.shape[1]):
        Jv_out[0, c] = Jv_in[0, c] - (d[1] * Jw[2, c] - d[2] * Jw[1, c])
        Jv_out[1, c] = Jv_in[1, c] - (d[2] * Jw[0, c] - d[0] * Jw[2, c])
        Jv_out[2, c] = Jv_in[2, c] - (d[0] * Jw[1, c] - d[1] * Jw[0, c])


@njit(**JIT)
def forward(S, W, q, u):
    """Fill W.r, W.A, W.v, W.w, W.a, W.al, W.Jv, W.Jw for every body, root to leaves."""
    rm, Am, vm, wm, am, alm = W.k_r, W.k_A, W.k_v, W.k_w, W.k_a, W.k_al
    Jvm, Jwm = W.k_Jv, W.k_Jw
    pJ, RJ, cw, tmp, tmp2 = W.k_p, W.k_R, W.k_cw, W.m_t1, W.m_t2
    for i in range(S.nb):
        marker_world(S, W, S.pmark[i], q, u, rm, Am, vm, wm, Jvm, Jwm, am, alm, True)
        nvj = S.jnv[i]
        j0 = S.ju[i]
        Sv = W.k_Sv[:, :nvj]
        Sw = W.k_Sw[:, :nvj]
        Sv[:, :] = 0.0
        Sw[:, :] = 0.0
        joint_kinematics(S.jtype[i], S.axis1[i], S.axis2[i], q[S.jq[i]:S.jq[i] + S.jnq[i]],
                         u[j0:j0 + nvj], pJ, RJ, Sv, Sw, cw)
        uj = u[j0:j0 + nvj]
        pw = Am @ pJ
        wrel = Am @ (Sw @ uj)
        vrel = Am @ (Sv @ uj)
        # child marker frame C, then body origin offset d = -A_i r_BC
        Ai = W.A[i]
        Ai[:, :] = (Am @ RJ) @ S.c_R[i].T
        d = -(Ai @ S.c_pos[i])
        W.w[i] = wm + wrel
        cross(wm, pw, tmp)
        vc = vm + tmp + vrel
        cross(wm, wrel, tmp)
        W.al[i] = alm + tmp + Am @ cw
        cross(alm, pw, tmp)
        ac = am + tmp
        cross(wm, pw, tmp)
        cross(wm, tmp, tmp2)
        ac += tmp2
        cross(wm, vrel, tmp)
        ac += 2.0 * tmp
        W.r[i] = rm + pw + d
        wi = W.w[i]
        cross(wi, d, tmp)
        W.v[i] = vc + tmp
        cross(W.al[i], d, tmp)
        cross(wi, d, tmp2)
        W.a[i] = ac + tmp
        cross(wi, tmp2, tmp)
        W.a[i] += tmp
        # Jacobians: marker -> child marker -> body origin
        Jw = W.Jw[i]
        Jw[:, :] = Jwm
        Jw[:, j0:j0 + nvj] += Am @ Sw
        _sub_skew_times(pw, Jwm, Jvm, Jvm)
        Jvm[:, j0:j0 + nvj] += Am @ Sv
        _sub_skew_times(d, Jw, Jvm, W.Jv[i])
