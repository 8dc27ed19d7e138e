"""Natural-coordinate kernels (numba): constraint rows, the topology-ordered block factorisation
of the equations of motion, and the projections onto the constraints.

Equations:  M a + G^T lam = Q,  G a = gam,  with M block diagonal and constant.
Each body's six rigidity rows R_b are eliminated with the body (always independent):
    P_b = M_b^-1 - M_b^-1 R_b^T (R_b M_b^-1 R_b^T)^-1 R_b M_b^-1
    a0_b = P_b Q_b + M_b^-1 R_b^T (R_b M_b^-1 R_b^T)^-1 gam_R,b   (the body's motion without joints)
which leaves the joint multipliers:  S lam = J a0 - gam_J,  S = J P J^T,
block-sparse with one block per joint and a nonzero block wherever two joints share a body.
S = L L^T by block Cholesky in the order of arrays.py (leaves first; a loop adds fill along
its bodies), then a_b = a0_b - P_b sum_r J_r,b^T lam_r: linear in the number of bodies for
chains and trees. Redundant rows (loops) are found while factoring the diagonal blocks: a row
whose pivot has fallen below DROP times its diagonal depends on the rows before it; its
multiplier is set to zero, which is the same as removing the row (Kraus et al. 2001, Sec. 8).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from ..kernels.linalg import chol_factor, chol_solve, mm
from ..kernels.settings import JIT
from .arrays import LIN, MAXROWS

DROP = 1e-7

NaturalWork = namedtuple("NaturalWork", [
    "phi", "phit", "gam", "Ja", "Jb", "MiRt", "Lw", "P", "L", "drop", "diag0", "b", "lam", "f", "a0", "t12",
    "t6", "th", "rhs", "v3", "Jk", "PJl", "A", "dx", "zero",
])


def make_work(N, ndrv: int):
    nr, nb, nblk = N.kind.size, N.nb, N.bcol.size
    z = np.zeros
    return NaturalWork(phi=z(nr), phit=z(nr), gam=z(nr), Ja=z((nr, 12)), Jb=z((nr, 12)), MiRt=z((nb, 12, 6)),
                       Lw=z((nb, 6, 6)), P=z((nb, 12, 12)), L=z((max(nblk, 1), MAXROWS, MAXROWS)),
                       drop=np.zeros(nr, np.bool_), diag0=z(nr), b=z(nr), lam=z(nr), f=z((nb, 12)),
                       a0=z((nb, 12)), t12=z((MAXROWS, 12)), t6=z(6), th=z((max(ndrv, 1), 3)), rhs=z(12 * nb),
                       v3=z((9, 3)), Jk=z((MAXROWS, 12)), PJl=z((12, MAXROWS)), A=z((MAXROWS, MAXROWS)),
                       dx=z(12 * nb), zero=z(12 * nb))


@njit(**JIT)
def _side(x, body, point, s, out):
    """out = point r0 + X s of `body` from coordinates x (a ground side: s itself)."""
    if body < 0:
        for i in range(3):
            out[i] = s[i]
        return
    k = 12 * body
    for i in range(3):
        out[i] = point * x[k + i] + s[0] * x[k + 3 + i] + s[1] * x[k + 6 + i] + s[2] * x[k + 9 + i]


@njit(**JIT)
def evaluate(N, W, x, xd):
    """phi, phi_t, gam (G a = gam: minus the velocity products and time terms) and the two
    sides' Jacobians Ja, Jb (12 each) of every row at (x, xd); drive angles in W.th."""
    wa, wb, va, vb, ta, tb, d, dp, z = W.v3[0], W.v3[1], W.v3[2], W.v3[3], W.v3[4], W.v3[5], W.v3[6], \
        W.v3[7], W.v3[8]
    for i in range(3):
        z[i] = 0.0
    for r in range(N.kind.size):
        a, b = N.ra[r], N.rb[r]
        for i in range(12):
            W.Ja[r, i] = 0.0
            W.Jb[r, i] = 0.0
        if N.kind[r] == LIN:
            n = N.n[r]
            _side(x, a, N.pa[r], N.sa[r], wa)
            _side(x, b, N.pb[r], N.sb[r], wb)
            W.phi[r] = n[0] * (wa[0] - wb[0]) + n[1] * (wa[1] - wb[1]) + n[2] * (wa[2] - wb[2]) + N.c0[r]
            W.phit[r] = 0.0
            W.gam[r] = 0.0
            for i in range(3):
                if a >= 0:
                    W.Ja[r, i] = N.pa[r] * n[i]
                    for k in range(3):
                        W.Ja[r, 3 + 3 * k + i] = N.sa[r, k] * n[i]
                if b >= 0:
                    W.Jb[r, i] = -N.pb[r] * n[i]
                    for k in range(3):
                        W.Jb[r, 3 + 3 * k + i] = -N.sb[r, k] * n[i]
            continue
        th, thd, thdd = 0.0, 0.0, 0.0
        if N.drv[r] >= 0:
            th, thd, thdd = W.th[N.drv[r], 0], W.th[N.drv[r], 1], W.th[N.drv[r], 2]
        c, s = np.cos(th), np.sin(th)
        for i in range(3):
            d[i] = c * N.sa[r, i] + s * N.sa1[r, i]
            dp[i] = -s * N.sa[r, i] + c * N.sa1[r, i]
        # va = X_a d, wa = X_a' d, ta = X_a d', tb = X_a' d', vb = X_b d_b, wb = X_b' d_b (ground: X = I, X' = 0)
        _side(x, a, 0.0, d, va)
        _side(xd, a, 0.0, d if a >= 0 else z, wa)
        _side(x, a, 0.0, dp, ta)
        _side(xd, a, 0.0, dp if a >= 0 else z, tb)
        _side(x, b, 0.0, N.sb[r], vb)
        _side(xd, b, 0.0, N.sb[r] if b >= 0 else z, wb)
        phi = N.c0[r]
        phit = 0.0
        g = 0.0
        for i in range(3):
            phi += va[i] * vb[i]
            phit += thd * ta[i] * vb[i]
            vad = wa[i] + thd * ta[i]
            # X_a d'' with d'' = thdd d' - thd^2 d
            g += 2.0 * vad * wb[i] + (2.0 * thd * tb[i] + thdd * ta[i] - thd * thd * va[i]) * vb[i]
        W.phi[r] = phi
        W.phit[r] = phit
        W.gam[r] = -g
        for k in range(3):
            for i in range(3):
                if a >= 0:
                    W.Ja[r, 3 + 3 * k + i] = d[k] * vb[i]
                if b >= 0:
                    W.Jb[r, 3 + 3 * k + i] = N.sb[r, k] * va[i]


