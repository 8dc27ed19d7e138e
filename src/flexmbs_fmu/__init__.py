"""flexmbs FMU export: the plant slave (plant.py) on a guarded pythonfmu base (base.py), its
FMI interface (interface.py), the modelDescription writer (description.py) and the build
pipeline (build.py). Installed as the package `flexmbs_fmu`."""
