"""`python -m flexmbs ...` runs the command line (same as the `flexmbs` script)."""

from .cli import main

main()
