"""Run-time load names: only whole strings count, versions of one library are a try-list, and a
name completed at run time (`libnvrtc.so.%d`) is satisfied by any file of its shape (issue 9, item 7)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cudnn_doctor.binaries.names import family, group_loads, is_pattern, pattern_regex, spelling
from cudnn_doctor.findings import Severity
from cudnn_doctor.loader.resolve import Resolver
from cudnn_doctor.loads import LoadStep
from cudnn_doctor.system.binaries import read_binary
from cudnn_doctor.system.binaries.scan import library_names
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import LINUX_BASE, TEST_CACHE, WINDOWS_BASE, machine, run

CACHE = TEST_CACHE
ORT_LINUX = (
    CACHE
    / "wheels/manylinux_2_28_x86_64/onnxruntime-gpu-1.31.1/extracted/onnxruntime/capi/libonnxruntime_providers_cuda.so"
)
ORT_WINDOWS = (
    CACHE / "wheels/win_amd64/onnxruntime-gpu-1.31.1/extracted/onnxruntime/capi/onnxruntime_providers_cuda.dll"
)
WELL_FORMED = re.compile(r"^(lib[A-Za-z0-9_+-]+\.so(\.([0-9]+|%d))*\.?|[A-Za-z0-9_+%-]+\.dll)$", re.IGNORECASE)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None or sys.platform != "linux", reason="needs gcc on Linux")


# --- names.py: what a name stands for ---------------------------------------------------------


def test_families_versions_and_patterns_of_elf_and_pe_names():
    assert spelling("libcudart.so.12.4.127") == ("libcudart.so", "12.4.127")
    assert spelling("libnvrtc.so") == ("libnvrtc.so", None)
    assert family("nvrtc64_120_0.dll") == family("NVRTC64_130_0.DLL") == family("nvrtc64_%d%d_0.dll") == "nvrtc"
    assert family("cudnn_ops_infer64_8.dll") == "cudnn_ops_infer" and family("nvJitLink_120_0.dll") == "nvjitlink"
    assert family("zlibwapi.dll") == "zlibwapi" and family("nvcudart_hybrid64.dll") == "nvcudart_hybrid64"
    assert [
        is_pattern(n) for n in ("libnvrtc.so.%d", "libnvrtc.so.", "cudnn64_%d.dll", "libnvrtc.so.13", "libnvrtc.so")
    ] == [True, True, True, False, False]


def test_a_pattern_stands_for_the_files_its_formatting_can_produce():
    assert pattern_regex("libnvrtc.so.%d", False).match("libnvrtc.so.13")
    assert not pattern_regex("libnvrtc.so.%d", False).match(
        "libnvrtc.so.13.0.88"
    )  # dlopen gets "libnvrtc.so.13", nothing longer
    assert not pattern_regex("libnvrtc.so.%d", False).match("libnvrtc.so")
    assert pattern_regex("libnvrtc.so.", False).match(
        "libnvrtc.so.13.0.88"
    )  # the version string follows the dot, whatever its length
    assert pattern_regex("cudnn64_%d.dll", True).match("CUDNN64_9.DLL") and not pattern_regex(
        "cudnn64_%d.dll", True
    ).match("cudnn_ops64_9.dll")


def test_versions_of_one_library_form_one_try_list_newest_first():
    groups = group_loads(
        [
            "libcudart.so.12",
            "libcuda.so.1",
            "libcudart.so.13",
            "libnvrtc.so.%d",
            "libnvrtc.so.12",
            "nvrtc64_120_0.dll",
            "nvrtc64_130_0.dll",
        ]
    )
    assert groups == [
        ("libcudart.so.13", "libcudart.so.12"),
        ("libcuda.so.1",),
        ("libnvrtc.so.12", "libnvrtc.so.%d"),
        ("nvrtc64_130_0.dll", "nvrtc64_120_0.dll"),
    ]
    assert group_loads(["libcudnn_ops.so.9", "libcudnn_cnn.so.9"]) == [
        ("libcudnn_ops.so.9",),
        ("libcudnn_cnn.so.9",),
    ]  # other libraries: no list


def test_a_step_says_what_was_wanted():
    assert (
        LoadStep("a", "libnvrtc.so.13", "load", None, one_of=("libnvrtc.so.13", "libnvrtc.so.12")).wanted
        == "one of libnvrtc.so.13, libnvrtc.so.12"
    )
    assert LoadStep("a", "libnvrtc.so.%d", "load", None).wanted == "libnvrtc.so.<N>"
    assert LoadStep("a", "libnvrtc.so.", "load", None).wanted == "libnvrtc.so.<N>"
    assert LoadStep("a", "cudnn64_%d.dll", "load", None).wanted == "cudnn64_<N>.dll"


# --- scan.py: only whole strings are names ----------------------------------------------------


def _scan(tmp_path: Path, data: bytes, binary_format: str = "elf") -> list[str]:
    path = tmp_path / "blob"
    path.write_bytes(b"\x00" + data + b"\x00")
    return library_names(str(path), binary_format)


@pytest.mark.parametrize(
    "data",
    [
        b"skipping registration olibcuda.so.1",  # glued to a word (libtorch_cuda.so)
        b"--define-macro=_--generate-line--D_LIBCUDACXX___TUPLE_STRUCTURED-D_CUDA_STD___TUPLE_STRUCTURED_Blibcuda.so.1",  # packed flags (libcudnn_ext.so.9)
        b"@@libcudnn_ops.so.9",  # glued to other printable bytes
        b"cannot load libcudnn_ops.so.9: %s",  # quoted inside a message
        b"Unable to load any libcudart.so.* library.",
        b"xlibcudart.so.12",
    ],
)
def test_names_glued_to_other_characters_are_not_names(tmp_path, data):
    assert _scan(tmp_path, data) == []


def test_whole_strings_message_tails_and_run_time_patterns_are_names(tmp_path):
    data = b"libcudart.so.12\x00libcudart.so.13\x00\x07libcublasLt.so.13\x00libnvrtc.so.%d\x00libnvrtc.so.\x00Could not load libcudnn_cnn.so.9"
    assert _scan(tmp_path, data) == [
        "libcublasLt.so.13",
        "libcudart.so.12",
        "libcudart.so.13",
        "libcudnn_cnn.so.9",
        "libnvrtc.so.",
        "libnvrtc.so.%d",
    ]
    assert _scan(tmp_path, b"\x14nvcuda.dll\x00cudnn64_%d.dll\x00Xcudnn64_9.dll\x00cufft64_11.dll.bak", "pe") == [
        "cudnn64_%d.dll",
        "nvcuda.dll",
    ]


@pytest.mark.live
@needs_gcc
def test_gcc_built_library_with_a_try_list_an_imported_member_and_a_format(tmp_path):
    stub = tmp_path / "libcudart.so.13"
    (tmp_path / "stub.c").write_text("int cudart_stub(void) { return 0; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(stub), str(tmp_path / "stub.c"), "-Wl,-soname,libcudart.so.13"],
        check=True,
    )
    (tmp_path / "x.c").write_text(
        "#include <dlfcn.h>\n#include <stdio.h>\nint cudart_stub(void);\n"
        'static const char *cudart[] = {"libcudart.so.12", "libcudart.so.13"};\n'
        'static const char *rtc[] = {"libnvrtc.so.13", "libnvrtc.so.12"};\n'
        "void *f(int i, int major) { char name[32]; cudart_stub();\n"
        '  snprintf(name, sizeof name, "libnvrtc.so.%d", major); dlopen(name, 2);\n'
        '  puts("skipping registration of libcuda.so.1 twice"); dlopen(rtc[i], 2); return dlopen(cudart[i], 2); }\n'
    )
    out = tmp_path / "libx.so"
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-o",
            str(out),
            str(tmp_path / "x.c"),
            f"-L{tmp_path}",
            "-l:libcudart.so.13",
            "-Wl,--no-as-needed",
        ],
        check=True,
    )
    info = read_binary(str(out))
    assert "libcudart.so.13" in info.imports
    assert info.loads == (
        "libnvrtc.so.%d",
        "libnvrtc.so.12",
        "libnvrtc.so.13",
    )  # libcudart.so.12: an alternative of the import
    assert group_loads(list(info.loads)) == [("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.%d")]


# --- the real binaries (skipped where the cache or the venv does not have them) ---------------


def test_real_onnxruntime_cuda_provider_for_linux():
    if not ORT_LINUX.exists():
        pytest.skip("onnxruntime-gpu 1.31.1 for Linux is not in the test cache")
    info = read_binary(str(ORT_LINUX))
    assert "libcudart.so.13" in info.imports
    assert info.loads == (
        "libnvrtc.so.12",
        "libnvrtc.so.13",
    )  # no libcudart.so.12 beside the imported .13, no message text
    assert group_loads(list(info.loads)) == [("libnvrtc.so.13", "libnvrtc.so.12")]


def test_real_onnxruntime_cuda_provider_for_windows():
    if not ORT_WINDOWS.exists():
        pytest.skip("onnxruntime-gpu 1.31.1 for Windows is not in the test cache")
    groups = group_loads(list(read_binary(str(ORT_WINDOWS)).loads))
    assert ("cudart64_13.dll", "cudart64_12.dll") in groups
    assert ("nvrtc64_131_0.dll", "nvrtc64_130_0.dll", "nvrtc64_120_0.dll") in groups
    assert all(WELL_FORMED.match(n) for group in groups for n in group), groups


def test_real_torch_and_cudnn_9_libraries_yield_only_well_formed_names():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed here")
    site = Path(next(iter(spec.submodule_search_locations))).parent
    torch_cuda, cudnn_ext = site / "torch/lib/libtorch_cuda.so", site / "nvidia/cudnn/lib/libcudnn_ext.so.9"
    if not torch_cuda.exists() or not cudnn_ext.exists():
        pytest.skip("a CUDA torch with cuDNN 9.x (with libcudnn_ext) is not installed here")
    for path in (torch_cuda, cudnn_ext, *sorted(cudnn_ext.parent.glob("libcudnn*.so.9"))):
        loads = read_binary(str(path)).loads
        assert all(WELL_FORMED.match(n) for n in loads), (path.name, loads)
    assert "libnvrtc.so.%d" in read_binary(str(cudnn_ext)).loads


# --- the loader and the findings --------------------------------------------------------------

SITE = "/v/lib/python3.11/site-packages"
GRAPH = f"{SITE}/nvidia/cudnn/lib/libcudnn_graph.so.9"
RTC = f"{SITE}/nvidia/cu13/lib"


def _torch(graph_loads: list[str], extra: dict[str, Any], torch_imports: tuple[str, ...] = ()) -> dict[str, Any]:
    """torch imports cuDNN 9 from the nvidia wheel; cuDNN's graph library loads what the test says, reaching
    the nvidia-cu13 folder through its RUNPATH, as NVIDIA's wheels do."""
    cudnn = f"{SITE}/nvidia/cudnn/lib"
    files: dict[str, Any] = {
        f"{SITE}/torch/lib/libtorch_cuda.so": {
            "imports": ["libcudnn.so.9", "libc.so.6", *torch_imports],
            "rpath": ["$ORIGIN/../../nvidia/cudnn/lib"],
        },
        f"{cudnn}/libcudnn.so.9": {
            "soname": "libcudnn.so.9",
            "imports": ["libcudnn_graph.so.9", "libc.so.6"],
            "loads": [],
            "rpath": ["$ORIGIN"],
        },
        GRAPH: {
            "soname": "libcudnn_graph.so.9",
            "imports": ["libc.so.6"],
            "loads": graph_loads,
            "rpath": ["$ORIGIN", "$ORIGIN/../../cu13/lib"],
        },
        **extra,
    }
    torch = {
        "torch": {
            "version": "2.9.0+cu130",
            "cuda": "13.0",
            "cuda_available": True,
            "device_count": 1,
            "arch_list": ["sm_89"],
        }
    }
    pythons = [
        {
            "executable": "/v/bin/python",
            "version": "3.11.7",
            "current": True,
            "kind": "venv",
            "packages": {"torch": "2.9.0+cu130"},
            "frameworks": torch,
        }
    ]
    return machine(LINUX_BASE, files=files, pythons=pythons, nvml={**LINUX_BASE["nvml"], "cuda_driver_version": 13000})


