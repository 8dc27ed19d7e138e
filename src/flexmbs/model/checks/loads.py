"""Checks of loads (point forces, spring-dampers, elastic rods) and sensors."""

from __future__ import annotations

from ..elements import Body, Load, Material, Section, Sensor
from ..errors import Loc, show
from .base import accepts, choices, num
from .materials import MaterialChecks

_LOAD_FIELDS = {"point_force": ("body", "marker", "force", "torque", "frame", "input"),
                "spring_damper": ("marker_a", "marker_b", "stiffness", "damping", "rest_length"),
                "elastic_rod": ("marker_a", "marker_b", "length", "material", "section", "damping")}
_SENSOR_FIELDS = {"marker": ("body", "marker"), "strain_gauge": ("body", "x", "y", "z", "direction"),
                  "section_force": ("body", "x")}


class LoadChecks(MaterialChecks):
    """Loads and sensors."""

    def load(self, loc: Loc, load: Load) -> None:
        if not self.choice(loc + ("type",), load.type, _LOAD_FIELDS):
            return
        self.unused(loc, load, _LOAD_FIELDS[load.type], f"a {load.type} load")
        if load.type == "point_force":
            self.body_marker_ref(loc, load.body, load.marker)
            self.vector(loc + ("force",), load.force)
            self.vector(loc + ("torque",), load.torque)
            self.choice(loc + ("frame",), load.frame, choices(Load, "frame"))
            if load.input is True and not load.name:
                self.add(loc + ("name",), "a load with input: true needs a name (its inputs are "
                                          "<name>.force[1..3] and <name>.torque[1..3])")
            return
        for name in ("marker_a", "marker_b"):
            ref = getattr(load, name)
            body, _, marker = ref.partition(".") if isinstance(ref, str) else ("", "", "")
            if not (body and marker):
                self.add(loc + (name,), f"expected 'body.marker', got {show(ref)}")
            elif self.body_ref(loc + (name,), body):
                self.marker_ref(loc + (name,), body, marker)
        if load.type == "spring_damper":
            self.numbers(loc, load, ("stiffness", "damping", "rest_length"), "non-negative")
            return
        self.number(loc + ("length",), load.length, "positive")
        self.number(loc + ("damping",), load.damping, "non-negative")
        if self.instance(loc + ("material",), load.material, Material, "an elastic rod needs a material {E, rho}"):
            self.material(loc + ("material",), load.material)
        if self.instance(loc + ("section",), load.section, Section, "an elastic rod needs a cross-section"):
            self.section(loc + ("section",), load.section)

    def sensor(self, loc: Loc, s: Sensor) -> None:
        if not self.choice(loc + ("type",), s.type, _SENSOR_FIELDS):
            return
        self.unused(loc, s, _SENSOR_FIELDS[s.type], f"a {s.type} sensor")
        if s.type == "marker":
            self.body_marker_ref(loc, s.body, s.marker)
            return
        if not self.body_ref(loc + ("body",), s.body):
            return
        body = next((b for b in self.model.bodies if b.name == s.body), None)
        if body is not None and body.type not in choices(Body, "type"):
            return   # a misspelt body type is reported at the body
        if body is None or body.type != "beam":
            what = "the fixed ground" if body is None else f"a {body.type} body"
            self.add(loc + ("body",), f"a {s.type} sensor reads a beam's section; {s.body!r} is {what} "
                                      "(use a marker sensor there)")
            return
        if self.number(loc + ("x",), s.x) and accepts(body.length, "positive") \
                and not -1e-12 * body.length <= s.x <= body.length * (1 + 1e-12):
            self.add(loc + ("x",), f"station x = {num(s.x)} m must lie on the beam, in [0, length "
                                   f"{num(body.length)} m]")
        if s.type == "strain_gauge":
            self.numbers(loc, s, ("y", "z"))
            self.unit_axis(loc + ("direction",), s.direction)
