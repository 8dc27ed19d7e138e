"""Model file -> validated FMI 2.0 or FMI 3.0 co-simulation FMU; and the same for the signal-flow
blocks (DC motor, PID controller, trajectory) that drive a plant.

1. Load and compile the model (a bad model stops here with the model-file errors).
2. Generate the slave module (unique module and class name per model) and bundle into the
   FMU's resources: the model file and its data files, and the sources the slave imports
   (closure.import_closure: a plant takes the core's modules it uses, a block only its own
   flexmbs_fmu modules; never a host tool).
3. Build with pythonfmu, then replace its modelDescription.xml with a complete one (units,
   dependencies, InitialUnknowns, a stable GUID, default experiment) and add
   documentation/_main.html.
4. FMI 3.0 (fmi_version=3): the FMI 2.0 FMU of step 3 (whose kernels are compiled by running it)
   becomes an FMI 3.0 one: the FMI 3.0 modelDescription.xml (description.model_description_3,
   with its own instantiation token) and the FMI 3.0 front end (flexmbs_fmi3.c) as
   binaries/x86_64-linux/<id>.so replace the FMI 2.0 ones; the resources (the same Python slave,
   its sources and kernels) stay.
5. Validate with `fmpy validate` and `fmutool -check`; any problem fails the build and no FMU
   is left behind.
"""

from __future__ import annotations

import html
import inspect
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

import flexmbs
from flexmbs._cache import (choose_cpu_target, kernel_cache, kernel_lock, private_folder, source_digest,
                            writable_cache)
from flexmbs.model import Model, load_model
from flexmbs.model.catalog import resolve
from flexmbs.model.elements import SUPERELEMENT_FILES
from flexmbs.compile import compile_model
from flexmbs.kernels.structs import route_of

from flexmbs_fmu import bundle
from flexmbs_fmu.base import GuardedSlave
from flexmbs_fmu.component import Component, component_digest
from flexmbs_fmu.controller import PIDController
from .description import documentation, guid, model_description, model_description_3
from flexmbs_fmu.interface import Interface, plant_interface
from flexmbs_fmu.motor import DCMotor
from .closure import import_closure, package_roots, third_party
from .frontend import PROBE, RECORD, compile_front_end, probe_source, record
from .kernels import carry_kernels
from .standalone import add_runtime, build_runtime
from flexmbs_fmu.trajectory import Trajectory
from flexmbs_fmu.variables import Variable

# The packages whose modules an FMU may bundle (what its slave imports of them).
RUNTIME_PACKAGES = ("flexmbs", "flexmbs_fmu", "flexmbs_laws", "pythonfmu")

# The blocks that build_fmu.py --all builds next to the plants, by FMU name.
COMPONENTS: dict[str, type[Component]] = {c.NAME: c for c in (DCMotor, PIDController, Trajectory)}

PLANT_NOTES = [
    "The FMU runs Python inside the host process, with numpy, scipy, numba, pyyaml and threadpoolctl; its own "
    "sources (flexmbs, pythonfmu's runtime) and its numba kernels, compiled for a generic x86-64 CPU and this "
    "Python minor version, travel inside it. A Python host needs those packages; a C host on Linux finds a "
    "Python itself (the one named in <code>resources/flexmbs_python.txt</code>, then <code>$FLEXMBS_PYTHON</code>, "
    "then python3 on <code>PATH</code>) and says what is missing. A <code>--standalone</code> build carries its "
    "Python and needs nothing. Windows: the folder of <code>python3X.dll</code> on <code>PATH</code>.",
    "Every FMI call is checked against the FMI 2.0 state machine and its arguments (GUID, resource location, "
    "finite times and steps, value references): a wrong call returns fmi2Error with a logged message and changes "
    "nothing.",
    "Any communication step size works: each step is integrated with internal sub-steps by the solver set in "
    "the <code>solver.*</code> parameters.",
    "Positions and velocities have no direct feedthrough; accelerations and drive torques depend on the inputs "
    "(see the Outputs dependencies).",
    "NaN inputs, a diverging solver, a step beyond the step budget or invalid parameters: the step is refused "
    "(fmi2Discard) with a logged message, and the FMU stays at the start of that step, in the state 'step failed' "
    "of the FMI standard: no further step or set until fmi2SetFMUstate (a state saved before) or fmi2Reset. "
    "Messages also go to Python logging (stderr).",
    "The full state can be saved, restored and serialised (fmi2GetFMUstate, fmi2SerializeFMUstate); "
    "fmi2Reset returns to the freshly instantiated state.",
]
COMPONENT_NOTES = [
    "The FMU runs Python inside the host process, with numpy (its sources and pythonfmu's runtime travel inside "
    "it); a C host on Linux finds a Python itself, as for the plant FMUs. Every FMI call is checked against the "
    "FMI 2.0 state machine and its arguments.",
    "Any communication step size works; see the Outputs dependencies for direct feedthrough.",
    "NaN inputs or invalid parameters: refused with a logged message (the next step returns fmi2Discard), "
    "no crash. The state can be saved, restored and serialised; fmi2Reset returns to the fresh instance.",
]


