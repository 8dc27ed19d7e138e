"""System equations M(q) udot = Q(q, u, t, inputs) in minimal coordinates, and the ODE
right-hand side (numba).

M = sum_b Jb^T Mb Jb and Q = sum_b Jb^T (Fb - hb - Mb cb) + joint, drive and load forces, with
Jb the body-frame Jacobian of body b (w_b = Jb u) and cb = Jbdot u (Kane's equations).
Motion-driven coordinates are overwritten from their profile before evaluation and their
acceleration is imposed, so prescribed motions carry their exact derivatives.
"""

import numpy as np
from numba import njit

from . import profiles
from .body import body_terms
from .kinematics import forward, marker_world
from .rotations import JIT, cross, quat_rate

PASSIVE, TORQUE, MOTION, SERVO = 0, 1, 2, 3


@njit(**JIT)
def apply_prescribed(S, t, q, u, inputs):
    """Overwrite the motion-driven coordinates with their profile values at time t."""
    for c in range(S.nv):
        if S.drive[c] == MOTION:
            p = S.drive_prof[c]
            qq, qd, _ = profiles.evaluate(S.prof_code[p], S.prof_par[p], S.prof_t[p], S.prof_c[p],
                                          S.prof_n[p], inputs, t)
            q[S.uq[c]] = qq
            u[c] = qd


@njit(**JIT)
def _body_jacobian(S, W, b):
    """W.Jb[:6+n] = [A^T Jv; A^T Jw; E_eta] and the body-frame velocity-product term W.cb."""
    n = S.nm[b]
    Jb = W.Jb[:6 + n]
    At = W.A[b].T
    Jb[0:3] = At @ W.Jv[b]
    Jb[3:6] = At @ W.Jw[b]
    Jb[6:] = 0.0
    for k in range(n):
        Jb[6 + k, S.ev[b] + k] = 1.0
    vb = At @ W.v[b]
    wb = At @ W.w[b]
    cross(wb, vb, W.m_t1)
    W.cb[0:3] = At @ W.a[b] - W.m_t1
    W.cb[3:6] = At @ W.al[b]
    W.cb[6:6 + n] = 0.0
    W.wb[0:3] = vb
    W.wb[3:6] = wb


@njit(**JIT)
def assemble(S, W, t, q, u, inputs):
    """Fill W.M (nv x nv) and W.Q (nv) at (t, q, u). q, u must already hold prescribed values."""
    forward(S, W, q, u)
    M = W.M
    Q = W.Q
    M[:, :] = 0.0
    Q[:] = 0.0
    for b in range(S.nb):
        n = S.nm[b]
        _body_jacobian(S, W, b)
        Jb = W.Jb[:6 + n]
        Mb = W.Mb[:6 + n, :6 + n]
        hb = W.hb[:6 + n]
        Fb = W.Fb[:6 + n]
        eta = q[S.eq[b]:S.eq[b] + n]
        etad = u[S.ev[b]:S.ev[b] + n]
        gb = W.A[b].T @ S.gravity
        body_terms(S, W, b, eta, etad, W.wb[0:3], W.wb[3:6], gb, Mb, hb, Fb)
        Fb -= hb + Mb @ W.cb[:6 + n]
        Fb[6:] -= S.Ke[b, :n, :n] @ eta + S.De[b, :n, :n] @ etad
        MJ = Mb @ Jb
        M += Jb.T @ MJ
        Q += Jb.T @ Fb
    _joint_forces(S, t, q, u, inputs, M, Q)
    _load_forces(S, W, q, u, inputs, Q)


@njit(**JIT)
def _joint_forces(S, t, q, u, inputs, M, Q):
    """Joint springs/dampers, torque inputs, PD servos and rotor inertia (per coordinate)."""
    for c in range(S.nv):
        qc = S.uq[c]
        if qc < 0:
            continue
        Q[c] -= S.k_spring[c] * (q[qc] - S.q_preload[c]) + S.c_spring[c] * u[c]
        d = S.drive[c]
        if d == TORQUE:
            Q[c] += inputs[S.drive_in[c]]
        elif d == SERVO:
            p = S.drive_prof[c]
            qr, qdr, _ = profiles.evaluate(S.prof_code[p], S.prof_par[p], S.prof_t[p], S.prof_c[p],
                                           S.prof_n[p], inputs, t)
            Q[c] += S.kp[c] * (qr - q[qc]) + S.kd[c] * (qdr - u[c])
        M[c, c] += S.motor_J[c]


