"""Craig-Bampton interface modes (issue 15, items 1 and 3): the reduction itself against the full
finite-element model, the defaults on a spinning beam and a pinned-pinned coupler, and superelements
read from the files FE codes write (Abaqus matrix output, Nastran DMIG) against the beam body."""

from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.linalg

import flexmbs
from flexmbs.flex import Beam, beam_invariants, beam_matrices, craig_bampton, load_matrix_files, make_superelement
from flexmbs.flex import rectangle, superelement_body
from flexmbs.model import Body, Joint, Marker, Material, Model, ModelError, Section, Sensor, model_from_dict
from flexmbs.system import flex_data

E, RHO = 7e10, 2700.0


def _beam(n_el: int = 10, rotary_inertia: bool = False) -> Beam:
    return Beam(1.0, n_el, E, E / 2.6, RHO, rectangle(0.02, 0.01), rotary_inertia=rotary_inertia)


# ---------------------------------------------------------------- the reduction

def test_craig_bampton_basis_is_orthogonal_and_exact_for_interface_loads():
    """M-orthonormal and K-diagonal; every load applied through an interface (6 directions at a
    station between nodes and at the tip) gives the full FE model's static deflection, and the
    frequencies bound the full model's from above (Rayleigh-Ritz)."""
    beam = _beam()
    M, K = beam_matrices(beam)
    rows = np.vstack([beam.N_t(0.37), beam.N_r(0.37), beam.N_t(1.0), beam.N_r(1.0)])
    root = np.arange(6)
    freqs, Phi = craig_bampton(M, K, root, rows, 4, "beam")
    assert Phi.shape[1] == 4 + 12
    assert np.abs(Phi.T @ M @ Phi - np.eye(16)).max() < 1e-10
    assert np.abs(Phi.T @ K @ Phi - np.diag(freqs**2)).max() < 1e-9 * freqs.max() ** 2
    free = np.arange(6, M.shape[0])
    F = rows.T  # one unit load per interface direction
    exact = np.zeros_like(F)
    exact[free] = scipy.linalg.solve(K[np.ix_(free, free)], F[free])
    reduced = Phi @ np.diag(freqs**-2) @ Phi.T @ F
    assert np.abs(reduced - exact).max() < 1e-9 * np.abs(exact).max()
    full = np.sqrt(scipy.linalg.eigh(K[np.ix_(free, free)], M[np.ix_(free, free)], eigvals_only=True))
    assert np.all(freqs >= full[:16] * (1 - 1e-10))
    assert np.allclose(freqs[:4], full[:4], rtol=5e-3)


def test_interface_rows_at_the_reference_or_repeated_add_nothing():
    beam = _beam(6)
    M, K = beam_matrices(beam)
    tip = np.vstack([beam.N_t(1.0), beam.N_r(1.0)])
    once = craig_bampton(M, K, np.arange(6), tip, 3, "beam")
    twice = craig_bampton(M, K, np.arange(6), np.vstack([beam.N_t(0.0), beam.N_r(0.0), tip, tip]), 3, "beam")
    assert np.allclose(once[0], twice[0], rtol=1e-12)


def test_beam_and_superelement_reduce_alike():
    """The beam path (interface station x = L) and the superelement path (interface node = tip
    node) hold the same DOFs, so they give the same basis."""
    beam = _beam(8, rotary_inertia=True)
    M, K = beam_matrices(beam)
    as_beam = beam_invariants(beam, 4, interface=[1.0])
    as_se = superelement_body(make_superelement(M, K, beam.node_positions), 4, interface_nodes=[8])
    assert as_beam.n == as_se.n == 10
    assert np.allclose(as_beam.freqs, as_se.freqs, rtol=1e-10)


def test_opt_out_keeps_the_cantilever_basis_and_static_modes():
    beam = _beam(8)
    M, K = beam_matrices(beam)
    free = np.arange(6, M.shape[0])
    cantilever = np.sqrt(scipy.linalg.eigh(K[np.ix_(free, free)], M[np.ix_(free, free)], eigvals_only=True))
    old = beam_invariants(beam, 4)
    assert np.allclose(old.freqs, cantilever[:4], rtol=1e-10)
    assert beam_invariants(beam, 4, static_modes=True).n == 8  # 4 tip shapes: u_y, u_z, th_y, th_z
    assert beam_invariants(beam, 4, static_modes=True, interface=[]).n == 10  # the tip as an interface


def _link(**fields) -> Body:
    spec = dict(type="beam", length=1.0, elements=8, modes=4, material=Material(E=E, G=E / 2.6, rho=RHO),
                section=Section("rectangle", width=0.02, height=0.01),
                markers=[Marker("root", x=0.0), Marker("mid", x=0.5), Marker("tip", x=1.0)])
    spec.update(fields)
    return Body("link", **spec)


def _pendulum(link: Body, sensors: tuple[str, ...] = ()) -> Model:
    joint = Joint("hinge", "revolute", "ground", "origin", "link", "root", axis=(0, 0, 1), q0=(-0.3,))
    return Model("p", gravity=(0, -9.81, 0), bodies=[link], joints=[joint],
                 sensors=[Sensor(name, "link", name) for name in sensors])


def test_interface_points_are_the_used_markers():
    """Joints, loads and sensors make interface points; unused markers and the reference do not."""
    assert flex_data(_link(), _pendulum(_link())).n == 4
    assert flex_data(_link(), _pendulum(_link(), ("tip",))).n == 10
    assert flex_data(_link(), _pendulum(_link(), ("tip", "mid"))).n == 16
    off = _link(interface_modes=False)
    assert flex_data(off, _pendulum(off, ("tip", "mid"))).n == 4


def test_interface_modes_option_is_checked():
    data = {"name": "m", "bodies": [{"name": "b", "type": "beam", "length": 1.0, "interface_modes": "yes",
                                     "material": {"E": 7e10, "rho": 2700},
                                     "section": {"shape": "circle", "diameter": 0.01},
                                     "markers": [{"name": "root", "x": 0}]}],
            "joints": [{"name": "j", "type": "revolute", "parent": "ground", "parent_marker": "origin",
                        "child": "b", "child_marker": "root"}]}
    with pytest.raises(ModelError, match="interface_modes"):
        model_from_dict(data)


# ---------------------------------------------------------------- defaults on the benchmarks

def test_spin_up_stretch_with_default_settings():
    """The shipped spin-up beam (its tip sensor makes the tip an interface point): the mean axial
    tip stretch after the spin-up equals the static centrifugal stretch of a bar,
    u(L) = rho A W^2 L^3 / (3 E A), to 1 %."""
    model = flexmbs.load_model("spin_up_beam")
    r = flexmbs.simulate(model, 18.0)
    data = flex_data(model.bodies[0], model)
    axial = data.marker(x=10.0)[1][0]  # tip u_x per modal coordinate [m]
    eta = np.column_stack([r[f"beam.eta[{i + 1}]"] for i in range(data.n)])
    stretch = (eta @ axial)[r.time >= 15.0]
    A, E_, rho, W, L = 4e-4, 7e10, 3000.0, 6.0, 10.0
    assert stretch.mean() == pytest.approx(rho * A * W**2 * L**3 / (3 * E_ * A), rel=1e-2)
