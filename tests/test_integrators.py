"""Integrators against analytic solutions: orders of convergence, the stiff method on a stiff
joint, Jacobian and factorisation reuse, RK4's stability bound, and the error norm on Huang's arm."""

import re
import warnings
from dataclasses import replace

import numpy as np
import pytest

import flexmbs
from flexmbs.model.loader import model_from_dict
from flexmbs.simulate import simulate
from flexmbs.solvers import stepper as stepper_module
from flexmbs.solvers.stepper import Settings, StabilityWarning, Stepper
from flexmbs.compile import compile_model

from mechanisms import compound_pendulum


def joint_oscillator(inertia: float, stiffness: float, damping: float, q0: float = 1.0):
    """A rigid body on a revolute joint with a spring-damper, no gravity:
    inertia q'' + damping q' + stiffness q = 0 (the body's inertia about the axis [kg m^2])."""
    return model_from_dict(dict(
        name="joint_oscillator", gravity=[0, 0, 0], ground=dict(markers=[dict(name="origin")]),
        bodies=[dict(name="bar", mass=1.0, inertia=[inertia] * 3, markers=[dict(name="pivot")])],
        joints=[dict(name="j", type="revolute", parent="ground", parent_marker="origin", child="bar",
                     child_marker="pivot", q0=[q0], spring=dict(stiffness=stiffness, damping=damping))],
        solver=dict(output_step=0.1)))


def exact_oscillator(t, inertia, stiffness, damping, q0=1.0):
    """q(t) of inertia q'' + damping q' + stiffness q = 0 from q0 at rest (distinct roots)."""
    lam = np.roots([inertia, damping, stiffness]).astype(complex)
    a, b = np.linalg.solve(np.array([[1, 1], lam]), [q0, 0.0])
    return (a * np.exp(lam[0] * t) + b * np.exp(lam[1] * t)).real


def fixed_step(method, h):
    """Settings that make the adaptive methods take equal steps h: the loosest tolerances
    accepted (rtol 1, atol 1: an error of the size of the state itself, which no error reaches
    at these steps) and max_step = h (the order test needs the step, not the controller, to set
    the error)."""
    return dict(method=method, step=h, max_step=h, rtol=1.0, atol=1.0)


# ------------------------------------------------------------------ orders of convergence

@pytest.mark.parametrize("method, order", [("rk4", 4), ("dopri5", 5), ("implicit", 3), ("radau", 5)])
def test_order_on_harmonic_oscillator(method, order):
    """Global error over 1 s of an undamped 1 Hz oscillator against cos(omega t), halving h:
    the observed order log2(e(h) / e(h/2)) is the method's order."""
    I, k = 1.0, (2 * np.pi) ** 2
    model = joint_oscillator(I, k, 0.0)
    errs = []
    for h in (0.05, 0.025, 0.0125):
        r = simulate(model, 1.0, **fixed_step(method, h))
        # largest over the samples: at a single extremum the phase error would drop out
        errs.append(np.abs(r["j.q"] - exact_oscillator(r.time, I, k, 0.0)).max())
    p = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(np.abs(p - order) < 0.35), (errs, p)


def test_implicit_keeps_order_three_with_one_old_jacobian():
    """ROS34PW2 is a W-method: on the nonlinear pendulum (a 2 rad swing, so the Jacobian changes
    a lot) it keeps order 3 while using the single Jacobian of the initial state (the renewal on
    motion switched off). Order from successive differences of step sizes (no reference)."""
    system = compile_model(compound_pendulum(q0=2.0))
    ends, jacs = [], []
    for h in (0.02, 0.01, 0.005, 0.0025):
        stepper = Stepper(system, Settings(**fixed_step("implicit", h)))
        stepper.jac_move = np.inf
        x = np.concatenate([system.q0, system.u0])
        samples = []
        for k in range(10):
            stepper.advance(0.1 * k, x, 0.1 * (k + 1), np.zeros(1))
            samples.append(x[0])
        ends.append(np.array(samples))
        jacs.append(stepper.njacobians)
    d = np.array([np.abs(b - a).max() for a, b in zip(ends[:-1], ends[1:])])
    p = np.log2(d[:-1] / d[1:])
    assert jacs == [1, 1, 1, 1]
    assert np.all(np.abs(p - 3) < 0.35), p


def test_implicit_renews_its_jacobian_where_the_model_changes_and_only_there():
    """The move test asks the model before it renews J: a pendulum swinging 2 rad under gravity
    changes its Jacobian with the angle (d(qdd)/dq = -(m g l / I) cos q), so J is renewed as it
    swings; the same pendulum in zero gravity turns as far with a constant Jacobian (one)."""
    swinging = simulate(compound_pendulum(q0=2.0), 2.0, method="implicit", rtol=1e-8)
    assert np.ptp(swinging["hinge.q"]) > 3.0 and swinging.stats["jacobians"] > 5
    free = compound_pendulum(q0=2.0)
    free.gravity = (0.0, 0.0, 0.0)
    free.joints[0].qd0 = (3.0,)
    turning = simulate(free, 2.0, method="implicit", rtol=1e-8)
    assert np.ptp(turning["hinge.q"]) > 3.0 and turning.stats["jacobians"] == 1


