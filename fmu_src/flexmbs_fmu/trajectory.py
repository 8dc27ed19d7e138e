"""A point-to-point reference: rest at q_start, a minimum-jerk (quintic) move to q_end over
`duration` from t_start, rest at q_end. Position, velocity and acceleration are continuous,
so the move excites flexible links less than a step. The outputs depend on time only.

s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5, tau = (t - t_start) / duration in [0, 1];
q_ref = q_start + (q_end - q_start) s, qd_ref and qdd_ref its exact time derivatives.
"""

from __future__ import annotations

from .component import Component, real


def min_jerk(t: float, q_start: float, q_end: float, t_start: float, duration: float) -> tuple[float, float, float]:
    """(q, qd, qdd) of the minimum-jerk move at time t [s] (units of q, per s, per s^2)."""
    tau = min(max((t - t_start) / duration, 0.0), 1.0)
    d = q_end - q_start
    s = tau ** 3 * (10.0 - 15.0 * tau + 6.0 * tau ** 2)
    sd = 30.0 * tau ** 2 * (1.0 - tau) ** 2 / duration
    sdd = 60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau) / duration ** 2
    return q_start + d * s, d * sd, d * sdd


def min_jerk_jerk(t: float, q_start: float, q_end: float, t_start: float, duration: float) -> float:
    """d qdd / dt [units of q per s^3] of the minimum-jerk move at time t [s] (0 outside the move)."""
    tau = (t - t_start) / duration
    if not 0.0 < tau < 1.0:
        return 0.0
    return (q_end - q_start) * 60.0 * (1.0 - 6.0 * tau + 6.0 * tau ** 2) / duration ** 3


class Trajectory(Component):
    NAME = "trajectory"
    DESCRIPTION = "Minimum-jerk point-to-point reference: position, velocity and acceleration"
    ABOUT = __doc__.strip().replace("\n\n", "</p><p>")
    VARIABLES = (
        real("q_start", "parameter", "rad", "position before the move", 0.0),
        real("q_end", "parameter", "rad", "position after the move", 1.0),
        real("t_start", "parameter", "s", "start of the move", 0.0),
        real("duration", "parameter", "s", "duration of the move", 1.0, 1e-9),
        real("q_ref", "output", "rad", "reference position"),
        real("qd_ref", "output", "rad/s", "reference velocity"),
        real("qdd_ref", "output", "rad/s2", "reference acceleration"),
    )

    def start(self) -> None:
        self.x = {}

    def advance(self, t: float, h: float) -> None:
        """Nothing to integrate: the outputs are functions of time."""

    def output(self, name: str) -> float:
        p = self.values
        q = min_jerk(self.t, p["q_start"], p["q_end"], p["t_start"], p["duration"])
        return q[("q_ref", "qd_ref", "qdd_ref").index(name)]

    def rate(self, output: str) -> float:
        """q_ref' = qd_ref, qd_ref' = qdd_ref, qdd_ref' = the jerk."""
        if output == "qdd_ref":
            p = self.values
            return min_jerk_jerk(self.t, p["q_start"], p["q_end"], p["t_start"], p["duration"])
        return self.output({"q_ref": "qd_ref", "qd_ref": "qdd_ref"}[output])
