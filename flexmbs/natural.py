"""A second, independent formulation for rigid mechanisms with closed loops: natural
coordinates (seed 002, Garcia de Jalon). It shares nothing with the joint-coordinate kernels
but the model file, and serves as their cross-check.

Each moving rigid body b has 12 coordinates q_b = [r0, u, v, w]: its origin and its three axes in
the world frame, so a point at body coordinates s sits at r0 + s1 u + s2 v + s3 w = C(s) q_b,
linear in q. Hence the kinetic energy is 1/2 qd^T M qd with a constant M,
M_b = integral C(s)^T C(s) dm = [[m I, m c_j I], [m c_i I, J_ij I]] with J = integral s s^T dm, and
gravity is the constant force Q_b = integral C^T g dm. Everything else is a constraint, each row a
quadratic form phi_r(q, t) = 1/2 q^T H_r q + b_r^T q + c_r(t):
- rigidity: |u|^2 = |v|^2 = |w|^2 = 1, u.v = u.w = v.w = 0 (6 per body);
- revolute joint (tree or cut alike): marker origins coincide (3 linear rows) and the joint axes
  coincide (3 linear rows, one redundant with the unit lengths);
- prismatic joint to the ground: the body's axes fixed (9 linear) and its marker on the line
  (2 linear rows);
- spherical: the marker origins coincide;
- a motion-driven revolute joint on the ground: the child's axes equal R_ground Rz(theta(t))
  (9 rows with a time-dependent constant, whose second derivative enters the acceleration).
With Phi_q = H q + b the equations of motion are
    [M  Phi_q^T] [qdd   ]   [Q                         ]
    [Phi_q   0 ] [lambda] = [-qd^T H qd - c''(t) (rowwise)],
solved with the constant M^-1 on the rows found independent at each evaluation (pivoted QR:
which rows are redundant changes with the pose), and the state projected back onto Phi = 0,
Phi_q qd = -c'(t) at every output time.

Scope: rigid bodies; revolute, prismatic (to the ground), spherical and fixed joints; motion
drives on revolute joints to the ground; gravity. No springs, dampers, torque inputs or loads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Model, rotation_matrix
from .system import System, compile_model

__all__ = ["NaturalResult", "simulate_natural"]


def _C(s: np.ndarray) -> np.ndarray:
    """3 x 12: the world position of body point s from q_b = [r0, u, v, w]."""
    return np.hstack([np.eye(3), s[0] * np.eye(3), s[1] * np.eye(3), s[2] * np.eye(3)])


def _D(d: np.ndarray) -> np.ndarray:
    """3 x 12: the world components of body vector d from q_b."""
    return np.hstack([np.zeros((3, 3)), d[0] * np.eye(3), d[1] * np.eye(3), d[2] * np.eye(3)])


class _Rows:
    """Constraint rows phi = 1/2 q^T H q + b^T q + c0 + c(t), c(t) = drive(t) . coef."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.H: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        self.c0: list[float] = []
        self.drive: list[tuple] = []       # per row: None or (joint index k, column i, row j, R_a, R_b)

    def add(self, H=None, b=None, c0=0.0, drive=None) -> None:
        self.H.append(np.zeros((self.n, self.n)) if H is None else H)
        self.b.append(np.zeros(self.n) if b is None else b)
        self.c0.append(float(c0))
        self.drive.append(drive)


@dataclass
class NaturalResult:
    """time [s]; q: natural coordinates per sample; markers: 'body.marker' -> world positions
    (n x 3) [m]; energy: kinetic + gravity potential [J]; redundant: number of dropped rows."""

    time: np.ndarray
    q: np.ndarray
    markers: dict[str, np.ndarray]
    energy: np.ndarray
    redundant: int
    rows: int


