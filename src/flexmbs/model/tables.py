"""One table per element type: what each joint type, cross-section shape and motion profile
takes and gives. The validator, the compiler, the signals and the pictures read these rows
instead of switching on the type's name, so a new type is one row here plus its branch in the
kernel that evaluates it (kernels/joints.py: joint_kinematics and CODE_OF; kernels/profiles.py:
evaluate and CODE_OF; flex/sections.py for a section's constants).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from flexmbs_laws import motor as motor_law

from ..flex import sections as sec
from .elements import Section

# Kinds of constraint rows of a cut joint (the kernels' cr_kind, kernels/constraints.py):
# POSITION: the offset r_b - r_a along e_i of the joint frame; ALIGN: e_i^A . e_j^B.
POSITION, ALIGN = 0, 1


@dataclass(frozen=True)
class JointKind:
    """A joint type. nq / nv: its position / velocity coordinates; axes: the Joint fields it
    reads (unit vectors in the parent marker frame); q0_forms: the accepted lengths of q0 and
    what each means (default: nq coordinates); quaternion: where its unit quaternion starts in
    its q (its relative angular velocity in its u at the same offset), None for plain
    coordinates; lengths: its coordinates that are lengths [m] (the others angles [rad]);
    cut_rows: its constraints as a loop-closing cut joint, (kind, i, j) with kind POSITION
    (offset along e_i) or ALIGN (e_i . e_j' of the two marker frames), None if it cannot cut a
    loop; cut_axes: the fields that set a cut's joint frame; drawn_axis: pictures draw its
    first axis."""

    nq: int
    nv: int
    axes: tuple[str, ...] = ()
    q0_forms: dict[int, str] = field(default_factory=dict)
    quaternion: Optional[int] = None
    lengths: tuple[int, ...] = ()
    cut_rows: Optional[tuple[tuple[int, int, int], ...]] = None
    cut_axes: tuple[str, ...] = ("axis",)
    drawn_axis: bool = False

    def __post_init__(self) -> None:
        if not self.q0_forms:
            object.__setattr__(self, "q0_forms", {self.nq: ""})

    @property
    def plain(self) -> bool:
        """Whether it has coordinates a spring, a rotor or `loops.independent` can act on."""
        return self.quaternion is None and self.nv > 0


JOINTS: dict[str, JointKind] = {
    "revolute": JointKind(1, 1, ("axis",), drawn_axis=True, cut_rows=(
        (POSITION, 0, 0), (POSITION, 1, 0), (POSITION, 2, 0), (ALIGN, 2, 0), (ALIGN, 2, 1))),
    "prismatic": JointKind(1, 1, ("axis",), lengths=(0,), drawn_axis=True, cut_rows=(
        (POSITION, 0, 0), (POSITION, 1, 0), (ALIGN, 2, 0), (ALIGN, 2, 1), (ALIGN, 0, 1))),
    "cylindrical": JointKind(2, 2, ("axis",), lengths=(0,), drawn_axis=True, cut_rows=(
        (POSITION, 0, 0), (POSITION, 1, 0), (ALIGN, 2, 0), (ALIGN, 2, 1))),
    "universal": JointKind(2, 2, ("axis", "axis2"), drawn_axis=True, cut_axes=("axis", "axis2"), cut_rows=(
        (POSITION, 0, 0), (POSITION, 1, 0), (POSITION, 2, 0), (ALIGN, 2, 0))),
    "spherical": JointKind(4, 3, q0_forms={4: "quaternion w, x, y, z", 3: "rotation vector"}, quaternion=0,
                           cut_rows=((POSITION, 0, 0), (POSITION, 1, 0), (POSITION, 2, 0))),
    "planar": JointKind(3, 3, ("axis", "axis2"), lengths=(0, 1), cut_rows=(
        (POSITION, 2, 0), (ALIGN, 2, 0), (ALIGN, 2, 1))),
    "free": JointKind(7, 6, q0_forms={7: "position and quaternion", 6: "position and rotation vector"},
                      quaternion=3, lengths=(0, 1, 2)),
    "fixed": JointKind(0, 0, cut_rows=(
        (POSITION, 0, 0), (POSITION, 1, 0), (POSITION, 2, 0), (ALIGN, 2, 0), (ALIGN, 2, 1), (ALIGN, 0, 1))),
}
JOINT_TYPES: tuple[str, ...] = tuple(JOINTS)
CUT_TYPES: tuple[str, ...] = tuple(name for name, kind in JOINTS.items() if kind.cut_rows is not None)


@dataclass(frozen=True)
class SectionShape:
    """A cross-section shape: its dimensions (Section fields: lengths [m]; explicit: A [m^2],
    Iy, Iz, J [m^4]) in the order `properties` takes them, and the function of flex/sections.py
    that computes its constants."""

    fields: tuple[str, ...]
    properties: Callable[..., sec.Section]


SECTIONS: dict[str, SectionShape] = {
    "rectangle": SectionShape(("width", "height"), sec.rectangle),
    "circle": SectionShape(("diameter",), sec.circle),
    "tube": SectionShape(("outer_diameter", "thickness"), sec.tube),
    "box_tube": SectionShape(("width", "height", "thickness"), sec.box_tube),
    "explicit": SectionShape(("A", "Iy", "Iz", "J"), sec.explicit),
}


def section_properties(s: Section) -> sec.Section:
    """The constants (area, second moments, torsion constant) of a model file's cross-section."""
    shape = SECTIONS[s.shape]
    return shape.properties(*(getattr(s, name) for name in shape.fields))


@dataclass(frozen=True)
class ProfileKind:
    """A motion profile type: the Profile fields it takes, in the order of the kernel's
    parameter row (kernels/profiles.py; a table's points become spline rows instead, an input
    profile's row holds where its inputs start)."""

    fields: tuple[str, ...]
    spline: bool = False


PROFILES: dict[str, ProfileKind] = {
    "constant": ProfileKind(("value", "rate")),
    "ramp": ProfileKind(("q0", "q1", "t0", "t1")),
    "cycloidal": ProfileKind(("q0", "q1", "t0", "t1")),
    "sine": ProfileKind(("offset", "amplitude", "frequency", "phase")),
    "table": ProfileKind(("times", "values"), spline=True),
    "spin_up": ProfileKind(("omega_s", "t_s")),
    "input": ProfileKind(()),
}
PROFILE_TYPES: tuple[str, ...] = tuple(PROFILES)


@dataclass(frozen=True)
class MotorParameter:
    """A parameter of the geared DC motor (a `motor` drive's `motor` mapping; the DC motor block's
    parameter of the same name): its unit, meaning, default and bounds (None: unbounded)."""

    unit: str
    description: str
    default: float
    low: Optional[float]
    high: Optional[float]


# One law for the motor block and the plant's motor drive: the table comes from it.
MOTOR: dict[str, MotorParameter] = {name: MotorParameter(*rest) for name, *rest in motor_law.PARAMETERS}
