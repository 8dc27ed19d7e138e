"""Mass matrix, velocity-product vector and gravity force of one body (numba).

Every body, rigid or flexible, is one floating frame with body-frame velocity
w = [v; w; etad] (v: origin velocity, w: angular velocity, both in body axes; etad: modal rates).
Its inertia is the sum of two exact parts:

- mass points q (flexible bodies): mass m_q at r_q(eta) = s_q + P_q eta - 1/2 e_x eta^T H_q eta
  (H_q: axial foreshortening of beams, the source of geometric stiffening), with velocity
  G_q w, G_q = [I, -skew(r_q), D_q], D_q = dr_q/deta. Their mass matrix sum m_q G_q^T G_q is
  a Gram matrix (positive definite for any eta) and their velocity-product force
  sum m_q G_q^T (w x v + w x (w x r_q) + 2 w x D_q etad + Ddot_q etad) is Kane's, so energy is
  conserved exactly and centrifugal, gravitational and axial-acceleration stiffening follow
  from the motion with no extra model;
- a constant matrix Mc: the rigid-body inertia of rigid bodies, and for flexible bodies what
  the points do not carry (section rotary inertia, tip inertia, the consistent-minus-lumped
  difference at eta = 0). Its velocity-product terms are the Kirchhoff gyroscopic ones,
  [w x p_v; w x p_w + v x p_v] with p = Mc w.
"""


from .settings import kernel


@kernel
def first_moment(S, b, eta, out):
    """out = S(eta) = ∫rho r dV of body b in body axes [kg m]; returns the body mass [kg]."""
    n = S.nm[b]
    Mc = S.Mc[b]
    m = Mc[0, 0]
    out[0] = Mc[1, 5]
    out[1] = Mc[2, 3]
    out[2] = Mc[0, 4]
    for k in range(3):
        for j in range(n):
            out[k] += Mc[k, 6 + j] * eta[j]
    kv = S.iv_k[b]
    if kv >= 0:
        iv_S, iv_Sb = S.iv_S, S.iv_Sb
        m += S.iv_m[kv]
        for k in range(3):
            acc = iv_S[kv, k]
            for j in range(n):
                acc += iv_Sb[kv, k, j] * eta[j]
            out[k] += acc
        kh = S.iv_h[b]
        if kh >= 0:
            out[0] -= 0.5 * _quad_n(S.iv_G, kh, eta, eta, n)
        return m
    npt = S.pt_n[b]
    pm, ps, P, H = S.pt_m[b], S.pt_s[b], S.pt_P[b], S.pt_H[b]
    for q in range(npt):
        m += pm[q]
        for k in range(3):
            acc = ps[k, q]
            for j in range(n):
                acc += P[k, j, q] * eta[j]
            out[k] += pm[q] * acc
        ehe = 0.0
        for i in range(n):
            for j in range(n):
                ehe += eta[i] * H[i, j, q] * eta[j]
        out[0] -= 0.5 * pm[q] * ehe
    return m


@kernel
def _quad_n(G, kh, x, y, n):
    """x^T G[kh] y over the first n entries."""
    s = 0.0
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += G[kh, i, j] * y[j]
        s += x[i] * acc
    return s


@kernel
def body_terms(S, W, b, eta, etad, vb, wb, gb, Mb, hb, Fb):
    """Fill Mb (6+n)^2, hb (velocity-product force) and Fb (gravity force), body b, body axes.
    (Not inlined, unlike a rigid body's terms: its arithmetic outweighs a call, and inlined
    into the recursion and the mass matrix it took 30 s more of the first compile.)

    vb, wb: body-frame velocities; gb: gravity vector in body axes [m/s^2]. Entries of Mb, hb,
    Fb beyond 6 + n are left untouched. The mass points enter through their moments
    (_moment_terms) where the System has them, else by the sum over points (_point_terms); both
    give the same sums exactly.
    """
    n = S.nm[b]
    nb6 = 6 + n
    for i in range(nb6):
        hb[i] = 0.0
        Fb[i] = 0.0
        for j in range(nb6):
            Mb[i, j] = 0.0
    if S.iv_k[b] >= 0:
        _moment_terms(S, W, b, n, eta, etad, wb, gb, Mb, hb, Fb)
    elif S.pt_n[b] > 0:
        _point_terms(S, W, b, n, eta, etad, wb, gb, Mb, hb, Fb)
    if n > 0:
        for k in range(3):
            for l in range(3):
                Mb[3 + l, k] = Mb[k, 3 + l]
        # the frame-acceleration term w x v acts on the points through G_q: add M_points[:, v] (w x v)
        t0 = wb[1] * vb[2] - wb[2] * vb[1]
        t1 = wb[2] * vb[0] - wb[0] * vb[2]
        t2 = wb[0] * vb[1] - wb[1] * vb[0]
        for i in range(nb6):
            hb[i] += Mb[i, 0] * t0 + Mb[i, 1] * t1 + Mb[i, 2] * t2
    constant_terms(S.Mc, b, n, vb, wb, etad, gb, Mb, hb, Fb)