@njit(**JIT)
def _jrow(N, W, r, body, out):
    """out (12) = the Jacobian of row r on `body`'s coordinates."""
    for i in range(12):
        out[i] = 0.0
    if N.ra[r] == body:
        for i in range(12):
            out[i] += W.Ja[r, i]
    if N.rb[r] == body:
        for i in range(12):
            out[i] += W.Jb[r, i]


@njit(**JIT)
def _chol_monitor(A, m, out_L, drop, diag0, r0):
    """Cholesky of the m x m block A into out_L; rows whose pivot falls below DROP times
    their diagonal (diag0[r0 + i]) are dropped: zero column, unit diagonal."""
    for j in range(m):
        dj = A[j, j]
        for k in range(j):
            dj -= out_L[j, k] * out_L[j, k]
        if dj <= DROP * diag0[r0 + j]:
            drop[r0 + j] = True
            for i in range(m):
                out_L[i, j] = 0.0
            out_L[j, j] = 1.0
            continue
        drop[r0 + j] = False
        ljj = np.sqrt(dj)
        out_L[j, j] = ljj
        for i in range(j + 1, m):
            s = A[i, j]
            for k in range(j):
                s -= out_L[i, k] * out_L[j, k]
            out_L[i, j] = s / ljj
        for i in range(j):
            out_L[i, j] = 0.0


