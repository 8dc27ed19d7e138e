"""`flexmbs linearize` writes the named matrices (.npz, .mat), and LinearSystem.to_control()
gives a python-control StateSpace with those names whose frequency response is
C (j w I - A)^-1 B + D computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from flexmbs import linearize
from flexmbs.cli import main
from flexmbs.model import load_model

MODEL = "huang_two_link"
INPUTS = ["elbow.tau", "shoulder.tau"]          # not the model's order: the selection keeps this one
OUTPUTS = ["elbow.q", "shoulder.qd", "link2.tip_deflection[2]"]


@pytest.fixture(scope="module")
def lin():
    return linearize(load_model(MODEL), outputs=OUTPUTS).select(INPUTS)


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
    full = linearize(load_model(MODEL), outputs=OUTPUTS)
    assert np.array_equal(data["B"][:, 1], full.B[:, full.input_names.index("shoulder.tau")])


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
