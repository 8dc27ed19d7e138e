"""Craig-Bampton interface modes (issue 15, items 1 and 3): the reduction itself against the full
finite-element model, the defaults on a spinning beam and a pinned-pinned coupler, and superelements
read from the files FE codes write (Abaqus matrix output, Nastran DMIG) against the beam body."""

import functools
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.linalg

import flexmbs
from flexmbs.compile.bodies import flex_data as reduce_body
from flexmbs.flex import Beam, beam_invariants, beam_matrices, craig_bampton, load_matrix_files, make_superelement
from flexmbs.flex import rectangle, superelement_body
from flexmbs.model import Body, Joint, Load, Marker, Material, Model, ModelError, Section, Sensor, model_from_dict
from flexmbs.model.interfaces import interface_points
from mechanisms import spin_up_beam

E, RHO = 7e10, 2700.0


def flex_data(body: Body, model: Model):
    """The modal data of `body` as compiled in `model` (its interface points from the model's joints and loads)."""
    return reduce_body(body, interface_points(model, body))


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
    # the tip's constraint modes carry every acceleration in part: no acceleration shape joins
    for acceleration_modes, n, rtol in ((False, 10, 1e-10), (True, 10, 1e-10)):
        as_beam = beam_invariants(beam, 4, interface=[1.0], acceleration_modes=acceleration_modes)
        as_se = superelement_body(make_superelement(M, K, beam.node_positions), 4, interface_nodes=[8],
                                  acceleration_modes=acceleration_modes)
        assert as_beam.n == as_se.n == n
        assert np.allclose(as_beam.freqs, as_se.freqs, rtol=rtol)


def test_opt_out_keeps_the_cantilever_basis_and_static_modes():
    beam = _beam(8)
    M, K = beam_matrices(beam)
    free = np.arange(6, M.shape[0])
    cantilever = np.sqrt(scipy.linalg.eigh(K[np.ix_(free, free)], M[np.ix_(free, free)], eigvals_only=True))
    old = beam_invariants(beam, 4, acceleration_modes=False)
    assert np.allclose(old.freqs, cantilever[:4], rtol=1e-10)
    # 4 tip shapes: u_y, u_z, th_y, th_z
    assert beam_invariants(beam, 4, static_modes=True, acceleration_modes=False).n == 8
    # the tip as an interface
    assert beam_invariants(beam, 4, static_modes=True, interface=[], acceleration_modes=False).n == 10


def _link(**fields) -> Body:
    spec = dict(type="beam", length=1.0, elements=8, modes=4, material=Material(E=E, G=E / 2.6, rho=RHO),
                section=Section("rectangle", width=0.02, height=0.01),
                markers=[Marker("root", x=0.0), Marker("mid", x=0.5), Marker("tip", x=1.0)])
    spec.update(fields)
    return Body("link", **spec)


def _pendulum(link: Body, loaded: tuple[str, ...] = (), sensed: tuple[str, ...] = ()) -> Model:
    """The link hinged at its root about z under gravity, with a 5 N point force at each `loaded`
    marker and a sensor at each `sensed` one."""
    joint = Joint("hinge", "revolute", "ground", "origin", "link", "root", axis=(0, 0, 1), q0=(-0.3,))
    loads = [Load("point_force", name=f"push_{m}", body="link", marker=m, force=(0.0, -5.0, 0.0)) for m in loaded]
    return Model("p", gravity=(0, -9.81, 0), bodies=[link], joints=[joint], loads=loads,
                 sensors=[Sensor(name, "link", name) for name in sensed])


def test_interface_points_are_the_markers_joints_and_loads_use():
    """Joints and loads make interface points; sensors, unused markers and the reference do not
    (counted without the acceleration shapes but for the first)."""
    shapes = _link(acceleration_modes=True)
    assert flex_data(shapes, _pendulum(shapes)).n == 6  # 4 modes, the centrifugal stretch and torsion
    link = _link(acceleration_modes=False)
    assert flex_data(link, _pendulum(link)).n == 4
    assert flex_data(link, _pendulum(link, sensed=("tip", "mid"))).n == 4
    assert flex_data(link, _pendulum(link, ("tip",))).n == 10
    assert flex_data(link, _pendulum(link, ("tip", "mid"))).n == 16
    tip = _link(static_modes=True, acceleration_modes=False)
    assert flex_data(tip, _pendulum(tip)).n == 10
    off = _link(interface_modes=False, acceleration_modes=False)
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

