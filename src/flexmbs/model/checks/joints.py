"""Checks of joints (of the tree and cut joints closing loops), their drives and motion
profiles, and the tree they form."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..elements import GROUND, Body, Drive, Joint, Loops, Motor, Profile, Spring
from ..errors import Loc, show, unknown
from ..tables import CUT_TYPES, JOINTS, MOTOR, PROFILES
from ...names import closest
from .base import UNIT_TOL, Checks, accepts, num

_DRIVE_FIELDS = {"passive": (), "torque": ("torque",), "motion": ("profile",),
                 "servo": ("profile", "kp", "kd", "motor_inertia"), "motor": ("voltage", "motor")}


def _resembled(value: Any, choices: Any) -> str | None:
    """The one choice a misspelt `value` resembles (names.closest), or None: a joint is then
    checked as that type, so that its other problems show with the misspelling, not after it."""
    close = closest(value, choices) if isinstance(value, str) else []
    return close[0] if close else None


class JointChecks(Checks):
    """Joints, cut joints and loops, drives, profiles, and the tree."""

    def joint(self, loc: Loc, j: Joint) -> None:
        for side in ("parent", "child"):
            body = getattr(j, side)
            if side == "child" and body == GROUND:
                self.add(loc + (side,), "the ground cannot be a child: it is fixed "
                                        "(make it the parent)")
            elif self.body_ref(loc + (side,), body):
                self.marker_ref(loc + (side + "_marker",), body, getattr(j, side + "_marker"))
        jtype = j.type if self.choice(loc + ("type",), j.type, JOINTS) else _resembled(j.type, JOINTS)
        if jtype is None:
            return
        kind = JOINTS[jtype]
        axes = [self.unit_axis(loc + (name,), getattr(j, name)) for name in kind.axes]
        if len(axes) == 2 and axes[0] is not None and axes[1] is not None:
            dot = float(axes[0] @ axes[1])
            if abs(dot) > UNIT_TOL:
                self.add(loc + ("axis2",), f"expected axis2 perpendicular to axis, got axis . axis2 = "
                                           f"{num(dot)}")
        for name, forms in (("q0", kind.q0_forms), ("qd0", {kind.nv: ""})):
            values = self.vector(loc + (name,), getattr(j, name), None)
            if values is not None and len(values) not in (0, *forms):
                lengths = " or ".join(f"{n} ({what})" if what else str(n) for n, what in forms.items())
                self.add(loc + (name,), f"expected length {lengths} for a {jtype} joint, got "
                                        f"length {len(values)}: {show(getattr(j, name))}")
            elif (values is not None and name == "q0" and len(values) in (4, 7)
                  and not np.any(values[-4:])):
                self.add(loc + (name,), "the quaternion is zero; expected a non-zero [w, x, y, z]")
        if j.spring is not None and self.instance(loc + ("spring",), j.spring, Spring, "spring"):
            self.numbers(loc + ("spring",), j.spring, ("stiffness", "damping"), "non-negative")
            self.number(loc + ("spring", "preload"), j.spring.preload)
        self.number(loc + ("rotor_inertia",), j.rotor_inertia, "non-negative")
        if kind.quaternion is not None:
            # their rotations are quaternions, not coordinates a spring or rotor could act on
            if j.spring is not None:
                self.add(loc + ("spring",), f"a {jtype} joint takes no spring; use a spring_damper load "
                                            f"between markers, or revolute/universal joints")
            if isinstance(j.rotor_inertia, (int, float)) and j.rotor_inertia != 0:
                self.add(loc + ("rotor_inertia",), f"a {jtype} joint takes no rotor_inertia; put the "
                                                   f"inertia into the child body")
        if self.instance(loc + ("drive",), j.drive, Drive, "drive"):
            self.drive(loc + ("drive",), j.drive, jtype)

    def loops(self, loc: Loc, lp: Loops, joints: list[tuple[int, Joint]]) -> None:
        cuts = self.entries(loc + ("cuts",), lp.cuts, Joint)
        self.names(loc + ("cuts",), cuts, "cut joint")
        tree = {j.name: j for _, j in joints}
        for i, cut in cuts:
            at = loc + ("cuts", i)
            if cut.name in tree:
                self.add(at + ("name",), f"the name {cut.name!r} is taken by a joint of the tree")
            for side in ("parent", "child"):
                if self.body_ref(at + (side,), getattr(cut, side)):
                    self.marker_ref(at + (side + "_marker",), getattr(cut, side), getattr(cut, side + "_marker"))
            if not self.choice(at + ("type",), cut.type, CUT_TYPES):
                continue
            axes = [self.unit_axis(at + (name,), getattr(cut, name)) for name in JOINTS[cut.type].cut_axes]
            if len(axes) == 2 and all(a is not None for a in axes) and abs(float(axes[0] @ axes[1])) > UNIT_TOL:
                self.add(at + ("axis2",), f"expected axis2 (the cross arm fixed in the child marker frame) "
                                          f"perpendicular to axis, got axis . axis2 = {num(float(axes[0] @ axes[1]))}")
            if cut.parent == cut.child:
                self.add(at + ("child",), f"a cut joint joins two different bodies; both sides are {cut.parent!r}")
            for key in ("q0", "qd0", "spring", "rotor_inertia"):
                if getattr(cut, key) not in ((), None, 0.0):
                    self.add(at + (key,), f"a cut joint has no coordinates, so no {key}; its motion follows "
                                          "from the tree joints")
            if cut.drive.type != "passive" and cut.drive.type in _DRIVE_FIELDS:   # a misspelt one is reported
                self.add(at + ("drive",), "a cut joint cannot be driven; drive a joint of the tree")
        for k, name in enumerate(lp.independent or ()):
            if name not in tree:
                self.add(loc + ("independent", k), unknown(f"joint {name!r}", name, tree, "joints of the tree"))
            elif tree[name].type in JOINTS and not JOINTS[tree[name].type].plain:   # a misspelt one is reported
                self.add(loc + ("independent", k), f"joint {name!r} ({tree[name].type}) has no plain coordinates "
                                                   "to hold; choose a revolute, prismatic, cylindrical, universal "
                                                   "or planar joint")

    def drive(self, loc: Loc, d: Drive, joint_type: str) -> None:
        if not self.choice(loc + ("type",), d.type, _DRIVE_FIELDS):
            return
        self.unused(loc, d, _DRIVE_FIELDS[d.type], f"a {d.type} drive")
        if d.type != "passive" and JOINTS[joint_type].nv != 1:
            self.add(loc + ("type",), f"a {d.type} drive needs a single-coordinate joint; a "
                                      f"{joint_type} joint has {JOINTS[joint_type].nv}, so only "
                                      "passive is allowed")
        if d.type == "torque":
            self.number(loc + ("torque",), d.torque)
        if d.type == "servo":
            self.numbers(loc, d, ("kp", "kd", "motor_inertia"), "non-negative")
        if d.type == "motor":
            self.motor(loc, d, joint_type)
        if d.type in ("motion", "servo") and self.instance(
                loc + ("profile",), d.profile, Profile, f"a {d.type} drive needs a profile"):
            self.profile(loc + ("profile",), d.profile)

    def motor(self, loc: Loc, d: Drive, joint_type: str) -> None:
        """A motor drive: its voltage, on a rotation, and each parameter within the block's bounds."""
        self.number(loc + ("voltage",), d.voltage)
        if JOINTS[joint_type].nv == 1 and JOINTS[joint_type].lengths:
            self.add(loc + ("type",), f"a motor drive turns a rotation (its torque constant is in N m/A); a "
                                      f"{joint_type} joint's coordinate is a length [m]: drive it by a torque "
                                      "(force) input instead")
        if not self.instance(loc + ("motor",), d.motor, Motor, "a motor drive needs a motor mapping (R [ohm], "
                             "L [H], k_t [N m/A], J_rotor [kg m^2], b_motor [N m s/rad], ratio, efficiency, "
                             "w_band [rad/s], i0 [A])"):
            return
        for name, par in MOTOR.items():
            value = getattr(d.motor, name)
            low = -np.inf if par.low is None else par.low
            high = np.inf if par.high is None else par.high
            if not accepts(value, "finite") or not low <= value <= high:
                bounds = (f" from {low:g} to {high:g}" if par.low is not None and par.high is not None
                          else f" >= {low:g}" if par.low is not None else "")
                self.add(loc + ("motor", name), f"{par.description} [{par.unit}]: expected a finite number{bounds}, "
                                                f"got {show(value)}")

    def profile(self, loc: Loc, p: Profile) -> None:
        if not self.choice(loc + ("type",), p.type, PROFILES):
            return
        params = PROFILES[p.type].fields
        self.unused(loc, p, params, f"a {p.type} profile")
        if p.type == "table":
            times = self.vector(loc + ("times",), p.times, None)
            values = self.vector(loc + ("values",), p.values, None)
            if times is not None and len(times) < 2:
                self.add(loc + ("times",), f"expected at least 2 points, got {len(times)}")
            elif times is not None and values is not None and len(values) != len(times):
                self.add(loc + ("values",), f"expected {len(times)} values (one per time), "
                                            f"got {len(values)}")
            steps = [] if times is None else np.flatnonzero(np.diff(times) <= 0)
            if len(steps):
                k = int(steps[0]) + 1
                self.add(loc + ("times",), f"expected strictly increasing times, but times[{k}] = "
                                           f"{num(times[k])} <= times[{k - 1}] = {num(times[k - 1])}")
            return
        if not all([self.number(loc + (name,), getattr(p, name)) for name in params]):
            return
        if p.type in ("ramp", "cycloidal") and p.t1 <= p.t0:
            self.add(loc + ("t1",), f"expected t1 > t0, got t1 = {num(p.t1)} <= t0 = {num(p.t0)}")
        elif p.type == "spin_up":
            self.number(loc + ("t_s",), p.t_s, "positive")
        elif p.type == "sine":
            self.number(loc + ("frequency",), p.frequency, "non-negative")

    def tree(self, bodies: list[tuple[int, Body]], joints: list[tuple[int, Joint]]) -> None:
        """Each body is the child of exactly one joint and its chain of parents reaches the
        ground (no cycles)."""
        parent_joint: dict[Any, tuple[int, Joint]] = {}
        for i, j in joints:
            if not isinstance(j.child, str) or j.child not in self.markers or j.child == GROUND:
                continue
            if j.child in parent_joint:
                first = parent_joint[j.child]
                self.add(("joints", i, "child"), f"body {j.child!r} is already the child of "
                                                 f"joints[{first[0]}] {first[1].name!r}; a body has "
                                                 "exactly one parent joint")
            else:
                parent_joint[j.child] = (i, j)
        # An invalid joint entry may be the one meant to attach a body: then don't guess.
        all_joints_known = (isinstance(self.model.joints, (list, tuple))
                            and len(joints) == len(self.model.joints)
                            and all(isinstance(j.child, str) for _, j in joints))
        for i, b in bodies if all_joints_known else ():
            if isinstance(b.name, str) and b.name != GROUND and b.name not in parent_joint:
                self.add(("bodies", i), f"body {b.name!r} is not connected: no joint has it as "
                                        "child (each body needs a joint to its parent)")
        settled: set[str] = set()  # bodies whose chain was already followed
        for start in parent_joint:
            chain: list[str] = []
            body = start
            while (isinstance(body, str) and body in parent_joint
                   and body not in chain and body not in settled):
                chain.append(body)
                body = parent_joint[body][1].parent
            if body in chain:
                loop = chain[chain.index(body):] + [body]
                self.add(("joints", parent_joint[body][0], "parent"),
                         f"the joints form a cycle ({' -> '.join(loop)}, each the child "
                         "of the next) that never reaches the ground")
            settled.update(chain)