@kernel(inline=True)
def kinetic_energy(Mb, vb, wb, etad, n):
    """1/2 z^T Mb z [J]: the kinetic energy of a body with n modes, mass matrix Mb ((6+n)^2) and
    velocity z = [vb; wb; etad] in its own axes [m/s, rad/s, modal rates]."""
    T = 0.0
    for i in range(3):
        T += vb[i] * _row_times(Mb, i, vb, wb, etad, n) + wb[i] * _row_times(Mb, 3 + i, vb, wb, etad, n)
    for k in range(n):
        T += etad[k] * _row_times(Mb, 6 + k, vb, wb, etad, n)
    return 0.5 * T


@kernel(inline=True)
def _row_times(Mb, i, vb, wb, etad, n):
    """Row i of Mb times z = [vb; wb; etad]: a momentum [kg m/s, kg m^2/s, modal]."""
    acc = 0.0
    for j in range(3):
        acc += Mb[i, j] * vb[j] + Mb[i, 3 + j] * wb[j]
    for j in range(n):
        acc += Mb[i, 6 + j] * etad[j]
    return acc


@kernel(inline=True)
def constant_terms(Mc, b, n, vb, wb, etad, gb, Mb, hb, Fb):
    """Add the constant part Mc[b] of body b with n modes: Mc to Mb, its momenta's gyroscopic
    terms to hb and the gravity of its mass and first moment to Fb (body axes; etad is read
    only for n > 0)."""
    nb6 = 6 + n
    for i in range(nb6):
        for j in range(nb6):
            Mb[i, j] += Mc[b, i, j]
    h = gyroscopic_force(Mc, b, n, vb, wb, etad)
    F = weight(Mc, b, gb)
    for i in range(6):
        hb[i] += h[i]
        Fb[i] += F[i]
    for j in range(n):
        Fb[6 + j] += Mc[b, 0, 6 + j] * gb[0] + Mc[b, 1, 6 + j] * gb[1] + Mc[b, 2, 6 + j] * gb[2]


@kernel(inline=True)
def gyroscopic_force(Mc, b, n, vb, wb, etad):
    """The frame rows of the velocity-product force of Mc[b] (6-tuple [N, N m], body axes):
    [w x p_v; w x p_w + v x p_v], p = Mc z the momenta of z = [vb; wb; etad] (the Kirchhoff
    gyroscopic terms)."""
    pv0 = _momentum(Mc, b, 0, vb, wb, etad, n)
    pv1 = _momentum(Mc, b, 1, vb, wb, etad, n)
    pv2 = _momentum(Mc, b, 2, vb, wb, etad, n)
    pw0 = _momentum(Mc, b, 3, vb, wb, etad, n)
    pw1 = _momentum(Mc, b, 4, vb, wb, etad, n)
    pw2 = _momentum(Mc, b, 5, vb, wb, etad, n)
    return (wb[1] * pv2 - wb[2] * pv1,
            wb[2] * pv0 - wb[0] * pv2,
            wb[0] * pv1 - wb[1] * pv0,
            wb[1] * pw2 - wb[2] * pw1 + vb[1] * pv2 - vb[2] * pv1,
            wb[2] * pw0 - wb[0] * pw2 + vb[2] * pv0 - vb[0] * pv2,
            wb[0] * pw1 - wb[1] * pw0 + vb[0] * pv1 - vb[1] * pv0)


