"""Native code outside the known frameworks (issue 29): a package's extension that names a CUDA
library is a root of the process model; what it needs and cannot find is `dependency-missing`,
naming the package, the file and what provides the missing library."""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import Any

import pytest

from cudnn_doctor.findings import Severity
from cudnn_doctor.loads import PROCESS
from cudnn_doctor.system.interface import System
from tests.conftest import LINUX_BASE, WINDOWS_BASE, machine, run

SITE = "/home/dev/.venv/lib/python3.11/site-packages"
EXT = f"{SITE}/ctranslate2/_ext.cpython-311-x86_64-linux-gnu.so"
VENDORED = f"{SITE}/ctranslate2.libs/libctranslate2-bc15a5d0.so.4.5.0"
WIN_SITE = "C:\\Users\\dev\\env\\Lib\\site-packages"
WIN_DLL = f"{WIN_SITE}\\ctranslate2\\ctranslate2.dll"
WIN_PYD = f"{WIN_SITE}\\ctranslate2\\_ext.cp310-win_amd64.pyd"


def linux_python(**packages: str) -> list[dict[str, Any]]:
    return [
        {
            "executable": "/home/dev/.venv/bin/python",
            "version": "3.11.7",
            "current": True,
            "kind": "venv",
            "packages": packages,
            "frameworks": {},
        }
    ]


def ctranslate2_linux(with_cublas: bool) -> dict[str, Any]:
    """CTranslate2 as its manylinux wheel ships it: the extension imports the vendored library, which imports cuBLAS 12."""
    files: dict[str, Any] = {
        EXT: {"imports": ["libctranslate2-bc15a5d0.so.4.5.0", "libc.so.6"], "rpath": ["$ORIGIN/../ctranslate2.libs"]},
        VENDORED: {
            "soname": "libctranslate2-bc15a5d0.so.4.5.0",
            "imports": ["libcublas.so.12", "libc.so.6"],
            "rpath": ["$ORIGIN", "$ORIGIN/../nvidia/cublas/lib"],
        },
        f"{SITE}/ctranslate2/__init__.py": {"size": 2000},
    }
    if with_cublas:
        lib = f"{SITE}/nvidia/cublas/lib"
        files[f"{lib}/libcublas.so.12"] = {
            "soname": "libcublas.so.12",
            "imports": ["libcublasLt.so.12", "libc.so.6"],
            "rpath": ["$ORIGIN"],
        }
        files[f"{lib}/libcublasLt.so.12"] = {"soname": "libcublasLt.so.12", "imports": ["libc.so.6"]}
    return machine(LINUX_BASE, files=files, pythons=linux_python(ctranslate2="4.5.0"))


def missing(document: dict[str, Any]) -> list:
    return [f for f in run(document).findings if f.id == "dependency-missing"]


def test_a_package_extension_whose_cublas_is_missing():
    found = missing(ctranslate2_linux(with_cublas=False))
    assert len(found) == 1, [f.detail for f in found]
    detail = found[0].detail
    assert "ctranslate2" in detail and VENDORED in detail and "libcublas.so.12" in detail, detail
    assert "It is provided by" in detail, detail
    assert found[0].severity is Severity.ERROR
    assert found[0].evidence["package"] == "ctranslate2" and found[0].evidence["provider"]


def test_the_same_extension_with_its_cublas_present():
    diagnosis = run(ctranslate2_linux(with_cublas=True))
    assert "dependency-missing" not in {f.id for f in diagnosis.findings}
    loads = [r for r in diagnosis.facts.resolutions if r.package == "ctranslate2"]
    assert len(loads) == 1 and loads[0].framework == PROCESS
    assert any(s.name == "libcublas.so.12" and s.winner for s in loads[0].steps)


def test_a_library_the_package_misses_but_a_wheel_beside_it_has_is_reached_not_installed():
    """faster-whisper's case (ufal/whisper_streaming#17): nvidia-cudnn-cu11 is in the venv, but CTranslate2's load does not
    search nvidia/cudnn/lib. The fix puts that folder on the search path; it never says to install what is installed."""
    document = ctranslate2_linux(with_cublas=False)
    lib = f"{SITE}/nvidia/cudnn/lib"
    document["files"][VENDORED]["rpath"] = ["$ORIGIN"]
    document["files"][VENDORED]["imports"] = ["libcudnn.so.8", "libc.so.6"]
    document["files"][f"{lib}/libcudnn.so.8"] = {"soname": "libcudnn.so.8", "imports": ["libc.so.6"]}
    (found,) = [f for f in missing(document) if f.evidence.get("package") == "ctranslate2"]
    assert f"It is installed in {lib}" in found.detail, found.detail
    assert f"export LD_LIBRARY_PATH={lib}$" in found.fix[0] and not any("Install" in step for step in found.fix), (
        found.fix
    )
    # near miss: nothing of it in the venv: the fix says what provides it
    del document["files"][f"{lib}/libcudnn.so.8"]
    (found,) = [f for f in missing(document) if f.evidence.get("package") == "ctranslate2"]
    assert "It is installed in" not in found.detail and "LD_LIBRARY_PATH=" not in found.fix[0], found.fix


