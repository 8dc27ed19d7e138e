"""Time integrators over the first-order form x = [q; u] (numba), and the step() used by FMUs."""