# ------------------------------------------------------------------ stiff joint

STIFF = dict(inertia=0.01, stiffness=100.0, damping=100.0)   # eigenvalues -1.01 and -9999 1/s
T_STIFF = 2.0   # its run [s]


@pytest.fixture(scope="module")
def stiff_runs() -> dict:
    """The overdamped stiff joint over T_STIFF at rtol 1e-6 under dopri5, implicit and radau, each
    method's error against the exact solution checked (< 1e-6 rad): run once for the tests
    that compare them."""
    model = compile_model(joint_oscillator(**STIFF))
    runs = {m: simulate(model, T_STIFF, method=m, rtol=1e-6) for m in ("dopri5", "implicit", "radau")}
    for m, r in runs.items():
        err = np.abs(r["j.q"] - exact_oscillator(r.time, **STIFF)).max()
        assert err < 1e-6, (m, err)
    return runs


def test_implicit_steps_at_the_accuracy_limit_on_a_stiff_joint(stiff_runs):
    """Overdamped stiff joint: the fast eigenvalue (-1e4 1/s) forces dopri5 to steps of
    about 3.3/1e4 s for stability long after its transient decayed; the L-stable implicit
    method follows the slow mode (-1 1/s). Both meet 1e-6 rad against the exact solution; the
    implicit one takes far fewer steps, evaluates one Jacobian (the problem is linear) and
    keeps its LU factors over most steps."""
    ri, rd = stiff_runs["implicit"], stiff_runs["dopri5"]
    # dopri5's stability bound alone needs T * 1e4 / 3.3 steps
    assert rd.stats["steps"] > 0.8 * T_STIFF * 9999 / 3.31
    assert ri.stats["steps"] * 10 < rd.stats["steps"]
    # renewed only as the joint travels (1 rad in steps of Stepper.jac_move = 0.05 rad)
    assert ri.stats["jacobians"] <= 1 + 1.0 / 0.05
    assert ri.stats["jacobians"] * 10 < ri.stats["steps"]
    assert ri.stats["factorizations"] < ri.stats["steps"] / 2


def test_radau_coefficients_are_those_of_radau_iia_order_5():
    """The Butcher table against the collocation conditions (sum_j a_ij c_j^(k-1) = c_i^k / k for
    k <= 3, the nodes the zeros of the Radau polynomial, the weights of order 5 quadrature), the
    transformation's block form, and the error estimate's weights against those printed in
    Hairer & Wanner II, Sec. IV.8 (dd = -(13 + 7 sqrt 6) / 3, (-13 + 7 sqrt 6) / 3, -1/3)."""
    from flexmbs.solvers import radau
    A, c = radau._A, radau.C
    for k in (1, 2, 3):
        np.testing.assert_allclose(A @ c ** (k - 1), c ** k / k, rtol=0, atol=1e-15)
    for k in range(1, 6):
        assert A[2] @ c ** (k - 1) == pytest.approx(1.0 / k, abs=1e-15)
    lam = radau.TI @ np.linalg.inv(A) @ radau.TM
    g, a, b = radau.G_REAL, radau.ALPHA, radau.BETA
    np.testing.assert_allclose(lam, [[g, 0, 0], [0, a, -b], [0, b, a]], atol=1e-12)
    s6 = np.sqrt(6.0)
    np.testing.assert_allclose(radau.DD, [-(13 + 7 * s6) / 3, (-13 + 7 * s6) / 3, -1 / 3], rtol=1e-12)


def test_radau_steps_at_the_accuracy_limit_on_a_stiff_joint(stiff_runs):
    """The overdamped stiff joint (eigenvalues -1.01 and -9999 1/s): Radau IIA, L-stable, meets
    1e-6 rad against the exact solution in a small fraction of dopri5's steps, on one Jacobian
    (the problem is linear: its Newton iterations converge with it)."""
    runs = stiff_runs
    assert runs["radau"].stats["steps"] * 20 < runs["dopri5"].stats["steps"]
    assert runs["radau"].stats["jacobians"] == 1


