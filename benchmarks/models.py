"""The benchmark models that are not shipped with flexmbs, defined once for every code.

* ``chain_links(n)``: a spatial serial chain of n uniform rigid links (the ``chain_rhs`` case),
  described code-neutrally; ``chain_model(n)`` is its flexmbs model dict, and
  benchmarks/peer_*.py build the same chain in exudyn, MuJoCo and Pinocchio from
  ``chain_links``.
* ``chain_state(n)``: the state at which all codes evaluate the chain's accelerations.
* ``four_bar_chain(n)``: n coupled four-bars (the ``loops_chain`` case).
* ``flexible_slider_crank()``: a slider-crank with an aluminium connecting rod, written as a user
  writes one from docs/model-file.md (the ``slider_crank_flex`` case of work_precision.py).
* ``DOUBLE_PENDULUM``: the data of models/double_pendulum.yaml for the peers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import yaml

from flexmbs.model.catalog import models_dir

GRAVITY = np.array([0.0, -9.81, 0.0])     # world frame [m/s^2]


@dataclass(frozen=True)
class Link:
    """One rigid link, hinged to the end of its parent (or to the world origin).

    axis: "z" or "y", the hinge axis in the parent's frame (= the link's frame at q = 0);
    offset: position of the hinge in the parent link's frame [m]; mass [kg]; com: centre of
    mass in the link frame [m]; inertia: principal moments about the COM along the link
    frame's x, y, z [kg m^2]."""

    axis: str
    offset: tuple[float, float, float]
    mass: float
    com: tuple[float, float, float]
    inertia: tuple[float, float, float]


def _rod(length: float, mass: float, axial: float = 1e-4) -> tuple[float, float, float]:
    """Principal inertias of a thin uniform rod along x about its COM [kg m^2]."""
    t = mass * length ** 2 / 12.0
    return (axial, t, t)


# The double pendulum of models/double_pendulum.yaml: two 1 m, 1 kg rods hinged about world z.
DOUBLE_PENDULUM = [Link("z", (0.0, 0.0, 0.0), 1.0, (0.5, 0.0, 0.0), _rod(1.0, 1.0)),
                   Link("z", (1.0, 0.0, 0.0), 1.0, (0.5, 0.0, 0.0), _rod(1.0, 1.0))]


def chain_links(n: int, length: float = 0.5, mass: float = 1.0) -> list[Link]:
    """n rods of ``length`` [m] and ``mass`` [kg] along their x, hinges alternately about z and
    y (a spatial chain: no planar special case in any code), each at the tip of its parent."""
    return [Link("z" if k % 2 == 0 else "y", (0.0 if k == 0 else length, 0.0, 0.0), mass,
                 (0.5 * length, 0.0, 0.0), _rod(length, mass)) for k in range(n)]


