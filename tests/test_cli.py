"""The `flexmbs` command line (click's CliRunner): check, simulate and modes on the shipped
model files, and clean errors (message on stderr, exit status 1, no traceback).

Numbers are checked against independent references: the analytic equations of the double
compound pendulum (integrated here with scipy) and its small-oscillation frequencies, and the
Euler-Bernoulli cantilever frequencies of the spin-up beam."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.integrate import solve_ivp

from flexmbs.cli import main
from flexmbs.model.catalog import models_dir

MODELS = models_dir()
PENDULUM = MODELS / "double_pendulum.yaml"
SPIN_UP = MODELS / "spin_up_beam.yaml"
G = 9.81


def run(*args: str):
    """Invoke the CLI; the result has .exit_code, .stdout and .stderr (click 8.1 and 8.2+)."""
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 always keeps stderr apart
        runner = CliRunner()
    return runner.invoke(main, [str(a) for a in args])


def assert_clean_error(result, *words: str) -> None:
    assert result.exit_code == 1, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    assert result.exception is None or isinstance(result.exception, SystemExit)
    for word in words:
        assert word in result.stderr, (word, result.stderr)


# ------------------------------------------------------------------ independent references

def compound_double_pendulum(t_end: float) -> np.ndarray:
    """Absolute link angles [phi1, phi2] at t_end of two uniform rods (m = 1 kg, L = 1 m,
    hinged, gravity -9.81 along y) released horizontal from rest, from Lagrange's equations."""
    m, L, I = 1.0, 1.0, 1.0 / 12.0

    def f(_, x):
        p1, p2, w1, w2 = x
        c, s = np.cos(p1 - p2), np.sin(p1 - p2)
        M = np.array([[m * L**2 / 4 + I + m * L**2, m * L**2 / 2 * c],
                      [m * L**2 / 2 * c, m * L**2 / 4 + I]])
        rhs = np.array([-m * L**2 / 2 * s * w2**2 - 1.5 * m * G * L * np.cos(p1),
                        m * L**2 / 2 * s * w1**2 - 0.5 * m * G * L * np.cos(p2)])
        return [w1, w2, *np.linalg.solve(M, rhs)]

    sol = solve_ivp(f, (0.0, t_end), [0.0, 0.0, 0.0, 0.0], rtol=1e-12, atol=1e-12)
    return sol.y[:2, -1]


def compound_double_pendulum_frequencies() -> np.ndarray:
    """Small-oscillation frequencies [Hz] about the hanging position (absolute angles):
    M = [[4/3, 1/2], [1/2, 1/3]] m L^2, K = diag(3/2, 1/2) m g L."""
    M = np.array([[4.0 / 3.0, 0.5], [0.5, 1.0 / 3.0]])
    K = np.diag([1.5 * G, 0.5 * G])
    return np.sort(np.sqrt(np.linalg.eigvals(np.linalg.solve(M, K)).real)) / (2 * np.pi)


# ------------------------------------------------------------------ check

def test_check_good_model_lists_bodies_joints_and_outputs() -> None:
    result = run("check", PENDULUM)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "'double_pendulum'" in out and "valid" in out
    assert re.search(r"link1: rigid, mass 1 kg", out)
    assert re.search(r"shoulder: revolute ground\.origin -> link1\.root", out)
    assert re.search(r"elbow: revolute link1\.tip -> link2\.root", out)
    assert "drive torque (input shoulder.tau, default 0)" in out
    assert "inputs (2)" in out
    assert re.search(r"shoulder: q \[rad\], qd \[rad/s\]", out)
    assert "energy: kinetic [J]" in out


def test_check_flexible_body_prints_modes_near_the_analytic_cantilever_frequencies() -> None:
    """Spin-up beam: EI = 1.4e4 N m^2, rhoA = 1.2 kg/m, L = 10 m, clamped at the hub; the Euler-
    Bernoulli cantilever has omega_k = (beta_k L)^2 sqrt(EI / (rhoA L^4)), beta_1 L = 1.87510,
    beta_2 L = 4.69409; each appears twice (bending in y and in z). The beam keeps 4 normal modes
    and 2 acceleration shapes (acceleration_modes: true; axial, torsion); its lowest 4 are the
    cantilever's."""
    result = run("check", SPIN_UP)
    assert result.exit_code == 0, result.stderr
    match = re.search(r"6 modes \(4 normal \+ 2 interface/acceleration\) \[Hz\]: ([^,]+), ([^,]+), ([^,]+), ([^,\n]+),",
                      result.stdout)
    assert match, result.stdout
    freqs = np.array([float(v) for v in match.groups()])
    scale = np.sqrt(1.4e4 / (1.2 * 10.0**4)) / (2 * np.pi)
    exact = np.repeat([1.87510**2 * scale, 4.69409**2 * scale], 2)
    np.testing.assert_allclose(freqs, exact, rtol=2e-3)
    assert "drive motion spin_up(omega_s=6, t_s=15)" in result.stdout
    assert "hub: q [rad], qd [rad/s], qdd [rad/s2], tau [N.m]" in result.stdout
    assert "tip: r[1..3] [m]" in result.stdout