# FMI versions a build writes (major numbers).
FMI_VERSIONS = (2, 3)

# The FMI 2.0 names in the FMUs' notes and their FMI 3.0 counterparts (FMI 3.0 writes "State").
# What the identifier of a build is called, by FMI version.
_TOKEN = {2: "GUID", 3: "Instantiation token"}
_FMI3_NAMES = {"FMI 2.0": "FMI 3.0", "fmi2Discard": "fmi3Discard", "fmi2Error": "fmi3Error",
               "fmi2GetFMUstate": "fmi3GetFMUState", "fmi2SetFMUstate": "fmi3SetFMUState",
               "fmi2SerializeFMUstate": "fmi3SerializeFMUState", "fmi2Reset": "fmi3Reset"}


class BuildError(RuntimeError):
    """The FMU could not be built or did not validate; the message says why."""


def _in_version(text: str, fmi_version: int) -> str:
    """A note of the FMU's documentation in the words of its FMI version."""
    if fmi_version == 3:
        for old, new in _FMI3_NAMES.items():
            text = text.replace(old, new)
    return text


def _check_version(fmi_version: int) -> None:
    if fmi_version not in FMI_VERSIONS:
        raise BuildError(f"FMI version {fmi_version!r} is not one this build writes ({', '.join(map(str, FMI_VERSIONS))})")


@dataclass
class Carry:
    """What an FMU carries besides its sources: its compiled kernels (a plant, whose forward
    dynamics take `route`: kernels/structs.ROUTES), a Python runtime."""

    kernels: bool
    standalone: bool
    route: str = ""


def _carry(fmu: Path, work: Path, python_src: Path, requires: dict, carry: Carry) -> None:
    """Add to the FMU `fmu` (built from the sources `python_src` in the folder `work`) its
    ready-compiled kernels (resources/kernels) and the Python runtime (resources/runtime), as
    `carry` asks. The kernels come first: they are compiled by running this FMU."""
    try:
        kernels = carry_kernels(fmu, python_src, carry.route) if carry.kernels else None
        runtime = build_runtime(work / "runtime", requires, python_src) if carry.standalone else None
    except RuntimeError as err:
        raise BuildError(f"{fmu.name.split('.')[0]}: {err}") from err
    with zipfile.ZipFile(fmu, "a", zipfile.ZIP_DEFLATED) as z:
        if kernels is not None:
            manifest, files = kernels
            for rel, data in files.items():
                z.writestr(f"resources/kernels/{rel}", data)
            z.writestr("resources/kernels/manifest.json", json.dumps(manifest, indent=1))
        if runtime is not None:
            add_runtime(z, work / "runtime")


@dataclass
class Built:
    """A built FMU: path, GUID (FMI 3.0: instantiation token), interface size and FMI version."""

    path: Path
    guid: str
    n_inputs: int
    n_outputs: int
    n_parameters: int
    fmi_version: int = 2


