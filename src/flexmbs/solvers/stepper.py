"""The integrator front end: one object that advances a System's state to a given time with
the model's method, tolerances scaled to the problem, and scratch arrays allocated once."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..arguments import number, tolerances
from ..loops import OPEN as LOOP_OPEN_RESIDUAL
from ..loops import Loops, free_columns, projection_weights
from ..model.elements import METHODS, default_rtol
from ..system import System, state_scales
from ..kernels.entry import apply_prescribed
from .common import (DIVERGED, DOPRI5, IMPLICIT, LOOP_OPEN, MESSAGES, NEWTON_FAILED, NOT_FINITE, OK, RADAU, RK4, SINGULAR,
                     STEP_TOO_SMALL, f_eval, jacobian_fd)
from .explicit import ERR_FLOOR, dopri5_advance, rk4_advance, rk4_samples
from .implicit import JAC_DRIFT, JAC_MOVE, N_JAC, N_LU, ros_advance
from .radau import radau_advance


class SolverError(RuntimeError):
    """The integration failed; `status` is a solvers.common code, `time` the end of the step in
    which it happened [s]; `partial` (set by simulate) the Result up to the last good sample;
    detail: what the message adds to the code's meaning (a measured value, the likely cause)."""

    def __init__(self, status: int, time: float, detail: str = "") -> None:
        self.status = status
        self.time = time
        self.partial = None
        super().__init__(f"at t = {time:.6g} s (end of the failing step): {MESSAGES.get(status, 'solver failure')}{detail}")


def likely_cause(system: System, status: int, rk4: tuple[float, float | None, float] | None = None,
                 x: np.ndarray | None = None) -> str:
    """The likely cause of a failed run, for its message. rk4: (step [s], stability bound [s],
    frequency of the mode that sets it [Hz]) of an RK4 run, the bound found at its first call;
    x: the state where the run stopped. In turn: an RK4 step past its bound when the solution
    diverged; the elastic energy that loop assembly put into a flexible body at t = 0
    (System.assembly_energy) when it diverged or the step collapsed; else, for a diverged
    elastic deflection, the body and what may have made it (_diverged)."""
    if status not in (DIVERGED, NOT_FINITE, STEP_TOO_SMALL):
        return ""
    if rk4 is not None and rk4[1] is not None and rk4[0] > rk4[1] and status in (DIVERGED, NOT_FINITE):
        step, bound, hz = rk4
        return (f" (solver.step {step * 1e3:.4g} ms exceeds RK4's stability bound {bound * 1e3:.4g} ms, set by a "
                f"mode of {hz:.4g} Hz, as warned at the start: take a step below the bound, or method radau (the "
                "default for a flexible model), which steps over stiff modes)")
    if system.assembly_energy:
        name, energy = max(system.assembly_energy.items(), key=lambda item: item[1])
        return (f" (the loop assembly put about {energy:.3g} J of elastic energy into flexible body {name!r} at "
                "t = 0, as warned: a deformed initial state, not the integrator, is the likely cause; give q0/qd0 "
                "consistent with the loops or hold the joints that set them in loops.independent)")
    if status == DIVERGED and x is not None:
        return _diverged(system, x)
    return ""


# a flexible body whose lowest mode is below this [Hz] is named as likely given in other units
SOFT_HZ = 0.1


def _diverged(system: System, x: np.ndarray) -> str:
    """The flexible body whose deflection exceeded its size in state x (the first one), with
    what may have made it: a lowest mode below SOFT_HZ (a modulus or dimension in other units
    than Pa and m: E in MPa gives 1e-3 of the frequency), or no geometric stiffening (a body
    spinning faster than its first bending frequency without it diverges; beams only, since a
    superelement has none to turn on), else the load."""
    S = system.arrays
    for b, name in enumerate(system.bodies):
        n, e0 = int(S.nm[b]), int(S.eq[b])
        if n and np.any(np.abs(x[e0:e0 + n]) > S.eta_max[b, :n]):
            d = system.flex[name]
            hz = float(d.freqs.min()) / (2.0 * np.pi)
            if hz < SOFT_HZ:
                why = (f"its lowest mode is {hz:.3g} Hz: if that is not meant, check its material and section "
                       "for other units (E and G in Pa, rho in kg/m^3, dimensions in m)")
            elif system.model.body(name).type == "beam" and not np.any(d.point_H != 0.0):
                why = (f"it has no geometric stiffening, without which a body spinning faster than its first "
                       f"bending frequency ({hz:.3g} Hz) diverges")
            else:
                why = (f"a load or motion beyond what it carries elastically (its lowest mode is {hz:.3g} Hz), or "
                       "a step the tolerance let through: rerun with a tighter rtol to tell them apart")
            return f" (flexible body {name!r}: {why})"
    return ""


