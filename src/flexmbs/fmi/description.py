"""modelDescription.xml (FMI 2.0 or 3.0) and documentation/_main.html of a flexmbs FMU, written
from its variables.

pythonfmu's own description has no units, no dependencies and no InitialUnknowns (so it fails
`fmpy validate` and makes every master assume direct feedthrough); this one is complete. The
FMI 3.0 description (model_description_3) declares the same variables with the same value
references, names, units and dependencies as Float64 and String variables, plus the independent
variable `time` that FMI 3.0 requires, after them.
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


def guid(model_name: str, interface_digest: str, model_bytes: bytes, fmi_version: int = 2) -> str:
    """The same model file and interface give the same GUID (FMI 2.0) or instantiation token
    (FMI 3.0) on every build; the two versions' differ, so that the binary of one never runs
    with the description of the other."""
    version = "" if fmi_version == 2 else f":fmi{fmi_version}"
    return "{" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"flexmbs:{model_name}:{interface_digest}:"
                                + uuid.uuid5(uuid.NAMESPACE_OID, model_bytes.hex()).hex + version)) + "}"


def model_description(variables: list[Variable], *, model_identifier: str, model_name: str, guid_: str,
                      description: str, author: str, version: str, log_categories: dict[str, str],
                      start_time: float, stop_time: float, step_size: float,
                      tolerance: Optional[float]) -> bytes:
    """The complete modelDescription.xml (UTF-8)."""
    root = _root({"fmiVersion": "2.0", "modelName": model_name, "guid": guid_}, description, author, version,
                 "flexmbs build_fmu.py (pythonfmu 0.7)")
    root.set("numberOfEventIndicators", "0")
    # the derivatives every flexmbs FMU gives (flexmbs_fmu.base: fmi_directional,
    # fmi_input_derivatives, fmi_output_derivatives): first order, in and out
    SubElement(root, "CoSimulation", {
        "modelIdentifier": model_identifier, "needsExecutionTool": "true",
        "canHandleVariableCommunicationStepSize": "true", "canInterpolateInputs": "true",
        "maxOutputDerivativeOrder": "1", "canRunAsynchronuously": "false",
        "canBeInstantiatedOnlyOncePerProcess": "false", "canNotUseMemoryManagementFunctions": "true",
        "canGetAndSetFMUstate": "true", "canSerializeFMUstate": "true",
        "providesDirectionalDerivative": "true"})
    used = _unit_definitions(root, variables)
    types = SubElement(root, "TypeDefinitions")
    for u in used:
        SubElement(SubElement(types, "SimpleType", {"name": UNITS[u][0]}), "Real", _unit_attributes(u))
    _categories_and_experiment(root, log_categories, start_time, stop_time, step_size, tolerance)

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
        SubElement(sv, "Real", _real_attributes(v))

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
    return _pretty(root)


def _root(identity: dict[str, str], description: str, author: str, version: str, tool: str) -> Element:
    """The fmiModelDescription element: `identity` (version, model name, GUID or token) first."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return Element("fmiModelDescription", {
        **identity, "description": description, "author": author, "version": version, "generationTool": tool,
        "generationDateAndTime": now, "variableNamingConvention": "structured"})


def _pretty(root: Element) -> bytes:
    return minidom.parseString(tostring(root, "utf-8")).toprettyxml(indent="  ", encoding="UTF-8")


def _unit_attributes(unit: str) -> dict[str, str]:
    """quantity, unit and displayUnit of a type definition of `unit`."""
    attrs = {"quantity": UNITS[unit][0], "unit": unit}
    if unit in DISPLAY:
        attrs["displayUnit"] = DISPLAY[unit]
    return attrs


