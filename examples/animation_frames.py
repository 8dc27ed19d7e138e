"""The README's animation frames: the spin-up beam with and without geometric stiffening side
by side, and He's crank-rocker with its bending coupler, rendered by the matplotlib path of
flexmbs.animate (the HTML player and GIF/MP4 movies use the same scene).

    python examples/animation_frames.py [--out docs/img]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import flexmbs
from flexmbs.animate import scene_of, snapshot

SPIN_T = 9.0         # s: the hub rate (5.3 rad/s) has passed the first bending frequency (3.8 rad/s)
CRANK_TAU = 5.0      # N m on the crank, from rest
CRANK_T = 0.4        # s
CRANK_SCALE = 5.0    # deformation scale factor of the coupler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/img", type=Path, help="folder for the PNGs")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    scenes, titles = [], []
    for name in ("spin_up_beam", "spin_up_beam_linear"):
        res = flexmbs.simulate(flexmbs.load_model(name), SPIN_T)
        scenes.append(scene_of(res, np.array([res.time.size - 1])))
        tip = np.hypot(res["beam.tip_deflection[2]"][-1], res["beam.tip_deflection[3]"][-1])
        titles.append(f"{'with' if 'linear' not in name else 'without'} stiffening: tip deflection {tip:.2f} m")
        print(titles[-1])
    snapshot(scenes, str(args.out / "anim_spin_up.png"), titles=titles, views=(90.0, -90.0),
             same_axes=True)

    res = flexmbs.simulate(flexmbs.load_model("he_crank_rocker"), CRANK_T, inputs={"crank.tau": CRANK_TAU})
    scene = scene_of(res, np.array([res.time.size - 1]), reference="chord")
    bow = np.linalg.norm(scene["coupler"].deform[0], axis=1).max()
    print(f"he_crank_rocker: crank {res['crank.qd'][-1]:.1f} rad/s at t = {CRANK_T} s, coupler bow "
          f"{1e3 * bow:.2f} mm from its chord")
    snapshot([scene], str(args.out / "anim_crank_rocker.png"),
             scale=CRANK_SCALE, titles=[f"he_crank_rocker, crank torque {CRANK_TAU:g} N m"], views=(90.0, -90.0))
    print(f"wrote {args.out / 'anim_spin_up.png'}, {args.out / 'anim_crank_rocker.png'}")


if __name__ == "__main__":
    main()
