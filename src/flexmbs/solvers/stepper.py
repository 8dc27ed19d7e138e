"""The integrator front end: one object that advances a System's state to a given time with
the model's method, tolerances scaled to the problem, and scratch arrays allocated once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arguments import number, optional_number
from ..loops import TOL as LOOP_TOL
from ..loops import Loops, free_columns, project_positions, project_velocities
from ..model.elements import METHODS
from ..flex.invariants import body_size
from ..system import System
from ..kernels.drives import apply_prescribed
from .common import DOPRI5, IMPLICIT, LOOP_OPEN, MESSAGES, OK, RK4, f_eval
from .explicit import dopri5_advance, rk4_advance
from .implicit import trbdf2_advance


class SolverError(RuntimeError):
    """The integration failed; `status` is a solvers.common code, `time` the end of the step in
    which it happened [s]; `partial` (set by simulate) the Result up to the last good sample."""

    def __init__(self, status: int, time: float, detail: str = "") -> None:
        self.status = status
        self.time = time
        self.partial = None
        super().__init__(f"at t = {time:.6g} s (end of the failing step): {MESSAGES.get(status, 'solver failure')}{detail}")


def state_scales(system: System) -> np.ndarray:
    """Typical magnitude of each state [q; u] for absolute tolerances.

    Joint coordinates 1 (rad or m), quaternions 1; modal coordinate k: the modal amplitude that
    moves its body by 1e-3 of the body size; velocities: the position scale times 1/s for joints
    and times the mode's natural frequency for modal rates.
    """
    S = system.arrays
    xs = np.ones(S.nq + S.nv)
    for name, (e0, n) in system.body_eta.items():
        d = system.flex[name]
        size = body_size(d)
        amp = np.abs(d.nodal_modes).max(axis=0)
        eta_scale = 1e-3 * size / np.maximum(amp, 1e-300)
        xs[e0:e0 + n] = eta_scale
        v0 = S.nq + S.ev[system.bodies.index(name)]
        xs[v0:v0 + n] = eta_scale * np.maximum(d.freqs, 1.0)
    return xs


@dataclass
class Settings:
    """method: rk4 | dopri5 | implicit; step: RK4 step / initial step [s]; rtol; atol: None ->
    rtol times the state scales; max_step [s]."""

    method: str = "dopri5"
    step: float = 1e-3
    rtol: float = 1e-6
    atol: float | None = None
    max_step: float = 1e-2

    def check(self, where: str = "solver settings") -> None:
        """Raise ValueError naming the first invalid setting (a method not in METHODS, a step,
        rtol, max_step that is not a positive finite number, an atol that is given but not)."""
        if self.method not in METHODS:
            raise ValueError(f"{where}: method = {self.method!r}: expected one of {', '.join(METHODS)}")
        number(where, "step", self.step, "positive", "s")
        number(where, "rtol", self.rtol, "positive")
        optional_number(where, "atol", self.atol, "positive")
        number(where, "max_step", self.max_step, "positive", "s")


class Stepper:
    """Advances x = [q; u] of one System. Holds the workspace, so one per concurrent user."""

    def __init__(self, system: System, settings: Settings) -> None:
        settings.check()
        self.system = system
        self.settings = settings
        self.code = {"rk4": RK4, "dopri5": DOPRI5, "implicit": IMPLICIT}[settings.method]
        S = system.arrays
        nx = S.nq + S.nv
        self.W = system.workspace()
        self.K = np.zeros((7, nx))
        self.xs = np.zeros(nx)
        self.err = np.zeros(nx)
        self.Jac = np.zeros((nx, nx))
        self.Ninv = np.zeros((nx, nx))
        scale = state_scales(system)
        self.atol = np.full(nx, settings.atol) if settings.atol is not None else settings.rtol * scale
        self.h = settings.step
        self.nsteps = 0
        self.nrejected = 0
        self.loops = None
        if system.model.loops.cuts:
            self.loops = Loops(system.arrays, system.ref, system.arrays.cr_on.astype(bool))
            self.loop_free = free_columns(system.arrays, system.joint_u, ())

    def reset(self) -> None:
        """Forget integrator memory (step-size history, FSAL stage)."""
        self.h = self.settings.step

    def advance(self, t: float, x: np.ndarray, t_end: float, inputs: np.ndarray) -> None:
        """Integrate x in place from t to t_end [s] with constant inputs. Raises SolverError;
        on failure x is left at the last accepted internal step, which is not t_end."""
        S, st = self.system.ref, self.settings
        h_min = 1e-14 * max(1.0, abs(t_end))
        if self.loops is not None:
            # start on the constraints with the prescribed coordinates at their profile values
            # (x may come from outside, or hold integrated values of held inputs)
            q, u = x[:self.system.nq], x[self.system.nq:]
            apply_prescribed(S, t, q, u, inputs, self.xs[self.system.nq:])
            project_positions(self.loops, q, u, self.loop_free)
            project_velocities(self.loops, q, u, self.loop_free)
        if self.code == RK4:
            status, n = rk4_advance(S, self.W, t, x, t_end, st.step, inputs, self.K, self.xs)
            self.nsteps += n
        elif self.code == DOPRI5:
            # inputs may change between calls, so the FSAL stage is recomputed at each call
            status = f_eval(S, self.W, t, x, inputs, self.K[0])
            if status == OK:
                status, self.h, n, r = dopri5_advance(S, self.W, t, x, t_end, self.h, st.max_step, h_min,
                                                      st.rtol, self.atol, inputs, self.K, self.xs, self.err)
                self.nsteps += n
                self.nrejected += r
        else:
            status, self.h, n, r = trbdf2_advance(S, self.W, t, x, t_end, self.h, st.max_step, h_min,
                                                  st.rtol, self.atol, inputs, self.K, self.Jac, self.Ninv, self.xs)
            self.nsteps += n
            self.nrejected += r
        if status != OK:
            raise SolverError(status, t_end)
        if self.loops is not None:
            # the index-1 equations drift off g = 0: project positions, then velocities
            q, u = x[:self.system.nq], x[self.system.nq:]
            project_positions(self.loops, q, u, self.loop_free)
            # the dropped rows too: past a bifurcation a redundant row can become independent
            residual = self.loops.residual(q, u)
            if residual > 1e3 * LOOP_TOL:
                raise SolverError(LOOP_OPEN, t_end, f" (largest constraint residual {residual:.3g})")
            project_velocities(self.loops, q, u, self.loop_free)
