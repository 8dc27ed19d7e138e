"""Recursive O(n) forward dynamics of trees of rigid and floating-frame flexible bodies (numba):
an articulated-body algorithm (R. Featherstone, Rigid Body Dynamics Algorithms, Springer 2008,
ch. 7) over extended body velocities, in the spirit of the recursive flexible-manipulator
formulation of Hwang 2005 (docs/references.md).

Per body b: extended velocity z_b = [v_b; w_b; etad_b] (6 + n_b): origin velocity [m/s] and
angular velocity [rad/s] in body axes, modal rates. The tree relation is
z_c = P_c z_p + H_c y_c with y_c = [joint rates of c; etad_c]: P_c (6 x (6 + n_p), the child's
modal rows of P are zero) carries the parent's frame motion to the child's origin through the
parent marker, whose elastic displacement Ds etad_p and rotation T Psi etad_p move the joint;
H_c = blockdiag(S_c, I), S_c the joint motion subspace in child axes. The velocity-product
part of the child's acceleration, c_c = Pdot z_p + Hdot y_c, is cb_c - P_c cb_p where cb is the
body's own velocity-product acceleration (in body axes).

Three passes: (1) root -> leaves: kinematics, P, S, c, body inertia Mb, velocity-product and
gravity forces, elastic forces and loads, giving each body's inertia IA = Mb and bias force
pA = hb - Fb + K eta + D etad - loads; (2) leaves -> root: with U = IA H, D = H^T U + rotor
inertia, u = tau - H^T pA, the parent gets IA_p += P^T (IA - U D^-1 U^T) P and
pA_p += P^T (pA + IA^a c + U D^-1 u); (3) root -> leaves: ydd = D^-1 (u - U^T (P zdot_p + c)),
zdot = P zdot_p + c + H ydd. Motion-driven coordinates are moved to the known side (their
H column times the profile acceleration joins c) and their drive torque is read from the
subtree's force f = IA zdot + pA.

Scope: the tree. Loop-closing cut joints are applied on this factorisation afterwards
(kernels/loop_closure.py, which keeps each body's pivot factor ab_Lb); elastic rods with mass
couple bodies outside the tree, and models with them use the composite route
(system.uses_recursion).
"""

import numpy as np

from .body import body_terms, gyroscopic_force, kinetic_energy, weight
from .drives import MOTION, apply_prescribed, joint_forces
from .joints import REVOLUTE, joint_kinematics
from .kinematics import marker_local, marker_world
from .loads import point_load, spring_damper_force
from .linalg import chol_factor_n, chol_solve_columns, fill1
from .rotations import rot_axis
from .settings import kernel


@kernel
def articulated_accelerations(S, W, t, q, u, inputs, udot):
    """Solve for udot at (t, q, u) by the articulated-body recursion (prescribed values applied
    in place); W.tau_drive gets the motion drives' torques. Returns False when a joint's pivot
    block D is not positive definite. Trees only (no cut joints, no massive rods)."""
    apply_prescribed(S, t, q, u, inputs, udot)
    tau = W.ab_tau
    fill1(tau, 0.0)
    joint_forces(S, t, q, u, W.xi, inputs, tau)
    _kinematics_pass(S, W, q, u, udot)
    _loads(S, W, q, u, inputs)
    if not _inertia_pass(S, W):
        return False
    _acceleration_pass(S, W, udot)
    return True


# rows of the 3-vector scratch ab_V3 used by the kinematics pass (all in the parent's axes)
(_VP, _WP, _AP, _ALP, _S, _SD, _WR, _SB, _WB, _PW, _WREL, _VREL, _CW, _ALI, _DP, _AI) = range(16)
N_V3 = 16
# the column of W.ab_K[b] that holds D^-1 u (columns 0-5: D^-1 U^T): one sweep of the factor
# solves both
KU = 6


@kernel
def _kinematics_pass(S, W, q, u, udot):
    """Pass 1, root to leaves, in body axes: per body b its velocity ab_Vb, velocity-product
    acceleration ab_cb, the tree terms ab_P, ab_S, ab_c, and its own inertia ab_IA and bias
    force ab_pA; also the world pose and velocity W.A, W.r, W.v, W.w, W.a, W.al for the loads
    (in an integrator's run W.A alone where nothing reads the rest: _world_motion).

    The child's motion is composed in the parent's axes from the parent's (v, w, a, al), the
    parent marker's elastic motion (kinematics.marker_local) and the joint's (joints.py; a
    revolute joint's in _joint_motion itself), with the same terms as kinematics.forward (which
    the composite route uses in world axes)."""
    for i in range(S.nb):
        _parent_motion(S, W, i, q, u)
        _joint_motion(S, W, i, q, u)
        _child_motion(S, W, i)
        _world_motion(S, W, i)
        _tree_terms(S, W, i, q, u, udot)
        _own_inertia(S, W, i)


@kernel(inline=True)
def _parent_motion(S, W, i, q, u):
    """Pass 1, body i: its parent's motion in the parent's axes (ab_V3 rows _VP, _WP, _AP, _ALP)
    and the parent marker's position and rotation (_S; W.ab_RM, but not for a hinge on a marker
    that does not deform) and on a flexible parent its elastic motion (_SD, _WR, _SB, _WB)."""
    p = S.parent[i]
    k = S.pmark[i]
    nm, mk_s0, mk_R0 = S.nm, S.mk_s0, S.mk_R0
    Vb, cb, RM, V = W.ab_Vb, W.ab_cb, W.ab_RM, W.ab_V3
    # parent motion in its axes (the ground is at rest): a = cb + w x v
    vp = wp = ap = alp = (0.0, 0.0, 0.0)
    if p >= 0:
        vp, wp = (Vb[p, 0], Vb[p, 1], Vb[p, 2]), (Vb[p, 3], Vb[p, 4], Vb[p, 5])
        ap = _plus((cb[p, 0], cb[p, 1], cb[p, 2]), _cross(wp, vp))
        alp = (cb[p, 3], cb[p, 4], cb[p, 5])
    for j in range(3):
        V[_VP, j] = vp[j]
        V[_WP, j] = wp[j]
        V[_AP, j] = ap[j]
        V[_ALP, j] = alp[j]
    # parent marker: position s, rotation RM, elastic velocity sd, rotation rate wr and their
    # velocity-product rates sb, wb (zero on rigid bodies and the ground)
    if p >= 0 and nm[p] > 0:
        marker_local(S, W, k, q, u)
        ms, mR, msd, mwr, msb, mwb = W.m_s, W.m_R, W.m_sd, W.m_wr, W.m_sb, W.m_wb
        for j in range(3):
            V[_S, j] = ms[j]
            V[_SD, j] = msd[j]
            V[_WR, j] = mwr[j]
            V[_SB, j] = msb[j]
            V[_WB, j] = mwb[j]
            for l in range(3):
                RM[j, l] = mR[j, l]
    else:   # _SD, _WR, _SB, _WB are read on a flexible parent only
        for j in range(3):
            V[_S, j] = mk_s0[k, j]
        if S.jtype[i] != REVOLUTE:   # a hinge here takes E from the joint tables, not from RM
            for j in range(3):
                for l in range(3):
                    RM[j, l] = mk_R0[k, j, l]


