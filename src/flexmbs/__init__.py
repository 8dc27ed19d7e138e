"""flexmbs: flexible multibody dynamics in joint coordinates.

    import flexmbs
    model = flexmbs.load_model("models/double_pendulum.yaml")
    result = flexmbs.simulate(model, t_end=5.0)
    result.plot("run.png")
"""

from ._cache import configure_numba_cache as _configure_numba_cache

_configure_numba_cache()

from .model import ModelError, load_model, model_from_dict  # noqa: E402
from .simulate import Result, simulate  # noqa: E402
from .solvers.stepper import SolverError  # noqa: E402
from .compile import compile_model  # noqa: E402
from .system import System  # noqa: E402

__all__ = ["ModelError", "Result", "SolverError", "System", "compile_model", "load_model",
           "model_from_dict", "simulate"]
__version__ = "0.1.0"

from .linearize import LinearSystem, ModesResult, equilibrium, linearize, modes  # noqa: E402

__all__ += ["LinearSystem", "ModesResult", "equilibrium", "linearize", "modes"]