# a loop's rows in use have lost rank (a singular pose) where their Jacobian's smallest singular
# value (columns weighted as the projection weighs them) is below this fraction of its largest
# (the Bricard linkage at its bifurcation: 2e-8; the shipped loop models over their first
# second: 1.2e-2, the crank-rocker's out-of-plane rows that its coupler's modes close, to 0.3)
RANK_LOST = 1e-6

# relative difference [1] up to which a call's start time is the last call's end (the FMU's
# check of a host's step time, flexmbs_fmu.base.check_step, allows the same)
CLOCK_TOL = 1e-9


class StabilityWarning(RuntimeWarning):
    """A fixed step exceeds the method's stability bound at the initial state."""


# |R(z)| <= 1 of classical RK4 (R the degree-4 Taylor polynomial of exp) along rays z = r d,
# sampled in r: R(r d) = sum_k (r^k / k!) d^k, the table of r^k / k! computed once
_RK4_R = np.linspace(0.01, 4.0, 400)
_RK4_TAYLOR = np.array([_RK4_R ** k / math.factorial(k) for k in range(5)])


def least_step(t_end: float) -> float:
    """The least step [s] an adaptive method may take on the way to t_end [s]: 1e-14 of it (or
    of 1 s), a few units in the last place of the time, below which t + h no longer moves."""
    return 1e-14 * max(1.0, abs(t_end))


def rk4_stability_bound(eigenvalues: np.ndarray) -> tuple[float, complex | None]:
    """Largest RK4 step [s] for which h lambda stays in RK4's stability region for every
    eigenvalue lambda [1/s] of the linearised system that does not grow physically (Re lambda <=
    0.1 |lambda|; a slightly positive real part, from round-off or weak physical growth, is
    projected onto the imaginary axis). Returns (bound, limiting eigenvalue); (inf, None)
    when nothing limits the step (non-finite eigenvalues are ignored). Every ray at once; the
    edge between two samples by linear interpolation of |R| - 1 (within 1e-5, on the safe side)."""
    lam = np.asarray(eigenvalues, dtype=complex)
    mag = np.abs(lam)
    keep = np.isfinite(lam) & (mag >= 1e-9) & (lam.real <= 0.1 * mag)
    if not keep.any():
        return np.inf, None
    lam, mag = lam[keep], mag[keep]
    d = np.minimum(lam.real, 0.0) + 1j * np.abs(lam.imag)    # the region is symmetric about the real axis
    d /= np.abs(d)
    excess = np.abs(sum(_RK4_TAYLOR[k][:, None] * d[None, :] ** k for k in range(5))) - 1.0   # (samples, rays)
    unstable = excess > 1e-12
    first = np.where(unstable.any(axis=0), unstable.argmax(axis=0), _RK4_R.size - 1)
    rays = np.arange(d.size)
    a, b = excess[first - 1, rays], excess[first, rays]
    step = np.clip(-a / np.where(b > a, b - a, 1.0), 0.0, 1.0)
    r = np.where(first > 0, _RK4_R[first - 1] + (_RK4_R[1] - _RK4_R[0]) * step, _RK4_R[0])
    bounds = r / mag
    k = int(np.argmin(bounds))
    return float(bounds[k]), complex(lam[k])


def _check_arrays(data: object, shapes: dict, what: str, optional: tuple = ()) -> None:
    """Raise ValueError naming `what` and the field unless `data` is a dict with exactly the
    keys of `shapes`, each a finite array of its shape (None: any length along that axis);
    the keys in `optional` may also be None."""
    if not isinstance(data, dict) or set(data) != set(shapes):
        raise ValueError(f"{what}: expected the fields {sorted(shapes)}; nothing was applied")
    for key, shape in shapes.items():
        if key in optional and data[key] is None:
            continue
        try:
            value = np.asarray(data[key], dtype=float)
        except (TypeError, ValueError):
            value = None
        if value is None or value.ndim != len(shape) or any(w is not None and w != n for w, n in zip(shape, value.shape)) \
                or not np.all(np.isfinite(value)):
            raise ValueError(f"{what}: {key} is not a finite array of shape {shape}; nothing was applied")


