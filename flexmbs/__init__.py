"""flexmbs: flexible multibody dynamics in joint coordinates.

    import flexmbs
    model = flexmbs.load_model("models/double_pendulum.yaml")
    result = flexmbs.simulate(model, t_end=5.0)
    result.plot("run.png")
"""

import os as _os

# numba's compiled kernels go to a persistent per-user cache so that a second process (or an
# FMU instantiated again) starts without recompiling.
_os.environ.setdefault(
    "NUMBA_CACHE_DIR", _os.path.join(_os.path.expanduser("~"), ".cache", "flexmbs", "numba"))

from .model import ModelError, load_model, model_from_dict  # noqa: E402
from .simulate import Result, simulate  # noqa: E402
from .solvers.stepper import SolverError  # noqa: E402
from .system import System, compile_model  # noqa: E402

__all__ = ["ModelError", "Result", "SolverError", "System", "compile_model", "load_model",
           "model_from_dict", "simulate"]
__version__ = "0.1.0"
