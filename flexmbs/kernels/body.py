"""Mass matrix, velocity-product vector and gravity force of one body (numba).

Every body, rigid or flexible, is one floating frame with body-frame velocity
w = [v; w; etad] (v: origin velocity, w: angular velocity, both in body axes; etad: modal rates).
Kinetic energy T = 1/2 w^T M(eta) w with, for mass distribution rho and position
r = u0 + Phi eta - 1/2 e_x eta^T H(x) eta (axial foreshortening of beams, the source of
geometric stiffening):

    M = [[m I,      -skew(S),  dS/deta],
         [skew(S),   J(eta),   M_we   ],
         [dS/deta^T, M_we^T,   Me     ]]

    S = S0 + Sb eta - 1/2 e_x eta^T Ga eta           first moment  [kg m]
    J = J0 + tr(dA) I - dA,  dA_kl = ∫rho (r_k r_l - u0_k u0_l), with -eta^T Gb eta in dA_xx
    M_we[a] = Ir[a] + eps_akl P_kl,  P_kl = ∫rho r_k Phi_l = Sbkl[k,l] + C[k,l]^T eta

A rigid body is the case n = 0. The equations are the Kirchhoff-Poincare (Boltzmann-Hamel)
equations of this Lagrangian, M wdot + h = F with
h = Mdot w + [w x p_v; w x p_w + v x p_v; -dT/deta], p = M w; energy is conserved exactly for
any M(eta) of this form, so the geometric stiffening terms cost no energy consistency.
"""

from numba import njit

from .linalg import fill2
from .rotations import JIT, cross, cross_add


@njit(**JIT)
def _eps(P, a, j):
    """sum_kl eps_akl P[k, l, j]."""
    if a == 0:
        return P[1, 2, j] - P[2, 1, j]
    if a == 1:
        return P[2, 0, j] - P[0, 2, j]
    return P[0, 1, j] - P[1, 0, j]