def _stretch(model: Model, r) -> np.ndarray:
    """Axial tip displacement of the spin-up beam from its modal coordinates [m]."""
    data = flex_data(model.bodies[0], model)
    axial = data.marker(x=10.0)[1][0]  # tip u_x per modal coordinate [m]
    eta = np.column_stack([r[f"beam.eta[{i + 1}]"] for i in range(data.n)])
    return eta @ axial


def _lateral(r) -> np.ndarray:
    """Tip deflection of the spin-up beam in the hub frame, from the tip sensor [m]."""
    th = r["hub.q"]
    return -np.sin(th) * r["tip.r[1]"] + np.cos(th) * r["tip.r[2]"]


SPIN_UP_STRETCH = 3000.0 * 4e-4 * 6.0**2 * 10.0**3 / (3 * 7e10 * 4e-4)  # rho A W^2 L^3 / (3 E A) [m]


def test_spin_up_stretch_with_default_settings():
    """The shipped spin-up beam as it is (acceleration shapes on; solver and mesh as shipped): the mean
    axial tip stretch after the spin-up equals the static centrifugal stretch of a bar,
    u(L) = rho A W^2 L^3 / (3 E A), to 1 %."""
    model = flexmbs.load_model("spin_up_beam")
    r = flexmbs.simulate(model, 18.0)
    assert _stretch(model, r)[r.time >= 15.0].mean() == pytest.approx(SPIN_UP_STRETCH, rel=1e-2)
    # the hub turns 63 rad, 1,260 times the implicit method's move test (0.05 rad), but the
    # beam's dynamics do not depend on its angle: the Jacobian is renewed only as the
    # centrifugal stiffening changes it (12 measured)
    assert r["hub.q"][-1] > 60.0 and r.stats["jacobians"] <= 30


@functools.lru_cache(maxsize=1)
def _chain_peak() -> float:
    """Peak tip deflection of the spin-up beam as a chain of 4 corotational segments (the
    geometrically nonlinear route, on the former basis, dopri5 at rtol 1e-8) [m]."""
    chain = spin_up_beam(6.0, elements=16)
    chain.body("beam").segments = 4
    chain.body("beam").acceleration_modes = False
    chain.sensors = [Sensor("tip", "beam", "tip")]
    return float(np.abs(_lateral(flexmbs.simulate(chain, 20.0))).max())


def test_user_written_spin_up_beam_stretches_and_bends_right():
    """A spin-up beam written as a user would (joint at the root, free tip, 8 elements, 4 modes,
    `acceleration_modes: true`; dopri5 at rtol 1e-8): the acceleration shapes give the time-mean centrifugal
    stretch to 1 % (3e-6 measured; without them the tip's axial modal motion is none at all), and
    its peak tip deflection is within 3 mm of a chain of 4 corotational segments (1.2 mm
    measured of a 0.575 m peak)."""
    user = spin_up_beam(6.0)
    user.body("beam").acceleration_modes = True
    user.solver.output_step = 1e-3  # a time mean over the axial vibration (121 Hz)
    user.sensors = [Sensor("tip", "beam", "tip")]
    r = flexmbs.simulate(user, 20.0)
    assert _stretch(user, r)[r.time >= 15.0].mean() == pytest.approx(SPIN_UP_STRETCH, rel=1e-2)
    assert abs(np.abs(_lateral(r)).max() - _chain_peak()) < 3e-3
    user.body("beam").acceleration_modes = False  # the former basis: bending modes only
    r = flexmbs.simulate(user, 20.0)
    assert abs(_stretch(user, r)[r.time >= 15.0].mean()) < 1e-2 * SPIN_UP_STRETCH


