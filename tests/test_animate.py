"""3-D animation (flexmbs.scene, flexmbs.animate, `flexmbs animate`) and the time plots.

The drawn geometry is checked against independent evaluations: the beam centre line (mode
shapes at sampled stations, in numpy) against the tip sensor (the kernels' marker kinematics),
the elastic part against the tip-deflection signal, the inertia box against the analytic box
inertia, the swept beam sections against the section dimensions, the sensor's rotation and the
Euler-Bernoulli kinematics (a section stays normal to the deformed centre line), the swept mesh's
volume against area x length. The HTML page is rendered in headless Chromium with the network
blocked; its playback speed is read against the page's own clock.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import flexmbs
from flexmbs.animate import MAX_FRAMES, animate, html, scene_of
from flexmbs.cli import main
from flexmbs.flex import sections
from flexmbs.model.catalog import shipped_models
from flexmbs.model.elements import Marker, Section
from flexmbs.scene import build_scene, frame_indices, inertia_box, section_rings, sweep_faces

T_END = 0.5


@pytest.fixture(scope="module")
def huang():
    """Huang's arm released from rest, 0.5 s at the model's 200 Hz output."""
    return flexmbs.simulate(flexmbs.load_model("huang_two_link"), T_END)


def sensor(result, name: str) -> np.ndarray:
    return np.column_stack([result[f"{name}.r[{i}]"] for i in (1, 2, 3)])


# ------------------------------------------------------------------------------ geometry

def test_beam_centre_line_ends_at_the_tip_sensor(huang):
    scene = scene_of(huang)
    line = scene["link2"]
    tip = line.base[:, -1] + line.deform[:, -1]
    assert np.max(np.abs(tip - sensor(huang, "tip"))) < 1e-12
    # the root of the centre line is the elbow joint, which does not deform
    assert np.max(np.abs(line.deform[:, 0])) < 1e-15
    assert np.max(np.abs(line.base[:, 0] - scene["joints"].at(slice(None))[:, 1])) < 1e-12
    # the elastic part is the tip deflection turned into the world frame (a rotation keeps length)
    defl = np.column_stack([huang[f"link2.tip_deflection[{i}]"] for i in (1, 2, 3)])
    assert np.max(np.abs(np.linalg.norm(line.deform[:, -1], axis=1) - np.linalg.norm(defl, axis=1))) < 1e-12
    assert np.max(np.linalg.norm(defl, axis=1)) > 1e-3     # the beam does bend in this run


def test_deformation_scale_moves_only_the_elastic_part(huang):
    line = scene_of(huang)["link2"]
    k = huang.time.size - 1
    rigid, true, big = line.at(k, 0.0), line.at(k, 1.0), line.at(k, 10.0)
    # undeformed: a straight line of the beam's length from the elbow
    assert np.allclose(np.linalg.norm(rigid[-1] - rigid[0]), 1.02, rtol=1e-12)
    d = np.diff(rigid, axis=0)
    assert np.allclose(np.cross(d, d[0]), 0.0, atol=1e-12)
    assert np.allclose(big - rigid, 10.0 * (true - rigid), atol=1e-12)


def test_crank_rocker_markers_follow_the_sensors():
    """A closed loop with a bending coupler: the mid-span station of the drawn coupler and the
    drawn markers agree with the sensors; the cut joint is drawn where the loop closes."""
    model = flexmbs.load_model("he_crank_rocker")
    res = flexmbs.simulate(model, 0.05, inputs={"crank.tau": 5.0})
    scene = scene_of(res)
    coupler = scene["coupler"]
    x = np.union1d(np.linspace(0.0, 0.61, 25), [0.305, 0.61])
    mid = int(np.argmin(np.abs(x - 0.305)))
    drawn = coupler.base + coupler.deform
    assert np.max(np.abs(drawn[:, mid] - sensor(res, "mid"))) < 1e-12
    assert np.max(np.abs(drawn[:, -1] - sensor(res, "end"))) < 1e-12
    markers = scene["markers"]
    k = markers.names.index("rocker.tip")
    assert np.max(np.abs(markers.at(slice(None))[:, k] - sensor(res, "rocker_tip"))) < 1e-12
    j = scene["joints"]
    cut = j.at(slice(None))[:, j.names.index("rocker_pin")]
    assert np.max(np.abs(cut - sensor(res, "rocker_tip"))) < 1e-6     # the loop closes (projection tolerance)


def test_chord_reference_scales_the_bow_between_the_ends(huang):
    body = scene_of(huang, reference="body")["link2"]
    chord = scene_of(huang, reference="chord")["link2"]
    # the same deformed beam at scale 1
    assert np.max(np.abs(body.at(slice(None)) - chord.at(slice(None)))) < 1e-12
    # scale 0: a straight beam of full length from the root towards the deformed end
    k = huang.time.size - 1
    straight, true = chord.at(k, 0.0), chord.at(k, 1.0)
    towards = (true[-1] - true[0]) / np.linalg.norm(true[-1] - true[0])
    assert np.allclose(straight - straight[0], np.outer(np.linalg.norm(straight - straight[0], axis=1), towards),
                       atol=1e-12)
    assert np.linalg.norm(straight[-1] - straight[0]) == pytest.approx(1.02, rel=1e-12)
    with pytest.raises(ValueError, match="reference 'tip'"):
        scene_of(huang, reference="tip")


CLOSED = ("revolute", "universal", "spherical", "fixed")    # joints whose two markers coincide


@pytest.mark.parametrize("name", sorted(shipped_models()))
def test_every_shipped_model_is_drawn_with_its_joints_closed(name):
    """At the initial state of every shipped model (every joint type, loops assembled): all
    drawn points are finite, and at each joint whose markers coincide the parent marker (where
    the joint is drawn) is where the child's marker is."""
    system = flexmbs.compile_model(flexmbs.load_model(name))
    x0 = np.concatenate([system.q0, system.u0])
    scene = build_scene(system, np.zeros(1), x0[None])
    assert all(np.all(np.isfinite(i.at(0))) for i in scene.items)
    markers = scene["markers"]
    drawn = dict(zip(markers.names, markers.at(0)))
    model = system.model
    for j in list(model.joints) + list(model.loops.cuts):
        if j.type in CLOSED:
            gap = np.linalg.norm(drawn[f"{j.parent}.{j.parent_marker}"] - drawn[f"{j.child}.{j.child_marker}"])
            assert gap < 1e-6 * scene.size, f"{name}: joint {j.name} drawn open by {gap} m"