_MODULE = '''"""flexmbs FMU {name!r}. Generated by build_fmu.py: do not edit."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import importlib.metadata
import importlib.util
import json
import logging
import os
import platform
import re
import stat
import sys
import tempfile
from pathlib import Path

BUNDLE = "{bundle}"
PACKAGES = {packages!r}
FILES = {files!r}
REQUIRES = {requires!r}

# from flexmbs_fmu/bundle.py and flexmbs/_cache.py (they run before flexmbs can be imported)
{chooser}

HERE = Path(__file__).resolve().parent
check_requirements(REQUIRES)
ROOTS = choose_sources(HERE / "python", BUNDLE, PACKAGES, FILES)
_KERNELS = HERE / "kernels" / "manifest.json"
# read by the C front end and logged before the slave is made (and compiles anything)
NOTICE = ready_kernels(HERE / "kernels", ROOTS.get("flexmbs"), json.loads(_KERNELS.read_text()) if _KERNELS.is_file()
                       else None)
if NOTICE:
    logging.getLogger("flexmbs.fmu").warning(NOTICE)

from flexmbs_fmu.base import keep_alive  # noqa: E402
{imports}

keep_alive(globals())


class {cls}({base}):
{body}    interface_digest = "{digest}"
'''


def _chooser_source() -> str:
    """Source of the functions of bundle.py and _cache.py that run before flexmbs is imported."""
    return "\n\n".join(inspect.getsource(f) for f in (
        source_digest, private_folder, writable_cache, kernel_cache, choose_cpu_target, kernel_lock,
        bundle.tree_digest, bundle._digest, bundle._digest_or_none,
        bundle._version_key, bundle._fits, bundle.missing_requirements, bundle.check_requirements,
        bundle.VerifiedSources, bundle._loaded_digest, bundle._same_as_loaded, bundle.choose_sources,
        bundle._file_digest, bundle.read_index, bundle.index_bytes, bundle._place_kernels, bundle._other_index,
        bundle._all_cached, bundle._merge_kernel,
        bundle._verified, bundle._place_file, bundle._write_file, bundle.ready_kernels))


def identifier(name: str) -> str:
    """A model name as a C and Python identifier (the FMU's modelIdentifier)."""
    ident = re.sub(r"\W", "_", name)
    return ident if re.match(r"[A-Za-z_]", ident) else f"m_{ident}"


def requirements(modules: set[str]) -> dict[str, tuple[str, str]]:
    """{import name: (distribution, version spec)} of the installed packages `modules`, with
    the bounds flexmbs declares for them (pyproject.toml), for the FMU to check on its host."""
    dists = packages_distributions()
    declared = {}
    for req in metadata.requires("flexmbs") or []:
        found = re.match(r"([A-Za-z0-9_.-]+)\s*(?:\[[^]]*\])?\s*([^;]*)", req)
        if ";" not in req:
            declared[found.group(1).lower().replace("_", "-")] = found.group(2).replace(" ", "")
    out = {}
    for module in sorted(modules):
        dist = (dists.get(module) or [module])[0]
        spec = declared.get(dist.lower().replace("_", "-"), "")
        out[module] = (dist, ",".join(sorted(spec.split(","), key=lambda c: c[:1] != ">")) if spec else "")
    return out


def _copy_sources(dest: Path, entries: tuple[str, ...]) -> tuple[str, tuple[str, ...], tuple[str, ...], dict]:
    """Copy to dest the source files that the modules `entries` import (closure.import_closure
    over RUNTIME_PACKAGES). Returns their digest (bundle.tree_digest, which the FMU checks again
    before it imports them), the packages they come from, the files and the requirements of
    the other packages they import."""
    roots = package_roots(RUNTIME_PACKAGES)
    files = import_closure(roots, entries)
    packages = tuple(p for p in RUNTIME_PACKAGES if any(f.startswith(f"{p}/") for f in files))
    for name in files:
        package, rel = name.split("/", 1)
        target = dest / package / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(roots[package] / rel, target)
    requires = requirements(third_party(roots, files))
    return bundle.tree_digest({p: dest / p for p in packages}, files), packages, files, requires


