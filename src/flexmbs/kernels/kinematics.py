"""Forward kinematics over the tree (numba): poses, velocities, velocity-product accelerations
and world Jacobians of every body frame, root to leaves.

Notation: r_i position of body frame origin in W [m]; A_i = R_WB rotation body->world;
v_i, w_i velocity [m/s] and angular velocity [rad/s] in W; a_i, al_i the parts of the
accelerations that remain when all generalised accelerations are zero (Jdot u) in W;
Jv_i, Jw_i (3 x nv) with v_i = Jv_i u, w_i = Jw_i u.
"""


from .joints import joint_kinematics
from .linalg import copy2, fill2, mm, mv
from .rotations import cross, cross_add, dexp, dexp_bias, expmap
from .settings import kernel


@kernel
def foreshortening(H, eta, etad, h, hd):
    """h = H eta, hd = H etad; returns (eta^T H eta, etad^T H etad). The axial displacement of a
    point with foreshortening matrix H is -1/2 eta^T H eta; its rate -eta^T H etad."""
    ehe = 0.0
    dhd = 0.0
    for i in range(eta.shape[0]):
        hi = 0.0
        hdi = 0.0
        for j in range(eta.shape[0]):
            hi += H[i, j] * eta[j]
            hdi += H[i, j] * etad[j]
        h[i] = hi
        hd[i] = hdi
        ehe += eta[i] * hi
        dhd += etad[i] * hdi
    return ehe, dhd


@kernel
def marker_local(S, W, k, q, u):
    """Pose and motion of marker k relative to its body frame B (all in B), into W.m_*:

    m_s: r_BM [m] with the elastic displacement and axial foreshortening -1/2 eta^T H eta;
    m_Ds = ds/d(eta) (3 x n); m_sd = Ds etad; m_sb = d/dt(Ds) etad; m_R = R_BM;
    m_wr = angular velocity of M relative to B; m_wb its velocity-product rate;
    m_T = dexp(Psi eta) (maps Psi etad to m_wr). Returns the number of modes n of the body.
    """
    b = S.mk_body[k]
    n = S.nm[b] if b >= 0 else 0
    s, sd, sb, wr, wb = W.m_s, W.m_sd, W.m_sb, W.m_wr, W.m_wb
    for i in range(3):
        s[i] = S.mk_s0[k, i]
        sd[i] = 0.0
        sb[i] = 0.0
        wr[i] = 0.0
        wb[i] = 0.0
    if n == 0:
        copy2(S.mk_R0[k], W.m_R)
        return 0
    e0 = S.eq[b]
    v0 = S.ev[b]
    eta = q[e0:e0 + n]
    etad = u[v0:v0 + n]
    Phi = S.mk_Phi[k]
    Psi = S.mk_Psi[k]
    H = S.mk_H[k]
    Ds = W.m_Ds
    psi = W.m_psi
    psid = W.m_psid
    h = W.m_h
    ehe, dhd = foreshortening(H, eta, etad, h, W.m_hd)
    for j in range(n):
        for i in range(3):
            Ds[i, j] = Phi[i, j]
        Ds[0, j] -= h[j]
    for i in range(3):
        acc_s = 0.0
        acc_sd = 0.0
        acc_p = 0.0
        acc_pd = 0.0
        for j in range(n):
            acc_s += Phi[i, j] * eta[j]
            acc_sd += Ds[i, j] * etad[j]
            acc_p += Psi[i, j] * eta[j]
            acc_pd += Psi[i, j] * etad[j]
        s[i] += acc_s
        sd[i] = acc_sd
        psi[i] = acc_p
        psid[i] = acc_pd
    s[0] -= 0.5 * ehe
    sb[0] = -dhd
    expmap(psi, W.m_E)
    mm(W.m_E, S.mk_R0[k], W.m_R)
    dexp(psi, W.m_T)
    mv(W.m_T, psid, wr)
    dexp_bias(psi, psid, wb)
    return n


@kernel
def marker_world(S, W, k, q, u, r, A, v, w, Jv, Jw, a, al, with_jac):
    """World pose (r, A), velocity (v, w), velocity-product acceleration (a, al) and, when
    with_jac, Jacobians (Jv, Jw: 3 x nv) of marker k. Needs W filled by `forward` up to its body."""
    b = S.mk_body[k]
    n = marker_local(S, W, k, q, u)
    if b < 0:
        for i in range(3):
            r[i] = W.m_s[i]
            v[i] = 0.0
            w[i] = 0.0
            a[i] = 0.0
            al[i] = 0.0
        copy2(W.m_R, A)
        if with_jac:
            fill2(Jv, 0.0)
            fill2(Jw, 0.0)
        return
    Ab = W.A[b]
    wb_ = W.w[b]
    sw, sdw, wrw, t1 = W.m_sw, W.m_sdw, W.m_wrw, W.m_t1
    mv(Ab, W.m_s, sw)
    mv(Ab, W.m_sd, sdw)
    mv(Ab, W.m_wr, wrw)
    mm(Ab, W.m_R, A)
    for i in range(3):
        r[i] = W.r[b, i] + sw[i]
        w[i] = wb_[i] + wrw[i]
        v[i] = W.v[b, i] + sdw[i]
        a[i] = W.a[b, i]
        al[i] = W.al[b, i]
    cross_add(wb_, sw, v, 1.0)
    # a = a_b + al_b x s + w x (w x s) + 2 w x sd + A sbias ; al = al_b + w x wrel + A wbias
    cross_add(W.al[b], sw, a, 1.0)
    cross(wb_, sw, t1)
    cross_add(wb_, t1, a, 1.0)
    cross_add(wb_, sdw, a, 2.0)
    mv(Ab, W.m_sb, t1)
    for i in range(3):
        a[i] += t1[i]
    cross_add(wb_, wrw, al, 1.0)
    mv(Ab, W.m_wb, t1)
    for i in range(3):
        al[i] += t1[i]
    if with_jac:
        copy2(W.Jw[b], Jw)
        sub_skew_times(sw, W.Jw[b], W.Jv[b], Jv)
        if n > 0:
            e0 = S.ev[b]
            Psi = S.mk_Psi[k]
            TPsi = W.m_TPsi
            for i in range(3):
                for j in range(n):
                    TPsi[i, j] = W.m_T[i, 0] * Psi[0, j] + W.m_T[i, 1] * Psi[1, j] + W.m_T[i, 2] * Psi[2, j]
            for i in range(3):
                for j in range(n):
                    Jw[i, e0 + j] += Ab[i, 0] * TPsi[0, j] + Ab[i, 1] * TPsi[1, j] + Ab[i, 2] * TPsi[2, j]
                    Jv[i, e0 + j] += Ab[i, 0] * W.m_Ds[0, j] + Ab[i, 1] * W.m_Ds[1, j] + Ab[i, 2] * W.m_Ds[2, j]