def test_superelement_nodes_follow_its_markers(tmp_path):
    """A beam imported as a superelement (M, K, nodes) is drawn as its deformed nodes; the tip
    node is where the kernels put the tip marker, and the nodes agree with the same beam
    modelled as a beam (1 % of its deflection: the superelement's second-order inertia is lumped)."""
    from flexmbs.flex.beam import Beam, beam_matrices
    from flexmbs.flex.sections import rectangle
    from flexmbs.model import Body, Joint, Marker, Material, Model, Section

    L, n_el, E, rho = 1.0, 8, 7e10, 2700.0
    beam = Beam(L, n_el, E, E / 2.6, rho, rectangle(0.02, 0.01), rotary_inertia=True)
    M, K = beam_matrices(beam)
    np.savez(tmp_path / "link.npz", M=M, K=K, nodes=beam.node_positions)
    hinge = Joint("hinge", "revolute", "ground", "origin", "link", "root", axis=(0, 0, 1), q0=(-0.3,))
    se = Body("link", type="superelement", file=str(tmp_path / "link.npz"), modes=4,
              markers=[Marker("root", node=0), Marker("tip", node=n_el)])
    as_beam = Body("link", type="beam", length=L, elements=n_el, modes=4, geometric_stiffening=False,
                   rotary_inertia=True, material=Material(E=E, G=E / 2.6, rho=rho),
                   section=Section("rectangle", width=0.02, height=0.01),
                   markers=[Marker("root", x=0.0), Marker("tip", x=L)])
    runs = [flexmbs.simulate(Model("p", gravity=(0, -9.81, 0), bodies=[b], joints=[hinge]), 0.3,
                             rtol=1e-9, output_step=0.01) for b in (se, as_beam)]
    nodes, line = scene_of(runs[0])["link"], scene_of(runs[1])["link"]
    assert nodes.kind == "points" and nodes.base.shape[1] == n_el + 1
    markers = scene_of(runs[0])["markers"]
    tip = markers.at(slice(None))[:, markers.names.index("link.tip")]
    assert np.max(np.abs(nodes.at(slice(None))[:, -1] - tip)) < 1e-12
    at_nodes = line.at(slice(None))[:, ::4]            # 4 stations per element: the nodes
    deflection = np.max(np.abs(line.deform))
    assert deflection > 1e-4
    assert np.max(np.abs(nodes.at(slice(None)) - at_nodes)) < 1e-2 * deflection