@kernel(inline=True)
def weight(Mc, b, gb):
    """The frame rows of the gravity force of Mc[b]'s mass and first moment (6-tuple [N, N m],
    body axes; gb gravity in body axes [m/s^2]): [m g; s x g]."""
    m = Mc[b, 0, 0]
    s0, s1, s2 = Mc[b, 1, 5], Mc[b, 2, 3], Mc[b, 0, 4]
    return (m * gb[0], m * gb[1], m * gb[2],
            s1 * gb[2] - s2 * gb[1], s2 * gb[0] - s0 * gb[2], s0 * gb[1] - s1 * gb[0])


@kernel
def _momentum(Mc, b, k, vb, wb, etad, n):
    """Row k of Mc[b] z, z = [vb; wb; etad]. It repeats _row_times on purpose: passing it the
    slice Mc[b] made the rigid recursion's right-hand side about 10 % slower (the double
    pendulum's RK4 run from 0.678 to 0.745 of exudyn's, stop 49)."""
    acc = 0.0
    for j in range(3):
        acc += Mc[b, k, j] * vb[j] + Mc[b, k, 3 + j] * wb[j]
    for j in range(n):
        acc += Mc[b, k, 6 + j] * etad[j]
    return acc


@kernel(reassoc=True)
def _point_terms(S, W, b, n, eta, etad, w, g, Mb, hb, Fb):
    """Add the sums over the mass points of body b: m G^T G to Mb, m G^T a to hb, m G^T g to Fb
    (the w-v block of Mb and the w x v term are left to body_terms). The points are the last
    axis of the System's pt_* arrays and of the scratch, so that every sum over them is one
    loop that the compiler vectorises (reassoc: it may add the points in any order)."""
    npt = S.pt_n[b]
    _point_motion(S, W, b, n, npt, eta, etad, w)
    pm, P, r, a, D0 = S.pt_m[b], S.pt_P[b], W.b_r, W.b_a, W.b_D
    m = S0 = S1 = S2 = R00 = R11 = R22 = R01 = R02 = R12 = 0.0
    f0 = f1 = f2 = t0 = t1 = t2 = 0.0
    for q in range(npt):
        mq = pm[q]
        x, y, z = mq * r[0, q], mq * r[1, q], mq * r[2, q]
        a0, a1, a2 = a[0, q], a[1, q], a[2, q]
        m += mq
        S0 += x
        S1 += y
        S2 += z
        R00 += x * r[0, q]
        R11 += y * r[1, q]
        R22 += z * r[2, q]
        R01 += x * r[1, q]
        R02 += x * r[2, q]
        R12 += y * r[2, q]
        f0 += mq * a0
        f1 += mq * a1
        f2 += mq * a2
        t0 += y * a2 - z * a1
        t1 += z * a0 - x * a2
        t2 += x * a1 - y * a0
    # frame blocks: [[m I, -skew(S)], [., sum m (|r|^2 I - r r^T)]], m a and r x m a, m g and S x g
    for k in range(3):
        Mb[k, k] += m
    Mb[0, 4] += S2
    Mb[0, 5] -= S1
    Mb[1, 3] -= S2
    Mb[1, 5] += S0
    Mb[2, 3] += S1
    Mb[2, 4] -= S0
    Mb[3, 3] += R11 + R22
    Mb[4, 4] += R00 + R22
    Mb[5, 5] += R00 + R11
    Mb[3, 4] -= R01
    Mb[4, 3] -= R01
    Mb[3, 5] -= R02
    Mb[5, 3] -= R02
    Mb[4, 5] -= R12
    Mb[5, 4] -= R12
    hb[0] += f0
    hb[1] += f1
    hb[2] += f2
    hb[3] += t0
    hb[4] += t1
    hb[5] += t2
    Fb[0] += m * g[0]
    Fb[1] += m * g[1]
    Fb[2] += m * g[2]
    Fb[3] += S1 * g[2] - S2 * g[1]
    Fb[4] += S2 * g[0] - S0 * g[2]
    Fb[5] += S0 * g[1] - S1 * g[0]
    for j in range(n):
        _point_mode_column(Mb, hb, Fb, pm, P, D0, r, a, g, npt, j)


