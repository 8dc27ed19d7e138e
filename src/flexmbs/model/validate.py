"""Checks of a Model, built in Python or loaded from YAML.

Every problem is reported, each naming the entry and field, what is wrong and what was
expected (with the valid choices where there is a finite set), and raised together as one
ModelError. Locations follow the YAML layout (see errors.py). The checks of each kind of entry
live in model/checks/: bodies and markers, materials and sections, joints with their drives,
profiles, loops and tree, loads and sensors, the solver and export settings.
"""

from __future__ import annotations

from .checks.bodies import BodyChecks
from .checks.joints import JointChecks
from .checks.loads import LoadChecks
from .checks.settings import SettingsChecks
from .elements import Body, Export, Joint, Load, Loops, Model, Sensor, Solver
from .errors import Report

def validate(model: Model) -> None:
    """Raise ModelError listing every problem of `model`; return None if it is valid, with a
    PlausibilityWarning for each value most likely given in other units."""
    report = Report(model.source)
    check_model(model, report)
    names = {**vars(model), "ground": {"markers": model.ground_markers}}
    report.raise_if_any(names=names)
    report.warn_notes(names, noted(model))


def noted(model: Model) -> set[tuple[str, str]]:
    """The plausibility notes (path, message) already warned of for this Model object, kept on
    it beside its fields: a model loaded from a file warns at its load, not again when compiled;
    a copy (a plant's with other parameter values) keeps them and warns of a value that changed."""
    return model.__dict__.setdefault("_noted", set())


def check_model(model: Model, report: Report) -> None:
    """Add every problem of `model` to `report` (the loader shares its report)."""
    _Checker(model, report).run()


class _Checker(BodyChecks, JointChecks, LoadChecks, SettingsChecks):
    """One pass over a model, entry by entry, in the order of the model file."""

    def run(self) -> None:
        m = self.model
        self.vector(("gravity",), m.gravity)
        self.markers_of(("ground", "markers"), m.ground_markers, None)
        bodies = self.entries(("bodies",), m.bodies, Body)
        self.names(("bodies",), bodies, "body")
        for i, body in bodies:
            self.body(("bodies", i), body)
        joints = self.entries(("joints",), m.joints, Joint)
        self.names(("joints",), joints, "joint")
        for i, joint in joints:
            self.joint(("joints", i), joint)
        loads = self.entries(("loads",), m.loads, Load)
        self.names(("loads",), loads, "load", required=False)
        for i, load in loads:
            self.load(("loads", i), load)
        sensors = self.entries(("sensors",), m.sensors, Sensor)
        self.names(("sensors",), sensors, "sensor")
        for i, sensor in sensors:
            self.sensor(("sensors", i), sensor)
        if self.instance(("solver",), m.solver, Solver, "solver settings"):
            self.solver(("solver",), m.solver)
        self.tree(bodies, joints)
        if self.instance(("loops",), m.loops, Loops, "loops (cuts, independent)"):
            self.loops(("loops",), m.loops, joints)
        # parameter paths are resolved against the rest of the model, so only once it is sound
        if self.instance(("fmu",), m.fmu, Export, "FMU export settings"):
            self.export(("fmu",), m.fmu)