def _missing(document: dict[str, Any]) -> list:
    return [f for f in run(document).findings if f.id == "dependency-missing"]


def test_a_try_list_is_satisfied_by_any_member():
    assert _missing(_torch(["libnvrtc.so.13", "libnvrtc.so.12"], {f"{RTC}/libnvrtc.so.13": {}})) == []
    assert _missing(_torch(["libnvrtc.so.13", "libnvrtc.so.12"], {f"{RTC}/libnvrtc.so.12": {}})) == []


def test_a_try_list_none_of_which_is_found_is_one_error_naming_the_list():
    missing = _missing(_torch(["libnvrtc.so.13", "libnvrtc.so.12"], {}))
    assert len(missing) == 1, [f.detail for f in missing]
    assert "needs one of libnvrtc.so.13, libnvrtc.so.12, none of which the loader finds" in missing[0].detail
    assert missing[0].severity is Severity.ERROR and missing[0].evidence["one_of"] == [
        "libnvrtc.so.13",
        "libnvrtc.so.12",
    ]


def test_an_alternative_of_an_imported_library_is_not_a_requirement_of_its_own():
    extra = {f"{RTC}/libcudart.so.13": {"soname": "libcudart.so.13"}}
    document = _torch(["libcudart.so.12"], extra)
    document["files"][GRAPH]["imports"].append("libcudart.so.13")
    assert _missing(document) == []


