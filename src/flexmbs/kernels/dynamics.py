"""Forward dynamics in minimal coordinates (numba): the ODE right-hand side.

    M(q) udot = Q(q, u, t, inputs)

`accelerations` dispatches between two independent formulations of these equations: the
articulated-body recursion (kernels/articulated.py, O(n) on trees; closed loops through
kernels/loop_closure.py) and the composite route below (everything, massive rods included),
evaluated in named stages, as MuJoCo's engine_forward does. The dispatch happens when numba
types a call, on the route the System's box carries in its type (structs.ROUTES): a model
compiles its own route's kernels only (a tree neither the loop closure nor the other route),
and each entry point holds the object code of one route.

1. drives      apply_prescribed: motion-driven coordinates take their profile values (exact
               derivatives), their accelerations are known             (kernels/drives.py)
2. kinematics  forward: body poses, velocities, velocity-product accelerations and world
               Jacobians, root to leaves                               (kernels/kinematics.py)
3. inertia     inertia: the mass matrix M and the bodies' inertial, gravity and elastic forces
                                                                       (kernels/inertia.py)
4. forces      joint_forces + load_forces: springs, dampers, torque inputs, servos, point
               forces, spring-dampers                                  (drives.py, loads.py)
5. solve       composite_accelerations: prescribed rows moved to the right-hand side, Cholesky, loop
               multipliers G^T lambda of cut joints                    (here, kernels/constraints.py)
"""

import numpy as np
from numba.extending import overload

from .articulated import articulated_accelerations
from .constraints import constrained_solve, constraint_rows
from .drives import MOTION, apply_prescribed, joint_forces
from .inertia import inertia
from .kinematics import forward
from .loop_closure import close_loops
from .linalg import chol_factor, chol_solve, copy1, copy2, dot, fill1
from .loads import load_forces
from .motor import current_rates
from .rotations import quat_rate
from .settings import KERNEL, kernel


@kernel
def assemble(S, W, t, q, u, inputs):
    """Stages 2-4: W.M (nv x nv) and W.Q (nv) at (t, q, u) and the motor currents W.xi; q, u
    must hold prescribed values."""
    forward(S, W, q, u)
    inertia(S, W, q, u)
    joint_forces(S, t, q, u, W.xi, inputs, W.Q)
    load_forces(S, W, q, u, inputs, W.Q)


def accelerations(S, W, t, q, u, inputs, udot):
    """Solve for udot at (t, q, u) (prescribed values applied in place) by the System's route.
    Returns False if the mass matrix (a pivot block) is not positive definite. W.tau_drive gets
    the motion drives' torques. Kernels only (numba picks the route's kernel, _route)."""
    raise TypeError("dynamics.accelerations is called from numba kernels only")


# numba compiles what an overload returns as the function called: returning the route's own
# Python function (not a function that calls its dispatcher) adds no compiled layer, each of
# which would hold the object code of all it calls once more.
@overload(accelerations, jit_options=KERNEL)
def _route(S, W, t, q, u, inputs, udot):
    if S.route == "recursive tree":
        return articulated_accelerations.py_func
    if S.route == "recursive loops":
        return recursive_accelerations.py_func
    return composite_accelerations.py_func


def _on_loops(kernel):
    """A function of (S, W, q, u, udot, ok) for kernels that numba compiles as `kernel` (which
    closes the loops on udot and returns ok) for a System with loop rows, and as `ok` for a
    tree, which so never compiles `kernel`."""

    def closed(S, W, q, u, udot, ok):
        raise TypeError("a loop closure is called from numba kernels only")

    @overload(closed, jit_options=KERNEL)
    def _typed(S, W, q, u, udot, ok):
        if S.route.endswith("tree"):
            return lambda S, W, q, u, udot, ok: ok
        return kernel.py_func

    return closed


@kernel
def recursive_accelerations(S, W, t, q, u, inputs, udot):
    """The articulated-body recursion over the tree (kernels/articulated.py), its loop rows
    closed on its factorisation (kernels/loop_closure.py); same contract as `accelerations`."""
    ok = articulated_accelerations(S, W, t, q, u, inputs, udot)
    return _closed_on_recursion(S, W, q, u, udot, ok)


