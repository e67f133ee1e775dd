"""Each cuDNN and library finding on a machine built for it, and its near miss."""

from __future__ import annotations

import re
from typing import Any

from cudnn_doctor.findings import Severity
from tests.conftest import LINUX_BASE, WINDOWS_BASE, machine, run

CUDA = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8"
PARTS = ("ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train")
TF = {
    "tensorflow": {
        "version": "2.10.0",
        "built_with_cuda": True,
        "gpus": [],
        "build_info": {"cuda_version": "64_112", "cudnn_version": "64_8"},
    }
}


def cudnn8(folder: str, version: str = "8.9.7.29", cuda: int = 11, parts=PARTS, **overrides: Any) -> dict[str, Any]:
    """cuDNN 8 DLLs as NVIDIA ships them: the front library loads its parts, ops_infer loads cuBLAS and zlib."""
    files = {
        f"{folder}\\cudnn64_8.dll": {
            "size": 300000,
            "version": version,
            "imports": ["KERNEL32.dll"],
            "loads": [f"cudnn_{p}64_8.dll" for p in PARTS] + ["zlibwapi.dll"],
        }
    }
    for part in parts:
        loads = [f"cublas64_{cuda}.dll", f"cublasLt64_{cuda}.dll", "zlibwapi.dll"] if part == "ops_infer" else []
        files[f"{folder}\\cudnn_{part}64_8.dll"] = {
            "size": 9000000,
            "version": version,
            "imports": ["KERNEL32.dll"],
            "loads": loads,
        }
    for path, changes in overrides.items():
        files[path] = {**files.get(path, {}), **changes}
    return files


def toolkit(extra: dict[str, Any], path_extra: str = "") -> dict[str, Any]:
    files = {
        f"{CUDA}\\bin\\{name}": {"size": 1000, "imports": ["KERNEL32.dll"]}
        for name in ("cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll", "zlibwapi.dll", "nvcc.exe")
    }
    files[f"{CUDA}\\include\\cudnn.h"] = {"size": 100}
    files[f"{CUDA}\\include\\cudnn_version.h"] = {
        "text": "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 7\n"
    }
    files[f"{CUDA}\\lib\\x64\\cudnn.lib"] = {"size": 100}
    files.update(extra)
    env = {"PATH": f"{path_extra}{CUDA}\\bin;C:\\Windows\\System32;C:\\Windows", "CUDA_PATH": CUDA}
    pythons = [
        {
            "executable": "C:\\env\\python.exe",
            "version": "3.10.11",
            "current": True,
            "kind": "conda",
            "packages": {"tensorflow": "2.10.0"},
            "frameworks": TF,
        }
    ]
    return machine(WINDOWS_BASE, files=files, env=env, pythons=pythons)


def found(document) -> dict[str, Any]:
    return {f.id: f for f in run(document).findings}


def test_healthy_cudnn_has_no_library_findings():
    ids = set(found(toolkit(cudnn8(f"{CUDA}\\bin"))))
    assert not {i for i in ids if i.startswith(("cudnn-", "library-", "dependency-"))}, ids


def test_zlibwapi_missing_for_cudnn_8_9_but_not_for_cudnn_9():
    document = toolkit(cudnn8(f"{CUDA}\\bin"))
    del document["files"][f"{CUDA}\\bin\\zlibwapi.dll"]
    finding = found(document)["dependency-missing"]
    assert "zlibwapi.dll" in finding.detail and "winimage" in finding.fix[0] and finding.severity is Severity.ERROR


def test_cudnn_for_cuda12_in_a_cuda11_setup():
    result = found(toolkit(cudnn8(f"{CUDA}\\bin", cuda=12)))
    assert "cudnn-cuda-mismatch" in result and "CUDA 12" in result["cudnn-cuda-mismatch"].detail
    missing = [f for f in run(toolkit(cudnn8(f"{CUDA}\\bin", cuda=12))).findings if f.id == "dependency-missing"]
    assert {"cublas64_12.dll", "cublasLt64_12.dll"} == {f.evidence["name"] for f in missing}
    assert all("the CUDA 12 toolkit" in f.detail for f in missing)


def test_partial_install_and_its_near_miss():
    result = found(toolkit(cudnn8(f"{CUDA}\\bin", parts=("ops_infer",))))
    assert "cudnn_cnn_infer64_8.dll" in result["cudnn-partial-install"].detail


