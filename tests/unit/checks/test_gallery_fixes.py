"""The gallery's machines get their findings for the right reason: the evidence and fix name this machine's files and versions.

The ids alone (test_machines.py) would pass with a detail about the wrong file. An `xfail`
row is a fix the tool gets wrong today on a realistic machine; the machine stays as it is.
"""

from __future__ import annotations

import pytest

from cudnn_doctor.system.fixture_format import load_fixture
from tests.conftest import GALLERY, run

CUDA = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"


CASES = [
    (
        "win-torch-cpu-wheel-from-pypi",
        "torch-cpu-build",
        "pip install torch==2.2.2 torchvision==0.17.2 --index-url https://download.pytorch.org/whl/cu121",
    ),
    ("win-torch-cpu-wheel-from-pypi", "torch-cpu-build", "torchvision"),
    ("win-tf210-cudnn84-zlibwapi-missing", "dependency-missing", f"copy dll_x64\\zlibwapi.dll into {CUDA}\\v11.6\\bin"),
    ("win-tf210-cudnn84-zlibwapi-missing", "dependency-missing", "!zlibwapi.dll into ,"),
    (
        "win-tf210-zlibwapi-32bit-dll",
        "library-wrong-architecture",
        f"{CUDA}\\v11.2\\bin\\zlibwapi.dll: wrong architecture (x86, the process is x64)",
    ),
    (
        "win-cudnn81-only-cudnn64_8-copied",
        "cudnn-partial-install",
        "D:\\NVIDIA\\CUDA\\v11.2\\bin has cuDNN 8.1.1.33 but lacks cudnn_ops_infer64_8.dll",
    ),
    (
        "win-cudnn89-archive-folder-copied-whole",
        "cudnn-nested-layout",
        f"{CUDA}\\v11.8\\cudnn-windows-x86_64-8.9.7.29_cuda11-archive",
    ),
    ("win-tf210-cudnn-dll-zero-bytes", "library-zero-bytes", f"{CUDA}\\v11.2\\bin\\cudnn_cnn_infer64_8.dll"),
    ("win-tf215-native-windows-no-gpu", "tf-windows-gpu-unsupported", "tensorflow 2.15.0"),
    (
        "win-tf215-native-windows-no-gpu",
        "tf-windows-gpu-unsupported",
        '!.venv\\Scripts\\python.exe" -m pip install "tensorflow<2.11"',
    ),
    ("win-tf27-stale-vscode-terminal", "env-stale-session", f"{CUDA}\\v11.2\\bin"),
    ("win-tf27-stale-vscode-terminal", "cudnn-missing", f"A copy exists at {CUDA}\\v11.2\\bin\\cudnn64_8.dll"),
    ("linux-driver470-torch231-cu121", "driver-too-old", "needs driver >= 525"),
    ("linux-cuda124-runfile-nvcc-not-on-path", "nvcc-not-on-path", "export PATH=/usr/local/cuda-12.4/bin:$PATH"),
    (
        "linux-tf213-old-cudnn81-first-on-ld-library-path",
        "cudnn-shadowed",
        "1. /opt/cudnn-8.1.1/lib64/libcudnn.so.8 (cuDNN 8.1.1, for CUDA 11) ← used",
    ),
    (
        "linux-tf213-old-cudnn81-first-on-ld-library-path",
        "cudnn-version-mismatch",
        "Put /usr/lib/x86_64-linux-gnu (cuDNN 8.6.0) first",
    ),
    ("linux-kernel-update-nvidia-module-missing", "no-nvidia-gpu", "couldn't communicate with the NVIDIA driver"),
    (
        "wsl-apt-cuda-pulled-linux-driver-550",
        "wsl-linux-driver-installed",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
    ),
]


@pytest.mark.parametrize(("machine", "finding_id", "text"), CASES)
def test_finding_names_this_machine(machine, finding_id, text):
    """`text` appears in the finding's detail or fix; with a leading `!`, it appears in none of that id's findings."""
    findings = [f for f in run(load_fixture(GALLERY / f"{machine}.yaml")).findings if f.id == finding_id]
    assert findings, f"{machine}: no {finding_id}"
    said = ["\n".join([f.detail, *f.fix]) for f in findings]
    if text.startswith("!"):
        assert not any(text[1:] in s for s in said), said
    else:
        assert any(text in s for s in said), said
