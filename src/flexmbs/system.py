"""The compiled model: flat arrays the numba kernels run on, the names that map them back to
the model, and the scales of its coordinates. compile_model (flexmbs.compile) builds it; it is
not changed afterwards.

Coordinate layout: q = [joint coordinates of every body in tree order; modal coordinates of
every flexible body], u likewise (joint velocities; modal rates). Bodies are ordered root to
leaves, so a parent always precedes its children.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from .flex.invariants import FlexBodyData, body_size
from .kernels.structs import SystemArrays, box, make_workspace, read_only
from .model import Model, load_model


@dataclass(frozen=True)
class System:
    """The compiled model: arrays for the kernels plus the names that map them back.

    arrays: SystemArrays; q0, u0: initial coordinates; bodies/joints: names in tree order;
    joint_q/joint_u: name -> (start, count) in q/u; flex: body name -> FlexBodyData;
    inputs: input signal names in order; markers: 'body.marker' -> marker index;
    sensors: marker sensor name -> marker index (strain gauges and section forces: gauges.py); loop_rows: the names of the loop constraints (rows of
    the constraint Jacobian), loop_redundant: those found dependent on the others and dropped;
    loop_corrections: joint or flexible body name -> (largest change of its positions, of its
    velocities) made by loop assembly to the model's q0/qd0 [rad, m, modal amplitudes; per s];
    assembly_energy: flexible body name -> elastic energy [J] that assembly put into it (where
    it warned: compile/report.py), named by a failed run's message.

    Built once, with every field, by compile_model; its arrays (those of `arrays`, q0, u0,
    input_defaults) are read-only, in Python and in the kernels.
    """

    model: Model
    arrays: SystemArrays
    q0: np.ndarray
    u0: np.ndarray
    bodies: list[str]
    joints: list[str]
    joint_q: dict[str, tuple[int, int]]
    joint_u: dict[str, tuple[int, int]]
    body_eta: dict[str, tuple[int, int]]
    flex: dict[str, FlexBodyData]
    inputs: list[str]
    input_defaults: np.ndarray
    markers: dict[str, int]
    sensors: dict[str, int]
    drives: dict[str, str] = field(default_factory=dict)
    i0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    loop_rows: list[str] = field(default_factory=list)
    loop_redundant: list[str] = field(default_factory=list)
    loop_corrections: dict[str, tuple[float, float]] = field(default_factory=dict)
    assembly_energy: dict[str, float] = field(default_factory=dict)

    @property
    def nq(self) -> int:
        return int(self.arrays.nq)

    @property
    def nv(self) -> int:
        return int(self.arrays.nv)

    @property
    def ni(self) -> int:
        """Number of motor currents: the states after q and u."""
        return int(self.arrays.mot_c.size)

    @property
    def motor_joints(self) -> list[str]:
        """The joints with a motor drive, in the order of their currents in the state."""
        return [n for n in self.joints if self.drives.get(n) == "motor"]

    @property
    def nx(self) -> int:
        """Length of the state x = [q; u; i] (i: the motor currents [A])."""
        return self.nq + self.nv + self.ni

    @property
    def x0(self) -> np.ndarray:
        """The initial state [q0; u0; i0] (i0: the motors' currents at the start [A])."""
        return np.concatenate([self.q0, self.u0, self.i0])

    @property
    def ref(self):
        """The arrays boxed for the kernels (passed by reference, so calls stay cheap). Boxed
        on first use: that loads the numba kernels, which a System built only to describe an
        FMU's interface does not need."""
        if self._ref is None:
            object.__setattr__(self, "_ref", box(self.arrays))
        return self._ref

    def workspace(self):
        """Fresh boxed scratch arrays for the kernels (one per concurrent evaluation)."""
        return box(make_workspace(self.arrays))

    def __post_init__(self) -> None:
        read_only(self.arrays)
        for state in (self.q0, self.u0, self.i0, self.input_defaults):
            state.setflags(write=False)
        object.__setattr__(self, "_ref", None)


def model_argument(where: str, value: object) -> Model | System:
    """What a function of the API (`where`) was given as its model: a Model or a System as they
    are, a model file path or a shipped model's name loaded (load_model); anything else a
    TypeError naming the argument and what is accepted."""
    if isinstance(value, (Model, System)):
        return value
    if isinstance(value, (str, os.PathLike)):
        return load_model(value)
    raise TypeError(f"{where}: model = {value!r} ({type(value).__name__}): expected a Model (flexmbs.load_model), "
                    "a compiled System, a model file path or a shipped model's name")


def state_scales(system: System) -> np.ndarray:
    """Typical magnitude of each state [q; u; i]: the error norm's absolute scale (atol = rtol
    times this) and the finite-difference increments. Motor currents: 1 A.

    The norm measures what a user reads. Joint coordinates and quaternions: 1 (rad or m); joint
    rates: 1 (rad/s or m/s). Modal coordinate k of a body of size L [m] (body_size): L / a_k,
    with a_k [m] the largest nodal translation of mode k per unit coordinate, so an error of
    rtol in the weighted coordinate is a deflection error of rtol L at the body's nodes, the
    same as a joint-angle error of rtol rad at a lever of L (a mode that twists the sections
    without translating the nodes: a_k = L times its largest section rotation). Its rate: that scale times
    max(1 rad/s, omega_k), the deflection rate of a vibration of amplitude L / a_k, so the rate
    error counts as the deflection error it causes within 1/omega_k. (The former weighting at
    1e-3 of this scale made dopri5 take twice the steps on Huang's arm at rtol 1e-6, for joint
    angles 40x more accurate than asked: docs/work-precision.md.)
    """
    return np.concatenate([coordinate_scales(system.arrays, system.bodies, system.flex), np.ones(system.ni)])


def coordinate_scales(arrays: SystemArrays, bodies: list[str], flex: dict[str, FlexBodyData]) -> np.ndarray:
    """state_scales of the compiled parts of a System: its arrays, its body names in tree order
    and the modal data of its flexible bodies (the compiler's check of loop assembly uses it
    before the System exists)."""
    S = arrays
    xs = np.ones(S.nq + S.nv)
    for i, name in enumerate(bodies):
        n = int(S.nm[i])
        if n == 0:
            continue
        e0 = int(S.eq[i])
        d = flex[name]
        dpn = d.dofs_per_node
        # translations of every node: the first three DOFs of each node's block; a mode that
        # only turns the sections (pure torsion: translations at round-off) is measured by its
        # rotations (beams: DOFs 4-6) times the body's size instead, not given a scale of ~1e12
        blocks = d.nodal_modes.reshape(-1, dpn, n)
        amp = np.sqrt((blocks[:, :3, :] ** 2).sum(axis=1)).max(axis=0)
        if dpn == 6:
            turn = body_size(d) * np.sqrt((blocks[:, 3:, :] ** 2).sum(axis=1)).max(axis=0)
            amp = np.where(amp < 1e-6 * turn, turn, amp)
        eta_scale = body_size(d) / np.maximum(amp, 1e-300)
        xs[e0:e0 + n] = eta_scale
        v0 = S.nq + S.ev[i]
        xs[v0:v0 + n] = eta_scale * np.maximum(d.freqs, 1.0)
    return xs
