"""3-D animation of a run: a self-contained HTML player, GIF/MP4 movies and single PNG frames.

HTML: plotly.js (the copy bundled in the `plotly` Python package, embedded in the file, so the
page works offline and fetches nothing) draws the scene in WebGL with the camera under the mouse
(drag to turn, scroll to zoom, right-drag to pan). A small player script of ours moves the data:
play/pause, a time slider, playback speed and the deformation scale factor. Plotly was chosen
because it is a maintained, pip-installable library that ships its JavaScript inside the wheel
(no npm or network at build time, unlike a three.js bundle) and already has 3-D meshes, lines,
hover labels and a mouse camera; meshcat and pyvista need a server or a VTK/OpenGL stack.

Movies and PNG frames: matplotlib's 3-D axes, headless (Agg); GIF through Pillow, MP4 through
the ffmpeg executable that the `imageio-ffmpeg` wheel ships (`pip install flexmbs[video]`).

URL parameters of the HTML page (also for scripted checks): `?frame=K` shows sample K,
`&scale=S` sets the deformation scale, `&speed=V` the playback speed (one of the listed
choices), `&play=1` starts playing, `&dump=1` writes the drawn trace coordinates as JSON into
the element `#flexmbs-dump` at every frame shown, with the clock of the playback so far
(`played`: pairs of the frame's clock [ms], the requestAnimationFrame timestamp from which the
shown sample was chosen, on performance.now()'s time base, and the simulated time shown [s]).

Long runs are decimated for the page to at most max_frames (default MAX_FRAMES) of their output
samples, evenly spread and exact (no interpolation); the page says so. Frame coordinates are
stored as float32 (base64); parts that never move elastically (rigid bodies) store no
displacement, and a beam's sections store only their two axes per station (the player builds
the outline from them).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Optional, Protocol, Sequence

import numpy as np

from .scene import BOX_TRIANGLES, Scene, Sweep, build_scene, frame_indices
from .system import System

MAX_FRAMES = 400        # default cap on the samples an HTML page holds

_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
_BEAM_COLORS = ("#d62728", "#9467bd", "#ff7f0e", "#2ca02c", "#17becf", "#e377c2")
FORMATS = (".html", ".gif", ".mp4", ".png")


class Run(Protocol):
    """What a picture needs of a run (a flexmbs.simulate.Result): its sample times [s], its states
    [q; u] per sample and its compiled model (None when not known)."""

    time: np.ndarray
    states: np.ndarray
    system: Optional[System]


def scene_of(result: Run, frames: Optional[np.ndarray] = None, reference: str = "body") -> Scene:
    """The scene of a Result at the chosen sample indices (all by default); reference: what
    the deformation is measured from ('body' or 'chord', see flexmbs.scene.build_scene)."""
    system = getattr(result, "system", None)
    if system is None:
        raise ValueError("this Result carries no compiled model (it was built by hand or as a subset of "
                         "signals): use the Result of flexmbs.simulate, or Result.from_csv")
    idx = np.arange(result.time.size) if frames is None else np.asarray(frames)
    return build_scene(system, result.time[idx], result.states[idx], reference)


def animate(result: Run, path: str, *, scale: float = 1.0, speed: float = 1.0, fps: float = 25.0,
            max_frames: int = MAX_FRAMES, at: Optional[float] = None, title: str = "",
            reference: str = "body") -> Path:
    """Write an animation of `result` to path; the suffix chooses the format.

    .html: the interactive player (at most max_frames of the output samples, evenly spread,
    exact samples; the page says when the run was decimated); .gif/.mp4: a movie
    of fps frames per second, playing at `speed` times real time; .png: one frame at time `at` [s]
    (default the end). scale: initial deformation scale factor of the flexible bodies (1: true
    size); reference: what it is measured from, 'body' (the beam's floating frame) or 'chord'
    (the line from root to deformed end), see flexmbs.scene.build_scene. Returns the path written.
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"animation file {path}: unknown format {out.suffix!r}; use one of {', '.join(FORMATS)}")
    if scale < 0 or speed <= 0 or fps <= 0:
        raise ValueError(f"animation {path}: scale must be >= 0, speed and fps > 0 (got {scale}, {speed}, {fps})")
    if max_frames < 2:
        raise ValueError(f"animation {path}: max_frames {max_frames} must be at least 2 (the first and last sample)")
    if not title and getattr(result, "system", None) is not None:
        title = result.system.model.name
    if suffix == ".html":
        scene = scene_of(result, frame_indices(result.time, max_frames=max_frames), reference)
        out.write_text(html(scene, scale=scale, speed=speed, title=title, samples=result.time.size),
                       encoding="utf-8")
    elif suffix == ".png":
        t = result.time[-1] if at is None else at
        k = int(np.argmin(np.abs(result.time - t)))
        snapshot([scene_of(result, np.array([k]), reference)], str(out), scale=scale, titles=[title])
    else:
        movie(scene_of(result, frame_indices(result.time, fps=fps, speed=speed), reference), str(out), fps=fps,
              scale=scale, title=title)
    return out