@kernel(inline=True)
def _joint_motion(S, W, i, q, u):
    """Pass 1, body i: its joint's pose and rates in the parent's axes (_PW, _CW, _WREL, _VREL),
    the rotation W.ab_E (parent to child axes) and the motion subspace in child axes W.ab_S[i];
    for a joint other than a hinge on a rigid parent also W.ab_Rc (joint's parent-marker axes
    to child)."""
    jq, jtype, axis1, c_R = S.jq, S.jtype, S.axis1, S.c_R
    E, Rc, RM, V, RJ = W.ab_E, W.ab_Rc, W.ab_RM, W.ab_V3, W.ab_R
    hinge = jtype[i] == REVOLUTE
    p = S.parent[i]
    if hinge:
        # a hinge about the unit axis a (parent-marker axes): no offset, w_rel = a u and no
        # velocity-product term; its subspace in child axes is constant, as R_J^T a = a
        _hinge_subspace(S, W, i)
        pw = cwm = vrel = (0.0, 0.0, 0.0)
        ui = u[S.ju[i]]
        if p < 0 or S.nm[p] == 0:
            # the parent marker does not deform: E from the compiler's tables (hj_*)
            _hinge_rotation(S, E, i, q[jq[i]])
            wrel = (S.hj_m[i, 0] * ui, S.hj_m[i, 1] * ui, S.hj_m[i, 2] * ui)
        else:
            a = (axis1[i, 0], axis1[i, 1], axis1[i, 2])
            rot_axis(a[0], a[1], a[2], q[jq[i]], RJ)
            ra = _rotate(RM, a)
            wrel = (ra[0] * ui, ra[1] * ui, ra[2] * ui)
            _compose_rotations(c_R, RJ, RM, i, E, Rc)
    else:
        pw, cwm, wrel, vrel = _general_joint_motion(S, W, i, q, u)
        _compose_rotations(c_R, RJ, RM, i, E, Rc)
        _child_subspace(S, W, i)
    for j in range(3):
        V[_PW, j] = pw[j]
        V[_CW, j] = cwm[j]
        V[_WREL, j] = wrel[j]
        V[_VREL, j] = vrel[j]


@kernel(inline=True)
def _compose_rotations(c_R, RJ, RM, i, E, Rc):
    """Rc = c_R RJ^T (the joint's parent-marker axes -> child) and E = Rc RM^T (parent axes ->
    child), from the joint's rotation RJ and the parent marker's RM."""
    for j in range(3):
        c0, c1, c2 = c_R[i, j, 0], c_R[i, j, 1], c_R[i, j, 2]
        r0 = c0 * RJ[0, 0] + c1 * RJ[0, 1] + c2 * RJ[0, 2]
        r1 = c0 * RJ[1, 0] + c1 * RJ[1, 1] + c2 * RJ[1, 2]
        r2 = c0 * RJ[2, 0] + c1 * RJ[2, 1] + c2 * RJ[2, 2]
        Rc[j, 0], Rc[j, 1], Rc[j, 2] = r0, r1, r2
        for l in range(3):
            E[j, l] = r0 * RM[l, 0] + r1 * RM[l, 1] + r2 * RM[l, 2]


@kernel(inline=True)
def _hinge_rotation(S, E, i, theta):
    """E = cos(theta) hj_C + (1 - cos(theta)) hj_w hj_m^T - sin(theta) hj_X: the rotation from
    the parent's axes to the child's of a hinge at angle theta [rad] on a marker that does not
    deform (compile/joints._hinge_tables)."""
    C, X, w, m = S.hj_C, S.hj_X, S.hj_w, S.hj_m
    c, s = np.cos(theta), np.sin(theta)
    v = 1.0 - c
    for j in range(3):
        vw = v * w[i, j]
        for l in range(3):
            E[j, l] = c * C[i, j, l] + vw * m[i, l] - s * X[i, j, l]


@kernel(inline=True)
def _general_joint_motion(S, W, i, q, u):
    """Pass 1, body i with a joint of any type: its pose W.ab_p, W.ab_R and motion subspaces
    W.ab_Sv, W.ab_Sw in the joint's parent-marker axes (joints.py); returns its offset, the
    velocity-product rate and the relative angular and linear velocity in the parent's axes
    (pw, cw, w_rel, v_rel)."""
    ju, jnv, jq, jtype, axis1, axis2 = S.ju, S.jnv, S.jq, S.jtype, S.axis1, S.axis2
    RM = W.ab_RM
    pJ, RJ, Sv, Sw, cw, R1, R2, bj = W.ab_p, W.ab_R, W.ab_Sv, W.ab_Sw, W.ab_cw, W.ab_R1, W.ab_R2, W.ab_bj
    j0 = ju[i]
    for j in range(3):
        for c in range(6):
            Sv[j, c] = 0.0
            Sw[j, c] = 0.0
    joint_kinematics(jtype[i], axis1, axis2, i, q, jq[i], u, j0, pJ, RJ, Sv, Sw, cw, R1, R2, bj)
    tv0 = tv1 = tv2 = tw0 = tw1 = tw2 = 0.0
    for c in range(jnv[i]):
        uc = u[j0 + c]
        tv0 += Sv[0, c] * uc
        tv1 += Sv[1, c] * uc
        tv2 += Sv[2, c] * uc
        tw0 += Sw[0, c] * uc
        tw1 += Sw[1, c] * uc
        tw2 += Sw[2, c] * uc
    return (_rotate(RM, (pJ[0], pJ[1], pJ[2])), _rotate(RM, (cw[0], cw[1], cw[2])),
            _rotate(RM, (tw0, tw1, tw2)), _rotate(RM, (tv0, tv1, tv2)))


