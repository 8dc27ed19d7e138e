"""Linearly implicit (interface-Jacobian) coupling for the co-simulation master, and the
coupling's stability estimate.

An explicit master steps every FMU with inputs held at their values of the last communication
point (Jacobi) or of the FMUs stepped before it (Gauss-Seidel). Along a feedback whose outputs
respond strongly to their inputs within one step, the held values make the coupling unstable
whatever the FMUs' own integrators do: a geared motor's back-EMF damping c on a joint whose
inertia J seen by the motor is small (a wrist on a flexible link's tip: the interface modes
give d qdd / d tau ~ 5e4 rad/(s2 N m)) is stable only for h c / J < 2 (Jacobi, with its extra
step of delay: < 1).

The linearly implicit step (Kuebler and Schiehlen, "Two methods of simulator coupling", Math.
Comput. Model. Dyn. Syst. 6(2), 2000; Sicklinger et al., "Interface Jacobian-based
co-simulation", Int. J. Numer. Meth. Engng. 98(6), 2014; docs/references.md):
1. predictor: every FMU steps from its saved state with the inputs of the explicit scheme
   u_p (Jacobi or Gauss-Seidel), giving the coupled outputs y_f at t + h;
2. the coupling's step sensitivities G = d y(t + h) / d u (each FMU's outputs with respect to
   its own inputs held over the step; `step_jacobian` by repeating the step with each input
   perturbed, from the saved state, or `derivative_parts` from the FMI derivatives:
   G ~ D + h dydot/du, D the directional derivatives, dydot/du the change of the output
   derivatives with the inputs), kept for `interval` steps;
3. the inputs that make the linearised coupling consistent at t + h, u = y_f + G (u - u_p):
   (I - G) u = y_f - G u_p;
4. corrector: every FMU steps again from its saved state with those inputs (Gauss-Seidel: the
   FMUs before it in the sequence give their new outputs).
Each step costs two steps of each FMU with coupled inputs plus, every `interval` steps, one
more per coupled input. The held inputs keep the scheme first order in h.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


class Master(Protocol):
    """What the coupling reads of the master (fmi/cosim.py's Master, which imports this module):
    its slaves by element name, links (source, destination), stepping sequence,
    model descriptions, assembly, time [s] and one element's step."""

    slaves: dict[str, Any]
    links: list[Any]
    sequence: Any
    descriptions: dict[str, Any]
    assembly: Any
    t: float

    def _step(self, name: str, h: float) -> None: ...

# relative perturbation of an input for the step Jacobian
PERTURBATION = 1e-3


@dataclass
class Links:
    """The master's connections by index: source (element, vr) and destination (element, vr)
    of each link; `into[e]`: the links into element e; `out_of[e]`: the links out of it."""

    src: list[tuple[str, int]]
    dst: list[tuple[str, int]]
    into: dict[str, list[int]]
    out_of: dict[str, list[int]]


def links_of(master: Master) -> Links:
    src = [(e, vr) for (e, vr, _), _ in master.links]
    dst = [(e, vr) for _, (e, vr, _) in master.links]
    into: dict[str, list[int]] = {}
    out_of: dict[str, list[int]] = {}
    for i, ((se, _), (de, _)) in enumerate(zip(src, dst)):
        into.setdefault(de, []).append(i)
        out_of.setdefault(se, []).append(i)
    return Links(src, dst, into, out_of)


def read_sources(master: Master, links: Links, element: str, y: np.ndarray) -> None:
    """y[i] = the current value of link i's source, for the links out of `element`."""
    idx = links.out_of.get(element, [])
    if idx:
        y[idx] = master.slaves[element].getReal([links.src[i][1] for i in idx])


def set_inputs(master: Master, links: Links, element: str, u: np.ndarray) -> None:
    """Set the inputs of `element` to u[i] for each link i into it."""
    idx = links.into.get(element, [])
    if idx:
        master.slaves[element].setReal([links.dst[i][1] for i in idx], u[idx].tolist())


def step_jacobian(master: Master, links: Links, states: dict, u: np.ndarray, h: float) -> np.ndarray:
    """G[i, k] = d (link i's source at t + h) / d (link k's input held over the step), by
    stepping each FMU again from its saved state (`states`) with each coupled input perturbed
    (forward differences around u). Leaves every FMU stepped with an input perturbed: the
    caller restores them."""
    n = len(links.src)
    G = np.zeros((n, n))
    y0, y1 = np.zeros(n), np.zeros(n)
    for e, ins in links.into.items():
        slave = master.slaves[e]
        for k in [None, *ins]:
            slave.setFMUstate(states[e])
            du = np.zeros(n)
            if k is not None:
                du[k] = PERTURBATION * max(1.0, abs(u[k]))
            set_inputs(master, links, e, u + du)
            master._step(e, h)
            read_sources(master, links, e, y0 if k is None else y1)
            if k is not None:
                outs = links.out_of.get(e, [])
                G[outs, k] = (y1[outs] - y0[outs]) / du[k]
    return G


def derivative_parts(master: Master, links: Links) -> tuple[np.ndarray, np.ndarray]:
    """(D, R) at the current point: D[i, k] the directional derivative of link i's source with
    respect to link k's input (direct feedthrough), R[i, k] the change of that source's output
    derivative with the input (perturbed by PERTURBATION and put back). D + h R is the
    first-order Taylor estimate of the step sensitivity over a step h, without stepping any FMU:
    it overestimates the response of a state that settles within the step (a motor's current
    when h exceeds L/R) and misses what reaches an output through two integrations."""
    n = len(links.src)
    D, R = np.zeros((n, n)), np.zeros((n, n))
    u = np.zeros(n)
    for e, ins in links.into.items():
        outs = links.out_of.get(e, [])
        if not outs:
            continue
        slave = master.slaves[e]
        u[ins] = slave.getReal([links.dst[k][1] for k in ins])
        out_vrs, ones = [links.src[i][1] for i in outs], [1] * len(outs)
        base = np.array(slave.getRealOutputDerivatives(out_vrs, ones))
        for k in ins:
            D[outs, k] = slave.getDirectionalDerivative(out_vrs, [links.dst[k][1]], [1.0])
            du = np.zeros(n)
            du[k] = PERTURBATION * max(1.0, abs(u[k]))
            set_inputs(master, links, e, u + du)
            R[outs, k] = (np.array(slave.getRealOutputDerivatives(out_vrs, ones)) - base) / du[k]
        set_inputs(master, links, e, u)
    return D, R


def amplification(G: np.ndarray, links: Links, sequence: list[str] | None) -> float:
    """Spectral radius of the explicit coupling's error propagation per step: G for Jacobi
    (every input one step late), (I - L)^-1 U for Gauss-Seidel, L the links from an FMU earlier
    in the sequence (no delay), U the others. Above 1 the explicit coupling diverges."""
    if sequence is None:
        A = G
    else:
        pos = {e: k for k, e in enumerate(sequence)}
        forward = np.array([pos[s[0]] < pos[d[0]] for s, d in zip(links.src, links.dst)])
        L, U = G * forward[None, :], G * ~forward[None, :]
        A = np.linalg.solve(np.eye(len(G)) - L, U)
    return float(np.max(np.abs(np.linalg.eigvals(A)))) if A.size else 0.0


class ImplicitCoupling:
    """The linearly implicit step of a Master (see the module's docstring). jacobian: "steps"
    or "derivatives"; interval: steps between Jacobian updates."""

    def __init__(self, master: Master, jacobian: str = "steps", interval: int = 10) -> None:
        if jacobian not in ("steps", "derivatives"):
            raise ValueError(f"jacobian {jacobian!r} unknown; choose steps or derivatives")
        if interval < 1:
            raise ValueError(f"the Jacobian interval must be at least 1 step, got {interval}")
        self.master, self.jacobian, self.interval = master, jacobian, interval
        self.links = links_of(master)
        self.order = master.sequence or [e.name for e in master.assembly.elements]
        self.G: np.ndarray | None = None
        self.age = 0
        self.jacobians = 0       # Jacobians computed (for the cost)

    def _pass(self, y: np.ndarray, u: np.ndarray | None, h: float, states: dict) -> tuple[np.ndarray, np.ndarray]:
        """Step the FMUs in order. Predictor (u None): every FMU, with the explicit scheme's
        inputs (the sources y at t, or the new ones of the FMUs before it in a Gauss-Seidel
        sequence). Corrector: the FMUs with coupled inputs again from their saved `states`, with
        inputs u (Gauss-Seidel: the new sources of the FMUs before it). Returns the inputs used
        and the sources at t + h."""
        m, lk = self.master, self.links
        gauss_seidel = m.sequence is not None
        used, new = np.zeros(len(lk.src)), y.copy()
        done: set[str] = set()
        for e in self.order:
            ins = lk.into.get(e, [])
            done.add(e)
            if not ins and u is not None:
                continue            # no inputs: already at t + h from the predictor
            if ins:
                if u is not None:
                    m.slaves[e].setFMUstate(states[e])
                for i in ins:
                    fresh = gauss_seidel and lk.src[i][0] in done and lk.src[i][0] != e
                    used[i] = new[i] if fresh else (y[i] if u is None else u[i])
                set_inputs(m, lk, e, used)
            m._step(e, h)
            read_sources(m, lk, e, new)
        return used, new

    def step(self, h: float) -> None:
        """One communication step of h [s] from master.t (master.t is advanced)."""
        m, lk = self.master, self.links
        y = np.zeros(len(lk.src))
        for e in m.slaves:
            read_sources(m, lk, e, y)
        states = {e: m.slaves[e].getFMUstate() for e in lk.into}
        try:
            u_p, y_f = self._pass(y, None, h, states)
            if self.G is None or self.age >= self.interval:
                if self.jacobian == "steps":
                    self.G = step_jacobian(m, lk, states, u_p, h)
                else:
                    for e in lk.into:
                        m.slaves[e].setFMUstate(states[e])
                        set_inputs(m, lk, e, u_p)
                    D, R = derivative_parts(m, lk)
                    self.G = D + h * R
                self.age, self.jacobians = 0, self.jacobians + 1
            self.age += 1
            u = np.linalg.solve(np.eye(len(y)) - self.G, y_f - self.G @ u_p)
            self._pass(y_f, u, h, states)
        finally:
            for e, s in states.items():
                m.slaves[e].freeFMUstate(s)
        m.t += h


@dataclass
class StabilityEstimate:
    """The explicit coupling's stability, estimated from the FMI derivatives at one point
    (derivative_parts): amplification per step rho(h) of G = D + h R, and the strongest links."""

    D: np.ndarray
    R: np.ndarray
    links: Links
    sequence: list[str] | None

    def rho(self, h: float) -> float:
        return amplification(self.D + h * self.R, self.links, self.sequence)

    def limit(self, h: float) -> float:
        """The largest step [s] up to h with rho <= 1 (bisection; 0 if none): a necessary bound
        for the explicit coupling's stability, not a sufficient one."""
        if self.rho(h) <= 1.0:
            return h
        lo, hi = 0.0, h
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.rho(mid) <= 1.0 else (lo, mid)
        return lo

    def strongest(self, h: float, names: list[str], n: int = 3) -> list[str]:
        """The links (names) on which the fastest-growing coupling error is largest."""
        A = self.D + h * self.R
        values, vectors = np.linalg.eig(A)
        v = np.abs(vectors[:, int(np.argmax(np.abs(values)))])
        return [names[i] for i in np.argsort(-v)[:n] if v[i] > 1e-3 * v.max()]

    def diagnosis(self, h: float, names: list[str], implicit: bool) -> str:
        """What a failed step says about the coupling: its cause and fix, or that it is not the coupling."""
        rho = self.rho(h)
        scheme = "Gauss-Seidel" if self.sequence is not None else "Jacobi"
        if implicit or rho <= 1.0:
            why = "the coupling is linearly implicit" if implicit else \
                f"the explicit {scheme} coupling's estimated error amplification per step is {rho:.3g} <= 1 at h = {h:.3g} s"
            return f"Not the coupling ({why}): the element's own message names the cause."
        limit = self.limit(h)
        return (f"Cause: the coupling, not the physics. At the communication step h = {h:.3g} s the explicit {scheme} "
                f"coupling amplifies errors by about {rho:.3g} per step (> 1: it diverges), estimated from the FMUs' "
                f"directional and output derivatives at the start, most along {', '.join(self.strongest(h, names))}; "
                f"the estimate is 1 at h = {limit:.3g} s, so stable steps are below that at most (an electromechanical "
                f"oscillation through the coupling needs smaller ones still). Fix: a much smaller communication step, "
                "or Master(coupling='implicit'), or (for a motor driving a light joint) the motor's reflected rotor "
                "inertia on the joint.")


def estimate(master: Master) -> StabilityEstimate | None:
    """The stability estimate of `master`'s coupling at its current point, or None if an FMU
    with coupled inputs and outputs gives no directional or output derivatives."""
    links = links_of(master)
    for e in links.into:
        cs = master.descriptions[e].coSimulation
        if links.out_of.get(e) and not (cs.providesDirectionalDerivative and (cs.maxOutputDerivativeOrder or 0) >= 1):
            return None
    D, R = derivative_parts(master, links)
    return StabilityEstimate(D, R, links, master.sequence)
