"""Linearization, static equilibrium and natural modes of a model.

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

Outputs are any of those names, `<joint>.qdd[...]`, `<body>.tip_deflection[i]`, the strain-gauge
and section-force outputs `<sensor>.strain`, `<sensor>.N` ... (as in simulate's Result) and the
same names for motion-driven joints; y = y0 + C dx + D du with y0 the value at the reference
(the `rot[i]` outputs are measured from the reference orientation, so y0 = 0 there).

Closed loops (cut joints): the free coordinates are partitioned at the operating point into
independent and dependent ones (Wehage and Haug 1982): as many dependent coordinates as the rank
of the constraint Jacobian G on the free coordinates, picked by pivoted QR for a well-conditioned
block G_d (joint coordinates outside loops.independent first, then modal coordinates, the joints
of loops.independent last). The states are the independent coordinates and their rates; at each
evaluation the dependent positions are solved from g(q) = 0 (Newton to round-off, so the finite
differences see no projection error), the dependent rates from G u = 0, and the accelerations
come from the kernel's constrained solve (the acceleration-level constraint with its
velocity-product term), so position, velocity and acceleration levels are consistent.

The position rows use the kinematic definitions directly (qdot = u for joint and modal coordinates,
the J_r^-1 map above for rotation vectors); the velocity rows come from the dynamics kernel `rhs`.

Jacobians are central finite differences with steps eps^(1/3) times the state scales of
flexmbs.solvers.stepper.state_scales (1 for joint coordinates, a small modal amplitude for eta).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from . import arguments as args
from .compile import compile_model
from .gauges import gauges
from .kernels.drives import MOTION
from .kernels.dynamics import rhs
from .model import JOINTS
from .model.elements import Drive, Model, Profile
from .signals import tip_marker
from .names import lookup
from .so3 import quat_from_rotvec, quat_mul, right_jacobian_inv, rotvec_from_quat
from .system import System, model_argument, state_scales

__all__ = ["LinearSystem", "ModesResult", "equilibrium", "linearize", "modes"]

_FD = np.finfo(float).eps ** (1.0 / 3.0)
# equilibrium's Newton: a tolerance double precision can meet, up to 1 (the whole first residual)
_TOL_RANGE = (1e-15, 1.0)
_MAX_ITER = 1000


# --------------------------------------------------------------------------- coordinates


def _suffix(i: int, n: int) -> str:
    return "" if n == 1 else f"[{i + 1}]"


class _Coordinates:
    """The free (minimal) coordinates of a System and every nameable signal."""

    def __init__(self, system: System) -> None:
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
        self.scalar_q = np.array(scalar_q, dtype=np.int64)
        self.vel_c = np.array(vel_c, dtype=np.int64)
        self.nfull = len(self.position_names)
        self._scales = np.concatenate([pos_scale, self.xs[self.nq + self.vel_c]])
        # loop models: the independent coordinates (indices into the free positions), set by reduce
        self.ind = np.arange(self.nfull)
        self.dep = np.zeros(0, dtype=np.int64)
        self.loops = None
        if system.model.loops.cuts:
            from .loops import Loops
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
        self._project(x)
        return x

    def _project(self, x: np.ndarray) -> None:
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
        return lookup(self.signals, name, "output")

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
            self._project(x)
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

    def output(self, name: str, W, xd: np.ndarray, x_ref: np.ndarray) -> float:
        spec = self.lookup(name)
        kind = spec[0]
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


def _kernel_args(system: System) -> tuple:
    """(system argument, workspace argument, workspace tuple) for the kernels. The kernels take
    either the plain tuples or boxes of them (System.ref); with boxes the workspace tuple is kept
    here too (its arrays are shared with the box) so results can be read from Python."""
    ref = getattr(system, "ref", None)
    if ref is None:
        W = system.workspace()
        return system.arrays, W, W
    from .kernels.structs import box, make_workspace
    W = make_workspace(system.arrays)
    return ref, box(W), W


def _system_of(model_or_system: Model | System, spin: Mapping[str, float] | None = None,
               where: str = "linearize") -> System:
    """The System to analyse; with spin = {joint: rate [rad/s or m/s]} the named single-coordinate
    joints become motion drives q = q0 + rate t (on a deep copy of the Model, then compiled)."""
    if spin is not None and not isinstance(spin, Mapping):
        raise ValueError(f"{where}: spin = {spin!r}: expected a mapping {{joint name: rate}}")
    for jn, rate in (spin or {}).items():
        args.number(where, f"spin[{jn!r}]", rate, "finite", "rad/s or m/s")
    model_or_system = model_argument(where, model_or_system)
    if not spin:
        return model_or_system if isinstance(model_or_system, System) else compile_model(model_or_system)
    base = model_or_system.model if isinstance(model_or_system, System) else model_or_system
    model = copy.deepcopy(base)
    for jn, rate in spin.items():
        j = model.joint(jn)
        if JOINTS[j.type].nv != 1:
            raise ValueError(f"spin: joint {jn!r} is a {j.type} joint; only single-coordinate joints "
                             f"(revolute, prismatic) can be spun")
        q0 = np.ravel(np.asarray(j.q0, dtype=float))
        value = float(q0[0]) if q0.size else 0.0
        j.drive = Drive(type="motion", profile=Profile(type="constant", value=value, rate=float(rate)))
        j.qd0 = [float(rate)]
    return compile_model(model)


def _input_vector(system: System, inputs, where: str = "linearize") -> np.ndarray:
    """Input values (defaults overridden by a {name: value} mapping or a full array), checked
    finite; length >= 1 so that the kernels always see the same array type."""
    u = np.zeros(max(1, len(system.inputs)))
    u[:len(system.inputs)] = system.input_defaults
    if inputs is None:
        return u
    if isinstance(inputs, Mapping):
        for name, val in args.input_values(where, inputs, system.inputs).items():
            u[system.inputs.index(name)] = val
        return u
    arr = args.vector(where, "inputs", np.ravel(np.asarray(inputs, dtype=object)), len(system.inputs),
                      f"the inputs {', '.join(system.inputs) or '(none)'}")
    u[:arr.size] = arr
    return u


def _reference_state(system: System, x, where: str = "linearize", name: str = "x") -> np.ndarray:
    nx = system.nq + system.nv
    if x is None:
        return np.concatenate([system.q0, system.u0]).astype(float)
    return args.vector(where, name, np.ravel(np.asarray(x, dtype=object)), nx, "the full state [q; u]")


class _Evaluator:
    """f(dz, inputs) -> (d(dz)/dt, outputs) about a reference state, via the rhs kernel."""

    def __init__(self, system: System, coords: _Coordinates, t: float, x_ref: np.ndarray,
                 outputs: Sequence[str]) -> None:
        self.system, self.coords, self.t, self.x_ref = system, coords, float(t), x_ref
        self.outputs = list(outputs)
        for name in self.outputs:
            coords.lookup(name)
        self.S_arg, self.W_arg, self.W = _kernel_args(system)
        self.xd = np.zeros(system.nq + system.nv)

    def __call__(self, dz: np.ndarray, inputs: np.ndarray) -> np.ndarray:
        c = self.coords
        x = c.state(self.x_ref, dz)
        ok = rhs(self.S_arg, self.W_arg, self.t, x, inputs, self.xd)
        if not ok:
            raise RuntimeError("the mass matrix is singular or indefinite at the linearization point")
        zd = c.rates(self.W, self.xd, dz)
        y = np.array([c.output(n, self.W, self.xd, self.x_ref) for n in self.outputs])
        return np.concatenate([zd, y])


def _jacobian(f, n_out: int, z0: np.ndarray, steps: np.ndarray) -> np.ndarray:
    J = np.zeros((n_out, z0.size))
    for j in range(z0.size):
        h = steps[j]
        zp = z0.copy()
        zm = z0.copy()
        zp[j] += h
        zm[j] -= h
        J[:, j] = (f(zp) - f(zm)) / (2.0 * h)
    return J


# --------------------------------------------------------------------------- linearize


@dataclass
class LinearSystem:
    """xdot = xdot0 + A x + B u, y = y0 + C x + D u about the reference (t, x0, u0), x and u
    the deviations from it.

    States are the free minimal coordinates (positions then velocities, see the module notes);
    x0 is the full reference state [q; u] of the System, u0 the reference inputs; xdot0 the
    state derivative at the reference, zero at an equilibrium (its velocity half is the residual
    acceleration [rad/s2, m/s2] of each free coordinate otherwise).
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    state_names: list[str]
    input_names: list[str]
    output_names: list[str]
    t: float = 0.0
    x0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    u0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    y0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    xdot0: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def residual_acceleration(self) -> tuple[float, str]:
        """The largest residual acceleration of a free coordinate at the reference [rad/s2 or
        m/s2] and the name of that coordinate's position state ('' when there is none)."""
        n = self.A.shape[0] // 2
        if n == 0 or self.xdot0.size != 2 * n:
            return 0.0, ""
        k = int(np.argmax(np.abs(self.xdot0[n:])))
        return float(abs(self.xdot0[n + k])), self.state_names[k]

    def eigs(self) -> np.ndarray:
        """Eigenvalues of A [1/s], sorted by magnitude then by imaginary part."""
        lam = np.linalg.eigvals(self.A) if self.A.size else np.zeros(0, complex)
        return lam[np.lexsort((lam.imag, np.abs(lam)))]

    def to_scipy(self):
        """scipy.signal.StateSpace (A, B, C, D); a model without inputs gets one zero input column."""
        from scipy.signal import StateSpace
        B, D = self.B, self.D
        if B.shape[1] == 0:
            B = np.zeros((self.A.shape[0], 1))
            D = np.zeros((self.C.shape[0], 1))
        return StateSpace(self.A, B, self.C, D)

    def control_names(self) -> dict[str, str]:
        """Our signal name -> the name python-control accepts, for every state, input and output:
        '.' becomes '_' and an index '[i]' becomes '_i' (python-control refuses dots, and reads
        brackets as index ranges when systems are interconnected), e.g. 'link2.tip_deflection[2]'
        -> 'link2_tip_deflection_2'. The map is one-to-one (ValueError naming the two names
        otherwise), so inverting it gives our names back."""
        out: dict[str, str] = {}
        taken: dict[str, str] = {}
        for name in dict.fromkeys([*self.state_names, *self.input_names, *self.output_names]):
            mapped = name.replace(".", "_").replace("[", "_").replace("]", "")
            if mapped in taken:
                raise ValueError(f"to_control: {taken[mapped]!r} and {name!r} both map to the python-control "
                                 f"name {mapped!r}; rename one of them in the model")
            taken[mapped] = name
            out[name] = mapped
        return out

    def select(self, inputs: Sequence[str] | None = None) -> LinearSystem:
        """A copy with only the named inputs (columns of B and D, entries of u0), in that order;
        an unknown name raises KeyError with the closest names."""
        if inputs is None:
            return self
        index = {n: i for i, n in enumerate(self.input_names)}
        cols = [lookup(index, n, "input") for n in inputs]
        return LinearSystem(self.A, self.B[:, cols], self.C, self.D[:, cols], list(self.state_names), list(inputs),
                            list(self.output_names), self.t, self.x0, self.u0[cols], self.y0, self.xdot0)

    def to_control(self):
        """python-control StateSpace (A, B, C, D) with the states, inputs and outputs named by
        `control_names()` (our names with '.' -> '_' and '[i]' -> '_i')."""
        import control

        names = self.control_names()
        return control.ss(self.A, self.B, self.C, self.D, states=[names[n] for n in self.state_names],
                          inputs=[names[n] for n in self.input_names],
                          outputs=[names[n] for n in self.output_names])

    def save(self, path: str) -> None:
        """Write A, B, C, D, the names (state_names, input_names, output_names) and the
        reference (t, x0, u0, y0, xdot0) to a .npz (numpy) or .mat (MATLAB, scipy.io.savemat: the
        names as cell arrays of strings) file, chosen by the suffix."""
        data = {"A": self.A, "B": self.B, "C": self.C, "D": self.D, "t": self.t, "x0": self.x0, "u0": self.u0,
                "y0": self.y0, "xdot0": self.xdot0, "state_names": np.array(self.state_names, dtype=object),
                "input_names": np.array(self.input_names, dtype=object),
                "output_names": np.array(self.output_names, dtype=object)}
        if str(path).endswith(".mat"):
            from scipy.io import savemat
            savemat(path, data)
        elif str(path).endswith(".npz"):
            np.savez(path, **{k: np.array(v, dtype=str) if k.endswith("_names") else v for k, v in data.items()})
        else:
            raise ValueError(f"{path}: expected a file name ending in .npz or .mat")