@njit(**JIT)
def body_terms(S, W, b, eta, etad, vb, wb, gb, Mb, hb, Fb):
    """Fill Mb (6+n)^2, hb and the gravity force Fb (6+n) of body b in body axes.

    vb, wb: body-frame velocities; gb: gravity vector in body axes [m/s^2].
    """
    n = S.nm[b]
    m = S.mass[b]
    t1 = W.m_t1
    t2 = W.m_t2
    P = W.b_P
    Q = W.b_Q
    Sb = S.Sb[b]
    Sbkl = S.Sbkl[b]
    C = S.C[b]
    Ga = S.Ga[b]
    Gb = S.Gb[b]
    Gaeta = W.b_Gaeta
    Gbeta = W.b_Gbeta
    Gaetad = W.b_Gaetad
    # P[k,l] = Sbkl[k,l] + C[l,k] eta (= ∫rho r_k Phi_l), Q[k,l] = C[k,l] etad
    for k in range(3):
        for l in range(3):
            for j in range(n):
                sp = Sbkl[k, l, j]
                sq = 0.0
                for i in range(n):
                    sp += C[l, k, j, i] * eta[i]
                    sq += C[k, l, j, i] * etad[i]
                P[k, l, j] = sp
                Q[k, l, j] = sq
    etaGaeta = 0.0
    etaGbeta = 0.0
    etadGbeta = 0.0
    etadGaetad = 0.0
    for j in range(n):
        ga = 0.0
        gb_ = 0.0
        gad = 0.0
        for i in range(n):
            ga += Ga[j, i] * eta[i]
            gb_ += Gb[j, i] * eta[i]
            gad += Ga[j, i] * etad[i]
        Gaeta[j] = ga
        Gbeta[j] = gb_
        Gaetad[j] = gad
        etaGaeta += eta[j] * ga
        etaGbeta += eta[j] * gb_
        etadGbeta += etad[j] * gb_
        etadGaetad += etad[j] * gad

    fill2(Mb, 0.0)
    # first moment S and its gradient Mve = dS/deta
    Sv = W.b_S
    for k in range(3):
        acc = S.S0[b, k]
        for j in range(n):
            Mb[k, 6 + j] = Sb[k, j]
            acc += Sb[k, j] * eta[j]
        Sv[k] = acc
    for j in range(n):
        Mb[0, 6 + j] -= Gaeta[j]
    Sv[0] -= 0.5 * etaGaeta
    # dA = ∫rho (r r^T - u0 u0^T); J = J0 + tr(dA) I - dA
    dA = W.b_dA
    for k in range(3):
        for l in range(3):
            acc = 0.0
            for j in range(n):
                acc += (P[k, l, j] + Sbkl[l, k, j]) * eta[j]
            dA[k, l] = acc
    dA[0, 0] -= etaGbeta
    tr = dA[0, 0] + dA[1, 1] + dA[2, 2]
    for k in range(3):
        for l in range(3):
            Mb[3 + k, 3 + l] = S.J0[b, k, l] - dA[k, l]
        Mb[3 + k, 3 + k] += tr
        Mb[k, k] = m
        for j in range(n):
            Mb[3 + k, 6 + j] = S.Ir[b, k, j] + _eps(P, k, j)
    Mb[0, 4] = Sv[2]
    Mb[0, 5] = -Sv[1]
    Mb[1, 3] = -Sv[2]
    Mb[1, 5] = Sv[0]
    Mb[2, 3] = Sv[1]
    Mb[2, 4] = -Sv[0]
    for k in range(3):
        for l in range(3):
            Mb[3 + l, k] = Mb[k, 3 + l]
    for k in range(6):
        for j in range(n):
            Mb[6 + j, k] = Mb[k, 6 + j]
    for i in range(n):
        for j in range(n):
            Mb[6 + i, 6 + j] = S.Me[b, i, j]

    # momenta p_v = m v + w x S + Mve etad, p_w = S x v + J w + Mwe etad
    pv = W.b_pv
    pw = W.b_pw
    for k in range(3):
        a1 = m * vb[k]
        a2 = 0.0
        for l in range(3):
            a2 += Mb[3 + k, 3 + l] * wb[l]
        for j in range(n):
            a1 += Mb[k, 6 + j] * etad[j]
            a2 += Mb[3 + k, 6 + j] * etad[j]
        pv[k] = a1
        pw[k] = a2
    cross_add(wb, Sv, pv, 1.0)
    cross_add(Sv, vb, pw, 1.0)
    # gyroscopic part and gravity F = -dV/dpi with V = -g.(m r + A S(eta))
    cross(wb, pv, t1)
    cross(wb, pw, t2)
    cross_add(vb, pv, t2, 1.0)
    cross(Sv, gb, W.m_sw)
    for k in range(3):
        hb[k] = t1[k]
        hb[3 + k] = t2[k]
        Fb[k] = m * gb[k]
        Fb[3 + k] = W.m_sw[k]
    if n == 0:
        return
    Sd = W.b_Sd
    for k in range(3):
        acc = 0.0
        for j in range(n):
            acc += Mb[k, 6 + j] * etad[j]
        Sd[k] = acc
    for j in range(n):
        Fb[6 + j] = Mb[0, 6 + j] * gb[0] + Mb[1, 6 + j] * gb[1] + Mb[2, 6 + j] * gb[2]
    # Mdot w, rows v and w
    cross_add(wb, Sd, hb, 1.0)
    hb[0] -= etadGaetad
    dAd = W.b_dA
    for k in range(3):
        for l in range(3):
            acc = 0.0
            for j in range(n):
                acc += (P[k, l, j] + P[l, k, j]) * etad[j]
            dAd[k, l] = acc
    dAd[0, 0] -= 2.0 * etadGbeta
    trd = dAd[0, 0] + dAd[1, 1] + dAd[2, 2]
    cross(Sd, vb, t1)
    w2 = wb[0] ** 2 + wb[1] ** 2 + wb[2] ** 2
    for a in range(3):
        # Mdot_we[a] = eps_akl Pdot_kl with Pdot_kl = Q[l, k], i.e. -eps_akl Q_kl
        s = trd * wb[a] + t1[a]
        for l in range(3):
            s -= dAd[a, l] * wb[l]
        for j in range(n):
            s -= _eps(Q, a, j) * etad[j]
        hb[3 + a] += s
    # row eta: Mdot_we^T w and the Coriolis part of -dT/deta (equal), centrifugal part of
    # -dT/deta, and -(dS/deta)^T (v x w); the v_x Ga etad terms of Mdot w and dT/deta cancel
    cross(vb, wb, t2)
    for j in range(n):
        s = (w2 - wb[0] ** 2) * Gbeta[j]
        for a in range(3):
            s -= 2.0 * wb[a] * _eps(Q, a, j)
            s -= w2 * P[a, a, j]
            s -= Mb[a, 6 + j] * t2[a]
            for l in range(3):
                s += wb[a] * wb[l] * P[a, l, j]
        hb[6 + j] = s
