"""Checks of materials and cross-sections (of beams and elastic rods)."""

from __future__ import annotations

from ..elements import Material, Section
from ..errors import Loc, show
from ..tables import SECTIONS
from .base import Checks, is_real, num


class MaterialChecks(Checks):
    """Materials and cross-sections."""

    def material(self, loc: Loc, mat: Material) -> None:
        self.numbers(loc, mat, ("E", "rho"), "positive")
        if mat.G is not None and mat.nu is not None:
            self.add(loc + ("nu",), "give either G or nu, not both")
        elif mat.G is not None:
            self.number(loc + ("G",), mat.G, "positive")
        elif mat.nu is not None and not (is_real(mat.nu) and -1.0 < mat.nu < 0.5):
            self.add(loc + ("nu",), f"expected Poisson's ratio in (-1, 0.5), got {show(mat.nu)}")

    def section(self, loc: Loc, s: Section) -> None:
        if not self.choice(loc + ("shape",), s.shape, SECTIONS):
            return
        dims = SECTIONS[s.shape].fields
        self.unused(loc, s, dims, f"a {s.shape} section")
        ok = all([self.number(loc + (name,), getattr(s, name), "positive") for name in dims])
        if ok and s.shape in ("tube", "box_tube"):
            outer = s.outer_diameter if s.shape == "tube" else min(s.width, s.height)
            side = "outer_diameter" if s.shape == "tube" else "min(width, height)"
            if s.thickness >= outer / 2:
                self.add(loc + ("thickness",), f"thickness {num(s.thickness)} is too large: must "
                                               f"be less than {side}/2 = {num(outer / 2)}")