def linearize(model_or_system: Model | System, *, t: float = 0.0, x: np.ndarray | None = None,
              inputs=None, outputs: Sequence[str] | None = None,
              spin: Mapping[str, float] | None = None) -> LinearSystem:
    """Linearize xdot = f(t, x, u) about (t, x, u) by central finite differences.

    model_or_system: a Model (compiled here), a System, or a model file path or shipped model
    name. x: full state [q; u] of the System
    (default its initial state; motion-driven entries are replaced by their profile at t).
    inputs: {name: value} over the input defaults, or an array of all inputs. outputs: signal names
    (default every free joint coordinate). Returns a LinearSystem in the free minimal coordinates;
    B has one column per entry of system.inputs. spin = {joint: rate}: those joints turn at a constant
    rate first (as in equilibrium).
    """
    args.number("linearize", "t", t, "finite", "s")
    if outputs is not None and (isinstance(outputs, str) or not all(isinstance(o, str) for o in outputs)):
        raise ValueError(f"linearize: outputs = {outputs!r}: expected a list of signal names")
    system = _system_of(model_or_system, spin)
    coords = _Coordinates(system)
    x_ref = coords.reduce(_reference_state(system, x))
    u_ref = _input_vector(system, inputs)
    outputs = list(coords.joint_positions if outputs is None else outputs)
    ev = _Evaluator(system, coords, t, x_ref, outputs)
    nz, ny, nu = 2 * coords.npos, len(outputs), len(system.inputs)
    z0 = np.zeros(nz)
    F0 = ev(z0, u_ref)
    x0 = np.concatenate([ev.W.xq, ev.W.xu])  # the reference with the prescribed values applied
    JX = _jacobian(lambda z: ev(z, u_ref), nz + ny, z0, _FD * coords.scales)
    JU = _jacobian(lambda u: ev(z0, np.concatenate([u, u_ref[nu:]])), nz + ny, u_ref[:nu],
                   _FD * np.maximum(1.0, np.abs(u_ref[:nu])))
    return LinearSystem(A=JX[:nz], B=JU[:nz], C=JX[nz:], D=JU[nz:], state_names=coords.state_names,
                        input_names=list(system.inputs), output_names=outputs, t=float(t), x0=x0,
                        u0=u_ref[:nu].copy(), y0=F0[nz:], xdot0=F0[:nz])