def test_an_extension_naming_no_cuda_library_is_not_a_root():
    files = {
        f"{SITE}/numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so": {
            "imports": ["libopenblas64_p-r0-0cf96a72.3.23.dev.so", "libc.so.6"]
        },
        f"{SITE}/numpy.libs/libopenblas64_p-r0-0cf96a72.3.23.dev.so": {"imports": ["libgfortran-040039e1.so.5.0.0"]},
    }
    document = ctranslate2_linux(with_cublas=True)
    document["files"].update(files)
    diagnosis = run(document)
    assert [r.package for r in diagnosis.facts.resolutions if r.package is not None] == ["ctranslate2"]
    assert "dependency-missing" not in {f.id for f in diagnosis.findings}


def test_the_cuda_libraries_themselves_are_not_roots():
    """The nvidia-* wheels provide cuBLAS: libcublas.so.12 importing a missing cuBLASLt is not a package's load."""
    lib = f"{SITE}/nvidia/cublas/lib"
    document = ctranslate2_linux(with_cublas=True)
    del document["files"][f"{lib}/libcublasLt.so.12"]
    diagnosis = run(document)
    assert [r.package for r in diagnosis.facts.resolutions if r.package is not None] == ["ctranslate2"]
    assert not any(
        f"{lib}/libcublas.so.12" in s.name for r in diagnosis.facts.resolutions for s in r.steps if s.how == "root"
    )


def ctranslate2_windows(with_cublas: bool, on_path: bool = False) -> dict[str, Any]:
    bin_dir = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\\bin"
    files: dict[str, Any] = {
        WIN_PYD: {"imports": ["ctranslate2.dll", "KERNEL32.dll"]},
        WIN_DLL: {"imports": ["cublas64_12.dll", "KERNEL32.dll"]},
    }
    folder = bin_dir if on_path else f"{WIN_SITE}\\ctranslate2"
    if with_cublas:
        files[f"{folder}\\cublas64_12.dll"] = {"imports": ["cublasLt64_12.dll", "KERNEL32.dll"]}
        files[f"{folder}\\cublasLt64_12.dll"] = {"imports": ["KERNEL32.dll"]}
    env = {"PATH": f"C:\\Windows\\System32;C:\\Windows;{bin_dir}"}
    python = {**WINDOWS_BASE["pythons"][0], "packages": {"ctranslate2": "4.5.0"}}
    return machine(WINDOWS_BASE, files=files, env=env, pythons=[python])


def test_windows_an_extension_dll_needing_cublas64_12():
    found = missing(ctranslate2_windows(with_cublas=False))
    assert len(found) == 1, [f.detail for f in found]
    assert "ctranslate2" in found[0].detail and "cublas64_12.dll" in found[0].detail and WIN_DLL in found[0].detail, (
        found[0].detail
    )
    assert "dependency-missing" not in {f.id for f in run(ctranslate2_windows(with_cublas=True)).findings}


def test_windows_an_extension_does_not_search_path():
    """Python 3.8+ loads an extension's imports from its folder and the default dirs, never PATH:
    a cuBLAS only on PATH is not found by the extension's static import."""
    found = missing(ctranslate2_windows(with_cublas=True, on_path=True))
    assert found and "cublas64_12.dll" in found[0].detail, [f.detail for f in found]
    assert "not PATH" in found[0].fix[0] and "os.add_dll_directory" in found[0].fix[0], found[0].fix


def test_a_framework_package_is_not_rooted_twice():
    """torch's own libraries are the framework's load: not a package root as well."""
    site = SITE
    files = {f"{site}/torch/lib/libtorch_cuda.so": {"imports": ["libcudart.so.12", "libc.so.6"], "rpath": ["$ORIGIN"]}}
    files[f"{site}/torch/lib/libcudart.so.12"] = {"soname": "libcudart.so.12", "imports": ["libc.so.6"]}
    python = linux_python(torch="2.4.0+cu121")
    python[0]["frameworks"] = {
        "torch": {"version": "2.4.0+cu121", "cuda": "12.1", "cudnn": 90100, "cuda_available": True}
    }
    document = ctranslate2_linux(with_cublas=True)
    document["files"].update(files)
    document["pythons"] = [{**python[0], "packages": {**python[0]["packages"], "ctranslate2": "4.5.0"}}]
    diagnosis = run(document)
    assert {r.framework for r in diagnosis.facts.resolutions} == {"torch", PROCESS}
    assert [r.package for r in diagnosis.facts.resolutions if r.package is not None] == ["ctranslate2"]


needs_gcc = pytest.mark.skipif(
    shutil.which("gcc") is None or sys.platform == "win32", reason="needs gcc to build ELF files"
)