@njit(**JIT)
def factor(N, W):
    """Eliminate the bodies and factor S = J P J^T = L L^T block by block. Returns the number
    of rows dropped as redundant."""
    nb = N.nb
    ng = N.g0.size
    t6 = W.t6
    Rr = W.t12
    # bodies: P_b and the Cholesky factor of R M^-1 R^T
    for bi in range(nb):
        Mi = N.Minv[bi]
        for k in range(6):
            _jrow(N, W, 6 * bi + k, bi, Rr[k])
        MiRt = W.MiRt[bi]
        mm(Mi, Rr.T, MiRt)
        Lw = W.Lw[bi]
        mm(Rr, MiRt, Lw)
        chol_factor(Lw, Lw)               # in place; R M^-1 R^T is positive definite for a non-flat body
        P = W.P[bi]
        for i in range(12):
            for k in range(6):
                t6[k] = MiRt[i, k]
            chol_solve(Lw, t6)
            for j in range(12):
                s = Mi[i, j]
                for k in range(6):
                    s -= t6[k] * MiRt[j, k]
                P[i, j] = s
    # S blocks: sum over bodies of J_k,b P_b J_l,b^T
    L = W.L
    for blk in range(N.bcol.size):
        for i in range(MAXROWS):
            for j in range(MAXROWS):
                L[blk, i, j] = 0.0
    Jk, PJl = W.Jk, W.PJl
    for bi in range(nb):
        P = W.P[bi]
        for e in range(N.cp[bi], N.cp[bi + 1]):
            k, l, blk = N.ck[e], N.cl[e], N.cblk[e]
            mk, ml = N.g1[k] - N.g0[k], N.g1[l] - N.g0[l]
            for i in range(mk):
                _jrow(N, W, N.g0[k] + i, bi, Jk[i])
            for j in range(ml):
                _jrow(N, W, N.g0[l] + j, bi, Rr[j])
            mm(P, Rr[:ml].T, PJl[:, :ml])
            for i in range(mk):
                for j in range(ml):
                    s = 0.0
                    for p in range(12):
                        s += Jk[i, p] * PJl[p, j]
                    L[blk, i, j] += s
    # block Cholesky by block rows (left-looking), rows monitored for redundancy
    A = W.A
    for k in range(ng):
        mk = N.g1[k] - N.g0[k]
        d = N.bp[k + 1] - 1                      # the diagonal block closes its row
        for i in range(mk):
            W.diag0[N.g0[k] + i] = L[d, i, i]
        for e in range(N.bp[k], N.bp[k + 1]):
            l = N.bcol[e]
            ml = N.g1[l] - N.g0[l]
            for i in range(mk):
                for j in range(ml):
                    A[i, j] = L[e, i, j]
            # subtract sum over j < l of L_kj L_lj^T (merge of the two sorted block rows)
            p, q = N.bp[k], N.bp[l]
            while p < e and q < N.bp[l + 1] - 1:
                cp_, cq = N.bcol[p], N.bcol[q]
                if cp_ == cq:
                    mj = N.g1[cp_] - N.g0[cp_]
                    for i in range(mk):
                        for j in range(ml):
                            s = 0.0
                            for t in range(mj):
                                s += L[p, i, t] * L[q, j, t]
                            A[i, j] -= s
                    p += 1
                    q += 1
                elif cp_ < cq:
                    p += 1
                else:
                    q += 1
            if l < k:
                # L_kl = A L_ll^-T, zero in the columns of dropped rows
                dl = N.bp[l + 1] - 1
                for i in range(mk):
                    for j in range(ml):
                        if W.drop[N.g0[l] + j]:
                            L[e, i, j] = 0.0
                            continue
                        s = A[i, j]
                        for t in range(j):
                            s -= L[e, i, t] * L[dl, j, t]
                        L[e, i, j] = s / L[dl, j, j]
            else:
                _chol_monitor(A, mk, L[e], W.drop, W.diag0, N.g0[k])
    nd = 0
    for k in range(ng):
        for r in range(N.g0[k], N.g1[k]):
            nd += W.drop[r]
    return nd