def test_check_bad_model_reports_every_problem_and_exits_1(tmp_path: Path) -> None:
    text = PENDULUM.read_text().replace("parent_marker: tip", "parent_marker: tipp")
    text = text.replace("    mass: 1.0\n", "    mass: -1.0\n", 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    result = run("check", bad)
    assert_clean_error(result, "invalid model (2 problems)", f"{bad}:",
                       "joints[1] 'elbow'.parent_marker", "unknown marker 'tipp'", "did you mean 'tip'?",
                       "bodies[0] 'link1'.mass", "expected a positive finite number")
    assert result.stdout == ""


def test_check_missing_file_is_a_clean_error(tmp_path: Path) -> None:
    result = run("check", tmp_path / "nowhere.yaml")
    assert_clean_error(result, "nowhere.yaml", "cannot read model file")


def test_debug_flag_shows_the_traceback(tmp_path: Path) -> None:
    result = run("--debug", "check", tmp_path / "nowhere.yaml")
    assert result.exit_code == 1
    assert type(result.exception).__name__ == "ModelError"


MODEL_FILES = sorted(MODELS.glob("*.yaml"))


@pytest.mark.parametrize("path", MODEL_FILES, ids=[p.stem for p in MODEL_FILES])
def test_every_shipped_model_checks_and_runs_briefly(path: Path, tmp_path: Path) -> None:
    result = run("check", path)
    assert result.exit_code == 0, result.stderr
    result = run("simulate", path, "--t-end", "0.02", "--no-progress", "--out", tmp_path / "r.csv")
    assert result.exit_code == 0, result.stderr
    assert "final joint values at t = 0.02 s" in result.stdout


# ------------------------------------------------------------------ simulate

def test_simulate_writes_csv_with_units_and_png(tmp_path: Path) -> None:
    csv, png = tmp_path / "run.csv", tmp_path / "run.png"
    result = run("simulate", PENDULUM, "--t-end", "0.2", "--out", csv, "--plot", png)
    assert result.exit_code == 0, result.stderr
    assert csv.is_file() and png.is_file()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import csv as csv_module
    with open(csv, newline="") as f:
        header = next(csv_module.reader(f))  # names like tip.R[1,2] are quoted
    assert header[0] == "time [s]"
    for column in ("shoulder.q [rad]", "elbow.qd [rad/s]", "tip.r[1] [m]", "energy.total [J]"):
        assert column in header
    assert all(re.fullmatch(r".+ \[.*\]", h) for h in header)
    data = np.loadtxt(csv, delimiter=",", skiprows=1)
    assert data.shape == (21, len(header))  # output_step 0.01 s: t = 0, 0.01, ..., 0.2
    np.testing.assert_allclose(data[:, 0], np.linspace(0.0, 0.2, 21), atol=1e-12)
    # the joint angles follow the analytic double compound pendulum
    phi1, phi2 = compound_double_pendulum(0.2)
    last = dict(zip(header, data[-1]))
    assert last["shoulder.q [rad]"] == pytest.approx(phi1, abs=1e-7)
    assert last["elbow.q [rad]"] == pytest.approx(phi2 - phi1, abs=1e-7)
    # summary on stdout
    out = result.stdout
    assert "solver   rk4 (step 0.001 s): 200 steps" in out
    assert "conservative model: drift" in out
    drift = float(re.search(r"drift max\|E - E\(0\)\| = (\S+) J", out).group(1))
    assert drift < 1e-8
    assert re.search(r"shoulder\s+q = -?[0-9.]+ rad, qd = -?[0-9.]+ rad/s", out)
    assert f"wrote {csv}" in out and f"wrote {png}" in out


def test_simulate_csv_is_valid_for_a_standard_csv_reader(tmp_path: Path) -> None:
    import csv as csv_module
    out = tmp_path / "run.csv"
    result = run("simulate", PENDULUM, "--t-end", "0.02", "--out", out, "--no-progress")
    assert result.exit_code == 0, result.stderr
    rows = list(csv_module.reader(out.read_text().splitlines()))
    assert len(rows[0]) == len(rows[1])
    assert "tip.R[1,2] [1]" in rows[0]


def test_simulate_signals_option_selects_the_columns(tmp_path: Path) -> None:
    csv = tmp_path / "sel.csv"
    result = run("simulate", PENDULUM, "--t-end", "0.05", "--signals", "shoulder.q, elbow.q",
                 "--out", csv, "--no-progress", "--method", "dopri5", "--rtol", "1e-9",
                 "--output-step", "0.025")
    assert result.exit_code == 0, result.stderr
    lines = csv.read_text().splitlines()
    assert lines[0] == "time [s],shoulder.q [rad],elbow.q [rad]"
    assert len(lines) == 1 + 3
    assert "solver   dopri5 (rtol 1e-09" in result.stdout


def test_simulate_unknown_signal_fails_before_running(tmp_path: Path) -> None:
    csv = tmp_path / "x.csv"
    result = run("simulate", PENDULUM, "--t-end", "1", "--signals", "shoulder.qq", "--out", csv)
    assert_clean_error(result, "no signal 'shoulder.qq'", "shoulder.q")
    assert not csv.exists()


def test_simulate_input_holds_an_input_as_the_api_does(tmp_path: Path) -> None:
    """--input NAME=VALUE holds the input through the run, as simulate(inputs=...) does (the CSV
    holds the same values), and the input moves the arm; a pair without '=' is refused."""
    import flexmbs

    csv = tmp_path / "run.csv"
    result = run("simulate", "huang_two_link_rigid", "--t-end", "0.2", "--input", "shoulder.tau=2.5",
                 "--out", csv, "--signals", "shoulder.q,elbow.q", "--no-progress")
    assert result.exit_code == 0, result.stderr
    data = np.loadtxt(csv, delimiter=",", skiprows=1)
    api = flexmbs.simulate("huang_two_link_rigid", 0.2, inputs={"shoulder.tau": 2.5})
    still = flexmbs.simulate("huang_two_link_rigid", 0.2)
    np.testing.assert_allclose(data[:, 1], api["shoulder.q"], rtol=1e-15, atol=1e-18)
    assert abs(api["shoulder.q"][-1] - still["shoulder.q"][-1]) > 1e-3
    bad = run("simulate", "huang_two_link_rigid", "--t-end", "0.2", "--input", "shoulder.tau")
    assert bad.exit_code != 0 and "NAME=VALUE" in bad.stderr


def test_simulate_solver_failure_is_a_clean_error() -> None:
    """RK4 with a step far beyond the stability limit of the 55 Hz bending pair diverges."""
    result = run("simulate", MODELS / "huang_two_link.yaml", "--t-end", "0.5", "--method", "rk4",
                 "--step", "0.05", "--no-progress")
    assert_clean_error(result, "simulation failed at t =")


def test_simulate_invalid_model_and_missing_file(tmp_path: Path) -> None:
    result = run("simulate", tmp_path / "missing.yaml", "--t-end", "1")
    assert_clean_error(result, "cannot read model file")
    bad = tmp_path / "bad.yaml"
    bad.write_text(PENDULUM.read_text().replace("type: revolute", "type: revolut", 1))
    result = run("simulate", bad, "--t-end", "1")
    assert_clean_error(result, "unknown 'revolut' (did you mean 'revolute'?)")


def test_simulate_unwritable_output_is_a_clean_error(tmp_path: Path) -> None:
    result = run("simulate", PENDULUM, "--t-end", "0.02", "--no-progress",
                 "--out", tmp_path / "no" / "such" / "dir" / "x.csv")
    assert_clean_error(result, "x.csv")


def test_simulate_requires_t_end() -> None:
    result = run("simulate", PENDULUM)
    assert result.exit_code == 2
    assert "--t-end" in result.stderr


# ------------------------------------------------------------------ modes

def test_modes_of_the_hanging_double_pendulum(tmp_path: Path) -> None:
    near_hanging = tmp_path / "hanging.yaml"
    near_hanging.write_text(PENDULUM.read_text().replace("q0: 0.0", "q0: -1.5", 1))
    result = run("modes", near_hanging, "--n", "2")
    assert result.exit_code == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if re.match(r"\s+\d+\s", line)]
    assert len(rows) == 2
    freqs = np.array([float(r[1]) for r in rows])
    np.testing.assert_allclose(freqs, compound_double_pendulum_frequencies(), rtol=5e-6)  # 6 digits shown
    assert "f [Hz]" in result.stdout and "zeta" in result.stdout


