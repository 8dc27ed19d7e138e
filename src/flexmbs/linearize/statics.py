"""Static equilibrium of the free coordinates (also in a frame spinning at a constant rate) by
Newton with a line search."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .. import arguments as args
from ..model.elements import Model
from ..system import System
from .coordinates import Coordinates
from .evaluation import FD, Evaluator, input_vector, jacobian, reference_state, system_of


# equilibrium's Newton: a tolerance double precision can meet, up to 1 (the whole first residual)
_TOL_RANGE = (1e-15, 1.0)
_MAX_ITER = 1000


def equilibrium(model_or_system: Model | System, *, spin: Mapping[str, float] | None = None,
                x_guess: np.ndarray | None = None, tol: float = 1e-10, t: float = 0.0, inputs=None,
                max_iter: int = 50) -> np.ndarray:
    """Static equilibrium of the free coordinates: udot = 0 at u = 0 (free velocities), by Newton
    with the finite-difference Jacobian of udot w.r.t. the free positions and a backtracking line
    search. With spin = {joint: rate}, those joints turn at the constant rate (motion drives
    q = q0 + rate t), giving the steady state in the rotating frame (e.g. a spinning beam's
    deflection). Joints with no restoring stiffness (rigid-body directions) keep their guess
    (minimum-norm Newton steps).

    Returns the full state [q; u] (length nq + nv of the System) at time t, with the prescribed
    coordinates at their profile values. tol: on the Newton step in units of the state scales,
    or on the residual relative to the first one, within [1e-15, 1]; max_iter at most 1000.
    model_or_system as for linearize. Raises RuntimeError when Newton fails.
    """
    where = "equilibrium"
    args.within(where, "tol", tol, *_TOL_RANGE)
    args.number(where, "t", t, "finite", "s")
    args.integer(where, "max_iter", max_iter, 1, _MAX_ITER, " (Newton converges in a few; more means it will not)")
    system = system_of(model_or_system, spin, where)
    coords = Coordinates(system)
    x = reference_state(system, x_guess, where, "x_guess")
    x[system.nq + coords.vel_c] = 0.0
    x = coords.reduce(x)
    u_ref = input_vector(system, inputs, where)
    ev = Evaluator(system, coords, t, x, [])
    npos = coords.npos
    steps = FD * coords.scales[:npos]
    pscale = coords.scales[:npos]

    def residual(xr: np.ndarray, dp: np.ndarray) -> np.ndarray:
        ev.x_ref = xr
        return ev(np.concatenate([dp, np.zeros(npos)]), u_ref)[npos:2 * npos]

    zero = np.zeros(npos)
    r = residual(x, zero)
    r_first = max(float(np.abs(r).max(initial=0.0)), 1e-300)
    for _ in range(max_iter):
        if np.abs(r).max(initial=0.0) <= tol * r_first or np.abs(r).max(initial=0.0) == 0.0:
            break
        J = jacobian(lambda p, xr=x: residual(xr, p), npos, zero, steps)
        dp = np.linalg.lstsq(J, -r, rcond=1e-12)[0]
        lam, norm0 = 1.0, float(np.linalg.norm(r))
        for _ in range(30):
            r_new = residual(x, lam * dp)
            if np.linalg.norm(r_new) < norm0 or lam < 1e-6:
                break
            lam *= 0.5
        x = coords.state(x, np.concatenate([lam * dp, np.zeros(npos)]))
        r = r_new
        if np.abs(lam * dp / pscale).max(initial=0.0) < tol:
            break
    else:
        raise RuntimeError(f"equilibrium: Newton did not converge in {max_iter} iterations "
                           f"(max |udot| = {np.abs(r).max():.3g})")
    # prescribed values at t
    ev.x_ref = x
    ev(np.zeros(2 * npos), u_ref)
    return np.concatenate([ev.W.xq, ev.W.xu])
