"""The output signals of a System: names, units, meanings, and where each sits in the flat
output vector y that `evaluate` fills. One table serves simulate's Result and the FMU outputs,
so both always name the same quantity the same way.

y = [q (nq) | u (nv) | udot (nv) | drive torques (nv) | kinetic, potential, strain, total energy
     | per sensor: r (3), v (3), R row-major (9), w (3) | per flexible body: tip deflection (3)
     | per cut joint: gap, tilt, force (3), torque (3)
     | per strain gauge: strain | per section-force sensor: N, V (2), T, M (2)
     | per motor drive: armature current (the states after q and u)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .gauges import gauge_signals, gauges
from .kernels.outputs import modal_rows, sample, sample_poses, state_outputs
from .model.tables import JOINTS, POSITION
from .system import System

# How an output depends on the inputs within one instant (FMI direct feedthrough).
STATE = "state"            # positions and velocities: integrated, no direct feedthrough
KINEMATIC = "kinematic"    # the same, but prescribed by motion inputs (q_ref, qd_ref) if any
ACCELERATION = "acceleration"  # accelerations and drive torques: depend on every input


@dataclass(frozen=True)
class Signal:
    """One output: `name`, `unit`, `description`, position `index` in y, and its `feedthrough`
    class (STATE, KINEMATIC or ACCELERATION)."""

    name: str
    unit: str
    description: str
    index: int
    feedthrough: str


def joint_units(jtype: str, k: int) -> tuple[str, str]:
    """(position unit, torque unit) of coordinate k of a joint type."""
    if k in JOINTS[jtype].lengths:
        return "m", "N"
    return "rad", "N.m"


def signal_table(system: System) -> list[Signal]:
    """Every output signal of the system, in a fixed order."""
    nq, nv = system.nq, system.nv
    i_ud, i_tau, i_en = nq + nv, nq + 2 * nv, nq + 3 * nv
    i_sens = sensor_start(system)
    i_tip = tip_start(system)
    out: list[Signal] = []

    def put(name: str, unit: str, description: str, index: int, feedthrough: str = KINEMATIC) -> None:
        out.append(Signal(name, unit, description, index, feedthrough))

    for jn in system.joints:
        j = system.model.joint(jn)
        q0, _ = system.joint_q[jn]
        u0, nvj = system.joint_u[jn]
        k0 = JOINTS[j.type].quaternion
        if k0 is not None:
            for i in range(k0):
                put(f"{jn}.r[{i + 1}]", "m", f"joint {jn}: child position, component {i + 1} in the parent marker frame", q0 + i)
                put(f"{jn}.v[{i + 1}]", "m/s", f"joint {jn}: child velocity, component {i + 1} in the parent marker frame", nq + u0 + i)
            for i in range(4):
                put(f"{jn}.quat[{i + 1}]", "1", f"joint {jn}: orientation quaternion (w, x, y, z), item {i + 1}", q0 + k0 + i)
            for i in range(3):
                put(f"{jn}.w[{i + 1}]", "rad/s", f"joint {jn}: angular velocity of the child, component {i + 1} in the child frame", nq + u0 + k0 + i)
            continue
        for i in range(nvj):
            sfx = "" if nvj == 1 else f"[{i + 1}]"
            what = f"joint {jn}" + (f", coordinate {i + 1}" if nvj > 1 else "")
            pu, tu = joint_units(j.type, i)
            put(f"{jn}.q{sfx}", pu, f"{what}: position", q0 + i)
            put(f"{jn}.qd{sfx}", pu + "/s", f"{what}: velocity", nq + u0 + i)
            put(f"{jn}.qdd{sfx}", pu + "/s2", f"{what}: acceleration", i_ud + u0 + i, ACCELERATION)
            if system.drives.get(jn, "passive") != "passive":
                put(f"{jn}.tau{sfx}", tu, f"{what}: torque (force) the drive applies", i_tau + u0 + i, ACCELERATION)
    for bn, (e0, n) in system.body_eta.items():
        for i in range(n):
            put(f"{bn}.eta[{i + 1}]", "1", f"body {bn}: modal coordinate {i + 1}", e0 + i)
    names = ("kinetic", "potential", "strain", "total")
    meaning = ("kinetic energy", "potential energy of gravity and springs",
               "elastic strain energy of the flexible bodies", "total mechanical energy")
    for k, (n, m) in enumerate(zip(names, meaning)):
        put(f"energy.{n}", "J", m, i_en + k)
    for s, name in enumerate(system.sensors):
        base = i_sens + 18 * s
        for i in range(3):
            put(f"{name}.r[{i + 1}]", "m", f"sensor {name}: position, world component {i + 1}", base + i)
            put(f"{name}.v[{i + 1}]", "m/s", f"sensor {name}: velocity, world component {i + 1}", base + 3 + i)
        for i in range(9):
            put(f"{name}.R[{i // 3 + 1},{i % 3 + 1}]", "1",
                f"sensor {name}: orientation, direction-cosine matrix R_WM entry ({i // 3 + 1},{i % 3 + 1})", base + 6 + i)
        for i in range(3):
            put(f"{name}.w[{i + 1}]", "rad/s", f"sensor {name}: angular velocity, world component {i + 1}", base + 15 + i)
    for b, bn in enumerate(system.body_eta):
        for i in range(3):
            put(f"{bn}.tip_deflection[{i + 1}]", "m",
                f"body {bn}: elastic displacement of the tip, component {i + 1} in the body frame",
                i_tip + 3 * b + i)
    i_cut = i_tip + 3 * len(system.body_eta)
    for c, cut in enumerate(system.model.loops.cuts):
        base = i_cut + 8 * c
        put(f"{cut.name}.gap", "m", f"cut joint {cut.name}: residual of its position constraints (norm)", base)
        put(f"{cut.name}.tilt", "1", f"cut joint {cut.name}: largest residual of its alignment constraints", base + 1)
        for i in range(3):
            put(f"{cut.name}.force[{i + 1}]", "N", f"cut joint {cut.name}: force on its child body, world component "
                f"{i + 1} (0 along redundant constraints)", base + 2 + i, ACCELERATION)
        for i in range(3):
            put(f"{cut.name}.torque[{i + 1}]", "N.m", f"cut joint {cut.name}: torque on its child body, world "
                f"component {i + 1} (0 about redundant constraints)", base + 5 + i, ACCELERATION)
    i = gauge_start(system)
    for sensor in system.model.sensors:
        if sensor.type == "marker":
            continue
        where = f"{sensor.type.replace('_', ' ')} {sensor.name}: body {sensor.body} at x = {sensor.x:g} m"
        if sensor.type == "strain_gauge":
            where += f", section point ({sensor.y:g}, {sensor.z:g}) m, direction {tuple(sensor.direction)}"
        for suffix, unit, what in gauge_signals(sensor):
            put(f"{sensor.name}.{suffix}", unit, f"{where}: {what}", i)
            i += 1
    for k, jn in enumerate(system.motor_joints):
        put(f"{jn}.current", "A", f"joint {jn}: armature current of its motor", current_start(system) + k, STATE)
    return out


def tip_marker(d):
    """Marker data of the tip: beam end, or the superelement node farthest from the origin."""
    if d.beam is not None:
        return d.marker(x=d.length)
    return d.marker(node=int(np.argmax(np.linalg.norm(d.node_positions, axis=1))))


def sensor_start(system: System) -> int:
    """Index in y of the first sensor signal (after the states, accelerations, drive torques
    and the four energies)."""
    return system.nq + 3 * system.nv + 4


def tip_start(system: System) -> int:
    """Index in y of the first tip deflection."""
    return sensor_start(system) + 18 * len(system.sensors)


def gauge_start(system: System) -> int:
    """Index in y of the first strain-gauge or section-force signal."""
    return tip_start(system) + 3 * len(system.body_eta) + 8 * len(system.model.loops.cuts)


def current_start(system: System) -> int:
    """Index in y of the first motor current."""
    return gauge_start(system) + sum(len(gauge_signals(s)) for s in system.model.sensors if s.type != "marker")


def state_slots(system: System) -> np.ndarray:
    """The slots of y that follow from the state without the dynamics (Evaluator.evaluate_state):
    positions, velocities, tip deflections, strain gauges and section forces, motor currents."""
    i, g = tip_start(system), gauge_start(system)
    return np.r_[0:system.nq + system.nv, i:i + 3 * len(system.body_eta), g:output_width(system)]


def pose_slots(system: System) -> np.ndarray:
    """The slots of y that Evaluator.evaluate fills without the dynamics (dynamics=False): those
    of the state (state_slots) and the sensors' poses and velocities."""
    i_sens = sensor_start(system)
    return np.union1d(state_slots(system), np.arange(i_sens, i_sens + 18 * len(system.sensors)))