BOX = dict(width=0.0127, height=0.0127, thickness=0.0016)     # huang_two_link's link 2


def rings_at(scene, beam: str) -> np.ndarray:
    """The drawn section vertices of a beam as (frames, stations, ring vertices, 3) [m]."""
    sweep = scene[f"{beam} section"]
    return sweep.at(slice(None)).reshape(scene.time.size, scene[beam].base.shape[1], -1, 3)


def test_beam_sections_sit_on_the_centre_line_with_their_size_and_the_sensor_rotation(huang):
    """Huang's link 2 (box tube 12.7 x 12.7 x 1.6 mm): at every station and frame the section's
    outer and inner rectangles are centred on the drawn centre line with the section's edges;
    at the tip their axes are the columns y, z of the tip sensor's rotation (the kernels'
    marker kinematics); the 'chord' reference draws the same sections at scale 1."""
    scene = scene_of(huang)
    v = rings_at(scene, "link2")
    outer, inner = v[:, :, :4], v[:, :, 4:]
    centre = scene["link2"].at(slice(None))
    for ring in (outer, inner):
        assert np.max(np.abs(ring.mean(axis=2) - centre)) < 1e-12
    # corners counter-clockwise from (-y, -z): edge 0-1 along section y, edge 0-3 along z
    for ring, w, h in ((outer, BOX["width"], BOX["height"]),
                       (inner, BOX["width"] - 2 * BOX["thickness"], BOX["height"] - 2 * BOX["thickness"])):
        assert np.allclose(np.linalg.norm(ring[:, :, 1] - ring[:, :, 0], axis=-1), w, rtol=1e-12)
        assert np.allclose(np.linalg.norm(ring[:, :, 3] - ring[:, :, 0], axis=-1), h, rtol=1e-12)
    R = np.stack([[huang[f"tip.R[{i},{j}]"] for j in (1, 2, 3)] for i in (1, 2, 3)]).transpose(2, 0, 1)
    tip = outer[:, -1]
    assert np.max(np.abs((tip[:, 1] - tip[:, 0]) / BOX["width"] - R[:, :, 1])) < 1e-12
    assert np.max(np.abs((tip[:, 3] - tip[:, 0]) / BOX["height"] - R[:, :, 2])) < 1e-12
    # the tip section is turned by the bending, not only by the joints: off the root's axes
    root = outer[:, 0]
    assert np.max(np.abs((tip[:, 1] - tip[:, 0]) - (root[:, 1] - root[:, 0]))) / BOX["width"] > 1e-3
    chord = scene_of(huang, reference="chord")
    assert np.max(np.abs(rings_at(chord, "link2") - v)) < 1e-12


def test_beam_section_stays_normal_to_the_deformed_centre_line():
    """Euler-Bernoulli kinematics: a section's normal (y x z of its drawn outline, from the
    rotation mode shapes) is the tangent of the deformed centre line (central differences of
    the centre line from the translation mode shapes, stations x +- 1e-5 m added as markers).
    The model turns a section by the small rotation vector Psi eta, whose angle is the slope
    theta = |(v', w')| of the deflection, while the tangent's angle is atan(theta): they differ
    by theta - atan(theta) ~ theta^3 / 3, below 1e-6 for slopes below 0.014 (this run bends
    link 2 to slopes of 0.03). Bending modes only: the acceleration shapes' axial strain would
    turn the tangent and their torsion the section's normal, at second order."""
    model = flexmbs.load_model("huang_two_link")
    model.body("link2").acceleration_modes = False
    stations, h = (0.3, 0.6, 0.9), 1e-5
    model.body("link2").markers += [Marker(f"s{k}_{i}", x=x + d) for k, x in enumerate(stations)
                                     for i, d in enumerate((-h, 0.0, h))]
    system = flexmbs.compile_model(model)
    run = flexmbs.simulate(system, T_END)
    scene = build_scene(system, run.time, run.states)
    x = scene["link2"]
    grid = np.union1d(np.linspace(0.0, 1.02, 17), [s + d for s in stations for d in (-h, 0.0, h)] + [0.0, 1.02])
    line = x.at(slice(None))
    assert line.shape[1] == grid.size
    v = rings_at(scene, "link2")
    for s in stations:
        k = int(np.argmin(np.abs(grid - s)))
        assert grid[k - 1] == pytest.approx(s - h) and grid[k + 1] == pytest.approx(s + h)
        tangent = (line[:, k + 1] - line[:, k - 1]) / (grid[k + 1] - grid[k - 1])
        tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
        ring = v[:, k, :4]
        normal = np.cross(ring[:, 1] - ring[:, 0], ring[:, 3] - ring[:, 0])
        normal /= np.linalg.norm(normal, axis=1, keepdims=True)
        undeformed = x.base[:, k + 1] - x.base[:, k - 1]
        undeformed /= np.linalg.norm(undeformed, axis=1, keepdims=True)
        slope = np.linalg.norm(np.cross(tangent, undeformed), axis=1)
        theta = np.tan(np.arcsin(slope))       # the slope |(v', w')| of the deflection
        assert theta.max() > 1e-2                # the beam does bend there
        gap = np.linalg.norm(normal - tangent, axis=1)
        assert np.max(np.abs(gap - (theta - np.arctan(theta)))) < 1e-9
        assert np.max(gap[theta < 0.014]) < 1e-6


