"""Checks of materials and cross-sections (of beams and elastic rods)."""

from __future__ import annotations

from ..elements import Material, Section
from ..errors import Loc, show
from ..tables import SECTIONS
from .base import Checks, is_real, num


# The moduli of solids [Pa], soft rubber to diamond: a modulus outside is most likely in other
# units (MPa or GPa) and is warned of (errors.PlausibilityWarning), not refused
MODULI = (1e6, 1.2e12)
# The densities of structural solids in g/cm^3 (wood 0.5 to osmium 22.6): a density [kg/m^3] in
# this range, or above the densest solid, is most likely in other units and warned of likewise
# (a scaled benchmark such as Verlinden's rho = 7.8e-3 kg/m^3 is below it and not)
DENSITIES_G_CM3 = (0.5, 25.0)
DENSEST = 2.3e4


class MaterialChecks(Checks):
    """Materials and cross-sections."""

    def material(self, loc: Loc, mat: Material) -> None:
        if self.numbers(loc, mat, ("E", "rho"), "positive"):
            self.modulus(loc + ("E",), "E", mat.E)
            if DENSITIES_G_CM3[0] <= mat.rho <= DENSITIES_G_CM3[1] or mat.rho > DENSEST:
                than = "lighter than wood" if mat.rho < DENSEST else "heavier than osmium (22600 kg/m^3)"
                self.report.note(loc + ("rho",), f"rho = {num(mat.rho)} kg/m^3 would be {than}, as a density in "
                                                 "g/cm^3 reads (aluminium: 2.7 g/cm^3 = 2700 kg/m^3); give it "
                                                 "in kg/m^3")
        if mat.G is not None and mat.nu is not None:
            self.add(loc + ("nu",), "give either G or nu, not both")
        elif mat.G is not None:
            if self.number(loc + ("G",), mat.G, "positive"):
                self.modulus(loc + ("G",), "G", mat.G)
        elif mat.nu is not None and not (is_real(mat.nu) and -1.0 < mat.nu < 0.5):
            self.add(loc + ("nu",), f"expected Poisson's ratio in (-1, 0.5), got {show(mat.nu)}")

    def modulus(self, loc: Loc, name: str, value: float) -> None:
        """Note an elastic modulus [Pa] outside MODULI."""
        if not MODULI[0] <= value <= MODULI[1]:
            self.report.note(loc, f"{name} = {num(value)} Pa is outside the moduli of solids ({num(MODULI[0])} Pa, "
                                  f"soft rubber, to {num(MODULI[1])} Pa, diamond; aluminium's E 6.9e10); if it is in "
                                  "MPa or GPa, give it in Pa")

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
