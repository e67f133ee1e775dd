"""Issue 29, class 1 on real binaries: CTranslate2's and CuPy's own files from the package registry (Linux and
Windows wheels, read member by member), put on a machine as pip installs them, judged by what they import and load.

CTranslate2 4.5.0 loads cuBLAS 12 by name at run time and ships only cuDNN 9's front library (the Linux wheel vendors
it renamed, the Windows wheel as cudnn64_9.dll); CuPy 13's CUDA bindings load libcudart.so.12 by name.
The tests skip without the registry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cudnn_doctor.system.binaries import read_binary
from tests.conftest import LINUX_BASE, WINDOWS_BASE, machine, run
from tests.remote_wheel import wheel_members

pytestmark = pytest.mark.network

LINUX_SITE = "/home/dev/.venv/lib/python3.11/site-packages"
WINDOWS_SITE = "C:\\Users\\dev\\env\\Lib\\site-packages"
NATIVE = (".so", ".dll", ".pyd")
LINUX_SYSTEM = (
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
)


def _native(name: str) -> bool:
    return name.endswith(NATIVE) or ".so." in name


def _real_files(project: str, version: str, tag: str, site: str, wanted=_native) -> dict[str, Any]:
    """Each native member of the wheel as a fixture file at its installed place, with what its real bytes say."""
    files = {}
    for path in wheel_members(project, version, tag, wanted):
        info = read_binary(str(path))
        member = path.as_posix().split(f"{project}-{version}-{tag}/", 1)[1]
        entry: dict[str, Any] = {
            "size": path.stat().st_size,
            "imports": list(info.imports),
            "loads": list(info.loads),
            "machine": info.machine,
        }
        if info.format == "elf":
            entry.update(
                {"soname": info.soname, "rpath": list(info.runpath)} if info.soname else {"rpath": list(info.runpath)}
            )
            if info.rpath:
                entry["dt_rpath"] = list(info.rpath)
        sep = "\\" if "\\" in site else "/"
        files[site + sep + member.replace("/", sep)] = entry
    return files


def _linux(files: dict[str, Any], packages: dict[str, str]) -> dict[str, Any]:
    system = {f"/usr/lib/x86_64-linux-gnu/{name}": {"soname": name} for name in LINUX_SYSTEM}
    system["/usr/lib/x86_64-linux-gnu/libcuda.so.1"] = {"soname": "libcuda.so.1", "imports": ["libc.so.6"]}
    python = {**LINUX_BASE["pythons"][0], "packages": packages}
    return machine(LINUX_BASE, files={**system, **files}, pythons=[python])


def _missing(document: dict[str, Any]) -> dict[str, Any]:
    return {f.evidence["name"]: f for f in run(document).findings if f.id == "dependency-missing"}


def _cublas_wheel_linux() -> dict[str, Any]:
    lib = f"{LINUX_SITE}/nvidia/cublas/lib"
    return {
        f"{lib}/libcublas.so.12": {
            "soname": "libcublas.so.12",
            "imports": ["libcublasLt.so.12", "libc.so.6"],
            "rpath": ["$ORIGIN"],
        },
        f"{lib}/libcublasLt.so.12": {"soname": "libcublasLt.so.12", "imports": ["libc.so.6"]},
    }


def test_ctranslate2_linux_needs_cublas_12_which_nothing_provides():
    files = _real_files("ctranslate2", "4.5.0", "cp311-cp311-manylinux_2_17_x86_64", LINUX_SITE)
    found = _missing(_linux(files, {"ctranslate2": "4.5.0"}))
    assert "libcublas.so.12" in found, sorted(found)
    vendored = [
        name for name in found if "-" in name.split(".so")[0]
    ]  # auditwheel's renamed libraries in ctranslate2.libs
    assert not vendored, f"found through the extension's DT_RPATH, as Python imports it: {vendored}"
    cublas = found["libcublas.so.12"]
    assert cublas.evidence.get("package") == "ctranslate2" and "libctranslate2-" in cublas.detail, cublas.detail
    assert cublas.fix[0] == '"/home/dev/.venv/bin/python" -m pip install nvidia-cublas-cu12', (
        cublas.fix
    )  # the wheel that ships it
    assert f"{LINUX_SITE}/nvidia/cublas/lib" in cublas.fix[1] and "LD_LIBRARY_PATH" in cublas.fix[1], cublas.fix


def test_ctranslate2_linux_with_the_cublas_wheel_beside_it_is_told_to_reach_it_not_install_it():
    files = _real_files("ctranslate2", "4.5.0", "cp311-cp311-manylinux_2_17_x86_64", LINUX_SITE)
    found = _missing(
        _linux({**files, **_cublas_wheel_linux()}, {"ctranslate2": "4.5.0", "nvidia-cublas-cu12": "12.4.5.8"})
    )
    cublas = found["libcublas.so.12"]
    assert f"{LINUX_SITE}/nvidia/cublas/lib" in cublas.detail and "does not search" in cublas.detail, cublas.detail
    assert not any("pip install" in step for step in cublas.fix) and any(
        "LD_LIBRARY_PATH" in step for step in cublas.fix
    ), cublas.fix


def test_cupy_linux_runtime_load_of_libcudart_12_is_cupys_own_load():
    def wanted(name: str) -> bool:
        return name.startswith("cupy_backends/cuda/api/") and _native(name)

    files = _real_files("cupy-cuda12x", "13.3.0", "cp311-cp311-manylinux2014_x86_64", LINUX_SITE, wanted)
    assert any(entry["loads"] and "libcudart.so.12" in entry["loads"] for entry in files.values()), (
        "CuPy's runtime binding loads it by name"
    )
    findings = run(_linux(files, {"cupy-cuda12x": "13.3.0"})).findings
    said = [f for f in findings if f.id == "cuda-libs-not-found" and "libcudart.so.12" in f.detail]
    assert said, [
        (f.id, f.detail) for f in findings
    ]  # CuPy is a known framework: its bindings are its load, judged once
    assert not [f for f in findings if f.id == "dependency-missing"], "not rooted again as a package"


def _windows(files: dict[str, Any], path: str = "") -> dict[str, Any]:
    base = {
        "C:\\Windows\\System32\\nvcuda.dll": {"size": 30000000},
        "C:\\Windows\\System32\\vcruntime140.dll": {"size": 100000},
    }
    for name in ("msvcp140.dll", "vcruntime140_1.dll", "python311.dll"):
        base[f"C:\\Windows\\System32\\{name}"] = {"size": 100000}
    env = {"PATH": f"C:\\Windows\\System32;C:\\Windows{';' + path if path else ''}"}
    python = {**WINDOWS_BASE["pythons"][0], "packages": {"ctranslate2": "4.5.0"}}
    return machine(WINDOWS_BASE, files={**base, **files}, env=env, pythons=[python])


def test_ctranslate2_windows_front_without_its_sub_libraries_and_without_cublas():
    files = _real_files("ctranslate2", "4.5.0", "cp311-cp311-win_amd64", WINDOWS_SITE)
    front = next(Path(p).name for p in files if p.lower().endswith("cudnn64_9.dll"))
    found = _missing(_windows(files))
    assert "cublas64_12.dll" in found, sorted(found)
    subs = [name for name in found if name.lower().startswith("cudnn_") and name.lower().endswith("64_9.dll")]
    assert subs, f"the {front} the wheel ships loads sub-libraries it does not ship: {sorted(found)}"
    assert all(found[name].evidence.get("package") == "ctranslate2" for name in ["cublas64_12.dll", *subs])


def test_ctranslate2_windows_a_cublas_on_path_serves_its_run_time_load():
    """cuBLAS is a LoadLibrary by name (not an import of the extension): the standard search, PATH included, finds it."""
    files = _real_files("ctranslate2", "4.5.0", "cp311-cp311-win_amd64", WINDOWS_SITE)
    toolkit = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\\bin"
    cublas = {
        f"{toolkit}\\cublas64_12.dll": {"imports": ["cublasLt64_12.dll", "KERNEL32.dll"]},
        f"{toolkit}\\cublasLt64_12.dll": {"imports": ["KERNEL32.dll"]},
    }
    found = _missing(_windows({**files, **cublas}, path=toolkit))
    assert "cublas64_12.dll" not in found, found["cublas64_12.dll"].detail