def test_older_copy_first_on_path_is_shadowed_and_too_old():
    old = cudnn8("C:\\tools\\cudnn\\bin", version="8.0.5.39")
    result = found(toolkit({**cudnn8(f"{CUDA}\\bin"), **old}, path_extra="C:\\tools\\cudnn\\bin;"))
    assert result["cudnn-shadowed"].severity is Severity.ERROR
    assert "C:\\tools\\cudnn\\bin\\cudnn64_8.dll" in result["cudnn-shadowed"].detail
    assert "cudnn-version-mismatch" in result
    same = cudnn8("C:\\tools\\cudnn\\bin")
    assert (
        found(toolkit({**cudnn8(f"{CUDA}\\bin"), **same}, path_extra="C:\\tools\\cudnn\\bin;"))[
            "cudnn-shadowed"
        ].severity
        is Severity.WARNING
    )


def test_mixed_versions_within_one_folder():
    files = cudnn8(f"{CUDA}\\bin", **{f"{CUDA}\\bin\\cudnn_cnn_infer64_8.dll": {"version": "8.2.0.53"}})
    assert "8.2.0" in found(toolkit(files))["cudnn-mixed-versions"].detail


def test_system32_copy():
    files = {
        **cudnn8(f"{CUDA}\\bin"),
        "C:\\Windows\\System32\\cudnn64_8.dll": {"size": 300000, "version": "8.9.7.29", "imports": ["KERNEL32.dll"]},
    }
    result = found(toolkit(files))
    assert "cudnn-in-system-dir" in result and "cudnn-shadowed" in result


def test_nested_layout_and_missing_headers_and_import_libraries():
    nested = found(toolkit(cudnn8(f"{CUDA}\\cuda\\bin")))
    assert "cudnn-nested-layout" in nested and f"{CUDA}\\cuda" in nested["cudnn-nested-layout"].detail
    # near miss: the toolkit's `cudnn` folder is a link to a shared installation (kept there on purpose): not nested
    linked = toolkit({**cudnn8("D:\\sdk\\cudnn-8.9\\bin"), f"{CUDA}\\cudnn": {"link": "D:\\sdk\\cudnn-8.9"}})
    assert "cudnn-nested-layout" not in found(linked)
    document = toolkit(cudnn8(f"{CUDA}\\bin"))
    for name in ("include\\cudnn_version.h", "lib\\x64\\cudnn.lib"):
        del document["files"][f"{CUDA}\\{name}"]
    result = found(document)
    assert "cudnn_version.h" in result["cudnn-header-missing"].detail and "cudnn-import-lib-missing" in result


def test_zero_bytes_unreadable_and_wrong_architecture():
    files = cudnn8(
        f"{CUDA}\\bin",
        **{
            f"{CUDA}\\bin\\cudnn_cnn_infer64_8.dll": {"size": 0},
            f"{CUDA}\\bin\\cudnn_adv_infer64_8.dll": {"readable": False},
            f"{CUDA}\\bin\\cudnn_ops_train64_8.dll": {"machine": "x86"},
        },
    )
    result = found(toolkit(files))
    assert "cudnn_cnn_infer64_8.dll" in result["library-zero-bytes"].detail
    assert "cudnn_adv_infer64_8.dll" in result["library-unreadable"].detail
    assert "x86" in result["library-wrong-architecture"].detail


def test_linux_optional_nvrtc_is_a_warning_and_system_copy_owned_by_dpkg_is_fine():
    lib = "/usr/lib/x86_64-linux-gnu"
    files = {
        f"{lib}/libcudnn.so.8": {
            "soname": "libcudnn.so.8",
            "imports": ["libc.so.6"],
            "loads": [f"libcudnn_{p}.so.8" for p in PARTS],
        },
        f"{lib}/libcudart.so.11.0": {"soname": "libcudart.so.11.0"},
        "/var/lib/dpkg/info/libcudnn8.list": {"text": f"{lib}/libcudnn.so.8\n"},
    }
    for part in PARTS:
        files[f"{lib}/libcudnn_{part}.so.8"] = {
            "soname": f"libcudnn_{part}.so.8",
            "imports": ["libc.so.6"],
            "loads": ["libnvrtc.so"] if part == "cnn_infer" else [],
        }
    tf = {
        "tensorflow": {
            "version": "2.12.0",
            "built_with_cuda": True,
            "gpus": [],
            "build_info": {"cuda_version": "11.8", "cudnn_version": "8"},
        }
    }
    pythons = [
        {
            "executable": "/v/bin/python",
            "version": "3.10.12",
            "current": True,
            "kind": "venv",
            "packages": {"tensorflow": "2.12.0"},
            "frameworks": tf,
        }
    ]
    result = found(machine(LINUX_BASE, files=files, pythons=pythons))
    assert (
        result["dependency-missing"].severity is Severity.WARNING
        and "libnvrtc.so" in result["dependency-missing"].detail
    )
    assert "cudnn-in-system-dir" not in result


