"""The finishing touches every example plot shares."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt


def finish(fig, axes, bottom, title: str, out: Path) -> None:
    """Grid and legend on every axis of `axes`, a time label on the `bottom` ones, the title;
    write `out` (PNG, its folder created) and close the figure."""
    for a in axes:
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    for a in bottom:
        a.set_xlabel("time [s]")
    fig.suptitle(title)
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
