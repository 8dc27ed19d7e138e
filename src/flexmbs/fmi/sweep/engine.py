"""The sweep engine: runs of a servo design (one parameter set each) on a Dask cluster, written
row by row to a table on disk.

- `Study`: the servo design, the folder of its FMUs and the settling band; what every task of a
  sweep shares. `Study.check(names)` refuses unknown parameter names before anything runs.
- `evaluate(study, params)`: one run -> one row, on a worker. Each worker process keeps its FMU
  instances (a `Master` per study and thread, module-level cache) and reuses them through
  fmi2Reset: a task carries only its parameter set. A run the FMUs refuse (a diverged solver) is
  a row with status `diverged` and the FMU's message; a parameter an FMU refuses is `error`.
- `Engine`: the Dask client, a LocalCluster (one thread per worker process) or an existing
  scheduler by address.
- `run_rows(...)`: submits the parameter sets not yet in the table, appends each row to the CSV
  as its future completes (as_completed), and returns the rows in design order. A worker that
  dies has its tasks rerun by Dask on another worker; a task that kills workers repeatedly
  (Dask's allowed-failures) becomes a row with status `lost`. Ctrl-C cancels what is left and
  keeps the rows written.
- `Table`: the CSV of rows, keyed by a hash of the study and the parameter set; a rerun skips the
  keys already there (status `lost` rows are retried).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import logging
import signal
import threading
import time
import warnings
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from pathlib import Path

import numpy as np

from flexmbs.names import did_you_mean

from ..cosim import CosimError, Master
from ..servo import ServoDesign, assembly
from .metrics import metric_names, servo_metrics

OK, DIVERGED, ERROR, LOST = "ok", "diverged", "error", "lost"
# statuses a rerun keeps: the same parameter set gives the same outcome
FINAL = (OK, DIVERGED, ERROR)


@dataclass(frozen=True)
class Study:
    """What the runs of a sweep share: the servo design (its parameters are the nominal ones a
    parameter set overrides), the folder of its FMUs, and the settling band (fraction of the
    move) of the settling-time metric."""

    design: ServoDesign
    fmu_dir: Path
    band: float = 0.02

    def assembly(self):
        return assembly(self.design, self.fmu_dir)

    def digest(self) -> str:
        """A hash of the design, the band and the FMUs' GUIDs (not their folder): rows of an
        unchanged study keep their keys."""
        from fmpy import read_model_description

        asm = self.assembly()
        guids = {e.name: read_model_description(str(e.fmu), validate=False).guid for e in asm.elements}
        text = json.dumps({"design": asdict(self.design), "band": self.band, "guids": guids}, sort_keys=True,
                          default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def build_needed(self) -> list[tuple[Path, str]]:
        """Build the FMUs of the study that are not in fmu_dir yet, and build again those built
        from another version of their source (the plant from another version of its model file,
        a block by another flexmbs: their GUID is not the one a build gives now), each in its
        own FMI version; returns each path built and why. Done once on the client: the workers
        load them from that folder (shared by every worker of a LocalCluster; on a cluster of
        several machines the folder must be reachable at the same path on each)."""
        from fmpy import read_model_description

        from ..build import COMPONENTS, build, build_component, component_guid, plant_guid

        built = []
        for e in self.assembly().elements:
            fmu = Path(e.fmu)
            block = fmu.stem in COMPONENTS
            options, why = {}, "missing"
            if fmu.is_file():
                md = read_model_description(str(fmu), validate=False)
                options = _options_of(fmu, md.fmiVersion)
                if md.guid == (component_guid(fmu.stem, options["fmi_version"]) if block
                               else plant_guid(self.design.model, options["fmi_version"])):
                    continue
                why = "built by another flexmbs" if block else \
                    f"built from another version of {self.design.model.name} or by another flexmbs"
            if block:
                options.pop("kernels", None)   # a block has no kernels to carry
                out = build_component(fmu.stem, fmu.parent, **options)
            else:
                out = build(self.design.model, fmu.parent, **options)
            built.append((out.path, why))
        return built

    def variables(self) -> dict[str, dict[str, Any]]:
        """Each element's FMU variables (fmpy's ScalarVariable) by element and variable name;
        FileNotFoundError naming an element whose FMU file is missing."""
        from fmpy import read_model_description

        out: dict[str, dict[str, Any]] = {}
        for e in self.assembly().elements:
            if not Path(e.fmu).is_file():
                raise FileNotFoundError(f"element {e.name}: no FMU file {e.fmu}")
            out[e.name] = {v.name: v for v in read_model_description(str(e.fmu), validate=False).modelVariables}
        return out

    def check_assembly(self) -> None:
        """KeyError naming the first parameter that the study's assembly sets (a plant value, a
        servo axis' inertia_parameter, a block's gain) and its FMU does not have as a parameter,
        with the closest names: every run would fail on it."""
        variables = self.variables()
        for e in self.assembly().elements:
            params = [n for n, v in variables[e.name].items() if v.causality == "parameter"]
            for name in e.parameters:
                if name not in params:
                    raise KeyError(f"element {e.name} ({Path(e.fmu).name}) has no parameter {name!r}"
                                   f"{did_you_mean(name, params, n=3)}; its parameters: {', '.join(params)}")

    def columns(self) -> list[str]:
        return metric_names(self.design)

    def nominal(self) -> dict[str, float]:
        """The nominal value of every Real parameter by `<element>.<variable>`: the design's
        (what its assembly sets), else the FMU's start value."""
        out: dict[str, float] = {}
        variables = self.variables()
        for e in self.assembly().elements:
            for v in variables[e.name].values():
                if v.causality == "parameter" and v.type == "Real" and v.start is not None:
                    out[f"{e.name}.{v.name}"] = float(v.start)
            out.update({f"{e.name}.{k}": float(v) for k, v in e.parameters.items() if isinstance(v, (int, float))})
        return out

    def check(self, names: Iterable[str]) -> None:
        """KeyError naming the first parameter that no FMU of the study has as a parameter (with
        the closest names)."""
        known = {f"{e}.{n}": v.causality for e, vs in self.variables().items() for n, v in vs.items()}
        params = [n for n, c in known.items() if c == "parameter"]
        for name in names:
            if known.get(name) != "parameter":
                what = f"is an {known[name]}, not a parameter" if name in known else "is not a variable of the system"
                raise KeyError(f"parameter {name!r} {what}{did_you_mean(name, params, n=3)}")