# RK4 steps per numba call of Stepper.advance_samples (about 10-100 ms of a small model's run),
# and implicit steps (4 right-hand sides, 4 solves and at times a Jacobian each)
SAMPLE_BLOCK = 20000
IMPLICIT_BLOCK = 2000


@dataclass
class Settings:
    """method: rk4 | dopri5 | implicit | radau; step: RK4 step / initial step [s]; rtol: None ->
    the method's default (model.elements.default_rtol, as a model file without one gets); atol:
    None -> rtol times the state scales; max_step [s]."""

    method: str = "dopri5"
    step: float = 1e-3
    rtol: float | None = None
    atol: float | None = None
    max_step: float = 1e-2

    def __post_init__(self) -> None:
        if self.rtol is None:
            self.rtol = default_rtol(self.method)

    def check(self, where: str = "solver settings") -> None:
        """Raise ValueError naming the first invalid setting (a method not in METHODS, a step or
        max_step that is not a positive finite number, rtol or atol out of their ranges:
        arguments.tolerances)."""
        if self.method not in METHODS:
            raise ValueError(f"{where}: method = {self.method!r}: expected one of {', '.join(METHODS)}")
        number(where, "step", self.step, "positive", "s")
        number(where, "rtol", self.rtol, "positive")
        tolerances(where, self.rtol, self.atol)
        number(where, "max_step", self.max_step, "positive", "s")

    def describe(self) -> str:
        """The method and what sets its accuracy, for messages: 'dopri5 at rtol 1e-06'."""
        return f"rk4 at step {self.step:g} s" if self.method == "rk4" else f"{self.method} at rtol {self.rtol:g}"


