"""An Assembly as an SSP 1.0 package (System Structure and Parameterization, a zip with
SystemStructure.ssd and the FMUs in resources/), and runs of that package by fmpy's SSP
runner and by libcosim (the Open Simulation Platform master, through libcosimpy).

The .ssd declares every element as a Component with its connectors (the connected variables
and the recorded ones), its parameter values inline (ssd:ParameterBindings with an
ssv:ParameterSet, which both fmpy and libcosim read), the connections and a DefaultExperiment that carries the communication step in the Open
Simulation Platform's annotation (libcosim runs the package without being given a step).
fmpy's runner cannot set String parameters: one left at its FMU's start value is omitted, any
other is refused (CosimError), so that the package runs the same system in every master.

Components may be FMI 2.0 or FMI 3.0 FMUs, mixed (SSP 1.0's ssc:Real connector stands for an
FMI 2.0 Real and an FMI 3.0 Float64). fmpy's SSP runner drives FMI 2.0 FMUs only (run_fmpy
refuses a package with an FMI 3.0 one, saying so); our master runs any package this module
writes (read_ssp, run_master).
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from xml.dom import minidom
from xml.etree.ElementTree import Element as XmlElement
from xml.etree.ElementTree import SubElement, fromstring, register_namespace, tostring

import numpy as np

from .cosim import Assembly, CosimError, Element, Master, split

NS = {"ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
      "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon",
      "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues",
      # the Open Simulation Platform's annotations: where libcosim reads the communication step
      "osp": "http://opensimulationplatform.com/SSP/OSPAnnotations"}
for _prefix, _uri in NS.items():
    register_namespace(_prefix, _uri)


def _q(tag: str) -> str:
    prefix, name = tag.split(":")
    return f"{{{NS[prefix]}}}{name}"


def _connectors(assembly: Assembly) -> dict[str, dict[str, str]]:
    """Per element: connector name -> kind (input or output), from the wiring and the records."""
    found: dict[str, dict[str, str]] = {e.name: {} for e in assembly.elements}
    for src, dst in assembly.connections:
        for path, kind in ((src, "output"), (dst, "input")):
            element, name = split(path)
            found[element][name] = kind
    for path in assembly.record:
        element, name = split(path)
        found[element].setdefault(name, "output")
    return found


def _check_strings(assembly: Assembly, element: Element) -> None:
    from fmpy import read_model_description

    strings = {k: v for k, v in element.parameters.items() if isinstance(v, str)}
    if not strings:
        return
    start = {v.name: v.start for v in read_model_description(str(element.fmu), validate=False).modelVariables}
    for name, value in strings.items():
        if value != start.get(name):
            raise CosimError(f"{assembly.name}: element {element.name}: String parameter {name} = {value!r} differs "
                             f"from the FMU's start value {start.get(name)!r}, and fmpy's SSP runner cannot set "
                             "String parameters; run this assembly with flexmbs.fmi.cosim.Master instead")


def system_structure(assembly: Assembly, sources: dict[str, str]) -> bytes:
    """SystemStructure.ssd of the assembly; sources: element name -> FMU path in the package."""
    root = XmlElement(_q("ssd:SystemStructureDescription"), {"name": assembly.name, "version": "1.0"})
    system = SubElement(root, _q("ssd:System"), {"name": assembly.name})
    elements = SubElement(system, _q("ssd:Elements"))
    for e in assembly.elements:
        comp = SubElement(elements, _q("ssd:Component"), {"name": e.name, "source": sources[e.name],
                                                           "type": "application/x-fmu-sharedlibrary"})
        conns = SubElement(comp, _q("ssd:Connectors"))
        for name, kind in _connectors(assembly)[e.name].items():
            SubElement(SubElement(conns, _q("ssd:Connector"), {"name": name, "kind": kind}), _q("ssc:Real"))
        numbers = {k: v for k, v in e.parameters.items() if not isinstance(v, str)}
        _check_strings(assembly, e)
        if numbers:
            binding = SubElement(SubElement(comp, _q("ssd:ParameterBindings")), _q("ssd:ParameterBinding"))
            pset = SubElement(SubElement(binding, _q("ssd:ParameterValues")), _q("ssv:ParameterSet"),
                              {"version": "1.0", "name": e.name})
            params = SubElement(pset, _q("ssv:Parameters"))
            for name, value in numbers.items():
                SubElement(SubElement(params, _q("ssv:Parameter"), {"name": name}), _q("ssv:Real"),
                           {"value": repr(float(value))})
    links = SubElement(system, _q("ssd:Connections"))
    for src, dst in assembly.connections:
        (se, sc), (de, dc) = split(src), split(dst)
        SubElement(links, _q("ssd:Connection"), {"startElement": se, "startConnector": sc, "endElement": de,
                                                 "endConnector": dc})
    experiment = SubElement(root, _q("ssd:DefaultExperiment"), {"startTime": "0.0",
                                                                 "stopTime": repr(float(assembly.stop_time))})
    # SSP 1.0 has no field for the communication step: libcosim reads it from this annotation
    # (and crashes without any step); fmpy ignores it
    note = SubElement(SubElement(experiment, _q("ssd:Annotations")), _q("ssc:Annotation"),
                      {"type": "com.opensimulationplatform"})
    SubElement(SubElement(note, _q("osp:Algorithm")), _q("osp:FixedStepAlgorithm"),
               {"baseStepSize": repr(float(assembly.step_size))})
    return minidom.parseString(tostring(root, "utf-8")).toprettyxml(indent="  ", encoding="UTF-8")


def write_ssp(assembly: Assembly, path: str | Path) -> Path:
    """Write the assembly as an .ssp file (each distinct FMU stored once in resources/)."""
    path = Path(path)
    sources: dict[str, str] = {}
    files: dict[str, Path] = {}
    for e in assembly.elements:
        fmu = Path(e.fmu)
        if not fmu.is_file():
            raise CosimError(f"{assembly.name}: element {e.name}: no FMU file {fmu}")
        sources[e.name] = f"resources/{fmu.name}"
        files[sources[e.name]] = fmu
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("SystemStructure.ssd", system_structure(assembly, sources))
        for arcname, fmu in files.items():
            z.write(fmu, arcname)
    return path


def fmi_versions(ssp: str | Path) -> dict[str, str]:
    """The fmiVersion of each FMU in the package, by its path in the package."""
    out = {}
    with zipfile.ZipFile(ssp) as z:
        for name in z.namelist():
            if name.endswith(".fmu"):
                with tempfile.TemporaryDirectory(prefix="flexmbs_ssp_") as tmp:
                    fmu = Path(tmp) / "x.fmu"
                    fmu.write_bytes(z.read(name))
                    with zipfile.ZipFile(fmu) as f:
                        out[name] = fromstring(f.read("modelDescription.xml")).get("fmiVersion", "")
    return out


def read_ssp(ssp: str | Path, folder: str | Path) -> Assembly:
    """The Assembly of a package that write_ssp wrote, its FMUs extracted into `folder`: the
    components with their Real parameter values, the connections, the default experiment's stop
    time and the communication step of its annotation; `record` is every output connector."""
    folder = Path(folder)
    with zipfile.ZipFile(ssp) as z:
        z.extractall(folder)
    root = fromstring((folder / "SystemStructure.ssd").read_bytes())
    system = root.find(_q("ssd:System"))
    elements, record = [], []
    for comp in system.find(_q("ssd:Elements")).findall(_q("ssd:Component")):
        name = comp.get("name")
        params = {p.get("name"): float(p.find(_q("ssv:Real")).get("value"))
                  for p in comp.iter(_q("ssv:Parameter"))}
        elements.append(Element(name, folder / comp.get("source"), params))
        record += [f"{name}.{c.get('name')}" for c in comp.iter(_q("ssd:Connector")) if c.get("kind") == "output"]
    links = [(f"{c.get('startElement')}.{c.get('startConnector')}", f"{c.get('endElement')}.{c.get('endConnector')}")
             for c in system.find(_q("ssd:Connections")).findall(_q("ssd:Connection"))]
    experiment = root.find(_q("ssd:DefaultExperiment"))
    step = next(experiment.iter(_q("osp:FixedStepAlgorithm"))).get("baseStepSize")
    return Assembly(system.get("name"), elements, links, record, float(experiment.get("stopTime")), float(step))


def run_master(ssp: str | Path, stop_time: float, step_size: float) -> dict[str, np.ndarray]:
    """Run the package with our master (cosim.Master, Jacobi, as fmpy's and libcosim's), its
    FMUs FMI 2.0 or FMI 3.0. Returns `time` and every output connector at every communication
    point, the start included."""
    with tempfile.TemporaryDirectory(prefix="flexmbs_ssp_") as tmp:
        with Master(read_ssp(ssp, tmp)) as m:
            m.initialize()
            return m.run(stop_time, step_size)


def run_fmpy(ssp: str | Path, stop_time: float, step_size: float) -> dict[str, np.ndarray]:
    """Run the package with fmpy.ssp.simulate_ssp, applying the components' parameter values.
    Returns `time` and every connector `<element>.<variable>`, at the end of each step (fmpy
    labels a row with the start of its step; the times here are shifted to where the values
    belong). fmpy's runner drives FMI 2.0 FMUs only: a package with an FMI 3.0 one is refused
    (CosimError; run_master runs it)."""
    from fmpy.ssp.simulation import simulate_ssp
    from fmpy.ssp.ssd import ParameterSet, find_components, read_ssd

    newer = sorted(name for name, v in fmi_versions(ssp).items() if not v.startswith("2."))
    if newer:
        raise CosimError(f"{ssp}: fmpy's SSP runner drives FMI 2.0 FMUs only, and {', '.join(newer)} is not one; "
                         "run the package with flexmbs.fmi.ssp.run_master")
    ssd = read_ssd(str(ssp))        # also validates the .ssd against the SSP schema
    combined = ParameterSet(name="all")
    for comp in find_components(ssd.system):
        for binding in comp.parameterBindings:
            for pset in binding.parameterValues:
                for p in pset.parameters:
                    p.name = f"{comp.name}.{p.name}"
                    combined.parameters.append(p)
    rows = simulate_ssp(str(ssp), stop_time=stop_time, step_size=step_size, parameter_set=combined)
    # fmpy advances time by repeated addition and may take one step past stop_time
    keep = rows["time"] + step_size <= stop_time + 0.5 * step_size
    out = {"time": rows["time"][keep] + step_size}
    for name in rows.dtype.names[1:]:
        out[name] = np.asarray(rows[name][keep], dtype=float)
    return out


def quiet_libcosim() -> None:
    """libcosim logs every FMI Library call at debug level by default: keep warnings only."""
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level

    log_output_level(CosimLogLevel.WARNING)


def run_libcosim(ssp: str | Path, stop_time: float, step_size: float, record: list[str]) -> dict[str, np.ndarray]:
    """Run the package with libcosim's fixed-step algorithm (libcosimpy). Returns `time` and
    the recorded `<element>.<variable>` at the end of every step."""
    from libcosimpy.CosimEnums import CosimVariableType
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimObserver import CosimObserver

    ns = int(round(step_size * 1e9))
    n = int(round(stop_time / step_size))
    with tempfile.TemporaryDirectory(prefix="flexmbs_ssp_") as tmp:
        # libcosim reads an unpacked package
        with zipfile.ZipFile(ssp) as z:
            z.extractall(tmp)
        execution = CosimExecution.from_ssp_file(tmp, step_size=ns)
        observer = CosimObserver.create_time_series(buffer_size=n + 8)
        execution.add_observer(observer)
        refs = []
        for path in record:
            element, name = split(path)
            index = execution.slave_index_from_instance_name(element)
            by_name = {v.name.decode(): v.reference for v in execution.slave_variables(index)}
            if name not in by_name:
                raise CosimError(f"libcosim: element {element} has no variable {name!r}")
            observer.start_time_series(index, by_name[name], CosimVariableType.REAL)
            refs.append((index, by_name[name]))
        execution.simulate_until(n * ns)
        t_end = execution.status().current_time * 1e-9
        if abs(t_end - n * step_size) > 1e-9:
            raise CosimError(f"libcosim stopped at t = {t_end} s instead of {n * step_size} s")
        out = np.empty((n, len(refs)))
        for j, (index, vr) in enumerate(refs):
            _, steps, values = observer.time_series_real_samples(index, vr, from_step=1, sample_count=n)
            if len(values) != n or steps[0] != 1:
                raise CosimError(f"libcosim returned {len(values)} samples of {record[j]} from step {steps[0]}, "
                                 f"expected {n} from step 1")
            out[:, j] = values
        del execution
    return {"time": step_size * np.arange(1, n + 1), **{p: out[:, j] for j, p in enumerate(record)}}