@kernel(inline=True)
def _hinge_subspace(S, W, i):
    """W.ab_S[i] of a revolute joint about the unit axis a (its parent-marker axes):
    [c_pos x w; w] in child axes, w = c_R a (S.hj_w)."""
    c_pos, Sc = S.c_pos, W.ab_S
    w = (S.hj_w[i, 0], S.hj_w[i, 1], S.hj_w[i, 2])
    v = _cross((c_pos[i, 0], c_pos[i, 1], c_pos[i, 2]), w)
    for j in range(3):
        Sc[i, j, 0] = v[j]
        Sc[i, 3 + j, 0] = w[j]


@kernel(inline=True)
def _child_subspace(S, W, i):
    """W.ab_S[i] of a joint of any type from its subspaces Sv, Sw in its parent-marker axes:
    [Rc Sv + c_pos x (Rc Sw); Rc Sw] in child axes."""
    c_pos, Sc, Rc, Sv, Sw = S.c_pos, W.ab_S, W.ab_Rc, W.ab_Sv, W.ab_Sw
    for kk in range(S.jnv[i]):
        for j in range(3):
            Sc[i, 3 + j, kk] = Rc[j, 0] * Sw[0, kk] + Rc[j, 1] * Sw[1, kk] + Rc[j, 2] * Sw[2, kk]
        for j in range(3):
            j1 = (j + 1) % 3
            j2 = (j + 2) % 3
            Sc[i, j, kk] = Rc[j, 0] * Sv[0, kk] + Rc[j, 1] * Sv[1, kk] + Rc[j, 2] * Sv[2, kk] \
                + c_pos[i, j1] * Sc[i, 3 + j2, kk] - c_pos[i, j2] * Sc[i, 3 + j1, kk]


@kernel(inline=True)
def _row(V, k):
    """Row k of the 3-vector scratch as a tuple (held in registers by the caller)."""
    return V[k, 0], V[k, 1], V[k, 2]


@kernel(inline=True)
def _cross(a, b):
    """a x b of two 3-tuples."""
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


@kernel(inline=True)
def _plus(a, b):
    """a + b of two 3-tuples."""
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


@kernel(inline=True)
def _plus_times(a, alpha, b):
    """a + alpha b of two 3-tuples."""
    return a[0] + alpha * b[0], a[1] + alpha * b[1], a[2] + alpha * b[2]


@kernel(inline=True)
def _rotate(E, a):
    """E a for a 3 x 3 array E and a 3-tuple a."""
    return (E[0, 0] * a[0] + E[0, 1] * a[1] + E[0, 2] * a[2],
            E[1, 0] * a[0] + E[1, 1] * a[1] + E[1, 2] * a[2],
            E[2, 0] * a[0] + E[2, 1] * a[1] + E[2, 2] * a[2])


@kernel(inline=True)
def _child_motion(S, W, i):
    """Pass 1, body i: the motion of its parent marker (m), child marker and origin composed in
    the parent's axes, then its velocity W.ab_Vb[i] and velocity-product acceleration W.ab_cb[i]
    in its own axes. The composition runs on tuples, which stay in registers (through the
    scratch rows, each term was a store and a load on the critical path); the rows _DP, _AI,
    _ALI that later steps read are written at the end."""
    c_pos = S.c_pos
    cb, Vb, E, V = W.ab_cb, W.ab_Vb, W.ab_E, W.ab_V3
    p = S.parent[i]
    wp, vp, ap, alp = _row(V, _WP), _row(V, _VP), _row(V, _AP), _row(V, _ALP)
    s, wrel = _row(V, _S), _row(V, _WREL)
    # parent marker: w_m = w_p + w_r, v_m = v_p + sd + w_p x s,
    # a_m = a_p + sb + al_p x s + w_p x (w_p x s) + 2 w_p x sd, al_m = al_p + wb + w_p x w_r;
    # its elastic motion (sd, w_r, sb, wb) is zero on a rigid parent and the ground
    if p >= 0 and S.nm[p] > 0:
        sd, wr = _row(V, _SD), _row(V, _WR)
        wm = _plus(wp, wr)
        vm = _plus(_plus(vp, sd), _cross(wp, s))
        am = _plus(_plus(_plus(ap, _row(V, _SB)), _cross(alp, s)), _cross(wp, _cross(wp, s)))
        am = _plus_times(am, 2.0, _cross(wp, sd))
        alm = _plus(_plus(alp, _row(V, _WB)), _cross(wp, wr))
    else:
        wm, alm = wp, alp
        vm = _plus(vp, _cross(wp, s))
        am = _plus(_plus(ap, _cross(alp, s)), _cross(wp, _cross(wp, s)))
    # child marker, through the joint's offset pw and relative motion (w_rel, v_rel, cw), of
    # which a hinge has w_rel only
    wi = _plus(wm, wrel)
    if S.jtype[i] == REVOLUTE:
        vc, ac = vm, am
        ali = _plus(alm, _cross(wm, wrel))
    else:
        pw, vrel = _row(V, _PW), _row(V, _VREL)
        vc = _plus(_plus(vm, vrel), _cross(wm, pw))
        ali = _plus(_plus(alm, _row(V, _CW)), _cross(wm, wrel))
        ac = _plus(_plus(am, _cross(alm, pw)), _cross(wm, _cross(wm, pw)))
        ac = _plus_times(ac, 2.0, _cross(wm, vrel))
    # child origin, offset dp = -E^T c_pos
    dp = (-(E[0, 0] * c_pos[i, 0] + E[1, 0] * c_pos[i, 1] + E[2, 0] * c_pos[i, 2]),
          -(E[0, 1] * c_pos[i, 0] + E[1, 1] * c_pos[i, 1] + E[2, 1] * c_pos[i, 2]),
          -(E[0, 2] * c_pos[i, 0] + E[1, 2] * c_pos[i, 1] + E[2, 2] * c_pos[i, 2]))
    vi = _plus(vc, _cross(wi, dp))
    ai = _plus(_plus(ac, _cross(ali, dp)), _cross(wi, _cross(wi, dp)))
    for j in range(3):
        V[_DP, j] = dp[j]
        V[_AI, j] = ai[j]
        V[_ALI, j] = ali[j]
    # into child axes: velocity and velocity-product acceleration [E a - w x v; E al]
    vb, wb = _rotate(E, vi), _rotate(E, wi)
    eb, eal = _rotate(E, ai), _rotate(E, ali)
    wv = _cross(wb, vb)
    for j in range(3):
        W.ab_vb[j] = vb[j]
        W.ab_wb[j] = wb[j]
        Vb[i, j] = vb[j]
        Vb[i, 3 + j] = wb[j]
        cb[i, j] = eb[j] - wv[j]
        cb[i, 3 + j] = eal[j]