def test_spin_up_beam_written_with_default_settings_stretches_and_bends_right():
    """Issue 27 item 4: the spin-up beam as a user writes it from the docs, every setting at its
    default (no basis flags, no solver section, outputs every 10 ms): the acceleration shapes are
    in the basis by default, the stretch is rho A W^2 L^3 / (3 E A) to 1 % and the peak tip
    deflection within 3 mm of the corotational chain's. (dopri5 at its default rtol 1e-6 on this
    basis: the axial shape rings undamped at its tolerance, std 4.4 mm about the 0.51 mm stretch,
    1.1 % off in the mean and 7.7 mm off in the peak, measured; the default for a flexible model,
    the L-stable radau at its rtol 1e-5: 6e-5 and 1.2 mm, the same as the implicit method at 1e-6,
    measured 2026-11-30.)"""
    user = model_from_dict({
        "name": "my_spin_up", "gravity": [0, 0, 0],
        "ground": {"markers": [{"name": "origin", "position": [0, 0, 0]}]},
        "bodies": [{"name": "beam", "type": "beam", "length": 10.0, "elements": 8, "modes": 4,
                    "material": {"E": 7e10, "rho": 3000, "G": 2.7e10},
                    "section": {"shape": "explicit", "A": 4e-4, "Iy": 2e-7, "Iz": 2e-7, "J": 4e-7},
                    "markers": [{"name": "root", "x": 0}, {"name": "tip", "x": 10.0}]}],
        "joints": [{"name": "hub", "type": "revolute", "parent": "ground", "parent_marker": "origin",
                    "child": "beam", "child_marker": "root", "axis": [0, 0, 1],
                    "drive": {"type": "motion", "profile": {"type": "spin_up", "omega_s": 6.0, "t_s": 15.0}}}],
        "sensors": [{"name": "tip", "body": "beam", "marker": "tip"}]})
    assert user.solver_method() == "radau"
    r = flexmbs.simulate(user, 20.0)
    assert _stretch(user, r)[r.time >= 15.0].mean() == pytest.approx(SPIN_UP_STRETCH, rel=1e-2)
    assert abs(np.abs(_lateral(r)).max() - _chain_peak()) < 3e-3


# ---------------------------------------------------------------- superelements from FE codes
# Writers of the files FE codes produce, from a beam's FE matrices; node labels 101, 102, ... as an
# FE model would number them.

def _labels(n_nodes: int) -> np.ndarray:
    return 101 + np.arange(n_nodes)


