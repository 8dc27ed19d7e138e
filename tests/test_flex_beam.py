"""Sections, beam element matrices, interpolation and beam statics/dynamics against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg

from flexmbs.flex import Beam, beam_body, beam_matrices, box_tube, circle, explicit, rectangle, tube

E, G, RHO = 70e9, 26e9, 2700.0


# --- sections -----------------------------------------------------------------------------------


def saint_venant_rectangle(a: float, b: float, terms: int = 200) -> float:
    """Exact St-Venant torsion constant of an a x b rectangle (a >= b) by its Fourier series."""
    n = np.arange(1, 2 * terms, 2)
    series = np.sum(np.tanh(n * math.pi * a / (2 * b)) / n**5)
    return a * b**3 / 3 * (1 - 192 / math.pi**5 * b / a * series)


def test_rectangle_properties_and_torsion_series():
    s = rectangle(0.04, 0.01)
    assert s.A == pytest.approx(4e-4)
    assert s.Iy == pytest.approx(0.04 * 0.01**3 / 12)  # ∫ z² dA, height along z
    assert s.Iz == pytest.approx(0.01 * 0.04**3 / 12)
    for width, height in [(1.0, 1.0), (0.02, 0.01), (0.01, 0.05), (1.0, 0.1)]:
        exact = saint_venant_rectangle(max(width, height), min(width, height))
        assert rectangle(width, height).J == pytest.approx(exact, rel=5e-3)


def test_circle_tube_box_tube():
    d = 0.03
    c = circle(d)
    assert (c.A, c.Iy, c.Iz, c.J) == pytest.approx((math.pi * d**2 / 4, math.pi * d**4 / 64,
                                                    math.pi * d**4 / 64, math.pi * d**4 / 32))
    t = tube(0.05, 0.004)
    r_o, r_i = 0.025, 0.021
    assert t.A == pytest.approx(math.pi * (r_o**2 - r_i**2))
    assert t.J == pytest.approx(math.pi / 2 * (r_o**4 - r_i**4))
    assert t.Ip == pytest.approx(t.J)
    b = box_tube(0.06, 0.04, 0.003)
    assert b.A == pytest.approx(0.06 * 0.04 - 0.054 * 0.034)
    assert b.Iy == pytest.approx((0.06 * 0.04**3 - 0.054 * 0.034**3) / 12)
    assert b.Iz == pytest.approx((0.04 * 0.06**3 - 0.034 * 0.054**3) / 12)
    # Bredt: J = 4 Am² t / ∮ds on the mid-line 0.057 x 0.037.
    assert b.J == pytest.approx(4 * (0.057 * 0.037) ** 2 * 0.003 / (2 * (0.057 + 0.037)))
    e = explicit(1.0, 2.0, 3.0, 4.0)
    assert (e.A, e.Iy, e.Iz, e.J, e.Ip) == (1.0, 2.0, 3.0, 4.0, 5.0)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: box_tube(0.0254, 0.04, 0.0127), "thickness 0.0127 m must be < half of width 0.0254 m"),
        (lambda: tube(0.02, 0.01), "thickness 0.01 m must be < half of outer_diameter 0.02 m"),
        (lambda: rectangle(-1.0, 1.0), "width -1.0"),
        (lambda: circle(float("nan")), "diameter nan"),
        (lambda: explicit(1.0, 1.0, 0.0, 1.0), "Iz 0.0"),
    ],
)
def test_section_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# --- element matrices against textbook tables ---------------------------------------------------


def textbook_frame_stiffness(EA, EIy, EIz, GJ, l):
    """Classical 12x12 space-frame stiffness, DOFs [u, v, w, tx, ty, tz] x 2 nodes, ty = -dw/dx."""
    k = np.zeros((12, 12))
    k[np.ix_([0, 6], [0, 6])] = EA / l * np.array([[1, -1], [-1, 1]])
    k[np.ix_([3, 9], [3, 9])] = GJ / l * np.array([[1, -1], [-1, 1]])
    bend = lambda EI, s: EI / l**3 * np.array([
        [12, s * 6 * l, -12, s * 6 * l],
        [s * 6 * l, 4 * l**2, -s * 6 * l, 2 * l**2],
        [-12, -s * 6 * l, 12, -s * 6 * l],
        [s * 6 * l, 2 * l**2, -s * 6 * l, 4 * l**2]])
    k[np.ix_([1, 5, 7, 11], [1, 5, 7, 11])] = bend(EIz, 1)
    k[np.ix_([2, 4, 8, 10], [2, 4, 8, 10])] = bend(EIy, -1)
    return k


def textbook_consistent_mass(rhoA, rhoIp, l):
    """Classical consistent mass (no bending rotary inertia): 13/35, 11l/210, 9/70, 13l/420, l²/105, l²/140."""
    m = np.zeros((12, 12))
    m[np.ix_([0, 6], [0, 6])] = rhoA * l * np.array([[1 / 3, 1 / 6], [1 / 6, 1 / 3]])
    m[np.ix_([3, 9], [3, 9])] = rhoIp * l * np.array([[1 / 3, 1 / 6], [1 / 6, 1 / 3]])
    bend = lambda s: rhoA * l * np.array([
        [13 / 35, s * 11 * l / 210, 9 / 70, -s * 13 * l / 420],
        [s * 11 * l / 210, l**2 / 105, s * 13 * l / 420, -(l**2) / 140],
        [9 / 70, s * 13 * l / 420, 13 / 35, -s * 11 * l / 210],
        [-s * 13 * l / 420, -(l**2) / 140, -s * 11 * l / 210, l**2 / 105]])
    m[np.ix_([1, 5, 7, 11], [1, 5, 7, 11])] = bend(1)
    m[np.ix_([2, 4, 8, 10], [2, 4, 8, 10])] = bend(-1)
    return m


def textbook_rotary_mass(rhoI, l):
    """Bending rotary-inertia matrix of a Hermite element (one plane, [v1, tz1, v2, tz2])."""
    return rhoI / (30 * l) * np.array([
        [36, 3 * l, -36, 3 * l],
        [3 * l, 4 * l**2, -3 * l, -(l**2)],
        [-36, -3 * l, 36, -3 * l],
        [3 * l, -(l**2), -3 * l, 4 * l**2]])


SECTION = explicit(A=3e-4, Iy=2e-9, Iz=7e-9, J=1.5e-9)


def test_element_matrices_match_textbook():
    l = 0.37
    beam = Beam(length=3 * l, n_el=3, E=E, G=G, rho=RHO, section=SECTION)
    s = SECTION
    k_ref = textbook_frame_stiffness(E * s.A, E * s.Iy, E * s.Iz, G * s.J, l)
    m_ref = textbook_consistent_mass(RHO * s.A, RHO * (s.Iy + s.Iz), l)
    np.testing.assert_allclose(beam.element_stiffness(), k_ref, rtol=1e-12, atol=1e-12 * np.abs(k_ref).max())
    np.testing.assert_allclose(beam.element_mass(), m_ref, rtol=1e-12, atol=1e-14 * np.abs(m_ref).max())
    # Geometric stiffness per unit tension: (1/30l)[36, 3l, 4l², -l²] in each plane.
    kg_ref = np.zeros((12, 12))
    kg_ref[np.ix_([1, 5, 7, 11], [1, 5, 7, 11])] = textbook_rotary_mass(1.0, l)
    flip = np.diag([1, -1, 1, -1])
    kg_ref[np.ix_([2, 4, 8, 10], [2, 4, 8, 10])] = flip @ textbook_rotary_mass(1.0, l) @ flip
    np.testing.assert_allclose(beam.element_geometric(), kg_ref, rtol=1e-12, atol=1e-12 * np.abs(kg_ref).max())


def test_rotary_inertia_option_adds_textbook_terms():
    l = 0.5
    s = SECTION
    base = Beam(1.0, 2, E, G, RHO, s).element_mass()
    rotary = Beam(1.0, 2, E, G, RHO, s, rotary_inertia=True).element_mass()
    expected = np.zeros((12, 12))
    expected[np.ix_([1, 5, 7, 11], [1, 5, 7, 11])] = textbook_rotary_mass(RHO * s.Iz, l)
    flip = np.diag([1, -1, 1, -1])
    expected[np.ix_([2, 4, 8, 10], [2, 4, 8, 10])] = flip @ textbook_rotary_mass(RHO * s.Iy, l) @ flip
    np.testing.assert_allclose(rotary - base, expected, atol=1e-12 * np.abs(expected).max())


def test_assembly_tip_body_and_kg():
    tip_inertia = np.array([[0.1, 0.01, 0.0], [0.01, 0.2, 0.0], [0.0, 0.0, 0.3]])
    beam = Beam(1.2, 4, E, G, RHO, SECTION, tip_mass=2.5, tip_inertia=tip_inertia)
    M, K = beam_matrices(beam)
    bare_M, _ = beam_matrices(Beam(1.2, 4, E, G, RHO, SECTION))
    delta = M - bare_M
    np.testing.assert_allclose(delta[24:27, 24:27], 2.5 * np.eye(3), atol=1e-12)
    np.testing.assert_allclose(delta[27:30, 27:30], tip_inertia, atol=1e-12)
    delta[24:30, 24:30] = 0
    assert np.abs(delta).max() < 1e-14
    # Assembly: node 1 is the end of element 0 and the start of element 1.
    ke = beam.element_stiffness()
    np.testing.assert_allclose(K[6:12, 6:12], ke[6:, 6:] + ke[:6, :6], rtol=1e-14, atol=1e-14 * np.abs(ke).max())
    np.testing.assert_allclose(K[0:6, 6:12], ke[:6, 6:], rtol=1e-14)
    assert np.all(K[0:6, 12:] == 0)
    assert np.allclose(M, M.T) and np.allclose(K, K.T)
    # kg_axial equals ∫ N_slopeᵀ N_slope by a different rule: 3-point Gauss per element, exact for the
    # degree-4 integrand.
    points, weights = np.polynomial.legendre.leggauss(3)
    l = beam.element_length
    kg_ref = sum(
        0.5 * l * w * beam.N_slope(x).T @ beam.N_slope(x)
        for e in range(beam.n_el) for p, w in zip(points, weights) for x in [l * (e + 0.5 * (p + 1))]
    )
    np.testing.assert_allclose(beam.kg_axial(), kg_ref, atol=1e-13 * np.abs(kg_ref).max())


# --- interpolation ------------------------------------------------------------------------------


def test_interpolation_nodes_and_derivatives():
    beam = Beam(2.0, 5, E, G, RHO, SECTION)
    rng = np.random.default_rng(3)
    q = rng.standard_normal(beam.ndof)
    for node in range(beam.n_nodes):
        x = node * 0.4
        np.testing.assert_allclose(beam.N_t(x) @ q, q[6 * node:6 * node + 3], atol=1e-12)
        np.testing.assert_allclose(beam.N_r(x) @ q, q[6 * node + 3:6 * node + 6], atol=1e-12)
    h = 1e-6
    for x in [0.13, 0.77, 1.5]:
        dv, dw = (beam.N_t(x + h) - beam.N_t(x - h))[1:] @ q / (2 * h)
        slope = beam.N_slope(x) @ q
        np.testing.assert_allclose(slope, [dv, dw], rtol=1e-6)
        rot = beam.N_r(x) @ q
        np.testing.assert_allclose(rot[1:], [-dw, dv], rtol=1e-6)
    # Rigid motions are represented exactly: translation along z and rotation about y.
    rigid = np.zeros(beam.ndof)
    rigid[2::6] = 1.0
    np.testing.assert_allclose(beam.N_t(1.234) @ rigid, [0, 0, 1], atol=1e-12)
    rigid[:] = 0
    rigid[2::6] = -beam.node_positions[:, 0]  # w = -x·θ for a rotation θ about y
    rigid[4::6] = 1.0
    np.testing.assert_allclose(beam.N_t(1.234) @ rigid, [0, 0, -1.234], atol=1e-12)
    np.testing.assert_allclose(beam.N_r(1.234) @ rigid, [0, 1, 0], atol=1e-12)
    with pytest.raises(ValueError, match="beam 'beam': station x 2.5 m must lie in"):
        beam.N_t(2.5)


def test_beam_argument_errors():
    with pytest.raises(ValueError, match="beam 'link2': length -1.0 m"):
        Beam(-1.0, 2, E, G, RHO, SECTION, name="link2")
    with pytest.raises(ValueError, match="n_el 0"):
        Beam(1.0, 0, E, G, RHO, SECTION)
    with pytest.raises(ValueError, match="tip_inertia must be symmetric"):
        Beam(1.0, 2, E, G, RHO, SECTION, tip_inertia=[[1, 1, 0], [0, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="n_modes 30 exceeds the 24 free DOFs"):
        beam_body(1.0, 4, 30, E, G, RHO, SECTION)


# --- statics and dynamics -----------------------------------------------------------------------


def free_dofs(beam: Beam) -> np.ndarray:
    return np.arange(6, beam.ndof)


def test_cantilever_uniform_load_exact_at_nodes():
    L, n_el, u = 1.5, 6, 120.0
    beam = Beam(L, n_el, E, G, RHO, SECTION)
    l = beam.element_length
    K = beam.stiffness_matrix()
    # Consistent nodal loads of a uniform load (textbook): forces ul/2, moments ±ul²/12;
    # the w-plane moments change sign because th_y = -dw/dx.
    f = np.zeros(beam.ndof)
    for e in range(n_el):
        a = 6 * e
        f[[a + 1, a + 7]] += u * l / 2
        f[[a + 2, a + 8]] += u * l / 2
        f[[a + 5, a + 11]] += [u * l**2 / 12, -u * l**2 / 12]
        f[[a + 4, a + 10]] += [-u * l**2 / 12, u * l**2 / 12]
    free = free_dofs(beam)
    q = np.zeros(beam.ndof)
    q[free] = np.linalg.solve(K[np.ix_(free, free)], f[free])
    EIy, EIz = E * SECTION.Iy, E * SECTION.Iz
    assert q[-4] == pytest.approx(u * L**4 / (8 * EIy), rel=1e-10)  # w tip
    assert q[-2] == pytest.approx(-u * L**3 / (6 * EIy), rel=1e-10)  # th_y tip = -dw/dx
    assert q[-5] == pytest.approx(u * L**4 / (8 * EIz), rel=1e-10)  # v tip
    assert q[-1] == pytest.approx(u * L**3 / (6 * EIz), rel=1e-10)  # th_z tip
    x = beam.node_positions[:, 0]
    w_exact = u * x**2 * (6 * L**2 - 4 * L * x + x**2) / (24 * EIy)
    np.testing.assert_allclose(q[2::6], w_exact, rtol=1e-10, atol=1e-14)


def plane_content(modes: np.ndarray, dofs: list[int]) -> np.ndarray:
    """Share of each mode's squared nodal amplitudes carried by the given per-node DOFs."""
    selected = np.zeros(modes.shape[0], bool)
    for d in dofs:
        selected[d::6] = True
    return (modes[selected] ** 2).sum(axis=0) / (modes**2).sum(axis=0)


