"""What a 3-D view of a run draws, in world coordinates, at each shown sample: the geometry both
renderers (`flexmbs.animate`: the HTML player and the matplotlib GIF/MP4/PNG path) share.

Every pose comes from the states through the kernels (`kernels.kinematics.forward` for the body
frames, `marker_world` for the markers), so nothing depends on the model having sensors.
Flexible bodies are drawn through their mode shapes at sampled stations: a beam as its centre
line and its cross-section swept along it, each section turned by its own small rotation
(the rotation mode shapes). Every drawn point is split into its rigid part (where it sits on the
undeformed body) and its elastic displacement, both in the world frame [m], so that a viewer can
scale the deformation: drawn = base + scale * deform.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from .flex.invariants import FlexBodyData, body_size
from .model import JOINTS, inertia_matrix
from .model.elements import Section
from .system import System

# The 12 triangles of a box whose 8 corners are numbered by bits (x, y, z) = (i & 1, i & 2, i & 4).
BOX_TRIANGLES = np.array([
    [0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5],      # -z, +z
    [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],      # -y, +y
    [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3],      # -x, +x
])
_CORNERS = np.array([[(i & 1) * 2 - 1, (i >> 1 & 1) * 2 - 1, (i >> 2 & 1) * 2 - 1] for i in range(8)], float)

# vertices of a drawn circle (circle and tube sections)
CIRCLE_VERTICES = 24

@dataclass(frozen=True)
class Points:
    """A set of drawn points over the frames: `base` (frames, points, 3) on the undeformed
    bodies and `deform` (same shape) the elastic displacement, world frame [m]. `names` label
    the points (markers, joints) or are empty; `kind` says how they are drawn: 'line' (a
    polyline), 'segments' (consecutive pairs), 'points', or 'mesh' (box corners, 8 per box)."""

    name: str
    kind: str
    base: np.ndarray
    deform: np.ndarray
    names: tuple[str, ...] = ()

    def at(self, frame: int, scale: float = 1.0) -> np.ndarray:
        """Drawn positions (points, 3) [m] at a frame for a deformation scale factor."""
        return self.base[frame] + scale * self.deform[frame]


@dataclass(frozen=True)
class Sweep:
    """A beam's cross-section swept along its deformed centre line, as a triangle mesh.

    centre: the beam's centre line (Points of kind 'line', p stations); axes_base (frames, 2, 3):
    world directions of the undeformed section axes y and z (the reference frame's y and z: the
    beam is straight along x), axes_deform (frames, p, 2, 3): what each station's section
    rotation adds to them, so that a section's axes are axes_base + scale * axes_deform (exact at
    scale 1, the small-rotation extrapolation of it otherwise, like the centre line);
    outline (m, 2): the section's ring vertices (y, z) [m] about the centre line (the outer
    ring, then the inner one of a hollow section); faces (t, 3): triangles of the mesh, indexing
    the vertices station by station (m per station).
    Drawn vertices: at(frame, scale) (.., p * m, 3) [m], linear in scale like Points."""

    name: str
    centre: Points
    axes_base: np.ndarray
    axes_deform: np.ndarray
    outline: np.ndarray
    faces: np.ndarray
    kind = "sweep"
    names: tuple[str, ...] = ()

    def at(self, frame: Union[int, slice], scale: float = 1.0) -> np.ndarray:
        """Drawn vertices (points, 3) (or (frames, points, 3) for a slice) [m] at a frame for a
        deformation scale factor: centre + y * (y axis) + z * (z axis) of each ring vertex."""
        c = self.centre.at(frame, scale)
        axes = self.axes_base[frame][..., None, :, :] + scale * self.axes_deform[frame]
        v = c[..., :, None, :] + np.einsum("mk,...pkj->...pmj", self.outline, axes)
        return v.reshape(*v.shape[:-3], -1, 3)

    @property
    def base(self) -> np.ndarray:
        """Vertices of the undeformed sections (frames, points, 3) [m]."""
        return self.at(slice(None), 0.0)

    @property
    def deform(self) -> np.ndarray:
        """Elastic displacement of the vertices (frames, points, 3) [m]."""
        return self.at(slice(None), 1.0) - self.base


@dataclass(frozen=True)
class Scene:
    """The drawn geometry of a run. time (frames,) [s]; items: the Points sets (rigid bodies as
    one 'mesh' of boxes, rigid-body links from origin to markers, one line per beam (points for
    a superelement's nodes), markers, joints, joint axes) and one Sweep per beam (its sections,
    named '<beam> section'); box_bodies: the body of each box; size: the extent of the mechanism
    [m] (to size symbols)."""

    model: str
    time: np.ndarray
    items: tuple[Union[Points, Sweep], ...]
    box_bodies: tuple[str, ...]
    size: float

    def __getitem__(self, name: str) -> Union[Points, Sweep]:
        for item in self.items:
            if item.name == name:
                return item
        raise KeyError(f"no drawn item {name!r}; the scene has: {', '.join(i.name for i in self.items)}")

    def bounds(self, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """Smallest and largest world coordinates (3,) [m] of everything drawn, over all frames."""
        pts = np.concatenate([(i.base + scale * i.deform).reshape(-1, 3) for i in self.items])
        pts = pts[np.all(np.isfinite(pts), axis=1)]
        return pts.min(axis=0), pts.max(axis=0)


def inertia_box(mass: float, inertia_com: np.ndarray, min_half: float) -> tuple[np.ndarray, np.ndarray]:
    """The uniform box with the body's mass and central inertia: half extents (3,) [m] along the
    principal axes (columns of the returned 3x3 rotation, body frame). From I_1 = m (b^2 + c^2) / 12
    etc. for edges a, b, c: a^2 = 6 (I_2 + I_3 - I_1) / m. Half extents below min_half [m] (thin
    rods, point masses) are raised to it so that the box stays visible."""
    if mass <= 0.0:
        return np.full(3, min_half), np.eye(3)
    principal, axes = np.linalg.eigh(inertia_com)
    edge2 = 6.0 * (principal.sum() - 2.0 * principal) / mass
    half = 0.5 * np.sqrt(np.clip(edge2, 0.0, None))
    return np.maximum(half, min_half), axes


def _flex_points(d: FlexBodyData, extra_x: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """Sampled points of a flexible body: undeformed positions s0 (p, 3) [m], translational mode
    shapes Phi (p, 3, n) [m], section-rotation mode shapes Psi (p, 3, n) [rad] (zero for a
    superelement, drawn without sections), foreshortening matrices H (p, n, n) [1/m] (body
    frame), and whether they form a line (beam stations) or a cloud (superelement nodes)."""
    if d.beam is not None:
        n_el = d.beam.n_el
        x = np.union1d(np.linspace(0.0, d.length, 4 * n_el + 1), np.asarray(extra_x, float))
        shapes = [d.marker(x=float(xi)) for xi in x]
        return tuple(np.array([sh[j] for sh in shapes]) for j in range(4)) + (True,)
    nodes = d.node_positions
    dpn = d.dofs_per_node
    Phi = np.stack([d.nodal_modes[dpn * i:dpn * i + 3] for i in range(nodes.shape[0])])
    return nodes.copy(), Phi, np.zeros_like(Phi), np.zeros((nodes.shape[0], d.n, d.n)), False


def _rectangle(width: float, height: float) -> np.ndarray:
    """Corners (4, 2) (y, z) [m] of a width x height rectangle about its centre, counter-clockwise."""
    return 0.5 * np.array([[-width, -height], [width, -height], [width, height], [-width, height]])


def _circle(diameter: float) -> np.ndarray:
    """CIRCLE_VERTICES points (y, z) [m] on a circle of the diameter about its centre, counter-clockwise."""
    angle = np.linspace(0.0, 2.0 * np.pi, CIRCLE_VERTICES, endpoint=False)
    return 0.5 * diameter * np.column_stack([np.cos(angle), np.sin(angle)])


def section_rings(section: Section) -> tuple[np.ndarray, ...]:
    """The outline of a beam section as rings of vertices (m, 2) (y, z) [m] about the centre line,
    counter-clockwise: one ring for a solid section, the outer and the inner one (same vertex
    count) for a hollow one. An explicit section (constants only) is drawn as the rectangle with
    its area A and its ratio of second moments: height / width = sqrt(Iy / Iz)."""
    if section.shape == "rectangle":
        return (_rectangle(section.width, section.height),)
    if section.shape == "circle":
        return (_circle(section.diameter),)
    if section.shape == "tube":
        return _circle(section.outer_diameter), _circle(section.outer_diameter - 2.0 * section.thickness)
    if section.shape == "box_tube":
        t = section.thickness
        return _rectangle(section.width, section.height), _rectangle(section.width - 2 * t, section.height - 2 * t)
    if section.shape == "explicit":
        width = np.sqrt(section.A * np.sqrt(section.Iz / section.Iy))
        return (_rectangle(width, section.A / width),)
    raise ValueError(f"section shape {section.shape!r}: cannot draw it (rectangle, circle, tube, box_tube, explicit)")


def sweep_faces(rings: tuple[int, ...], stations: int) -> np.ndarray:
    """Triangles (t, 3) of a section with rings of these vertex counts (counter-clockwise in
    (y, z), outer ring first) swept over stations along +x (vertex index = station * sum(rings) +
    ring offset + vertex): the side walls of each ring between consecutive stations and the end
    caps (a fan for a solid section, the annulus between the outer and inner ring for a hollow
    one). Every triangle's vertices turn counter-clockwise seen from outside the solid, so the
    mesh is closed and consistently oriented outwards."""
    m = sum(rings)
    faces = []
    offset = 0
    for r, count in enumerate(rings):
        j = np.arange(count)
        a, b = offset + j, offset + (j + 1) % count
        for p in range(stations - 1):
            lo, hi = p * m, (p + 1) * m
            wall = np.concatenate([np.column_stack([lo + a, hi + b, hi + a]),
                                   np.column_stack([lo + a, lo + b, hi + b])])
            faces.append(wall if r == 0 else wall[:, ::-1])     # an inner ring's wall faces its hole
        offset += count
    for p in (0, stations - 1):
        o = p * m
        if len(rings) == 1:
            j = np.arange(1, rings[0] - 1)
            cap = np.column_stack([np.full(j.size, o), o + j, o + j + 1])
        else:
            n = rings[0]
            j = np.arange(n)
            outer, outer_next = o + j, o + (j + 1) % n
            cap = np.concatenate([np.column_stack([outer, outer_next, n + outer_next]),
                                  np.column_stack([outer, n + outer_next, n + outer])])
        faces.append(cap if p > 0 else cap[:, ::-1])            # the root cap faces -x
    return np.concatenate(faces).astype(np.int64)


def _kernel_poses(system: System, states: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Body origins r (f, nb, 3), rotations A (f, nb, 3, 3) = R_WB, and every marker's world
    position (f, nm, 3) and rotation R_WM (f, nm, 3, 3) at the states (f, nq + nv)."""
    from .kernels.entry import forward, marker_world
    from .kernels.structs import box, make_workspace

    S = system.arrays
    nq, nv, nb, nm = system.nq, system.nv, len(system.bodies), S.mk_body.size
    work = make_workspace(S)
    W = box(work)
    r, A = np.zeros((len(states), nb, 3)), np.zeros((len(states), nb, 3, 3))
    mr, mA = np.zeros((len(states), nm, 3)), np.zeros((len(states), nm, 3, 3))
    v, w, a, al = (np.zeros(3) for _ in range(4))
    Jv, Jw = np.zeros((3, nv)), np.zeros((3, nv))
    rk, Ak = np.zeros(3), np.zeros((3, 3))
    for f, x in enumerate(states):
        q, u = np.ascontiguousarray(x[:nq]), np.ascontiguousarray(x[nq:nq + nv])
        forward(system.ref, W, q, u)
        r[f], A[f] = work.r, work.A
        for k in range(nm):
            marker_world(system.ref, W, k, q, u, rk, Ak, v, w, Jv, Jw, a, al, False)
            mr[f, k], mA[f, k] = rk, Ak
    return r, A, mr, mA


def _split(r_b: np.ndarray, A_b: np.ndarray, s0: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World base r_b + A_b s0 and displacement A_b u of body-frame points s0 (p, 3) with
    body-frame displacements u (f, p, 3), for body poses r_b (f, 3), A_b (f, 3, 3)."""
    base = r_b[:, None, :] + np.einsum("fij,pj->fpi", A_b, s0)
    return base, np.einsum("fij,fpj->fpi", A_b, u)


def _chord_turn(axis: np.ndarray, chord: np.ndarray) -> np.ndarray:
    """Rotations (f, 3, 3) that turn the unit vectors axis (f, 3) onto the directions of chord
    (f, 3) by the smallest angle (about axis x chord)."""
    from .kernels.rotations import expmap

    c = chord / np.linalg.norm(chord, axis=1, keepdims=True)
    out = np.zeros((axis.shape[0], 3, 3))
    for f, (e, cf) in enumerate(zip(axis, c)):
        v = np.cross(e, cf)
        s = np.linalg.norm(v)
        expmap(v * (np.arctan2(s, e @ cf) / s) if s > 0 else np.zeros(3), out[f])
    return out


def _sweep(centre: Points, section: Section, A_body: np.ndarray, A_ref: np.ndarray, psi: np.ndarray) -> Sweep:
    """The section swept along a beam's centre line: station k's section axes are the columns y, z
    of A_body expmap(psi[k]) (psi (f, p, 3): the small section rotations [rad], body frame, as
    the kernels turn a marker), measured from the reference frame's A_ref (f, 3, 3) axes."""
    from .kernels.rotations import expmap

    E = np.zeros(psi.shape + (3,))
    for f in range(psi.shape[0]):
        for k in range(psi.shape[1]):
            expmap(np.ascontiguousarray(psi[f, k]), E[f, k])
    # world section axes y, z as rows: (f, p, 2, 3)
    axes = np.einsum("fij,fpjk->fpki", A_body, E[..., 1:])
    axes_base = np.swapaxes(A_ref[:, :, 1:], 1, 2)
    rings = section_rings(section)
    faces = sweep_faces(tuple(len(ring) for ring in rings), centre.base.shape[1])
    return Sweep(f"{centre.name} section", centre, axes_base, axes - axes_base[:, None], np.concatenate(rings), faces)


REFERENCES = ("body", "chord")


def build_scene(system: System, time: np.ndarray, states: np.ndarray, reference: str = "body") -> Scene:
    """The drawn geometry at the samples time (f,) [s] with states (f, nq + nv) = [q; u].

    reference: what a flexible beam's deformation is measured from (what a deformation scale
    factor scales): 'body', its floating frame (clamped at the root: the modal coordinates'
    own view, natural for a cantilever); 'chord', that frame turned about the root so that its
    axis points at the deformed end (the bow between the ends; natural for a beam held at both
    ends, as a coupler in a loop). At scale 1 both draw the same deformed beam."""
    if reference not in REFERENCES:
        raise ValueError(f"deformation reference {reference!r}: use one of {', '.join(REFERENCES)}")
    states = np.atleast_2d(np.asarray(states, float))
    if states.shape[1] < system.nq + system.nv:
        raise ValueError(f"model {system.model.name}: states have {states.shape[1]} columns, the model "
                         f"needs {system.nq + system.nv} (q and u)")
    model, S = system.model, system.arrays
    nf = states.shape[0]
    r, A, mr, mA = _kernel_poses(system, states)
    index = {bn: i for i, bn in enumerate(system.bodies)}
    sizes = [body_size(d) for d in system.flex.values()]
    pts = np.concatenate([r.reshape(-1, 3), mr.reshape(-1, 3)])
    extent = float(np.ptp(pts, axis=0).max()) if pts.size else 0.0
    size = max([extent, 1e-3] + sizes)
    zero = np.zeros((nf, 0, 3))

    # flexible bodies: stations through the mode shapes, u = Phi eta - 1/2 (eta^T H eta) e_x;
    # ref_A: the frame the drawn deformation is measured from (see `reference`)
    ref_A = A.copy()
    flex_items = []
    for bn, d in system.flex.items():
        i = index[bn]
        e0, n = system.body_eta[bn]
        body = model.body(bn)
        s0, Phi, Psi, H, line = _flex_points(d, [mk.x for mk in body.markers if mk.x is not None])
        eta = states[:, e0:e0 + n]
        u = np.einsum("pin,fn->fpi", Phi, eta)
        u[:, :, 0] -= 0.5 * np.einsum("fn,pnm,fm->fp", eta, H, eta)
        base, deform = _split(r[:, i], A[:, i], s0, u)
        if reference == "chord" and line:
            tip = base[:, -1] + deform[:, -1]
            ref_A[:, i] = _chord_turn(A[:, i, :, 0], tip - r[:, i]) @ A[:, i]
            rebased = _split(r[:, i], ref_A[:, i], s0, u)[0]
            base, deform = rebased, base + deform - rebased
        centre = Points(bn, "line" if line else "points", base, deform)
        flex_items.append(centre)
        if line and body.section is not None:
            flex_items.append(_sweep(centre, body.section, A[:, i], ref_A[:, i], np.einsum("pin,fn->fpi", Psi, eta)))

    # markers: kernel pose split into the rigid part (marker at its undeformed place) and the rest
    mk_names = sorted(system.markers, key=system.markers.get)
    mk_base = np.zeros_like(mr)
    for k, b in enumerate(S.mk_body):
        mk_base[:, k] = S.mk_s0[k] if b < 0 else r[:, b] + ref_A[:, b] @ S.mk_s0[k]
    markers = Points("markers", "points", mk_base, mr - mk_base, tuple(mk_names))

    # rigid bodies: inertia boxes about the centre of mass, and links from the origin to each marker
    boxes, box_bodies, links, link_def = [], [], [], []
    for bn in system.bodies:
        body = model.body(bn)
        if bn in system.flex:
            continue
        i = index[bn]
        half, axes = inertia_box(body.mass, inertia_matrix(body.inertia), 0.01 * size)
        corners = np.asarray(body.com, float) + (_CORNERS * half) @ axes.T
        boxes.append(_split(r[:, i], A[:, i], corners, np.zeros((nf, 8, 3)))[0])
        box_bodies.append(bn)
        for mk in body.markers:
            k = system.markers[f"{bn}.{mk.name}"]
            links.append(np.stack([r[:, i], mk_base[:, k]], axis=1))
            link_def.append(np.zeros((nf, 2, 3)))
    items = [Points("bodies", "mesh", np.concatenate(boxes, axis=1) if boxes else zero,
                    np.zeros((nf, 8 * len(boxes), 3)))]
    items.append(Points("links", "segments", np.concatenate(links, axis=1) if links else zero,
                        np.concatenate(link_def, axis=1) if links else zero))
    items += flex_items

    # joints at their parent marker (tree and cut joints), with their axis
    joints = [(j.name, j.type, j.parent, j.parent_marker, j.axis) for j in model.joints]
    joints += [(c.name, c.type, c.parent, c.parent_marker, c.axis) for c in model.loops.cuts]
    jk = [system.markers[f"{p}.{pm}"] for _, _, p, pm, _ in joints]
    items.append(Points("joints", "points", mk_base[:, jk], mr[:, jk] - mk_base[:, jk],
                        tuple(name for name, *_ in joints)))
    ends, ends_def = [], []
    for (name, jtype, _, _, axis), k in zip(joints, jk):
        if not JOINTS[jtype].drawn_axis:    # its first axis, in the parent marker frame
            continue
        e = np.asarray(axis, float)
        e = 0.06 * size * mA[:, k] @ (e / np.linalg.norm(e))
        ends.append(np.stack([mk_base[:, k] - e, mk_base[:, k] + e], axis=1))
        ends_def.append(np.repeat((mr[:, k] - mk_base[:, k])[:, None], 2, axis=1))
    items.append(Points("joint axes", "segments", np.concatenate(ends, axis=1) if ends else zero,
                        np.concatenate(ends_def, axis=1) if ends else zero))
    items.append(markers)
    return Scene(model.name, np.asarray(time, float), tuple(items), tuple(box_bodies), size)


def frame_indices(time: np.ndarray, max_frames: Optional[int] = None, fps: Optional[float] = None,
                  speed: float = 1.0) -> np.ndarray:
    """Indices of the samples to show: every sample, or at most max_frames evenly spread, or the
    samples nearest to a movie's frame times (fps frames per second of playback at `speed`
    times real time: 1 + round(duration * fps / speed) frames)."""
    time = np.asarray(time, float)
    if fps is not None:
        n = 1 + int(round((time[-1] - time[0]) * fps / speed))
        wanted = time[0] + np.arange(n) * speed / fps
        after = np.clip(np.searchsorted(time, wanted), 1, time.size - 1)
        return np.where(wanted - time[after - 1] <= time[after] - wanted, after - 1, after)
    if max_frames is None or time.size <= max_frames:
        return np.arange(time.size)
    return np.unique(np.round(np.linspace(0, time.size - 1, max_frames)).astype(int))


__all__ = ["BOX_TRIANGLES", "Points", "Scene", "Sweep", "build_scene", "frame_indices", "inertia_box",
           "section_rings", "sweep_faces"]
