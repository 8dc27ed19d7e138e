"""Design studies on the co-simulated servo system: sweeps (grid, Latin hypercube, Monte-Carlo)
and robust tuning on a Dask cluster, with a tidy table of metrics per run (docs/design-studies.md)."""

from .design import DesignError, Parameter, parameter, parameter_sets
from .engine import Engine, Study, Table, evaluate, row_key, run_rows, simulate, sweep
from .metrics import metric_names, servo_metrics

__all__ = ["DesignError", "Engine", "Parameter", "Study", "Table", "evaluate", "metric_names", "parameter",
           "parameter_sets", "row_key", "run_rows", "servo_metrics", "simulate", "sweep"]
