"""System equations M(q) udot = Q(q, u, t, inputs) in minimal coordinates, and the ODE
right-hand side (numba). `accelerations` dispatches on S.recursive between the articulated-body
recursion (kernels/articulated.py, trees) and the composite route below (everything, loops
included); the two are independent formulations of the same equations.

M = sum_b Jb^T Mb Jb and Q = sum_b Jb^T (Fb - hb - Mb cb) + joint, drive and load forces, with
Jb the body-frame Jacobian of body b (w_b = Jb u) and cb = Jbdot u (Kane's equations).
Motion-driven coordinates are overwritten from their profile before evaluation and their
acceleration is imposed, so prescribed motions carry their exact derivatives. Loop-closing
constraints add G^T lambda (kernels/constraints.py).
"""

import numpy as np
from numba import njit

from .articulated import articulated_accelerations
from .body import body_terms
from .constraints import constrained_solve, constraint_rows
from .forces import MOTION, PASSIVE, SERVO, TORQUE, apply_prescribed, drive_profile, joint_torques, point_load
from .forces import spring_damper_force
from .kinematics import forward, marker_world
from .linalg import chol_factor, chol_solve, copy1, copy2, dot, fill1, fill2, mtv_add
from .rotations import JIT, quat_rate

__all__ = ["PASSIVE", "TORQUE", "MOTION", "SERVO", "drive_profile", "apply_prescribed", "accelerations",
           "composite_accelerations", "articulated_accelerations", "assemble", "rhs", "qdot_of"]

@njit(**JIT)
def _body_jacobian(S, W, b):
    """W.Jb[:6+n] = [A^T Jv; A^T Jw; E_eta], body-frame velocity W.wb and velocity-product
    term W.cb = [A^T a - w x v; A^T al; 0]."""
    n = S.nm[b]
    Jb = W.Jb
    A = W.A[b]
    Jv = W.Jv[b]
    Jw = W.Jw[b]
    for c in range(S.nv):
        for i in range(3):
            Jb[i, c] = A[0, i] * Jv[0, c] + A[1, i] * Jv[1, c] + A[2, i] * Jv[2, c]
            Jb[3 + i, c] = A[0, i] * Jw[0, c] + A[1, i] * Jw[1, c] + A[2, i] * Jw[2, c]
        for k in range(n):
            Jb[6 + k, c] = 0.0
    for k in range(n):
        Jb[6 + k, S.ev[b] + k] = 1.0
    wb = W.wb
    cb = W.cb
    for i in range(3):
        wb[i] = A[0, i] * W.v[b, 0] + A[1, i] * W.v[b, 1] + A[2, i] * W.v[b, 2]
        wb[3 + i] = A[0, i] * W.w[b, 0] + A[1, i] * W.w[b, 1] + A[2, i] * W.w[b, 2]
        cb[i] = A[0, i] * W.a[b, 0] + A[1, i] * W.a[b, 1] + A[2, i] * W.a[b, 2]
        cb[3 + i] = A[0, i] * W.al[b, 0] + A[1, i] * W.al[b, 1] + A[2, i] * W.al[b, 2]
        W.b_g[i] = A[0, i] * S.gravity[0] + A[1, i] * S.gravity[1] + A[2, i] * S.gravity[2]
    cb[0] -= wb[4] * wb[2] - wb[5] * wb[1]
    cb[1] -= wb[5] * wb[0] - wb[3] * wb[2]
    cb[2] -= wb[3] * wb[1] - wb[4] * wb[0]
    for k in range(n):
        cb[6 + k] = 0.0


