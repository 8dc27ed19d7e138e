"""Stage 1, the tree: joints in tree order, the bodies they carry, the parent of each body and
the subtrees, and where each flexible body exchanges forces (its interface points), so that
the bodies' reduction (stage 2) has all it needs up front."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import GROUND, Body, Joint, Model
from ..model.interfaces import interface_points


@dataclass(frozen=True)
class Tree:
    """joints: the model's joints in tree order (every parent body before its children);
    bodies: body i is the child of joint i; interfaces: flexible body name -> its interface
    points (beam stations [m] or superelement nodes, model/interfaces.py); fields: nb, parent,
    tree_top, tree_sub_ptr, tree_sub (SYSTEM_FIELDS)."""

    joints: list[Joint]
    bodies: list[Body]
    interfaces: dict[str, list]
    fields: dict


def tree_of(model: Model) -> Tree:
    """The tree of a valid model (segments expanded)."""
    joints = [model.joints[k] for k in _tree_order(model)]
    bodies = [model.body(j.child) for j in joints]
    body_index = {b.name: i for i, b in enumerate(bodies)}
    parent = np.array([body_index.get(j.parent, -1) for j in joints], dtype=np.int64)
    interfaces = {b.name: interface_points(model, b) for b in bodies if b.type != "rigid"}
    return Tree(joints, bodies, interfaces, dict(nb=len(bodies), parent=parent, **tree_groups(parent)))


def _tree_order(model: Model) -> list[int]:
    """Joint indices ordered so that every parent body precedes its children."""
    by_parent: dict[str, list[int]] = {}
    for k, j in enumerate(model.joints):
        by_parent.setdefault(j.parent, []).append(k)
    order, frontier = [], [GROUND]
    while frontier:
        nxt = []
        for name in frontier:
            for k in by_parent.get(name, []):
                order.append(k)
                nxt.append(model.joints[k].child)
        frontier = nxt
    return order


def tree_groups(parent: np.ndarray) -> dict[str, np.ndarray]:
    """tree_top, tree_sub_ptr, tree_sub (SYSTEM_FIELDS) of a tree given by its parent array
    (tree order: parents first)."""
    nb = parent.size
    top = np.arange(nb, dtype=np.int64)
    for b in range(nb):
        if parent[b] >= 0:
            top[b] = top[parent[b]]
    order = np.argsort(top, kind="stable").astype(np.int64)
    ptr = np.searchsorted(top[order], np.arange(nb + 1)).astype(np.int64)
    return {"tree_top": top, "tree_sub_ptr": ptr, "tree_sub": order}
