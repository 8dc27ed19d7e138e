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

import numpy as np
from numba import njit

from .rotations import JIT, cross


@njit(**JIT)
def _eps_contract(P, a):
    """sum_kl eps_akl P[k, l] for a 3x3xn array P."""
    if a == 0:
        return P[1, 2] - P[2, 1]
    if a == 1:
        return P[2, 0] - P[0, 2]
    return P[0, 1] - P[1, 0]


@njit(**JIT)
def body_terms(S, W, b, eta, etad, vb, wb, gb, Mb, hb, Fb):
    """Fill Mb (6+n)^2, hb and the gravity force Fb (6+n) of body b in body axes.

    vb, wb: body-frame velocities; gb: gravity vector in body axes [m/s^2].
    """
    n = S.nm[b]
    m = S.mass[b]
    tmp = W.m_t1
    tmp2 = W.m_t2
    Sb = S.Sb[b, :, :n]
    Sbkl = S.Sbkl[b, :, :, :n]
    C = S.C[b, :, :, :n, :n]
    Ga = S.Ga[b, :n, :n]
    P = W.b_P[:, :, :n]
    Q = W.b_Q[:, :, :n]
    for k in range(3):
        for l in range(3):
            P[k, l] = Sbkl[k, l] + C[l, k] @ eta
            Q[k, l] = C[k, l] @ etad
    Gaeta = Ga @ eta
    Gaetad = Ga @ etad
    Gbeta = S.Gb[b, :n, :n] @ eta

    Mb[:, :] = 0.0
    Mve = Mb[0:3, 6:6 + n]
    Mwe = Mb[3:6, 6:6 + n]
    Mve[:, :] = Sb
    Mve[0, :] -= Gaeta
    Sv = W.b_S
    Sv[:] = S.S0[b] + Sb @ eta
    Sv[0] -= 0.5 * (eta @ Gaeta)
    dA = W.b_dA
    for k in range(3):
        for l in range(3):
            dA[k, l] = P[k, l] @ eta + Sbkl[l, k] @ eta
    dA[0, 0] -= eta @ Gbeta
    J = W.b_J
    J[:, :] = S.J0[b] - dA
    tr = dA[0, 0] + dA[1, 1] + dA[2, 2]
    for a in range(3):
        J[a, a] += tr
        Mwe[a, :] = S.Ir[b, a, :n] + _eps_contract(P, a)
        Mb[a, a] = m
    Mb[0, 4] = Sv[2]
    Mb[0, 5] = -Sv[1]
    Mb[1, 3] = -Sv[2]
    Mb[1, 5] = Sv[0]
    Mb[2, 3] = Sv[1]
    Mb[2, 4] = -Sv[0]
    Mb[3:6, 0:3] = Mb[0:3, 3:6].T
    Mb[3:6, 3:6] = J
    Mb[6:, 0:3] = Mve.T
    Mb[6:, 3:6] = Mwe.T
    Mb[6:, 6:] = S.Me[b, :n, :n]

    # momenta p_v = m v + w x S + Mve etad, p_w = S x v + J w + Mwe etad
    pv = W.b_pv
    pw = W.b_pw
    cross(wb, Sv, tmp)
    pv[:] = m * vb + tmp + Mve @ etad
    cross(Sv, vb, tmp)
    pw[:] = tmp + J @ wb + Mwe @ etad
    # gyroscopic part
    cross(wb, pv, tmp)
    hb[0:3] = tmp
    cross(wb, pw, tmp)
    cross(vb, pv, tmp2)
    hb[3:6] = tmp + tmp2
    # gravity: F = -dV/dpi with V = -g.(m r + A S(eta))
    Fb[0:3] = m * gb
    cross(Sv, gb, tmp)
    Fb[3:6] = tmp
    if n == 0:
        return
    Fb[6:6 + n] = Mve.T @ gb
    # Mdot w
    Sd = Mve @ etad
    cross(wb, Sd, tmp)
    hb[0:3] += tmp
    hb[0] -= etad @ Gaetad
    dAd = W.b_dA
    for k in range(3):
        for l in range(3):
            dAd[k, l] = P[k, l] @ etad + P[l, k] @ etad
    dAd[0, 0] -= 2.0 * (etad @ Gbeta)
    trd = dAd[0, 0] + dAd[1, 1] + dAd[2, 2]
    cross(Sd, vb, tmp)
    hb[3:6] += tmp
    he = hb[6:6 + n]
    he[:] = 0.0
    w2 = wb[0] ** 2 + wb[1] ** 2 + wb[2] ** 2
    for a in range(3):
        # Mdot_we[a] = eps_akl Pdot_kl with Pdot_kl = Q[l, k] = -eps_akl Q_kl
        Pd = -_eps_contract(Q, a)
        s = trd * wb[a] + Pd @ etad
        for l in range(3):
            s -= dAd[a, l] * wb[l]
        hb[3 + a] += s
        # Mdot_we^T w and the Coriolis part of -dT/deta are equal: -w_a eps_akl C_kl etad each
        he += 2.0 * wb[a] * Pd
        # centrifugal part of -dT/deta
        he -= w2 * P[a, a]
        for l in range(3):
            he += wb[a] * wb[l] * P[a, l]
    # -dT/deta, remaining terms (the v_x Ga etad terms of Mdot w and dT/deta cancel)
    cross(vb, wb, tmp)
    he -= Mve.T @ tmp
    he += (w2 - wb[0] ** 2) * Gbeta
