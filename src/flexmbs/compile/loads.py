"""Stage 6, the loads: point forces on markers (with their inputs) and spring-dampers between
markers; an elastic rod is a spring-damper along its ends with stiffness E A / L, rest length L
and its mass (Verlinden et al., Example 3)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import Load, section_properties
from .markers import Markers


@dataclass(frozen=True)
class Loads:
    """inputs: the point forces' input names in order (`<load>.force[1..3]`, `.torque[1..3]`),
    numbered after `first_input` others, and input_defaults their values until set; fields:
    pf_* and sd_* (SYSTEM_FIELDS)."""

    inputs: list[str]
    input_defaults: list[float]
    fields: dict


def loads_of(loads: list[Load], markers: Markers, first_input: int) -> Loads:
    """The loads of a model on its markers; their inputs come after `first_input` others."""
    index = markers.index
    pfs = [ld for ld in loads if ld.type == "point_force"]
    sds = [ld for ld in loads if ld.type in ("spring_damper", "elastic_rod")]
    rods = {id(ld): (section_properties(ld.section).A, ld.material) for ld in sds if ld.type == "elastic_rod"}
    pf_input = np.full(len(pfs), -1, np.int64)
    inputs: list[str] = []
    defaults: list[float] = []
    for f, ld in enumerate(pfs):
        if ld.input:
            pf_input[f] = first_input + len(inputs)
            inputs.extend([f"{ld.name}.force[{k}]" for k in (1, 2, 3)] + [f"{ld.name}.torque[{k}]" for k in (1, 2, 3)])
            defaults.extend([0.0] * 6)
    return Loads(inputs, defaults, dict(
        pf_marker=np.array([index[f"{ld.body}.{ld.marker}"] for ld in pfs], np.int64),
        pf_force=np.array([ld.force for ld in pfs], float).reshape(-1, 3),
        pf_torque=np.array([ld.torque for ld in pfs], float).reshape(-1, 3),
        pf_frame=np.array([1 if ld.frame == "body" else 0 for ld in pfs], np.int64),
        pf_input=pf_input,
        sd_a=np.array([index[ld.marker_a] for ld in sds], np.int64),
        sd_b=np.array([index[ld.marker_b] for ld in sds], np.int64),
        sd_k=np.array([rods[id(ld)][1].E * rods[id(ld)][0] / ld.length if id(ld) in rods else ld.stiffness
                       for ld in sds], float),
        sd_c=np.array([ld.damping for ld in sds], float),
        sd_l0=np.array([ld.length if id(ld) in rods else ld.rest_length for ld in sds], float),
        sd_m=np.array([rods[id(ld)][1].rho * rods[id(ld)][0] * ld.length if id(ld) in rods else 0.0
                       for ld in sds], float)))