@kernel(inline=True)
def _point_motion(S, W, b, n, npt, eta, etad, w):
    """Each point q's position W.b_r[:, q] = r_q [m], the axial row of its shapes
    W.b_D[:, q] = P_q[0] - (H_q eta)^T [m per unit eta] and its acceleration terms
    W.b_a[:, q] = w x (w x r_q) + 2 w x (D_q etad) + Ddot_q etad [m/s^2] (body axes; w the
    body's angular velocity [rad/s]). Also W.b_h[:, q] = H_q eta, W.b_t[:, q] = P_q etad
    [m/s] and W.b_c[:, q] = (eta^T H_q eta, etad^T H_q etad, etad^T H_q eta); W.b_hd scratch."""
    s, P, H = S.pt_s[b], S.pt_P[b], S.pt_H[b]
    h, hd, c, r, t, a, D0 = W.b_h, W.b_hd, W.b_c, W.b_r, W.b_t, W.b_a, W.b_D
    # c[0] = eta^T H eta, c[1] = etad^T H etad, c[2] = etad^T H eta: foreshortening and its rates
    for q in range(npt):
        c[0, q] = 0.0
        c[1, q] = 0.0
        c[2, q] = 0.0
    for i in range(n):
        for q in range(npt):
            h[i, q] = 0.0
            hd[q] = 0.0
        for j in range(n):
            e, ed = eta[j], etad[j]
            for q in range(npt):
                h[i, q] += H[i, j, q] * e
                hd[q] += H[i, j, q] * ed
        e, ed = eta[i], etad[i]
        for q in range(npt):
            c[0, q] += e * h[i, q]
            c[1, q] += ed * hd[q]
            c[2, q] += ed * h[i, q]
    for k in range(3):
        for q in range(npt):
            r[k, q] = s[k, q]
            t[k, q] = 0.0
        for j in range(n):
            e, ed = eta[j], etad[j]
            for q in range(npt):
                r[k, q] += P[k, j, q] * e
                t[k, q] += P[k, j, q] * ed
    for j in range(n):
        for q in range(npt):
            D0[j, q] = P[0, j, q] - h[j, q]
    w0, w1, w2 = w[0], w[1], w[2]
    for q in range(npt):
        r0, r1, r2 = r[0, q] - 0.5 * c[0, q], r[1, q], r[2, q]
        r[0, q] = r0
        d0, d1, d2 = t[0, q] - c[2, q], t[1, q], t[2, q]
        u0, u1, u2 = w1 * r2 - w2 * r1, w2 * r0 - w0 * r2, w0 * r1 - w1 * r0
        a[0, q] = w1 * u2 - w2 * u1 + 2.0 * (w1 * d2 - w2 * d1) - c[1, q]
        a[1, q] = w2 * u0 - w0 * u2 + 2.0 * (w2 * d0 - w0 * d2)
        a[2, q] = w0 * u1 - w1 * u0 + 2.0 * (w0 * d1 - w1 * d0)


@kernel(inline=True)
def _point_mode_column(Mb, hb, Fb, pm, P, D0, r, a, g, npt, j):
    """Column 6 + j of the points' sums, body axes: sum m D_j [kg], sum m r x D_j [kg m],
    sum m D_l . D_j [kg] (l <= j, and their mirror), sum m D_j . a [N] and sum m D_j . g [N]
    (per unit modal coordinate), D = [D0; P[1]; P[2]] (_point_motion); pm the point masses
    [kg], a their acceleration terms [m/s^2], g gravity [m/s^2]."""
    s0 = s1 = s2 = x0 = x1 = x2 = da = 0.0
    for q in range(npt):
        mq = pm[q]
        d0, d1, d2 = mq * D0[j, q], mq * P[1, j, q], mq * P[2, j, q]
        s0 += d0
        s1 += d1
        s2 += d2
        x0 += r[1, q] * d2 - r[2, q] * d1
        x1 += r[2, q] * d0 - r[0, q] * d2
        x2 += r[0, q] * d1 - r[1, q] * d0
        da += d0 * a[0, q] + d1 * a[1, q] + d2 * a[2, q]
    c = 6 + j
    Mb[0, c] += s0
    Mb[1, c] += s1
    Mb[2, c] += s2
    Mb[3, c] += x0
    Mb[4, c] += x1
    Mb[5, c] += x2
    for k in range(6):
        Mb[c, k] = Mb[k, c]
    hb[6 + j] += da
    Fb[6 + j] += s0 * g[0] + s1 * g[1] + s2 * g[2]
    for l in range(j + 1):
        acc = 0.0
        for q in range(npt):
            acc += pm[q] * (D0[j, q] * D0[l, q] + P[1, j, q] * P[1, l, q] + P[2, j, q] * P[2, l, q])
        Mb[6 + j, 6 + l] += acc
        if l != j:
            Mb[6 + l, 6 + j] += acc


