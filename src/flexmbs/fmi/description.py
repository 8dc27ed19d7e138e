"""modelDescription.xml and documentation/_main.html of a flexmbs FMU, written from its variables.

pythonfmu's own description has no units, no dependencies and no InitialUnknowns (so it fails
`fmpy validate` and makes every master assume direct feedthrough); this one is complete.
"""

from __future__ import annotations

import datetime
import html
import math
import uuid
from typing import Optional
from xml.dom import minidom
from xml.etree.ElementTree import Element, SubElement, tostring

from flexmbs_fmu.variables import Variable

# unit -> (quantity, exponents of kg, m, s, A, rad, display units {name: factor})
_RPM = 60.0 / (2.0 * math.pi)
_DEG = 180.0 / math.pi
UNITS: dict[str, tuple[str, dict[str, int], dict[str, float]]] = {
    "rad": ("Angle", {"rad": 1}, {"deg": _DEG}),
    "rad/s": ("AngularVelocity", {"rad": 1, "s": -1}, {"rpm": _RPM, "deg/s": _DEG}),
    "rad/s2": ("AngularAcceleration", {"rad": 1, "s": -2}, {"deg/s2": _DEG}),
    "m": ("Length", {"m": 1}, {"mm": 1e3}),
    "m/s": ("Velocity", {"m": 1, "s": -1}, {}),
    "m/s2": ("Acceleration", {"m": 1, "s": -2}, {}),
    "N": ("Force", {"kg": 1, "m": 1, "s": -2}, {}),
    "N.m": ("Torque", {"kg": 1, "m": 2, "s": -2}, {}),
    "J": ("Energy", {"kg": 1, "m": 2, "s": -2}, {}),
    "kg": ("Mass", {"kg": 1}, {}),
    "kg.m2": ("MomentOfInertia", {"kg": 1, "m": 2}, {}),
    "Pa": ("Pressure", {"kg": 1, "m": -1, "s": -2}, {"GPa": 1e-9}),
    "kg/m3": ("Density", {"kg": 1, "m": -3}, {}),
    "m2": ("Area", {"m": 2}, {}),
    "m4": ("SecondMomentOfArea", {"m": 4}, {}),
    "s": ("Time", {"s": 1}, {"ms": 1e3}),
    "Hz": ("Frequency", {"s": -1}, {}),
    "N.m/rad": ("RotationalSpringConstant", {"kg": 1, "m": 2, "s": -2, "rad": -1}, {}),
    "N.m.s/rad": ("RotationalDampingConstant", {"kg": 1, "m": 2, "s": -1, "rad": -1}, {}),
    "N/m": ("TranslationalSpringConstant", {"kg": 1, "s": -2}, {}),
    "N.s/m": ("TranslationalDampingConstant", {"kg": 1, "s": -1}, {}),
    "V": ("Voltage", {"kg": 1, "m": 2, "s": -3, "A": -1}, {}),
    "A": ("Current", {"A": 1}, {}),
    "ohm": ("Resistance", {"kg": 1, "m": 2, "s": -3, "A": -2}, {}),
    "H": ("Inductance", {"kg": 1, "m": 2, "s": -2, "A": -2}, {"mH": 1e3}),
    "N.m/A": ("TorqueConstant", {"kg": 1, "m": 2, "s": -2, "A": -1}, {}),
    "V/rad": ("ProportionalGain", {"kg": 1, "m": 2, "s": -3, "A": -1, "rad": -1}, {}),
    "V/(rad.s)": ("IntegralGain", {"kg": 1, "m": 2, "s": -4, "A": -1, "rad": -1}, {}),
    "V.s/rad": ("DerivativeGain", {"kg": 1, "m": 2, "s": -2, "A": -1, "rad": -1}, {}),
    "1": ("DimensionlessRatio", {}, {}),
}
# the display unit a tool should show by default
DISPLAY = {"rad": "deg", "rad/s": "rpm", "rad/s2": "deg/s2"}
# causalities whose values the FMU computes (initial="calculated", listed in InitialUnknowns)
CALCULATED = ("output", "calculatedParameter")


def _num(value: float) -> str:
    return repr(float(value))


def guid(model_name: str, interface_digest: str, model_bytes: bytes) -> str:
    """The same model file and interface give the same GUID on every build."""
    return "{" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"flexmbs:{model_name}:{interface_digest}:"
                                + uuid.uuid5(uuid.NAMESPACE_OID, model_bytes.hex()).hex)) + "}"