def test_modes_about_a_pose_the_inputs_hold(tmp_path: Path) -> None:
    """--input holds the pose: the double pendulum's shoulder torque T = g L (m1/2 + m2) cos(a)
    holds link 1 at a = -45 deg with link 2 hanging (q2 = -45 deg relative). The two
    frequencies are those of M(q2) and the gravity stiffness there, written out here:
    K = [[(m1/2 + m2) g L sin|a| + m2 g L/2, m2 g L/2], [m2 g L/2, m2 g L/2]], M from the links'
    inertia about their joints (L = 1 m, m = 1 kg, 1/12 kg m^2 about the COM). The option did
    not exist (a new user's trial, stop 52)."""
    a, g, L = -np.pi / 4, 9.81, 1.0
    held = tmp_path / "held.yaml"
    held.write_text(PENDULUM.read_text().replace("q0: 0.0", "q0: -0.7", 1).replace("q0: 0.0", "q0: -0.9", 1))
    torque = float(g * L * 1.5 * np.cos(a))
    result = run("modes", held, "--input", f"shoulder.tau={torque!r}")
    assert result.exit_code == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if re.match(r"\s+\d+\s", line)]
    q2, Ic = -np.pi / 2 - a, 1.0 / 12.0
    M = np.array([[Ic + 0.25 + Ic + L**2 + 0.25 + L * np.cos(q2), Ic + 0.25 + 0.5 * L * np.cos(q2)],
                  [Ic + 0.25 + 0.5 * L * np.cos(q2), Ic + 0.25]])
    K = np.array([[1.5 * g * L * np.sin(-a) + 0.5 * g * L, 0.5 * g * L], [0.5 * g * L, 0.5 * g * L]])
    expected = np.sqrt(np.sort(np.linalg.eigvals(np.linalg.solve(M, K)).real)) / (2 * np.pi)
    np.testing.assert_allclose([float(r[1]) for r in rows], expected, rtol=1e-4)