def _copy_model(model: Model, model_path: Path, dest: Path) -> None:
    """The model file and the data files it names (kept at the same relative paths)."""
    dest.mkdir(parents=True)
    shutil.copy2(model_path, dest / model_path.name)
    folder = model_path.parent.resolve()
    for body in model.bodies:
        for key in SUPERELEMENT_FILES:
            ref = getattr(body, key)
            if not ref:
                continue
            data = Path(ref).resolve()
            try:
                rel = data.relative_to(folder)
            except ValueError:
                raise BuildError(f"{model_path}: bodies.{body.name}.{key} {ref} lies outside the model's folder "
                                 f"{folder}; put it there so that it can travel with the FMU") from None
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(data, dest / rel)


def validate(fmu: Path) -> list[str]:
    """Problems found by `fmpy validate` and `fmutool -check` (empty if none)."""
    problems = []
    checks = {
        "fmpy validate": [sys.executable, "-m", "fmpy", "validate", str(fmu)],
        "fmutool -check": [sys.executable, "-c", "import sys; from fmu_manipulation_toolbox.cli.fmutool "
                           "import fmutool; sys.exit(fmutool())", "-input", str(fmu), "-check"],
    }
    for name, cmd in checks.items():
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            problems.append(f"{name} (exit {run.returncode}):\n{run.stdout}{run.stderr}".rstrip())
    return problems


def build(model_path: Union[str, os.PathLike], out_dir: Union[str, os.PathLike] = "fmus", check: bool = True,
          standalone: bool = False, kernels: bool = True, fmi_version: int = 2) -> Built:
    """Build the plant FMU of a model file into out_dir/<model name>.fmu, FMI `fmi_version` (2
    or 3) co-simulation. kernels: carry its numba kernels compiled for a generic CPU
    (fmi/kernels.py); standalone: carry a Python runtime too (fmi/standalone.py), so the host
    needs no Python. Raises ModelError for a bad model and BuildError when building or
    validation fails."""
    _check_version(fmi_version)
    model_path = resolve(model_path)
    model = load_model(model_path)
    if model.solver.formulation != "joint":
        raise BuildError(f"{model_path}: solver.formulation is {model.solver.formulation!r}; FMUs run the "
                         "joint-coordinate formulation (the natural one is a cross-check in flexmbs.simulate): "
                         "set solver.formulation to joint or leave it out")
    system = compile_model(model)
    itf = plant_interface(model, system)
    ident = identifier(model.name)
    guid_ = _plant_guid(model_path, model, itf, fmi_version)
    ex = model.fmu
    return _package(
        ident, model.name, f"flexmbs_plant_{ident}", itf.variables, out_dir, check,
        entries=("flexmbs_fmu.base", "flexmbs_fmu.plant"), what=str(model_path),
        imports="from flexmbs_fmu.plant import PlantSlave  # noqa: E402", base="PlantSlave",
        body=f'    model_file = "model/{model_path.name}"\n', digest=itf.digest(), guid_=guid_,
        add_files=lambda src: _copy_model(model, model_path, src / "model"),
        doc=documentation(itf.variables, title=f"{model.name} (flexmbs plant FMU)", description=model.description,
                          about=_in_version(f"A flexible multibody plant, FMI 2.0 co-simulation, built by flexmbs "
                                            f"from <code>{html.escape(model_path.name)}</code> (in "
                                            f"<code>resources/model/</code>). ", fmi_version)
                                + f"{_TOKEN[fmi_version]} {html.escape(guid_)}.",
                          notes=[_in_version(n, fmi_version) for n in PLANT_NOTES]),
        description=model.description or f"flexmbs plant {model.name}", author=ex.author, version=ex.version,
        stop_time=ex.stop_time, step_size=ex.step_size or model.solver.output_step, tolerance=model.solver_rtol(),
        carry=Carry(kernels=kernels or standalone, standalone=standalone, route=route_of(system.arrays)),
        fmi_version=fmi_version)


def _plant_guid(model_path: Path, model: Model, itf: Interface, fmi_version: int) -> str:
    return guid(model.name, itf.digest(), model_path.read_bytes(), fmi_version)


