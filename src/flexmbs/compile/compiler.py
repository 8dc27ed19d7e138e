"""Model -> System: the model checked, its segmented beams expanded into chains, then the
stages in order, each returning its own fields of the System's arrays (SYSTEM_FIELDS,
kernels/structs.py): tree, bodies, markers, joints, drives, loads, loops, report. The System
is built once, at the end, from what the stages returned."""

from __future__ import annotations

import numpy as np

from ..kernels.structs import SystemArrays, read_only
from ..model import Model, validate
from ..model.segments import expand_segments
from ..system import System
from .bodies import bodies_of
from .drives import drives_of
from .joints import joints_of
from .loads import loads_of
from .loops import close_loops, loop_rows, uses_recursion
from .markers import markers_of
from .report import corrections
from .tree import tree_of


def compile_model(model: Model) -> System:
    """Validate the model and compile it into a System (segmented beams become chains)."""
    validate(model)
    model = expand_segments(model)
    tree = tree_of(model)
    bodies = bodies_of(model, tree)
    markers = markers_of(model, tree, bodies)
    joints = joints_of(tree, bodies, markers)
    drives = drives_of(tree.joints, joints)
    loads = loads_of(model.loads, markers, len(drives.inputs))
    arrays = read_only(SystemArrays(
        gravity=np.asarray(model.gravity, dtype=float), **tree.fields, **bodies.fields, **markers.fields,
        **joints.fields, **drives.fields, **loads.fields,
        **loop_rows(model.loops.cuts, markers.index, markers.fields["mk_body"], tree.fields["tree_top"]),
        recursive=0))
    arrays = arrays._replace(recursive=int(uses_recursion(model.solver.dynamics, arrays)))
    inputs = drives.inputs + loads.inputs
    defaults = np.array(drives.input_defaults + loads.input_defaults, float)
    closed = close_loops(model, arrays, joints, defaults)
    changed, energy = corrections(model, tree, bodies, joints, closed)
    return System(
        model=model, arrays=closed.arrays, q0=closed.q0, u0=closed.u0,
        bodies=[b.name for b in tree.bodies], joints=[j.name for j in tree.joints],
        joint_q=joints.joint_q, joint_u=joints.joint_u, body_eta=joints.body_eta, flex=bodies.flex,
        inputs=inputs, input_defaults=defaults, markers=markers.index,
        sensors={s.name: markers.index[f"{s.body}.{s.marker}"] for s in model.sensors if s.type == "marker"},
        drives=drives.kinds, i0=drives.i0, loop_rows=closed.rows, loop_redundant=closed.redundant,
        loop_corrections=changed, assembly_energy=energy)