def test_radau_meets_a_tight_tolerance_on_the_crank_rocker_in_few_steps():
    """He's crank-rocker with interface modes (the coupler up to 2.3 kHz, dopri5 held by
    stability), 0.5 s under 1 N m: Radau IIA at rtol 1e-5 within 1e-5 rad of dopri5 at rtol
    1e-10 on the crank and rocker angles (the crank turns about 10 rad), in a fifth of its
    steps, and tightening rtol to 1e-7 brings it ten times closer (2.3e-7, 9.2e-8 and 1.1e-8 rad
    at rtol 1e-5, 1e-6 and 1e-7 measured, each step projected onto the loop)."""
    system = compile_model(flexmbs.load_model("he_crank_rocker"))
    run = {rtol: simulate(system, 0.5, inputs={"crank.tau": 1.0}, method="radau", rtol=rtol, max_step=0.01)
           for rtol in (1e-5, 1e-7)}
    ref = simulate(system, 0.5, inputs={"crank.tau": 1.0}, method="dopri5", rtol=1e-10)
    assert ref["crank.q"][-1] > 9.0
    err = {rtol: max(np.abs(r[j] - ref[j]).max() for j in ("crank.q", "rocker.q")) for rtol, r in run.items()}
    assert err[1e-5] < 1e-5 and err[1e-7] < err[1e-5] / 10, err
    assert run[1e-5].stats["steps"] * 5 < ref.stats["steps"]


def test_radau_steps_past_the_crank_rockers_samples_on_its_loop():
    """simulate(interpolate=True) on a loop model: Radau IIA steps past the crank-rocker's 1 ms
    samples (max_step 20 ms), projecting each step onto the loop, and interpolates the samples,
    projected too. Within 1e-5 rad of dopri5 at rtol 1e-10 at rtol 1e-5 (the crank turns about
    10 rad), its samples on the loop (the cut joint's gap), in under half the steps of landing
    on each sample. Its Newton iterations are not stalled by the projections: under a third of
    the trials rejected (tests/test_loops.py checks the weights that keep the corrections out of
    the coupler's stiff interface modes)."""
    system = compile_model(flexmbs.load_model("he_crank_rocker"))
    run = dict(inputs={"crank.tau": 1.0}, method="radau", rtol=1e-5, max_step=0.02)
    past = simulate(system, 0.5, interpolate=True, **run)
    landing = simulate(system, 0.5, **run)
    ref = simulate(system, 0.5, inputs={"crank.tau": 1.0}, method="dopri5", rtol=1e-10)
    assert ref["crank.q"][-1] > 9.0
    assert max(np.abs(past[j] - ref[j]).max() for j in ("crank.q", "rocker.q")) < 1e-5
    assert np.max(past["rocker_pin.gap"]) < 1e-10
    assert past.stats["steps"] * 2 < landing.stats["steps"]
    assert past.stats["rejected"] * 3 < past.stats["steps"] + past.stats["rejected"], past.stats


@pytest.mark.parametrize("method", ["implicit", "radau"])
def test_the_kernel_projects_the_samples_it_interpolates_onto_the_loop(method, monkeypatch):
    """Stepping past the crank-rocker's samples, the implicit methods project each interpolated
    sample onto the loop in their kernel (common.onto_sample): its positions and velocities
    satisfy the constraints, and the Stepper's own projection (a Python call per sample, a
    tenth of the run) is called for none of them."""
    system = compile_model(flexmbs.load_model("he_crank_rocker"))
    run = dict(inputs={"crank.tau": 1.0}, method=method, rtol=1e-4, max_step=0.02, interpolate=True)
    simulate(system, 0.01, **run)   # its preparation (warmup.prepare) projects a landed call's output
    calls = []
    close = Stepper._close_loops
    monkeypatch.setattr(Stepper, "_close_loops", lambda self, t, x: (calls.append(t), close(self, t, x))[1])
    r = simulate(system, 0.3, **run)
    assert r.stats["steps"] * 3 < r.time.size and calls == []
    loops = Stepper(system, Settings(method=method)).loops
    nq, nv = system.nq, system.nv
    for x in r.states:
        g, G = loops.eval(x[:nq], x[nq:nq + nv])
        assert np.abs(g).max() < 1e-10 and np.abs(G @ x[nq:nq + nv]).max() < 1e-9


@pytest.mark.parametrize("method", ["implicit", "radau"])
def test_implicit_methods_keep_their_own_state_on_the_loop(method):
    """The implicit methods project each step onto the loop constraints in their kernel
    (common.onto_manifold), so one call over 2 s of the crank-rocker spinning up ends on them
    before the Stepper projects its output: unprojected, the index-1 equations' drift grew to
    5e-5 m under radau at rtol 1e-4."""
    system = compile_model(flexmbs.load_model("he_crank_rocker"))
    stepper = Stepper(system, Settings(method=method, rtol=1e-4, max_step=0.02))
    x = system.x0.copy()
    status, _ = stepper._implicit(0.0, x, 2.0, np.ones(1), stepper.no_t, stepper.no_X)
    assert status == 0 and x[0] > 100.0   # the crank turned over 15 times
    assert stepper.loops.residual(x[:system.nq], x[system.nq:system.nq + system.nv]) < 1e-10