@kernel(inline=True)
def _world_motion(S, W, i):
    """Pass 1, body i: its world pose and motion W.A, W.r, W.v, W.w, W.a, W.al (for the loads):
    A_i = A_p E^T, r_i = r_p + A_p (s + pw + dp), a_i = A_p a, al_i = A_p al (the child origin's
    velocity-product accelerations in the parent's axes, rows _AI, _ALI), v_i = A_i vb,
    w_i = A_i wb. In an integrator's right-hand side (W.rates_only) A_i only, unless point
    forces, spring-dampers or loop rows read the rest through kinematics.marker_world."""
    p = S.parent[i]
    A, r, v, w, a, al = W.A, W.r, W.v, W.w, W.a, W.al
    E, V, vb, wb = W.ab_E, W.ab_V3, W.ab_vb, W.ab_wb
    for j in range(3):   # A, for gravity in body axes
        for l in range(3):
            A[i, j, l] = A[p, j, 0] * E[l, 0] + A[p, j, 1] * E[l, 1] + A[p, j, 2] * E[l, 2] if p >= 0 else E[l, j]
    if W.rates_only[0] != 0.0 and S.pf_marker.shape[0] == 0 and S.sd_a.shape[0] == 0 and S.cr_a.shape[0] == 0:
        return   # an integrator's right-hand side, and no load or loop row reads the rest
    d = _plus(_plus(_row(V, _S), _row(V, _PW)), _row(V, _DP))
    ai, ali = _row(V, _AI), _row(V, _ALI)
    if p >= 0:
        for j in range(3):
            a0, a1, a2 = A[p, j, 0], A[p, j, 1], A[p, j, 2]
            r[i, j] = r[p, j] + a0 * d[0] + a1 * d[1] + a2 * d[2]
            a[i, j] = a0 * ai[0] + a1 * ai[1] + a2 * ai[2]
            al[i, j] = a0 * ali[0] + a1 * ali[1] + a2 * ali[2]
    else:
        for j in range(3):
            r[i, j] = d[j]
            a[i, j] = ai[j]
            al[i, j] = ali[j]
    for j in range(3):
        v[i, j] = A[i, j, 0] * vb[0] + A[i, j, 1] * vb[1] + A[i, j, 2] * vb[2]
        w[i, j] = A[i, j, 0] * wb[0] + A[i, j, 1] * wb[1] + A[i, j, 2] * wb[2]


@kernel(inline=True)
def _tree_terms(S, W, i, q, u, udot):
    """Pass 1, body i: its modal state, gravity in its axes, and the tree terms W.ab_P[i] (from
    the parent's extended velocity) and W.ab_c[i] (with the prescribed joint accelerations)."""
    p = S.parent[i]
    k = S.pmark[i]
    n = S.nm[i]
    nvj = S.jnv[i]
    j0 = S.ju[i]
    nm, eq, ev, drive, mk_Psi, gravity = S.nm, S.eq, S.ev, S.drive, S.mk_Psi, S.gravity
    A, P, Sc, cc, cb, E, V = W.A, W.ab_P, W.ab_S, W.ab_c, W.ab_cb, W.ab_E, W.ab_V3
    eta, etad, gb = W.ab_eta, W.ab_etad, W.ab_g
    nmax = eta.shape[0]
    for j in range(nmax):
        eta[j] = q[eq[i] + j] if j < n else 0.0
        etad[j] = u[ev[i] + j] if j < n else 0.0
    for j in range(3):
        gb[j] = A[i, 0, j] * gravity[0] + A[i, 1, j] * gravity[1] + A[i, 2, j] * gravity[2]
    if p >= 0:
        _parent_map(i, P, E, V, W, mk_Psi, k, nm[p])
        m = _map_motion(P, W.ab_rp, i, cb, p, 0)    # cb holds frame rows only
        for j in range(6):
            cc[i, j] = cb[i, j] - m[j]
    else:
        for j in range(6):
            cc[i, j] = cb[i, j]
    # prescribed joint accelerations are known: their part of H ydd joins c
    for kk in range(nvj):
        c = j0 + kk
        if drive[c] == MOTION:
            for j in range(6):
                cc[i, j] += Sc[i, j, kk] * udot[c]


@kernel(inline=True)
def _own_inertia(S, W, i):
    """Pass 1, body i: its own inertia W.ab_IA[i] and bias force W.ab_pA[i] (velocity-product
    and elastic forces less gravity); in an output sample (W.sampling) its kinetic energy into
    W.e_kin[i]."""
    n = S.nm[i]
    m = 6 + n
    Mc, Ke, De = S.Mc, S.Ke, S.De
    IA, pA, eta, etad, vb, wb, gb = W.ab_IA, W.ab_pA, W.ab_eta, W.ab_etad, W.ab_vb, W.ab_wb, W.ab_g
    hb, Fb = W.ab_hb, W.ab_Fb
    # the body's mass matrix is its inertia before its children's join it: written in place
    if n == 0:      # a rigid body: its constant inertia, forces straight into pA
        h = gyroscopic_force(Mc, i, 0, vb, wb, vb)
        F = weight(Mc, i, gb)
        for j in range(6):
            pA[i, j] = h[j] - F[j]
            for kk in range(6):
                IA[i, j, kk] = Mc[i, j, kk]
    else:
        body_terms(S, W, i, eta, etad, vb, wb, gb, IA[i], hb, Fb)
    if W.sampling[0] != 0.0:   # energy.kinetic reads it
        W.e_kin[i] = kinetic_energy(IA[i], vb, wb, etad, n)
    if n == 0:
        return
    for j in range(m):
        pA[i, j] = hb[j] - Fb[j]
    for j in range(n):
        acc = 0.0
        for kk in range(n):
            acc += Ke[i, j, kk] * eta[kk] + De[i, j, kk] * etad[kk]
        pA[i, 6 + j] += acc


