"""What runs inside a flexmbs FMU: the plant slave (plant.py) on a guarded pythonfmu base
(base.py) and its FMI interface (interface.py), the blocks (component.py, motor.py,
controller.py, trajectory.py), the loader that picks the sources an FMU imports (bundle.py) and
the C front end (flexmbs_fmi2.c). Installed as the package `flexmbs_fmu`; the host-side tools
that build and drive FMUs are in flexmbs.fmi, which this package never imports."""