def test_implicit_reuses_jacobian_on_the_flexible_arm():
    """Huang's two-link arm (nonlinear, 4 modes): Jacobians are re-evaluated far less often
    than steps, and the motion agrees with dopri5 at a tight tolerance."""
    model = flexmbs.load_model("huang_two_link")
    r = simulate(model, 0.2, method="implicit", rtol=1e-6)
    ref = simulate(model, 0.2, method="dopri5", rtol=1e-10)
    assert r.stats["jacobians"] * 20 < r.stats["steps"]
    for name in ("shoulder.q", "elbow.q"):
        assert np.abs(r[name] - ref[name]).max() < 1e-4


# ------------------------------------------------------------------ RK4 stability bound

def test_implicit_samples_between_its_steps_follow_the_tolerance():
    """simulate(interpolate=True): the implicit method steps past the output samples (up to
    max_step) and interpolates them (cubic Hermite, of its order 3): on a 1 Hz oscillator sampled every 1 ms with
    max_step 50 ms, every sample is within 10 rtol of cos(omega t) at three tolerances (5.8-6.7
    rtol measured), where linear interpolation between the steps would be about 360 rtol off at
    rtol 1e-8 (h^2 omega^2 / 8 at its 0.86 ms steps), and the run takes a fraction of the 2,000
    steps that landing on the samples takes (106 and 493 at rtol 1e-4 and 1e-6)."""
    I, k = 1.0, (2 * np.pi) ** 2
    system = compile_model(joint_oscillator(I, k, 0.0))
    for rtol in (1e-4, 1e-6, 1e-8):
        r = simulate(system, 2.0, method="implicit", rtol=rtol, max_step=0.05, output_step=1e-3, interpolate=True)
        assert np.abs(r["j.q"] - exact_oscillator(r.time, I, k, 0.0)).max() < 10 * rtol, rtol
        assert rtol < 1e-6 or r.stats["steps"] < 2000 / 4, (rtol, r.stats["steps"])


def test_implicit_samples_across_blocks_are_those_of_one_block(monkeypatch):
    """The interpolating implicit run goes through its samples in numba calls of a block each
    (stepper.IMPLICIT_BLOCK, 7 here: 143 blocks); each call lands on its block's last sample
    and the next goes on from there. Every sample is filled and within 10 rtol of the one-block
    run and of cos(omega t), on both sides of every block boundary."""
    I, k, rtol = 1.0, (2 * np.pi) ** 2, 1e-6
    system = compile_model(joint_oscillator(I, k, 0.0))
    whole = simulate(system, 1.0, method="implicit", rtol=rtol, max_step=0.05, output_step=1e-3, interpolate=True)
    monkeypatch.setattr(stepper_module, "IMPLICIT_BLOCK", 7)
    blocks = simulate(system, 1.0, method="implicit", rtol=rtol, max_step=0.05, output_step=1e-3, interpolate=True)
    assert blocks.time.size == 1001 and np.all(np.isfinite(blocks["j.q"]))
    assert np.abs(blocks["j.q"] - whole["j.q"]).max() < 10 * rtol
    assert np.abs(blocks["j.q"] - exact_oscillator(blocks.time, I, k, 0.0)).max() < 10 * rtol


def test_implicit_samples_of_a_stiff_beam_agree_with_landing_on_them():
    """The 3-frame spin-up beam (interface and static shapes: stiff) at rtol 1e-3: stepping up
    to 50 ms past its 10 ms samples (about 400 steps) against landing on each (2,002 steps of
    10 ms): the tip's position within 2e-4 m (8e-5 measured; each run is 3.6-3.8e-4 m from
    exudyn's converged one, benchmarks/spin_up_reference_ws6.json), its velocity within 2e-3
    m/s, the hub's drive torque (from the accelerations at the interpolated states, where
    the stiff shapes' interpolation errors would show) within 1e-3 of its range."""
    model = flexmbs.load_model("spin_up_beam")
    model.bodies[0] = replace(model.bodies[0], segments=3, elements=3, modes=2)
    system = compile_model(model)
    runs = [simulate(system, 20.0, method="implicit", rtol=1e-3, max_step=h, output_step=0.01, interpolate=dense)
            for h, dense in ((0.05, True), (0.01, False))]
    assert runs[0].stats["steps"] < 500 and runs[1].stats["steps"] >= 2000
    for name, bound in (("tip.r[2]", 2e-4), ("tip.v[2]", 2e-3), ("hub.tau", 1e-3 * np.ptp(runs[1]["hub.tau"]))):
        assert np.abs(runs[0][name] - runs[1][name]).max() < bound, name