@pytest.mark.parametrize("section, area", [
    (Section("rectangle", width=0.02, height=0.01), sections.rectangle(0.02, 0.01).A),
    (Section("box_tube", width=0.02, height=0.01, thickness=0.002), sections.box_tube(0.02, 0.01, 0.002).A),
    # a polygon of 24 vertices on the circle: 24/2 r^2 sin(2 pi / 24)
    (Section("circle", diameter=0.02), 12 * 0.01 ** 2 * np.sin(np.pi / 12)),
    (Section("tube", outer_diameter=0.02, thickness=0.003), 12 * (0.01 ** 2 - 0.007 ** 2) * np.sin(np.pi / 12)),
    (Section("explicit", A=4e-4, Iy=8e-8, Iz=2e-8, J=1e-8), 4e-4),
])
def test_swept_section_is_a_closed_solid_of_the_section_area(section, area):
    """The mesh of a section swept along a straight beam of length 0.7 m: every edge is shared
    by two triangles in opposite directions (closed, consistently oriented) and its volume
    (divergence theorem) is area x length; rings are centred, outer first."""
    rings = section_rings(section)
    outline = np.concatenate(rings)
    stations = np.linspace(0.0, 0.7, 6)
    vertices = np.concatenate([np.column_stack([np.full(len(outline), x), outline]) for x in stations])
    faces = sweep_faces(tuple(len(r) for r in rings), stations.size)
    edges = [(t[a], t[(a + 1) % 3]) for t in faces for a in range(3)]
    assert len(set(edges)) == len(edges) and all((b, a) in set(edges) for a, b in edges)
    a, b, c = (vertices[faces[:, i]] for i in range(3))
    volume = np.einsum("ti,ti->t", a, np.cross(b, c)).sum() / 6.0
    assert volume == pytest.approx(area * 0.7, rel=1e-12)
    for ring in rings:
        assert np.allclose(ring.mean(axis=0), 0.0, atol=1e-15)
    if section.shape == "explicit":          # drawn with its area and its Iy / Iz ratio
        w, h = np.ptp(rings[0], axis=0)
        assert h / w == pytest.approx(np.sqrt(8e-8 / 2e-8), rel=1e-12)
    if section.shape == "tube":
        assert np.allclose(np.linalg.norm(rings[0], axis=1), 0.01, rtol=1e-12)
        assert np.allclose(np.linalg.norm(rings[1], axis=1), 0.007, rtol=1e-12)