def _linux_python(frameworks, packages):
    return [
        {
            "executable": "/v/bin/python",
            "version": "3.11.7",
            "current": True,
            "kind": "venv",
            "packages": packages,
            "frameworks": frameworks,
        }
    ]


def test_version_mismatch_from_jax_and_torch_messages():
    jax = {
        "jax": {
            "version": "0.4.30",
            "devices": ["CpuDevice(id=0)"],
            "warning": "CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version 8906, which is newer.",
        }
    }
    finding = found(machine(LINUX_BASE, pythons=_linux_python(jax, {"jax": "0.4.30"})))["cudnn-version-mismatch"]
    assert "loaded 8.6.0, compiled with 8.9.6" in finding.detail
    torch = {
        "torch": {
            "version": "2.0.1+cu118",
            "cuda": "11.8",
            "cuda_available": True,
            "device_count": 1,
            "arch_list": ["sm_89"],
            "error": "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 7, 0) but found runtime version (8, 5, 0).",
        }
    }
    assert (
        "loaded 8.5.0, compiled with 8.7.0"
        in found(machine(LINUX_BASE, pythons=_linux_python(torch, {"torch": "2.0.1+cu118"})))[
            "cudnn-version-mismatch"
        ].detail
    )


def test_missing_library_named_in_an_import_error_is_a_missing_dependency():
    torch = {
        "torch": {
            "import_error": "OSError: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory"
        }
    }
    finding = found(machine(LINUX_BASE, pythons=_linux_python(torch, {"torch": "2.0.1"})))["dependency-missing"]
    assert "libcudnn_ops_infer.so.8" in finding.detail and "cuDNN" in finding.detail


def test_tensorflow_without_kernels_for_the_gpu():
    tf = {
        "tensorflow": {
            "version": "2.4.0",
            "built_with_cuda": True,
            "gpus": ["/physical_device:GPU:0"],
            "log": "E tensorflow/stream_executor/cuda/cuda_driver.cc] failed to run cuBLAS routine: CUDA_ERROR_NO_BINARY_FOR_GPU",
        }
    }
    assert "gpu-arch-unsupported" in found(machine(LINUX_BASE, pythons=_linux_python(tf, {"tensorflow": "2.4.0"})))


CUDNN9_PARTS = ("graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv")


def cudnn9(folder: str, version: str = "9.1.0.70", cuda: int = 12) -> dict[str, Any]:
    """cuDNN 9 DLLs: the front library loads the graph and engine libraries at run time."""
    parts = CUDNN9_PARTS
    files = {
        f"{folder}\\cudnn64_9.dll": {
            "size": 300000,
            "version": version,
            "imports": ["KERNEL32.dll"],
            "loads": [f"cudnn_{p}64_9.dll" for p in parts],
        }
    }
    for part in parts:
        loads = [f"cublas64_{cuda}.dll", f"cublasLt64_{cuda}.dll"] if part == "ops" else []
        files[f"{folder}\\cudnn_{part}64_9.dll"] = {
            "size": 9000000,
            "version": version,
            "imports": ["KERNEL32.dll"],
            "loads": loads,
        }
    return files


def test_a_framework_that_needs_cudnn_8_where_only_cudnn_9_is_installed():
    document = toolkit(cudnn9(f"{CUDA}\\bin", cuda=11))
    document["files"][f"{CUDA}\\include\\cudnn_version.h"] = {
        "text": "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"
    }
    findings = run(document).findings
    by_id = {f.id: f for f in findings}
    mismatch = by_id["cudnn-version-mismatch"]
    assert "needs cuDNN 8" in mismatch.detail and "only other majors are installed: cuDNN 9.1.0" in mismatch.detail, (
        mismatch.detail
    )
    assert mismatch.evidence["installed"] == ["9.1.0"] and mismatch.severity is Severity.ERROR  # the header comes first
    assert re.search(r"cuDNN 8\.(x|\d)", mismatch.fix[0]), (
        mismatch.fix
    )  # a cuDNN 8: the planner's release once it can plan TensorFlow, else "8.x"
    # The framework's missing cudnn64_8.dll is the same problem: said under the version mismatch, not beside it.
    missing = by_id["cudnn-missing"]
    assert missing.symptom_of is not None and findings[missing.symptom_of].id == "cudnn-version-mismatch"


def test_cudnn_8_and_9_side_by_side_satisfy_a_cudnn_8_framework():
    result = found(toolkit({**cudnn9(f"{CUDA}\\bin", cuda=11), **cudnn8(f"{CUDA}\\bin")}))
    assert "cudnn-version-mismatch" not in result and "cudnn-missing" not in result, sorted(result)


