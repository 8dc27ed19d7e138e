"""The flexible-body preprocessing on one BLAS thread, so that its results do not depend on the
process's thread settings.

OpenBLAS as numpy 1.26 ships it sums in an order that depends on its number of threads: the
modes of one beam differed by 1e-12 between a process with one BLAS thread (a Dask worker, an FMU
in a host that limits threads) and one with two, so a sweep's rows were not bit-identical to the
same runs made in the client. The matrices here are small (tens to a few thousand DOFs), where
one thread costs little.
"""

from __future__ import annotations

import functools
from typing import Callable, TypeVar

from threadpoolctl import threadpool_limits

F = TypeVar("F", bound=Callable)


def one_blas_thread(fn: F) -> F:
    """`fn` run with the BLAS libraries limited to one thread (threadpoolctl)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)
    return run  # type: ignore[return-value]