def output_width(system: System) -> int:
    """Length of y."""
    return current_start(system) + system.ni


def modal_table(system: System) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The signals linear in the modal coordinates eta, as kernels.outputs.modal_signals reads
    them: (lin, coef, quad, hess). Per flexible body its tip deflection [m] in the body frame,
    u = Phi eta - 1/2 (eta^T H eta) e_x (the axial foreshortening of tip_marker's second-order
    term): three rows of Phi and one quadratic row; per strain gauge and section-force sensor its
    rows (gauges). lin, quad: int64 (rows, 4) of (slot in y, first eta in x, count m, offset in
    coef or hess); coef: the rows' coefficients; hess: each H (m x m) row-major."""
    lin, coef, quad, hess = [], [], [], []

    def put(slot: int, e0: int, row: np.ndarray) -> None:
        lin.append((slot, e0, row.size, len(coef)))
        coef.extend(row)

    i = tip_start(system)
    for bn, (e0, n) in system.body_eta.items():
        _, Phi, _, H = tip_marker(system.flex[bn])
        for a in range(3):
            put(i + a, e0, np.asarray(Phi)[a])
        quad.append((i, e0, n, len(hess)))
        hess.extend(np.asarray(H).ravel())
        i += 3
    i = gauge_start(system)
    for g in gauges(system):
        for row in g.rows:
            put(i, g.e0, row)
            i += 1
    return _index_rows(lin), np.array(coef, dtype=float), _index_rows(quad), np.array(hess, dtype=float)