@njit(**JIT)
def solve(N, W, Q, gam, out):
    """out = a with M a + G^T lam = Q, G a = gam (all rows; dropped ones left out), using the
    factorisation of `factor`. Q, out: (12 nb); gam: (rows)."""
    nb, ng = N.nb, N.g0.size
    t6 = W.t6
    for bi in range(nb):
        MiRt, P = W.MiRt[bi], W.P[bi]
        # a0 = P Q + M^-1 R^T W^-1 gam_R
        for k in range(6):
            t6[k] = gam[6 * bi + k]
        chol_solve(W.Lw[bi], t6)
        for i in range(12):
            s = 0.0
            for j in range(12):
                s += P[i, j] * Q[12 * bi + j]
            for k in range(6):
                s += MiRt[i, k] * t6[k]
            W.a0[bi, i] = s
    # b = J a0 - gam_J
    for r in range(6 * nb, N.kind.size):
        s = -gam[r]
        a, b = N.ra[r], N.rb[r]
        for i in range(12):
            if a >= 0:
                s += W.Ja[r, i] * W.a0[a, i]
            if b >= 0:
                s += W.Jb[r, i] * W.a0[b, i]
        W.b[r] = s
    # forward: L y = b, by block rows
    y = W.b
    for k in range(ng):
        g0, mk = N.g0[k], N.g1[k] - N.g0[k]
        for e in range(N.bp[k], N.bp[k + 1] - 1):
            l = N.bcol[e]
            for i in range(mk):
                s = 0.0
                for j in range(N.g1[l] - N.g0[l]):
                    s += W.L[e, i, j] * y[N.g0[l] + j]
                y[g0 + i] -= s
        d = N.bp[k + 1] - 1
        for i in range(mk):
            s = y[g0 + i]
            for t in range(i):
                s -= W.L[d, i, t] * y[g0 + t]
            y[g0 + i] = 0.0 if W.drop[g0 + i] else s / W.L[d, i, i]
    # backward: L^T lam = y, by block rows from the last
    for k in range(ng - 1, -1, -1):
        g0, mk = N.g0[k], N.g1[k] - N.g0[k]
        d = N.bp[k + 1] - 1
        for i in range(mk - 1, -1, -1):
            s = y[g0 + i]
            for t in range(i + 1, mk):
                s -= W.L[d, t, i] * y[g0 + t]
            y[g0 + i] = 0.0 if W.drop[g0 + i] else s / W.L[d, i, i]
        for e in range(N.bp[k], N.bp[k + 1] - 1):
            l = N.bcol[e]
            for j in range(N.g1[l] - N.g0[l]):
                s = 0.0
                for i in range(mk):
                    s += W.L[e, i, j] * y[g0 + i]
                y[N.g0[l] + j] -= s
    # a_b = a0_b - P_b sum_r J_r,b^T lam_r
    for bi in range(nb):
        for i in range(12):
            W.f[bi, i] = 0.0
    for r in range(6 * nb, N.kind.size):
        lam = y[r]
        W.lam[r] = lam
        a, b = N.ra[r], N.rb[r]
        for i in range(12):
            if a >= 0:
                W.f[a, i] += W.Ja[r, i] * lam
            if b >= 0:
                W.f[b, i] += W.Jb[r, i] * lam
    for bi in range(nb):
        P = W.P[bi]
        for i in range(12):
            s = W.a0[bi, i]
            for j in range(12):
                s -= P[i, j] * W.f[bi, j]
            out[12 * bi + i] = s


@njit(**JIT)
def accelerations(N, W, x, xd, out):
    """out = qdd at (x, xd) under gravity; drive angles in W.th. Returns the number of rows
    dropped as redundant."""
    evaluate(N, W, x, xd)
    nd = factor(N, W)
    Qf = W.rhs
    for bi in range(N.nb):
        for i in range(12):
            Qf[12 * bi + i] = N.Qg[bi, i]
    solve(N, W, Qf, W.gam, out)
    return nd


@njit(**JIT)
def project(N, W, x, xd, tol, max_iter):
    """Project x onto phi = 0 (Newton, mass-weighted least change) and then xd onto
    G xd + phi_t = 0. Returns the largest |phi| over all rows (dropped ones included)."""
    n = x.size
    dx, zero = W.dx, W.zero
    res = 0.0
    for it in range(max_iter):
        evaluate(N, W, x, xd)
        res = 0.0
        for r in range(N.kind.size):
            res = max(res, abs(W.phi[r]))
        if res < tol:
            break
        factor(N, W)
        for r in range(N.kind.size):
            W.phi[r] = -W.phi[r]
        solve(N, W, zero, W.phi, dx)
        for i in range(n):
            x[i] += dx[i]
    evaluate(N, W, x, xd)
    factor(N, W)
    for r in range(N.kind.size):
        s = W.phit[r]
        a, b = N.ra[r], N.rb[r]
        for i in range(12):
            if a >= 0:
                s += W.Ja[r, i] * xd[12 * a + i]
            if b >= 0:
                s += W.Jb[r, i] * xd[12 * b + i]
        W.phit[r] = -s
    solve(N, W, zero, W.phit, dx)
    for i in range(n):
        xd[i] += dx[i]
    return res