def plant_guid(model_path: Union[str, os.PathLike], fmi_version: int = 2) -> str:
    """The GUID (FMI 2.0) or instantiation token (FMI 3.0) that `build` gives the plant FMU of
    a model file as it is now: an FMU with another one was built from another version of the
    file (or of flexmbs's interface for it). Raises ModelError for a bad model."""
    model_path = resolve(model_path)
    model = load_model(model_path)
    return _plant_guid(model_path, model, plant_interface(model, compile_model(model)), fmi_version)


def component_guid(name: str, fmi_version: int = 2) -> str:
    """The GUID (instantiation token) that `build_component` gives the block `name` (a key of
    COMPONENTS) with this flexmbs."""
    comp = COMPONENTS[name]
    source = Path(sys.modules[comp.__module__].__file__).read_bytes()
    return guid(name, component_digest(comp), source, fmi_version)


def build_component(name: str, out_dir: Union[str, os.PathLike] = "fmus", check: bool = True,
                    standalone: bool = False, fmi_version: int = 2) -> Built:
    """Build the FMU of a signal-flow block (a key of COMPONENTS) into out_dir/<name>.fmu, FMI
    `fmi_version` (2 or 3) co-simulation (standalone: with a Python runtime, as for a plant; a
    block has no numba kernels)."""
    _check_version(fmi_version)
    if name not in COMPONENTS:
        raise BuildError(f"no block named {name!r}; the blocks are {', '.join(COMPONENTS)}")
    comp = COMPONENTS[name]
    digest = component_digest(comp)
    guid_ = component_guid(name, fmi_version)
    return _package(
        name, name, f"flexmbs_block_{name}", list(comp.VARIABLES), out_dir, check,
        entries=("flexmbs_fmu.base", "flexmbs_fmu.component", comp.__module__), what=f"block {name}",
        imports=f"from flexmbs_fmu.component import ComponentSlave  # noqa: E402\n"
                f"from {comp.__module__} import {comp.__name__}  # noqa: E402",
        base="ComponentSlave", body=f"    component = {comp.__name__}\n", digest=digest, guid_=guid_,
        add_files=None,
        doc=documentation(comp.VARIABLES, title=f"{name} (flexmbs block FMU)", description=comp.DESCRIPTION,
                          about=f"<p>{comp.ABOUT}</p><p>{_TOKEN[fmi_version]} {html.escape(guid_)}.</p>",
                          notes=[_in_version(n, fmi_version) for n in COMPONENT_NOTES]),
        description=comp.DESCRIPTION, author="flexmbs", version=flexmbs.__version__, stop_time=1.0,
        step_size=1e-3, tolerance=None, carry=Carry(kernels=False, standalone=standalone), fmi_version=fmi_version)


