"""Two independent formulations of a flexible body's mass matrix agree: the run-time kernel
(exact sums over mass points at the deformed configuration) and the classical modal inertia
invariants (S0, Sb, Sbkl, C, Ir, Me and the foreshortening matrices Ga, Gb) of the floating frame
of reference, evaluated here with numpy."""

from unittest import mock

import numpy as np
import pytest
from numba import njit

import flexmbs
import flexmbs.compile.bodies
from flexmbs.flex.invariants import epsilon_contract
from flexmbs.kernels import body
from flexmbs.kernels.structs import box

from mechanisms import huang_arm


# the kernels are compiled without numba's runtime and take no reference on the boxes: Python
# calls them through functions compiled with it (settings.JIT), as the package's entry points do
@njit
def body_terms(S, W, b, eta, etad, v, w, g, Mb, hb, Fb):
    body.body_terms(S, W, b, eta, etad, v, w, g, Mb, hb, Fb)


@njit
def first_moment(S, b, eta, s):
    return body.first_moment(S, b, eta, s)


def _skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def invariant_mass_matrix(d, eta, axial_coupling: bool = False):
    """M(eta) from the invariants: rigid-frame blocks to second order in eta, the omega-eta coupling
    to first order, the modal mass constant, or with axial_coupling to first order: the shapes'
    axial displacement P_x times the foreshortening's change of it, -(H eta), summed over the mass
    points (M_ee = sum m D^T D with D = P - e_x (H eta)^T; zero on a basis that does not stretch
    the body, as bending modes do not)."""
    n = d.n
    ex = np.array([1.0, 0.0, 0.0])
    S = d.S0 + d.Sb @ eta - 0.5 * ex * (eta @ d.Ga @ eta)
    dA = np.einsum("kln,n->kl", d.Sbkl, eta)
    dA = dA + dA.T + np.einsum("m,klmn,n->kl", eta, d.C, eta) - np.outer(ex, ex) * (eta @ d.Gb @ eta)
    J = d.J0 + np.trace(dA) * np.eye(3) - dA
    P = d.Sbkl + np.einsum("klmn,m->kln", d.C, eta)
    M = np.zeros((6 + n, 6 + n))
    M[:3, :3] = d.mass * np.eye(3)
    M[:3, 3:6] = -_skew(S)
    M[3:6, :3] = _skew(S)
    M[3:6, 3:6] = J
    M[:3, 6:] = d.Sb - np.outer(ex, d.Ga @ eta)
    M[3:6, 6:] = epsilon_contract(P) + d.Ir
    M[6:, :6] = M[:6, 6:].T
    M[6:, 6:] = d.Me
    if axial_coupling:
        for m, P, H in zip(d.point_mass, d.point_shapes, d.point_H):
            first = np.outer(P[0], H @ eta)
            M[6:, 6:] -= m * (first + first.T)
    return M


def kernel_mass_matrix(system, body, eta):
    b = system.bodies.index(body)
    n = system.flex[body].n
    size = system.arrays.Mc.shape[1]
    Mb, hb, Fb = np.zeros((size, size)), np.zeros(size), np.zeros(size)
    z3 = np.zeros(3)
    body_terms(system.ref, system.workspace(), b, eta, np.zeros(n), z3, z3, z3, Mb, hb, Fb)
    return Mb[:6 + n, :6 + n]


