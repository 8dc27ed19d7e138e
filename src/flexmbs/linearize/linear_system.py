"""The linear model xdot = xdot0 + A x + B u, y = y0 + C x + D u of a System about a reference,
its exports (scipy, python-control, .npz, .mat) and `linearize`, which computes it.

Outputs are any of those names, `<joint>.qdd[...]`, `<body>.tip_deflection[i]`, the strain-gauge
and section-force outputs `<sensor>.strain`, `<sensor>.N` ..., a marker sensor's position, velocity,
orientation and angular velocity `<sensor>.r[i]`, `.v[i]`, `.R[i,j]`, `.w[i]` (world axes; as in
simulate's Result) and the same names for motion-driven joints; y = y0 + C dx + D du with y0
the value at the reference (the `rot[i]` outputs are measured from the reference orientation, so y0 = 0 there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import arguments as args
from ..model.elements import Model
from ..names import lookup
from ..system import System
from .coordinates import Coordinates
from .evaluation import FD, Evaluator, input_vector, jacobian, reference_state, system_of


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
    system = system_of(model_or_system, spin)
    coords = Coordinates(system)
    x_ref = coords.reduce(reference_state(system, x))
    u_ref = input_vector(system, inputs)
    outputs = list(coords.joint_positions if outputs is None else outputs)
    ev = Evaluator(system, coords, t, x_ref, outputs)
    nz, ny, nu = 2 * coords.npos, len(outputs), len(system.inputs)
    z0 = np.zeros(nz)
    F0 = ev(z0, u_ref)
    x0 = np.concatenate([ev.W.xq, ev.W.xu])  # the reference with the prescribed values applied
    JX = jacobian(lambda z: ev(z, u_ref), nz + ny, z0, FD * coords.scales)
    JU = jacobian(lambda u: ev(z0, np.concatenate([u, u_ref[nu:]])), nz + ny, u_ref[:nu],
                   FD * np.maximum(1.0, np.abs(u_ref[:nu])))
    return LinearSystem(A=JX[:nz], B=JU[:nz], C=JX[nz:], D=JU[nz:], state_names=coords.state_names,
                        input_names=list(system.inputs), output_names=outputs, t=float(t), x0=x0,
                        u0=u_ref[:nu].copy(), y0=F0[nz:], xdot0=F0[:nz])