@kernel(inline=True)
def _moment_terms(S, W, b, n, eta, etad, w, g, Mb, hb, Fb):
    """The sums of _point_terms from the moments of body b's points (SYSTEM_FIELDS iv_*), exact:
    with r_q = rho_q + e_x c_q, rho_q = s_q + P_q eta, c_q = -1/2 eta^T H_q eta and
    D_q = P_q - e_x (H_q eta)^T, every sum over q of a product of these is a polynomial in eta
    whose coefficients are the moments (Shabana 2005, ch. 5: the inertia shape integrals,
    extended by the foreshortening moments of H_q). Body axes; w angular velocity [rad/s],
    g gravity [m/s^2]. In four steps: the moments contracted with eta and etad, the body's
    first moment, inertia tensor and coupling B, its mass matrix, its velocity-product force;
    then gravity. (The steps take the System and Workspace boxes, not their arrays: a kernel
    reads a box's field without a reference count.)"""
    kv = S.iv_k[b]
    kh = S.iv_h[b]
    m = S.iv_m[kv]
    e, ed = _moment_contractions(S, W, kv, kh, n, eta, etad)
    _moment_inertia(S, W, kv, kh, n, eta, e)
    _moment_mass_matrix(S, W, kv, kh, n, m, Mb)
    _moment_velocity_terms(S, W, kh, n, etad, w, ed, Mb, hb)
    Sv = W.b_x
    # gravity: [m g; S x g; sum D^T g]
    for k in range(3):
        k1 = (k + 1) % 3
        k2 = (k + 2) % 3
        Fb[k] += m * g[k]
        Fb[3 + k] += Sv[k1] * g[k2] - Sv[k2] * g[k1]
    for j in range(n):
        Fb[6 + j] += Mb[0, 6 + j] * g[0] + Mb[1, 6 + j] * g[1] + Mb[2, 6 + j] * g[2]


@kernel(inline=True)
def _moment_contractions(S, W, kv, kh, n, eta, etad):
    """W.b_Ce: iv_C contracted with eta; W.b_Cx: iv_Cx contracted with etad (the Coriolis
    forces need only C's antisymmetric part: 3 n^2 multiplications where 9 n^2 contracted all
    of C); with foreshortening (kh >= 0) also W.b_g = G eta and the contractions W.b_W1, W.b_V,
    W.b_W2, W.b_W3 of the H moments with eta. Returns (sum m eta^T H eta, sum m etad^T H etad),
    zero without foreshortening."""
    iv_C, iv_Cx, HP, HH, G = S.iv_C, S.iv_Cx, S.iv_HP, S.iv_HH, S.iv_G
    Ce, Cx, W1, W2, W3, V, gv = W.b_Ce, W.b_Cx, W.b_W1, W.b_W2, W.b_W3, W.b_V, W.b_g
    fs = kh >= 0
    # C contracted with eta: Ce[k, l, j] = sum m (P eta)_k P_lj
    for k in range(3):
        for l in range(3):
            for j in range(n):
                acc = 0.0
                for i in range(n):
                    acc += iv_C[kv, k, l, i, j] * eta[i]
                Ce[k, l, j] = acc
    # Cx[a, j] = (e_a . sum m (P etad) x P_j)
    for a in range(3):
        for j in range(n):
            acc = 0.0
            for i in range(n):
                acc += iv_Cx[kv, a, i, j] * etad[i]
            Cx[a, j] = acc
    e = 0.0     # sum m eta^T H eta
    ed = 0.0    # sum m etad^T H etad
    if fs:
        for j in range(n):
            acc = 0.0
            for i in range(n):
                acc += G[kh, j, i] * eta[i]
            gv[j] = acc
            e += eta[j] * acc
        ed = _quad_n(G, kh, etad, etad, n)
        # W1[j, c, d] = sum_b HH[j, b, c, d] eta_b, V = W1 eta; W2[j, k, c] = sum_b HP[j, b, k, c] eta_b;
        # W3[a, b, k] = sum_c HP[a, b, k, c] eta_c
        for j in range(n):
            for c in range(n):
                vv = 0.0
                for d in range(n):
                    acc = 0.0
                    for bb in range(n):
                        acc += HH[kh, j, bb, c, d] * eta[bb]
                    W1[j, c, d] = acc
                    vv += acc * eta[d]
                V[j, c] = vv
            for k in range(3):
                for c in range(n):
                    a2 = 0.0
                    a3 = 0.0
                    for bb in range(n):
                        a2 += HP[kh, j, bb, k, c] * eta[bb]
                        a3 += HP[kh, j, c, k, bb] * eta[bb]
                    W2[j, k, c] = a2
                    W3[j, c, k] = a3
    return e, ed


