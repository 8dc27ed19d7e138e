"""`python -m flexmbs ...` runs the command line (same as the `flexmbs` script)."""

from .cli import main

if __name__ == "__main__":   # not when a spawned worker process imports this module (fmi/batch.py)
    main()