@kernel(inline=True)
def _parent_map(i, P, E, V, W, Psi, k, n_p):
    """P[i] (6 x (6 + n_p)): child frame velocity from the parent's extended velocity. With
    rp = s + pw + dp (parent origin to child origin, parent axes) and rq = rp - s:
    v_i = E (v_p + w_p x rp + sum_j (Ds_j + TPsi_j x rq) etad_j), w_i = E (w_p + sum_j TPsi_j etad_j),
    TPsi_j = T Psi_j the marker's rotation mode (Ds, T from kinematics.marker_local)."""
    rq0 = V[_PW, 0] + V[_DP, 0]
    rq1 = V[_PW, 1] + V[_DP, 1]
    rq2 = V[_PW, 2] + V[_DP, 2]
    rp0 = rq0 + V[_S, 0]
    rp1 = rq1 + V[_S, 1]
    rp2 = rq2 + V[_S, 2]
    rp = W.ab_rp
    rp[i, 0] = rp0
    rp[i, 1] = rp1
    rp[i, 2] = rp2
    for j in range(3):
        e0, e1, e2 = E[j, 0], E[j, 1], E[j, 2]
        for k_ in range(3):   # rows 3-5 of columns 0-2 stay zero (the workspace's allocation)
            P[i, j, k_] = E[j, k_]
            P[i, 3 + j, 3 + k_] = E[j, k_]
        # columns of -E skew(rp): E (e_k x rp)
        P[i, j, 3] = -e1 * rp2 + e2 * rp1
        P[i, j, 4] = e0 * rp2 - e2 * rp0
        P[i, j, 5] = -e0 * rp1 + e1 * rp0
    if n_p == 0:
        return
    Ds, T = W.m_Ds, W.m_T
    for jm in range(n_p):
        t0 = T[0, 0] * Psi[k, 0, jm] + T[0, 1] * Psi[k, 1, jm] + T[0, 2] * Psi[k, 2, jm]
        t1 = T[1, 0] * Psi[k, 0, jm] + T[1, 1] * Psi[k, 1, jm] + T[1, 2] * Psi[k, 2, jm]
        t2 = T[2, 0] * Psi[k, 0, jm] + T[2, 1] * Psi[k, 1, jm] + T[2, 2] * Psi[k, 2, jm]
        x0 = Ds[0, jm] + t1 * rq2 - t2 * rq1
        x1 = Ds[1, jm] + t2 * rq0 - t0 * rq2
        x2 = Ds[2, jm] + t0 * rq1 - t1 * rq0
        for j in range(3):
            P[i, j, 6 + jm] = E[j, 0] * x0 + E[j, 1] * x1 + E[j, 2] * x2
            P[i, 3 + j, 6 + jm] = E[j, 0] * t0 + E[j, 1] * t1 + E[j, 2] * t2


@kernel(inline=True)
def _map_motion(P, rp, i, z, p, n_p):
    """P[i] z[p] (6 values, i's axes) for a motion z[p] = [v; w; modal rates] of i's parent p
    (n_p modes, p's axes): the frame columns by their structure, [E (v + w x rp); E w] with
    E = P[i, :3, :3] and rp = rp[i] (24 multiplications where the dense 6 x 6 block takes 36),
    the modal columns dense."""
    r0, r1, r2 = rp[i, 0], rp[i, 1], rp[i, 2]
    w0, w1, w2 = z[p, 3], z[p, 4], z[p, 5]
    v0 = z[p, 0] + w1 * r2 - w2 * r1
    v1 = z[p, 1] + w2 * r0 - w0 * r2
    v2 = z[p, 2] + w0 * r1 - w1 * r0
    o0 = P[i, 0, 0] * v0 + P[i, 0, 1] * v1 + P[i, 0, 2] * v2
    o1 = P[i, 1, 0] * v0 + P[i, 1, 1] * v1 + P[i, 1, 2] * v2
    o2 = P[i, 2, 0] * v0 + P[i, 2, 1] * v1 + P[i, 2, 2] * v2
    o3 = P[i, 0, 0] * w0 + P[i, 0, 1] * w1 + P[i, 0, 2] * w2
    o4 = P[i, 1, 0] * w0 + P[i, 1, 1] * w1 + P[i, 1, 2] * w2
    o5 = P[i, 2, 0] * w0 + P[i, 2, 1] * w1 + P[i, 2, 2] * w2
    for jm in range(n_p):
        e = z[p, 6 + jm]
        o0 += P[i, 0, 6 + jm] * e
        o1 += P[i, 1, 6 + jm] * e
        o2 += P[i, 2, 6 + jm] * e
        o3 += P[i, 3, 6 + jm] * e
        o4 += P[i, 4, 6 + jm] * e
        o5 += P[i, 5, 6 + jm] * e
    return o0, o1, o2, o3, o4, o5