# --------------------------------------------------------------------------- equilibrium


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
    system = _system_of(model_or_system, spin, where)
    coords = _Coordinates(system)
    x = _reference_state(system, x_guess, where, "x_guess")
    x[system.nq + coords.vel_c] = 0.0
    x = coords.reduce(x)
    u_ref = _input_vector(system, inputs, where)
    ev = _Evaluator(system, coords, t, x, [])
    npos = coords.npos
    steps = _FD * coords.scales[:npos]
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
        J = _jacobian(lambda p, xr=x: residual(xr, p), npos, zero, steps)
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


# --------------------------------------------------------------------------- modes


@dataclass
class ModesResult:
    """Natural modes of a linearization, sorted by ascending frequency.

    frequencies_hz: undamped natural frequencies |lambda|/(2 pi) [Hz]; rigid-body (zero) modes are
    reported with 0 and count as modes; a divergent (statically unstable) mode with real
    eigenvalues +-sigma is reported with a NEGATIVE frequency -sigma/(2 pi), so it sorts first.
    omega: the same in rad/s. damping_ratios: -Re(lambda)/|lambda| (0 for zero modes).
    eigenvalues: one eigenvalue per mode (the one with Im > 0, or the larger real one).
    shapes: (n_coordinates, n_modes) position part of the eigenvectors, scaled to a largest entry
    of +1 (real when the imaginary parts vanish, e.g. without damping and gyroscopic coupling,
    complex otherwise). coordinate_names: the free position coordinates (rows of shapes; with
    loops the independent ones). labels: the dominant motion of each mode, a joint coordinate
    (e.g. `crank.q`) or '<body>: in-plane bending' (out-of-plane bending, torsion, axial; bending
    x-y / x-z when no revolute joint sets the plane; elastic for superelements), see table().
    """

    frequencies_hz: np.ndarray
    damping_ratios: np.ndarray
    shapes: np.ndarray
    coordinate_names: list[str]
    omega: np.ndarray
    eigenvalues: np.ndarray
    linear: LinearSystem | None = None
    labels: list[str] = field(default_factory=list)

    def table(self) -> str:
        lines = [f"{'mode':>4}  {'f [Hz]':>12}  {'omega [rad/s]':>14}  {'zeta':>9}  dominant motion"]
        for k, (f, w, z) in enumerate(zip(self.frequencies_hz, self.omega, self.damping_ratios)):
            dom = self.labels[k] if k < len(self.labels) else ""
            lines.append(f"{k + 1:>4}  {f:>12.6g}  {w:>14.6g}  {z:>9.4g}  {dom}")
        return "\n".join(lines)