def _options_of(fmu: Path, fmi_version: str) -> dict[str, object]:
    """How an FMU was built, for building it again the same way: its FMI version, whether it
    carries compiled kernels (resources/kernels) and a Python runtime (resources/runtime)."""
    with zipfile.ZipFile(fmu) as z:
        names = z.namelist()
    return dict(fmi_version=int(fmi_version.split(".")[0]), kernels="resources/kernels/manifest.json" in names,
                standalone=any(n.startswith("resources/runtime/") for n in names))


def row_key(digest: str, params: Mapping[str, float]) -> str:
    """The key of a row: a hash of the study's digest and the parameter set (values by repr, so
    exactly equal numbers give the same key)."""
    text = json.dumps([digest, sorted((k, repr(float(v))) for k, v in params.items())])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


# ----------------------------------------------------------------------------- on a worker

_MASTERS: dict[tuple[str, int], Master] = {}
_LOCK = threading.Lock()


def _master(study: Study, digest: str) -> Master:
    """This process's and thread's instances of the study (built on first use)."""
    key = (digest, threading.get_ident())
    with _LOCK:
        master = _MASTERS.get(key)
    if master is None:
        master = Master(study.assembly())
        with _LOCK:
            _MASTERS[key] = master
    return master


def _drop(digest: str) -> None:
    """Free this thread's instances after a failure: the next run builds fresh ones."""
    with _LOCK:
        master = _MASTERS.pop((digest, threading.get_ident()), None)
    if master is not None:
        master.free()