BETA_L = np.array([1.87510407, 4.69409113, 7.85475744])


def test_cantilever_bending_frequencies_converge():
    L = 1.0
    EIy, rhoA = E * SECTION.Iy, RHO * SECTION.A
    exact = BETA_L**2 * math.sqrt(EIy / (rhoA * L**4))
    errors = []
    for n_el in [2, 4, 8, 20]:
        body = beam_body(L, n_el, min(6 * n_el, 12), E, G, RHO, SECTION)
        w_plane = plane_content(body.nodal_modes, [2, 4]) > 0.99
        freqs = body.freqs[w_plane][:3]
        errors.append(np.abs(freqs - exact) / exact)
    errors = np.array(errors)
    assert np.all(np.diff(errors, axis=0) < 0), errors
    assert errors[-1, 0] < 1e-4 and errors[-1, 1] < 1e-4 and errors[-1, 2] < 1e-3
    # Hermite cubics converge as h^4 in the frequency (ratio 16 per halving) for the fundamental.
    assert errors[1, 0] / errors[2, 0] > 12


def test_torsion_and_axial_frequencies():
    L, n_el = 2.0, 60
    body = beam_body(L, n_el, 40, E, G, RHO, SECTION)
    axial = body.freqs[plane_content(body.nodal_modes, [0]) > 0.99][0]
    torsion = body.freqs[plane_content(body.nodal_modes, [3]) > 0.99][0]
    assert axial == pytest.approx(math.pi / 2 * math.sqrt(E / RHO) / L, rel=1e-4)
    assert torsion == pytest.approx(math.pi / 2 * math.sqrt(G * SECTION.J / (RHO * SECTION.Ip)) / L, rel=1e-4)