# ------------------------------------------------------------------------------ HTML player

def _b64(a: np.ndarray) -> str:
    """Float32 little-endian bytes of an array, base64 (compact, decoded by the page)."""
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode("ascii")


def _beam_colors(scene: Scene) -> dict[str, str]:
    """The colour of each flexible body's centre line and of its sections."""
    beams = [i.name for i in scene.items if i.kind in ("line", "points") and i.name not in ("markers", "joints")]
    return {name: _BEAM_COLORS[b % len(_BEAM_COLORS)] for b, name in enumerate(beams)}


def _traces(scene: Scene) -> list[dict]:
    """Plotly traces at frame 0 (the player replaces x, y, z for each frame)."""
    traces: list[dict] = []
    beam_color = _beam_colors(scene)
    for item in scene.items:
        p = item.at(0)
        xyz = dict(x=p[:, 0].tolist(), y=p[:, 1].tolist(), z=p[:, 2].tolist())
        if item.kind == "mesh":
            nbox = p.shape[0] // 8
            tri = np.concatenate([BOX_TRIANGLES + 8 * b for b in range(nbox)]) if nbox else np.zeros((0, 3), int)
            colors = [_COLORS[b % len(_COLORS)] for b in range(nbox) for _ in range(12)]
            traces.append(dict(type="mesh3d", name="rigid bodies", **xyz, i=tri[:, 0].tolist(),
                               j=tri[:, 1].tolist(), k=tri[:, 2].tolist(), facecolor=colors, opacity=0.85,
                               flatshading=True, hoverinfo="skip", showlegend=True,
                               text=list(scene.box_bodies)))
        elif item.kind == "sweep":
            traces.append(dict(type="mesh3d", name=item.name, **xyz, i=item.faces[:, 0].tolist(),
                               j=item.faces[:, 1].tolist(), k=item.faces[:, 2].tolist(),
                               color=beam_color[item.centre.name], flatshading=True, hoverinfo="name",
                               showlegend=True))
        elif item.kind == "segments":
            traces.append(dict(type="scatter3d", mode="lines", name=item.name, **xyz, hoverinfo="skip",
                               line=dict(color="#555" if item.name == "links" else "#000",
                                         width=3 if item.name == "links" else 5)))
        elif item.name == "markers":
            traces.append(dict(type="scatter3d", mode="markers", name="markers", **xyz, text=list(item.names),
                               hoverinfo="text", marker=dict(size=3, color="#333")))
        elif item.name == "joints":
            traces.append(dict(type="scatter3d", mode="markers", name="joints", **xyz, text=list(item.names),
                               hoverinfo="text", marker=dict(size=6, symbol="diamond", color="#000")))
        else:   # a flexible body: centre line (beam) or nodes (superelement)
            color = beam_color[item.name]
            traces.append(dict(type="scatter3d", mode="lines" if item.kind == "line" else "markers",
                               name=item.name, **xyz, hoverinfo="name", line=dict(color=color, width=9),
                               marker=dict(size=3, color=color)))
    return traces