def model_description(variables: list[Variable], *, model_identifier: str, model_name: str, guid_: str,
                      description: str, author: str, version: str, log_categories: dict[str, str],
                      start_time: float, stop_time: float, step_size: float,
                      tolerance: Optional[float]) -> bytes:
    """The complete modelDescription.xml (UTF-8)."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    root = Element("fmiModelDescription", {
        "fmiVersion": "2.0", "modelName": model_name, "guid": guid_, "description": description,
        "author": author, "version": version, "generationTool": "flexmbs build_fmu.py (pythonfmu 0.7)",
        "generationDateAndTime": now, "variableNamingConvention": "structured",
        "numberOfEventIndicators": "0"})
    # the derivatives every flexmbs FMU gives (flexmbs_fmu.base: fmi_directional,
    # fmi_input_derivatives, fmi_output_derivatives): first order, in and out
    SubElement(root, "CoSimulation", {
        "modelIdentifier": model_identifier, "needsExecutionTool": "true",
        "canHandleVariableCommunicationStepSize": "true", "canInterpolateInputs": "true",
        "maxOutputDerivativeOrder": "1", "canRunAsynchronuously": "false",
        "canBeInstantiatedOnlyOncePerProcess": "false", "canNotUseMemoryManagementFunctions": "true",
        "canGetAndSetFMUstate": "true", "canSerializeFMUstate": "true",
        "providesDirectionalDerivative": "true"})
    used = sorted({v.unit for v in variables if v.type == "Real" and v.unit},
                  key=lambda u: list(UNITS).index(u) if u in UNITS else len(UNITS))
    unknown = [u for u in used if u not in UNITS]
    if unknown:
        raise ValueError(f"no unit definition for {', '.join(unknown)}; known units: {', '.join(UNITS)}")
    units = SubElement(root, "UnitDefinitions")
    for u in used:
        _, base, displays = UNITS[u]
        unit = SubElement(units, "Unit", {"name": u})
        SubElement(unit, "BaseUnit", {k: str(e) for k, e in base.items()})
        for name, factor in displays.items():
            SubElement(unit, "DisplayUnit", {"name": name, "factor": _num(factor)})
    types = SubElement(root, "TypeDefinitions")
    for u in used:
        attrs = {"quantity": UNITS[u][0], "unit": u}
        if u in DISPLAY:
            attrs["displayUnit"] = DISPLAY[u]
        SubElement(SubElement(types, "SimpleType", {"name": UNITS[u][0]}), "Real", attrs)
    cats = SubElement(root, "LogCategories")
    for name, text in log_categories.items():
        SubElement(cats, "Category", {"name": name, "description": text})
    experiment = {"startTime": _num(start_time), "stopTime": _num(stop_time), "stepSize": _num(step_size)}
    if tolerance is not None:
        experiment["tolerance"] = _num(tolerance)
    SubElement(root, "DefaultExperiment", experiment)

    mv = SubElement(root, "ModelVariables")
    index = {v.name: i + 1 for i, v in enumerate(variables)}
    for vr, v in enumerate(variables):
        attrs = {"name": v.name, "valueReference": str(vr), "description": v.description,
                 "causality": v.causality, "variability": v.variability}
        if v.causality in CALCULATED:
            attrs["initial"] = "calculated"
        sv = SubElement(mv, "ScalarVariable", attrs)
        if v.type == "String":
            SubElement(sv, "String", {"start": str(v.start)})
            continue
        real: dict[str, str] = {}
        if v.unit:
            real = {"declaredType": UNITS[v.unit][0], "unit": v.unit}
            if v.unit in DISPLAY:
                real["displayUnit"] = DISPLAY[v.unit]
        if v.start is not None:
            real["start"] = _num(v.start)
        if v.min is not None:
            real["min"] = _num(v.min)
        if v.max is not None:
            real["max"] = _num(v.max)
        SubElement(sv, "Real", real)

    ms = SubElement(root, "ModelStructure")
    outputs = SubElement(ms, "Outputs")
    for v in variables:
        if v.causality == "output":
            deps = " ".join(str(index[d]) for d in v.depends)
            SubElement(outputs, "Unknown", {"index": str(index[v.name]), "dependencies": deps})
    initial = SubElement(ms, "InitialUnknowns")
    for v in variables:
        if v.causality in CALCULATED:
            # no dependencies attribute: at initialisation an output may depend on every
            # input and parameter (the initial joint states, gravity, masses)
            SubElement(initial, "Unknown", {"index": str(index[v.name])})
    text = minidom.parseString(tostring(root, "utf-8")).toprettyxml(indent="  ", encoding="UTF-8")
    return text


def documentation(variables: list[Variable], *, title: str, description: str, about: str,
                  notes: list[str]) -> str:
    """documentation/_main.html: what the FMU is (`about`, HTML), how to run it (`notes`, HTML
    list items) and every variable with unit and meaning."""
    rows = []
    for vr, v in enumerate(variables):
        start = "" if v.start is None else html.escape(str(v.start))
        rng = "" if v.min is None and v.max is None else f"[{'' if v.min is None else v.min}, {'' if v.max is None else v.max}]"
        deps = ", ".join(v.depends) if v.causality == "output" else ""
        rows.append(f"<tr><td><code>{html.escape(v.name)}</code></td><td>{vr}</td><td>{v.causality}</td>"
                    f"<td>{html.escape(v.unit)}</td><td>{start}</td><td>{rng}</td>"
                    f"<td>{html.escape(v.description)}</td><td>{html.escape(deps)}</td></tr>")
    items = "\n".join(f"<li>{n}</li>" for n in notes)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:70em}} td,th{{padding:2px 8px;text-align:left;vertical-align:top}}
tr:nth-child(even){{background:#f3f3f3}}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{html.escape(description)}</p>
<p>{about}</p>
<h2>Running it</h2>
<ul>
{items}
</ul>
<h2>Variables</h2>
<table><tr><th>name</th><th>value ref.</th><th>causality</th><th>unit</th><th>start</th><th>range</th><th>meaning</th><th>direct feedthrough from</th></tr>
{chr(10).join(rows)}
</table></body></html>
"""