def test_a_pattern_is_satisfied_by_a_versioned_file_its_search_reaches():
    assert _missing(_torch(["libnvrtc.so.%d"], {f"{RTC}/libnvrtc.so.13": {}})) == []
    assert _missing(_torch(["libnvrtc.so."], {f"{RTC}/libnvrtc.so.13.0.88": {}})) == []
    steps = (
        run(_torch(["libnvrtc.so.%d"], {f"{RTC}/libnvrtc.so.13": {}, f"{RTC}/libnvrtc.so.12": {}}))
        .facts.resolutions[0]
        .steps
    )
    assert next(s for s in steps if s.name == "libnvrtc.so.%d").winner == f"{RTC}/libnvrtc.so.13"


@pytest.mark.parametrize(
    "extra",
    [{}, {"/opt/nvrtc/lib/libnvrtc.so.13": {}}, {f"{RTC}/libnvrtc.so.13.0.88": {}}, {f"{RTC}/libnvrtc.so": {}}],
    ids=["nowhere", "outside-the-search", "no-major-link", "only-the-dev-link"],
)
def test_a_pattern_nothing_reachable_satisfies_is_missing_and_optional_is_a_warning(extra):
    missing = _missing(_torch(["libnvrtc.so.%d"], extra))
    assert len(missing) == 1 and "needs libnvrtc.so.<N>" in missing[0].detail, [f.detail for f in missing]
    assert missing[0].severity is Severity.WARNING  # cuDNN survives without NVRTC (knowledge: optional_loads)


