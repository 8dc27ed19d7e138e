"""Where the packages' files live; everything else is in pyproject.toml.

- src/flexmbs: the multibody core and the host-side tools (flexmbs.fmi: build, masters, SSP,
  sweeps); src/flexmbs_laws: the physical laws the core and the FMU runtime share;
- fmu_src/flexmbs_fmu: what runs inside an FMU (slave classes, plant and blocks, bundle loader,
  C front end);
- models/: the shipped model files, installed as flexmbs/models (addressed by name).

None of the three folders is importable from the checkout's root, so the tests run the
installed package, never the checkout.
"""

from setuptools import find_packages, setup

setup(
    package_dir={"": "src", "flexmbs_fmu": "fmu_src/flexmbs_fmu", "flexmbs.models": "models"},
    packages=[*find_packages("src"), *find_packages("fmu_src"), "flexmbs.models"],
)