def test_inertia_box_recovers_the_box_edges():
    """A uniform box a x b x c turned by R: inertia m/12 (b^2 + c^2, ...) rotated; the box drawn
    for it has those edges along those axes."""
    m, edges = 3.0, np.array([0.4, 0.1, 0.05])
    c = np.cos(0.3)
    R = np.array([[c, -np.sin(0.3), 0.0], [np.sin(0.3), c, 0.0], [0.0, 0.0, 1.0]])
    I_body = m / 12.0 * np.diag([edges[1] ** 2 + edges[2] ** 2, edges[0] ** 2 + edges[2] ** 2,
                                 edges[0] ** 2 + edges[1] ** 2])
    half, axes = inertia_box(m, R @ I_body @ R.T, 1e-4)
    got = sorted(zip(2 * half, axes.T), key=lambda p: -p[0])
    for (edge, axis), want_edge, want_axis in zip(got, edges, R.T):
        assert edge == pytest.approx(want_edge, rel=1e-12)
        assert abs(axis @ want_axis) == pytest.approx(1.0, rel=1e-12)
    # a thin rod keeps a visible thickness
    assert np.all(inertia_box(1.0, np.diag([0.0, 1.0, 1.0]), 0.01)[0] >= 0.01)


def test_frame_indices():
    t = np.linspace(0.0, 2.0, 401)
    assert list(frame_indices(t, fps=10, speed=1.0)) == list(range(0, 401, 20))
    assert frame_indices(t, fps=10, speed=2.0).size == 11
    assert frame_indices(t, max_frames=50).size == 50
    assert frame_indices(t, max_frames=1000).size == 401


def test_result_from_csv_gives_the_same_picture(huang, tmp_path):
    path = tmp_path / "run.csv"
    huang.to_csv(str(path))
    back = flexmbs.Result.from_csv(str(path), huang.system)
    a, b = scene_of(huang), scene_of(back)
    for x, y in zip(a.items, b.items):
        assert np.max(np.abs(x.at(slice(None)) - y.at(slice(None))), initial=0.0) < 1e-12
    # a CSV without the position signals cannot be animated; the error names what is missing
    huang_subset = tmp_path / "subset.csv"
    from flexmbs.cli import _subset
    _subset(huang, ["tip.r[1]"]).to_csv(str(huang_subset))
    with pytest.raises(ValueError, match=r"shoulder\.q.*missing"):
        flexmbs.Result.from_csv(str(huang_subset), huang.system)


def test_bad_requests_are_named(huang, tmp_path):
    with pytest.raises(ValueError, match=r"run\.avi.*\.html"):
        animate(huang, str(tmp_path / "run.avi"))
    with pytest.raises(ValueError, match="scale"):
        animate(huang, str(tmp_path / "run.html"), scale=-1.0)
    bare = flexmbs.Result(huang.time, huang.signals, huang.units, {}, huang.states)
    with pytest.raises(ValueError, match="no compiled model"):
        bare.animate(str(tmp_path / "run.html"))
    with pytest.raises(ValueError, match="states have 3 columns"):
        build_scene(huang.system, huang.time, huang.states[:, :3])


# ------------------------------------------------------------------------------ HTML

def test_html_is_self_contained(huang):
    page = html(scene_of(huang, frame_indices(huang.time, max_frames=20)))
    # no external script, style, image or font: plotly.js is inlined
    assert not re.search(r"<(script|link|img)[^>]*(src|href)\s*=", page, re.I)
    assert "Plotly.newPlot" in page and len(page) > 1_000_000
    data = json.loads(re.search(r'<script id="flexmbs-data" type="application/json">(.*?)</script>',
                                page, re.S).group(1))
    assert len(data["time"]) == 20
    # the frame data in the page: the beam's end at each frame is the tip sensor (float32)
    item = [i for i in data["items"] if i["kind"] == "line"][0]
    import base64
    base = np.frombuffer(base64.b64decode(item["base"]), "<f4").reshape(20, item["n"], 3)
    deform = np.frombuffer(base64.b64decode(item["deform"]), "<f4").reshape(20, item["n"], 3)
    idx = frame_indices(huang.time, max_frames=20)
    assert np.max(np.abs(base[:, -1] + deform[:, -1] - sensor(huang, "tip")[idx])) < 1e-6


def page_data(page: str) -> dict:
    """The player's data in a page, with each item's frames decoded from float32 base64."""
    import base64

    data = json.loads(re.search(r'<script id="flexmbs-data" type="application/json">(.*?)</script>',
                                page, re.S).group(1))
    for item in data["items"]:
        for key in ("base", "deform", "axes_base", "axes_deform"):
            if item.get(key) is not None:
                item[key] = np.frombuffer(base64.b64decode(item[key]), "<f4")
    return data


