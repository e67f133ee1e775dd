"""Real NVIDIA / ONNX Runtime Windows DLLs raise no false dependency-missing (issue 10).

Feature-specific lazy loads (cuFFT for FFT operators, NVRTC, nvcudart_hybrid64.dll) are optional by
a knowledge row spelt as a pattern; onnxruntime_providers_shared.dll is loaded by full path before
the provider; `which` prints no missing zlibwapi.dll under cuDNN 9.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cudnn_doctor.findings import Severity
from cudnn_doctor.loader import windows
from cudnn_doctor.loader.resolve import Resolver, Root
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import TEST_CACHE, WINDOWS_BASE, link_real_file, machine, onnxruntime_gpu_python, run

WHEELS = TEST_CACHE / "wheels" / "win_amd64"
REAL_PROVIDER = WHEELS / "onnxruntime-gpu-1.31.1/extracted/onnxruntime/capi/onnxruntime_providers_cuda.dll"
REAL_CUDART = WHEELS / "nvidia-cuda-runtime-13.0.96/extracted/nvidia/cu13/bin/x86_64/cudart64_13.dll"
ENV = "C:\\Users\\dev\\env"
PYTHON = f"{ENV}\\python.exe"
SITE = f"{ENV}\\Lib\\site-packages"
CAPI = f"{SITE}\\onnxruntime\\capi"
PROVIDER = f"{CAPI}\\onnxruntime_providers_cuda.dll"
SHARED = f"{CAPI}\\onnxruntime_providers_shared.dll"
SYS32 = "C:\\Windows\\System32"
CUDA = "C:\\CUDA\\bin"
CUDNN = "C:\\cudnn\\bin"
DLL = {"size": 1000, "imports": ["KERNEL32.dll"], "loads": []}
CUDNN9_PARTS = ("graph", "ops", "cnn", "adv", "engines_precompiled", "engines_runtime_compiled", "heuristic")
MSVC = ("MSVCP140.dll", "MSVCP140_ATOMIC_WAIT.dll", "VCRUNTIME140.dll", "VCRUNTIME140_1.dll")


def _cudnn(folder: str, version: str = "9.14.0.64", extra_loads: tuple[str, ...] = ()) -> dict[str, Any]:
    major = version.split(".")[0]
    parts = CUDNN9_PARTS if major == "9" else ("ops_infer", "cnn_infer")
    files = {
        f"{folder}\\cudnn64_{major}.dll": {
            "size": 300000,
            "version": version,
            "imports": ["KERNEL32.dll"],
            "loads": [f"cudnn_{p}64_{major}.dll" for p in parts],
        }
    }
    files.update(
        {
            f"{folder}\\cudnn_{p}64_{major}.dll": {
                "size": 1000,
                "version": version,
                "imports": ["KERNEL32.dll"],
                "loads": list(extra_loads),
            }
            for p in parts
        }
    )
    return files


def _ort(files: dict[str, Any], version: str = "1.31.1") -> dict[str, Any]:
    pythons = [onnxruntime_gpu_python(PYTHON, version)]
    base = {
        f"{SITE}\\onnxruntime\\__init__.py": {"text": ""},
        SHARED: DLL,
        **{f"{SYS32}\\{n}": DLL for n in MSVC},
        **_cudnn(CUDNN),
    }
    return machine(
        WINDOWS_BASE, files={**base, **files}, env={"PATH": f"{SYS32};C:\\Windows;{CUDA};{CUDNN}"}, pythons=pythons
    )


def _provider(loads: list[str], imports: tuple[str, ...] = ("cublas64_13.dll", "cublasLt64_13.dll")) -> dict[str, Any]:
    entry = {
        "size": 5000,
        "version": "1.31.1",
        "imports": [*imports, "onnxruntime_providers_shared.dll", "KERNEL32.dll"],
        "loads": loads,
    }
    files = {PROVIDER: entry, f"{CUDA}\\cudart64_13.dll": DLL}
    files.update({f"{CUDA}\\{n}": DLL for n in ("cublas64_13.dll", "cublasLt64_13.dll")})
    return files


def _missing(document: dict[str, Any]) -> dict[str, Severity]:
    """dependency-missing findings (symptoms included) by the names they report, with their severity."""
    from cudnn_doctor.checks import run_checks

    found = [f for f in run_checks(run(document).facts) if f.id == "dependency-missing"]
    return {f.detail: f.severity for f in found}


# --- small machines --------------------------------------------------------------------------


def test_feature_specific_lazy_loads_are_warnings_a_needed_load_stays_an_error():
    lazy = [
        "cudart64_13.dll",
        "cudart64_12.dll",
        "cudnn64_9.dll",
        "cufft64_12.dll",
        "nvcudart_hybrid64.dll",
        "nvrtc64_120_0.dll",
        "nvrtc64_130_0.dll",
    ]
    missing = _missing(_ort(_provider(lazy)))
    assert missing and all(severity == Severity.WARNING for severity in missing.values()), missing
    assert any("cufft64_12.dll" in m for m in missing) and any("nvrtc64_130_0.dll" in m for m in missing)
    missing = _missing(_ort(_provider([*lazy, "cusolver64_12.dll"])))  # no row marks cuSOLVER optional: a real error
    assert [s for m, s in missing.items() if "cusolver64_12.dll" in m] == [Severity.ERROR], missing


def test_a_pattern_row_covers_run_time_loads_only_and_only_its_own_shape():
    files = _provider(
        ["cufftw64_12.dll"], imports=("cufft64_12.dll",)
    )  # imported cuFFT is needed; cufftw is another library
    resolution = Resolver(FixtureSystem(_ort(files))).resolve("onnxruntime", PYTHON, [Root(PROVIDER, windows.ALTERED)])
    steps = {s.name.lower(): s for s in resolution.steps}
    assert steps["cufft64_12.dll"].failed and not steps["cufft64_12.dll"].optional
    assert steps["cufftw64_12.dll"].failed and not steps["cufftw64_12.dll"].optional


def test_onnxruntime_loads_its_shared_library_by_full_path_before_the_provider():
    files = _provider(["cudnn64_9.dll"])
    files[SHARED] = DLL
    document = _ort(files)
    document["env"]["PATH"] = f"{SYS32};C:\\Windows;{CUDA};{CUDNN}"
    resolution = next(r for r in run(document).facts.resolutions if r.framework == "onnxruntime")
    roots = [s for s in resolution.steps if s.how == "root"]
    names = [s.name for s in roots]
    assert names.index(SHARED) < names.index(PROVIDER) and roots[names.index(SHARED)].winner == SHARED
    shared_import = next(
        s for s in resolution.steps if s.how == "import" and s.name == "onnxruntime_providers_shared.dll"
    )
    assert shared_import.winner == SHARED and shared_import.reused
    assert not any("onnxruntime_providers_shared" in m for m in _missing(document))


def _which(tmp_path: Path, document: dict[str, Any], name: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from cudnn_doctor.cli import main

    (tmp_path / "m.yaml").write_text(yaml.safe_dump(document))
    code = main(["which", name, "--fixture", str(tmp_path / "m.yaml"), "--python", PYTHON])
    return code, capsys.readouterr().out


def test_which_on_the_provider_finds_the_shared_library_beside_it(tmp_path, capsys):
    code, out = _which(tmp_path, _ort(_provider(["cudnn64_9.dll"])), PROVIDER, capsys)
    assert out.splitlines()[0].startswith(PROVIDER) and f"result: {PROVIDER}" in out
    assert "NOT FOUND" not in out and SHARED in out and code == 0, out


@pytest.mark.parametrize(("version", "shown"), [("9.14.0.64", False), ("8.9.7.29", True)])
def test_which_prints_a_missing_zlibwapi_only_for_the_cudnn_releases_that_need_it(tmp_path, capsys, version, shown):
    files = _cudnn("C:\\other", version, extra_loads=("zlibwapi.dll",))
    document = _ort(files)
    document["env"]["PATH"] = "C:\\other;" + document["env"]["PATH"]  # its sub-libraries, not the other cuDNN's
    code, out = _which(tmp_path, document, f"C:\\other\\cudnn64_{version[0]}.dll", capsys)
    assert any("zlibwapi.dll" in line and "NOT FOUND" in line for line in out.splitlines()) is shown, out
    assert "NOT FOUND" in out or code == 0


# --- the real files --------------------------------------------------------------------------


@pytest.fixture
def real_machine(tmp_path: Path) -> Path:
    """onnxruntime-gpu 1.31.1's provider and NVIDIA's cudart64_13.dll (linked, not copied), read by the project's PE reader."""
    if not REAL_PROVIDER.is_file() or not REAL_CUDART.is_file():
        pytest.skip(
            "the onnxruntime-gpu 1.31.1 / nvidia-cuda-runtime 13.0.96 win_amd64 wheels are not in the test cache"
        )
    link_real_file(REAL_PROVIDER, tmp_path / "provider.dll")
    link_real_file(REAL_CUDART, tmp_path / "cudart.dll")
    files = {
        PROVIDER: {"source": "provider.dll", "version": "1.31.1"},
        f"{CUDA}\\cudart64_13.dll": {"source": "cudart.dll"},
    }
    files.update({f"{CUDA}\\{n}": DLL for n in ("cublas64_13.dll", "cublasLt64_13.dll")})
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(_ort(files)))
    return tmp_path / "m.yaml"


def test_real_provider_and_cudart_raise_no_dependency_error(real_machine):
    system = FixtureSystem.from_file(real_machine)
    assert {"cufft64_12.dll", "nvcudart_hybrid64.dll", "nvrtc64_130_0.dll"} <= set(
        system.binary(PROVIDER).loads
    )  # what the scan reads
    from cudnn_doctor.checks import run_checks
    from cudnn_doctor.diagnose import diagnose

    findings = [f for f in run_checks(diagnose(system).facts) if f.id == "dependency-missing"]
    assert findings and all(f.severity == Severity.WARNING for f in findings), [
        (f.severity, f.detail) for f in findings
    ]
    assert not any("onnxruntime_providers_shared" in f.detail for f in findings)


def test_which_on_the_real_provider_finds_everything_it_needs(real_machine, capsys):
    from cudnn_doctor.cli import main

    code = main(["which", PROVIDER, "--fixture", str(real_machine), "--python", PYTHON])
    out = capsys.readouterr().out
    not_found = [line for line in out.splitlines() if "NOT FOUND" in line]
    assert code == 0 and not_found and all(line.endswith("NOT FOUND (optional)") for line in not_found), out
    assert "onnxruntime_providers_shared.dll" in out
