"""Interface markers of flexible bodies: the markers through which a body exchanges forces with the
rest of the model.  Their points get Craig-Bampton constraint modes
(flexmbs.flex.reduction.craig_bampton) unless the body sets `interface_modes: false`.

A marker counts when a tree joint, a cut joint or a load (point force, spring-damper, elastic rod)
uses it: these transmit forces there, and a constraint mode per direction makes their statics
exact.  Sensors do not count: what a model outputs must not change its dynamics, nor its cost (a
midspan sensor on the crank-rocker's coupler would add 6 coordinates up to 7.6 kHz and make dopri5
3.6 times slower; Huang's tip sensor 6 up to 710 Hz, 4.5 times slower).  `static_modes: true`
makes a beam's tip an interface station when nothing attaches there.
"""

from __future__ import annotations

from .elements import Body, Marker, Model


def interface_markers(model: Model, body: Body) -> list[Marker]:
    """Markers of `body` used by a joint (tree or cut) or a load of `model`, in the body's order."""
    used: set[str] = set()
    for j in [*model.joints, *model.loops.cuts]:
        if j.parent == body.name:
            used.add(j.parent_marker)
        if j.child == body.name:
            used.add(j.child_marker)
    for ld in model.loads:
        if ld.body == body.name and ld.marker is not None:
            used.add(ld.marker)
        for ref in (ld.marker_a, ld.marker_b):
            if isinstance(ref, str) and "." in ref:
                owner, marker = ref.split(".", 1)
                if owner == body.name:
                    used.add(marker)
    return [m for m in body.markers if m.name in used]


def interface_stations(model: Model, body: Body) -> list[float]:
    """Beam stations x [m] of the interface markers (a marker given by node sits at node · length / elements)."""
    return [float(m.x) if m.x is not None else m.node * body.length / body.elements
            for m in interface_markers(model, body)]


def interface_nodes(model: Model, body: Body) -> list[int]:
    """Superelement node indices of the interface markers."""
    return [int(m.node) for m in interface_markers(model, body)]


def interface_points(model: Model, body: Body) -> list:
    """Where `body` gets interface modes: the stations x [m] of a beam's interface markers or the
    node indices of a superelement's; none for rigid bodies or with interface modes off."""
    if body.type == "rigid" or not body.interface_modes:
        return []
    return interface_stations(model, body) if body.type == "beam" else interface_nodes(model, body)
