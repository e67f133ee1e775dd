"""The test lanes: the markers say which tests touch the machine, and the Windows lane's skips stay honest."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import HOST_INDEPENDENT, TRIPWIRE_RECORD, MachineTouched

TESTS = Path(__file__).resolve().parents[2]


def test_every_host_independent_module_exists_and_reaches_no_host_api():
    """A module listed as replaying described machines only imports, at its top, none of the host's own APIs that the
    tripwire does not watch (it watches processes and live systems; tests marked live run in every lane)."""
    for name in sorted(HOST_INDEPENDENT):
        (path,) = TESTS.rglob(f"{name}.py")  # every test module is found by its name, once
        source = path.read_text(encoding="utf-8")
        found = re.findall(r"^(?:import|from)\s+(winreg|ctypes|msvcrt|fcntl)\b", source, re.M)
        assert not found, f"{name} imports {found}: it is not host independent"


recording = pytest.mark.skipif(
    bool(TRIPWIRE_RECORD), reason="the tripwire records instead of failing (CUDNN_DOCTOR_TRIPWIRE_RECORD)"
)


@recording
def test_the_tripwire_stops_a_unit_test_that_starts_a_process():
    import subprocess
    import sys

    with pytest.raises(MachineTouched, match="started a process"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


@recording
def test_the_tripwire_stops_a_unit_test_that_builds_a_live_system():
    from cudnn_doctor.system.live import LiveSystem

    with pytest.raises(MachineTouched, match="built a LiveSystem"):
        LiveSystem()


@pytest.mark.live
def test_a_live_test_may_start_a_process():
    import subprocess
    import sys

    assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0
