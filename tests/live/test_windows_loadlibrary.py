"""The live check's real load on Windows (the Wine lane): a DLL found only through PATH.

TensorFlow, ONNX Runtime and cuDNN load by name with LoadLibrary, whose standard search reaches
PATH; `ctypes.CDLL(name)` on Python >= 3.8 does not (LOAD_LIBRARY_SEARCH_DEFAULT_DIRS). The real
load (`map_probe`, winmode=0) must find the same file as the emulation, so neither the check nor
`which` reports a disagreement that is the doctor's own.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from cudnn_doctor.checks.libraries import loader_emulation_differs
from cudnn_doctor.cli import main
from cudnn_doctor.loader.resolve import Resolver
from cudnn_doctor.probes.confirm import probe_confirmations
from cudnn_doctor.system.live import LiveSystem
from tests.conftest import TEST_CACHE

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(sys.platform != "win32", reason="the real LoadLibrary: Windows (the Wine lane)"),
]


def _real_dll() -> Path:
    """NVIDIA's CUDA runtime from the test cache's win_amd64 wheels when there, else the Python stable-ABI DLL."""
    wheels = TEST_CACHE / "wheels" / "win_amd64"
    for pattern in ("cudart64_12.dll", "cudart64_13.dll"):
        found = sorted(wheels.glob(f"*/extracted/**/{pattern}")) if wheels.is_dir() else []
        if found:
            return found[0]
    return Path(sys.base_prefix) / "python3.dll"


@pytest.fixture
def only_on_path(tmp_path, monkeypatch) -> str:
    """A real DLL, under a name nothing else on the machine has, in a folder that only PATH names."""
    source = _real_dll()
    if not source.is_file():
        pytest.skip(f"no real DLL to load ({source})")
    folder = tmp_path / "only-on-path"
    folder.mkdir()
    name = "cudart64_12.dll" if source.name == "cudart64_12.dll" else source.name
    if shutil.which(name) or (Path(sys.executable).parent / name).exists():
        name = f"doctor-{name}"  # python3.dll beside python.exe: a renamed copy is found only through PATH
    shutil.copyfile(source, folder / name)
    monkeypatch.setenv("PATH", f"{folder};{os.environ.get('PATH', '')}")
    return str(folder / name)


def test_the_real_load_finds_a_dll_through_path_as_the_emulation_does(only_on_path):
    system = LiveSystem()
    name = Path(only_on_path).name
    resolution = Resolver(system).resolve("which", sys.executable, [name])
    confirmations = probe_confirmations(system, (resolution,))
    assert [c.name for c in confirmations] == [name]
    confirmation = confirmations[0]
    assert confirmation.error is None and confirmation.real is not None, confirmation
    assert system.paths.same(confirmation.real, only_on_path), confirmation
    assert confirmation.agrees, confirmation
    assert list(loader_emulation_differs(SimpleNamespace(confirmations=confirmations))) == []  # type: ignore[arg-type]


def test_which_agrees_for_a_dll_found_through_path(only_on_path, capsys):
    name = Path(only_on_path).name
    assert main(["which", name]) == 0
    out = capsys.readouterr().out
    assert "DISAGREES" not in out and "(agrees with the emulation)" in out, out
