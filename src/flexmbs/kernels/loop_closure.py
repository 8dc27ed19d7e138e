"""Closed loops on the articulated-body recursion (numba): the loop-closing rows of cut joints
solved with the recursion's factorisation instead of a dense mass matrix.

The equations are those of kernels/constraints.py,

    M udot = Q - G^T lambda,   (G M^-1 G^T) lambda = G udot_free - gam,

with udot_free the tree's accelerations (kernels/articulated.py). Each kept row r acts on at
most two bodies: as the extended forces w_a, w_b (body axes) whose virtual power on the
extended velocities is the row's rate, G_r u = w_a . z_a + w_b . z_b (constraints.constraint_row
gives their world forces and torques, articulated.marker_wrench maps them). So

- G udot_free = w . (zdot - cb) at the row's bodies (zdot - cb = J udot, the accelerations
  without velocity products);
- column r of M^-1 G^T is the tree's response to the unit force -w_r (a bias force, as loads
  are): one leaves-to-root sweep along the paths of its two bodies with the stored articulated
  inertias and pivot factors, then one root-to-leaves sweep over the subtrees below those
  paths' tops, which are the only bodies it moves (Featherstone, Rigid Body Dynamics
  Algorithms, Springer 2008, sec. 8.3: the inverse operational-space inertia from the
  articulated-body factorisation, applied row by row);
- G M^-1 G^T couples two rows only when their subtrees meet (S.cr_nbr): it is filled and
  factored within that envelope (linalg.env_chol_factor), so a chain of loops, each sharing a
  subtree with its neighbours only, costs O(loops);
- the multipliers act back through one more pair of sweeps over the whole tree.

Motion-driven coordinates are not free columns of the recursion, so their rows of M^-1 G^T
are zero, as in the composite route (which moves them to the right-hand side), and their drive
torques gain the constraint forces through the subtree force IA zdot + pA.
"""


from .articulated import marker_wrench
from .constraints import constraint_row
from .drives import MOTION
from .linalg import chol_solve_n, env_chol_factor, env_chol_solve
from .settings import kernel


@kernel
def close_loops(S, W, q, u, udot, ok):
    """Apply the kept loop rows to the tree's solution in udot (ok: the recursion succeeded;
    the rows are evaluated either way, so that outputs show this state's residuals).
    Fills W.c_g, W.c_gam, W.c_dir, W.c_lam (0 for dropped rows) and corrects W.ab_zd and
    W.tau_drive. Returns False when the recursion failed or G M^-1 G^T is not positive definite
    (a singular pose)."""
    nc = S.cr_a.shape[0]
    wa, wb, lam = W.c_za, W.c_zb, W.c_lam
    for r in range(nc):
        constraint_row(S, W, r, q, u, False)
        lam[r] = 0.0
        for k in range(wa.shape[1]):
            wa[r, k] = 0.0
            wb[r, k] = 0.0
        fw = W.c_fw[r]
        marker_wrench(S, W, S.cr_a[r], q, u, fw[0:3], fw[3:6], 1.0, wa, r)
        marker_wrench(S, W, S.cr_b[r], q, u, fw[6:9], fw[9:12], 1.0, wb, r)
    if not ok:
        return False
    act, nbr_ptr, nbr, env = S.cr_act, S.cr_nbr_ptr, S.cr_nbr, S.cr_env
    na = act.shape[0]
    Sc, LS, rhs_ = W.c_S, W.c_LS, W.c_r
    zT, zd, cb, topon, count = W.ab_zT, W.ab_zd, W.ab_cb, W.ab_topon, W.ab_count
    # G udot_free - gam, from the tree's accelerations less their velocity products
    for b in range(S.nb):
        for k in range(zd.shape[1]):
            zT[b, k] = zd[b, k] - cb[b, k] if k < 6 else zd[b, k]
    for i in range(na):
        r = act[i]
        rhs_[i] = _row_rate(S, r, wa, wb, zT, topon, -1) - W.c_gam[r]
    for i in range(na):
        for j in range(env[i], i + 1):
            Sc[i, j] = 0.0
        count[0] += 1
        _unit_solve(S, W, act[i], count[0])
        for jj in range(nbr_ptr[i], nbr_ptr[i + 1]):
            Sc[i, nbr[jj]] = _row_rate(S, act[nbr[jj]], wa, wb, zT, topon, count[0])
    if not env_chol_factor(Sc, LS, env, na):
        return False
    env_chol_solve(LS, env, rhs_, na)
    for i in range(na):
        lam[act[i]] = rhs_[i]
    _apply_multipliers(S, W, udot)
    return True


@kernel
def _row_rate(S, r, wa, wb, Z, topon, stamp):
    """w_a . Z[a] + w_b . Z[b] for row r (bodies a, b of its markers; the ground contributes
    nothing). stamp >= 0: Z holds a unit solve that moved only the subtrees whose top is
    marked with stamp in topon; a body elsewhere has Z = 0."""
    acc = 0.0
    for side in range(2):
        k = S.cr_a[r] if side == 0 else S.cr_b[r]
        w = wa if side == 0 else wb
        b = S.mk_body[k]
        if b < 0 or (stamp >= 0 and topon[S.tree_top[b]] != stamp):
            continue
        for j in range(6 + S.nm[b]):
            acc += w[r, j] * Z[b, j]
    return acc


