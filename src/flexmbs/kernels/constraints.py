"""Loop-closing constraints g(q) = 0 of cut joints, their Jacobian G (dg/dt = G u) and the
velocity-product term gam = -(dG/dt) u, and the constrained solve of the equations of motion

    [M  G^T] [udot  ]   [Q  ]
    [G   0 ] [lambda] = [gam]

by the Schur complement: udot = M^-1 (Q - G^T lambda), (G M^-1 G^T) lambda = G M^-1 Q - gam.

Each constraint row r joins marker a (the cut joint's parent side, frame A) and marker b (child
side, frame B) with the joint frame E (columns e1, e2, e3 = the joint axis, the same in both
marker frames). Row kinds: 0 = position, e_i^A . (r_b - r_a) = 0; 1 = alignment,
e_i^A . e_j^B = 0 (world vectors e^A = A_a E e, e^B = A_b E e).
"""

from numba import njit

from .kinematics import forward, marker_world
from .linalg import chol_factor, chol_solve, chol_solve_columns, dot
from .rotations import cross
from .settings import JIT, kernel


@kernel
def constraint_row(S, W, r, q, u, with_jac):
    """Row r at (q, u): W.c_g[r], W.c_gam[r], W.c_dir[r] (the world direction of the row's
    reaction on the child side per unit multiplier: -e for a position row, e x f for an
    alignment row) and W.c_fw[r] = [F_a, T_a, F_b, T_b], the world forces [N] and torques [N m]
    at markers a and b per unit multiplier whose virtual power is the row's rate:
    dg/dt = F_a . v_a + T_a . w_a + F_b . v_b + T_b . w_b. With with_jac, W.c_Jva ... W.c_Jwb
    hold the two markers' Jacobians. W must hold the world poses and motion of the bodies
    (kinematics.forward, or the recursion's kinematics pass without Jacobians). Call it for
    r = 0, 1, ... in turn within one evaluation: the rows of a cut are consecutive and share its
    two markers, whose poses and motion are evaluated at the cut's first row only."""
    ra, Aa, va, wa, Jva, Jwa, aa, ala = W.c_ra, W.c_Aa, W.c_va, W.c_wa, W.c_Jva, W.c_Jwa, W.c_aa, W.c_ala
    rb, Ab, vb, wb, Jvb, Jwb, ab, alb = W.c_rb, W.c_Ab, W.c_vb, W.c_wb, W.c_Jvb, W.c_Jwb, W.c_ab, W.c_alb
    e, f, t, d, dd, ed, fd, fw = W.c_e, W.c_f, W.c_t, W.c_d, W.c_dd, W.c_ed, W.c_fd, W.c_fw
    if r == 0 or S.cr_a[r] != S.cr_a[r - 1] or S.cr_b[r] != S.cr_b[r - 1]:
        marker_world(S, W, S.cr_a[r], q, u, ra, Aa, va, wa, Jva, Jwa, aa, ala, with_jac)
        marker_world(S, W, S.cr_b[r], q, u, rb, Ab, vb, wb, Jvb, Jwb, ab, alb, with_jac)
    E = S.cr_E[r]
    i = S.cr_i[r]
    for k in range(3):      # e = e_i of frame A in world, ed = its rate w_a x e
        e[k] = Aa[k, 0] * E[0, i] + Aa[k, 1] * E[1, i] + Aa[k, 2] * E[2, i]
    cross(wa, e, ed)
    if S.cr_kind[r] == 0:
        for k in range(3):
            d[k] = rb[k] - ra[k]
            dd[k] = vb[k] - va[k]
        W.c_g[r] = dot(e, d)
        # dg/dt = e . (v_b - v_a) + (w_a x e) . d = e . (v_b - v_a) + (e x d) . w_a
        cross(e, d, t)
        for k in range(3):
            W.c_dir[r, k] = -e[k]
            fw[r, k] = -e[k]
            fw[r, 3 + k] = t[k]
            fw[r, 6 + k] = e[k]
            fw[r, 9 + k] = 0.0
        # velocity-product part of d2g/dt2: 2 ed . dd + e . (a_b - a_a) + (al_a x e + w_a x ed) . d
        cross(ala, e, f)
        cross(wa, ed, t)
        acc = 2.0 * dot(ed, dd)
        for k in range(3):
            acc += e[k] * (ab[k] - aa[k]) + (f[k] + t[k]) * d[k]
        W.c_gam[r] = -acc
    else:
        j = S.cr_j[r]
        for k in range(3):
            f[k] = Ab[k, 0] * E[0, j] + Ab[k, 1] * E[1, j] + Ab[k, 2] * E[2, j]
        cross(wb, f, fd)
        W.c_g[r] = dot(e, f)
        # dg/dt = (e x f) . (w_a - w_b)
        cross(e, f, t)
        for k in range(3):
            W.c_dir[r, k] = t[k]
            fw[r, k] = 0.0
            fw[r, 3 + k] = t[k]
            fw[r, 6 + k] = 0.0
            fw[r, 9 + k] = -t[k]
        # velocity-product part: (al_a x e + w_a x ed) . f + 2 ed . fd + e . (al_b x f + w_b x fd)
        acc = 2.0 * dot(ed, fd)
        cross(ala, e, t)
        acc += dot(t, f)
        cross(wa, ed, t)
        acc += dot(t, f)
        cross(alb, f, t)
        acc += dot(e, t)
        cross(wb, fd, t)
        acc += dot(e, t)
        W.c_gam[r] = -acc