def _one_line(err: BaseException) -> str:
    return " | ".join(line.strip() for line in str(err).splitlines() if line.strip()) or type(err).__name__


class _FMULog(logging.Handler):
    """The warnings and errors our FMUs log through Python logging while attached, for the
    row's message: `messages` all of them (the reason behind a refused step), `instances`
    those of the instances (logger `flexmbs.fmu.<instance>`: a body deformed beyond one frame, a
    parameter value refused) apart from the FMU modules' own (`flexmbs.fmu`: kernels compiled)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.instances: list[str] = []
        self.logger = logging.getLogger("flexmbs.fmu")

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name.rpartition('.')[2]}: {record.getMessage()}")
        if record.name != self.logger.name:
            self.instances.append(self.messages[-1])

    def __enter__(self) -> _FMULog:
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        self.logger.removeHandler(self)


def simulate(study: Study, params: Mapping[str, float], master: Master | None = None,
             digest: str = "") -> dict[str, np.ndarray]:
    """The recorded signals of one run with `params` overriding the design's parameters, on
    `master` (reset first) or on this worker's cached instances of the study."""
    m = _master(study, digest or study.digest()) if master is None else master
    m.reset()
    m.initialize(parameters=params)
    return m.run(study.design.stop_time, study.design.step_size)


def evaluate(study: Study, digest: str, params: Mapping[str, float], fresh: bool = False) -> dict[str, object]:
    """One run -> its row (metrics, status, message, wall_s). fresh: on new FMU instances, freed
    afterwards, instead of the worker's cached ones."""
    start = time.perf_counter()
    row: dict[str, object] = dict.fromkeys(study.columns(), float("nan"))
    master = None
    with _FMULog() as log:
        try:
            master = Master(study.assembly()) if fresh else _master(study, digest)
            run = simulate(study, params, master)
            row.update(servo_metrics(run, study.design, study.band))
            bad = [name for name, v in run.items() if not np.all(np.isfinite(v))]
            status, message = (OK, "") if not bad else (DIVERGED, f"non-finite values of {', '.join(bad)}")
        except CosimError as err:
            status, message = (DIVERGED if "the step from" in str(err) else ERROR), _one_line(err)
        except Exception as err:   # noqa: BLE001 - any failure of a run is its row's, not the sweep's
            status, message = ERROR, f"{type(err).__name__}: {_one_line(err)}"
    if status != OK:
        message = " | ".join([message, *(_one_line(RuntimeError(m)) for m in log.messages[-3:])])
        if not fresh:
            _drop(digest)
    else:   # a run that ended ok may still have been warned of
        message = " | ".join(_one_line(RuntimeError(m)) for m in log.instances[-3:])
    if fresh and master is not None:
        master.free()
    row.update(status=status, message=message, wall_s=time.perf_counter() - start)
    return row


# ----------------------------------------------------------------------------- on the client

def require_design_extra() -> None:
    """ValueError naming the package of the design extra that is not installed (Dask, pandas,
    pyarrow) and how to install it: sweeps and tuning need them, the rest of flexmbs does not."""
    import importlib.util

    for module, package in (("distributed", "dask[distributed]"), ("pandas", "pandas"), ("pyarrow", "pyarrow")):
        if importlib.util.find_spec(module) is None:
            raise ValueError(f"design studies need {package}, which is not installed: "
                             "pip install 'flexmbs[design]'")


class Engine:
    """A Dask client: on a new LocalCluster of `workers` processes (default: the machine's
    cores) with one thread each, or on the scheduler at `scheduler` (an address such as
    tcp://host:8786). Use as a context manager; `close()` shuts down a cluster it started."""

    def __init__(self, scheduler: str | None = None, workers: int | None = None) -> None:
        require_design_extra()
        from dask.distributed import Client, LocalCluster

        self.cluster = None
        if scheduler:
            self.client = Client(scheduler)
        else:
            with _workers_ignore_ctrl_c():
                # distributed's own log off, errors included: a run's failure is its row's message,
                # and a worker heartbeating while Ctrl-C shuts the cluster down logged a traceback
                # (distributed 2024.8), as if the study had failed
                self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                            dashboard_address=":0", silence_logs=logging.CRITICAL)
            self.client = Client(self.cluster)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextlib.contextmanager