def test_rk4_warns_past_its_stability_bound():
    """Undamped oscillator omega = 200 rad/s: RK4's stability interval on the imaginary axis is
    |h omega| <= 2 sqrt(2), so the bound is 2 sqrt(2) / omega = 14.14 ms; the warning names it
    and the mode's frequency omega / 2 pi = 31.83 Hz; a step just below it runs silently."""
    I, k = 1.0, 200.0 ** 2
    model = joint_oscillator(I, k, 0.0)
    bound = 2 * np.sqrt(2) / 200.0
    with pytest.warns(StabilityWarning, match=r"stability bound 14\.1\d ms .* 31\.8\d Hz"):
        r = simulate(model, 2.0, method="rk4", step=1.05 * bound, output_step=2.0)
    assert abs(r["j.q"][-1]) > 1e3   # |q| <= 1 exactly: the step past the bound amplifies
    with warnings.catch_warnings():
        warnings.simplefilter("error", StabilityWarning)
        r = simulate(model, 0.5, method="rk4", step=0.98 * bound, output_step=0.5)
    assert np.isfinite(r["j.q"]).all()


def test_rk4_stability_bound_of_eigenvalues_on_the_region_edge():
    """RK4's stability region (|1 + z + z^2/2 + z^3/6 + z^4/24| <= 1) meets the imaginary axis at
    |z| = 2 sqrt(2) and the negative real axis at z = -2.7853 (R(-x) = 1: the real root of
    x^3/24 - x^2/6 + x/2 - 1); the bound of a set is the smallest |z| / |lambda| along its rays,
    physically growing modes (Re lambda > 0.1 |lambda|) and zero eigenvalues set none; the region
    is symmetric about the real axis, so a lone eigenvalue has its pair's bound."""
    from flexmbs.solvers.stepper import rk4_stability_bound

    edge = 2.785293563405282
    assert abs(np.polyval([1 / 24, -1 / 6, 1 / 2, -1], edge)) < 1e-12
    bound, lam = rk4_stability_bound(np.array([200j, -200j, -50.0, 0.0, 30.0, 1 + 100j]))
    assert bound == pytest.approx(2 * np.sqrt(2) / 200.0, rel=1e-4) and abs(lam) == pytest.approx(200.0)
    bound, lam = rk4_stability_bound(np.array([-1000.0, 10j, -10j]))
    assert bound == pytest.approx(edge / 1000.0, rel=1e-4) and lam == -1000.0
    assert rk4_stability_bound(np.array([0.0, 5.0, 3 + 1j])) == (np.inf, None)
    bound, _ = rk4_stability_bound(np.array([-200j, -1.0]))   # a lone eigenvalue of a complex matrix
    assert bound == pytest.approx(2 * np.sqrt(2) / 200.0, rel=1e-4)
    ray = np.exp(2.5j)            # between the axes: the bound times |lambda| is R's edge on this ray
    bound, _ = rk4_stability_bound(np.array([100.0 * ray]))
    R = lambda w: abs(1 + w + w ** 2 / 2 + w ** 3 / 6 + w ** 4 / 24)
    assert R(0.999 * 100.0 * bound * ray) <= 1.0 < R(1.001 * 100.0 * bound * ray)


def test_rk4_failure_keeps_every_sample_before_it():
    """Undamped oscillator omega = 200 rad/s stepped at 1.5x RK4's bound: each step multiplies
    the mode's amplitude sqrt(q^2 + (qdot/omega)^2) by |R(i h omega)| exactly (R the RK4
    polynomial; ~10 here) until the state overflows. The SolverError's partial result holds every
    sample before the failure, each at |R|^(steps so far) of the initial amplitude."""
    omega = 200.0
    model = joint_oscillator(1.0, omega ** 2, 0.0)
    step, dt = 1.5 * 2 * np.sqrt(2) / omega, 0.5
    n = int(np.ceil(dt / step))       # rk4 takes n equal steps per sample interval
    z = 1j * omega * dt / n
    gain = abs(1 + z + z ** 2 / 2 + z ** 3 / 6 + z ** 4 / 24) ** n
    with pytest.warns(StabilityWarning), pytest.raises(flexmbs.SolverError) as failure:
        simulate(model, 20.0, method="rk4", step=step, output_step=dt)
    part = failure.value.partial
    k = np.arange(part.time.size)
    assert 3 <= k.size < 40 and np.allclose(part.time, k * dt)
    amplitude = np.hypot(part["j.q"], part["j.qd"] / omega)
    assert np.allclose(amplitude, gain ** k, rtol=1e-9, atol=0.0)
    assert failure.value.time == pytest.approx(part.time[-1] + dt)   # it failed in the next interval
    # ... the one in which the amplitude passes 4.5e303, where the spring force omega^2 q
    # overflows, or at the latest 1.8e308, the largest float: no sample the run reached is missing
    digits = np.log10(gain)
    assert digits * (k.size - 1) < 303.6 and digits * k.size > 308.3