def test_long_runs_are_decimated_to_exact_samples(huang, tmp_path):
    """max_frames keeps at most that many output samples, evenly spread, first and last
    included: every kept time is one of the run's own, and the frame there is the run's state
    (the beam's end is the tip sensor at that sample). The page says so."""
    path = huang.animate(str(tmp_path / "run.html"), max_frames=30)
    page = path.read_text()
    data = page_data(page)
    kept = np.array(data["time"])
    assert kept.size == 30 and kept[0] == huang.time[0] and kept[-1] == huang.time[-1]
    idx = np.searchsorted(huang.time, kept)
    assert np.array_equal(huang.time[idx], kept)            # exact samples, not interpolated
    steps = np.diff(idx)
    assert steps.max() - steps.min() <= 1                    # evenly spread
    item = [i for i in data["items"] if i["kind"] == "line"][0]
    end = (item["base"] + item["deform"]).reshape(30, item["n"], 3)[:, -1]
    assert np.max(np.abs(end - sensor(huang, "tip")[idx])) < 1e-6
    assert "30 of 101 output samples" in page
    assert "output samples" not in html(scene_of(huang), samples=huang.time.size)   # all kept: no note
    with pytest.raises(ValueError, match="max_frames 1"):
        huang.animate(str(tmp_path / "run.html"), max_frames=1)


@pytest.fixture(scope="module")
def long_run(huang):
    """A 5 s run of Huang's arm at 1 ms output (5001 samples): the states of the 0.5 s run
    stretched over it (what is checked with it depends only on the counts and the times)."""
    t = np.linspace(0.0, 5.0, 5001)
    states = np.column_stack([np.interp(t, 10.0 * huang.time, c) for c in huang.states.T])
    return flexmbs.Result(t, {}, {}, {}, states, system=huang.system)


def test_page_of_a_long_run_is_compact(long_run, tmp_path):
    """A 5 s run at 1 ms output keeps MAX_FRAMES = 400 frames and adds at most 1.5 MB to
    plotly.js: float32 frames, no displacement for rigid parts, two axes per beam station for
    the sections."""
    from plotly.offline import get_plotlyjs

    path = long_run.animate(str(tmp_path / "long.html"))
    data = page_data(path.read_text())
    assert len(data["time"]) == MAX_FRAMES == 400
    assert [i["deform"] is None for i in data["items"][:2]] == [True, True]   # rigid bodies, links
    assert path.stat().st_size - len(get_plotlyjs()) < 1.5e6


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("headless Chromium is not installed (Debian: apt-get install chromium)")
    return exe


def _browse(page: Path, query: str, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    """Open page?query in headless Chromium with every network request sent to a dead proxy,
    recording the network log to tmp/net.json."""
    args = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
            "--proxy-server=127.0.0.1:9", "--enable-unsafe-swiftshader", "--window-size=1000,700",
            "--virtual-time-budget=10000", f"--log-net-log={tmp / 'net.json'}", *extra,
            f"{page.resolve().as_uri()}?{query}"]
    return subprocess.run(args, capture_output=True, text=True, timeout=180)


def _page_requests(netlog: Path) -> list[str]:
    """The network URLs the page asked for, from Chromium's network log: requests started with
    an initiator (the browser's own update and time checks have none: 'not an origin')."""
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = set()
    for e in log["events"]:
        p = e.get("params", {})
        if e["type"] == start and "url" in p and p.get("initiator") != "not an origin":
            urls.add(p["url"])
    return sorted(u for u in urls if not u.startswith(("file:", "data:", "blob:")))


def test_network_check_sees_a_page_request(tmp_path):
    """The offline check below would notice a page that fetches something."""
    page = tmp_path / "fetch.html"
    page.write_text('<html><body><img src="http://example.invalid/a.png"></body></html>')
    _browse(page, "", tmp_path)
    assert _page_requests(tmp_path / "net.json") == ["http://example.invalid/a.png"]