def _workers_ignore_ctrl_c():
    """Start processes that ignore SIGINT (they inherit the ignored disposition, and Python keeps
    it): Ctrl-C in a terminal reaches the whole process group, and the workers would each print a
    traceback; the client alone stops the study, and closing the cluster ends them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


class RowsRepairedWarning(UserWarning):
    """A table of rows was repaired when it was opened (its cut-short last line dropped)."""


class Table:
    """The rows of a sweep as a CSV file, appended row by row (flushed), with a fixed header:
    `key`, `run` (position in the design), the parameters, the metrics, `status`, `message`,
    `wall_s`. Floats are written by repr, so they read back bit-identical. A last line cut
    short (a crash while it was written) is dropped when the table is opened, with a warning
    naming the file: that run is then run again."""

    def __init__(self, path: str | Path, parameters: Sequence[str], metrics: Sequence[str]) -> None:
        self.path = Path(path)
        self.header = ["key", "run", *parameters, *metrics, "status", "message", "wall_s"]
        if self.path.is_file() and self.path.stat().st_size:
            with self.path.open(newline="") as f:
                found = next(csv.reader(f), [])
            if found != self.header:
                raise ValueError(f"{self.path}: its columns ({', '.join(found)}) are not this study's "
                                 f"({', '.join(self.header)}); write to another output folder")
            self._drop_partial_last_line()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("w", newline="") as f:
                csv.writer(f).writerow(self.header)

    def _drop_partial_last_line(self) -> None:
        """Cut the file back to its last complete row when its last line is incomplete (no line
        end, or fewer fields than the header)."""
        data = self.path.read_bytes()
        body = data.rstrip(b"\r\n")
        start = body.rfind(b"\n") + 1
        last = body[start:].decode("utf-8", errors="replace")
        complete = data.endswith(b"\n") and len(next(csv.reader([last]), [])) == len(self.header)
        if complete or start == 0:
            return
        with self.path.open("r+b") as f:
            f.truncate(start)
        warnings.warn(f"{self.path}: its last line was cut short ({len(data) - start} bytes, a run interrupted "
                      "while it was written); it was dropped and that run will be run again", RowsRepairedWarning,
                      stacklevel=3)

    def rows(self) -> dict[str, dict[str, object]]:
        """The rows on disk by key (the last one of a key wins), values as read (str)."""
        with self.path.open(newline="") as f:
            return {r["key"]: r for r in csv.DictReader(f)}

    def finished(self) -> set[str]:
        return {k for k, r in self.rows().items() if r["status"] in FINAL}

    def append(self, row: Mapping[str, object]) -> None:
        def text(v: object) -> str:
            return repr(float(v)) if isinstance(v, (float, np.floating)) else str(v)

        with self.path.open("a", newline="") as f:
            csv.writer(f).writerow([text(row[c]) for c in self.header])
            f.flush()

    def frame(self, keys: Iterable[str] | None = None):
        """The table as a pandas DataFrame (last row per key, in design order): the rows of
        `keys` only when given (a study's, where the file also holds an earlier study's)."""
        import pandas as pd

        # pandas' default float parser before 3.0 may miss the last bit of a repr; 3.0 parses
        # exactly by default and deprecates the option
        exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
        df = pd.read_csv(self.path, keep_default_na=False, **exact,
                         na_values={c: ["nan"] for c in self.header if c not in ("key", "status", "message")})
        df["message"] = df["message"].astype(str)
        if keys is not None:
            df = df[df["key"].isin(set(keys))]
        return df.drop_duplicates("key", keep="last").sort_values("run", kind="stable").reset_index(drop=True)


def run_rows(engine: Engine, study: Study, sets: Sequence[Mapping[str, float]], table: Table,
             progress: bool = True, on_row: Callable[[dict[str, object]], None] | None = None,
             fresh: bool = False, digest: str | None = None) -> list[dict[str, object]]:
    """Run every parameter set whose key is not finished in `table`, appending each row as it
    completes; returns every set's row (from the table or new), in the order of `sets`. on_row:
    called with each new row (progress hooks, tests). fresh: run on new instances (see evaluate)."""
    from dask.distributed import as_completed
    from distributed import KilledWorker

    digest = digest or study.digest()
    keys = [row_key(digest, p) for p in sets]
    done = table.finished()
    todo = {k: (i, p) for i, (k, p) in enumerate(zip(keys, sets)) if k not in done}
    futures = {engine.client.submit(evaluate, study, digest, dict(p), fresh, key=f"flexmbs-run-{k}"
                                    + ("-fresh" if fresh else ""), pure=False): k for k, (i, p) in todo.items()}
    new: dict[str, dict[str, object]] = {}
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(sets), initial=len(sets) - len(todo), desc="runs", unit="run", mininterval=0.5)
    try:
        for fut in as_completed(futures):
            k = futures[fut]
            i, p = todo[k]
            try:
                row = fut.result()
            except KilledWorker as err:
                row = {**dict.fromkeys(study.columns(), float("nan")), "status": LOST, "wall_s": float("nan"),
                       "message": f"the workers running it died ({_one_line(err)})"}
            except Exception as err:   # noqa: BLE001 - a task Dask could not run is its row's failure
                row = {**dict.fromkeys(study.columns(), float("nan")), "status": ERROR, "wall_s": float("nan"),
                       "message": f"{type(err).__name__}: {_one_line(err)}"}
            row = {"key": k, "run": i, **p, **row}
            table.append(row)
            new[k] = row
            if bar is not None:
                bar.update()
            if on_row is not None:
                on_row(row)
    finally:
        for fut in futures:   # Ctrl-C or an error: nothing left running; the rows written stay
            fut.cancel()
        if bar is not None:
            bar.close()
    on_disk = table.rows()
    out = []
    for i, (k, p) in enumerate(zip(keys, sets)):
        out.append(new[k] if k in new else _parse(on_disk[k], study.columns(), p, i))
    return out


def _parse(row: Mapping[str, str], metrics: Sequence[str], params: Mapping[str, float], run: int) -> dict[str, object]:
    """A row read from the CSV with its numbers as floats."""
    return {"key": row["key"], "run": run, **params, **{m: float(row[m]) for m in metrics},
            "status": row["status"], "message": row["message"], "wall_s": float(row["wall_s"])}


def sweep(engine: Engine, study: Study, sets: Sequence[Mapping[str, float]], out_dir: str | Path,
          progress: bool = True, on_row: Callable[[dict[str, object]], None] | None = None):
    """Run the parameter sets into out_dir/rows.csv (resumable) and write their rows to
    out_dir/rows.parquet; returns them as a pandas DataFrame in design order (the rows of
    another study that rows.csv holds, e.g. of the model before an edit, are left out)."""
    if not sets:
        raise ValueError("the sweep has no parameter sets")
    names = list(sets[0])
    for i, p in enumerate(sets):
        if list(p) != names:
            raise ValueError(f"parameter set {i} has the parameters {list(p)}, the first has {names}")
    study.check(names)
    out_dir = Path(out_dir)
    table = Table(out_dir / "rows.csv", names, study.columns())
    digest = study.digest()
    try:
        run_rows(engine, study, sets, table, progress=progress, on_row=on_row, digest=digest)
    finally:
        df = table.frame(row_key(digest, p) for p in sets)
        df.to_parquet(out_dir / "rows.parquet", index=False)
    return df
