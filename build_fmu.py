#!/usr/bin/env python
"""Build validated FMI 2.0 (or, with --fmi-version 3, FMI 3.0) co-simulation FMUs from flexmbs
model files.

    python build_fmu.py MODEL.yaml [MODEL.yaml ...] [-o DIR] [--fmi-version 3]
    python build_fmu.py --block dc_motor [-o DIR]   # a block: dc_motor, pid_controller, trajectory
    python build_fmu.py --all [-o DIR]          # every models/*.yaml and every block

The same as `flexmbs build`; see docs/fmu.md.
"""

import sys

from flexmbs.cli import main

if __name__ == "__main__":
    sys.exit(main(["build", *sys.argv[1:]], prog_name="build_fmu.py"))