def test_rk4_samples_follow_the_rk4_map_across_blocks(monkeypatch):
    """simulate integrates RK4 through its samples in blocks of stepper.SAMPLE_BLOCK steps (set
    to 500 here: 10 blocks). On the undamped oscillator RK4 is the linear map P(hA) = I + hA +
    (hA)^2/2 + (hA)^3/6 + (hA)^4/24 per step, so sample k is P(hA)^(10 k) [q0; 0] exactly up to
    round-off: every sample, on both sides of every block boundary."""
    monkeypatch.setattr(stepper_module, "SAMPLE_BLOCK", 500)
    omega, h, dt = 200.0, 1e-3, 1e-2
    r = simulate(joint_oscillator(1.0, omega ** 2, 0.0), 5.0, method="rk4", step=h, output_step=dt)
    Z = h * np.array([[0.0, 1.0], [-omega ** 2, 0.0]])
    P = np.eye(2) + Z + Z @ Z / 2 + Z @ Z @ Z / 6 + Z @ Z @ Z @ Z / 24
    y, expected = np.array([1.0, 0.0]), []
    for _ in range(r.time.size):
        expected.append(y)
        y = np.linalg.matrix_power(P, 10) @ y
    expected = np.array(expected)
    assert r.stats["steps"] == 5000
    assert np.allclose(r["j.q"], expected[:, 0], rtol=0.0, atol=1e-10)
    assert np.allclose(r["j.qd"], expected[:, 1], rtol=0.0, atol=200 * 1e-10)


def test_rk4_bound_includes_damping():
    """A damped mode (zeta = 0.5) is bounded where |R(h lambda)| = 1 on the ray of lambda,
    found here by bisection on the stability polynomial independently of the sampled search."""
    I, omega, zeta = 1.0, 200.0, 0.5
    model = joint_oscillator(I, omega ** 2, 2 * zeta * omega * I)
    lam = omega * complex(-zeta, np.sqrt(1 - zeta ** 2))

    def R(h):
        z = h * lam
        return abs(1 + z + z ** 2 / 2 + z ** 3 / 6 + z ** 4 / 24)

    lo, hi = 1e-6, 0.05
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if R(mid) <= 1 else (lo, mid)
    with pytest.warns(StabilityWarning) as record:
        try:
            simulate(model, 0.5, method="rk4", step=1.02 * lo, output_step=0.5)
        except flexmbs.SolverError:
            pass
    stated = float(re.search(r"stability bound ([0-9.]+) ms", str(record[0].message)).group(1)) * 1e-3
    assert abs(stated - lo) < 2e-3 * lo


# ------------------------------------------------------------------ error norm

def test_dopri5_meets_its_tolerance_on_joint_angles_of_huangs_arm():
    """The error norm weights modal coordinates by the deflection they cause (body size as the
    length scale): the joint angles of Huang's arm stay within a small multiple of rtol of a
    tight fixed-step RK4 reference (h = 20 us, about 1e-11 rad), at two tolerances."""
    model = flexmbs.load_model("huang_two_link")
    T = 0.5
    ref = simulate(model, T, method="rk4", step=2e-5)
    for rtol in (1e-5, 1e-7):
        r = simulate(model, T, method="dopri5", rtol=rtol)
        err = max(np.abs(r[n] - ref[n]).max() for n in ("shoulder.q", "elbow.q"))
        assert err < 10 * rtol, (rtol, err)


# ------------------------------------------------------------------ dopri5 serving communication steps

def _communicate(system, dense: bool, n: int, dt: float, rtol: float = 1e-6):
    """n calls of dt [s] with the inputs held, as a co-simulation master makes them; returns the
    stepper and the first coordinate at every communication point."""
    stepper = Stepper(system, Settings(method="dopri5", rtol=rtol), dense=dense)
    x = np.concatenate([system.q0, system.u0])
    u = np.zeros(max(1, len(system.inputs)))
    q = [x[0]]
    for k in range(n):
        stepper.advance(k * dt, x, (k + 1) * dt, u)
        q.append(x[0])
    return stepper, np.array(q)


def test_dopri5_dense_output_serves_communication_steps():
    """2,000 calls of 1 ms on a 1 Hz oscillator: served from dense output, dopri5 evaluates the
    first stage once for the whole run (first-same-as-last kept across calls) and takes its own
    steps, 11 times fewer right-hand sides than landing on every call (measured 1,213 against
    14,000), and the interpolated angles stay within 1e-7 rad of cos(omega t) (3.4e-9 measured)."""
    I, k = 1.0, (2 * np.pi) ** 2
    system = compile_model(joint_oscillator(I, k, 0.0))
    landing, _ = _communicate(system, False, 2000, 1e-3)
    dense, q = _communicate(system, True, 2000, 1e-3)
    assert dense.nrhs == 6 * (dense.nsteps + dense.nrejected) + 1
    assert landing.nrhs == 6 * (landing.nsteps + landing.nrejected) + 2000
    assert dense.nrhs < landing.nrhs / 5
    t = np.arange(2001) * 1e-3
    assert np.abs(q - exact_oscillator(t, I, k, 0.0)).max() < 1e-7


