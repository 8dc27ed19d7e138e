"""Linearization, static equilibrium and natural modes of a model, by concern: the free
coordinates and the signals they name (coordinates.py), the model evaluated about a reference
and its finite differences (evaluation.py), the linear model and its exports (linear_system.py),
equilibrium (statics.py), modes (modal.py)."""

from .linear_system import LinearSystem, linearize
from .modal import ModesResult, modes
from .statics import equilibrium

__all__ = ["LinearSystem", "ModesResult", "equilibrium", "linearize", "modes"]
