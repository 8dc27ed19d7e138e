#!/usr/bin/env python
"""Which of the two routes of a flexible body's inertia terms is cheaper: the sum over its mass
points or their moments (kernels/body.py), measured on beam pendulums, and the cost model that
compile/bodies._moment_cost fits to it.

    python benchmarks/body_routes.py [--rounds 5]

Model: a 1 m aluminium beam (20 x 10 mm) on a hinge under gravity, for every combination of
elements (2, 4, 8, 12: 9 to 49 mass points), modes (2, 4, 6, and 8, 10 on the longer beams),
geometric stiffening (foreshortening) on and off and the acceleration shapes on and off. Each is
compiled twice, once per route (the compiler's choice forced), and the right-hand side timed
as rhs_per_call.py does (RK4 steps of 1e-5 s in numba, CPU time per right-hand side), the two
routes alternating, best of `rounds` blocks. Both routes run the same kernels (the route is
a System array, iv_k), so nothing compiles per model.

The right-hand sides differ by the body terms only; their difference is fitted by least squares
with the shape of the two routes' arithmetic (see _moment_cost):

    points - moments = a npt + b npt n^2 - c n^2 - d fs n^3     [us]

(npt mass points, n modal coordinates, fs 1 with foreshortening), and the route each model
would take by the fit and by the compiler's current model is compared with the faster one.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np

import flexmbs
import flexmbs.compile.bodies as bodies
from flexmbs.solvers.explicit import rk4_advance
from flexmbs.solvers.stepper import Settings, Stepper

MODEL = """name: beam_pendulum
gravity: [0, 0, -9.81]
ground:
  markers:
    - {{name: origin, position: [0, 0, 0]}}
bodies:
  - name: beam
    type: beam
    length: 1.0
    elements: {elements}
    modes: {modes}
    material: {{E: 7.0e10, rho: 2700, G: 2.6e10}}
    section: {{shape: rectangle, width: 0.02, height: 0.01}}
    geometric_stiffening: {fs}
    acceleration_modes: {acc}
    markers:
      - {{name: root, x: 0}}
joints:
  - {{name: hinge, type: revolute, parent: ground, parent_marker: origin, child: beam, child_marker: root,
     axis: [0, 1, 0], q0: 0.5}}
"""
STEP = 1e-5


def grid() -> list[tuple[int, int, bool, bool]]:
    """(elements, modes, foreshortening, acceleration shapes) of every beam measured."""
    small = itertools.product((2, 4, 8, 12), (2, 4, 6), (True, False), (True, False))
    large = itertools.product((8, 12), (8, 10), (True, False), (True,))
    return list(small) + list(large)


def compiled(path: Path, route: str) -> flexmbs.System:
    """The model at `path` compiled with its flexible body on `route` ('points' or 'moments')."""
    forced = (0.0, 1.0) if route == "points" else (1.0, 0.0)
    with mock.patch.object(bodies, "_moment_cost", lambda npt, n, fs: forced):
        return flexmbs.compile_model(flexmbs.load_model(path))


class Run:
    """RK4 blocks of 0.01 s on one compiled model: CPU seconds per right-hand side."""

    def __init__(self, system: flexmbs.System) -> None:
        self.system = system
        self.stepper = Stepper(system, Settings(method="rk4", step=STEP))
        self.x0 = np.concatenate([system.q0, system.u0])
        self.inputs = system.input_defaults.copy()
        self.block()   # warm-up

    def block(self) -> float:
        st, x = self.stepper, self.x0.copy()
        start = time.process_time()
        status, n = rk4_advance(self.system.ref, st.W, 0.0, x, 0.01, STEP, self.inputs, st.K, st.xs)
        if status != 0:
            raise RuntimeError(f"status {status} after {n} steps")
        return (time.process_time() - start) / (4 * n)


def measure(folder: Path, rounds: int) -> list[dict]:
    rows = []
    for elements, modes, fs, acc in grid():
        path = folder / f"beam_{elements}_{modes}_{int(fs)}_{int(acc)}.yaml"
        path.write_text(MODEL.format(elements=elements, modes=modes, fs=str(fs).lower(), acc=str(acc).lower()))
        runs = {route: Run(compiled(path, route)) for route in ("points", "moments")}
        best = {route: min(run.block() for _ in range(rounds)) for route, run in runs.items()}
        S = runs["points"].system.arrays
        row = dict(elements=elements, modes=modes, fs=fs, acc=acc, npt=int(S.pt_n[0]), n=int(S.nm[0]),
                   points=best["points"] * 1e6, moments=best["moments"] * 1e6)
        rows.append(row)
        print(f"{elements:3d} elements, {modes:2d} modes, foreshortening {fs!s:5s}, acceleration shapes {acc!s:5s}: "
              f"{row['npt']:3d} points, n = {row['n']:2d}: points {row['points']:.3f} us, "
              f"moments {row['moments']:.3f} us", flush=True)
    return rows


def features(npt: np.ndarray, n: np.ndarray, fs: np.ndarray) -> np.ndarray:
    return np.stack([npt, npt * n**2, -n**2, -fs * n**3], axis=1)


def report(rows: list[dict]) -> None:
    npt, n, fs = (np.array([r[k] for r in rows], float) for k in ("npt", "n", "fs"))
    P, M = np.array([r["points"] for r in rows]), np.array([r["moments"] for r in rows])
    coef, *_ = np.linalg.lstsq(features(npt, n, fs), P - M, rcond=None)
    a, b, c, d = coef
    print(f"\nfit [us]: points - moments = {a:.4g} npt + {b:.4g} npt n^2 - {c:.4g} n^2 - {d:.4g} fs n^3")
    current = np.array([bodies._moment_cost(int(p), int(k), bool(f)) for p, k, f in zip(npt, n, fs)])
    fitted = features(npt, n, fs) @ coef
    best = np.minimum(P, M)
    choices = (("compile/bodies._moment_cost", current[:, 0] <= current[:, 1]), ("this fit", fitted < 0))
    for name, points_chosen in choices:
        lost = np.where(points_chosen, P, M) - best
        print(f"{name}: the slower route on {int((lost > 0.05).sum())} of {len(rows)} beams (by more than 0.05 us), "
              f"{lost.sum():.2f} us lost in all, at most {lost.max():.2f} us on one")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed blocks per route and model (best taken)")
    cfg = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        report(measure(Path(folder), cfg.rounds))


if __name__ == "__main__":
    main()