def test_dopri5_dense_output_on_huangs_arm_at_1_ms():
    """Huang's arm at its default settings (rtol 1e-6), 1,000 calls of 1 ms: from dense output
    dopri5 saves more right-hand sides than the 1,000 first stages it no longer recomputes
    (measured 12,289 against 16,222), and its joint angles agree with the landed run to within
    its tolerance (1.8e-8 rad measured)."""
    system = compile_model(flexmbs.load_model("huang_two_link"))
    landing, q_landing = _communicate(system, False, 1000, 1e-3, rtol=1e-6)
    dense, q_dense = _communicate(system, True, 1000, 1e-3, rtol=1e-6)
    assert dense.nrhs <= landing.nrhs - 1000
    assert np.abs(q_dense - q_landing).max() < 1e-5


def test_dopri5_dense_output_on_a_closed_loop():
    """The four-bar (one cut joint; its file's undamped, horizontal linkage keeps its kinetic
    energy), 200 calls of 10 ms with the inputs held: dopri5 steps past the communication points
    and serves them from dense output, each output and its own state projected onto the loop
    constraints. It takes under half the landing run's right-hand sides at rtol 1e-6 (measured
    428 against 1,412: landing held its steps to 10 ms), under 3/4 at 1e-8 (853 against 1,568);
    every output is on the constraints;
    its crank angle converges to the landed rtol-1e-12 run as the tolerance tightens (1.7e-5,
    4.6e-8 rad measured at rtol 1e-6, 1e-8); and simulate, which serves its output points the
    same way, keeps the kinetic energy constant to 1e-6."""
    from flexmbs.loops import TOL
    from flexmbs.signals import signal_table

    system = compile_model(flexmbs.load_model("four_bar"))
    landing, reference, _ = _communicate_states(system, False, 1e-12)
    crank = next(s.index for s in signal_table(system) if s.name == "crank.q")
    errors = {}
    for rtol in (1e-6, 1e-8):
        landed, _, _ = _communicate_states(system, False, rtol)
        dense, X, residuals = _communicate_states(system, True, rtol)
        assert dense.nrhs < {1e-6: 0.5, 1e-8: 0.75}[rtol] * landed.nrhs, (rtol, dense.nrhs, landed.nrhs)
        assert max(residuals) <= TOL
        errors[rtol] = np.abs(X[:, crank] - reference[:, crank]).max()
    assert errors[1e-6] < 1e-4 and errors[1e-8] < errors[1e-6] / 30, errors
    run = simulate(system.model, 2.0, method="dopri5", rtol=1e-8, max_step=0.05, output_step=1e-2)
    assert run.stats["steps"] < 150   # from dense output: 118 measured, 200 when landing
    assert np.abs(run["energy.kinetic"] / run["energy.kinetic"][0] - 1.0).max() < 1e-6


def test_dopri5_memory_of_a_closed_loop_continues_bit_for_bit():
    """On the four-bar, a dense run's memory saved between two calls (as an FMU's get state does:
    it first projects the integrator's own state that the next call would project) and restored
    into a new Stepper: both go on with the same bits, as a run that was never saved does, and
    step past the calls (fewer steps than calls)."""
    system = compile_model(flexmbs.load_model("four_bar"))
    settings = Settings(method="dopri5", rtol=1e-6, max_step=0.05)
    u = np.zeros(1)
    runs = []
    for save in (False, True):
        stepper, x = Stepper(system, settings), system.x0.copy()
        for k in range(10):
            stepper.advance(k * 1e-2, x, (k + 1) * 1e-2, u)
        if save:
            memory, h = stepper.dopri5_memory(), stepper.h
            stepper = Stepper(system, settings)
            stepper.check_dopri5_memory(memory)
            stepper.restore_dopri5_memory(memory)
            stepper.h = h
        steps = stepper.nsteps
        for k in range(10, 40):
            stepper.advance(k * 1e-2, x, (k + 1) * 1e-2, u)
        runs.append((x.copy(), stepper.nsteps - steps))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1] < 30