def _family_labels(system: System, body: str) -> dict[str, str]:
    """Labels of a beam's deformation families (Beam.stiffness_families): axial, torsion, and
    in-plane / out-of-plane bending relative to the plane normal to the revolute (or first
    universal) axis of the joint that carries the body (that axis in the body frame through its
    marker's rotation); 'bending x-y' / 'bending x-z' (body axes) when no such joint sets a plane."""
    labels = {"axial": "axial", "torsion": "torsion", "bending_xy": "bending x-y", "bending_xz": "bending x-z"}
    joint = next((j for j in system.model.joints if j.child == body), None)
    if joint is None or joint.type not in ("revolute", "universal"):
        return labels
    R0 = system.arrays.mk_R0[system.markers[f"{body}.{joint.child_marker}"]]
    n = R0 @ np.asarray(joint.axis, dtype=float)   # the axis in the body frame
    if abs(abs(n[1]) - abs(n[2])) < 1e-6:
        return labels
    xy_in = abs(n[2]) > abs(n[1])                  # v-bending turns about z: in the plane normal to z
    labels["bending_xy"] = "in-plane bending" if xy_in else "out-of-plane bending"
    labels["bending_xz"] = "out-of-plane bending" if xy_in else "in-plane bending"
    return labels


def _mode_labels(system: System, coords: _Coordinates, full: np.ndarray, omega: np.ndarray,
                 x_ref: np.ndarray, t: float, inputs: np.ndarray) -> list[str]:
    """Dominant motion of each mode from its shape in every free coordinate (full, rows
    coords.position_names). An elastic mode (a flexible body stores at least half of the mode's
    peak kinetic energy omega^2 v^T M v / 2 as strain energy eta^T Ke eta / 2, M the mass
    matrix at x_ref) is labelled by that body and, for beams, the deformation family (axial,
    torsion, in-/out-of-plane bending) holding most of its strain energy; any other mode by the
    joint coordinate with the largest motion in units of its state scale."""
    from .kernels.entry import assemble

    S_arg, W_arg, W = _kernel_args(system)
    q, u = np.array(x_ref[:coords.nq], float), np.array(x_ref[coords.nq:], float)
    assemble(S_arg, W_arg, float(t), q, u, inputs)
    M = np.array(W.M)
    scale = coords._scales[:coords.nfull]
    joints = [i for i, n in enumerate(coords.position_names) if ".eta[" not in n]
    families: dict[str, tuple] = {}
    labels = []
    for k in range(full.shape[1]):
        col = full[:, k]
        v = np.zeros(coords.nv, dtype=col.dtype)
        v[coords.vel_c] = col
        kinetic = omega[k] ** 2 * float(np.real(np.conj(v) @ M @ v))
        strain = {}
        for b, (e0, n) in system.body_eta.items():
            i0 = coords.position_names.index(f"{b}.eta[1]")
            e = col[i0:i0 + n]
            strain[b] = float(np.real(np.conj(e) @ system.flex[b].Ke @ e))
        body = max(strain, key=strain.get) if strain else None
        if body is None or not omega[k] > 0 or strain[body] < 0.5 * kinetic:
            i = joints[int(np.argmax(np.abs(col[joints]) / scale[joints]))] if joints else 0
            labels.append(coords.position_names[i])
            continue
        d = system.flex[body]
        if d.beam is None:
            labels.append(f"{body}: elastic")
            continue
        if body not in families:
            families[body] = (d.beam.stiffness_families(), _family_labels(system, body))
        Kf, names = families[body]
        i0 = coords.position_names.index(f"{body}.eta[1]")
        disp = d.nodal_modes @ col[i0:i0 + d.n]
        energy = {f: float(np.real(np.conj(disp) @ K @ disp)) for f, K in Kf.items()}
        top = max(energy, key=energy.get)
        labels.append(f"{body}: {names[top]}")
    return labels


