"""The installed package is the one under test: every module the distribution installed
imports, the shipped models load by name, and each formulation runs from a foreign folder."""

from __future__ import annotations

import importlib
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import pytest

import flexmbs
from flexmbs.model.catalog import shipped_models

CHECKOUT = Path(__file__).resolve().parents[1]
# the source trees (setup.py: the core, the FMU runtime, the model files); a virtual environment
# may live in the checkout
SOURCE_TREES = {CHECKOUT / "src": "", CHECKOUT / "fmu_src": "", CHECKOUT / "models": "flexmbs/models/"}


def _installed_modules() -> list[str]:
    """Dotted names of every .py file the installed distribution lists (its RECORD)."""
    names = []
    for f in distribution("flexmbs").files or []:
        parts = Path(str(f)).parts
        if f.suffix == ".py" and parts[0] in ("flexmbs", "flexmbs_fmu", "flexmbs_laws"):
            mod = ".".join(parts)[:-3]
            names.append(mod.removesuffix(".__init__"))
    return sorted(names)


def test_package_comes_from_the_installation_not_the_checkout() -> None:
    recorded = Path(distribution("flexmbs").locate_file("flexmbs/__init__.py")).resolve()
    assert Path(flexmbs.__file__).resolve() == recorded, (
        f"flexmbs imported from {flexmbs.__file__}, not from the installed distribution ({recorded}): "
        "the tests must run what `pip install .` installed")
    assert not any(tree in recorded.parents for tree in SOURCE_TREES)


def test_every_installed_module_imports() -> None:
    modules = _installed_modules()
    # the RECORD lists the subpackages a hand-kept list once forgot
    assert {"flexmbs.natural.kernels", "flexmbs.model.catalog", "flexmbs_fmu.plant"} <= set(modules)
    for name in modules:
        if name.endswith("__main__"):
            continue
        importlib.import_module(name)
    sources = {p.relative_to(tree).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
               for tree in SOURCE_TREES if tree.is_dir() for p in tree.rglob("*.py")}
    assert sources <= set(modules), f"not installed: {sorted(sources - set(modules))}"


def _build_product(relative: Path) -> bool:
    """True for a file Python or the build wrote into a source tree (bytecode, egg-info)."""
    return any(part == "__pycache__" or part.endswith(".egg-info") for part in relative.parts)


def test_every_file_of_the_source_trees_is_installed() -> None:
    """The model files and the C front end are data: installed beside the modules. What the
    build itself leaves in the checkout (setuptools' egg-info beside the sources) is not."""
    installed = {str(f) for f in distribution("flexmbs").files or []}
    wanted = {prefix + p.relative_to(tree).as_posix()
              for tree, prefix in SOURCE_TREES.items() if tree.is_dir()
              for p in tree.rglob("*") if p.is_file() and not _build_product(p.relative_to(tree))}
    assert wanted and wanted <= installed, f"not installed: {sorted(wanted - installed)}"


def test_shipped_models_install_and_load_by_name() -> None:
    known = shipped_models()
    assert {"huang_two_link", "double_pendulum", "four_bar", "spin_up_beam"} <= set(known)
    for name in known:
        assert flexmbs.load_model(name).name
    with pytest.raises(flexmbs.ModelError, match="did you mean 'huang_two_link'"):
        flexmbs.load_model("huang_two_lnk")


@pytest.mark.parametrize("formulation", ["joint", "natural"])
def test_each_formulation_runs_from_a_foreign_folder(tmp_path, formulation) -> None:
    """A fresh interpreter in an empty folder (nothing of the checkout on its path) loads a
    shipped model by name and simulates it with each formulation."""
    script = (
        "import flexmbs, numpy as np\n"
        "m = flexmbs.load_model('four_bar')\n"
        f"m.solver.formulation = {formulation!r}\n"
        "r = flexmbs.simulate(m, 0.2, output_step=0.05)\n"
        "print(flexmbs.__file__, float(r['crank.q'][-1]))\n")
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    where, q = run.stdout.split()
    assert not any(tree in Path(where).resolve().parents for tree in SOURCE_TREES)
    assert np.isfinite(float(q))


def test_a_flexible_body_compiles_to_the_same_bits_whatever_the_blas_threads(tmp_path) -> None:
    """A Dask worker or an FMU host may run one BLAS thread where simulate runs several; with
    numpy 1.26's OpenBLAS the modes then differed in their last bits. The preprocessing runs on
    one thread, so the compiled arrays are identical (checked in two fresh processes)."""
    script = ("import sys, numpy as np, flexmbs\n"
              "s = flexmbs.compile_model(flexmbs.load_model('huang_two_link'))\n"
              "arrays = [a.ravel() for a in s.arrays if isinstance(a, np.ndarray) and a.dtype == float]\n"
              "np.save(sys.argv[1], np.concatenate(arrays))\n")
    import os
    for name, threads in (("one", "1"), ("two", "2")):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
        run = subprocess.run([sys.executable, "-c", script, str(tmp_path / f"{name}.npy")], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, run.stderr
    assert np.array_equal(np.load(tmp_path / "one.npy"), np.load(tmp_path / "two.npy"))
