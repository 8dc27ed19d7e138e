"""The FMI call fuzzer (tests/fmi_fuzz.py) on the plant and a block, FMI 2.0 and FMI 3.0, within a bounded budget:
seeded random sequences of legal and illegal calls, each status the one the FMI 2.0 state
machine (with stepFailed after a discard) and the FMU's documented refusals give, a message
logged with every discard and error, and no crash (each FMU is fuzzed in a new process, so a
crash fails the test instead of ending the suite). FMI_FUZZ_SEQUENCES fuzzes longer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SEQUENCES = int(os.environ.get("FMI_FUZZ_SEQUENCES", "80"))


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("name", ["double_pendulum", "dc_motor"])
def test_random_call_sequences_get_the_statuses_the_state_machine_gives(fmu_path, fmu3_path, name, version) -> None:
    """FMI 2.0 and FMI 3.0 (fmi3* calls of the same purposes; the FMI 3.0 FMU's own rules: the
    start time with fmi3EnterInitializationMode, fmi3DoStep's lastSuccessfulTime and flags on
    every return, fmi3EnterEventMode always refused)."""
    path = fmu_path(name) if version == 2 else fmu3_path(name)
    run = subprocess.run([sys.executable, str(HERE / "fmi_fuzz.py"), path, str(SEQUENCES), "23"],
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stderr[-4000:]
    words = run.stdout.split()
    counts = dict(zip(words[::2], (int(w) for w in words[1::2])))
    assert counts["sequences"] == SEQUENCES
    # every kind of outcome was reached: accepted, refused with a warning, discarded, refused
    assert all(counts.get(f"status{k}", 0) > 0 for k in range(4)), counts
    assert counts["calls"] >= 10 * SEQUENCES