@kernel
def _loads(S, W, q, u, inputs):
    """Point loads and spring-dampers onto the bias forces ab_pA of the bodies they act on."""
    if S.pf_marker.shape[0] == 0 and S.sd_a.shape[0] == 0:
        return      # before reading the scratch fields: each read costs a reference count
    r, A, v, w, Jv, Jw, a, al = W.abl_ra, W.abl_Aa, W.abl_va, W.abl_wa, W.abl_Jva, W.abl_Jwa, W.abl_aa, W.abl_ala
    r2, A2, v2, w2, Jv2, Jw2, a2, al2 = W.abl_rb, W.abl_Ab, W.abl_vb, W.abl_wb, W.abl_Jvb, W.abl_Jwb, W.abl_ab, W.abl_alb
    F, T, tmp = W.ab_F, W.ab_Tq, W.ab_t
    pf_marker, sd_a, sd_b = S.pf_marker, S.sd_a, S.sd_b
    for f in range(pf_marker.shape[0]):
        marker_world(S, W, pf_marker[f], q, u, r, A, v, w, Jv, Jw, a, al, False)
        point_load(S, f, inputs, A, F, T, tmp)
        marker_wrench(S, W, pf_marker[f], q, u, F, T, -1.0, W.ab_pA, S.mk_body[pf_marker[f]])
    for k in range(3):
        T[k] = 0.0
    for sd in range(sd_a.shape[0]):
        marker_world(S, W, sd_a[sd], q, u, r, A, v, w, Jv, Jw, a, al, False)
        marker_world(S, W, sd_b[sd], q, u, r2, A2, v2, w2, Jv2, Jw2, a2, al2, False)
        spring_damper_force(S, sd, r, r2, v, v2, F)
        marker_wrench(S, W, sd_a[sd], q, u, F, T, -1.0, W.ab_pA, S.mk_body[sd_a[sd]])
        marker_wrench(S, W, sd_b[sd], q, u, F, T, 1.0, W.ab_pA, S.mk_body[sd_b[sd]])


@kernel
def marker_wrench(S, W, k, q, u, F, T, sign, out, row):
    """out[row] += sign G^T [A_b^T F; A_b^T T] (6 + n_b entries): the extended force on body b
    of world force F [N] and torque T [N m] at its marker k, G = [[I, -skew(s), Ds], [0, I,
    T Psi]] the marker's velocity map from z_b (marker_local: s position, Ds displacement
    modes, T Psi rotation modes). Ground markers are skipped."""
    b = S.mk_body[k]
    if b < 0:
        return
    n = marker_local(S, W, k, q, u)
    A, s, Ds, Tm, Psi = W.A, W.m_s, W.m_Ds, W.m_T, S.mk_Psi
    f0 = sign * (A[b, 0, 0] * F[0] + A[b, 1, 0] * F[1] + A[b, 2, 0] * F[2])
    f1 = sign * (A[b, 0, 1] * F[0] + A[b, 1, 1] * F[1] + A[b, 2, 1] * F[2])
    f2 = sign * (A[b, 0, 2] * F[0] + A[b, 1, 2] * F[1] + A[b, 2, 2] * F[2])
    m0 = sign * (A[b, 0, 0] * T[0] + A[b, 1, 0] * T[1] + A[b, 2, 0] * T[2])
    m1 = sign * (A[b, 0, 1] * T[0] + A[b, 1, 1] * T[1] + A[b, 2, 1] * T[2])
    m2 = sign * (A[b, 0, 2] * T[0] + A[b, 1, 2] * T[1] + A[b, 2, 2] * T[2])
    out[row, 0] += f0
    out[row, 1] += f1
    out[row, 2] += f2
    out[row, 3] += s[1] * f2 - s[2] * f1 + m0
    out[row, 4] += s[2] * f0 - s[0] * f2 + m1
    out[row, 5] += s[0] * f1 - s[1] * f0 + m2
    for j in range(n):
        t0 = Tm[0, 0] * Psi[k, 0, j] + Tm[0, 1] * Psi[k, 1, j] + Tm[0, 2] * Psi[k, 2, j]
        t1 = Tm[1, 0] * Psi[k, 0, j] + Tm[1, 1] * Psi[k, 1, j] + Tm[1, 2] * Psi[k, 2, j]
        t2 = Tm[2, 0] * Psi[k, 0, j] + Tm[2, 1] * Psi[k, 1, j] + Tm[2, 2] * Psi[k, 2, j]
        out[row, 6 + j] += Ds[0, j] * f0 + Ds[1, j] * f1 + Ds[2, j] * f2 + t0 * m0 + t1 * m1 + t2 * m2


@kernel
def _inertia_pass(S, W):
    """Pass 2, leaves to root: per body the free columns of H (joint coordinates not
    motion-driven, then modes), U = IA H, the factor of D = H^T U + rotor inertia, K = D^-1 U^T
    (first 6 columns: the rest of P zdot_p + c is zero) and D^-1 u (K's column KU); the
    articulated inertia and bias force go to the parent. False when a D is not positive definite."""
    parent, nm, ev, ju, jnv, drive = S.parent, S.nm, S.ev, S.ju, S.jnv, S.drive
    cc, IA, pA, U, K = W.ab_c, W.ab_IA, W.ab_pA, W.ab_U, W.ab_K
    col, nfree, njf, Ia, fa = W.ab_col, W.ab_nf, W.ab_nj, W.ab_Ia, W.ab_fa
    for b in range(S.nb - 1, -1, -1):
        n = nm[b]
        nf = 0
        for k in range(jnv[b]):
            c = ju[b] + k
            if drive[c] != MOTION:
                col[b, nf] = c
                nf += 1
        nj = nf
        for j in range(n):
            col[b, nf] = ev[b] + j
            nf += 1
        nfree[b] = nf
        njf[b] = nj
        if n == 0 and nf == 1:
            if not _rigid_pivot(S, W, b, col[b, 0]):
                return False
        elif not _pivot(S, W, b, nf, nj):
            return False
        p = parent[b]
        if p < 0:
            continue
        # articulated inertia and bias force seen through the joint (6 x 6, frame rows only)
        for i in range(6):
            for j in range(i, 6):   # symmetric: IA - U D^-1 U^T
                acc = IA[b, i, j]
                for ia in range(nf):
                    acc -= U[b, i, ia] * K[b, ia, j]
                Ia[i, j] = acc
                Ia[j, i] = acc
        for i in range(6):
            acc = pA[b, i]
            for j in range(6):
                acc += Ia[i, j] * cc[b, j]
            for ia in range(nf):
                acc += U[b, i, ia] * K[b, ia, KU]
            fa[i] = acc
        _to_parent(W, b, p, nm[p])
    return True


