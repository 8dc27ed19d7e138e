"""`flexmbs linearize` writes the named matrices (.npz, .mat), and LinearSystem.to_control()
gives a python-control StateSpace with those names whose frequency response is
C (j w I - A)^-1 B + D computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from flexmbs import equilibrium, linearize
from flexmbs import cli
from flexmbs.cli import main
from flexmbs.model import load_model

MODEL = "huang_two_link"
INPUTS = ["elbow.tau", "shoulder.tau"]          # not the model's order: the selection keeps this one
OUTPUTS = ["elbow.q", "shoulder.qd", "link2.tip_deflection[2]"]


@pytest.fixture(scope="module")
def lin():
    """What `flexmbs linearize` computes by default: about the static equilibrium."""
    model = load_model(MODEL)
    return linearize(model, x=equilibrium(model), outputs=OUTPUTS).select(INPUTS)


@pytest.mark.parametrize("suffix", [".npz", ".mat"])
def test_cli_writes_named_matrices(tmp_path, lin, suffix) -> None:
    out = tmp_path / f"lin{suffix}"
    res = CliRunner().invoke(main, ["linearize", MODEL, "--inputs", ",".join(INPUTS), "--outputs", ",".join(OUTPUTS),
                                    "-o", str(out)])
    assert res.exit_code == 0, res.output
    labels = ("state_names", "input_names", "output_names")
    if suffix == ".npz":
        data = dict(np.load(out))
        names = {k: [str(s) for s in data[k]] for k in labels}
    else:
        from scipy.io import loadmat
        data = loadmat(out)          # the names are cell arrays: one array of one string per cell
        names = {k: [str(np.ravel(c)[0]) for c in np.ravel(data[k])] for k in labels}
    assert names["input_names"] == INPUTS and names["output_names"] == OUTPUTS
    assert names["state_names"] == lin.state_names
    for k in "ABCD":
        assert np.array_equal(data[k], getattr(lin, k)), k
    # B's columns are the selected inputs' own columns of the full linearisation
    full = linearize(load_model(MODEL), x=lin.x0, outputs=OUTPUTS)
    assert np.array_equal(data["B"][:, 1], full.B[:, full.input_names.index("shoulder.tau")])


def test_cli_linearises_a_hanging_arm_about_its_equilibrium_unless_told(tmp_path) -> None:
    """Huang's damped arm hangs its link 2 from a horizontal elbow axis and starts at elbow -1 rad,
    not at rest. By default the command finds the equilibrium: every eigenvalue of A has a
    non-positive real part (a damped arm about the hanging pose; the free shoulder gives a zero
    pair), and the residual acceleration there is nil. --at initial linearises about the start
    instead, exactly as the API does, and warns with the residual acceleration."""
    model = "huang_two_link_damped"
    out = tmp_path / "eq.npz"
    res = CliRunner().invoke(main, ["linearize", model, "-o", str(out)])
    assert res.exit_code == 0 and "about the static equilibrium" in res.output and "warning" not in res.output
    A = np.load(out)["A"]
    lam = np.linalg.eigvals(A)
    assert lam.real.max() <= 1e-9 * np.abs(lam).max(), lam
    assert np.abs(np.load(out)["xdot0"]).max() < 1e-6
    res = CliRunner().invoke(main, ["linearize", model, "--at", "initial", "-o", str(out)])
    assert res.exit_code == 0 and "about the initial state" in res.output
    start = linearize(load_model(model))
    acc, coordinate = start.residual_acceleration()
    assert acc > 1.0 and f"warning: the reference is not an equilibrium: {coordinate}" in res.output, res.output
    assert np.array_equal(np.load(out)["A"], start.A)


def test_an_unknown_output_lists_the_allowed_names(tmp_path) -> None:
    res = CliRunner().invoke(main, ["linearize", MODEL, "--outputs", "tcp.r[1]", "-o", str(tmp_path / "l.npz")])
    assert res.exit_code == 1 and "no output 'tcp.r[1]'" in res.output, res.output
    for allowed in ("the outputs are:", "elbow.q", "shoulder.qd", "link2.tip_deflection[2]"):
        assert allowed in res.output, res.output


def test_an_unknown_output_lists_every_allowed_name(tmp_path) -> None:
    """A model with more outputs than a list of names usually shows (78): all of them, to its
    last flexible body's last tip deflection (the list stopped at 40, "and 38 more", a new
    user's trial, stop 52)."""
    res = CliRunner().invoke(main, ["linearize", "he_space_manipulator", "--at", "initial", "--outputs", "nope",
                                    "-o", str(tmp_path / "l.npz")])
    assert res.exit_code == 1 and "more" not in res.output, res.output
    assert "link3.tip_deflection[3]" in res.output and res.output.count(", ") >= 77, res.output


def test_an_equilibrium_search_short_of_its_goal_is_not_called_an_equilibrium(tmp_path, monkeypatch) -> None:
    """When the state the equilibrium search ended at keeps a residual acceleration above the
    threshold (here set below any), the warning says so and the summary does not call it the
    static equilibrium (both were printed, a new user's trial, stop 52)."""
    monkeypatch.setattr(cli, "RESIDUAL_ACCELERATION", -1.0)
    res = CliRunner().invoke(main, ["linearize", "huang_two_link_damped", "-o", str(tmp_path / "l.npz")])
    assert res.exit_code == 0, res.output
    assert "warning: the reference is not an equilibrium" in res.output and "equilibrium search ended" in res.output
    assert "about the static equilibrium" not in res.output, res.output


def test_cli_refuses_unknown_input_and_bad_suffix(tmp_path) -> None:
    res = CliRunner().invoke(main, ["linearize", MODEL, "--inputs", "elbow.tua", "-o", str(tmp_path / "l.npz")])
    assert res.exit_code == 1 and "no input 'elbow.tua'" in res.output and "elbow.tau" in res.output
    res = CliRunner().invoke(main, ["linearize", MODEL, "-o", str(tmp_path / "l.txt")])
    assert res.exit_code != 0 and ".npz or .mat" in res.output


def test_to_control_names_and_frequency_response(lin) -> None:
    pytest.importorskip("control")
    sys = lin.to_control()
    names = lin.control_names()
    assert sys.input_labels == ["elbow_tau", "shoulder_tau"]
    assert sys.output_labels == ["elbow_q", "shoulder_qd", "link2_tip_deflection_2"]
    assert sys.state_labels == [names[s] for s in lin.state_names]
    assert {v: k for k, v in names.items()}[sys.output_labels[2]] == "link2.tip_deflection[2]"
    n = lin.A.shape[0]
    for w in (0.3, 2.0, 23.1, 346.0):          # below, between and above the arm's modes [rad/s]
        by_hand = lin.C @ np.linalg.solve(1j * w * np.eye(n) - lin.A, lin.B) + lin.D
        got = np.asarray(sys(1j * w))
        assert np.allclose(got, by_hand, rtol=1e-9, atol=1e-12 * np.abs(by_hand).max()), w


def test_control_names_refuse_a_collision(lin) -> None:
    from dataclasses import replace
    clash = replace(lin, output_names=["elbow.q", "elbow_q", "shoulder.qd"])
    with pytest.raises(ValueError, match="'elbow.q' and 'elbow_q' both map"):
        clash.control_names()