class Stepper:
    """Advances x = [q; u; i] (i: motor currents) of one System. Holds the workspace, so one per concurrent user."""

    def __init__(self, system: System, settings: Settings, dense: bool = True, interpolate: bool = False) -> None:
        """dense (dopri5; the default): a call whose t, x and inputs are the ones the last call
        ended with continues from the integrator's own state and first stage (first-same-as-last
        kept), stepping past t_end and serving it from dense output (_dopri5); with closed loops
        the output is projected onto the constraints at each call, and the integrator's own
        state before a call steps on from it (_project_own). False: every call evaluates its
        first stage and lands on t_end. interpolate (implicit and radau methods): advance_samples steps
        past the samples and interpolates them, where by default it lands on each, as an FMU
        does on each communication point (so that the two agree to rounding)."""
        settings.check()
        self.system = system
        self.settings = settings
        self.code = {"rk4": RK4, "dopri5": DOPRI5, "implicit": IMPLICIT, "radau": RADAU}[settings.method]
        self.interpolate = interpolate and self.code in (IMPLICIT, RADAU)
        nx = system.nx
        self.W = system.workspace()
        # dopri5's memory (and the stages K every method uses) in one array, of which K, ctl,
        # x_i, D, span and x_last are views, so that a plant's rollback copies it at once
        # (0.12 us a copy, seven copies before; flexmbs_fmu.plant.Rollback)
        self.memory = np.zeros(14 * nx + 4)
        self.K = self.memory[:7 * nx].reshape(7, nx)
        self.xs = np.zeros(nx)
        self.err = np.zeros(nx)
        self.Jac = np.zeros((nx, nx))
        self.LU = np.zeros((nx, nx))
        self.piv = np.zeros(nx, dtype=np.int64)
        self.memo = np.zeros(4, dtype=np.int64)   # implicit: Jacobian/LU valid, their counts
        self.hf = np.zeros(1)
        self.opened = np.zeros(1, dtype=np.int64)   # implicit, radau: samples they left off the loops
        self.P = np.zeros((2, nx))   # implicit: the last step's start state and rate (its samples)
        # radau only (empty for the other methods): its stage increments, last step's, f(t, x)
        # and start state (radau_advance), the complex factors, and its controller's memory
        # (radau.H_OLD ... ERR_ACC)
        nr = nx if self.code == RADAU else 0
        self.R = np.zeros((11, nr))
        self.LU2 = np.zeros((nr, nr), dtype=np.complex128)
        self.piv2 = np.zeros(nr, dtype=np.int64)
        self.cv = np.zeros(nr, dtype=np.complex128)
        self.rctl = np.zeros(4)
        self.no_t, self.no_X = np.zeros(0), np.zeros((0, nx))   # ... a call without samples
        self.ctl = self.memory[14 * nx:14 * nx + 2]   # dopri5's step controller (explicit._next_step)
        self.ctl[0] = ERR_FLOOR
        self.scale = state_scales(system)
        self.atol = np.full(nx, settings.atol) if settings.atol is not None else settings.rtol * self.scale
        self.stability_bound: float | None = None   # RK4: from the first call [s]
        self.stability_hz = 0.0   # ... and the frequency of the mode that sets it [Hz]
        self.jac_move = JAC_MOVE   # implicit: renew J when a position moved this much (x its scale)
        self.jac_drift = JAC_DRIFT   # ... and the model's response changed by this fraction
        self.h = settings.step
        self.nsteps = 0
        self.nrejected = 0
        self.nrhs = 0   # dopri5: right-hand sides evaluated
        self.loops = None
        self.loop_weight = np.zeros(0)   # the loop projection's weights (empty: no loops)
        if system.model.loops.cuts:
            self.loops = Loops(system.arrays, system.ref, system.arrays.cr_on.astype(bool))
            self.loop_weight = projection_weights(system.arrays, free_columns(system.arrays, system.joint_u, ()),
                                                  self.scale)
        # dense dopri5: its own state (t_i [s], x_i) past the last t_end, the dense output of the
        # step spanning it (D; span: start and length [s]), and what the last call returned;
        # own_stale: x_i is not yet on the loop constraints, nor K[0] = f(t_i, x_i) (_project_own)
        self.dense = dense and self.code == DOPRI5
        self.own_stale = False
        self.t_i: float | None = None
        self.x_i = self.memory[7 * nx:8 * nx]
        self.D = self.memory[8 * nx:13 * nx].reshape(5, nx)
        self.span = self.memory[14 * nx + 2:]
        self.t_last = np.nan
        self.x_last = self.memory[13 * nx:14 * nx]
        self.u_last = np.zeros(0)

    @property
    def njacobians(self) -> int:
        """Jacobians evaluated so far (implicit method)."""
        return int(self.memo[N_JAC])

    @property
    def nfactorizations(self) -> int:
        """LU factorisations so far (implicit method)."""
        return int(self.memo[N_LU])

    def reset(self) -> None:
        """Forget integrator memory (step-size history, FSAL stage, Jacobian and factors)."""
        self.h = self.settings.step
        self.memo[:2] = 0
        self.ctl[:] = ERR_FLOOR, 0.0
        self.rctl[:] = 0.0
        self.t_i = None
        self.own_stale = False

    def dopri5_memory(self) -> dict:
        """dopri5's memory that shapes its next steps (the step controller's, and for dense
        output the integrator's own time and state past the last t_end, its first stage, the
        dense output of the step spanning t_end and what the last call returned and held), as
        lists, for saving an FMU state. Times not yet known are None. With loops it first does
        what the next continuing call would (_fresh_own), so that the memory is complete; the
        run goes on with the same bits either way."""
        if self.t_i is not None and self._fresh_own() != OK:
            self.t_i = None   # its first stage cannot be evaluated: the next call starts afresh
        known = self.t_i is not None
        return dict(ctl=self.ctl.tolist(), t_i=self.t_i if known else None, x_i=self.x_i.tolist(),
                    fsal=self.K[0].tolist() if known else [0.0] * self.x_size, dense=self.D.tolist(),
                    span=self.span.tolist(), t_last=None if np.isnan(self.t_last) else float(self.t_last),
                    x_last=self.x_last.tolist(), u_last=self.u_last.tolist())

    def check_dopri5_memory(self, data: object) -> None:
        """Raise ValueError unless `data` is a dopri5_memory of this Stepper's size (checked
        whole before a state is applied)."""
        nx = self.x_size
        _check_arrays(data, {"ctl": (2,), "t_i": (), "x_i": (nx,), "fsal": (nx,), "dense": (5, nx), "span": (2,),
                             "t_last": (), "x_last": (nx,), "u_last": (None,)},
                      "the state's dopri5 memory", optional=("t_i", "t_last"))
        if not data["ctl"][0] > 0.0:
            raise ValueError("the state's dopri5 memory: the controller's error norm is not positive; nothing was applied")

    def restore_dopri5_memory(self, data: dict) -> None:
        """Inverse of dopri5_memory (check it first with check_dopri5_memory)."""
        self.ctl[:] = data["ctl"]
        self.t_i = None if data["t_i"] is None else float(data["t_i"])
        self.x_i[:], self.K[0], self.D[:], self.span[:] = data["x_i"], data["fsal"], data["dense"], data["span"]
        self.own_stale = False
        self.t_last = np.nan if data["t_last"] is None else float(data["t_last"])
        self.x_last[:] = data["x_last"]
        self.u_last = np.array(data["u_last"], dtype=float)

    def implicit_memory(self) -> dict:
        """The implicit method's memory that shapes its next steps (Jacobian, LU factors, step of
        the factorisation, the state of the Jacobian, validity flags and counts), as lists, for
        saving an FMU state."""
        memory = dict(jac=self.Jac.tolist(), lu=self.LU.tolist(), piv=self.piv.tolist(), memo=self.memo.tolist(),
                      hf=float(self.hf[0]), xj=self.K[6].tolist())
        if self.code == RADAU:
            memory.update(lu2_re=self.LU2.real.tolist(), lu2_im=self.LU2.imag.tolist(), piv2=self.piv2.tolist(),
                          z=self.R[6:9].tolist(), ctl=self.rctl.tolist())
        return memory

    def check_implicit_memory(self, data: object, method: object = None) -> None:
        """Raise ValueError unless `data` is an implicit_memory of this Stepper's size, saved
        under `method` (None: this Stepper's; a state may carry another method, which its
        parameters set before it is restored), checked whole before a state is applied."""
        nx = self.x_size
        radau = (self.settings.method if method is None else method) == "radau"
        shapes = {"jac": (nx, nx), "lu": (nx, nx), "piv": (nx,), "memo": (4,), "hf": (), "xj": (nx,)}
        if radau:
            shapes.update(lu2_re=(nx, nx), lu2_im=(nx, nx), piv2=(nx,), z=(3, nx), ctl=(4,))
        _check_arrays(data, shapes, "the state's implicit-method memory")
        for key in ("piv", "piv2") if radau else ("piv",):
            if np.any((np.asarray(data[key]) < 0) | (np.asarray(data[key]) >= nx)):
                raise ValueError("the state's implicit-method memory: pivot indices out of range; nothing was applied")
        if radau and np.any(np.asarray(data["ctl"]) < 0.0):
            raise ValueError("the state's implicit-method memory: a negative step or error in radau's controller; "
                             "nothing was applied")

    @property
    def x_size(self) -> int:
        """Length of the state x = [q; u; i]."""
        return self.system.nx

    def restore_implicit_memory(self, data: dict) -> None:
        """Inverse of implicit_memory (check it first with check_implicit_memory)."""
        self.Jac[:], self.LU[:], self.piv[:], self.memo[:] = data["jac"], data["lu"], data["piv"], data["memo"]
        self.hf[0], self.K[6] = data["hf"], data["xj"]
        if self.code == RADAU:
            self.LU2.real[:], self.LU2.imag[:] = data["lu2_re"], data["lu2_im"]   # bit for bit, signed zeros too
            self.piv2[:], self.R[6:9], self.rctl[:] = data["piv2"], data["z"], data["ctl"]

    def _count(self, nsteps: int, nrejected: int) -> None:
        self.nsteps += nsteps
        self.nrejected += nrejected
        self.nrhs += 6 * (nsteps + nrejected)

    def _continues(self, t: float, x: np.ndarray, inputs: np.ndarray) -> bool:
        """A call continues the integrator's own state when dense output is on, its x and inputs
        are bit for bit what the last call returned and held (compared as bytes: 0.2 us a vector
        where np.array_equal takes 5 us, at every communication step) and its t is the last
        call's end up to the rounding of a host's clock (CLOCK_TOL: a master's k h and the FMU's
        t + h differ in their last bits)."""
        return self.dense and self.t_i is not None and abs(t - self.t_last) <= CLOCK_TOL * max(1.0, abs(t)) \
            and x.tobytes() == self.x_last.tobytes() and inputs.tobytes() == self.u_last.tobytes()

    def _fresh_own(self) -> int:
        """With loops, before stepping on from the integrator's own state: x_i onto the
        constraints at t_i and K[0] = f(t_i, x_i), if the last call left that to be done
        (_project_own). Returns the status."""
        if not self.own_stale:
            return OK
        self.own_stale = False
        self._onto_loops(self.t_i, self.x_i, self.u_last)
        self.nrhs += 1
        return f_eval(self.system.ref, self.W, self.t_i, self.x_i, self.u_last, self.K[0])

    def _dopri5(self, t: float, x: np.ndarray, t_end: float, inputs: np.ndarray, h_min: float,
                continues: bool) -> int:
        """dopri5 from t to t_end [s], x(t_end) into x. A call that continues (_continues) steps
        on from the integrator's own state and first stage, past t_end, and takes x(t_end) from
        dense output; any other call evaluates its first stage and lands on t_end, since inputs
        just changed are likely to change at the next call again (a controller's), and stepping
        past t_end would then be wasted: measured on Huang's arm at 1 ms, inputs changed every call,
        landing took 16,660 right-hand sides over 1 s against 17,506 from dense output. Returns
        the status; on failure x is the last accepted internal state."""
        S, st = self.system.ref, self.settings
        if continues:
            t0, x0 = self.t_i, self.x_i
            status = self._fresh_own()
            if status != OK:
                x[:] = self.x_i
                self.t_i = None
                return status
        else:
            t0, x0, self.t_i = t, x, None
            self.nrhs += 1
            status = f_eval(S, self.W, t, x, inputs, self.K[0])
            if status != OK:
                return status
        status, t_i, self.h, n, r = dopri5_advance(S, self.W, t0, x0, t_end, self.h, st.max_step, h_min, st.rtol,
                                                   self.atol, inputs, self.K, self.xs, self.err, continues, self.D,
                                                   self.span, x, self.ctl)
        self._count(n, r)
        if status != OK:
            if continues:
                x[:] = self.x_i
            self.t_i = None
            return status
        if self.dense:
            if not continues:
                self.span[:] = t_end, 0.0   # its own state, x(t_end), is set by advance after the projection
            self.t_i = t_i
        return OK

    def _remember(self, t_end: float, x: np.ndarray, inputs: np.ndarray) -> None:
        """What a dense call returned and held: the next call continues if it starts from them."""
        self.t_last = t_end
        self.x_last[:] = x
        if self.u_last.shape != inputs.shape:
            self.u_last = np.empty_like(inputs)
        self.u_last[:] = inputs

    def _project_own(self, t_before: float | None, continues: bool) -> None:
        """With loops, after a dense call that moved the integrator's own state x_i (a landed
        call's is its projected output; a continued call's moved if it stepped: t_i is not
        t_before): x_i drifts off g = 0 as the output does, so the next call that continues
        from it first puts it on the constraints at t_i, with the prescribed coordinates at
        their profile values, as the landing integrator's state is at each call, and evaluates
        its first stage (_fresh_own). Left for then: a call whose inputs changed starts from
        its own x, and the work would be lost."""
        if not continues or self.t_i != t_before:
            self.own_stale = True

    def _onto_loops(self, t: float, x: np.ndarray, inputs: np.ndarray) -> None:
        """x onto the loop constraints at time t [s], the prescribed coordinates at their profile
        values (x may come from outside, or hold integrated values of held inputs)."""
        nq, nv = self.system.nq, self.system.nv
        q, u = x[:nq], x[nq:nq + nv]
        apply_prescribed(self.system.ref, t, q, u, inputs, self.xs[nq:])
        self.loops.project(q, u, self.loop_weight)

    def check_stability(self, t: float, x: np.ndarray, inputs: np.ndarray) -> float:
        """RK4's stability bound [s] from the eigenvalues of the system linearised at (t, x)
        (forward-difference Jacobian, nx right-hand sides); warns with a StabilityWarning
        naming the bound [ms] and the limiting mode's frequency [Hz] when the step exceeds it.
        A warning, not a refusal: the bound holds at this state only (spin-up stiffens, a
        moving arm changes its modes), and a step past it fails later with a SolverError."""
        S = self.system.ref
        nx = x.size
        f0, J = np.zeros(nx), np.zeros((nx, nx))
        if f_eval(S, self.W, t, x, inputs, f0) != OK or \
                jacobian_fd(S, self.W, t, x, f0, inputs, self.scale, J, np.zeros(nx), np.zeros(nx)) != OK:
            return np.inf   # the first step reports the failure
        bound, lam = rk4_stability_bound(np.linalg.eigvals(J))
        self.stability_hz = abs(lam) / (2 * np.pi) if lam is not None else 0.0
        if lam is not None and self.settings.step > bound:
            warnings.warn(
                f"model {self.system.model.name}: solver.step {self.settings.step * 1e3:.4g} ms exceeds RK4's "
                f"stability bound {bound * 1e3:.4g} ms at t = {t:g} s, set by a mode of {abs(lam) / (2 * np.pi):.4g} Hz "
                f"(damping ratio {max(-lam.real, 0.0) / abs(lam):.2g}) of the linearised system; the run will likely diverge: "
                f"use a step below the bound, method dopri5, or method radau (the default for a flexible model) "
                "for stiff models",
                StabilityWarning, stacklevel=3)
        return bound

    def _implicit(self, t: float, x: np.ndarray, t_end: float, inputs: np.ndarray, T: np.ndarray,
                  X: np.ndarray) -> tuple[int, int]:
        """The implicit method (implicit.ros_advance) or Radau IIA (radau.radau_advance) from t to
        t_end [s] (x in place), the samples at times T into X on the way. Returns (status,
        samples filled)."""
        st = self.settings
        if self.code == RADAU:
            status, self.h, n, r, filled = radau_advance(
                self.system.ref, self.W, t, x, t_end, self.h, st.max_step, least_step(t_end), st.rtol, self.atol,
                self.scale, inputs, self.R, self.K, self.Jac, self.LU, self.piv, self.LU2, self.piv2, self.cv,
                self.memo, self.hf, self.rctl, T, X, self.loop_weight, self.opened)
        else:
            status, self.h, n, r, filled = ros_advance(
                self.system.ref, self.W, t, x, t_end, self.h, st.max_step, least_step(t_end), st.rtol,
                self.atol, self.scale, self.jac_move, self.jac_drift, inputs, self.K, self.Jac, self.LU, self.piv,
                self.xs, self.err, self.memo, self.hf, T, X, self.P, self.loop_weight, self.opened)
        self.nsteps += n
        self.nrejected += r
        return status, filled

    @property
    def samples_at_once(self) -> bool:
        """advance_samples serves this run: RK4 on a model without loops (their projection runs
        here, in Python, after every call), or the implicit or radau method that interpolates
        (they project each step onto the loops themselves: common.onto_manifold)."""
        return self.code == RK4 and self.loops is None or self.interpolate

    def advance_samples(self, t: np.ndarray, X: np.ndarray, inputs: np.ndarray,
                        done: Callable[[int], object] | None = None) -> tuple[int, SolverError | None]:
        """Integrate from X[0] through the sample times t [s] with constant inputs, each
        sample's state into X[k], in numba calls of up to SAMPLE_BLOCK RK4 steps, or for the
        implicit method the samples that IMPLICIT_BLOCK steps of max_step span (more steps when
        its accuracy takes shorter ones): with `advance` per sample the Python around each call
        (8 us) was a fifth of a double pendulum's run at 10 ms samples, and between blocks
        Python can raise a KeyboardInterrupt (numba code does not) and `done(samples)` counts
        a block's samples (a progress bar). RK4 lands on every sample; the implicit method with
        `interpolate` steps past them (up to max_step) and interpolates them (implicit._hermite, radau._samples):
        landing on 10 ms samples held the 3-frame spin-up beam at 2,002 steps where its
        tolerance allows 50 ms steps (403). With closed loops the samples, interpolated between
        projected steps, are projected too, in the kernel (common.onto_sample), and here, every
        sample of a block in which it could not project one (_close_loops; projecting a projected
        sample changes nothing). Returns the samples filled and,
        when the run failed after them, the SolverError."""
        rk4 = self.code == RK4
        if rk4 and self.stability_bound is None:
            self.stability_bound = self.check_stability(t[0], X[0], inputs)
        step = self.settings.step if rk4 else self.settings.max_step
        per_sample = max(1.0, (t[-1] - t[0]) / max(1, t.size - 1) / step)
        block = max(1, int((SAMPLE_BLOCK if rk4 else IMPLICIT_BLOCK) / per_sample))
        x = X[0].copy()
        if self.loops is not None:
            self._onto_loops(t[0], x, inputs)
        for start in range(0, t.size - 1, block):
            end = min(start + block, t.size - 1)
            opened = int(self.opened[0])
            if rk4:
                status, filled, n = rk4_samples(self.system.ref, self.W, t[start:end + 1], X[start:end + 1],
                                                self.settings.step, inputs, self.K, self.xs, self.err)
                self.nsteps += n
            else:
                status, filled = self._implicit(t[start], x, t[end], inputs, t[start + 1:end + 1], X[start + 1:end + 1])
                filled += 1   # X[start] was good before the call
            good = end + 1 if status == OK else start + filled
            # where it stopped: RK4 steps in its scratch self.err, the implicit methods in x
            failure = None if status == OK else self._failure(status, t[min(good, t.size - 1)],
                                                              self.err if rk4 else x)
            if self.loops is not None:
                if self.opened[0] != opened:
                    # samples the kernel could not project: here, with the fallback, or the run ends open
                    for k in range(start + 1, good):
                        try:
                            self._close_loops(t[k], X[k])
                        except SolverError as err:
                            return k, err
                x[:] = X[good - 1]   # the integrator goes on from the last sample
            if failure is not None:
                return good, failure
            if done is not None:
                done(end - start)
        return t.size, None

    def _failure(self, status: int, t_end: float, x: np.ndarray) -> SolverError:
        """The SolverError of a step that failed with `status` before t_end [s], naming its
        likely cause (for RK4 with the step against its stability bound). x: the state where the
        integrator stopped. A loop model whose steps collapsed or whose equations turned
        singular there at a singular pose of its loops (_lost_rank) reports the open loop, as a
        projection that fails there does: the implicit methods do not get past a dead point or a
        bifurcation either, and their step size was not the cause."""
        if status in (STEP_TOO_SMALL, NEWTON_FAILED, SINGULAR) and self.loops is not None:
            lost = self._lost_rank(x)
            if lost:
                return SolverError(LOOP_OPEN, t_end, lost)
        rk4 = (self.settings.step, self.stability_bound, self.stability_hz) if self.code == RK4 else None
        return SolverError(status, t_end, likely_cause(self.system, status, rk4, x))

    def _lost_rank(self, x: np.ndarray) -> str:
        """Where the loops' rows in use have lost rank at state x (their Jacobian over the
        coordinates that may move, each column times its projection weight, has a singular value
        below RANK_LOST of its largest): what the message adds; else ''."""
        nq, nv = self.system.nq, self.system.nv
        _, G = self.loops.eval(x[:nq], x[nq:nq + nv])
        free = self.loop_weight > 0.0
        # in the projection's own norm: the columns mix radians, metres and modal amplitudes
        sv = np.linalg.svd(G[:, free] * self.loop_weight[free], compute_uv=False)
        if sv.size == 0 or sv[-1] > RANK_LOST * sv[0]:
            return ""
        return (f" (the constraint Jacobian of the loops lost rank: its smallest singular value is {sv[-1]:.2g} "
                f"of {sv[0]:.3g})")

    def _close_loops(self, t_end: float, x: np.ndarray) -> None:
        """The output x at t_end [s] onto the loop constraints, positions then velocities (the
        index-1 equations drift off g = 0, and the implicit methods' samples lie between
        projected steps), the prescribed coordinates held at their integrated values (an `input`
        profile's next q_ref is where they are now, not its held one). Raises SolverError
        (LOOP_OPEN) when a row stays open: the largest residual of every row, the dropped ones
        too, is checked, since past a bifurcation a redundant row can become independent."""
        q, u = x[:self.system.nq], x[self.system.nq:self.system.nq + self.system.nv]
        residual = self.loops.project(q, u, self.loop_weight)
        if residual > LOOP_OPEN_RESIDUAL:
            self.t_i = None   # no call continues from a run whose loop opened
            raise SolverError(LOOP_OPEN, t_end, f" (largest constraint residual {residual:.3g})")

    def advance(self, t: float, x: np.ndarray, t_end: float, inputs: np.ndarray) -> None:
        """Integrate x in place from t to t_end [s] with constant inputs. Raises SolverError;
        on failure x is left at the last accepted internal step, which is not t_end."""
        S, st = self.system.ref, self.settings
        h_min = least_step(t_end)
        continues, t_before = self._continues(t, x, inputs), self.t_i
        if self.loops is not None and not continues:
            self._onto_loops(t, x, inputs)   # a continued call's x is the last call's projected output
        if self.code == RK4:
            if self.stability_bound is None:
                self.stability_bound = self.check_stability(t, x, inputs)
            status, n = rk4_advance(S, self.W, t, x, t_end, st.step, inputs, self.K, self.xs)
            self.nsteps += n
        elif self.code == DOPRI5:
            status = self._dopri5(t, x, t_end, inputs, h_min, continues)
        else:
            status, _ = self._implicit(t, x, t_end, inputs, self.no_t, self.no_X)
        if status != OK:
            raise self._failure(status, t_end, x)
        if self.loops is not None:
            self._close_loops(t_end, x)
            if self.dense:
                self._project_own(t_before, continues)
        if self.dense:
            if not continues:
                np.copyto(self.x_i, x)   # a landed call's own state is its output, projected
            self._remember(t_end, x, inputs)
