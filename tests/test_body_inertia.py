"""Two independent formulations of a flexible body's mass matrix agree: the run-time kernel
(exact sums over mass points at the deformed configuration) and the classical modal inertia
invariants (S0, Sb, Sbkl, C, Ir, Me and the foreshortening matrices Ga, Gb) of the floating frame
of reference, evaluated here with numpy."""

import numpy as np

import flexmbs
from flexmbs.flex.invariants import epsilon_contract
from flexmbs.kernels.body import body_terms

from mechanisms import huang_arm


def _skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def invariant_mass_matrix(d, eta):
    """M(eta) from the invariants: rigid-frame blocks to second order in eta, the omega-eta coupling
    to first order, the modal mass constant."""
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


def test_with_foreshortening_they_agree_to_the_invariants_order():
    system = flexmbs.compile_model(huang_arm(modes=4, elements=4, stiffening=True))
    d = system.flex["link2"]
    rng = np.random.default_rng(1)
    direction = rng.standard_normal(d.n)
    # eta of this size deflects the 1 m link by a few cm
    scale = 0.05 / np.abs(d.nodal_modes).max()
    np.testing.assert_allclose(kernel_mass_matrix(system, "link2", 0 * direction),
                               invariant_mass_matrix(d, 0 * direction), atol=1e-12)
    def gap(s, rows, cols):
        eta = s * scale * direction
        diff = kernel_mass_matrix(system, "link2", eta) - invariant_mass_matrix(d, eta)
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
