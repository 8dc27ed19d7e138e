"""The free (minimal) coordinates of a System about a reference, and every signal a linear
model can name.

State of the linear model (minimal coordinates)
----------------------------------------------
The linear model xdot = A x + B u, y = C x + D u describes small perturbations about a reference
(t, x_ref, u_ref) in the FREE coordinates only:

- motion-driven joint coordinates (and their rates) are prescribed by their profile, so they are
  not states; a change of a profile input (`<joint>.q_ref` ...) enters through B and D;
- for quaternion joints (spherical, and the rotation of a free joint) the 4 quaternion entries are
  replaced by a local rotation vector delta (3) with q = q_ref (x) exp(delta/2), i.e. a rotation
  expressed in the child marker frame, and the rates are the 3 angular-velocity coordinates; the
  kinematic rows are ddelta/dt = J_r(delta)^-1 w, so the state is minimal (no unit-norm constraint).

State names: `<joint>.q` / `<joint>.qd` (single-coordinate joints), `<joint>.q[i]` / `<joint>.qd[i]`
(several coordinates), `<joint>.r[i]` / `<joint>.v[i]` (translation of a free joint),
`<joint>.rot[i]` / `<joint>.w[i]` (rotation vector delta and angular velocity of a spherical or free
joint), `<body>.eta[k]` / `<body>.etad[k]` (modal coordinates of flexible bodies and their rates).
The first half of the states are positions, the second half the matching velocities.

Closed loops (cut joints): the free coordinates are partitioned at the operating point into
independent and dependent ones (Wehage and Haug 1982): as many dependent coordinates as the rank
of the constraint Jacobian G on the free coordinates, picked by pivoted QR for a well-conditioned
block G_d (joint coordinates outside loops.independent first, then modal coordinates, the joints
of loops.independent last). The states are the independent coordinates and their rates; at each
evaluation the dependent positions are solved from g(q) = 0 (Newton to round-off, so the finite
differences see no projection error), the dependent rates from G u = 0, and the accelerations
come from the kernel's constrained solve (the acceleration-level constraint with its
velocity-product term), so position, velocity and acceleration levels are consistent.
"""

from __future__ import annotations

import numpy as np

from ..gauges import gauges
from ..kernels.drives import MOTION
from ..model import JOINTS
from ..names import lookup
from ..signals import pose_slots, sensor_start, signal_table, tip_marker
from ..so3 import quat_from_rotvec, quat_mul, right_jacobian_inv, rotvec_from_quat
from ..system import System, state_scales


def _suffix(i: int, n: int) -> str:
    return "" if n == 1 else f"[{i + 1}]"