def chain_state(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Joint angles [rad] and rates [rad/s] drawn uniformly from [-1, 1] (a generic pose)."""
    rng = np.random.default_rng(seed + n)
    return rng.uniform(-1.0, 1.0, n), rng.uniform(-1.0, 1.0, n)


def links_model(links: list[Link], name: str) -> dict:
    """The flexmbs model dict of a serial chain of ``links`` (torque-free revolute joints)."""
    axes = {"z": [0.0, 0.0, 1.0], "y": [0.0, 1.0, 0.0]}
    bodies, joints = [], []
    for k, lk in enumerate(links):
        nxt = links[k + 1].offset if k + 1 < len(links) else (2.0 * lk.com[0], 0.0, 0.0)
        bodies.append({"name": f"link{k}", "type": "rigid", "mass": lk.mass, "com": list(lk.com),
                       "inertia": list(lk.inertia),
                       "markers": [{"name": "root", "position": [0.0, 0.0, 0.0]},
                                   {"name": "tip", "position": list(nxt)}]})
        joints.append({"name": f"j{k}", "type": "revolute",
                       "parent": "ground" if k == 0 else f"link{k - 1}",
                       "parent_marker": "origin" if k == 0 else "tip",
                       "child": f"link{k}", "child_marker": "root", "axis": axes[lk.axis]})
    return {"name": name, "gravity": GRAVITY.tolist(),
            "ground": {"markers": [{"name": "origin", "position": [0.0, 0.0, 0.0]}]},
            "bodies": bodies, "joints": joints}


def chain_model(n: int) -> dict:
    """The flexmbs model dict of ``chain_links(n)``."""
    return links_model(chain_links(n), f"chain_{n}")


ROCKER_ANGLE = 1.6            # approximate rocker angle of loop 1 of the four-bar at the start [rad]


def four_bar_chain(n: int) -> dict:
    """The model dict of n coupled four-bars: loop 1 is the four-bar of models/four_bar.yaml;
    the rocker of loop k carries the input lever of loop k + 1 (a crank of the same length on
    the rocker's pivot), whose coupler and rocker repeat loop 1 one ground pitch further along
    x. n loops: 2n + 1 bodies, n cut joints, 1 degree of freedom; every loop is planar, so 3
    rows per cut are redundant."""
    base = yaml.safe_load((models_dir() / "four_bar.yaml").read_text())
    bodies = {b["name"]: b for b in base["bodies"]}
    joints = {j["name"]: j for j in base["joints"]}
    cut = base["loops"]["cuts"][0]
    ground = base["ground"]["markers"][0]["position"]
    pitch = np.asarray(base["ground"]["markers"][1]["position"]) - np.asarray(ground)
    c, s = np.cos(-ROCKER_ANGLE), np.sin(-ROCKER_ANGLE)
    lever = {"name": "lever", "position": [0.102 * c, 0.102 * s, 0.0],
             "rotation": [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]}
    out = {k: base[k] for k in ("gravity", "solver")}
    out.update(name=f"four_bar_chain_{n}", ground={"markers": [base["ground"]["markers"][0]]},
               bodies=[bodies["crank"]], joints=[joints["crank"]],
               loops={"independent": ["crank"], "cuts": []})
    for k in range(n):
        sfx = f"_{k}"
        pivot = {"name": "d" + sfx, "position": list(np.asarray(ground) + (k + 1) * pitch)}
        out["ground"]["markers"].append(pivot)
        rocker = dict(bodies["rocker"], name="rocker" + sfx)
        if k < n - 1:
            rocker["markers"] = rocker["markers"] + [lever]
        out["bodies"] += [dict(bodies["coupler"], name="coupler" + sfx), rocker]
        driver, at = ("crank", "pin") if k == 0 else (f"rocker_{k - 1}", "lever")
        out["joints"] += [dict(joints["coupler_pin"], name="coupler_pin" + sfx, parent=driver,
                               parent_marker=at, child="coupler" + sfx),
                          dict(joints["rocker"], name="rocker" + sfx, parent_marker="d" + sfx,
                               child="rocker" + sfx)]
        out["loops"]["cuts"].append(dict(cut, name=cut["name"] + sfx, parent="coupler" + sfx,
                                         child="rocker" + sfx))
    return out


def flexible_slider_crank() -> dict:
    """The model dict of a slider-crank whose connecting rod is a beam (aluminium, 0.4 m, 12 x
    4 mm, 6 elements, 2 modes plus its interface modes, 2 % modal damping), every solver setting
    at its default but the 5 ms output step: the crank of models/slider_crank.yaml, driven by
    the torque input crank.tau [N m], a 0.5 kg slider on a prismatic joint along x, the loop
    closed by a revolute cut joint at the slider's pin. At 0.5 N m from rest the crank turns
    about 64 rad in 1 s."""
    base = yaml.safe_load((models_dir() / "slider_crank.yaml").read_text())
    crank = next(b for b in base["bodies"] if b["name"] == "crank")
    rod = {"name": "rod", "type": "beam", "length": 0.4, "elements": 6, "modes": 2,
           "material": {"E": 6.9e10, "G": 2.6e10, "rho": 2700},
           "section": {"shape": "rectangle", "width": 0.012, "height": 0.004},
           "damping": {"modal": [0.02, 0.02]},
           "markers": [{"name": "root", "x": 0}, {"name": "end", "x": 0.4}]}
    slider = {"name": "slider", "type": "rigid", "mass": 0.5, "com": [0, 0, 0], "inertia": [1e-4, 1e-4, 1e-4],
              "markers": [{"name": "pin", "position": [0, 0, 0]}]}
    hinge = {"type": "revolute", "axis": [0, 0, 1]}
    return {"name": "flexible_slider_crank", "gravity": base["gravity"], "ground": base["ground"],
            "bodies": [crank, rod, slider],
            "joints": [dict(hinge, name="crank", parent="ground", parent_marker="o", child="crank",
                            child_marker="root", drive={"type": "torque"}),
                       dict(hinge, name="rod_pin", parent="crank", parent_marker="pin", child="rod",
                            child_marker="root", q0=0.0),
                       {"name": "slide", "type": "prismatic", "parent": "ground", "parent_marker": "o",
                        "child": "slider", "child_marker": "pin", "axis": [1, 0, 0], "q0": 0.5}],
            "loops": {"cuts": [dict(hinge, name="wrist", parent="rod", parent_marker="end", child="slider",
                                    child_marker="pin")]},
            "solver": {"output_step": 0.005}}