@kernel
def _rigid_pivot(S, W, b, c):
    """Pass 2, a rigid body b with one free joint coordinate c: what _pivot computes for nf = 1,
    in straight-line code (the common case of a chain of hinges).
    False when D is not positive."""
    k = c - S.ju[b]
    Sc, IA, pA, U, K, Lb = W.ab_S, W.ab_IA, W.ab_pA, W.ab_U, W.ab_K, W.ab_Lb
    for i in range(6):
        acc = 0.0
        for j in range(6):
            acc += IA[b, i, j] * Sc[b, j, k]
        U[b, i, 0] = acc
    d = 0.0
    for j in range(6):
        d += Sc[b, j, k] * U[b, j, 0]
    if S.uq[c] >= 0:
        d += S.motor_J[c]
    x = W.ab_tau[c]
    for j in range(6):
        x -= Sc[b, j, k] * pA[b, j]
    if not d > 0.0:
        return False
    if Lb.shape[0] > 0:
        Lb[b, 0, 0] = np.sqrt(d)
    dinv = 1.0 / d
    for j in range(6):
        K[b, 0, j] = U[b, j, 0] * dinv
    K[b, 0, KU] = x * dinv
    return True


@kernel
def _pivot(S, W, b, nf, nj):
    """Pass 2, body b with nf free columns of H (the first nj joint coordinates, W.ab_col[b]):
    U = IA H, the factor of D = H^T U + rotor inertia (into W.ab_Lb[b] when loops need it),
    W.ab_K[b] = D^-1 [U^T (frame columns), u]. False when D is not positive definite."""
    n = S.nm[b]
    m = 6 + n
    ju, uq, motor_J = S.ju, S.uq, S.motor_J
    Sc, IA, pA, U, K, col = W.ab_S, W.ab_IA, W.ab_pA, W.ab_U, W.ab_K, W.ab_col
    D, L, x, tau, Lb = W.ab_D, W.ab_L, W.ab_x, W.ab_tau, W.ab_Lb
    for ia in range(nf):
        if ia < nj:
            k = col[b, ia] - ju[b]
            for i in range(m):
                acc = 0.0
                for j in range(6):
                    acc += IA[b, i, j] * Sc[b, j, k]
                U[b, i, ia] = acc
        else:
            for i in range(m):
                U[b, i, ia] = IA[b, i, 6 + ia - nj]
    for ia in range(nf):
        if ia < nj:
            k = col[b, ia] - ju[b]
            for ib in range(nf):
                acc = 0.0
                for j in range(6):
                    acc += Sc[b, j, k] * U[b, j, ib]
                D[ia, ib] = acc
            c = col[b, ia]
            if uq[c] >= 0:
                D[ia, ia] += motor_J[c]
            acc = tau[c]
            for j in range(6):
                acc -= Sc[b, j, k] * pA[b, j]
            x[ia] = acc
        else:
            for ib in range(nf):
                D[ia, ib] = U[b, 6 + ia - nj, ib]
            x[ia] = -pA[b, 6 + ia - nj]
    if not chol_factor_n(D, L, nf):
        return False
    if Lb.shape[0] > 0:
        for i in range(nf):
            for j in range(i + 1):
                Lb[b, i, j] = L[i, j]
    for ia in range(nf):
        for j in range(6):
            K[b, ia, j] = U[b, j, ia]
        K[b, ia, KU] = x[ia]
    chol_solve_columns(L, K[b], nf, KU + 1)
    return True


@kernel
def _to_parent(W, b, p, n_p):
    """Pass 2, body b: its articulated inertia W.ab_Ia [kg, kg m, kg m^2] and bias force
    W.ab_fa [N, N m] (frame rows, b's axes, ordered [translation; rotation]) seen through P from
    its parent p (n_p modes), added to W.ab_IA[p] += P^T Ia P and W.ab_pA[p] += P^T fa.

    P's frame block is Ehat T, Ehat = blockdiag(E, E) (E: p's axes to b's) and T = [[I, -R],
    [0, I]], R = skew(rp) (rp = W.ab_rp[b] [m]: p's origin to b's, p's axes). With
    [[A, B], [B^T, C]] the blocks of Ehat^T Ia Ehat (the rotation; A and C symmetric, as Ia is,
    so one triangle of each is computed), T^T (.) T is [[A, B - A R], [., C + R B + (R B)^T -
    R A R]] (the shift), the coordinate transform of a spatial inertia (R. Featherstone, Rigid
    Body Dynamics Algorithms, Springer 2008, ch. 2, there with rotation first in the vectors):
    about 200 multiplications where the dense products P^T (Ia P) took 342. A flexible parent's
    modal columns P_j of P have no such structure: Ia P_j by a dense product, then the same
    rotation and shift for the frame rows."""
    P, IA, pA, Ia, fa, X, Y = W.ab_P, W.ab_IA, W.ab_pA, W.ab_Ia, W.ab_fa, W.ab_X, W.ab_T
    r0, r1, r2 = W.ab_rp[b, 0], W.ab_rp[b, 1], W.ab_rp[b, 2]
    # Y = Ia Ehat on the blocks A, B (rows 0-2) and C (rows 3-5, columns 3-5)
    for i in range(6):
        for k in range(3):
            if i < 3:
                Y[i, k] = Ia[i, 0] * P[b, 0, k] + Ia[i, 1] * P[b, 1, k] + Ia[i, 2] * P[b, 2, k]
            Y[i, 3 + k] = Ia[i, 3] * P[b, 0, k] + Ia[i, 4] * P[b, 1, k] + Ia[i, 5] * P[b, 2, k]
    # X = Ehat^T Y: A = X[:3, :3] and C = X[3:, 3:] (upper triangles, mirrored), B = X[:3, 3:]
    for k in range(3):
        for c in range(6):
            if c >= k:
                X[k, c] = P[b, 0, k] * Y[0, c] + P[b, 1, k] * Y[1, c] + P[b, 2, k] * Y[2, c]
            if c >= 3 + k:
                X[3 + k, c] = P[b, 0, k] * Y[3, c] + P[b, 1, k] * Y[4, c] + P[b, 2, k] * Y[5, c]
    for k in range(3):
        for c in range(k):
            X[k, c] = X[c, k]
            X[3 + k, 3 + c] = X[3 + c, 3 + k]
    # the shift: Y[:3, :3] = A R (rows -(rp x A_k)), Y[3:, :3] = R B (columns rp x B_c)
    for k in range(3):
        Y[k, 0] = r2 * X[k, 1] - r1 * X[k, 2]
        Y[k, 1] = r0 * X[k, 2] - r2 * X[k, 0]
        Y[k, 2] = r1 * X[k, 0] - r0 * X[k, 1]
        Y[3, k] = r1 * X[2, 3 + k] - r2 * X[1, 3 + k]
        Y[4, k] = r2 * X[0, 3 + k] - r0 * X[2, 3 + k]
        Y[5, k] = r0 * X[1, 3 + k] - r1 * X[0, 3 + k]
    for c in range(3):
        # column c of R (A R): rp x Y[:3, c]
        ra0 = r1 * Y[2, c] - r2 * Y[1, c]
        ra1 = r2 * Y[0, c] - r0 * Y[2, c]
        ra2 = r0 * Y[1, c] - r1 * Y[0, c]
        for k in range(3):
            IA[p, k, c] += X[k, c]
            tr = X[k, 3 + c] - Y[k, c]
            IA[p, k, 3 + c] += tr
            IA[p, 3 + c, k] += tr
        IA[p, 3, 3 + c] += X[3, 3 + c] + Y[3, c] + Y[3 + c, 0] - ra0
        IA[p, 4, 3 + c] += X[4, 3 + c] + Y[4, c] + Y[3 + c, 1] - ra1
        IA[p, 5, 3 + c] += X[5, 3 + c] + Y[5, c] + Y[3 + c, 2] - ra2
    f = _frame_force(P, b, r0, r1, r2, fa[0], fa[1], fa[2], fa[3], fa[4], fa[5])
    for i in range(6):
        pA[p, i] += f[i]
    # a flexible parent's modal columns P_j: Y[:, j] = Ia P_j, the frame-modal block of IA[p]
    # by the same rotation and shift, the modal-modal block P_i^T Y_j, the modal forces P_j^T fa
    for j in range(n_p):
        for i in range(6):
            acc = 0.0
            for k in range(6):
                acc += Ia[i, k] * P[b, k, 6 + j]
            Y[i, j] = acc
    for j in range(n_p):
        f = _frame_force(P, b, r0, r1, r2, Y[0, j], Y[1, j], Y[2, j], Y[3, j], Y[4, j], Y[5, j])
        for i in range(6):
            IA[p, i, 6 + j] += f[i]
            IA[p, 6 + j, i] += f[i]
        for i in range(j + 1):
            acc = 0.0
            for k in range(6):
                acc += P[b, k, 6 + i] * Y[k, j]
            IA[p, 6 + i, 6 + j] += acc
            if i != j:
                IA[p, 6 + j, 6 + i] += acc
        acc = 0.0
        for k in range(6):
            acc += P[b, k, 6 + j] * fa[k]
        pA[p, 6 + j] += acc