def _package(ident: str, model_name: str, module: str, variables: list[Variable], out_dir: Union[str, os.PathLike], check: bool, *,
             entries: tuple[str, ...], what: str, imports: str, base: str, body: str, digest: str, guid_: str,
             add_files: Optional[Callable[[Path], None]], doc: str, description: str, author: str, version: str,
             stop_time: float, step_size: float, tolerance: Optional[float], carry: Carry,
             fmi_version: int = 2) -> Built:
    """Generate the slave module, bundle the sources (and `add_files` into the resources), build
    with pythonfmu, write the complete modelDescription.xml, add what `carry` asks for, make it
    an FMI 3.0 FMU if `fmi_version` is 3, and validate: out_dir/<ident>.fmu."""
    from pythonfmu import FmuBuilder

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / f"{ident}.fmu"
    with tempfile.TemporaryDirectory(prefix="flexmbs_fmu_") as tmp:
        work = Path(tmp)
        src = work / "src"
        digest_, packages, files, requires = _copy_sources(src / "python", entries)
        project = [src / "python"]
        if add_files is not None:
            add_files(src)
            project.insert(0, src / "model")
        script = src / f"{module}.py"
        script.write_text(_MODULE.format(name=model_name, bundle=digest_, packages=packages, files=files,
                                         requires=requires, chooser=_chooser_source(), cls=ident, imports=imports,
                                         base=base, body=body, digest=digest))
        docs = work / "doc"
        docs.mkdir()
        (docs / "_main.html").write_text(doc)
        try:
            raw = FmuBuilder.build_FMU(script, dest=work / "out", project_files=project, documentation_folder=docs,
                                       canGetAndSetFMUstate=True, canSerializeFMUstate=True)
        except Exception as err:  # noqa: BLE001 - pythonfmu raises plain exceptions
            raise BuildError(f"pythonfmu could not build {what}: {type(err).__name__}: {err}") from err
        finally:
            sys.modules.pop(module, None)
        header = dict(model_identifier=ident, model_name=model_name, description=description, author=author,
                      version=version, log_categories=GuardedSlave.log_categories, start_time=0.0,
                      stop_time=stop_time, step_size=step_size, tolerance=tolerance)
        xml = model_description(variables, guid_=guid_, **header)
        front = work / f"{ident}.so"
        why = compile_front_end(front, guid_, variables, module, ident)
        if why is not None:
            logging.getLogger("flexmbs.fmu.build").warning(
                "%s: the FMU keeps pythonfmu's binary alone (no FMI state checks in C, C hosts need LD_PRELOAD, "
                "PYTHONHOME and PYTHONPATH): %s", what, why)
        linux = f"binaries/linux64/{ident}.so"
        # a name of its own: two builds into one folder (two shells, two CI jobs) must not
        # write into each other's archive; the finished one replaces `final` atomically
        partial = final.with_name(f"{final.stem}.{uuid.uuid4().hex}.partial")
        with _removed_on_failure(partial):
            with zipfile.ZipFile(raw) as zin, zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zout:
                for item in zin.infolist():
                    if item.filename == "modelDescription.xml":
                        continue
                    if item.filename == linux and why is None:   # the front end replaces pythonfmu's library
                        continue
                    zout.writestr(item, zin.read(item.filename))
                if why is None:
                    zout.write(front, linux)
                    zout.writestr(f"resources/{RECORD}", record(work))
                    zout.writestr(f"resources/{PROBE}", probe_source(requires))
                zout.writestr("modelDescription.xml", xml)
            _carry(partial, work, src / "python", requires, carry)
            if fmi_version == 3:
                _to_fmi3(partial, work, model_description_3(variables, token=guid_, **header),
                         compile_front_end(work / "fmi3.so", guid_, variables, module, ident, fmi_version=3), ident)
    with _removed_on_failure(partial):
        problems = validate(partial) if check else []
        if problems:
            raise BuildError(f"{what}: the FMU does not validate:\n" + "\n".join(problems))
    os.replace(partial, final)
    return Built(final, guid_, sum(v.causality == "input" for v in variables),
                 sum(v.causality == "output" for v in variables),
                 sum(v.causality == "parameter" for v in variables), fmi_version)


@contextmanager
def _removed_on_failure(path: Path) -> Iterator[None]:
    """Remove `path` when the block raises, a Ctrl-C included: no half-built FMU stays behind."""
    try:
        yield
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def _to_fmi3(fmu: Path, work: Path, xml: bytes, why: Optional[str], ident: str) -> None:
    """Make the FMI 2.0 FMU `fmu` an FMI 3.0 one in place: `xml` its description, the FMI 3.0
    front end compiled as work/fmi3.so its only binary (FMI 3.0, section 2.5.1.4:
    binaries/x86_64-linux), every FMI 2.0 binary (pythonfmu's for other platforms too) dropped;
    `why` is why the front end could not be compiled (then there is no FMI 3.0 FMU)."""
    if why is not None:
        raise BuildError(f"{ident}: the FMI 3.0 front end could not be built, and there is no FMI 3.0 binary "
                         f"without it: {why}")
    converted = fmu.with_suffix(".fmi3")
    with _removed_on_failure(converted), zipfile.ZipFile(fmu) as zin, \
            zipfile.ZipFile(converted, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            if item.filename != "modelDescription.xml" and not item.filename.startswith("binaries/"):
                zout.writestr(item, zin.read(item.filename))
        zout.write(work / "fmi3.so", f"binaries/x86_64-linux/{ident}.so")
        zout.writestr("modelDescription.xml", xml)
    os.replace(converted, fmu)
