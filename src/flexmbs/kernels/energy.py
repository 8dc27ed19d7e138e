"""Mechanical energies [J] (numba): kinetic, gravitational potential, strain, and spring."""

import numpy as np

from .body import first_moment
from .kinematics import marker_world
from .linalg import dot, mv, quad
from .settings import kernel


@kernel
def kinetic(S, W, q, u):
    """Kinetic energy [J] of the bodies and rotors, 1/2 u^T M u without the rods' share
    (energies adds it), summed as the mass matrix is (kernels/inertia.py): 1/2 z_b^T Mb z_b per
    body (z_b = [v; w; etad] in body axes, Mb its (6+n)^2 mass matrix), 1/2 J_c u_c^2 per rotor.
    The bodies' terms are those the dynamics at (q, u) left in W.e_kin (body.kinetic_energy) in
    an output sample (W.sampling), which so builds no body's mass matrix twice (a
    flexible coupler's 25 mass points with foreshortening were a quarter of the crank-rocker's
    output sample). q, u [SI] hold prescribed values."""
    T = 0.0
    for b in range(S.nb):
        T += W.e_kin[b]
    for c in range(S.nv):
        T += 0.5 * S.motor_J[c] * u[c] * u[c]
    return T


@kernel
def energies(S, W, t, q, u, inputs, out):
    """out = [kinetic, gravity potential, strain, spring]. q, u hold prescribed values. Needs the
    bodies' world poses and motion W.r, W.A, W.v, W.w, W.a, W.al and (W.sampling set) kinetic
    energies W.e_kin at (q, u), as every route's dynamics.accelerations leaves them outside an
    integrator's run (W.rates_only clear: the recursion's first pass, the composite route's
    kinematics.forward), so that an output sample does not compute them twice (nor the world
    Jacobians that forward also fills: an output sample of the 3-frame spin-up beam 12.2-12.4 ->
    10.0 us)."""
    out[0] = kinetic(S, W, q, u)
    vg = 0.0
    ve = 0.0
    s = W.e_s
    for b in range(S.nb):
        n = S.nm[b]
        eta = q[S.eq[b]:S.eq[b] + n]
        m = first_moment(S, b, eta, s)
        mv(W.A[b], s, W.e_t)
        for k in range(3):
            vg -= S.gravity[k] * (m * W.r[b, k] + W.e_t[k])
        ve += 0.5 * quad(eta, S.Ke[b, :n, :n], eta)
    out[2] = ve
    vs = 0.0
    for c in range(S.nv):
        if S.uq[c] >= 0:
            vs += 0.5 * S.k_spring[c] * (q[S.uq[c]] - S.q_preload[c]) ** 2
    for k in range(S.sd_a.shape[0]):
        marker_world(S, W, S.sd_a[k], q, u, W.e_ra, W.e_A, W.e_v, W.e_w, W.e_Jv, W.e_Jw, W.e_a, W.e_al, False)
        marker_world(S, W, S.sd_b[k], q, u, W.e_rb, W.e_A, W.e_vb, W.e_w, W.e_Jv, W.e_Jw, W.e_a, W.e_al, False)
        # a rod's mass moves with its ends' velocities linearly interpolated: m/6 (va^2 + va.vb + vb^2)
        out[0] += S.sd_m[k] / 6.0 * (dot(W.e_v, W.e_v) + dot(W.e_v, W.e_vb) + dot(W.e_vb, W.e_vb))
        d = W.e_t
        for i in range(3):
            d[i] = W.e_rb[i] - W.e_ra[i]
        vs += 0.5 * S.sd_k[k] * (np.sqrt(dot(d, d)) - S.sd_l0[k]) ** 2
        for i in range(3):
            vg -= 0.5 * S.sd_m[k] * S.gravity[i] * (W.e_ra[i] + W.e_rb[i])
    out[1] = vg
    out[3] = vs