def _normalize(v: np.ndarray) -> np.ndarray:
    if not v.size or not np.any(v):
        return v
    v = v / v[int(np.argmax(np.abs(v)))]
    if np.abs(v.imag).max() <= 1e-8:
        v = v.real.astype(complex)
    return v


def _modal_pairs(lam: np.ndarray, vecs: np.ndarray, npos: int, zero_tol: float):
    """Group the 2 npos eigenvalues of A into npos modes: (omega signed, zeta, lambda, shape)."""
    out = []
    used = np.zeros(lam.size, bool)
    # complex conjugate pairs: one mode each
    for i in np.flatnonzero(lam.imag > 0):
        if abs(lam[i]) <= zero_tol:
            continue
        j = np.flatnonzero(~used & (np.abs(lam - lam[i].conj()) <= 1e-9 * abs(lam[i])) & (lam.imag < 0))
        used[i] = True
        if j.size:
            used[j[0]] = True
        w = abs(lam[i])
        out.append((w, -lam[i].real / w + 0.0, lam[i], _normalize(vecs[:npos, i])))
    rest = [i for i in np.flatnonzero(~used)]
    # zero modes (rigid-body directions, whether real or a tiny complex pair)
    zeros = [i for i in rest if abs(lam[i]) <= zero_tol]
    rest = sorted((i for i in rest if abs(lam[i]) > zero_tol), key=lambda i: lam[i].real)
    for k in range(0, len(zeros) - 1, 2):
        i = zeros[k]
        out.append((0.0, 0.0, complex(0.0), _normalize(vecs[:npos, i])))
    leftover = zeros[len(zeros) - len(zeros) % 2:]
    rest = sorted(rest + leftover, key=lambda i: lam[i].real)
    # real pairs: +-sigma (divergence) first, then adjacent ones (overdamped)
    while rest:
        i = rest.pop()  # largest real part
        lr = lam[i].real
        if not rest:
            out.append((0.0 if abs(lr) <= zero_tol else np.nan, np.nan, lam[i], _normalize(vecs[:npos, i])))
            break
        partner = min(rest, key=lambda j: abs(lam[j].real + lr))
        if abs(lam[partner].real + lr) > 1e-6 * max(abs(lr), zero_tol):
            partner = rest[-1]
        rest.remove(partner)
        l1, l2 = lr, lam[partner].real
        w2 = l1 * l2
        if w2 >= 0:
            w = np.sqrt(w2)
            zeta = -(l1 + l2) / (2 * w) if w > 0 else np.nan
        else:
            w = -np.sqrt(-w2)
            zeta = -(l1 + l2) / (2 * abs(w))
        out.append((w, zeta, complex(l1), _normalize(vecs[:npos, i])))
    return out


