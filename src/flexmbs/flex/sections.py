"""Cross-section properties of straight beams.

Section axes: y and z span the cross-section, x is the beam axis.  Conventions:

* ``A``  area [m^2]
* ``Iy`` = ∫ z² dA [m^4], second moment for bending about y (deflection along z)
* ``Iz`` = ∫ y² dA [m^4], second moment for bending about z (deflection along y)
* ``J``  St-Venant torsion constant [m^4]

The polar moment used for the rotary inertia of torsion is ``Iy + Iz``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _require_positive(shape: str, name: str, value: float, unit: str) -> float:
    """value as a float after checking it is finite and > 0; shape and unit name it in the error."""
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{shape}: {name} {value} {unit} must be a finite number > 0")
    return value


@dataclass(frozen=True)
class Section:
    """Cross-section constants in the section axes (y, z).

    A: area [m^2]; Iy: ∫ z² dA [m^4]; Iz: ∫ y² dA [m^4]; J: St-Venant torsion constant [m^4].
    """

    A: float
    Iy: float
    Iz: float
    J: float

    def __post_init__(self) -> None:
        for name, unit in (("A", "m^2"), ("Iy", "m^4"), ("Iz", "m^4"), ("J", "m^4")):
            _require_positive("section", name, getattr(self, name), unit)

    @property
    def Ip(self) -> float:
        """Polar second moment Iy + Iz [m^4] (rotary inertia of torsion per unit density and length)."""
        return self.Iy + self.Iz


def explicit(A: float, Iy: float, Iz: float, J: float) -> Section:
    """Section from given constants: A [m^2], Iy = ∫z²dA, Iz = ∫y²dA, J torsion constant [m^4]."""
    return Section(float(A), float(Iy), float(Iz), float(J))


def _solid_rectangle_torsion(long_side: float, short_side: float) -> float:
    """Series approximation of the St-Venant constant of a solid rectangle [m^4].

    J = a b³ [1/3 − 0.21 (b/a)(1 − b⁴/(12 a⁴))] with a ≥ b the side lengths [m];
    within about 0.5 % of the exact series for all aspect ratios.
    """
    ratio = short_side / long_side
    return long_side * short_side**3 * (1.0 / 3.0 - 0.21 * ratio * (1.0 - ratio**4 / 12.0))


def rectangle(width: float, height: float) -> Section:
    """Solid rectangle: width [m] along y, height [m] along z."""
    b = _require_positive("rectangle", "width", width, "m")
    h = _require_positive("rectangle", "height", height, "m")
    return Section(
        A=b * h,
        Iy=b * h**3 / 12.0,
        Iz=h * b**3 / 12.0,
        J=_solid_rectangle_torsion(max(b, h), min(b, h)),
    )


def circle(diameter: float) -> Section:
    """Solid circle of the given diameter [m]; J equals the polar moment (exact)."""
    d = _require_positive("circle", "diameter", diameter, "m")
    second_moment = math.pi * d**4 / 64.0
    return Section(A=math.pi * d**2 / 4.0, Iy=second_moment, Iz=second_moment, J=2.0 * second_moment)


def tube(outer_diameter: float, thickness: float) -> Section:
    """Circular tube: outer_diameter [m], wall thickness [m] < outer_diameter / 2; J exact (polar moment)."""
    d_out = _require_positive("tube", "outer_diameter", outer_diameter, "m")
    t = _require_positive("tube", "thickness", thickness, "m")
    if t >= d_out / 2.0:
        raise ValueError(
            f"tube: thickness {t} m must be < half of outer_diameter {d_out} m (use circle() for a solid section)"
        )
    d_in = d_out - 2.0 * t
    second_moment = math.pi * (d_out**4 - d_in**4) / 64.0
    return Section(
        A=math.pi * (d_out**2 - d_in**2) / 4.0,
        Iy=second_moment,
        Iz=second_moment,
        J=2.0 * second_moment,
    )


def box_tube(width: float, height: float, thickness: float) -> Section:
    """Rectangular hollow section: outer width [m] along y, outer height [m] along z, wall thickness [m].

    A, Iy, Iz are exact (outer minus inner rectangle).  J uses Bredt's closed thin-wall formula on the
    wall mid-line, J = 4 Am² t / p with Am = (b − t)(h − t) the enclosed mid-line area and
    p = 2 (b − t + h − t) its perimeter.
    """
    b = _require_positive("box_tube", "width", width, "m")
    h = _require_positive("box_tube", "height", height, "m")
    t = _require_positive("box_tube", "thickness", thickness, "m")
    smaller_name, smaller = ("width", b) if b <= h else ("height", h)
    if t >= smaller / 2.0:
        raise ValueError(
            f"box_tube: thickness {t} m must be < half of {smaller_name} {smaller} m "
            f"(use rectangle() for a solid section)"
        )
    b_in, h_in = b - 2.0 * t, h - 2.0 * t
    enclosed = (b - t) * (h - t)
    perimeter = 2.0 * ((b - t) + (h - t))
    return Section(
        A=b * h - b_in * h_in,
        Iy=(b * h**3 - b_in * h_in**3) / 12.0,
        Iz=(h * b**3 - h_in * b_in**3) / 12.0,
        J=4.0 * enclosed**2 * t / perimeter,
    )