def _index_rows(table: list[tuple[int, int, int, int]]) -> np.ndarray:
    """A table of (slot, e0, m, offset) rows as int64 (rows, 4), also when empty."""
    return np.array(table, dtype=np.int64).reshape(-1, 4)


class Evaluator:
    """Fills y for given times, states and inputs; holds the scratch arrays of one size."""

    def __init__(self, system: System, W) -> None:
        self.system = system
        self.W = W
        self._scratch: dict[int, tuple] = {}
        self.sensors = np.array(list(system.sensors.values()), dtype=np.int64)
        self.modal = modal_table(system)
        self.i_current = current_start(system)
        # per cut joint: its rows, and which are position rows
        self.cuts, r = [], 0
        for cut in system.model.loops.cuts:
            kinds = np.array([kind for kind, _, _ in JOINTS[cut.type].cut_rows])
            self.cuts.append((slice(r, r + kinds.size), kinds == POSITION))
            r += kinds.size

    def evaluate_state(self, t: float, x: np.ndarray, u: np.ndarray, y: np.ndarray, udot: np.ndarray) -> None:
        """Only the outputs that follow from the state without the dynamics (state_slots) of
        y at time t [s], state x, inputs u, as `evaluate` gives them; udot (nv) is scratch."""
        state_outputs(self.system.ref, t, x, u, y, udot, *self.modal, self.i_current)

    def evaluate(self, t: np.ndarray, X: np.ndarray, U: np.ndarray, Y: np.ndarray, dynamics: bool = True) -> None:
        """Y[k] = y at time t[k] [s], state X[k] = [q; u; i], inputs U[k]. X is not changed; Y
        holds the exact prescribed values of motion-driven coordinates. dynamics False: only the
        pose_slots, the others NaN (no accelerations, drive torques, energies or loop forces:
        a sample of the 3-frame spin-up beam then costs its forward kinematics)."""
        S = self.system.arrays
        nq, nv, n = S.nq, S.nv, t.size
        nx = nq + nv + self.system.ni
        if n not in self._scratch:
            self._scratch[n] = (np.zeros((n, nv)), np.zeros((n, nv)), np.zeros((n, 4)),
                                np.zeros((n, self.sensors.size, 18)), np.zeros((n, nx)),
                                np.zeros((n, S.cr_a.size, 5)))
        Ud, Tau, En, Sens, Xo, Loop = self._scratch[n]
        if dynamics:
            sample(self.system.ref, self.W, self.sensors, t, X, U, Xo, Ud, Tau, En, Sens, Loop)
        else:
            sample_poses(self.system.ref, self.W, self.sensors, t, X, U, Xo, Sens, np.zeros(nv))
            for a in (Ud, Tau, En, Loop):
                a.fill(np.nan)
        nu = nq + nv
        Y[:, :nu] = Xo[:, :nu]
        Y[:, nu:nu + nv] = Ud
        Y[:, nu + nv:nu + 2 * nv] = Tau
        i = nu + 2 * nv
        Y[:, i] = En[:, 0]
        Y[:, i + 1] = En[:, 1] + En[:, 3]
        Y[:, i + 2] = En[:, 2]
        Y[:, i + 3] = En.sum(axis=1)
        i += 4
        Y[:, i:i + 18 * self.sensors.size] = Sens.reshape(n, -1)
        i += 18 * self.sensors.size
        i += 3 * len(self.system.body_eta)
        for rows, pos in self.cuts:
            g, reaction = Loop[:, rows, 0], Loop[:, rows, 1:2] * Loop[:, rows, 2:5]
            Y[:, i] = np.linalg.norm(g[:, pos], axis=1)
            Y[:, i + 1] = np.max(np.abs(g[:, ~pos]), axis=1, initial=0.0)
            Y[:, i + 2:i + 5] = reaction[:, pos].sum(axis=1)
            Y[:, i + 5:i + 8] = reaction[:, ~pos].sum(axis=1)
            i += 8
        modal_rows(Xo, Y, *self.modal)
        Y[:, self.i_current:] = Xo[:, nu:]
