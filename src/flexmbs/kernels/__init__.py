"""numba kernels: plain functions over the System arrays, no Python objects in the hot path."""
