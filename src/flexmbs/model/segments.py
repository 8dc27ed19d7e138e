"""Corotational chains: a beam with `segments: k` becomes k beams, each with its own floating
frame, joined rigidly end to end (Verlinden et al.'s chain of corotational elements).

Each segment is small-deflection in its own frame while the chain as a whole bends by large
rotations between the frames, so the chain converges to the geometrically nonlinear beam as k
grows: an independent route to the geometric stiffening of the single floating frame.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from .elements import Body, Joint, Marker, Model

SEP = "~"


def segment_name(beam: str, i: int) -> str:
    """Body name of segment i (0-based) of `beam`; segment 0 keeps the beam's name."""
    return beam if i == 0 else f"{beam}{SEP}{i + 1}"


def expand_segments(model: Model) -> Model:
    """The same model with every segmented beam replaced by its chain (a deep copy; the model
    is assumed valid). Markers, joints (cut joints too), loads and sensors are moved to the
    segment that holds their station. FMU parameter paths keep naming the unsegmented model:
    they are applied before the expansion (compile_model expands)."""
    if all(b.type != "beam" or b.segments == 1 for b in model.bodies):
        return model
    out = copy.deepcopy(model)
    home: dict[tuple[str, str], tuple[str, str]] = {}  # (beam, marker) -> (segment, marker)
    split: dict[str, tuple[int, float]] = {}  # segmented beam -> (segments, segment length [m])
    bodies: list[Body] = []
    joints: list[Joint] = list(out.joints)
    for b in out.bodies:
        if b.type != "beam" or b.segments == 1:
            bodies.append(b)
            continue
        k = b.segments
        ls = b.length / k
        segs = [replace(b, name=segment_name(b.name, i), length=ls, elements=b.elements // k, segments=1,
                        static_modes=b.static_modes or i < k - 1,
                        tip_mass=b.tip_mass if i == k - 1 else 0.0,
                        tip_inertia=b.tip_inertia if i == k - 1 else None,
                        markers=[Marker(f"{SEP}root", x=0.0)] + ([Marker(f"{SEP}end", x=ls)] if i < k - 1 else []))
                for i in range(k)]
        split[b.name] = (k, ls)
        per = b.elements // k  # elements per segment
        for mk in b.markers:
            if mk.x is None:  # placed by node: node n of the beam is node n - i per of segment i
                i = min(mk.node // per, k - 1)
                segs[i].markers.append(replace(mk, node=mk.node - i * per))
            else:
                i = min(int(mk.x // ls), k - 1)
                segs[i].markers.append(replace(mk, x=mk.x - i * ls))
            home[(b.name, mk.name)] = (segs[i].name, mk.name)
        for i in range(k - 1):
            joints.append(Joint(f"{b.name}{SEP}joint{i + 1}", "fixed", segs[i].name, f"{SEP}end",
                                segs[i + 1].name, f"{SEP}root"))
        bodies.extend(segs)

    def moved(body: str, marker: str) -> tuple[str, str]:
        return home.get((body, marker), (body, marker))

    # every reference to a marker of a segmented beam: tree joints, cut joints, sensors, loads
    for j in [*joints, *out.loops.cuts]:
        j.parent, j.parent_marker = moved(j.parent, j.parent_marker)
        j.child, j.child_marker = moved(j.child, j.child_marker)
    for s in out.sensors:
        if s.type == "marker":
            s.body, s.marker = moved(s.body, s.marker)
        elif s.body in split:  # a station on the beam: the segment holding it, local station
            k, ls = split[s.body]
            i = min(int(s.x // ls), k - 1)
            s.body, s.x = segment_name(s.body, i), s.x - i * ls
    for ld in out.loads:
        if ld.body is not None:
            ld.body, ld.marker = moved(ld.body, ld.marker)
        for attr in ("marker_a", "marker_b"):
            ref = getattr(ld, attr)
            if ref:
                body, marker = ref.split(".", 1)
                setattr(ld, attr, ".".join(moved(body, marker)))
    out.bodies = bodies
    out.joints = joints
    return out