class _Natural:
    def __init__(self, system: System) -> None:
        model: Model = system.model
        self.system = system
        self.bodies = list(system.bodies)
        for name in self.bodies:
            if model.body(name).type != "rigid":
                raise ValueError(f"natural coordinates: body {name} is {model.body(name).type}; only rigid bodies")
        for j in model.joints:
            unsupported = [what for what, present in (
                ("a spring", j.spring is not None), ("rotor inertia", bool(j.rotor_inertia)),
                (f"a {j.drive.type} drive", j.drive.type not in ("passive", "motion")),
                ("a motion drive on a non-revolute joint", j.drive.type == "motion" and j.type != "revolute"))
                if present]
            if unsupported:
                raise ValueError(f"natural coordinates: joint {j.name} has {', '.join(unsupported)}, which this "
                                 "formulation does not model")
        if model.loads:
            raise ValueError(f"natural coordinates: loads ({', '.join(ld.name or ld.type for ld in model.loads)}) are "
                             "not modelled in this formulation")
        self.index = {b: 12 * i for i, b in enumerate(self.bodies)}
        n = self.n = 12 * len(self.bodies)
        g = np.asarray(model.gravity, float)
        self.M, self.Q = np.zeros((n, n)), np.zeros(n)
        for name in self.bodies:
            body, k = model.body(name), self.index[name]
            m, c = float(body.mass), np.asarray(body.com, float)
            from .model.validate import inertia_matrix

            Ic = inertia_matrix(body.inertia)
            J = m * np.outer(c, c) + 0.5 * np.trace(Ic) * np.eye(3) - Ic
            Mb = np.zeros((12, 12))
            Mb[:3, :3] = m * np.eye(3)
            for i in range(3):
                Mb[:3, 3 + 3 * i:6 + 3 * i] = Mb[3 + 3 * i:6 + 3 * i, :3] = m * c[i] * np.eye(3)
                for j in range(3):
                    Mb[3 + 3 * i:6 + 3 * i, 3 + 3 * j:6 + 3 * j] = J[i, j] * np.eye(3)
            self.M[k:k + 12, k:k + 12] = Mb
            self.Q[k:k + 12] = np.concatenate([m * g, m * c[0] * g, m * c[1] * g, m * c[2] * g])
        self.rows = _Rows(n)
        for name in self.bodies:
            self._rigid(self.index[name])
        self.drives: list[str] = []
        self.axes: list[np.ndarray] = []
        for j in list(model.joints) + list(model.loops.cuts):
            self._joint(model, j)
        self.H_all, self.b_all = np.array(self.rows.H), np.array(self.rows.b)
        self.Minv = np.linalg.inv(self.M)      # the constant mass matrix: inverted once
        self.MiQ = self.Minv @ self.Q
        self.on = np.ones(len(self.rows.c0), bool)
        self._H, self._b = self.H_all, self.b_all

    # ------------------------------------------------------------------ building rows

    def _marker(self, model: Model, body: str, marker: str) -> tuple[np.ndarray, np.ndarray]:
        owner = model.ground_markers if body == "ground" else model.body(body).markers
        mk = next(m for m in owner if m.name == marker)
        return np.asarray(mk.position, float), rotation_matrix(mk.rotation)

    def _place(self, body: str, A: np.ndarray) -> np.ndarray:
        """A (3 x 12) acting on body's coordinates, as a 3 x n block."""
        out = np.zeros((3, self.n))
        out[:, self.index[body]:self.index[body] + 12] = A
        return out

    def _rigid(self, k: int) -> None:
        for i, j, c0 in ((0, 0, -1.0), (1, 1, -1.0), (2, 2, -1.0), (0, 1, 0.0), (0, 2, 0.0), (1, 2, 0.0)):
            H = np.zeros((self.n, self.n))
            a, b = k + 3 + 3 * i, k + 3 + 3 * j
            H[a:a + 3, b:b + 3] += np.eye(3)
            H[b:b + 3, a:a + 3] += np.eye(3)
            self.rows.add(H=H, c0=c0)

    def _linear(self, left: np.ndarray, right: np.ndarray) -> None:
        """Rows left q + right = 0 (left: 3 x n, right: 3)."""
        for i in range(3):
            self.rows.add(b=left[i].copy(), c0=right[i])

    def _side(self, model: Model, body: str, marker: str, what: str, vec: np.ndarray | None = None):
        """(3 x n matrix, constant 3-vector) of a marker's origin (what='point') or of a
        marker-frame vector (what='vector') in the world."""
        s, R = self._marker(model, body, marker)
        if body == "ground":
            return np.zeros((3, self.n)), (s if what == "point" else R @ vec)
        return (self._place(body, _C(s)) if what == "point" else self._place(body, _D(R @ vec))), np.zeros(3)

    def _joint(self, model: Model, j) -> None:
        pa, ca = self._side(model, j.parent, j.parent_marker, "point")
        pb, cb = self._side(model, j.child, j.child_marker, "point")
        axis = np.asarray(j.axis, float) / np.linalg.norm(j.axis)
        if j.type in ("revolute", "spherical", "fixed"):
            self._linear(pa - pb, ca - cb)
        if j.type in ("revolute", "fixed") and j.drive.type != "motion":
            ea, xa = self._side(model, j.parent, j.parent_marker, "vector", axis)
            eb, xb = self._side(model, j.child, j.child_marker, "vector", axis)
            self._linear(ea - eb, xa - xb)
        if j.type == "fixed" or (j.type == "revolute" and j.drive.type == "motion") or j.type == "prismatic":
            if j.parent != "ground":
                raise ValueError(f"natural coordinates: joint {j.name}: {j.type} joints and motion drives are "
                                 "supported to the ground only")
            _, Ra = self._marker(model, j.parent, j.parent_marker)
            _, Rb = self._marker(model, j.child, j.child_marker)
            motion = j.type == "revolute" and j.drive.type == "motion"
            if motion:
                self.drives.append(j.name)
                self.axes.append(np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]]))
            for col in range(3):
                rows = self._place(j.child, _D(Rb[:, col]))
                for r in range(3):
                    drive = (len(self.drives) - 1, col, r, Ra, Rb) if motion else None
                    self.rows.add(b=rows[r].copy(), c0=0.0 if motion else -Ra[r, col], drive=drive)
        if j.type == "prismatic":
            s_a, Ra = self._marker(model, "ground", j.parent_marker)
            E = np.linalg.svd(axis[None, :])[2][1:]          # two unit vectors across the axis
            for e in E:
                d = Ra @ e
                self.rows.add(b=d @ pb, c0=-(d @ s_a))
        if j.type not in ("revolute", "spherical", "fixed", "prismatic"):
            raise ValueError(f"natural coordinates: joint {j.name} is {j.type}; supported: revolute, prismatic, "
                             "spherical, fixed")

    # ------------------------------------------------------------------ evaluation

    def _drive(self, t: float) -> list[tuple[float, float, float]]:
        from .kernels.dynamics import drive_profile

        S, out = self.system.ref, []
        for name in self.drives:
            c = self.system.joint_u[name][0]
            out.append(drive_profile(S, c, self.system.input_defaults, t))
        return out

    def _c(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """c(t), c'(t), c''(t) of every row."""
        m = len(self.rows.c0)
        c, cd, cdd = np.array(self.rows.c0), np.zeros(m), np.zeros(m)
        theta = self._drive(t) if self.drives else []
        for r, dr in enumerate(self.rows.drive):
            if dr is None:
                continue
            k, col, row, Ra, Rb = dr
            th, thd, thdd = theta[k]
            K = self.axes[k]
            ct, st = np.cos(th), np.sin(th)
            # rotation about the joint axis (Rodrigues) and its first two derivatives in theta
            R = np.eye(3) + st * K + (1 - ct) * K @ K
            dR = ct * K + st * K @ K
            ddR = -st * K + ct * K @ K
            # the row reads (X_B Rb)[row, col] - (Ra R(theta))[row, col] = 0
            X = lambda Z: -(Ra @ Z)[row, col]   # noqa: E731
            c[r] = X(R)
            cd[r] = X(dR) * thd
            cdd[r] = X(ddR) * thd ** 2 + X(dR) * thdd
        return c, cd, cdd

    def phi(self, q: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(Phi of the rows in use, its Jacobian)."""
        c, _, _ = self._c(t)
        Hq = self._H @ q
        return 0.5 * Hq @ q + self._b @ q + c[self.on], Hq + self._b

    def accelerations(self, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """qdd from the constant M^-1 (inverted once) and the independent rows at this pose
        (pivoted QR: which rows are redundant changes with the pose, e.g. a driven crank's axes)."""
        from scipy.linalg import qr

        _, _, cdd = self._c(t)
        G = self.H_all @ q + self.b_all
        _, R, piv = qr(G.T, mode="economic", pivoting=True)
        d = np.abs(np.diag(R))
        keep = piv[:int(np.sum(d > 1e-9 * d[0]))]
        G = G[keep]
        gam = -np.einsum("i,rij,j->r", qd, self.H_all[keep], qd) - cdd[keep]
        MiGt = self.Minv @ G.T
        lam = np.linalg.solve(G @ MiGt, G @ self.MiQ - gam)
        return self.MiQ - MiGt @ lam

    def select_rows(self, q: np.ndarray, t: float) -> None:
        """Keep the independent rows at (q, t) for phi and the projection (pivoted QR)."""
        from scipy.linalg import qr

        _, G = self.phi(q, t)
        _, R, piv = qr(G.T, mode="economic", pivoting=True)
        d = np.abs(np.diag(R))
        rank = int(np.sum(d > 1e-9 * d[0]))
        self.on[:] = False
        self.on[piv[:rank]] = True
        self._H, self._b = self.H_all[self.on], self.b_all[self.on]

    def project(self, q: np.ndarray, qd: np.ndarray, t: float) -> None:
        for _ in range(20):
            f, G = self.phi(q, t)
            if np.max(np.abs(f)) < 1e-13:
                break
            q -= np.linalg.lstsq(G, f, rcond=None)[0]
        _, G = self.phi(q, t)
        _, cd, _ = self._c(t)
        qd -= np.linalg.lstsq(G, G @ qd + cd[self.on], rcond=None)[0]


def _initial_state(system: System) -> tuple[np.ndarray, np.ndarray]:
    """Natural coordinates and rates of the joint-coordinate System's initial state."""
    from .kernels.dynamics import apply_prescribed
    from .kernels.kinematics import forward
    from .kernels.structs import box, make_workspace

    work = make_workspace(system.arrays)
    q, u = system.q0.copy(), system.u0.copy()
    apply_prescribed(system.ref, 0.0, q, u, system.input_defaults, np.zeros(u.size))
    forward(system.ref, box(work), q, u)
    nb = len(system.bodies)
    x, xd = np.zeros(12 * nb), np.zeros(12 * nb)
    for i in range(nb):
        A, w = work.A[i], work.w[i]
        x[12 * i:12 * i + 12] = np.concatenate([work.r[i], A[:, 0], A[:, 1], A[:, 2]])
        xd[12 * i:12 * i + 12] = np.concatenate([work.v[i], np.cross(w, A[:, 0]), np.cross(w, A[:, 1]),
                                                 np.cross(w, A[:, 2])])
    return x, xd


def simulate_natural(model: Model, t_end: float, output_step: float = 0.01, rtol: float = 1e-10) -> NaturalResult:
    """Simulate a rigid mechanism in natural coordinates from the same initial state as the
    joint-coordinate formulation (assembled loops included); scipy's DOP853 between output
    times, projection onto the constraints at each."""
    from scipy.integrate import solve_ivp

    system = compile_model(model)
    nat = _Natural(system)
    q, qd = _initial_state(system)
    nat.select_rows(q, 0.0)
    n = nat.n
    times = np.arange(0.0, t_end + 0.5 * output_step, output_step)
    Q, QD = np.zeros((times.size, n)), np.zeros((times.size, n))
    state = np.concatenate([q, qd])
    Q[0], QD[0] = q, qd
    for k in range(1, times.size):
        sol = solve_ivp(lambda t, y: np.concatenate([y[n:], nat.accelerations(t, y[:n], y[n:])]),
                        (times[k - 1], times[k]), state, method="DOP853", rtol=rtol, atol=rtol)
        state = sol.y[:, -1].copy()
        nat.select_rows(state[:n], times[k])
        nat.project(state[:n], state[n:], times[k])
        Q[k], QD[k] = state[:n], state[n:]
    markers = {}
    for name in nat.bodies:
        for mk in model.body(name).markers:
            s = np.asarray(mk.position, float)
            markers[f"{name}.{mk.name}"] = Q[:, nat.index[name]:nat.index[name] + 12] @ _C(s).T
    # kinetic energy 1/2 qd^T M qd; gravity's potential -Q^T q (Q = integral C^T g dm)
    energy = 0.5 * np.einsum("ki,ij,kj->k", QD, nat.M, QD) - Q @ nat.Q
    return NaturalResult(times, Q, markers, energy, int((~nat.on).sum()), int(nat.on.size))