@pytest.fixture(scope="module")
def page(huang, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("html") / "huang.html"
    huang.animate(str(path))
    return path


def test_browser_draws_the_arm_offline_and_the_slider_moves_it(page, tmp_path):
    from PIL import Image

    shots = []
    for k in (0, 100):
        tmp = tmp_path / f"f{k}"
        tmp.mkdir()
        shot = tmp / "shot.png"
        run = _browse(page, f"frame={k}", tmp, f"--screenshot={shot}")
        assert shot.exists(), run.stderr[-2000:]
        # nothing left the machine: no http(s) or other network URL was requested
        assert _page_requests(tmp / "net.json") == []
        shots.append(np.asarray(Image.open(shot).convert("RGB")).astype(int))
    plot = [s[60:, :] for s in shots]              # below the control bar
    for s in plot:
        red = np.all(np.abs(s - [214, 39, 40]) < 40, axis=2).sum()      # the beam's colour
        assert red > 200, "the flexible link is not drawn"
        assert (np.abs(s - 255).sum(axis=2) > 30).sum() > 5000          # a drawn scene, not a blank page
    changed = (np.abs(plot[0] - plot[1]).sum(axis=2) > 30).sum()
    assert changed > 200, "moving to another frame did not change the picture"


def test_browser_draws_the_tip_where_the_sensor_is(page, huang, tmp_path):
    """The coordinates plotly draws (read back from the page) at a few frames: the end of the
    beam is the tip sensor."""
    for k in (0, 37, 100):
        run = _browse(page, f"frame={k}&dump=1", tmp_path, "--dump-dom")
        m = re.search(r'<pre id="flexmbs-dump">(.*?)</pre>', run.stdout, re.S)
        assert m and m.group(1), run.stderr[-2000:]
        drawn = json.loads(m.group(1).replace("&quot;", '"'))
        assert drawn["frame"] == k and drawn["time"] == pytest.approx(huang.time[k])
        beam = [t for t in drawn["traces"] if t["name"] == "link2"][0]
        tip = np.array([beam["x"][-1], beam["y"][-1], beam["z"][-1]])
        assert np.max(np.abs(tip - sensor(huang, "tip")[k])) < 1e-6


def test_browser_draws_the_sections_the_scene_has(page, huang, tmp_path):
    """The section mesh plotly draws (built in the page from the section axes) at a frame and a
    deformation scale is the scene's Sweep there (float32)."""
    k, scale = 60, 20.0
    run = _browse(page, f"frame={k}&scale={scale:g}&dump=1", tmp_path, "--dump-dom")
    m = re.search(r'<pre id="flexmbs-dump">(.*?)</pre>', run.stdout, re.S)
    assert m and m.group(1), run.stderr[-2000:]
    drawn = json.loads(m.group(1).replace("&quot;", '"'))
    assert drawn["frame"] == k and drawn["scale"] == scale
    mesh = [t for t in drawn["traces"] if t["name"] == "link2 section"][0]
    got = np.column_stack([mesh["x"], mesh["y"], mesh["z"]])
    want = scene_of(huang)["link2 section"].at(k, scale)
    assert got.shape == want.shape
    assert np.max(np.abs(got - want)) < 1e-6


# A page clock for the player, put before its own scripts: every animation frame comes 100 ms of
# page time after the last, whatever the machine's load (headless Chromium draws WebGL in
# software, and on a loaded machine its frames came seconds apart, in real and in virtual time).
_FRAME_CLOCK = """<script>(() => {
  let clock = 0;
  performance.now = () => clock;
  window.requestAnimationFrame = callback => setTimeout(() => { clock += 100; callback(clock); }, 0);
})();</script>"""


def played(page: Path, speed: float, tmp: Path) -> np.ndarray:
    """Play page at speed on _FRAME_CLOCK and return (the frame's clock [s], simulated time shown
    [s]) at each frame drawn."""
    clocked = tmp / page.name
    clocked.write_text(page.read_text().replace("<head>", "<head>" + _FRAME_CLOCK, 1))
    run = _browse(clocked, f"play=1&speed={speed:g}&dump=1", tmp, "--dump-dom")
    m = re.search(r'<pre id="flexmbs-dump">(.*?)</pre>', run.stdout, re.S)
    assert m and m.group(1), run.stderr[-2000:]
    dump = json.loads(m.group(1))
    assert dump["speed"] == speed
    return np.array(dump["played"]) * [1e-3, 1.0]


def test_browser_plays_at_the_chosen_speed(long_run, tmp_path):
    """Playback of a 5 s run in headless Chromium: the simulated time shown against the page's
    own clock (the requestAnimationFrame timestamp of each frame drawn, on performance.now()'s
    time base; _FRAME_CLOCK) advances at the chosen speed, and at speed 2 twice as fast as at
    speed 1 (within 10 %; the shown sample lags the clock by up to one sample, 1 ms). The frames
    before the last sample are fitted; the last is held."""
    page = long_run.animate(str(tmp_path / "long.html"))
    rates = {}
    for speed in (1.0, 2.0):
        tmp = tmp_path / f"s{speed:g}"
        tmp.mkdir()
        clock, shown = played(page, speed, tmp).T
        moving = shown < long_run.time[-1]
        assert np.count_nonzero(moving) >= 5, f"only {np.count_nonzero(moving)} frames drawn before the end"
        rates[speed] = np.polyfit(clock[moving], shown[moving], 1)[0]
        assert rates[speed] == pytest.approx(speed, rel=0.1)
    assert rates[2.0] / rates[1.0] == pytest.approx(2.0, rel=0.1)


def test_browser_plays_to_the_end(page, huang, tmp_path):
    """play (started by the URL) advances through the frames and stops at the last one (under
    Chromium's virtual time; the speed is checked in real time above)."""
    run = _browse(page, "play=1&dump=1", tmp_path, "--dump-dom")
    m = re.search(r'<pre id="flexmbs-dump">(.*?)</pre>', run.stdout, re.S)
    assert m and m.group(1), run.stderr[-2000:]
    assert json.loads(m.group(1))["frame"] == huang.time.size - 1


# ------------------------------------------------------------------------------ movies, PNG, CLI

def test_gif_has_one_frame_per_movie_frame(huang, tmp_path):
    from PIL import Image

    path = tmp_path / "run.gif"
    huang.animate(str(path), fps=10, speed=0.5)
    # 0.5 s at half speed = 1 s of movie at 10 frames/s: 11 frames, t = 0, 0.05, ..., 0.5
    with Image.open(path) as im:
        assert im.n_frames == 11


def test_mp4_has_one_frame_per_movie_frame(huang, tmp_path):
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg", reason="MP4 export needs imageio-ffmpeg")
    path = tmp_path / "run.mp4"
    huang.animate(str(path), fps=20)
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(path))
    assert frames == 11