@kernel
def constraint_rows(S, W, q, u):
    """Every row into W.c_g (nc), W.c_G (nc x nv), W.c_gam (nc) and W.c_dir, W.c_fw
    (constraint_row); W must hold `forward` of (q, u)."""
    Jva, Jwa, Jvb, Jwb, fw, G = W.c_Jva, W.c_Jwa, W.c_Jvb, W.c_Jwb, W.c_fw, W.c_G
    for r in range(S.cr_a.shape[0]):
        constraint_row(S, W, r, q, u, True)
        for c in range(G.shape[1]):
            acc = 0.0
            for k in range(3):
                acc += (fw[r, k] * Jva[k, c] + fw[r, 3 + k] * Jwa[k, c] + fw[r, 6 + k] * Jvb[k, c]
                        + fw[r, 9 + k] * Jwb[k, c])
            G[r, c] = acc


@njit(**JIT)
def loop_state(S, W, q, u):
    """loop_rows called from Python (loops.Loops, assembly)."""
    loop_rows(S, W, q, u)


@kernel
def loop_rows(S, W, q, u):
    """Constraint residuals, Jacobian and velocity-product term at (q, u) into W.c_g, W.c_G,
    W.c_gam (for projection and assembly, outside the equations of motion)."""
    forward(S, W, q, u)
    constraint_rows(S, W, q, u)


@kernel
def active_gram(S, G, X, A):
    """A[:na, :na] <- G_a X_a^T over the active rows a (S.cr_on) of G and X (nc x nv), in row
    order; returns na."""
    nc = G.shape[0]
    na = 0
    for r in range(nc):
        if S.cr_on[r] == 0:
            continue
        nb = 0
        for s in range(nc):
            if S.cr_on[s] == 0:
                continue
            A[na, nb] = dot(G[r], X[s])
            nb += 1
        na += 1
    return na


@kernel
def constrained_solve(S, W, udot):
    """Given the factor W.L of the (drive-modified) mass matrix and udot = M^-1 Q, apply the
    active loop constraints: rows W.c_G, W.c_gam (prescribed columns already moved to gam).
    Leaves lambda in W.c_lam (0 for dropped rows). False if G M^-1 G^T is singular."""
    nc = S.cr_a.shape[0]
    nv = udot.shape[0]
    G, X, Sc = W.c_G, W.c_X, W.c_S
    for r in range(nc):
        W.c_lam[r] = 0.0
        for c in range(nv):
            X[r, c] = G[r, c]
    # all rows at once, the dropped ones too (their X is not read): one row's substitution is a
    # chain of dependent multiply-adds, and the processor overlaps the chains of the others
    chol_solve_columns(W.L, X.T, nv, nc)
    # Schur complement of the active rows, and its right-hand side G udot - gam
    na = active_gram(S, G, X, Sc)
    k = 0
    for r in range(nc):
        if S.cr_on[r] != 0:
            W.c_r[k] = dot(G[r], udot) - W.c_gam[r]
            k += 1
    if not chol_factor(Sc[:na, :na], W.c_LS[:na, :na]):
        return False
    lam = W.c_r[:na]
    chol_solve(W.c_LS[:na, :na], lam)
    k = 0
    for r in range(nc):
        if S.cr_on[r] == 0:
            continue
        W.c_lam[r] = lam[k]
        for c in range(nv):
            udot[c] -= X[r, c] * lam[k]
        k += 1
    return True