@kernel(inline=True)
def _frame_force(P, b, r0, r1, r2, f0, f1, f2, f3, f4, f5):
    """The frame rows of P^T f for a 6-vector f = [f_v; f_w] in b's axes (P = W.ab_P, rp =
    (r0, r1, r2)): [E^T f_v; E^T f_w + rp x E^T f_v], a force and moment moved to p's origin."""
    g0 = P[b, 0, 0] * f0 + P[b, 1, 0] * f1 + P[b, 2, 0] * f2
    g1 = P[b, 0, 1] * f0 + P[b, 1, 1] * f1 + P[b, 2, 1] * f2
    g2 = P[b, 0, 2] * f0 + P[b, 1, 2] * f1 + P[b, 2, 2] * f2
    return (g0, g1, g2,
            P[b, 0, 0] * f3 + P[b, 1, 0] * f4 + P[b, 2, 0] * f5 + r1 * g2 - r2 * g1,
            P[b, 0, 1] * f3 + P[b, 1, 1] * f4 + P[b, 2, 1] * f5 + r2 * g0 - r0 * g2,
            P[b, 0, 2] * f3 + P[b, 1, 2] * f4 + P[b, 2, 2] * f5 + r0 * g1 - r1 * g0)


@kernel
def _acceleration_pass(S, W, udot):
    """Pass 3, root to leaves: free accelerations into udot, zdot of every body into ab_zd,
    and the torque [N m] (force [N]) of each motion drive into W.tau_drive:
    H_k^T (IA zdot + pA) + rotor inertia * qdd - the joint's own spring/damper force."""
    parent, nm, ju, jnv, drive, uq, motor_J = S.parent, S.nm, S.ju, S.jnv, S.drive, S.uq, S.motor_J
    P, Sc, cc, IA, pA, zd = W.ab_P, W.ab_S, W.ab_c, W.ab_IA, W.ab_pA, W.ab_zd
    K, col, nfree, njf = W.ab_K, W.ab_col, W.ab_nf, W.ab_nj
    x, a6, fa, tau, tau_drive = W.ab_x, W.ab_a6, W.ab_fa, W.ab_tau, W.tau_drive
    for b in range(S.nb):
        p = parent[b]
        m = 6 + nm[b]
        if p >= 0:
            mp = _map_motion(P, W.ab_rp, b, zd, p, nm[p])
            for i in range(6):
                a6[i] = cc[b, i] + mp[i]
        else:
            for i in range(6):
                a6[i] = cc[b, i]
        nf = nfree[b]
        nj = njf[b]
        for ia in range(nf):
            acc = K[b, ia, KU]
            for j in range(6):
                acc -= K[b, ia, j] * a6[j]
            x[ia] = acc
            udot[col[b, ia]] = acc
        for i in range(6):
            acc = a6[i]
            for ia in range(nj):
                acc += Sc[b, i, col[b, ia] - ju[b]] * x[ia]
            zd[b, i] = acc
        for ia in range(nj, nf):
            zd[b, 6 + ia - nj] = x[ia]
        if nj == jnv[b]:
            continue
        for i in range(6):
            acc = pA[b, i]
            for j in range(m):
                acc += IA[b, i, j] * zd[b, j]
            fa[i] = acc
        for k in range(jnv[b]):
            c = ju[b] + k
            if drive[c] == MOTION:
                acc = -tau[c]
                for i in range(6):
                    acc += Sc[b, i, k] * fa[i]
                if uq[c] >= 0:
                    acc += motor_J[c] * udot[c]
                tau_drive[c] = acc