@kernel
def composite_accelerations(S, W, t, q, u, inputs, udot):
    """Stages 1-5 of the composite route; same contract as `accelerations`."""
    apply_prescribed(S, t, q, u, inputs, udot)
    assemble(S, W, t, q, u, inputs)
    M = W.M
    nv = S.nv
    rhs_ = W.s_rhs
    copy1(W.Q, rhs_)
    npres = 0
    for c in range(nv):
        if S.drive[c] == MOTION:
            qdd = udot[c]
            copy1(M[c], W.s_Mrow[npres])
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
    ok = _closed_on_matrix(S, W, q, u, udot, ok)
    nc = S.cr_a.shape[0]
    npres = 0
    for c in range(nv):
        if S.drive[c] == MOTION:
            W.tau_drive[c] = dot(W.s_Mrow[npres], udot) - W.Q[c]
            for r in range(nc):
                W.tau_drive[c] += W.c_G0[r, c] * W.c_lam[r]
            npres += 1
    return ok


@kernel
def composite_loops(S, W, q, u, udot, ok):
    """The loop multipliers of the composite route on the tree's udot (stage 5), with udot and
    ok of the Cholesky solve; returns ok."""
    # evaluated whatever happens next, so that outputs never show a previous call's values
    constraint_rows(S, W, q, u)
    copy2(W.c_G, W.c_G0)
    fill1(W.c_lam, 0.0)
    if not ok:
        return False
    # prescribed coordinates have a known udot: their columns go to the right-hand side
    for c in range(S.nv):
        if S.drive[c] == MOTION:
            for r in range(S.cr_a.shape[0]):
                W.c_gam[r] -= W.c_G[r, c] * udot[c]
                W.c_G[r, c] = 0.0
    return constrained_solve(S, W, udot)


_closed_on_recursion = _on_loops(close_loops)
_closed_on_matrix = _on_loops(composite_loops)


@kernel
def cholesky_solve(M, b, L):
    """Solve M x = b in place (b <- x) for symmetric positive definite M via L (workspace)."""
    if not chol_factor(M, L):
        return False
    chol_solve(L, b)
    return True


@kernel
def qdot_of(S, q, u, qd):
    """Position-coordinate rates from velocities into qd[:nq]: qdot = u except for quaternions.
    (Python calls it as entry.qdot_of.)"""
    uq, nm, eq, ev, quat_q = S.uq, S.nm, S.eq, S.ev, S.quat_q
    for c in range(S.nv):
        if uq[c] >= 0:
            qd[uq[c]] = u[c]
    for i in range(S.nb):
        for k in range(nm[i]):
            qd[eq[i] + k] = u[ev[i] + k]
        k = quat_q[i]
        if k >= 0:
            quat_rate(q, k, u, S.quat_u[i], qd)


@kernel
def rhs(S, W, t, x, inputs, xd):
    """First-order form x = [q; u; i] (i: the motor currents [A]): xd = [qdot; udot; idot].
    Returns False on a singular mass matrix. Python calls it as solvers.common.f_eval. A kernel
    of its own, not inlined into f_eval: there, under numba's runtime, each of the four reads of
    a workspace array below took a reference count (an atomic increment and decrement), 4 % of
    the double pendulum's right-hand side (perf_rhs.py)."""
    nq, nv = S.nq, S.nv
    q = W.xq
    u = W.xu
    udot = W.xud
    cur = W.xi
    for i in range(nq):
        q[i] = x[i]
    for i in range(nv):
        u[i] = x[nq + i]
    for i in range(cur.shape[0]):
        cur[i] = x[nq + nv + i]
    ok = accelerations(S, W, t, q, u, inputs, udot)
    for i in range(nv):
        xd[nq + i] = udot[i]
    qdot_of(S, q, u, xd)
    current_rates(S, u, cur, inputs, xd, nq + nv)
    return ok


@kernel
def normalize_quaternions(S, x):
    """Project quaternion coordinates back to unit norm (after an integration step)."""
    for i in range(S.nb):
        k = S.quat_q[i]
        if k >= 0:
            nrm = np.sqrt(x[k] ** 2 + x[k + 1] ** 2 + x[k + 2] ** 2 + x[k + 3] ** 2)
            for j in range(4):
                x[k + j] /= nrm
