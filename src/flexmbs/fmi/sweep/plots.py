"""Plots of a sweep's table: a metric over two parameters, the metrics' distributions, and the
time series of the worst runs (re-run on the engine: the table holds metrics, not signals)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .engine import OK, Engine, Study, simulate

UNITS = {"overshoot": "%", "settling_time": "s", "rms_error": "rad", "peak_tip_deflection": "m", "energy": "J",
         "objective": "rad^2 s"}


def _label(metric: str) -> str:
    return f"{metric} [{UNITS.get(metric.partition('.')[0], '')}]"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def metric_map(df, x: str, y: str, metric: str, path: str | Path) -> Path:
    """`metric` of the finished runs over parameters x and y (colour); failed runs as black crosses."""
    plt = _pyplot()
    ok = df["status"] == OK
    fig, ax = plt.subplots(figsize=(7, 5.5))
    sc = ax.scatter(df.loc[ok, x], df.loc[ok, y], c=df.loc[ok, metric], cmap="viridis", s=28)
    fig.colorbar(sc, ax=ax, label=_label(metric))
    if (~ok).any():
        ax.scatter(df.loc[~ok, x], df.loc[~ok, y], marker="x", color="k", label="failed run")
    if ok.any():
        worst = df[ok][metric].idxmax()
        ax.scatter([df[x][worst]], [df[y][worst]], s=160, facecolors="none", edgecolors="r", label="worst")
    ax.legend()
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{metric} over {x} and {y} ({int(ok.sum())} of {len(df)} runs finished)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def distributions(df, metrics: Sequence[str], path: str | Path) -> Path:
    """Histograms of the metrics over the finished runs (infinite values, e.g. never settled, left out)."""
    plt = _pyplot()
    ok = df[df["status"] == OK]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6), squeeze=False)
    for ax, m in zip(axes[0], metrics):
        v = ok[m].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        ax.hist(v, bins=max(5, min(40, v.size // 5)), color="tab:blue", alpha=0.8)
        if v.size:
            ax.axvline(np.max(v), color="r", ls="--", label=f"worst {np.max(v):.3g}")
            ax.legend(fontsize=8)
        ax.set_xlabel(_label(m))
        ax.set_ylabel("runs")
    fig.suptitle(f"distributions over {len(ok)} finished runs")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def worst_series(engine: Engine, study: Study, df, metric: str, count: int, path: str | Path,
                 extra: Mapping[str, Mapping[str, float]] | None = None) -> Path:
    """Re-run the `count` finished runs with the largest `metric` (and the `extra` labelled
    parameter sets, e.g. the nominal design) and plot their tracking errors, tip deflection and
    voltages over time."""
    plt = _pyplot()
    params = [c for c in df.columns if c not in {"key", "run", *study.columns(), "status", "message", "wall_s"}]
    worst = df[df["status"] == OK].nlargest(count, metric)
    cases = {f"run {int(r['run'])}: {metric} {r[metric]:.3g} ("
             + ", ".join(f"{p} {r[p]:.3g}" for p in params) + ")": {p: float(r[p]) for p in params}
             for _, r in worst.iterrows()}
    cases.update(extra or {})
    digest = study.digest()
    futures = {label: engine.client.submit(simulate, study, p, None, digest, pure=False) for label, p in cases.items()}
    design = study.design
    fig, ax = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    for label, fut in futures.items():
        run = fut.result()
        t = run["time"]
        for a, style in zip(design.axes, ("-", "--", ":", "-.")):
            ax[0].plot(t, np.degrees(run[f"arm.{a.joint}.q"] - run[f"r_{a.joint}.q_ref"]), style,
                       label=f"{a.joint}, {label}")
        if design.vibration:
            ax[1].plot(t, 1e3 * np.sqrt(sum(run[f"arm.{k}"] ** 2 for k in design.vibration)), label=label)
        for a, style in zip(design.axes, ("-", "--", ":", "-.")):
            ax[2].plot(t, run[f"c_{a.joint}.voltage"], style, label=f"{a.joint}, {label}")
    ax[0].set_ylabel("tracking error [deg]")
    ax[1].set_ylabel("tip deflection norm [mm]")
    ax[2].set_ylabel("voltage [V]")
    ax[2].set_xlabel("time [s]")
    ax[0].legend(fontsize=7)
    ax[1].legend(fontsize=7)
    ax[0].set_title(f"worst runs by {metric}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