@kernel
def _unit_solve(S, W, r, stamp):
    """W.ab_zT = the extended accelerations caused by the unit force -w of row r (column r of
    J M^-1 G^T), on the subtrees below the tops of its bodies, which get topon = stamp."""
    parent, top, nm = S.parent, S.tree_top, S.nm
    pT, on, topon = W.ab_pT, W.ab_on, W.ab_topon
    a = S.mk_body[S.cr_a[r]]
    b = S.mk_body[S.cr_b[r]]
    for side in range(2):
        e = a if side == 0 else b
        while e >= 0:
            for k in range(pT.shape[1]):
                pT[e, k] = 0.0
            on[e] = stamp
            e = parent[e]
    for k in range(6 + nm[a] if a >= 0 else 0):
        pT[a, k] -= W.c_za[r, k]
    for k in range(6 + nm[b] if b >= 0 else 0):
        pT[b, k] -= W.c_zb[r, k]
    # leaves to root along the union of the two paths (tree order: a parent precedes its children)
    x1, x2 = a, b
    while x1 >= 0 or x2 >= 0:
        c = max(x1, x2)
        _sweep_up(S, W, c)
        if x1 == c:
            x1 = parent[x1]
        if x2 == c:
            x2 = parent[x2]
    for side in range(2):
        e = a if side == 0 else b
        if e < 0 or topon[top[e]] == stamp:
            continue
        t = top[e]
        topon[t] = stamp
        for idx in range(S.tree_sub_ptr[t], S.tree_sub_ptr[t + 1]):
            c = S.tree_sub[idx]
            _sweep_down(S, W, c, on[c] == stamp)


@kernel
def _sweep_up(S, W, b):
    """Leaves-to-root step of a unit solve at body b: ab_DuT[b] = D^-1 (-H^T pT_b) over the free
    columns, and the parent's pT += P^T (pT_b + U DuT_b) (no velocity products: c = 0)."""
    nf, nj, col, ju = W.ab_nf[b], W.ab_nj[b], W.ab_col, S.ju[b]
    Sc, U, P, pT, DuT, x, fa = W.ab_S, W.ab_U, W.ab_P, W.ab_pT, W.ab_DuT, W.ab_x, W.ab_fa
    for ia in range(nf):
        if ia < nj:
            k = col[b, ia] - ju
            acc = 0.0
            for j in range(6):
                acc -= Sc[b, j, k] * pT[b, j]
            x[ia] = acc
        else:
            x[ia] = -pT[b, 6 + ia - nj]
    chol_solve_n(W.ab_Lb[b], x, nf)
    for ia in range(nf):
        DuT[b, ia] = x[ia]
    p = S.parent[b]
    if p < 0:
        return
    for i in range(6):
        acc = pT[b, i]
        for ia in range(nf):
            acc += U[b, i, ia] * x[ia]
        fa[i] = acc
    for j in range(6 + S.nm[p]):
        acc = 0.0
        for i in range(6):
            acc += P[b, i, j] * fa[i]
        pT[p, j] += acc


@kernel
def _sweep_down(S, W, b, on_path):
    """Root-to-leaves step of a unit solve at body b: free-column accelerations ab_yT[b] =
    DuT_b (on the forces' paths, else 0) - K P zT_parent, and ab_zT[b]."""
    nf, nj, col, ju, p = W.ab_nf[b], W.ab_nj[b], W.ab_col, S.ju[b], S.parent[b]
    Sc, K, P, DuT, zT, yT, a6 = W.ab_S, W.ab_K, W.ab_P, W.ab_DuT, W.ab_zT, W.ab_yT, W.ab_a6
    for i in range(6):
        acc = 0.0
        if p >= 0:
            for j in range(6 + S.nm[p]):
                acc += P[b, i, j] * zT[p, j]
        a6[i] = acc
    for ia in range(nf):
        acc = DuT[b, ia] if on_path else 0.0
        for j in range(6):
            acc -= K[b, ia, j] * a6[j]
        yT[b, ia] = acc
    for i in range(6):
        acc = a6[i]
        for ia in range(nj):
            acc += Sc[b, i, col[b, ia] - ju] * yT[b, ia]
        zT[b, i] = acc
    for ia in range(nj, nf):
        zT[b, 6 + ia - nj] = yT[b, ia]


@kernel
def _apply_multipliers(S, W, udot):
    """udot -= M^-1 G^T lambda by one pair of sweeps over the whole tree with the force
    sum_r lambda_r w_r; the same into ab_zd, and the motion drives' torques gain
    H^T (pT + IA zT), the constraint part of their subtree force."""
    pT, zT, yT, zd, IA, lam = W.ab_pT, W.ab_zT, W.ab_yT, W.ab_zd, W.ab_IA, W.c_lam
    for b in range(S.nb):
        for k in range(pT.shape[1]):
            pT[b, k] = 0.0
    for i in range(S.cr_act.shape[0]):
        r = S.cr_act[i]
        for side in range(2):
            b = S.mk_body[S.cr_a[r] if side == 0 else S.cr_b[r]]
            w = W.c_za if side == 0 else W.c_zb
            if b >= 0:
                for k in range(6 + S.nm[b]):
                    pT[b, k] += lam[r] * w[r, k]
    for b in range(S.nb - 1, -1, -1):
        _sweep_up(S, W, b)
    for b in range(S.nb):
        _sweep_down(S, W, b, True)
        for ia in range(W.ab_nf[b]):
            udot[W.ab_col[b, ia]] += yT[b, ia]
        for k in range(6 + S.nm[b]):
            zd[b, k] += zT[b, k]
        if W.ab_nj[b] == S.jnv[b]:
            continue
        for kk in range(S.jnv[b]):
            c = S.ju[b] + kk
            if S.drive[c] == MOTION:
                acc = 0.0
                for i in range(6):
                    f = pT[b, i]
                    for j in range(6 + S.nm[b]):
                        f += IA[b, i, j] * zT[b, j]
                    acc += W.ab_S[b, i, kk] * f
                W.tau_drive[c] += acc