@njit(**JIT)
def assemble(S, W, t, q, u, inputs):
    """Fill W.M (nv x nv) and W.Q (nv) at (t, q, u). q, u must already hold prescribed values."""
    forward(S, W, q, u)
    M = W.M
    Q = W.Q
    nv = S.nv
    fill2(M, 0.0)
    fill1(Q, 0.0)
    for b in range(S.nb):
        n = S.nm[b]
        nb6 = 6 + n
        _body_jacobian(S, W, b)
        e0 = S.eq[b]
        v0 = S.ev[b]
        eta = q[e0:e0 + n]
        etad = u[v0:v0 + n]
        Mb = W.Mb
        hb = W.hb
        Fb = W.Fb
        body_terms(S, W, b, eta, etad, W.wb[0:3], W.wb[3:6], W.b_g, Mb, hb, Fb)
        Jb = W.Jb
        cb = W.cb
        for i in range(nb6):
            acc = Fb[i] - hb[i]
            for j in range(nb6):
                acc -= Mb[i, j] * cb[j]
            Fb[i] = acc
        for i in range(n):
            acc = 0.0
            for j in range(n):
                acc += S.Ke[b, i, j] * eta[j] + S.De[b, i, j] * etad[j]
            Fb[6 + i] -= acc
        MJ = W.MJ
        for i in range(nb6):
            for c in range(nv):
                acc = 0.0
                for j in range(nb6):
                    acc += Mb[i, j] * Jb[j, c]
                MJ[i, c] = acc
        for r in range(nv):
            acc = 0.0
            for i in range(nb6):
                acc += Jb[i, r] * Fb[i]
            Q[r] += acc
            for c in range(r, nv):
                acc = 0.0
                for i in range(nb6):
                    acc += Jb[i, r] * MJ[i, c]
                M[r, c] += acc
    for r in range(nv):
        for c in range(r):
            M[r, c] = M[c, r]
    _joint_forces(S, t, q, u, inputs, M, Q)
    _load_forces(S, W, q, u, inputs, M, Q)


@njit(**JIT)
def _joint_forces(S, t, q, u, inputs, M, Q):
    """Joint springs/dampers, torque inputs, PD servos and rotor inertia (per coordinate)."""
    joint_torques(S, t, q, u, inputs, Q)
    for c in range(S.nv):
        if S.uq[c] >= 0:
            M[c, c] += S.motor_J[c]


@njit(**JIT)
def _load_forces(S, W, q, u, inputs, M, Q):
    """Point forces/torques on markers, spring-dampers between markers, and the mass of elastic
    rods (spring-dampers with mass m spread evenly between their ends: the velocity along the
    rod interpolates linearly between the ends' velocities, so T = m/6 (va^2 + va.vb + vb^2))."""
    ra, Aa, va, wa, Jva, Jwa, aa, ala = W.l_r, W.l_A, W.l_v, W.l_w, W.l_Jv, W.l_Jw, W.l_a, W.l_al
    rb, Ab, vb, wb, Jvb, Jwb, ab = W.l_r2, W.l_A2, W.l_v2, W.l_w2, W.l_Jv2, W.l_Jw2, W.l_a2
    F = W.l_F
    T = W.l_T
    for f in range(S.pf_marker.shape[0]):
        marker_world(S, W, S.pf_marker[f], q, u, ra, Aa, va, wa, Jva, Jwa, aa, ala, True)
        point_load(S, f, inputs, Aa, F, T, W.m_t1)
        mtv_add(Jva, F, Q, 1.0)
        mtv_add(Jwa, T, Q, 1.0)
    for s in range(S.sd_a.shape[0]):
        marker_world(S, W, S.sd_a[s], q, u, ra, Aa, va, wa, Jva, Jwa, aa, ala, True)
        marker_world(S, W, S.sd_b[s], q, u, rb, Ab, vb, wb, Jvb, Jwb, ab, ala, True)
        if S.sd_m[s] > 0.0:
            _rod_inertia(S, S.sd_m[s], Jva, Jvb, aa, ab, M, Q)
        spring_damper_force(S, s, ra, rb, va, vb, F)
        mtv_add(Jva, F, Q, 1.0)
        mtv_add(Jvb, F, Q, -1.0)


@njit(**JIT)
def _rod_inertia(S, m, Ja, Jb, aa, ab, M, Q):
    """M += m/6 [Ja; Jb]^T [[2, 1], [1, 2]] [Ja; Jb] (3-vectors), and Q gets the matching
    velocity-product and gravity terms (gravity: m/2 at each end); aa, ab: the ends'
    velocity-product accelerations."""
    nv = M.shape[0]
    c = m / 6.0
    for r in range(nv):
        fr = 0.0
        for k in range(3):
            fr += (Ja[k, r] + Jb[k, r]) * 0.5 * m * S.gravity[k]
            fr -= c * (Ja[k, r] * (2.0 * aa[k] + ab[k]) + Jb[k, r] * (aa[k] + 2.0 * ab[k]))
        Q[r] += fr
        for col in range(nv):
            acc = 0.0
            for k in range(3):
                acc += Ja[k, r] * (2.0 * Ja[k, col] + Jb[k, col]) + Jb[k, r] * (Ja[k, col] + 2.0 * Jb[k, col])
            M[r, col] += c * acc