def _entries(A: np.ndarray, labels: np.ndarray, d: int):
    """(row node, row dof, column node, column dof, value) of the lower triangle's non-zeros."""
    for i, j in zip(*np.nonzero(np.tril(A))):
        yield labels[i // d], i % d + 1, labels[j // d], j % d + 1, A[i, j]


def write_abaqus(path: Path, A: np.ndarray, labels: np.ndarray, d: int = 6) -> Path:
    """Abaqus *MATRIX OUTPUT, FORMAT=MATRIX INPUT: one triangle, comma-separated."""
    lines = ["** written by the test, as Abaqus *MATRIX OUTPUT, FORMAT=MATRIX INPUT"]
    lines += [f"{a},{b}, {c},{e}, {v:.17e}" for a, b, c, e, v in _entries(A, labels, d)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _nastran(value: float) -> str:
    """A 16-character large-field real with Nastran's D exponent."""
    return f"{value:16.9E}".replace("E", "D")


def write_dmig(path: Path, matrices: dict[str, np.ndarray], labels: np.ndarray, field: str, d: int = 6) -> Path:
    """Nastran DMIG entries (IFO 6 symmetric, TIN 2 real double), one column entry per column with
    its lower-triangle terms, in large field (DMIG*, 16 characters) or free field (commas)."""
    lines = ["$ written by the test, as PARAM,EXTOUT,DMIGPCH punches"]
    for name, A in matrices.items():
        n = A.shape[0]
        if field == "large":
            lines += [f"DMIG*   {name:<16}{0:>16}{6:>16}{2:>16}", f"*       {0:>16}{'':16}{'':16}{n:>16}"]
        else:
            lines += [f"DMIG,{name},0,6,2,0,,,{n}"]
        for j in range(n):
            rows = [i for i in range(j, n) if A[i, j] != 0.0]
            if not rows:
                continue
            gj, cj = labels[j // d], j % d + 1
            if field == "large":
                lines.append(f"DMIG*   {name:<16}{gj:>16}{cj:>16}{'':16}")
                lines += [f"*       {labels[i // d]:>16}{i % d + 1:>16}{_nastran(A[i, j])}{'':16}" for i in rows]
            else:
                groups = [f"{labels[i // d]},{i % d + 1},{A[i, j]:.17e},," for i in rows]  # B blank: real
                lines.append(f"DMIG,{name},{gj},{cj},," + groups[0])
                lines += ["," + groups[k] + (groups[k + 1] if k + 1 < len(groups) else "")
                          for k in range(1, len(groups), 2)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_nodes(path: Path, nodes: np.ndarray, labels: np.ndarray, grid: bool = False) -> Path:
    """Labelled node coordinates: Abaqus *NODE data lines, or Nastran GRID entries in free field."""
    if grid:
        text = "".join(f"GRID,{n},,{x:.17e},{y:.17e},{z:.17e}\n" for n, (x, y, z) in zip(labels, nodes))
    else:
        text = "*NODE\n" + "".join(f"{n}, {x:.17e}, {y:.17e}, {z:.17e}\n" for n, (x, y, z) in zip(labels, nodes))
    path.write_text(text.replace("*NODE\n", "** *NODE block\n"))
    return path


def _exported(tmp_path: Path, fmt: str, beam: Beam) -> dict[str, str]:
    """Model-file fields of a superelement written from the beam's matrices in format fmt."""
    M, K = beam_matrices(beam)
    labels = _labels(beam.n_nodes)
    if fmt == "matrix_market":
        scipy.io.mmwrite(tmp_path / "M.mtx", M, precision=17)
        scipy.io.mmwrite(tmp_path / "K.mtx", K, precision=17)
        np.savetxt(tmp_path / "nodes.txt", beam.node_positions, fmt="%.17e")
        return dict(mass_file=str(tmp_path / "M.mtx"), stiffness_file=str(tmp_path / "K.mtx"),
                    nodes_file=str(tmp_path / "nodes.txt"))
    if fmt == "abaqus":
        return dict(mass_file=str(write_abaqus(tmp_path / "job_MASS2.mtx", M, labels)),
                    stiffness_file=str(write_abaqus(tmp_path / "job_STIF2.mtx", K, labels)),
                    nodes_file=str(write_nodes(tmp_path / "nodes.inp", beam.node_positions, labels)))
    field = fmt.split("_")[1]
    punch = str(write_dmig(tmp_path / "se.pch", {"KAAX": K, "MAAX": M}, labels, field))
    return dict(mass_file=punch, stiffness_file=punch,
                nodes_file=str(write_nodes(tmp_path / "grids.bdf", beam.node_positions, labels, grid=True)))


FORMATS = ["matrix_market", "abaqus", "dmig_large", "dmig_free"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_files_read_back_the_matrices(tmp_path, fmt):
    beam = _beam(6, rotary_inertia=True)
    M, K = beam_matrices(beam)
    files = _exported(tmp_path, fmt, beam)
    se = load_matrix_files(files["mass_file"], files["stiffness_file"], files["nodes_file"])
    # large-field DMIG holds 10 significant digits
    tol = 1e-9 if fmt == "dmig_large" else 1e-15
    assert np.abs(se.M - M).max() <= tol * np.abs(M).max()
    assert np.abs(se.K - K).max() <= tol * np.abs(K).max()
    assert np.abs(se.nodes - beam.node_positions).max() <= 1e-15


@pytest.mark.parametrize("fmt", FORMATS)
def test_superelement_from_fe_files_swings_like_the_beam(tmp_path, fmt):
    """A pendulum whose link is the beam body or the superelement written from the beam's FE matrices,
    with the same interface (root joint, a point force at the tip): the hinge angles agree to 1e-5 rad."""
    L, n_el = 1.0, 8
    beam = _beam(n_el, rotary_inertia=True)
    markers = [Marker("root", node=0), Marker("tip", node=n_el)]
    as_beam = _link(rotary_inertia=True, geometric_stiffening=False, markers=[Marker("root", x=0.0),
                                                                               Marker("tip", x=L)])
    as_se = Body("link", type="superelement", modes=4, markers=markers, **_exported(tmp_path, fmt, beam))
    runs = [flexmbs.simulate(_pendulum(body, ("tip",)), 0.3, method="implicit", rtol=1e-8, output_step=0.01)
            for body in (as_beam, as_se)]
    assert flex_data(as_se, _pendulum(as_se, ("tip",))).n == 10
    tip = runs[0]["link.tip_deflection[2]"]
    assert np.abs(tip).max() > 1e-4
    assert np.abs(runs[0]["hinge.q"] - runs[1]["hinge.q"]).max() < 1e-5


def test_small_field_dmig_and_fe_file_errors(tmp_path):
    """Small-field DMIG (8 characters, implicit exponents) reads; entries at unknown nodes, scalar
    points or complex matrices are refused naming the file, the line or the node."""
    nodes = write_nodes(tmp_path / "n.inp", np.array([[0.0, 0, 0], [1.0, 0, 0]]), np.array([7, 9]))
    small = tmp_path / "small.pch"
    small.write_text("DMIG    KX      0       6       1                               3\n"
                     "DMIG    KX      9       1               9       1       2.5+3\n"
                     "DMIG    MX      0       6       1                               3\n"
                     "DMIG    MX      9       1               9       1       1.-2\n"
                     "+       9       2       .5-2\n")
    K_entries, M_entries = (load_fe_entries(small, kind) for kind in "KM")
    assert K_entries == [(9, 1, 9, 1, 2500.0)]
    assert M_entries == [(9, 1, 9, 1, 0.01), (9, 2, 9, 1, 0.005)]
    bad = tmp_path / "bad.mtx"
    bad.write_text("7,1, 8,1, 1.0\n")
    with pytest.raises(ValueError, match="node 8, which the node file does not list"):
        load_matrix_files(bad, bad, nodes)
    bad.write_text("7,1, 7,1\n")
    with pytest.raises(ValueError, match="line 1 is not 'row node"):
        load_matrix_files(bad, bad, nodes)
    scalar = tmp_path / "scalar.pch"
    scalar.write_text("DMIG,KAAX,0,6,2,0,,,1\nDMIG,KAAX,9,1,,1001,0,1.0\n")
    with pytest.raises(ValueError, match="line 2 uses a scalar point"):
        load_fe_entries(scalar, "K")
    scalar.write_text("DMIG,KAAX,0,6,3,0,,,1\nDMIG,KAAX,9,1,,9,1,1.0\n")
    with pytest.raises(ValueError, match="TIN 3 on line 1, expected a real matrix"):
        load_fe_entries(scalar, "K")
    with pytest.raises(ValueError, match="expected one mass matrix"):
        load_matrix_files(scalar, scalar, nodes)


def load_fe_entries(path: Path, kind: str):
    from flexmbs.flex.superelement import _dmig_entries
    return _dmig_entries(path, kind)[1]


# ---------------------------------------------------------------- a coupler pinned at both ends

CRANK, COUPLER = 0.15, 0.30  # crank radius and coupler length [m]


def _slider_crank(**coupler) -> Model:
    """Planar slider-crank: a rigid crank spun up to 60 rad/s in 20 ms (He's spin-up profile), an
    aluminium coupler (5 mm square) pinned to the crank and, by a cut joint, to a 0.1 kg slider on
    the x axis. Markers a, mid, b at the coupler's ends and middle; sensors on both ends."""
    from flexmbs.model import Drive, Loops, Profile, Solver
    crank = Body("crank", mass=0.1, com=(CRANK / 2, 0, 0), inertia=[1e-5, 2e-4, 2e-4],
                 markers=[Marker("root"), Marker("tip", position=(CRANK, 0, 0))])
    spec = dict(type="beam", length=COUPLER, elements=8, modes=4, material=Material(E=7e10, rho=2770, nu=0.3),
                section=Section("rectangle", width=0.005, height=0.005),
                markers=[Marker("a", x=0.0), Marker("mid", x=COUPLER / 2), Marker("b", x=COUPLER)])
    spec.update(coupler)
    slider = Body("slider", mass=0.1, inertia=[1e-6] * 3, markers=[Marker("pin")])
    joints = [Joint("crank", "revolute", "ground", "origin", "crank", "root", axis=(0, 0, 1),
                    drive=Drive("motion", profile=Profile("spin_up", omega_s=60.0, t_s=0.02))),
              Joint("elbow", "revolute", "crank", "tip", "coupler", "a", axis=(0, 0, 1)),
              Joint("slide", "prismatic", "ground", "origin", "slider", "pin", axis=(1, 0, 0), q0=[CRANK + COUPLER])]
    cut = Joint("pin", "revolute", "coupler", "b", "slider", "pin", axis=(0, 0, 1))
    return Model("slider_crank", gravity=(0, 0, 0), bodies=[crank, Body("coupler", **spec), slider],
                 joints=joints, loops=Loops(cuts=[cut]), sensors=[Sensor("a", "coupler", "a"), Sensor("b", "coupler", "b")],
                 solver=Solver(method="dopri5", rtol=1e-8, max_step=1e-3, output_step=2e-4))


def _midspan_from_modes(model: Model, r) -> np.ndarray:
    """In-plane midspan deflection from the chord [m], from the coupler's modal coordinates (first order)."""
    data = flex_data(model.bodies[1], model)
    mid, tip = data.marker(x=COUPLER / 2)[1][1], data.marker(x=COUPLER)[1][1]
    eta = np.column_stack([r[f"coupler.eta[{i + 1}]"] for i in range(data.n)])
    return eta @ (mid - 0.5 * tip)


def _midspan_from_positions(r) -> np.ndarray:
    """In-plane distance of the midspan point from the chord through both ends [m] (body y side positive)."""
    a, m, b = (np.column_stack([r[f"{name}.r[{i}]"] for i in (1, 2)]) for name in ("a", "mid", "b"))
    chord = (b - a) / np.linalg.norm(b - a, axis=1)[:, None]
    return chord[:, 0] * (m - a)[:, 1] - chord[:, 1] * (m - a)[:, 0]


def test_pinned_coupler_with_default_settings_matches_a_segmented_chain():
    """The coupler with default settings (4 modes: its pinned end is an interface point) follows a
    chain of 4 corotational segments of the old basis (cantilever plus static tip modes, no
    interface modes) to 1 % of the peak midspan deflection over the whole run. The chain is
    converged: 8 segments of 2 elements differ from it by 0.08 % of the peak (measured, 213 s)."""
    default = _slider_crank()
    r = flexmbs.simulate(default, 0.06)
    chain = _slider_crank(segments=4, interface_modes=False, acceleration_modes=False)
    chain.sensors.append(Sensor("mid", "coupler", "mid"))
    reference = _midspan_from_positions(flexmbs.simulate(chain, 0.06))
    peak = np.abs(reference).max()
    assert peak > 5e-4  # about 1 mm, 0.3 % of the length: small deflection
    assert np.abs(_midspan_from_modes(default, r) - reference).max() < 1e-2 * peak
    # the cantilever basis alone misses the pinned end's constraint: 6 % off here
    cantilever = _slider_crank(interface_modes=False, acceleration_modes=False)
    r_c = flexmbs.simulate(cantilever, 0.06)
    assert np.abs(_midspan_from_modes(cantilever, r_c) - reference).max() > 3e-2 * peak