@kernel(inline=True)
def _moment_inertia(S, W, kv, kh, n, eta, e):
    """The body's first moment W.b_x = S(eta) [kg m], inertia tensor W.b_J [kg m^2] and
    W.b_B[k, l, j] = sum m r_k D_lj, from the moments and their contractions (e: sum m eta^T H eta)."""
    iv_Sk, iv_Sb, iv_A, iv_S, HS = S.iv_Sk, S.iv_Sb, S.iv_A, S.iv_S, S.iv_HS
    Ce, B, J, W2, W3, V, Sv = W.b_Ce, W.b_B, W.b_J, W.b_W2, W.b_W3, W.b_V, W.b_x
    fs = kh >= 0
    # first moment S, second moment A = sum m r r^T and inertia tensor J
    for k in range(3):
        acc = iv_S[kv, k]
        for j in range(n):
            acc += iv_Sb[kv, k, j] * eta[j]
        Sv[k] = acc
    Sv[0] -= 0.5 * e
    for k in range(3):
        for l in range(k, 3):
            acc = iv_A[kv, k, l]
            for j in range(n):
                acc += (iv_Sk[kv, k, l, j] + iv_Sk[kv, l, k, j] + Ce[k, l, j]) * eta[j]
            J[k, l] = acc
    if fs:
        q4 = 0.0
        for j in range(n):
            for c in range(n):
                q4 += eta[j] * V[j, c] * eta[c]
        for k in range(3):
            hr = 0.0    # sum m (eta^T H eta) rho_k
            for a in range(n):
                for bb in range(n):
                    hr += (HS[kh, a, bb, k] + W3[a, bb, k]) * eta[a] * eta[bb]
            J[0, k] -= 0.5 * hr
            if k == 0:
                J[0, 0] -= 0.5 * hr
        J[0, 0] += 0.25 * q4
    trA = J[0, 0] + J[1, 1] + J[2, 2]
    for k in range(3):
        for l in range(k, 3):
            J[k, l] = -J[k, l]
            J[l, k] = J[k, l]
        J[k, k] += trA
    # B[k, l, j] = sum m r_k D_lj
    for k in range(3):
        for l in range(3):
            for j in range(n):
                B[k, l, j] = iv_Sk[kv, k, l, j] + Ce[k, l, j]
    if fs:
        for j in range(n):
            for k in range(3):
                acc = 0.0
                for c in range(n):
                    acc += HS[kh, j, c, k] * eta[c] + W2[j, k, c] * eta[c]
                B[k, 0, j] -= acc
            for l in range(3):
                acc = 0.0
                for a in range(n):
                    acc += eta[a] * W2[a, l, j]
                B[0, l, j] -= 0.5 * acc
            acc = 0.0
            for c in range(n):
                acc += V[j, c] * eta[c]
            B[0, 0, j] += 0.5 * acc


@kernel(inline=True)
def _moment_mass_matrix(S, W, kv, kh, n, m, Mb):
    """Add the points' mass matrix to Mb (m: their mass [kg])."""
    iv_Sb, iv_Me = S.iv_Sb, S.iv_Me
    B, J, W2, V, gv, Sv = W.b_B, W.b_J, W.b_W2, W.b_V, W.b_g, W.b_x
    fs = kh >= 0
    # mass matrix of the points: [[m I, -skew(S), Sum D], [., J, Sum r x D], [., ., Sum D^T D]]
    for k in range(3):
        Mb[k, k] += m
    Mb[0, 4] += Sv[2]
    Mb[0, 5] -= Sv[1]
    Mb[1, 3] -= Sv[2]
    Mb[1, 5] += Sv[0]
    Mb[2, 3] += Sv[1]
    Mb[2, 4] -= Sv[0]
    for k in range(3):
        for l in range(3):
            Mb[3 + k, 3 + l] += J[k, l]
    for j in range(n):
        for k in range(3):
            Mb[k, 6 + j] += iv_Sb[kv, k, j]
        if fs:
            Mb[0, 6 + j] -= gv[j]
        Mb[3, 6 + j] += B[1, 2, j] - B[2, 1, j]
        Mb[4, 6 + j] += B[2, 0, j] - B[0, 2, j]
        Mb[5, 6 + j] += B[0, 1, j] - B[1, 0, j]
        for i in range(n):
            acc = iv_Me[kv, i, j]
            if fs:
                acc += V[i, j] - W2[i, 0, j] - W2[j, 0, i]
            Mb[6 + i, 6 + j] += acc
        for k in range(6):
            Mb[6 + j, k] = Mb[k, 6 + j]