@njit(**JIT)
def accelerations(S, W, t, q, u, inputs, udot):
    """Solve for udot at (t, q, u) (prescribed values applied in place) by the route compiled
    into S.recursive: the articulated-body recursion (kernels/articulated.py) or the composite
    mass matrix. Returns False if the mass matrix (a pivot block) is not positive definite.
    W.tau_drive gets the motion drives' torques."""
    if S.recursive == 1:
        return articulated_accelerations(S, W, t, q, u, inputs, udot)
    return composite_accelerations(S, W, t, q, u, inputs, udot)


@njit(**JIT)
def composite_accelerations(S, W, t, q, u, inputs, udot):
    """Composite route: dense M udot = Q by Cholesky, then loop constraints. Same contract as
    `accelerations`."""
    apply_prescribed(S, t, q, u, inputs, udot)
    assemble(S, W, t, q, u, inputs)
    M = W.M
    nv = S.nv
    rhs_ = W.rhs
    copy1(W.Q, rhs_)
    npres = 0
    for c in range(nv):
        if S.drive[c] == MOTION:
            qdd = udot[c]
            copy1(M[c], W.Mrow[npres])
            npres += 1
            for r in range(nv):
                rhs_[r] -= M[r, c] * qdd
    if npres > 0:
        for c in range(nv):
            if S.drive[c] == MOTION:
                for r in range(nv):
                    M[c, r] = 0.0
                    M[r, c] = 0.0
                M[c, c] = 1.0
                rhs_[c] = udot[c]
    ok = cholesky_solve(M, rhs_, W.L)
    copy1(rhs_, udot)
    nc = S.cr_a.shape[0]
    if nc > 0:
        # evaluated whatever happens next, so that outputs never show a previous call's values
        constraint_rows(S, W, q, u, W.c_g, W.c_G, W.c_gam)
        copy2(W.c_G, W.c_G0)
        fill1(W.c_lam, 0.0)
    if ok and nc > 0:
        # prescribed coordinates have a known udot: their columns go to the right-hand side
        for c in range(nv):
            if S.drive[c] == MOTION:
                for r in range(nc):
                    W.c_gam[r] -= W.c_G[r, c] * udot[c]
                    W.c_G[r, c] = 0.0
        ok = constrained_solve(S, W, udot)
    npres = 0
    for c in range(nv):
        if S.drive[c] == MOTION:
            W.tau_drive[c] = dot(W.Mrow[npres], udot) - W.Q[c]
            for r in range(nc):
                W.tau_drive[c] += W.c_G0[r, c] * W.c_lam[r]
            npres += 1
    return ok


@njit(**JIT)
def cholesky_solve(M, b, L):
    """Solve M x = b in place (b <- x) for symmetric positive definite M via L (workspace)."""
    if not chol_factor(M, L):
        return False
    chol_solve(L, b)
    return True


@njit(**JIT)
def qdot_of(S, q, u, qd):
    """Position-coordinate rates from velocities: qdot = u except for quaternions."""
    for c in range(S.nv):
        if S.uq[c] >= 0:
            qd[S.uq[c]] = u[c]
    for i in range(S.nb):
        for k in range(S.nm[i]):
            qd[S.eq[i] + k] = u[S.ev[i] + k]
        k = S.quat_q[i]
        if k >= 0:
            quat_rate(q[k:k + 4], u[S.quat_u[i]:S.quat_u[i] + 3], qd[k:k + 4])


@njit(**JIT)
def rhs(S, W, t, x, inputs, xd):
    """First-order form x = [q; u]: xd = [qdot; udot]. Returns False on a singular mass matrix."""
    nq = S.nq
    q = W.xq
    u = W.xu
    copy1(x[:nq], q)
    copy1(x[nq:], u)
    ok = accelerations(S, W, t, q, u, inputs, xd[nq:])
    qdot_of(S, q, u, xd[:nq])
    return ok


@njit(**JIT)
def normalize_quaternions(S, x):
    """Project quaternion coordinates back to unit norm (after an integration step)."""
    for i in range(S.nb):
        k = S.quat_q[i]
        if k >= 0:
            nrm = np.sqrt(x[k] ** 2 + x[k + 1] ** 2 + x[k + 2] ** 2 + x[k + 3] ** 2)
            x[k:k + 4] /= nrm