def test_a_pattern_is_satisfied_by_a_module_the_process_already_holds():
    # torch imports libnvrtc.so.13 from a folder cuDNN's RUNPATH does not reach: dlopen reuses the loaded module.
    document = _torch(["libnvrtc.so.%d"], {f"{SITE}/torch/lib/libnvrtc.so.13": {}}, torch_imports=("libnvrtc.so.13",))
    document["files"][f"{SITE}/torch/lib/libtorch_cuda.so"]["rpath"].append("$ORIGIN")
    assert _missing(document) == []


def test_windows_try_list_and_pattern_in_the_loader():
    files = {
        "C:\\app\\provider.dll": {
            "imports": ["KERNEL32.dll"],
            "loads": ["nvrtc64_120_0.dll", "nvrtc64_130_0.dll", "cudnn64_%d.dll"],
        },
        "C:\\cuda\\bin\\nvrtc64_130_0.dll": {},
        "C:\\cuda\\bin\\cudnn64_9.dll": {"loads": []},
    }
    document = machine(WINDOWS_BASE, files=files, env={"PATH": "C:\\Windows\\System32;C:\\cuda\\bin"})
    steps = (
        Resolver(FixtureSystem(document))
        .resolve("test", "C:\\Users\\dev\\env\\python.exe", ["C:\\app\\provider.dll"])
        .steps
    )
    rtc = next(s for s in steps if s.one_of)
    assert rtc.one_of == ("nvrtc64_130_0.dll", "nvrtc64_120_0.dll") and rtc.winner == "C:\\cuda\\bin\\nvrtc64_130_0.dll"
    assert next(s for s in steps if s.name == "cudnn64_%d.dll").winner == "C:\\cuda\\bin\\cudnn64_9.dll"
    del document["files"]["C:\\cuda\\bin\\nvrtc64_130_0.dll"]
    steps = (
        Resolver(FixtureSystem(document))
        .resolve("test", "C:\\Users\\dev\\env\\python.exe", ["C:\\app\\provider.dll"])
        .steps
    )
    assert [s.wanted for s in steps if s.failed] == ["one of nvrtc64_130_0.dll, nvrtc64_120_0.dll"]
