"""Model -> System in named stages (compiler.py runs them in order): tree, bodies, markers,
joints, drives, loads, loops, report."""

from .compiler import compile_model
from .report import AssemblyWarning

__all__ = ["AssemblyWarning", "compile_model"]
