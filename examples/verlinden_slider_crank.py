"""Verlinden's flexible slider-crank (Verlinden et al., Example 3): the elastic rod closes the loop
with no constraint. Drives the crank with the placeholder torque pulse of the model file and
plots crank speed, crank-tip deflection and rod elongation.

    python examples/verlinden_slider_crank.py [--out out]   (docs/img: --out docs/img)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _figures import finish  # noqa: E402

import flexmbs  # noqa: E402
from flexmbs.model.catalog import models_dir

MODELS = models_dir()


def torque(t: float) -> dict:
    """500 sin^2(pi t / 2) N m for t < 2 s, then released (the paper's law is in a lost figure)."""
    return {"crank.tau": 500.0 * np.sin(np.pi * t / 2) ** 2 if t < 2.0 else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="out", type=Path, help="folder for the plot verlinden_slider_crank.png")
    ap.add_argument("--t-end", type=float, default=6.0)
    args = ap.parse_args()
    model = flexmbs.load_model(MODELS / "verlinden_slider_crank.yaml")
    res = flexmbs.simulate(model, args.t_end, inputs=torque, output_step=0.002)
    tip = np.column_stack([res[f"crank_tip.r[{i}]"] for i in (1, 2, 3)])
    slider = np.column_stack([res[f"slider.r[{i}]"] for i in (1, 2, 3)])
    elongation = np.linalg.norm(slider - tip, axis=1) - model.loads[0].length
    energy = res["energy.total"][res.time >= 2.0]
    print(f"crank speed up to {res['crank.qd'].max():.3f} rad/s, rod elongation up to "
          f"{1e3 * np.abs(elongation).max():.3f} mm, crank tip deflection up to "
          f"{1e3 * np.abs(res['crank.tip_deflection[2]']).max():.3f} mm; energy after the pulse "
          f"{energy[0]:.3f} J, drift {np.ptp(energy) / energy[0]:.1e}; {res.stats['wall_time']:.1f} s wall")
    fig, ax = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    ax[0].plot(res.time, res["crank.qd"], label="crank speed [rad/s]")
    ax[0].plot(res.time, [torque(t)["crank.tau"] / 100 for t in res.time], "--", label="torque / 100 [N m]")
    ax[1].plot(res.time, 1e3 * res["crank.tip_deflection[2]"], label="crank tip deflection [mm]")
    ax[2].plot(res.time, 1e3 * elongation, label="rod elongation [mm]")
    finish(fig, ax, ax[2:], "Verlinden's slider-crank: the elastic rod closes the loop", args.out / "verlinden_slider_crank.png")
    print(f"wrote {args.out / 'verlinden_slider_crank.png'}")


if __name__ == "__main__":
    main()
