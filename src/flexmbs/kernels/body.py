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

from numba import njit

from .kinematics import foreshortening
from .linalg import fill2, quad
from .rotations import JIT, cross, cross_add


@njit(**JIT)
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
    for q in range(S.pt_n[b]):
        mq = S.pt_m[b, q]
        m += mq
        P = S.pt_P[b, q]
        H = S.pt_H[b, q]
        for k in range(3):
            acc = S.pt_s[b, q, k]
            for j in range(n):
                acc += P[k, j] * eta[j]
            out[k] += mq * acc
        out[0] -= 0.5 * mq * quad(eta, H[:n, :n], eta)
    return m


@njit(**JIT)
def body_terms(S, W, b, eta, etad, vb, wb, gb, Mb, hb, Fb):
    """Fill Mb (6+n)^2, hb (velocity-product force) and Fb (gravity force), body b, body axes.

    vb, wb: body-frame velocities; gb: gravity vector in body axes [m/s^2].
    """
    n = S.nm[b]
    nb6 = 6 + n
    fill2(Mb, 0.0)
    for i in range(nb6):
        hb[i] = 0.0
        Fb[i] = 0.0
    r = W.b_r
    a = W.b_a
    t = W.b_t
    D = W.b_D
    h = W.b_h
    hd = W.b_hd
    for q in range(S.pt_n[b]):
        mq = S.pt_m[b, q]
        P = S.pt_P[b, q]
        H = S.pt_H[b, q]
        ehe, dhd = foreshortening(H, eta, etad, h, hd)
        for k in range(3):
            acc = S.pt_s[b, q, k]
            for j in range(n):
                D[k, j] = P[k, j]
                acc += P[k, j] * eta[j]
            r[k] = acc
        r[0] -= 0.5 * ehe
        for j in range(n):
            D[0, j] -= h[j]
        # relative velocity D etad, then a = w x (w x r) + 2 w x (D etad) + Ddot etad
        for k in range(3):
            acc = 0.0
            for j in range(n):
                acc += D[k, j] * etad[j]
            t[k] = acc
        cross(wb, t, a)
        for k in range(3):
            a[k] *= 2.0
        a[0] -= dhd
        cross(wb, r, t)
        cross_add(wb, t, a, 1.0)
        _add_point(Mb, hb, Fb, mq, r, D, a, gb, n)
    for k in range(3):
        for l in range(3):
            Mb[3 + l, k] = Mb[k, 3 + l]
    # the frame-acceleration term w x v acts on the points through G_q: add M_points[:, v] (w x v)
    cross(wb, vb, t)
    for i in range(nb6):
        hb[i] += Mb[i, 0] * t[0] + Mb[i, 1] * t[1] + Mb[i, 2] * t[2]
    Mc = S.Mc[b]
    for i in range(nb6):
        for j in range(nb6):
            Mb[i, j] += Mc[i, j]
    # constant part: momenta, gyroscopic terms and gravity of its mass and first moment
    pv = W.b_pv
    pw = W.b_pw
    for k in range(3):
        a1 = 0.0
        a2 = 0.0
        for j in range(3):
            a1 += Mc[k, j] * vb[j] + Mc[k, 3 + j] * wb[j]
            a2 += Mc[3 + k, j] * vb[j] + Mc[3 + k, 3 + j] * wb[j]
        for j in range(n):
            a1 += Mc[k, 6 + j] * etad[j]
            a2 += Mc[3 + k, 6 + j] * etad[j]
        pv[k] = a1
        pw[k] = a2
    cross_add(wb, pv, hb[0:3], 1.0)
    cross_add(wb, pw, hb[3:6], 1.0)
    cross_add(vb, pv, hb[3:6], 1.0)
    Sc = W.b_S
    Sc[0] = Mc[1, 5]
    Sc[1] = Mc[2, 3]
    Sc[2] = Mc[0, 4]
    for k in range(3):
        Fb[k] += Mc[0, 0] * gb[k]
    cross_add(Sc, gb, Fb[3:6], 1.0)
    for j in range(n):
        Fb[6 + j] += Mc[0, 6 + j] * gb[0] + Mc[1, 6 + j] * gb[1] + Mc[2, 6 + j] * gb[2]


@njit(**JIT)
def _add_point(Mb, hb, Fb, m, r, D, a, g, n):
    """Add m G^T G to Mb, m G^T a to hb and m G^T g to Fb for G = [I, -skew(r), D]."""
    x, y, z = r[0], r[1], r[2]
    # vv and v-w blocks: m I and -m skew(r)
    for k in range(3):
        Mb[k, k] += m
    Mb[0, 4] += m * z
    Mb[0, 5] -= m * y
    Mb[1, 3] -= m * z
    Mb[1, 5] += m * x
    Mb[2, 3] += m * y
    Mb[2, 4] -= m * x
    # w-w block: m (|r|^2 I - r r^T)
    rr = x * x + y * y + z * z
    for k in range(3):
        for l in range(3):
            Mb[3 + k, 3 + l] -= m * r[k] * r[l]
        Mb[3 + k, 3 + k] += m * rr
    for j in range(n):
        d0, d1, d2 = D[0, j], D[1, j], D[2, j]
        Mb[0, 6 + j] += m * d0
        Mb[1, 6 + j] += m * d1
        Mb[2, 6 + j] += m * d2
        Mb[3, 6 + j] += m * (y * d2 - z * d1)
        Mb[4, 6 + j] += m * (z * d0 - x * d2)
        Mb[5, 6 + j] += m * (x * d1 - y * d0)
        for l in range(j + 1):
            v = m * (d0 * D[0, l] + d1 * D[1, l] + d2 * D[2, l])
            Mb[6 + j, 6 + l] += v
            if l != j:
                Mb[6 + l, 6 + j] += v
        hb[6 + j] += m * (d0 * a[0] + d1 * a[1] + d2 * a[2])
        Fb[6 + j] += m * (d0 * g[0] + d1 * g[1] + d2 * g[2])
    for j in range(n):
        for k in range(6):
            Mb[6 + j, k] = Mb[k, 6 + j]
    for k in range(3):
        hb[k] += m * a[k]
        Fb[k] += m * g[k]
    hb[3] += m * (y * a[2] - z * a[1])
    hb[4] += m * (z * a[0] - x * a[2])
    hb[5] += m * (x * a[1] - y * a[0])
    Fb[3] += m * (y * g[2] - z * g[1])
    Fb[4] += m * (z * g[0] - x * g[2])
    Fb[5] += m * (x * g[1] - y * g[0])