@njit(**JIT)
def _load_forces(S, W, q, u, inputs, Q):
    """Point forces/torques on markers and spring-dampers between markers."""
    ra, Aa, va, wa, Jva, Jwa, aa, ala = W.l_r, W.l_A, W.l_v, W.l_w, W.l_Jv, W.l_Jw, W.l_a, W.l_al
    rb, Ab, vb, wb, Jvb, Jwb = W.l_r2, W.l_A2, W.l_v2, W.l_w2, W.l_Jv2, W.l_Jw2
    for f in range(S.pf_marker.shape[0]):
        marker_world(S, W, S.pf_marker[f], q, u, ra, Aa, va, wa, Jva, Jwa, aa, ala, True)
        F = S.pf_force[f].copy()
        T = S.pf_torque[f].copy()
        i0 = S.pf_input[f]
        if i0 >= 0:
            F += inputs[i0:i0 + 3]
            T += inputs[i0 + 3:i0 + 6]
        if S.pf_frame[f] == 1:
            F = Aa @ F
            T = Aa @ T
        Q += Jva.T @ F + Jwa.T @ T
    for s in range(S.sd_a.shape[0]):
        marker_world(S, W, S.sd_a[s], q, u, ra, Aa, va, wa, Jva, Jwa, aa, ala, True)
        marker_world(S, W, S.sd_b[s], q, u, rb, Ab, vb, wb, Jvb, Jwb, aa, ala, True)
        d = rb - ra
        ln = np.sqrt(d @ d)
        if ln < 1e-12:
            continue
        e = d / ln
        f = S.sd_k[s] * (ln - S.sd_l0[s]) + S.sd_c[s] * (e @ (vb - va))
        Q += f * (Jva.T @ e - Jvb.T @ e)


@njit(**JIT)
def accelerations(S, W, t, q, u, inputs, udot):
    """Solve for udot at (t, q, u) (prescribed values applied in place). Returns False if the
    mass matrix is not positive definite. W.tau_drive gets the motion drives' torques."""
    apply_prescribed(S, t, q, u, inputs)
    assemble(S, W, t, q, u, inputs)
    M = W.M
    rhs = W.Q.copy()
    npres = 0
    for c in range(S.nv):
        if S.drive[c] == MOTION:
            p = S.drive_prof[c]
            _, _, qdd = profiles.evaluate(S.prof_code[p], S.prof_par[p], S.prof_t[p], S.prof_c[p],
                                          S.prof_n[p], inputs, t)
            udot[c] = qdd
            W.Mrow[npres] = M[c]
            npres += 1
            rhs -= M[:, c] * qdd
    for c in range(S.nv):
        if S.drive[c] == MOTION:
            M[c, :] = 0.0
            M[:, c] = 0.0
            M[c, c] = 1.0
            rhs[c] = udot[c]
    ok = cholesky_solve(M, rhs, W.L)
    udot[:] = rhs
    npres = 0
    for c in range(S.nv):
        if S.drive[c] == MOTION:
            W.tau_drive[c] = W.Mrow[npres] @ udot - W.Q[c]
            npres += 1
    return ok


@njit(**JIT)
def cholesky_solve(M, b, L):
    """Solve M x = b in place (b <- x) for symmetric positive definite M via L (workspace)."""
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s / L[i, i]
    return True


@njit(**JIT)
def qdot_of(S, q, u, qd):
    """Position-coordinate rates from velocities: qdot = u except for quaternions."""
    for c in range(S.nv):
        if S.uq[c] >= 0:
            qd[S.uq[c]] = u[c]
    for i in range(S.nb):
        k = S.quat_q[i]
        if k >= 0:
            quat_rate(q[k:k + 4], u[S.quat_u[i]:S.quat_u[i] + 3], qd[k:k + 4])


@njit(**JIT)
def rhs(S, W, t, x, inputs, xd):
    """First-order form x = [q; u]: xd = [qdot; udot]. Returns False on a singular mass matrix."""
    nq = S.nq
    q = W.xq
    u = W.xu
    q[:] = x[:nq]
    u[:] = x[nq:]
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