def modes(model: Model | System, *, n: int | None = None, spin: Mapping[str, float] | None = None,
          about: str = "equilibrium", x: np.ndarray | None = None, inputs=None,
          zero_tol: float | None = None) -> ModesResult:
    """Natural frequencies, damping ratios and mode shapes of the linearization about the static
    equilibrium (about="equilibrium", default; x is then the Newton guess) or the initial state
    (about="initial"; or x when given), with spin = {joint: rate} turning those joints at a constant
    rate (see equilibrium). n: number of modes returned, lowest first (None, the default: all);
    rigid-body modes count, and n is at most the number of free coordinates (one mode each; a
    closed loop has fewer modes than that). zero_tol [rad/s]:
    eigenvalues below it are zero modes (default 1e-5 max(1, max |lambda|)). model as for
    linearize.
    """
    if about not in ("equilibrium", "initial"):
        raise ValueError(f"modes: about = {about!r}: expected 'equilibrium' or 'initial'")
    if n is not None:
        args.integer("modes", "n", n, 1)
    args.optional_number("modes", "zero_tol", zero_tol, "non-negative", "rad/s")
    system = _system_of(model, spin, "modes")
    if n is not None:
        free = _Coordinates(system).npos
        args.integer("modes", "n", n, 1, free, f" (the model has {free} free coordinates, at most one mode "
                                               "each; n=None gives all)")
    if about == "equilibrium":
        x_ref = equilibrium(system, x_guess=x, inputs=inputs)
    else:
        x_ref = _reference_state(system, x, "modes")
    lin = linearize(system, x=x_ref, inputs=inputs, outputs=[])
    npos = lin.A.shape[0] // 2
    names = lin.state_names[:npos]
    if npos == 0:
        e = np.zeros(0)
        return ModesResult(e, e, np.zeros((0, 0)), names, e, e.astype(complex), lin)
    coords = _Coordinates(system)
    coords.reduce(lin.x0)
    lam, vecs = np.linalg.eig(lin.A)
    if zero_tol is None:
        zero_tol = 1e-5 * max(1.0, float(np.abs(lam).max()))
    items = _modal_pairs(lam, vecs, npos, zero_tol)
    items.sort(key=lambda it: (it[0] if np.isfinite(it[0]) else -np.inf))
    if n is not None:
        items = items[:n]
    omega = np.array([it[0] for it in items], dtype=float)
    shapes = np.column_stack([it[3] for it in items]) if items else np.zeros((npos, 0), complex)
    if shapes.size and np.abs(shapes.imag).max() == 0.0:
        shapes = shapes.real
    return ModesResult(frequencies_hz=omega / (2 * np.pi), damping_ratios=np.array([it[1] for it in items]),
                       shapes=shapes, coordinate_names=names, omega=omega,
                       eigenvalues=np.array([it[2] for it in items], dtype=complex), linear=lin,
                       labels=_mode_labels(system, coords, coords.full_shapes(shapes, lin.x0), omega, lin.x0,
                                           lin.t, _input_vector(system, inputs, "modes")))