def _unit_definitions(root: Element, variables: list[Variable], extra: tuple[str, ...] = ()) -> list[str]:
    """UnitDefinitions of the units the Real variables use and of `extra` (in the order of
    UNITS); returns them. Raises ValueError for a unit without a definition."""
    used = sorted({v.unit for v in variables if v.type == "Real" and v.unit} | set(extra),
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
    return used


def _categories_and_experiment(root: Element, log_categories: dict[str, str], start_time: float,
                               stop_time: float, step_size: float, tolerance: Optional[float]) -> None:
    """LogCategories and DefaultExperiment (times [s]), alike in both FMI versions."""
    cats = SubElement(root, "LogCategories")
    for name, text in log_categories.items():
        SubElement(cats, "Category", {"name": name, "description": text})
    experiment = {"startTime": _num(start_time), "stopTime": _num(stop_time), "stepSize": _num(step_size)}
    if tolerance is not None:
        experiment["tolerance"] = _num(tolerance)
    SubElement(root, "DefaultExperiment", experiment)


def _real_attributes(v: Variable) -> dict[str, str]:
    """declaredType, unit, displayUnit, start, min and max of a Real (Float64) variable."""
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
    return real


def model_description_3(variables: list[Variable], *, model_identifier: str, model_name: str, token: str,
                        description: str, author: str, version: str, log_categories: dict[str, str],
                        start_time: float, stop_time: float, step_size: float,
                        tolerance: Optional[float]) -> bytes:
    """The FMI 3.0 co-simulation modelDescription.xml (UTF-8): Modelica Association, "Functional
    Mock-up Interface Specification 3.0", 2022, section 2.4 (the description), 4.4 (the
    co-simulation attributes). The variables keep their FMI 2.0 value references; the
    independent variable `time` [s] follows them (section 2.4.7.4: exactly one independent
    variable). Raises ValueError for a variable type FMI 3.0 would name otherwise (only Real and
    String are written)."""
    others = sorted({v.type for v in variables} - {"Real", "String"})
    if others:
        raise ValueError(f"the FMI 3.0 description writes Real and String variables only, not {', '.join(others)}")
    root = _root({"fmiVersion": "3.0", "modelName": model_name, "instantiationToken": token}, description, author,
                 version, "flexmbs build_fmu.py")
    # what flexmbs_fmi3.c offers: states and their serialisation, directional and adjoint
    # derivatives, first output derivatives; no Event Mode, no early return, no intermediate update
    SubElement(root, "CoSimulation", {
        "modelIdentifier": model_identifier, "needsExecutionTool": "true",
        "canBeInstantiatedOnlyOncePerProcess": "false", "canGetAndSetFMUState": "true",
        "canSerializeFMUState": "true", "providesDirectionalDerivatives": "true",
        "providesAdjointDerivatives": "true", "providesPerElementDependencies": "false",
        "canHandleVariableCommunicationStepSize": "true", "maxOutputDerivativeOrder": "1",
        "providesIntermediateUpdate": "false", "mightReturnEarlyFromDoStep": "false",
        "canReturnEarlyAfterIntermediateUpdate": "false", "hasEventMode": "false",
        "providesEvaluateDiscreteStates": "false"})
    used = _unit_definitions(root, variables, extra=("s",))   # time's unit
    types = SubElement(root, "TypeDefinitions")
    for u in used:
        SubElement(types, "Float64Type", {"name": UNITS[u][0], **_unit_attributes(u)})
    _categories_and_experiment(root, log_categories, start_time, stop_time, step_size, tolerance)

    mv = SubElement(root, "ModelVariables")
    for vr, v in enumerate(variables):
        attrs = {"name": v.name, "valueReference": str(vr), "description": v.description,
                 "causality": v.causality, "variability": v.variability}
        if v.causality in CALCULATED:
            attrs["initial"] = "calculated"
        if v.type == "String":
            SubElement(SubElement(mv, "String", attrs), "Start", {"value": str(v.start)})
        else:
            SubElement(mv, "Float64", {**attrs, **_real_attributes(v)})
    SubElement(mv, "Float64", {"name": "time", "valueReference": str(len(variables)),
                               "description": "simulation time", "causality": "independent",
                               "variability": "continuous", "unit": "s"})

    ms = SubElement(root, "ModelStructure")
    vrs = {v.name: vr for vr, v in enumerate(variables)}
    for vr, v in enumerate(variables):
        if v.causality == "output":
            SubElement(ms, "Output", {"valueReference": str(vr),
                                      "dependencies": " ".join(str(vrs[d]) for d in v.depends)})
    for vr, v in enumerate(variables):
        if v.causality in CALCULATED:
            # no dependencies attribute: at initialisation an output may depend on every input and parameter
            SubElement(ms, "InitialUnknown", {"valueReference": str(vr)})
    return _pretty(root)


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
