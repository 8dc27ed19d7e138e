"""Stage 3, the markers: every frame a joint, load or sensor refers to, the ground's first, then
each body's in tree order; on a flexible body with its mode shapes at the marker (position Phi,
small rotation Psi, foreshortening H; Huang 1998, eqs. 2.91-2.99)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..flex.invariants import FlexBodyData
from ..model import GROUND, Marker, Model
from ..so3 import rotation_matrix
from .bodies import Bodies
from .tree import Tree


@dataclass(frozen=True)
class Markers:
    """index: 'body.marker' -> marker index; fields: mk_body, mk_s0, mk_R0, mk_Phi, mk_Psi, mk_H
    (SYSTEM_FIELDS)."""

    index: dict[str, int]
    fields: dict


def markers_of(model: Model, tree: Tree, bodies: Bodies) -> Markers:
    """The markers of the ground and of the bodies of `tree`."""
    nmax = bodies.nmax
    rows: list[tuple] = []
    index: dict[str, int] = {}

    def add(owner: str, bidx: int, mk: Marker, d: Optional[FlexBodyData]) -> None:
        Phi = np.zeros((3, nmax))
        Psi = np.zeros((3, nmax))
        H = np.zeros((nmax, nmax))
        if d is None:
            s0 = np.asarray(mk.position, dtype=float)
        else:
            s0, Phi[:, :d.n], Psi[:, :d.n], H[:d.n, :d.n] = d.marker(x=mk.x, node=mk.node)
        index[f"{owner}.{mk.name}"] = len(rows)
        rows.append((bidx, s0, rotation_matrix(mk.rotation), Phi, Psi, H))

    for mk in model.ground_markers:
        add(GROUND, -1, mk, None)
    for i, b in enumerate(tree.bodies):
        for mk in b.markers:
            add(b.name, i, mk, bodies.flex.get(b.name))
    column = [list(c) for c in zip(*rows)] if rows else [[]] * 6
    return Markers(index, dict(
        mk_body=np.array(column[0], np.int64), mk_s0=np.array(column[1]).reshape(-1, 3),
        mk_R0=np.array(column[2]).reshape(-1, 3, 3), mk_Phi=np.array(column[3]).reshape(-1, 3, nmax),
        mk_Psi=np.array(column[4]).reshape(-1, 3, nmax), mk_H=np.array(column[5]).reshape(-1, nmax, nmax)))