def test_modes_spin_flags_the_divergent_linear_beam() -> None:
    """Without geometric stiffening a beam spun at Omega above its first clamped frequency
    omega_1 has a real eigenvalue pair +-sqrt(Omega^2 - omega_1^2) (in-plane bending)."""
    result = run("modes", MODELS / "spin_up_beam_linear.yaml", "--n", "2", "--spin", "hub=6")
    assert result.exit_code == 0, result.stderr
    assert "spinning (hub = 6 rad/s)" in result.stdout
    first = next(line for line in result.stdout.splitlines() if re.match(r"\s+1\s", line))
    assert "divergent" in first
    omega1 = 1.87510**2 * np.sqrt(1.4e4 / (1.2 * 10.0**4))
    sigma = -float(first.split()[2])  # omega column, negative for a divergent mode
    assert sigma == pytest.approx(np.sqrt(36.0 - omega1**2), rel=2e-3)


def test_modes_bad_spin_arguments() -> None:
    result = run("modes", SPIN_UP, "--spin", "hub")
    assert result.exit_code == 2 and "JOINT=RATE" in result.stderr
    result = run("modes", SPIN_UP, "--spin", "hubb=3")
    assert_clean_error(result, "no joint named 'hubb'")


# ------------------------------------------------------------------ help

@pytest.mark.parametrize("command", ["simulate", "modes", "check"])
def test_help(command: str) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "MODEL" in result.stdout


# ------------------------------------------------------------------ docs

def test_the_model_file_reference_example_is_valid(tmp_path: Path) -> None:
    """The complete example of docs/model-file.md loads, compiles and lists its signals."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "model-file.md").read_text()
    example = doc[doc.index("## A complete example"):]
    block = re.search(r"```yaml\n(.*?)```", example, re.S).group(1)
    path = tmp_path / "arm.yaml"
    path.write_text(block)
    result = run("check", path)
    assert result.exit_code == 0, result.stderr
    for name in ("shoulder.tau (default 0)", "link2: eta[1..6] [1], tip_deflection[1..3] [m]",
                 "tip: r[1..3] [m]"):
        assert name in result.stdout


def test_check_lists_loops_and_their_redundant_rows() -> None:
    result = run("check", str(Path(PENDULUM).parent / "four_bar.yaml"))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "loops (1 cut joints, assembled with crank held):" in out
    assert "rocker_pin: revolute coupler.end -> rocker.tip" in out
    assert "5 constraint rows; redundant, dropped: rocker_pin: offset e3, rocker_pin: tilt e3.e1', " \
           "rocker_pin: tilt e3.e2'" in out
    assert "rocker_pin: gap [m]" in out or "rocker_pin: gap" in out


def test_a_reader_that_closes_the_pipe_gets_no_error_message() -> None:
    """`flexmbs simulate ... --out /dev/stdout | head -1`: the pipe closes while the signals are
    written; the command ends quietly (no "Error: [Errno 32] Broken pipe" on stderr, which it
    printed when the broken pipe passed for a user error)."""
    import subprocess
    import sys

    run = subprocess.Popen([sys.executable, "-m", "flexmbs", "simulate", "double_pendulum", "--t-end", "20",
                            "--output-step", "0.001", "--no-progress", "--out", "/dev/stdout"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert run.stdout.readline().startswith(b"time")
    run.stdout.close()
    err = run.stderr.read().decode()
    run.wait(timeout=300)
    assert "Broken pipe" not in err and "Error" not in err, err
