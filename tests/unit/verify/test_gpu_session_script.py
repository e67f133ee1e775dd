"""benchmarks/gpu_session.sh runs on a GPU machine that reaches no network (issue 31): it uses that machine's own
Python and installs only the wheels carried beside the project, never from an index."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu_session.sh"


def test_every_pip_install_is_from_the_carried_wheels_only():
    installs = [line for line in SCRIPT.read_text().splitlines() if re.search(r"pip install\b", line)]
    assert installs, "the carried wheels are installed somewhere"
    assert all("--no-index" in line and ".whl/" in line for line in installs), installs


def test_it_runs_the_project_from_its_source_with_the_machines_python():
    text = SCRIPT.read_text()
    assert 'python="${PYTHON:-python3}"' in text and "$PWD/src" in text
    assert "venv" not in text  # a virtual environment would hide the machine's own frameworks


@pytest.mark.live
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], check=False).returncode == 0
