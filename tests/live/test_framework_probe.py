"""Framework probes run in a child interpreter: real torch, a framework that breaks, and no trace in the home folder."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest
from packaging.utils import canonicalize_name

from cudnn_doctor.system import pyenv
from cudnn_doctor.system.live import LiveSystem
from tests.interpreters import pth_interpreter

pytestmark = pytest.mark.live  # every test here touches this machine


class Target(NamedTuple):
    python: str  # the interpreter whose frameworks are probed
    site: Path  # a folder on its sys.path where tests put stand-in frameworks


@pytest.fixture(params=["PYTHONPATH", "._pth"])
def target(request, tmp_path, monkeypatch) -> Target:
    """The running interpreter with the folder on PYTHONPATH, or a copy of it whose `._pth` file names the
    folder (python.org's embeddable CPython, which ignores PYTHONPATH: the Windows lane's own interpreter)."""
    site = tmp_path / "site"
    site.mkdir()
    if request.param == "._pth":
        return Target(str(pth_interpreter(tmp_path / "embedded", [site])), site)
    if pyenv.pth_file(Path(sys.executable)) is not None:
        pytest.skip("this interpreter's ._pth file makes it ignore PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(site))
    return Target(sys.executable, site)


def _module(site, name, body):
    package = site / name
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(body), encoding="utf-8")


def test_a_framework_that_raises_on_import_is_recorded_not_raised(target):
    _module(target.site, "paddle", "raise RuntimeError('libcudnn.so.8: cannot open shared object file')\n")
    report = LiveSystem().framework_reports(target.python, ["paddle"], timeout=60)["paddle"]
    assert report["import_error"] == "RuntimeError: libcudnn.so.8: cannot open shared object file"


def test_a_message_with_quotes_newlines_and_any_character_comes_back_whole(target):
    """The child writes its report as a Python literal (no json import there): every string survives the trip."""
    message = "can't load \"cudnn64_8.dll\"\\n\tline two \u00e9\u2192\U0001f600 \x00 {'a': [1]}"
    _module(target.site, "paddle", f"raise OSError({message!r})\n")
    report = LiveSystem().framework_reports(target.python, ["paddle"], timeout=60)["paddle"]
    assert report["import_error"] == f"OSError: {message}"


def test_an_error_while_probing_keeps_the_version(target):
    _module(
        target.site,
        "onnxruntime",
        """
        __version__ = "1.16.3"
        def get_available_providers():
            raise OSError("provider bridge failed")
    """,
    )
    report = LiveSystem().framework_reports(target.python, ["onnxruntime"], timeout=60)["onnxruntime"]
    assert report["version"] == "1.16.3" and report["error"] == "OSError: provider bridge failed"


def test_cupy_reports_its_runtime_and_a_driver_failure(target):
    """CuPy's API as of v13/v14: cupy.cuda.runtime answers from the CUDA runtime it loaded, and
    getDeviceCount raises CUDARuntimeError without a usable driver; cuDNN is optional."""
    _module(target.site, "cupy", "__version__ = '13.3.0'\nfrom cupy import cuda\n")
    (target.site / "cupy" / "cuda").mkdir()
    (target.site / "cupy" / "cuda" / "__init__.py").write_text("from cupy.cuda import runtime\n", encoding="utf-8")
    (target.site / "cupy" / "cuda" / "runtime.py").write_text(
        textwrap.dedent(
            """
            is_hip = False
            class CUDARuntimeError(RuntimeError):
                pass
            def runtimeGetVersion():
                return 12040
            def getDeviceCount():
                raise CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
            """
        ),
        encoding="utf-8",
    )
    report = LiveSystem().framework_reports(target.python, ["cupy"], timeout=60)["cupy"]
    assert report["version"] == "13.3.0" and report["cuda"] == 12040 and report["cuda_available"] is False
    assert "CUDA driver version is insufficient" in report["error"] and "cudnn" not in report


def test_probes_run_in_parallel_and_time_out(target, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # a pool of one would run paddle after jax hung, and skip it
    _module(target.site, "jax", "import time\ntime.sleep(30)\n")
    _module(target.site, "paddle", "raise ImportError('no paddle')\n")
    reports = LiveSystem().framework_reports(target.python, ["jax", "paddle"], timeout=3)
    assert "took longer than 3 s" in reports["jax"]["error"]
    assert reports["paddle"]["import_error"] == "ImportError: no paddle"


def test_importing_leaves_no_trace_in_the_home_folder(target, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("KERAS_HOME", raising=False)
    _module(
        target.site,
        "tensorflow",
        """
        import os, sys
        for path in ("~/.keras/keras.json", "~/.cache/onnxruntime/device_id"):
            full = os.path.expanduser(path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            open(full, "w").write("{}")
        sys.stderr.write("W dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'\\n")
        __version__ = "2.12.0"
        class test:
            is_built_with_cuda = staticmethod(lambda: True)
        class config:
            list_physical_devices = staticmethod(lambda kind: [])
    """,
    )
    report = LiveSystem().framework_reports(target.python, ["tensorflow"], timeout=60)["tensorflow"]
    assert report["version"] == "2.12.0" and report["built_with_cuda"] is True and report["gpus"] == []
    assert "libcudart.so.11.0" in report["log"]
    assert list(home.iterdir()) == []


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed (CI installs torch==2.13.0)"
)
def test_real_torch_cpu_build():
    report = LiveSystem().framework_reports(sys.executable, ["torch"], timeout=120)["torch"]
    import torch

    assert report["version"] == torch.__version__
    assert report["cuda"] == torch.version.cuda
    if torch.version.cuda is None:
        assert report["cuda_available"] is False and report["device_count"] == 0
    assert "import_error" not in report


def test_live_python_info_reads_metadata_without_importing():
    info = LiveSystem().python_info(sys.executable)
    assert info.version == ".".join(map(str, sys.version_info[:3]))
    assert info.packages.get("packaging") and info.packages.get("pyyaml")
    # under a ._pth file (the embeddable Python of the Windows lane) every folder it names counts, this checkout's src too
    governed = pyenv.pth_file(Path(sys.executable)) is not None
    folders = [p for p in sys.path if (governed or p.endswith(("site-packages", "dist-packages"))) and os.path.isdir(p)]
    expected: dict[str, str] = {}
    for dist in importlib.metadata.distributions(path=folders):
        expected.setdefault(canonicalize_name(dist.metadata["Name"]), dist.version)
    assert info.packages == expected  # every distribution importlib.metadata sees, first folder wins