def _frame_data(scene: Scene) -> list[dict]:
    """The frames of each item as the player decodes them: Points as base and elastic
    displacement (None when it is zero throughout: rigid parts); a Sweep as the index of its
    centre line, its outline (y, z pairs) and its section axes (base per frame, displacement
    per station and frame)."""
    index = {id(item): k for k, item in enumerate(scene.items)}
    data = []
    for item in scene.items:
        if isinstance(item, Sweep):
            data.append(dict(kind="sweep", n=item.outline.shape[0] * item.centre.base.shape[1],
                             centre=index[id(item.centre)], outline=item.outline.ravel().tolist(),
                             axes_base=_b64(item.axes_base), axes_deform=_b64(item.axes_deform)))
        else:
            data.append(dict(kind=item.kind, n=item.base.shape[1], base=_b64(item.base),
                             deform=_b64(item.deform) if np.any(item.deform) else None))
    return data


_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ margin: 0; font: 14px sans-serif; }}
#bar {{ display: flex; gap: 12px; align-items: center; padding: 6px 10px; background: #f3f3f3; }}
#slider {{ flex: 1; }}
#plot {{ width: 100vw; height: calc(100vh - 44px); }}
#flexmbs-dump {{ display: none; }}
</style>
<script>{plotlyjs}</script>
</head><body>
<div id="bar">
<button id="play">play</button>
<input id="slider" type="range" min="0" max="{last}" value="0" step="1">
<span id="tlabel">t = 0 s</span>{note}
<label>speed <select id="speed">{speeds}</select></label>
<label>deformation x <input id="scale" type="number" min="0" step="any" value="{scale}" style="width:6em"></label>
</div>
<div id="plot"></div>
<pre id="flexmbs-dump"></pre>
<script id="flexmbs-data" type="application/json">{data}</script>
<script>
{player}
</script>
</body></html>
"""

# The player: decode the frames, draw frame k at the chosen scale, advance in real time x speed.
_PLAYER = r"""
(function () {
  const D = JSON.parse(document.getElementById('flexmbs-data').textContent);
  const f32 = s => new Float32Array(Uint8Array.from(atob(s), c => c.charCodeAt(0)).buffer);
  const items = D.items.map(it => it.kind === 'sweep'
    ? {kind: 'sweep', n: it.n, centre: it.centre, outline: it.outline, ab: f32(it.axes_base), ad: f32(it.axes_deform)}
    : {kind: it.kind, n: it.n, base: f32(it.base), def: it.deform === null ? null : f32(it.deform)});
  const nf = D.time.length, gd = document.getElementById('plot');
  const slider = document.getElementById('slider'), label = document.getElementById('tlabel');
  const button = document.getElementById('play'), speedSel = document.getElementById('speed');
  const scaleIn = document.getElementById('scale');
  const params = new URLSearchParams(window.location.search);
  const dump = params.get('dump') === '1', played = [];
  let frame = 0, scale = D.scale, playing = false, t0 = 0, w0 = 0;
  if (params.has('scale')) { scale = Number(params.get('scale')); scaleIn.value = scale; }

  function coords(it, k, s) {
    // x, y, z of one item at frame k; a gap (null) between consecutive segments
    const x = [], y = [], z = [], o = 3 * it.n * k, d = it.def;
    for (let p = 0; p < it.n; p++) {
      if (it.kind === 'segments' && p > 0 && p % 2 === 0) { x.push(null); y.push(null); z.push(null); }
      const i = o + 3 * p;
      x.push(it.base[i] + (d ? s * d[i] : 0)); y.push(it.base[i + 1] + (d ? s * d[i + 1] : 0));
      z.push(it.base[i + 2] + (d ? s * d[i + 2] : 0));
    }
    return [x, y, z];
  }
  function sweepCoords(it, c, k, s) {
    // section outlines about the centre line c (its x, y, z at frame k): vertex (oy, oz) at
    // c + oy * (y axis) + oz * (z axis), each axis = base (per frame) + s * displacement (per station)
    const x = [], y = [], z = [], m = it.outline.length / 2, ns = c[0].length;
    const ab = 6 * k, o = 6 * ns * k, ax = [0, 0, 0, 0, 0, 0];
    for (let p = 0; p < ns; p++) {
      for (let a = 0; a < 6; a++) ax[a] = it.ab[ab + a] + s * it.ad[o + 6 * p + a];
      for (let v = 0; v < m; v++) {
        const oy = it.outline[2 * v], oz = it.outline[2 * v + 1];
        x.push(c[0][p] + oy * ax[0] + oz * ax[3]); y.push(c[1][p] + oy * ax[1] + oz * ax[4]);
        z.push(c[2][p] + oy * ax[2] + oz * ax[5]);
      }
    }
    return [x, y, z];
  }
  function ranges(s) {
    // fixed axes over the whole run, equal scale on x, y, z (sections lie close to their centre line)
    const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
    for (const it of items) {
      if (it.kind === 'sweep') continue;
      for (let i = 0; i < it.base.length; i++) {
        const v = it.base[i] + (it.def ? s * it.def[i] : 0), a = i % 3;
        if (isFinite(v)) { lo[a] = Math.min(lo[a], v); hi[a] = Math.max(hi[a], v); }
      }
    }
    const span = Math.max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-9), pad = 0.05 * span;
    const r = [0, 1, 2].map(a => [lo[a] - pad, hi[a] + pad]);
    const ext = r.map(v => v[1] - v[0]), m = Math.max(...ext);
    return {xaxis: {range: r[0], title: {text: 'x [m]'}}, yaxis: {range: r[1], title: {text: 'y [m]'}},
            zaxis: {range: r[2], title: {text: 'z [m]'}}, aspectmode: 'manual',
            aspectratio: {x: ext[0] / m, y: ext[1] / m, z: ext[2] / m}};
  }
  function show(k) {
    frame = Math.max(0, Math.min(nf - 1, Math.round(k)));
    const c = [];
    // a beam's sections come after its centre line (kind 'line': no gaps)
    for (const it of items) c.push(it.kind === 'sweep' ? sweepCoords(it, c[it.centre], frame, scale)
                                                          : coords(it, frame, scale));
    Plotly.restyle(gd, {x: c.map(v => v[0]), y: c.map(v => v[1]), z: c.map(v => v[2])});
    slider.value = frame;
    label.textContent = 't = ' + D.time[frame].toFixed(3) + ' s';
    if (dump) {
      document.getElementById('flexmbs-dump').textContent = JSON.stringify(
        {frame: frame, time: D.time[frame], scale: scale, speed: Number(speedSel.value), played: played,
         traces: gd.data.map(t => ({name: t.name, x: t.x, y: t.y, z: t.z}))});
    }
  }
  function tick(now) {
    if (!playing) return;
    const t = t0 + (now - w0) / 1000 * Number(speedSel.value);
    let k = frame;
    while (k < nf - 1 && D.time[k + 1] <= t) k++;
    if (k >= nf - 1) playing = false;
    if (dump) played.push([now, D.time[k]]);
    show(k);
    if (!playing) { button.textContent = 'play'; return; }
    requestAnimationFrame(tick);
  }
  function start() {
    playing = true;
    button.textContent = 'pause';
    if (frame >= nf - 1) frame = 0;
    t0 = D.time[frame]; w0 = performance.now();
    requestAnimationFrame(tick);
  }
  button.onclick = () => { if (playing) { playing = false; button.textContent = 'play'; } else start(); };
  // a new speed restarts the clock from the shown sample
  speedSel.onchange = () => { if (playing) { t0 = D.time[frame]; w0 = performance.now(); } };
  slider.oninput = () => { playing = false; button.textContent = 'play'; show(Number(slider.value)); };
  scaleIn.onchange = () => {
    scale = Math.max(0, Number(scaleIn.value) || 0);
    Plotly.relayout(gd, {scene: Object.assign(gd.layout.scene, ranges(scale))});
    show(frame);
  };
  const layout = {margin: {l: 0, r: 0, t: 30, b: 0}, title: {text: D.title}, uirevision: 'keep',
                  height: Math.max(gd.clientHeight, 400),
                  legend: {x: 0, y: 1}, scene: Object.assign({camera: {eye: {x: 1.4, y: -1.6, z: 1.0}}},
                  ranges(scale))};
  Plotly.newPlot(gd, D.traces, layout, {displaylogo: false, responsive: true}).then(() => {
    show(params.has('frame') ? Number(params.get('frame')) : 0);
    if (params.has('speed')) speedSel.value = params.get('speed');
    if (params.get('play') === '1') start();
  });
  window.flexmbs = {show: show, frames: nf, get frame() { return frame; }};
})();
"""


def html(scene: Scene, scale: float = 1.0, speed: float = 1.0, title: str = "",
         samples: Optional[int] = None) -> str:
    """The self-contained HTML page of the player (plotly.js inlined). samples: the number of
    output samples of the run the scene's frames were taken from (the page notes a decimation)."""
    from plotly.offline import get_plotlyjs

    data = dict(title=title or scene.model, scale=scale, time=scene.time.tolist(), traces=_traces(scene),
                items=_frame_data(scene))
    choices = sorted({0.1, 0.25, 0.5, 1.0, 2.0, 4.0, float(speed)})
    speeds = "".join(f'<option value="{s:g}"{" selected" if s == speed else ""}>{s:g}x</option>' for s in choices)
    note = ""
    if samples is not None and samples > scene.time.size:
        note = (f'<span id="decimated" title="evenly spread exact samples; more with --max-frames / '
                f'max_frames">{scene.time.size} of {samples} output samples</span>')
    # "</" cannot appear inside a script element: JSON escapes it harmlessly as "<\/"
    text = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return _PAGE.format(title=title or scene.model, plotlyjs=get_plotlyjs(), last=scene.time.size - 1,
                        speeds=speeds, scale=f"{scale:g}", data=text, player=_PLAYER, note=note)


