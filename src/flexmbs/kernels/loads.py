"""Applied loads (numba): point forces and torques on markers, spring-dampers between markers
(and the axial force of elastic rods, whose mass is in kernels/inertia.py). `point_load` and
`spring_damper_force` give the world force; the composite route maps it through world
Jacobians (`load_forces`, after the kinematics stage), the recursive one through each marker's
local Jacobian (kernels/articulated.py)."""

import numpy as np

from .kinematics import marker_world
from .linalg import copy1, dot, mtv_add, mv
from .settings import kernel


@kernel
def load_forces(S, W, q, u, inputs, Q):
    """Q += the generalised forces of every point force/torque and spring-damper [N, N m]."""
    ra, Aa, va, wa, Jva, Jwa, aa, ala = W.l_ra, W.l_Aa, W.l_va, W.l_wa, W.l_Jva, W.l_Jwa, W.l_aa, W.l_ala
    rb, Ab, vb, wb, Jvb, Jwb, ab, alb = W.l_rb, W.l_Ab, W.l_vb, W.l_wb, W.l_Jvb, W.l_Jwb, W.l_ab, W.l_alb
    F = W.l_F
    T = W.l_T
    for f in range(S.pf_marker.shape[0]):
        marker_world(S, W, S.pf_marker[f], q, u, ra, Aa, va, wa, Jva, Jwa, aa, ala, True)
        point_load(S, f, inputs, Aa, F, T, W.l_t)
        mtv_add(Jva, F, Q, 1.0)
        mtv_add(Jwa, T, Q, 1.0)
    for s in range(S.sd_a.shape[0]):
        marker_world(S, W, S.sd_a[s], q, u, ra, Aa, va, wa, Jva, Jwa, aa, ala, True)
        marker_world(S, W, S.sd_b[s], q, u, rb, Ab, vb, wb, Jvb, Jwb, ab, alb, True)
        spring_damper_force(S, s, ra, rb, va, vb, F)
        mtv_add(Jva, F, Q, 1.0)
        mtv_add(Jvb, F, Q, -1.0)


@kernel
def point_load(S, f, inputs, A, F, T, tmp):
    """World force F [N] and torque T [N m] of point load f; A: its marker's world rotation
    (a body-fixed load is given in marker axes). tmp: 3-vector scratch."""
    i0 = S.pf_input[f]
    for k in range(3):
        F[k] = S.pf_force[f, k] + (inputs[i0 + k] if i0 >= 0 else 0.0)
        T[k] = S.pf_torque[f, k] + (inputs[i0 + 3 + k] if i0 >= 0 else 0.0)
    if S.pf_frame[f] == 1:
        mv(A, F, tmp)
        copy1(tmp, F)
        mv(A, T, tmp)
        copy1(tmp, T)


@kernel
def spring_damper_force(S, s, ra, rb, va, vb, F):
    """World force F [N] that spring-damper s applies on its first marker (the second gets -F),
    from the markers' world positions ra, rb [m] and velocities va, vb [m/s]. A zero rest length
    is an isotropic bushing F = k d + c d' (no direction to lose); otherwise the force acts along
    the line between the markers (none when they coincide)."""
    for k in range(3):
        F[k] = rb[k] - ra[k]
    if S.sd_l0[s] == 0.0:
        for k in range(3):
            F[k] = S.sd_k[s] * F[k] + S.sd_c[s] * (vb[k] - va[k])
        return
    ln = np.sqrt(dot(F, F))
    if ln < 1e-12:
        for k in range(3):
            F[k] = 0.0
        return
    ldot = 0.0
    for k in range(3):
        F[k] /= ln
        ldot += F[k] * (vb[k] - va[k])
    f_ = S.sd_k[s] * (ln - S.sd_l0[s]) + S.sd_c[s] * ldot
    for k in range(3):
        F[k] *= f_