@kernel(inline=True)
def _moment_velocity_terms(S, W, kh, n, etad, w, ed, Mb, hb):
    """Add the points' velocity-product force to hb (ed: sum m etad^T H etad), from their mass
    matrix Mb and the moments."""
    HS, HP = S.iv_HS, S.iv_HP
    Cx, B, N, J, W1, W2, W3, Sv, Tv = W.b_Cx, W.b_B, W.b_N, W.b_J, W.b_W1, W.b_W2, W.b_W3, W.b_x, W.b_y
    fs = kh >= 0
    # velocity-product force sum m G^T a, a = w x (w x r) + 2 w x (D etad) - e_x etad^T H etad
    for k in range(3):
        acc = 0.0
        for j in range(n):
            acc += Mb[k, 6 + j] * etad[j]
        Tv[k] = acc
        for l in range(3):
            acc = 0.0
            for j in range(n):
                acc += B[k, l, j] * etad[j]
            N[k, l] = acc
    trN = N[0, 0] + N[1, 1] + N[2, 2]
    for k in range(3):
        k1 = (k + 1) % 3
        k2 = (k + 2) % 3
        # w x (w x S) + 2 w x Tv
        ws1 = w[k2] * Sv[k] - w[k] * Sv[k2]
        ws2 = w[k] * Sv[k1] - w[k1] * Sv[k]
        hb[k] += w[k1] * ws2 - w[k2] * ws1 + 2.0 * (w[k1] * Tv[k2] - w[k2] * Tv[k1])
        # w x (J w) + 2 (w tr N - N^T w)
        jw1 = J[k1, 0] * w[0] + J[k1, 1] * w[1] + J[k1, 2] * w[2]
        jw2 = J[k2, 0] * w[0] + J[k2, 1] * w[1] + J[k2, 2] * w[2]
        hb[3 + k] += w[k1] * jw2 - w[k2] * jw1 + 2.0 * (w[k] * trN - N[0, k] * w[0] - N[1, k] * w[1] - N[2, k] * w[2])
    hb[0] -= ed
    ww = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    for j in range(n):
        acc = -ww * (B[0, 0, j] + B[1, 1, j] + B[2, 2, j])
        for k in range(3):
            for l in range(3):
                acc += w[k] * w[l] * B[k, l, j]
        # 2 w . sum m (D etad) x D_j
        acc += 2.0 * (w[0] * Cx[0, j] + w[1] * Cx[1, j] + w[2] * Cx[2, j])
        hb[6 + j] += acc
    if fs:
        for k in (1, 2):
            dr = 0.0    # sum m (etad^T H etad) rho_k
            for a in range(n):
                for bb in range(n):
                    dr += (HS[kh, a, bb, k] + W3[a, bb, k]) * etad[a] * etad[bb]
            if k == 1:
                hb[5] += dr
            else:
                hb[4] -= dr
        for j in range(n):
            u21 = 0.0   # sum m h_j (P etad)_k, k = 1, 2
            u22 = 0.0
            u31 = 0.0   # sum m (eta^T H etad) P_kj, k = 1, 2
            u32 = 0.0
            acc = 0.0
            for c in range(n):
                u21 += W2[j, 1, c] * etad[c]
                u22 += W2[j, 2, c] * etad[c]
                u31 += etad[c] * W2[c, 1, j]
                u32 += etad[c] * W2[c, 2, j]
                for d in range(n):
                    acc += (W1[j, c, d] - HP[kh, c, d, 0, j]) * etad[c] * etad[d]
            hb[6 + j] += acc - 2.0 * (w[1] * (u22 - u32) + w[2] * (u31 - u21))
