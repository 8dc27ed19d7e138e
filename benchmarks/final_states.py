#!/usr/bin/env python
"""Final states and every output signal of shipped models, saved to compare two builds bit for bit.

    PYTHONPATH=<build A> python benchmarks/final_states.py a.npz
    PYTHONPATH=<build B> python benchmarks/final_states.py b.npz
    python benchmarks/final_states.py --compare a.npz b.npz
"""

import sys

import numpy as np

RUNS = [("huang_two_link", 0.5), ("double_pendulum", 1.0), ("four_bar", 0.5), ("bricard", 0.3),
        ("slider_crank", 0.3), ("huang_test_rig", 0.3), ("verlinden_pendulum", 0.3)]


def save(path: str) -> None:
    import flexmbs

    out = {}
    for name, t_end in RUNS:
        r = flexmbs.simulate(flexmbs.load_model(name), t_end)
        out[f"{name}.final"] = r.states[-1]
        out[f"{name}.signals"] = np.column_stack([r.signals[n] for n in r.names])
    np.savez(path, **out)


def compare(a_path: str, b_path: str) -> None:
    a, b = np.load(a_path), np.load(b_path)
    for key in sorted(a.files):
        same = a[key].shape == b[key].shape and np.array_equal(a[key], b[key], equal_nan=True)
        print(f"{key:32s} {'bit-identical' if same else 'DIFFERS'}")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        save(sys.argv[1])