# ------------------------------------------------------------------------------ matplotlib

class _Drawing:
    """The artists of one scene on a matplotlib 3-D axis, moved frame by frame."""

    def __init__(self, ax, scene: Scene, scale: float, title: str,
                 bounds: Optional[tuple[np.ndarray, np.ndarray]] = None) -> None:
        from mpl_toolkits.mplot3d.art3d import Poly3DCollection

        self.ax, self.scene, self.scale, self.title = ax, scene, scale, title
        self.artists = []
        beam_color = _beam_colors(scene)
        for item in scene.items:
            if item.kind == "mesh":
                nbox = item.base.shape[1] // 8
                colors = [_COLORS[b % len(_COLORS)] for b in range(nbox) for _ in range(12)]
                art = Poly3DCollection([], facecolors=colors, edgecolors="#333", linewidths=0.3, alpha=0.85)
                ax.add_collection3d(art)
            elif item.kind == "sweep":
                art = Poly3DCollection([], facecolors=beam_color[item.centre.name], edgecolors="none", alpha=0.6)
                ax.add_collection3d(art)
            elif item.kind in ("line", "segments"):
                if item.kind == "line":
                    color, width = beam_color[item.name], 2.5
                else:
                    color, width = ("#555", 1.2) if item.name == "links" else ("#000", 1.8)
                art = ax.plot([], [], [], color=color, lw=width, label=item.name if item.kind == "line" else None)[0]
            else:
                style = dict(joints=("D", 18, "#000"), markers=("o", 6, "#333")).get(item.name, ("o", 6, "#d62728"))
                art = ax.scatter([], [], [], marker=style[0], s=style[1], c=style[2], depthshade=False)
            self.artists.append(art)
        lo, hi = scene.bounds(scale) if bounds is None else bounds
        centre, half = 0.5 * (lo + hi), 0.55 * max(float(np.max(hi - lo)), 1e-9)
        span = np.maximum(hi - lo, 0.2 * np.max(hi - lo)) * 0.55 + 1e-12
        for set_lim, c, h in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), centre, span):
            set_lim(c - h, c + h)
        ax.set_box_aspect(tuple(span / half))
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
        ax.set_zlabel("z [m]")
        if any(i.kind == "line" for i in scene.items):
            ax.legend(loc="upper left", fontsize=7)

    def draw(self, k: int) -> list:
        for item, art in zip(self.scene.items, self.artists):
            p = item.at(k, self.scale)
            if item.kind == "mesh":
                art.set_verts([p[8 * (t // 12) + BOX_TRIANGLES[t % 12]] for t in range(12 * (p.shape[0] // 8))])
            elif item.kind == "sweep":
                art.set_verts(p[item.faces])
            elif item.kind == "line":
                art.set_data_3d(p[:, 0], p[:, 1], p[:, 2])
            elif item.kind == "segments":
                seg = np.full((p.shape[0] // 2, 3, 3), np.nan)
                seg[:, :2] = p.reshape(-1, 2, 3)
                seg = seg.reshape(-1, 3)
                art.set_data_3d(seg[:, 0], seg[:, 1], seg[:, 2])
            else:
                art._offsets3d = (p[:, 0], p[:, 1], p[:, 2])
        scale = f", deformation x{self.scale:g}" if self.scale != 1 else ""
        self.ax.set_title(f"{self.title}  t = {self.scene.time[k]:.3f} s{scale}", fontsize=9)
        return self.artists


def _figure(n: int):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(5.2 * n, 5.0))
    return plt, fig, [fig.add_subplot(1, n, i + 1, projection="3d") for i in range(n)]


def snapshot(scenes: Sequence[Scene], path: str, scale: float = 1.0, titles: Sequence[str] = (),
             frame: int = -1, views: Optional[tuple[float, float]] = None, same_axes: bool = False) -> None:
    """One frame of each scene side by side, saved as a PNG. views: (elevation, azimuth) [deg];
    same_axes: one set of axis limits for all (to compare sizes)."""
    plt, fig, axes = _figure(len(scenes))
    bounds = None
    if same_axes:
        box = [sc.bounds(scale) for sc in scenes]
        bounds = np.min([b[0] for b in box], axis=0), np.max([b[1] for b in box], axis=0)
    for i, (ax, scene) in enumerate(zip(axes, scenes)):
        _Drawing(ax, scene, scale, titles[i] if i < len(titles) else scene.model, bounds).draw(frame % scene.time.size)
        if views is not None:
            ax.view_init(*views)
            if abs(views[0]) == 90.0:       # seen from above: z has nothing to show
                ax.set_zticks([])
                ax.set_zlabel("")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def movie(scene: Scene, path: str, fps: float = 25.0, scale: float = 1.0, title: str = "") -> None:
    """Every frame of the scene as a GIF (Pillow) or MP4 (H.264 through imageio-ffmpeg's ffmpeg)."""
    from matplotlib import animation

    if path.lower().endswith(".mp4"):
        try:
            import imageio_ffmpeg
        except ImportError:
            raise ValueError(f"{path}: MP4 export needs the imageio-ffmpeg package "
                             "(pip install 'flexmbs[video]'); GIF works without it") from None
        import matplotlib

        matplotlib.rcParams["animation.ffmpeg_path"] = imageio_ffmpeg.get_ffmpeg_exe()
        writer = animation.FFMpegWriter(fps=fps, codec="libx264", extra_args=["-pix_fmt", "yuv420p"])
    else:
        writer = animation.PillowWriter(fps=fps)
    plt, fig, (ax,) = _figure(1)
    drawing = _Drawing(ax, scene, scale, title or scene.model)
    anim = animation.FuncAnimation(fig, drawing.draw, frames=scene.time.size, blit=False)
    anim.save(path, writer=writer, dpi=100)
    plt.close(fig)
