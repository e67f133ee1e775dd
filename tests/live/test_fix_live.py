"""Live acceptance of `fix` on this machine: a stray libcudnn.so.9 ahead of a pip cuDNN on LD_LIBRARY_PATH.

ONNX Runtime with its [cuda,cudnn] extras in a real venv (built once, as tests/live/test_wheels_live.py
builds it), the extras' folders on LD_LIBRARY_PATH, and before them a hand-copied cuDNN front
library: `fix --yes` quarantines that copy (the library and its soname link), the re-check is clean
of cudnn-shadowed, and `rollback` puts both back byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cached_venv
from tests.live.test_wheels_live import ORT, SRC, _deps, _dist_version, _site

pytestmark = [pytest.mark.network, pytest.mark.skipif(sys.platform != "linux", reason="the live venvs are Linux venvs")]


def _doctor(python: Path, tmp_path: Path, ld_library_path: str, *argv: str) -> subprocess.CompletedProcess:
    env = {
        "HOME": str(Path.home()),
        "PATH": f"{python.parent}:/usr/sbin:/usr/bin:/sbin:/bin",
        "VIRTUAL_ENV": str(python.parent.parent),
        "PYTHONPATH": f"{SRC}:{_deps()}",
        "LD_LIBRARY_PATH": ld_library_path,
        "CUDNN_DOCTOR_STATE_DIR": str(tmp_path / "state"),
    }
    return subprocess.run(
        [str(python), "-m", "cudnn_doctor", *argv], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path
    )


def _shadowed(python: Path, tmp_path: Path, ld_library_path: str) -> list[dict]:
    done = _doctor(python, tmp_path, ld_library_path, "check", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return [f for f in json.loads(done.stdout)["findings"] if f["id"] == "cudnn-shadowed"]


def test_fix_quarantines_a_stray_cudnn_ahead_of_the_pip_one_and_rollback_restores_it(tmp_path):
    python = cached_venv("ort-extras", ORT.replace("==", "[cuda,cudnn]=="))
    site = _site(python)
    version = _dist_version(python, "nvidia_cudnn_cu13")
    stray = tmp_path / "stray" / "lib"
    stray.mkdir(parents=True)
    real = stray / f"libcudnn.so.{version}"
    shutil.copyfile(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9", real)  # a real front library, copied by hand
    os.symlink(real.name, stray / "libcudnn.so.9")
    search = f"{stray}:{site}/nvidia/cu13/lib:{site}/nvidia/cudnn/lib"
    before = real.read_bytes()
    found = _shadowed(python, tmp_path, search)
    assert found and found[0]["evidence"]["used"] == str(stray / "libcudnn.so.9") and found[0]["autofix"] == "safe", (
        found
    )

    done = _doctor(python, tmp_path, search, "fix", "--yes")
    assert done.returncode in (0, 1), done.stderr
    assert "fix cudnn-shadowed (safe)" in done.stdout and "Before: " in done.stdout, done.stdout
    assert not real.exists() and not os.path.lexists(stray / "libcudnn.so.9")
    quarantined = next((tmp_path / "state" / "quarantine").glob(f"*/{str(stray).lstrip('/')}"))
    assert (quarantined / "libcudnn.so.9").is_symlink() and (quarantined / real.name).read_bytes() == before
    assert not _shadowed(python, tmp_path, search)
    assert "fix: cudnn-shadowed" in _doctor(python, tmp_path, search, "history").stdout

    done = _doctor(python, tmp_path, search, "rollback")
    assert done.returncode == 0, done.stderr
    assert real.read_bytes() == before and os.readlink(stray / "libcudnn.so.9") == real.name
    assert _shadowed(python, tmp_path, search)
