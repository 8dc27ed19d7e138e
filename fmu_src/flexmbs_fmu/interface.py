"""The FMI interface of a plant model: every variable with causality, unit, start value, range
and meaning, in value-reference order. Computed from the model at build time (for the
modelDescription.xml) and again when the FMU instantiates (to serve the variables); both must
agree, which the digest checks.

Value references are positions in `Interface.variables`: inputs, then parameters, then outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flexmbs.model import METHODS, Model
from flexmbs.model.elements import RTOL_RANGE
from flexmbs.model.paths import get_value, unit_of
from flexmbs.model.tables import JOINTS
from flexmbs.signals import ACCELERATION, KINEMATIC, joint_units, signal_table
from flexmbs.system import System

from .variables import Variable, digest

# Parameter kinds: a number of the model (changes the compiled System), an initial joint
# coordinate or rate (changes the initial state only), or a solver setting.
MODEL, START, SOLVER = "model", "start", "solver"


@dataclass(frozen=True)
class ParameterSpec:
    """What a parameter sets: `kind` MODEL (`path` into the Model), START (coordinate `index`
    of x = [q; u; i]) or SOLVER (`path` is the Settings field)."""

    name: str
    kind: str
    path: str
    index: int = -1


@dataclass
class Interface:
    variables: list[Variable] = field(default_factory=list)
    parameters: list[ParameterSpec] = field(default_factory=list)

    def digest(self) -> str:
        return digest(self.variables)

    def by_causality(self, causality: str) -> list[Variable]:
        return [v for v in self.variables if v.causality == causality]


def _start_parameters(system: System) -> list[tuple[str, int, str, str, float]]:
    """(name, index in x, unit, meaning, start) of the initial joint coordinates and rates that
    can be set (joints with 1 to 3 scalar coordinates that are not prescribed by a drive) and of
    the motors' armature currents."""
    out = []
    x0 = system.x0
    for jn in system.joints:
        jtype = system.model.joint(jn).type
        if JOINTS[jtype].quaternion is not None or system.drives.get(jn) in ("motion", "servo"):
            continue
        q0, _ = system.joint_q[jn]
        u0, n = system.joint_u[jn]
        for i in range(n):
            sfx, coord = ("", "") if n == 1 else (f"[{i + 1}]", f", coordinate {i + 1}")
            unit = joint_units(jtype, i)[0]
            for rate, index in ((False, q0 + i), (True, system.nq + u0 + i)):
                out.append((f"{jn}.{'qd0' if rate else 'q0'}{sfx}", index, unit + "/s" * rate,
                            f"joint {jn}: initial {'rate' if rate else 'position'}{coord}", float(x0[index])))
    for k, jn in enumerate(system.motor_joints):
        index = system.nq + system.nv + k
        out.append((f"{jn}.i0", index, "A", f"joint {jn}: armature current of its motor at the start",
                    float(x0[index])))
    return out


def plant_interface(model: Model, system: System) -> Interface:
    """The variables of the plant FMU of `model` (compiled as `system`)."""
    itf = Interface()
    var = itf.variables
    motion_refs = tuple(n for n in system.inputs if n.endswith((".q_ref", ".qd_ref")))
    for k, name in enumerate(system.inputs):
        unit = _input_unit(system, name)
        var.append(Variable(name, "Real", "input", "continuous", _input_meaning(name), k, unit,
                            float(system.input_defaults[k])))

    def parameter(spec: ParameterSpec, type_: str, unit: str, meaning: str, start, lo=None, hi=None) -> None:
        var.append(Variable(spec.name, type_, "parameter", "fixed", meaning, len(itf.parameters), unit,
                            start, lo, hi))
        itf.parameters.append(spec)

    for i in range(3):
        parameter(ParameterSpec(f"gravity[{i + 1}]", MODEL, f"gravity[{i + 1}]"), "Real", "m/s2",
                  f"gravitational acceleration, world component {i + 1}", float(model.gravity[i]))
    for name, index, unit, meaning, start in _start_parameters(system):
        parameter(ParameterSpec(name, START, "", index), "Real", unit, meaning, start)
    for p in model.fmu.parameters:
        parameter(ParameterSpec(p.name, MODEL, p.path), "Real", p.unit or unit_of(model, p.path) or "",
                  p.description or f"model value {p.path}", get_value(model, p.path), p.min, p.max)
    s = model.solver
    parameter(ParameterSpec("solver.method", SOLVER, "method"), "String", "",
              f"integration method: {', '.join(METHODS)}", model.solver_method())
    parameter(ParameterSpec("solver.step", SOLVER, "step"), "Real", "s",
              "rk4: the fixed internal step; adaptive methods: the first step", s.step, 0.0)
    parameter(ParameterSpec("solver.max_step", SOLVER, "max_step"), "Real", "s",
              "largest internal step of the adaptive methods", s.max_step, 0.0)
    parameter(ParameterSpec("solver.rtol", SOLVER, "rtol"), "Real", "1",
              "relative tolerance of the adaptive methods", model.solver_rtol(), *RTOL_RANGE)

    inputs = set(system.inputs)
    for s_ in signal_table(system):
        if s_.name in inputs:   # a torque-driven joint's torque is the input itself
            continue
        depends = (tuple(system.inputs) if s_.feedthrough == ACCELERATION
                   else motion_refs if s_.feedthrough == KINEMATIC else ())
        var.append(Variable(s_.name, "Real", "output", "continuous", s_.description, s_.index, s_.unit,
                            depends=depends))
    return itf


def _input_unit(system: System, name: str) -> str:
    base, _, leaf = name.rpartition(".")
    if leaf.startswith(("force", "torque")):
        return "N" if leaf.startswith("force") else "N.m"
    position, torque = joint_units(system.model.joint(base).type, 0)
    return {"tau": torque, "voltage": "V", "q_ref": position, "qd_ref": f"{position}/s", "qdd_ref": f"{position}/s2"}[leaf]


def _input_meaning(name: str) -> str:
    base, _, leaf = name.rpartition(".")
    if leaf.startswith("force"):
        return f"load {base}: added force, component {leaf[6:-1]} in the load's frame"
    if leaf.startswith("torque"):
        return f"load {base}: added torque, component {leaf[7:-1]} in the load's frame"
    return {"tau": f"joint {base}: drive torque (force)", "voltage": f"joint {base}: armature voltage of its motor",
            "q_ref": f"joint {base}: prescribed position",
            "qd_ref": f"joint {base}: prescribed velocity",
            "qdd_ref": f"joint {base}: prescribed acceleration"}[leaf]