def pinned_pinned_bending(n_el: int, P: float) -> float:
    """Lowest v-plane bending frequency [rad/s] of a pinned-pinned beam under axial tension P [N]."""
    beam = Beam(1.0, n_el, E, G, RHO, SECTION)
    M, K = beam_matrices(beam)
    K = K + P * beam.kg_axial()
    last = 6 * n_el
    fixed = [0, 1, 2, 3, last + 1, last + 2]
    free = np.setdiff1d(np.arange(beam.ndof), fixed)
    lam, vec = scipy.linalg.eigh(K[np.ix_(free, free)], M[np.ix_(free, free)])
    modes = np.zeros((beam.ndof, free.size))
    modes[free] = vec
    v_plane = plane_content(modes, [1, 5]) > 0.99
    return math.sqrt(lam[v_plane][0])


def test_pinned_pinned_tension_stiffening():
    EIz, rhoA, L = E * SECTION.Iz, RHO * SECTION.A, 1.0
    P_cr = math.pi**2 * EIz / L**2
    assert pinned_pinned_bending(40, 0.0) == pytest.approx((math.pi / L) ** 2 * math.sqrt(EIz / rhoA), rel=1e-6)
    for P in [0.5 * P_cr, 3.0 * P_cr]:
        ratio_errors = [
            abs((pinned_pinned_bending(n_el, P) / pinned_pinned_bending(n_el, 0.0)) ** 2 - (1 + P / P_cr))
            for n_el in [4, 10, 40]
        ]
        assert ratio_errors[0] > ratio_errors[1] > ratio_errors[2]
        assert ratio_errors[2] < 1e-6 * (1 + P / P_cr)