def test_without_foreshortening_the_two_are_identical():
    """Linear modal kinematics: the invariants hold every term of M(eta) exactly."""
    system = flexmbs.compile_model(huang_arm(modes=4, elements=4, stiffening=False))
    d = system.flex["link2"]
    eta = np.random.default_rng(2).standard_normal(d.n) * 0.05 / np.abs(d.nodal_modes).max()
    np.testing.assert_allclose(kernel_mass_matrix(system, "link2", eta), invariant_mass_matrix(d, eta),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("acceleration_modes", [False, True])
def test_with_foreshortening_they_agree_to_the_invariants_order(acceleration_modes: bool):
    """With the acceleration shapes (the default) the basis stretches the link (its centrifugal
    shape is axial), and the constant modal mass of the invariants misses a first-order term
    that the kernel's point sums keep: the invariants here carry it (axial_coupling). Without it
    that gap would be of first order (halving eta halves it)."""
    model = huang_arm(modes=4, elements=4, stiffening=True)
    model.body("link2").acceleration_modes = acceleration_modes
    system = flexmbs.compile_model(model)
    d = system.flex["link2"]
    assert (d.n > 4) == acceleration_modes
    rng = np.random.default_rng(1)
    direction = rng.standard_normal(d.n)
    # eta of this size deflects the 1 m link by a few cm
    scale = 0.05 / np.abs(d.nodal_modes).max()
    np.testing.assert_allclose(kernel_mass_matrix(system, "link2", 0 * direction),
                               invariant_mass_matrix(d, 0 * direction), atol=1e-12)
    def gap(s, rows, cols, axial_coupling=True):
        eta = s * scale * direction
        diff = kernel_mass_matrix(system, "link2", eta) - invariant_mass_matrix(d, eta, axial_coupling)
        return np.abs(diff[rows, cols]).max()

    n6 = slice(0, 6)
    # the rigid-frame blocks and dS/deta: the invariants are exact to second order, so the two
    # differ at third order (halving eta divides the gap by 8)
    frame = [max(gap(s, n6, n6), gap(s, slice(0, 3), slice(6, None))) for s in (1.0, 0.5, 0.25)]
    assert frame[0] / frame[1] > 7.5 and frame[1] / frame[2] > 7.5
    # the couplings with the modal rates: the invariants keep them to first (omega-eta) and zeroth
    # (eta-eta) order, the points exactly: the gap is of second order
    full = [gap(s, slice(None), slice(None)) for s in (1.0, 0.5, 0.25)]
    assert full[0] / full[1] > 3.9 and full[1] / full[2] > 3.9
    if acceleration_modes:
        constant = [gap(s, slice(None), slice(None), axial_coupling=False) for s in (1.0, 0.5)]
        assert 1.8 < constant[0] / constant[1] < 2.2


def _points_reference(d, Mc, eta, etad, v, w, g):
    """M, h, F of one flexible body straight from its mass points (numpy, Kane's form):
    M = sum m G^T G + Mc, h = sum m G^T a + M_points[:, v] (w x v) + Mc's gyroscopic terms,
    F = sum m G^T g + Mc's gravity, with G = [I, -skew(r), D] at the deformed point."""
    n = d.n
    ex = np.array([1.0, 0.0, 0.0])
    M = np.zeros((6 + n, 6 + n))
    h = np.zeros(6 + n)
    F = np.zeros(6 + n)
    for m, s, P, H in zip(d.point_mass, d.point_position, d.point_shapes, d.point_H):
        r = s + P @ eta - 0.5 * ex * (eta @ H @ eta)
        D = P - np.outer(ex, H @ eta)
        a = np.cross(w, np.cross(w, r)) + 2 * np.cross(w, D @ etad) - ex * (etad @ H @ etad)
        G = np.hstack([np.eye(3), -_skew(r), D])
        M += m * G.T @ G
        h += m * G.T @ a
        F += m * G.T @ g
    h += M[:, :3] @ np.cross(w, v)
    z = np.concatenate([v, w, etad])
    p = Mc @ z
    h[:3] += np.cross(w, p[:3])
    h[3:6] += np.cross(w, p[3:6]) + np.cross(v, p[:3])
    F += Mc[:, :3] @ g
    F[3:6] += np.cross(np.array([Mc[1, 5], Mc[2, 3], Mc[0, 4]]), g)
    return M + Mc, h, F


@pytest.mark.parametrize("stiffening", [True, False])
@pytest.mark.parametrize("size", [0.0, 0.05, 1.0])
def test_point_moments_equal_the_sum_over_points(stiffening, size):
    """The kernel evaluates the mass points through their moments (polynomials in eta up to
    eta^4 with foreshortening) or one point at a time; both equal the direct numpy sum over the
    points to rounding, up to a deflection of the link's own length (1 m), where the mass matrix
    stays positive definite (it is a Gram matrix plus the constant part). Six elements, with
    the acceleration shapes (6 coordinates). The compiler is made to keep the moments, which
    its cost model gives up for the points on some of these bodies (compile/bodies._moment_cost)."""
    with mock.patch.object(flexmbs.compile.bodies, "_moment_cost", lambda npt, n, fs: (1.0, 0.0)):
        system = flexmbs.compile_model(huang_arm(modes=4, elements=6, stiffening=stiffening))
    arrays = system.arrays
    b = system.bodies.index("link2")
    assert arrays.iv_k[b] >= 0 and (arrays.iv_h[b] >= 0) == stiffening   # the moments are in use
    by_points = arrays._replace(iv_k=np.full_like(arrays.iv_k, -1), iv_h=np.full_like(arrays.iv_h, -1))
    d = system.flex["link2"]
    n = d.n
    rng = np.random.default_rng(7)
    eta = rng.standard_normal(n)
    eta *= size / np.abs(d.point_shapes @ eta).max() if size else 0.0
    etad = 20.0 * rng.standard_normal(n)
    v, w, g = rng.standard_normal(3), 3.0 * rng.standard_normal(3), 9.81 * rng.standard_normal(3)
    M_ref, h_ref, F_ref = _points_reference(d, arrays.Mc[b, :6 + n, :6 + n], eta, etad, v, w, g)
    width = arrays.Mc.shape[1]
    for arr in (arrays, by_points):
        Mb, hb, Fb = np.zeros((width, width)), np.zeros(width), np.zeros(width)
        body_terms(box(arr), system.workspace(), b, eta, etad, v, w, g, Mb, hb, Fb)
        np.testing.assert_allclose(Mb[:6 + n, :6 + n], M_ref, rtol=0, atol=1e-13 * np.abs(M_ref).max())
        np.testing.assert_allclose(hb[:6 + n], h_ref, rtol=0, atol=1e-13 * np.abs(h_ref).max())
        np.testing.assert_allclose(Fb[:6 + n], F_ref, rtol=0, atol=1e-13 * np.abs(F_ref).max())
        s = np.zeros(3)
        mass = first_moment(box(arr), b, eta, s)
        assert mass == pytest.approx(d.mass, rel=1e-14)
        np.testing.assert_allclose(s, M_ref[[1, 2, 0], [5, 3, 4]], rtol=0, atol=1e-14 * np.abs(s).max())
    assert np.linalg.eigvalsh(Mb[:6 + n, :6 + n]).min() > 0.0


def test_the_point_sum_is_kept_where_the_moments_cost_more():
    """The moments' foreshortening part grows as n^4: a body with many modes and few mass points
    keeps the sum over its points, one with few modes uses the moments."""
    few_points = flexmbs.compile_model(huang_arm(modes=8, elements=2)).arrays
    assert few_points.iv_k[1] == -1 and few_points.iv_h[1] == -1 and few_points.iv_HH.shape[0] == 0
    many_points = flexmbs.compile_model(huang_arm(modes=2, elements=8)).arrays
    assert many_points.iv_k[1] == 0 and many_points.iv_h[1] == 0 and many_points.iv_k[0] == -1
