"""The mass matrix (numba): stage 2 of the composite forward dynamics, in one place.

    M(q) = sum_b Jb^T Mb Jb  +  diag(rotor inertia)  +  sum_rods m/6 [Ja; Jb]^T [[2, 1], [1, 2]] [Ja; Jb]

with Jb the body-frame Jacobian of body b (z_b = [v; w; etad] = Jb u, body axes) and Mb its
(6+n)^2 mass matrix (kernels/body.py). The same per-body terms give the bodies' share of the
generalised forces, which is why this stage also fills Q with them (Kane's equations):

    Q_bodies = sum_b Jb^T (Fb - hb - Mb cb) - K eta - D etad

(hb: velocity-product force, Fb: gravity, cb = Jbdot u). Needs the kinematics stage
(kinematics.forward) done at (q, u).
"""


from .body import body_terms, kinetic_energy
from .kinematics import marker_world
from .linalg import fill1, fill2
from .settings import kernel


@kernel(inline=True)
def body_velocity(W, b, z):
    """z[:6] = [A^T v; A^T w]: body b's velocity [m/s, rad/s] in its own axes (kinematics.forward
    done)."""
    A = W.A[b]
    for i in range(3):
        z[i] = A[0, i] * W.v[b, 0] + A[1, i] * W.v[b, 1] + A[2, i] * W.v[b, 2]
        z[3 + i] = A[0, i] * W.w[b, 0] + A[1, i] * W.w[b, 1] + A[2, i] * W.w[b, 2]


@kernel
def _body_jacobian(S, W, b):
    """W.i_J = [A^T Jv; A^T Jw] (6 x nv): the frame rows of body b's body-frame Jacobian (its
    modal rows are unit rows, which _add_body applies without storing them); its body-frame
    velocity W.i_z; the frame rows of its velocity-product term, W.i_c = [A^T a - w x v; A^T al]
    (the modal rows are zero); W.i_g = gravity in body axes."""
    J = W.i_J
    A = W.A[b]
    Jv = W.Jv[b]
    Jw = W.Jw[b]
    for c in range(S.nv):
        for i in range(3):
            J[i, c] = A[0, i] * Jv[0, c] + A[1, i] * Jv[1, c] + A[2, i] * Jv[2, c]
            J[3 + i, c] = A[0, i] * Jw[0, c] + A[1, i] * Jw[1, c] + A[2, i] * Jw[2, c]
    z = W.i_z
    cb = W.i_c
    body_velocity(W, b, z)
    for i in range(3):
        cb[i] = A[0, i] * W.a[b, 0] + A[1, i] * W.a[b, 1] + A[2, i] * W.a[b, 2]
        cb[3 + i] = A[0, i] * W.al[b, 0] + A[1, i] * W.al[b, 1] + A[2, i] * W.al[b, 2]
        W.i_g[i] = A[0, i] * S.gravity[0] + A[1, i] * S.gravity[1] + A[2, i] * S.gravity[2]
    cb[0] -= z[4] * z[2] - z[5] * z[1]
    cb[1] -= z[5] * z[0] - z[3] * z[2]
    cb[2] -= z[3] * z[1] - z[4] * z[0]


@kernel
def inertia(S, W, q, u):
    """Fill W.M (nv x nv) and put the bodies' and rods' inertial, gravity and elastic forces in
    W.Q (overwritten); in an output sample (W.sampling) each body's kinetic energy into
    W.e_kin."""
    M = W.M
    Q = W.Q
    nv = S.nv
    fill2(M, 0.0)
    fill1(Q, 0.0)
    Mb, hb, Fb, J, cb, MJ = W.i_M, W.i_h, W.i_F, W.i_J, W.i_c, W.i_MJ
    for b in range(S.nb):
        n = S.nm[b]
        nb6 = 6 + n
        _body_jacobian(S, W, b)
        e0 = S.eq[b]
        v0 = S.ev[b]
        eta = q[e0:e0 + n]
        etad = u[v0:v0 + n]
        body_terms(S, W, b, eta, etad, W.i_z[0:3], W.i_z[3:6], W.i_g, Mb, hb, Fb)
        if W.sampling[0] != 0.0:   # energy.kinetic reads it
            W.e_kin[b] = kinetic_energy(Mb, W.i_z[0:3], W.i_z[3:6], etad, n)
        for i in range(nb6):
            acc = Fb[i] - hb[i]
            for j in range(6):     # Jbdot u has no modal rows
                acc -= Mb[i, j] * cb[j]
            Fb[i] = acc
        for i in range(n):
            acc = 0.0
            for j in range(n):
                acc += S.Ke[b, i, j] * eta[j] + S.De[b, i, j] * etad[j]
            Fb[6 + i] -= acc
        _add_body(Mb, Fb, J, MJ, n, v0, M, Q)
    for r in range(nv):
        for c in range(r):
            M[r, c] = M[c, r]
    for c in range(nv):
        M[c, c] += S.motor_J[c]
    for s in range(S.sd_a.shape[0]):
        if S.sd_m[s] > 0.0:
            _rod(S, W, s, q, u, M, Q)


@kernel(inline=True)
def _add_body(Mb, Fb, J, MJ, n, v0, M, Q):
    """M += Jb^T Mb Jb (upper triangle) and Q += Jb^T Fb for a body with n modes, whose
    body-frame Jacobian Jb stacks the frame rows J (6 x nv) on unit rows, one per modal rate
    at columns v0, v0 + 1, ... (the unit rows cost additions, not products; MJ scratch)."""
    nv = M.shape[0]
    for i in range(6 + n):
        for c in range(nv):
            MJ[i, c] = Mb[i, 0] * J[0, c] + Mb[i, 1] * J[1, c] + Mb[i, 2] * J[2, c] \
                + Mb[i, 3] * J[3, c] + Mb[i, 4] * J[4, c] + Mb[i, 5] * J[5, c]
        for k in range(n):
            MJ[i, v0 + k] += Mb[i, 6 + k]
    for r in range(nv):
        acc = 0.0
        for i in range(6):
            acc += J[i, r] * Fb[i]
        Q[r] += acc
        for c in range(r, nv):
            M[r, c] += J[0, r] * MJ[0, c] + J[1, r] * MJ[1, c] + J[2, r] * MJ[2, c] \
                + J[3, r] * MJ[3, c] + J[4, r] * MJ[4, c] + J[5, r] * MJ[5, c]
    for k in range(n):
        Q[v0 + k] += Fb[6 + k]
        for c in range(v0 + k, nv):
            M[v0 + k, c] += MJ[6 + k, c]


@kernel
def _rod(S, W, s, q, u, M, Q):
    """Elastic rod s: mass m spread evenly between its end markers a, b (the velocity along the
    rod interpolates linearly between the ends', so T = m/6 (va^2 + va.vb + vb^2)):
    M += m/6 [Ja; Jb]^T [[2, 1], [1, 2]] [Ja; Jb] (3-vectors), and Q gets the matching
    velocity-product and gravity terms (gravity: m/2 at each end)."""
    Ja, Jb, aa, ab = W.i_Jva, W.i_Jvb, W.i_aa, W.i_ab
    marker_world(S, W, S.sd_a[s], q, u, W.i_ra, W.i_Aa, W.i_va, W.i_wa, Ja, W.i_Jwa, aa, W.i_ala, True)
    marker_world(S, W, S.sd_b[s], q, u, W.i_rb, W.i_Ab, W.i_vb, W.i_wb, Jb, W.i_Jwb, ab, W.i_alb, True)
    m = S.sd_m[s]
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