@pytest.mark.live
@needs_gcc
def test_live_walk_and_the_names_cache(tmp_path, monkeypatch):
    """Live: the walk finds the native files (not in __pycache__ or dist-info), cuda_names reads the
    import table and the string scan, and the answer is kept by path, size and mtime."""
    from cudnn_doctor.system import native_cache
    from cudnn_doctor.system.live import LiveSystem

    site = tmp_path / "site-packages"
    (site / "fastspeech" / "ops").mkdir(parents=True)
    (site / "fastspeech" / "__pycache__").mkdir()
    (site / "fastspeech-1.0.dist-info").mkdir()
    source = tmp_path / "x.c"
    source.write_text('#include <dlfcn.h>\nvoid *f(void) { return dlopen("libcublas.so.12", 2); }\n')
    plain = tmp_path / "y.c"
    plain.write_text("int g(void) { return 1; }\n")
    cuda_ext = site / "fastspeech" / "ops" / "_kernels.cpython-311-x86_64-linux-gnu.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(cuda_ext), str(source)], check=True)
    for other in (
        site / "fastspeech" / "_plain.so",
        site / "fastspeech" / "__pycache__" / "x.so",
        site / "fastspeech-1.0.dist-info" / "y.so",
    ):
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(other), str(plain)], check=True)
    system = LiveSystem()
    assert system.native_files(str(site)) == sorted([str(cuda_ext), str(site / "fastspeech" / "_plain.so")])
    assert system.native_files(str(site), skip={"fastspeech"}) == []

    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(tmp_path / "state"))
    reads: list[str] = []

    def read(path: str) -> tuple[str, ...]:
        reads.append(path)
        return System.cuda_names(system, path)

    cache = native_cache.NativeNames()
    assert (
        cache.names(str(cuda_ext), read) == ("libcublas.so.12",)
        and cache.names(str(site / "fastspeech" / "_plain.so"), read) == ()
    )
    cache.save()
    again = native_cache.NativeNames()
    assert (
        again.names(str(cuda_ext), read) == ("libcublas.so.12",) and len(reads) == 2
    )  # from the state folder, not read
    with open(cuda_ext, "ab") as handle:
        handle.write(b"\0" * 16)  # changed: read again
    assert again.names(str(cuda_ext), read) == ("libcublas.so.12",) and len(reads) == 3


def test_windows_the_folders_a_package_adds_with_add_dll_directory():
    """A package whose __init__.py adds %CUDA_PATH%\\bin (or a folder beside itself) with os.add_dll_directory:
    its extension's imports are searched there too."""
    cuda = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4"
    init = (
        "import os\nfrom pathlib import Path\n"
        "if hasattr(os, 'add_dll_directory'):\n"
        "    os.add_dll_directory(os.path.join(os.environ['CUDA_PATH'], 'bin'))\n"
        "    here = Path(__file__).resolve().parent\n"
        "    os.add_dll_directory(str(here / 'lib'))\n"
    )
    document = ctranslate2_windows(with_cublas=True, on_path=True)
    document["env"]["CUDA_PATH"] = cuda
    document["files"][f"{WIN_SITE}\\ctranslate2\\__init__.py"] = {"text": init}
    document["files"][f"{WIN_SITE}\\ctranslate2\\lib\\README.txt"] = {"text": "x"}
    diagnosis = run(document)
    assert "dependency-missing" not in {f.id for f in diagnosis.findings}
    load = next(r for r in diagnosis.facts.resolutions if r.package == "ctranslate2")
    step = next(s for s in load.steps if s.name == "cublas64_12.dll")
    assert step.winner == f"{cuda}\\bin\\cublas64_12.dll" and f"{WIN_SITE}\\ctranslate2\\lib" in step.searched, (
        step.searched
    )
    # computed any other way (importlib.resources), the folder is not known: the load is judged without it
    document["files"][f"{WIN_SITE}\\ctranslate2\\__init__.py"] = {
        "text": "import os\nos.add_dll_directory(str(files(__name__)))\n"
    }
    assert "dependency-missing" in {f.id for f in run(document).findings}


@pytest.mark.parametrize("cublas, too_old", [("libcublas.so.12", True), ("libcublas.so.11", False)])
def test_the_driver_must_run_the_cuda_a_package_loads(cublas, too_old):
    """Driver 470 (CUDA 11.4) runs a package's cuBLAS 11 by minor-version compatibility, never its cuBLAS 12."""
    document = ctranslate2_linux(with_cublas=False)
    vendored = document["files"][VENDORED]
    vendored["imports"] = [cublas if n == "libcublas.so.12" else n for n in vendored["imports"]]
    document["nvml"] = {**document["nvml"], "driver_version": "470.223.02", "cuda_driver_version": 11040}
    found = [f for f in run(document).findings if f.id == "driver-too-old"]
    assert bool(found) == too_old, [f.detail for f in found]
    if found:
        assert "ctranslate2" in found[0].detail and cublas in found[0].detail and "525" in found[0].detail, found[
            0
        ].detail