def _torch_with_pip_cudnn9(engine_imports: list[str], torch_imports: list[str]) -> dict[str, Any]:
    """torch 2.x on Linux: libtorch_cuda.so imports the nvidia-cudnn-cu12 front library through its RUNPATH;
    the front loads the graph and engine libraries at run time."""
    site = "/v/lib/python3.11/site-packages"
    cudnn = f"{site}/nvidia/cudnn/lib"
    files: dict[str, Any] = {
        f"{site}/torch/lib/libtorch_cuda.so": {
            "imports": ["libcudnn.so.9", *torch_imports, "libc.so.6"],
            "rpath": ["$ORIGIN/../../nvidia/cudnn/lib"],
        },
        f"{cudnn}/libcudnn.so.9": {
            "soname": "libcudnn.so.9",
            "imports": ["libc.so.6"],
            "loads": [f"libcudnn_{p}.so.9" for p in CUDNN9_PARTS],
            "rpath": ["$ORIGIN"],
        },
    }
    for part in CUDNN9_PARTS:
        imports = engine_imports if part == "engines_precompiled" else []
        files[f"{cudnn}/libcudnn_{part}.so.9"] = {
            "soname": f"libcudnn_{part}.so.9",
            "imports": [*imports, "libc.so.6"],
            "rpath": ["$ORIGIN"],
        }
    torch = {
        "torch": {
            "version": "2.4.0+cu124",
            "cuda": "12.4",
            "cuda_available": True,
            "device_count": 1,
            "cudnn": 90100,
            "arch_list": ["sm_89"],
        }
    }
    return machine(
        LINUX_BASE, files=files, pythons=_linux_python(torch, {"torch": "2.4.0+cu124", "nvidia-cudnn-cu12": "9.1.0.70"})
    )


def test_a_working_torch_vouches_for_its_static_imports_not_for_cudnns_lazy_loads():
    # torch loaded libcudnn.so.9 and libcudart.so.12 (it says cuDNN works), though the emulation cannot see libcudart: no finding.
    assert "dependency-missing" not in found(_torch_with_pip_cudnn9([], ["libcudart.so.12"]))
    # An engine library cuDNN loads only when the first convolution runs needs a cuBLASLt that is nowhere: still an error.
    finding = found(_torch_with_pip_cudnn9(["libcublasLt.so.12"], []))["dependency-missing"]
    assert "libcudnn_engines_precompiled.so.9" in finding.detail and "libcublasLt.so.12" in finding.detail, (
        finding.detail
    )
    assert finding.severity is Severity.ERROR
    # A name the live process already holds (torch imported it) is reused by the engine library: no finding.
    assert "dependency-missing" not in found(_torch_with_pip_cudnn9(["libcublasLt.so.12"], ["libcublasLt.so.12"]))


def test_a_framework_that_says_it_cannot_load_cudnn_outranks_the_emulation():
    """PaddlePaddle's "Cannot load cudnn shared library" names no file (PaddlePaddle/Paddle#36238): the emulation finds a
    cuDNN, but the framework's own failed load is the evidence, and cudnn-missing says so with its line."""
    document = toolkit(cudnn8(f"{CUDA}\\bin"))
    paddle = {
        "version": "2.5.2",
        "compiled_with_cuda": True,
        "cuda": "11.8",
        "cudnn_version": "8.9.7",
        "error": "RuntimeError: (PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion.\n"
        "  [Hint: cudnn_dso_handle should not be null.] (at ..\\paddle\\phi\\backends\\dynload\\cudnn.cc:64)",
    }
    document["pythons"][0]["packages"] = {"paddlepaddle-gpu": "2.5.2.post118"}
    document["pythons"][0]["frameworks"] = {"paddle": paddle}
    missing = found(document)["cudnn-missing"]
    assert "Cannot load cudnn shared library" in missing.detail and "cudnn64_8.dll" in missing.detail, missing.detail
    assert "framework's own load of it failed" in missing.detail, missing.detail


def test_a_jax_style_minimum_is_said_in_the_mismatch():
    document = toolkit(cudnn8(f"{CUDA}\\bin"))
    tf = dict(
        TF["tensorflow"],
        log="Outdated cuDNN installation found.\nVersion JAX was built against: 8907\nMinimum supported: 9100\nInstalled version: 8907",
    )
    document["pythons"][0]["frameworks"] = {"tensorflow": tf}
    mismatch = found(document)["cudnn-version-mismatch"]
    assert "loaded 8.9.7, compiled with 8.9.7, needs at least 9.1.0" in mismatch.detail, mismatch.detail