def _communicate_states(system, dense: bool, rtol: float, n: int = 200, dt: float = 1e-2):
    """n calls of dt [s] with the inputs held; returns the stepper, the state after every call
    (from the start) and the loop constraints' largest residual there."""
    stepper = Stepper(system, Settings(method="dopri5", rtol=rtol, max_step=0.05), dense=dense)
    x = system.x0.copy()
    u = np.zeros(max(1, len(system.inputs)))
    states, residuals = [x.copy()], []
    for k in range(n):
        stepper.advance(k * dt, x, (k + 1) * dt, u)
        states.append(x.copy())
        residuals.append(stepper.loops.residual(x[:system.nq], x[system.nq:system.nq + system.nv]))
    return stepper, np.array(states), residuals


def test_dopri5_dense_output_restarts_when_the_state_was_changed():
    """A state set from outside between calls (as an FMU's set state or a master's correction
    does) is integrated from, not the integrator's own one: the next call gives bit for bit what
    a fresh integrator with the same step size and step-controller memory gives from that
    state."""
    system = compile_model(joint_oscillator(1.0, (2 * np.pi) ** 2, 0.0))
    settings = Settings(method="dopri5", rtol=1e-6)
    u = np.zeros(1)
    stepper = Stepper(system, settings, dense=True)
    x = np.concatenate([system.q0, system.u0])
    stepper.advance(0.0, x, 0.013, u)
    x[1] += 0.5
    twin, twin_x = Stepper(system, settings, dense=True), x.copy()
    twin.h, twin.ctl[:] = stepper.h, stepper.ctl
    stepper.advance(0.013, x, 0.1, u)
    twin.advance(0.013, twin_x, 0.1, u)
    np.testing.assert_array_equal(x, twin_x)


def _communicate_on(system, clock: str, inputs, n: int = 50, dt: float = 1e-2):
    """n calls of dt [s] on Huang's arm with inputs(k) before call k, the call times on one of
    two clocks that differ in their last bits: 'grid' (k dt, as a master counts) or 'sum' (the
    last call's t + dt, as an FMU adds); returns the stepper and the elbow angle after each call."""
    stepper = Stepper(system, Settings(method="dopri5", rtol=5e-7))
    x = np.concatenate([system.q0, system.u0])
    t, out = 0.0, []
    for k in range(n):
        t0 = k * dt if clock == "grid" else t
        t = (k + 1) * dt if clock == "grid" else t0 + dt
        stepper.advance(t0, x, t, inputs(k))
        out.append(x[1])
    return stepper, np.array(out)


@pytest.mark.parametrize("acceleration_modes, bound", [(False, 1e-13), (True, 1e-11)])
def test_dopri5_steps_do_not_depend_on_the_last_bits_of_the_call_times(acceleration_modes, bound):
    """The same 50 calls of 10 ms on Huang's arm on two clocks that differ only by rounding
    (k h against repeated t + h) take the same steps, rejections and right-hand sides and agree
    to 1e-13 rad, with inputs held (served from dense output) and with inputs changed at every
    call (landed): no step decision hangs on the last bits of a call's end. (Judging the step
    after a landing by the short landing step alone made them differ by 1e-9 rad.) With the
    link's acceleration shapes (the default basis: 463 and 650 Hz, near dopri5's stability
    bound) the same decisions leave round-off amplified to 1.3e-12 rad (measured): 1e-11."""
    model = flexmbs.load_model("huang_two_link")
    model.body("link2").acceleration_modes = acceleration_modes
    system = compile_model(model)
    for inputs in (lambda k: np.zeros(2), lambda k: np.array([0.5 * np.sin(0.2 * k), 0.2 * np.cos(0.3 * k)])):
        on_grid, grid = _communicate_on(system, "grid", inputs)
        on_sum, summed = _communicate_on(system, "sum", inputs)
        counts = [(s.nsteps, s.nrejected, s.nrhs) for s in (on_grid, on_sum)]
        assert counts[0] == counts[1]
        assert np.abs(grid - summed).max() < bound


def test_dopri5_lands_on_calls_whose_inputs_changed():
    """Inputs changed at every call, as a controller's: the call lands on its end (stepping
    past it would be wasted), so the run is bit for bit the landing integrator's, with the same
    count of right-hand sides (with the inputs held the dense run takes fewer:
    test_dopri5_dense_output_on_huangs_arm_at_1_ms)."""
    system = compile_model(flexmbs.load_model("huang_two_link"))
    changing = lambda k: np.array([0.5 * np.sin(0.2 * k), 0.2 * np.cos(0.3 * k)])  # noqa: E731
    runs = {}
    for dense in (True, False):
        stepper = Stepper(system, Settings(method="dopri5", rtol=5e-7), dense=dense)
        x = np.concatenate([system.q0, system.u0])
        for k in range(100):
            stepper.advance(k * 1e-3, x, (k + 1) * 1e-3, changing(k))
        runs[dense] = stepper.nrhs, x.copy()
    assert runs[True][0] == runs[False][0]
    np.testing.assert_array_equal(runs[True][1], runs[False][1])