@kernel
def sub_skew_times(d, Jw, Jv_in, Jv_out):
    """Jv_out = Jv_in - skew(d) Jw, i.e. the velocity of a point offset by d from a frame
    (Jv_out may be Jv_in)."""
    for c in range(Jw.shape[1]):
        Jv_out[0, c] = Jv_in[0, c] - (d[1] * Jw[2, c] - d[2] * Jw[1, c])
        Jv_out[1, c] = Jv_in[1, c] - (d[2] * Jw[0, c] - d[0] * Jw[2, c])
        Jv_out[2, c] = Jv_in[2, c] - (d[0] * Jw[1, c] - d[1] * Jw[0, c])


@kernel
def forward(S, W, q, u):
    """Fill W.r, W.A, W.v, W.w, W.a, W.al, W.Jv, W.Jw for every body, root to leaves."""
    rm, Am, vm, wm, am, alm = W.k_r, W.k_A, W.k_v, W.k_w, W.k_a, W.k_al
    Jvm, Jwm = W.k_Jv, W.k_Jw
    pJ, RJ, cw, t1 = W.k_p, W.k_R, W.k_cw, W.k_t1
    pw, wrel, vrel, d, tmp3 = W.k_pw, W.k_wrel, W.k_vrel, W.k_d, W.k_t3
    for i in range(S.nb):
        marker_world(S, W, S.pmark[i], q, u, rm, Am, vm, wm, Jvm, Jwm, am, alm, True)
        nvj = S.jnv[i]
        j0 = S.ju[i]
        Sv = W.k_Sv[:, :nvj]
        Sw = W.k_Sw[:, :nvj]
        fill2(Sv, 0.0)
        fill2(Sw, 0.0)
        uj = u[j0:j0 + nvj]
        joint_kinematics(S.jtype[i], S.axis1, S.axis2, i, q, S.jq[i], u, j0, pJ, RJ, Sv, Sw, cw,
                         W.k_R1, W.k_R2, W.k_b)
        mv(Am, pJ, pw)
        mv(Sw, uj, tmp3)
        mv(Am, tmp3, wrel)
        mv(Sv, uj, tmp3)
        mv(Am, tmp3, vrel)
        # child marker frame C, then body origin offset d = -A_i r_BC
        Ai = W.A[i]
        mm(Am, RJ, W.k_R1)
        for r_ in range(3):
            for c_ in range(3):
                Ai[r_, c_] = W.k_R1[r_, 0] * S.c_R[i, c_, 0] + W.k_R1[r_, 1] * S.c_R[i, c_, 1] \
                    + W.k_R1[r_, 2] * S.c_R[i, c_, 2]
        mv(Ai, S.c_pos[i], d)
        for k in range(3):
            d[k] = -d[k]
        wi = W.w[i]
        ai = W.a[i]
        ali = W.al[i]
        vi = W.v[i]
        mv(Am, cw, tmp3)
        for k in range(3):
            wi[k] = wm[k] + wrel[k]
            vi[k] = vm[k] + vrel[k]
            ali[k] = alm[k] + tmp3[k]
            ai[k] = am[k]
            W.r[i, k] = rm[k] + pw[k] + d[k]
        cross_add(wm, pw, vi, 1.0)
        cross_add(wm, wrel, ali, 1.0)
        cross_add(alm, pw, ai, 1.0)
        cross(wm, pw, t1)
        cross_add(wm, t1, ai, 1.0)
        cross_add(wm, vrel, ai, 2.0)
        # origin of the body: offset d from the child marker
        cross_add(wi, d, vi, 1.0)
        cross_add(ali, d, ai, 1.0)
        cross(wi, d, t1)
        cross_add(wi, t1, ai, 1.0)
        # Jacobians: marker -> child marker -> body origin
        Jw = W.Jw[i]
        copy2(Jwm, Jw)
        sub_skew_times(pw, Jwm, Jvm, Jvm)
        for r_ in range(3):
            for c in range(nvj):
                Jw[r_, j0 + c] += Am[r_, 0] * Sw[0, c] + Am[r_, 1] * Sw[1, c] + Am[r_, 2] * Sw[2, c]
                Jvm[r_, j0 + c] += Am[r_, 0] * Sv[0, c] + Am[r_, 1] * Sv[1, c] + Am[r_, 2] * Sv[2, c]
        sub_skew_times(d, Jw, Jvm, W.Jv[i])