class Coordinates:
    """The free (minimal) coordinates of a System and every nameable signal."""

    def __init__(self, system: System) -> None:
        if system.ni:
            raise ValueError(f"model {system.model.name}: the joints {', '.join(system.motor_joints)} have motor drives, "
                             "whose armature currents linearize, equilibrium and modes do not take as states yet; "
                             "drive them by torque inputs (drive type torque) to linearise the mechanism")
        self.system = system
        S = system.arrays
        self.nq, self.nv = int(S.nq), int(S.nv)
        self.xs = state_scales(system)
        self.position_names: list[str] = []
        self.velocity_names: list[str] = []
        scalar_q: list[int] = []      # q index per position state (-1: rotation-vector entry)
        vel_c: list[int] = []         # u index per velocity state
        pos_scale: list[float] = []
        self.quats: list[tuple[int, int, list[int]]] = []  # (q index, u index, position states)
        self.signals: dict[str, tuple] = {}  # name -> (kind, index...)

        def add(pos_name: str, vel_name: str, qi: int, c: int, scale: float | None = None) -> None:
            self.position_names.append(pos_name)
            self.velocity_names.append(vel_name)
            scalar_q.append(qi)
            vel_c.append(c)
            pos_scale.append(self.xs[qi] if scale is None else scale)
            if qi >= 0:
                self.signals[pos_name] = ("q", qi)
            self.signals[vel_name] = ("u", c)

        for jn in system.joints:
            jtype = system.model.joint(jn).type
            q0, _ = system.joint_q[jn]
            u0, nvj = system.joint_u[jn]
            k0 = JOINTS[jtype].quaternion
            if k0 is not None:
                for i in range(k0):
                    add(f"{jn}.r[{i + 1}]", f"{jn}.v[{i + 1}]", q0 + i, u0 + i)
                    self.signals[f"{jn}.vd[{i + 1}]"] = ("ud", u0 + i)
                idx = []
                for i in range(3):
                    idx.append(len(self.position_names))
                    add(f"{jn}.rot[{i + 1}]", f"{jn}.w[{i + 1}]", -1, u0 + k0 + i, scale=1.0)
                    self.signals[f"{jn}.rot[{i + 1}]"] = ("rot", len(self.quats), i)
                    self.signals[f"{jn}.wd[{i + 1}]"] = ("ud", u0 + k0 + i)
                self.quats.append((q0 + k0, u0 + k0, idx))
                continue
            for i in range(nvj):
                sfx = _suffix(i, nvj)
                c = u0 + i
                if S.drive[c] == MOTION:  # prescribed: an output, not a state
                    self.signals[f"{jn}.q{sfx}"] = ("q", q0 + i)
                    self.signals[f"{jn}.qd{sfx}"] = ("u", c)
                else:
                    add(f"{jn}.q{sfx}", f"{jn}.qd{sfx}", q0 + i, c)
                self.signals[f"{jn}.qdd{sfx}"] = ("ud", c)
        self.joint_positions = list(self.position_names)
        for b, (e0, n) in system.body_eta.items():
            ev = int(S.ev[system.bodies.index(b)])
            for k in range(n):
                add(f"{b}.eta[{k + 1}]", f"{b}.etad[{k + 1}]", e0 + k, ev + k)
                self.signals[f"{b}.etadd[{k + 1}]"] = ("ud", ev + k)
            _, Phi, _, H = tip_marker(system.flex[b])
            for i in range(3):
                self.signals[f"{b}.tip_deflection[{i + 1}]"] = (
                    "tip", i, e0, n, np.array(Phi[i, :n]), np.array(H[:n, :n]))
        for g in gauges(system):
            for (suffix, _, _), row in zip(g.signals, g.rows):
                self.signals[f"{g.name}.{suffix}"] = ("gauge", g.e0, row)
        # the sensors' positions, velocities, orientations (R_WM) and angular velocities, from
        # the kinematics of the full state (signals.Evaluator, dynamics=False)
        i_sens = sensor_start(system)
        poses = set(pose_slots(system).tolist())
        for s in signal_table(system):
            if s.index >= i_sens and s.index in poses and s.name not in self.signals:
                self.signals[s.name] = ("pose", s.index)
        self.scalar_q = np.array(scalar_q, dtype=np.int64)
        self.vel_c = np.array(vel_c, dtype=np.int64)
        self.nfull = len(self.position_names)
        self._scales = np.concatenate([pos_scale, self.xs[self.nq + self.vel_c]])
        # loop models: the independent coordinates (indices into the free positions), set by reduce
        self.ind = np.arange(self.nfull)
        self.dep = np.zeros(0, dtype=np.int64)
        self.loops = None
        if system.model.loops.cuts:
            from ..loops import Loops
            self.loops = Loops(S, system.ref, S.cr_on.astype(bool))

    @property
    def npos(self) -> int:
        """Number of position states (independent coordinates)."""
        return int(self.ind.size)

    @property
    def scales(self) -> np.ndarray:
        """State scales of the states (independent positions, then their rates)."""
        return self._scales[np.concatenate([self.ind, self.nfull + self.ind])]

    @property
    def state_names(self) -> list[str]:
        return ([self.position_names[i] for i in self.ind] + [self.velocity_names[i] for i in self.ind])

    def reduce(self, x_ref: np.ndarray) -> np.ndarray:
        """Coordinate partitioning of a loop model at x_ref (Wehage and Haug 1982): the free
        coordinates split into dependent ones (as many as the rank of the constraint Jacobian
        G on them, chosen for a well-conditioned G_d by pivoted QR: joint coordinates outside
        loops.independent first, then modal coordinates, the joints of loops.independent last)
        and independent ones, the states. Returns x_ref projected onto the position and velocity
        constraints (a copy); a copy of x_ref without loops."""
        if self.loops is None:
            return np.array(x_ref, dtype=float)
        q, u = np.array(x_ref[:self.nq], float), np.array(x_ref[self.nq:], float)
        _, G = self.loops.eval(q, u)
        Gf = G[:, self.vel_c]
        held = set(self.system.model.loops.independent)
        joint_of = {c: jn for jn, (u0, n) in self.system.joint_u.items() for c in range(u0, u0 + n)}
        group = [0 if jn is not None and jn not in held else 2 if jn in held else 1
                 for jn in (joint_of.get(int(c)) for c in self.vel_c)]
        self.dep = _pick_dependent(Gf, [[k for k in range(self.nfull) if group[k] == g] for g in range(3)])
        self.ind = np.array([k for k in range(self.nfull) if k not in set(self.dep.tolist())], dtype=np.int64)
        x = np.concatenate([q, u])
        self.project(x)
        return x

    def project(self, x: np.ndarray) -> None:
        """x <- x with its dependent positions on g = 0 (Newton on the dependent coordinates to
        round-off, so finite differences of the states see no projection error) and dependent
        velocities on G u = 0; the independent and prescribed coordinates kept."""
        q, u = x[:self.nq], x[self.nq:]
        cols = self.vel_c[self.dep]
        last = np.inf
        for _ in range(30):
            g, G = self.loops.eval(q, u)
            du = np.zeros(u.size)
            du[cols] = -np.linalg.lstsq(G[:, cols], g, rcond=None)[0]
            step = float(np.abs(du).max(initial=0.0))
            self.loops.step_q(q, du)
            if step <= 1e-15 or (step >= 0.5 * last and step < 1e-10):
                break  # converged, or stalled at round-off
            last = step
        else:
            raise RuntimeError(f"the loops cannot be closed at this state (largest residual {np.abs(g).max():.3g})")
        _, G = self.loops.eval(q, u)
        u[cols] -= np.linalg.lstsq(G[:, cols], G @ u, rcond=None)[0]

    def full_shapes(self, shapes: np.ndarray, x_ref: np.ndarray) -> np.ndarray:
        """Position part of mode shapes in every free coordinate (rows: position_names) from the
        independent ones: the dependent rows -G_d^+ G_i times the independent rows."""
        out = np.zeros((self.nfull,) + shapes.shape[1:], dtype=shapes.dtype)
        out[self.ind] = shapes
        if self.dep.size:
            _, G = self.loops.eval(np.array(x_ref[:self.nq]), np.array(x_ref[self.nq:]))
            Gd, Gi = G[:, self.vel_c[self.dep]], G[:, self.vel_c[self.ind]]
            out[self.dep] = -np.linalg.lstsq(Gd, Gi @ shapes, rcond=None)[0]
        return out

    def lookup(self, name: str) -> tuple:
        """The output `name`'s entry; a KeyError lists every output (docs/design-studies.md)."""
        return lookup(self.signals, name, "output", most=len(self.signals))

    def state(self, x_ref: np.ndarray, dz_ind: np.ndarray) -> np.ndarray:
        """Full state [q; u] of the reference perturbed by dz_ind (independent coordinates; with
        loops the dependent ones follow from the constraints)."""
        npos = self.nfull
        dz = np.zeros(2 * npos)
        dz[self.ind] = dz_ind[:self.npos]
        dz[npos + self.ind] = dz_ind[self.npos:]
        x = np.array(x_ref, dtype=float)
        m = self.scalar_q >= 0
        x[self.scalar_q[m]] += dz[:npos][m]
        for qk, _, idx in self.quats:
            x[qk:qk + 4] = quat_mul(x_ref[qk:qk + 4], quat_from_rotvec(dz[idx]))
        x[self.nq + self.vel_c] += dz[npos:]
        if self.dep.size:
            self.project(x)
        return x

    def rates(self, W, xd: np.ndarray, dz_ind: np.ndarray) -> np.ndarray:
        """d(dz_ind)/dt from the full-state derivative xd (W.xu holds the evaluated velocities)."""
        npos = self.nfull
        dz = np.zeros(2 * npos)
        dz[self.ind] = dz_ind[:self.npos]
        zd = np.empty(2 * npos)
        # scalar coordinates (joint coordinates other than quaternions, modal coordinates) have
        # qdot = u by definition; taken from u directly, not from the kernel's qdot
        m = self.scalar_q >= 0
        zd[:npos][m] = W.xu[self.vel_c[m]]
        for _, uk, idx in self.quats:
            zd[idx] = right_jacobian_inv(dz[idx]) @ W.xu[uk:uk + 3]
        zd[npos:] = xd[self.nq + self.vel_c]
        return zd[np.concatenate([self.ind, npos + self.ind])]

    def output(self, name: str, W, xd: np.ndarray, x_ref: np.ndarray, y: np.ndarray) -> float:
        """Output `name` at the state in W (xd its rates; y the outputs of signals.Evaluator at
        it, for the sensors' poses; x_ref the reference state)."""
        spec = self.lookup(name)
        kind = spec[0]
        if kind == "pose":
            return float(y[spec[1]])
        if kind == "q":
            return float(W.xq[spec[1]])
        if kind == "u":
            return float(W.xu[spec[1]])
        if kind == "ud":
            return float(xd[self.nq + spec[1]])
        if kind == "rot":
            qk = self.quats[spec[1]][0]
            return float(rotvec_from_quat(quat_mul(x_ref[qk:qk + 4] * np.array([1, -1, -1, -1]), W.xq[qk:qk + 4]))[spec[2]])
        if kind == "gauge":
            _, e0, row = spec
            return float(row @ W.xq[e0:e0 + row.size])
        _, i, e0, n, phi, H = spec
        eta = W.xq[e0:e0 + n]
        val = float(phi @ eta)
        if i == 0:
            val -= 0.5 * float(eta @ H @ eta)
        return val


def _pick_dependent(Gf: np.ndarray, groups: list[list[int]]) -> np.ndarray:
    """Columns of Gf (constraint rows x free coordinates) to make dependent: rank(Gf) of them,
    taken from the groups in order (pivoted QR of each group's columns after removing the span of
    those already taken), so the dependent block is well conditioned."""
    from scipy.linalg import qr

    s = np.linalg.svd(Gf, compute_uv=False) if Gf.size else np.zeros(0)
    tol = 1e-9 * (s[0] if s.size else 0.0)
    rank = int(np.sum(s > tol))
    chosen: list[int] = []
    for grp in groups:
        if len(chosen) == rank or not grp:
            continue
        R = Gf[:, grp]
        if chosen:
            Q = np.linalg.qr(Gf[:, chosen])[0]
            R = R - Q @ (Q.T @ R)
        _, Rr, piv = qr(R, mode="economic", pivoting=True)
        k = int(np.sum(np.abs(np.diag(Rr)) > tol))
        chosen += [grp[p] for p in piv[:min(k, rank - len(chosen))]]
    return np.array(sorted(chosen), dtype=np.int64)