def test_cli_animate(huang, tmp_path):
    runner = CliRunner()
    csv = tmp_path / "run.csv"
    huang.to_csv(str(csv))
    png = tmp_path / "frame.png"
    res = runner.invoke(main, ["animate", "huang_two_link", "--result", str(csv), "-o", str(png), "--at", "0.25"])
    assert res.exit_code == 0, res.output
    assert png.stat().st_size > 10_000
    res = runner.invoke(main, ["animate", "huang_two_link", "-o", str(tmp_path / "x.html")])
    assert res.exit_code != 0 and "--t-end" in res.output
    res = runner.invoke(main, ["animate", "huang_two_link", "--t-end", "0.1", "-o", str(tmp_path / "x.avi")])
    assert res.exit_code != 0 and "x.avi" in res.output
    res = runner.invoke(main, ["animate", "huang_two_link", "--t-end", "0.1", "--input", "shoulder", "-o",
                               str(tmp_path / "x.html")])
    assert res.exit_code != 0 and "NAME=VALUE" in res.output
    res = runner.invoke(main, ["animate", "huang_two_link", "--result", str(csv), "--max-frames", "10", "-o",
                               str(tmp_path / "x.html")])
    assert res.exit_code == 0, res.output
    assert "10 of the run's 101 output samples" in res.output


# ------------------------------------------------------------------------------ time plots

def test_plot_names_signals_and_units(huang, tmp_path):
    fig = huang.plot(signals=["shoulder.q", "elbow.q", "tip.r[3]", "energy.total"])
    labels = [[t.get_text() for t in ax.get_legend().get_texts()] for ax in fig.axes]
    assert labels == [["shoulder.q [rad]", "elbow.q [rad]"], ["tip.r[3] [m]"], ["energy.total [J]"]]
    assert [ax.get_ylabel() for ax in fig.axes] == ["q [rad]", "r [m]", "energy [J]"]
    with pytest.raises(KeyError, match="elbow.q"):
        huang.plot(signals=["elbow.qq"])


def test_cli_simulate_plot_signals(tmp_path):
    png = tmp_path / "run.png"
    res = CliRunner().invoke(main, ["simulate", "huang_two_link", "--t-end", "0.05", "--no-progress",
                                    "--plot", str(png), "--signals", "elbow.q,link2.tip_deflection[2]"])
    assert res.exit_code == 0, res.output
    assert png.stat().st_size > 10_000
