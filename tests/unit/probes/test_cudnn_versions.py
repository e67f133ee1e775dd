"""A cuDNN library's version from its own evidence, and every library of one load judged (issue 9, items 4 and 5).

Machines here mirror NVIDIA's real cuDNN 9 wheels (shared/design/nvidia-binaries.md and the
files of nvidia-cudnn-cu13 9.24 / 9.28 read on 2026-12-04): `libcudnn.so.9` has DT_RPATH
`$ORIGIN` and asks for `libcudnn_graph.so.9.<minor>.<patch>` before `libcudnn_graph.so.9`; the
sub-libraries have DT_RUNPATH `$ORIGIN` (so LD_LIBRARY_PATH comes first for what they load),
import `libcudnn_graph.so.9`, and the graph library loads the engines at run time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.facts import ASKED_NAMES, CONDA_META, DIST_INFO, FILE_NAME, FILE_VERSION, HEADER, LOAD, CudnnInstall
from cudnn_doctor.system.binaries import read_binary
from cudnn_doctor.system.binaries.versioned import front_release
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.fixture_format import validate
from tests.conftest import LINUX_BASE, TEST_CACHE, WINDOWS_BASE, machine, run

SITE = "/v/lib/python3.11/site-packages"
WHEEL = f"{SITE}/nvidia/cudnn/lib"
STRAY = "/opt/stray/lib"
PARTS = ("graph", "ops", "cnn", "adv", "engines_precompiled", "engines_runtime_compiled", "heuristic")
ENGINES = ("engines_precompiled", "engines_runtime_compiled", "heuristic")
CACHE = TEST_CACHE
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None or sys.platform != "linux", reason="needs gcc on Linux")


def front(release: Optional[str] = None) -> dict[str, Any]:
    """libcudnn.so.9; `release` ("9.28.1"): the full-release names it asks for first."""
    loads = [f"libcudnn_{p}.so.9" for p in ("graph", "ops", "cnn", "adv")]
    loads += [f"libcudnn_{p}.so.{release}" for p in ("graph", "ops", "cnn", "adv")] if release else []
    return {"soname": "libcudnn.so.9", "imports": ["libc.so.6"], "loads": loads, "dt_rpath": ["$ORIGIN"]}


def cudnn9(
    folder: str, release: Optional[str] = None, cuda: int = 12, parts=PARTS, with_front: bool = True
) -> dict[str, Any]:
    files = {f"{folder}/libcudnn.so.9": front(release)} if with_front else {}
    for part in parts:
        imports = [] if part == "graph" else ["libcudnn_graph.so.9"]
        imports += [f"libcublasLt.so.{cuda}"] if part in ("adv", "engines_precompiled") else []
        loads = [f"libcudnn_{p}.so.9" for p in ENGINES] if part == "graph" else []
        files[f"{folder}/libcudnn_{part}.so.9"] = {
            "soname": f"libcudnn_{part}.so.9",
            "imports": [*imports, "libc.so.6"],
            "loads": loads,
            "rpath": ["$ORIGIN"],
        }
    files[f"/usr/local/cuda-{cuda}/lib64/libcublasLt.so.{cuda}"] = {"soname": f"libcublasLt.so.{cuda}"}
    return files


def wheel(version: str = "9.28.1.4", cuda: int = 12, release: Optional[str] = "9.28.1") -> dict[str, Any]:
    """nvidia-cudnn-cuXX in the test interpreter's site-packages, with its dist-info."""
    files = cudnn9(WHEEL, release, cuda)
    files[f"{SITE}/nvidia_cudnn_cu{cuda}-{version}.dist-info/METADATA"] = {
        "text": f"Metadata-Version: 2.1\nName: nvidia-cudnn-cu{cuda}\nVersion: {version}\n"
    }
    return files


def header(major: int, minor: int, patch: int) -> dict[str, Any]:
    return {"text": f"#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR {minor}\n#define CUDNN_PATCHLEVEL {patch}\n"}


TORCH = {
    "torch": {
        "version": "2.8.0+cu128",
        "cuda": "12.8",
        "cuda_available": True,
        "device_count": 1,
        "arch_list": ["sm_89"],
    }
}
ORT = {"onnxruntime": {"version": "1.20.1", "providers": ["CUDAExecutionProvider", "CPUExecutionProvider"]}}


def torch_machine(files: dict[str, Any], ld_library_path: str) -> dict[str, Any]:
    """torch 2.8 +cu128: libtorch_cuda.so imports libcudnn.so.9 through its RUNPATH into the wheel."""
    files = {
        **files,
        f"{SITE}/torch/lib/libtorch_cuda.so": {
            "imports": ["libcudnn.so.9", "libc.so.6"],
            "rpath": ["$ORIGIN/../../nvidia/cudnn/lib"],
        },
    }
    python = {
        "executable": "/v/bin/python",
        "version": "3.11.7",
        "current": True,
        "kind": "venv",
        "packages": {"torch": "2.8.0+cu128"},
        "frameworks": TORCH,
    }
    return machine(LINUX_BASE, files=files, env={"LD_LIBRARY_PATH": ld_library_path}, pythons=[python])


def ort_machine(files: dict[str, Any], ld_library_path: str) -> dict[str, Any]:
    """onnxruntime-gpu 1.20 (CUDA 12, cuDNN 9): loads libcudnn.so.9 by name from the system search path."""
    provider = f"{SITE}/onnxruntime/capi/libonnxruntime_providers_cuda.so"
    files = {
        **files,
        provider: {"soname": "libonnxruntime_providers_cuda.so", "imports": ["libc.so.6"]},
        f"{SITE}/onnxruntime/__init__.py": {"text": ""},
    }
    python = {
        "executable": "/v/bin/python",
        "version": "3.11.7",
        "current": True,
        "kind": "venv",
        "packages": {"onnxruntime-gpu": "1.20.1"},
        "frameworks": ORT,
    }
    return machine(LINUX_BASE, files=files, env={"LD_LIBRARY_PATH": ld_library_path}, pythons=[python])


def install_at(document: dict[str, Any], folder: str) -> CudnnInstall:
    return next(i for i in run(document).facts.cudnn if i.folder == folder)


def findings(document: dict[str, Any], finding_id: str) -> list:
    return [f for f in run(document).findings if f.id == finding_id]


# --- evidence, in order ---------------------------------------------------------------------------


def test_each_evidence_source_in_order_header_dist_info_asked_names_then_live_load():
    files = wheel("9.27.0.5", release="9.26.0")
    files[f"{SITE}/nvidia/cudnn/include/cudnn_version.h"] = header(9, 28, 1)
    files[f"{WHEEL}/libcudnn.so.9"]["load"] = {"ok": True, "cudnn_version": 91000, "cudart_version": 12040}
    document = ort_machine(files, WHEEL)
    steps = [("9.28.1", HEADER), ("9.27.0.5", DIST_INFO), ("9.26.0", ASKED_NAMES), ("9.10.0", LOAD)]
    for version, how in steps:
        install = install_at(document, WHEEL)
        assert (install.version, install.version_source) == (version, how)
        if how == HEADER:
            del document["files"][f"{SITE}/nvidia/cudnn/include/cudnn_version.h"]
        elif how == DIST_INFO:
            del document["files"][f"{SITE}/nvidia_cudnn_cu12-9.27.0.5.dist-info/METADATA"]
        elif how == ASKED_NAMES:
            document["files"][f"{WHEEL}/libcudnn.so.9"]["loads"] = front(None)["loads"]
    assert install.cuda_major == 12 and install.cuda_source == "libcudnn_adv.so.9 needs libcublasLt.so.12"


def test_the_wheel_names_its_cuda_major_and_the_front_its_own_release():
    files = wheel("9.28.1.4", cuda=13)
    for part in ("adv", "engines_precompiled"):  # no cuBLAS name in the binaries: the distribution's name tells
        files[f"{WHEEL}/libcudnn_{part}.so.9"]["imports"] = ["libcudnn_graph.so.9", "libc.so.6"]
    install = install_at(ort_machine(files, WHEEL), WHEEL)
    assert (install.cuda_major, install.cuda_source) == (13, "nvidia-cudnn-cu13 9.28.1.4")
    front_library = next(lib for lib in install.libraries if lib.part == "")
    assert (front_library.version, front_library.version_source) == ("9.28.1", ASKED_NAMES)
    assert all(lib.version is None for lib in install.libraries if lib.part)  # a wheel's .so.9 names carry no release


def test_two_releases_unpacked_over_one_wheel_folder_leave_the_metadata_silent():
    files = wheel("9.28.1.4", release=None)
    files[f"{SITE}/nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA"] = {
        "text": "Name: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n"
    }
    assert install_at(ort_machine(files, WHEEL), WHEEL).version is None


def test_a_conda_environment_s_own_record():
    prefix = "/home/dev/miniconda3/envs/ml"
    files = cudnn9(f"{prefix}/lib", cuda=12)
    record = {"name": "cudnn", "version": "9.3.0.75", "build": "h93bb076_0", "depends": ["cuda-version >=12,<13.0a0"]}
    files[f"{prefix}/conda-meta/cudnn-9.3.0.75-h93bb076_0.json"] = {"text": json.dumps(record)}
    for part in ("adv", "engines_precompiled"):  # no cuBLAS name in the binaries: the record's dependency tells
        files[f"{prefix}/lib/libcudnn_{part}.so.9"]["imports"] = ["libcudnn_graph.so.9", "libc.so.6"]
    python = {
        "executable": f"{prefix}/bin/python",
        "version": "3.11.7",
        "current": True,
        "kind": "conda",
        "packages": {},
        "frameworks": {},
    }
    install = install_at(machine(LINUX_BASE, files=files, pythons=[python]), f"{prefix}/lib")
    assert (install.version, install.version_source, install.cuda_major) == ("9.3.0.75", CONDA_META, 12)
    windows = {"C:\\conda\\Library\\bin\\cudnn64_9.dll": {"imports": ["KERNEL32.dll"]}}
    windows["C:\\conda\\conda-meta\\cudnn-9.3.0.75-cuda12_0.json"] = {
        "text": json.dumps({"version": "9.3.0.75", "build": "cuda12_0"})
    }
    python = {
        "executable": "C:\\conda\\python.exe",
        "version": "3.11.7",
        "current": True,
        "kind": "conda",
        "packages": {},
        "frameworks": {},
    }
    install = install_at(machine(WINDOWS_BASE, files=windows, pythons=[python]), "C:\\conda\\Library\\bin")
    assert (install.version, install.version_source, install.cuda_major) == ("9.3.0.75", CONDA_META, 12)


def test_file_name_and_file_version():
    lib = "/usr/lib/x86_64-linux-gnu"
    files = {f"{lib}/libcudnn.so.9": {"link": "libcudnn.so.9.2.1"}, f"{lib}/libcudnn.so.9.2.1": front(None)}
    for part in PARTS:
        files[f"{lib}/libcudnn_{part}.so.9"] = {"link": f"libcudnn_{part}.so.9.2.1"}
        files[f"{lib}/libcudnn_{part}.so.9.2.1"] = {"soname": f"libcudnn_{part}.so.9"}
    install = install_at(ort_machine(files, ""), lib)
    assert (install.version, install.version_source) == ("9.2.1", FILE_NAME)
    # The names the front asks for outrank its file name.
    files[f"{lib}/libcudnn.so.9.2.1"] = front("9.2.0")
    assert (
        install_at(ort_machine(files, ""), lib).version_source,
        install_at(ort_machine(files, ""), lib).version,
    ) == (ASKED_NAMES, "9.2.0")
    bin_ = "C:\\cudnn\\bin"
    dlls = {
        f"{bin_}\\cudnn64_9.dll": {"version": "9.1.0.70", "imports": ["KERNEL32.dll"]},
        f"{bin_}\\cudnn_graph64_9.dll": {"imports": ["KERNEL32.dll"]},
    }
    document = machine(WINDOWS_BASE, files=dlls, env={"PATH": f"{bin_};C:\\Windows\\System32"})
    assert (install_at(document, bin_).version, install_at(document, bin_).version_source) == ("9.1.0.70", FILE_VERSION)
    document = machine(
        WINDOWS_BASE,
        files={**dlls, "C:\\cudnn\\include\\cudnn_version.h": header(9, 1, 0)},
        env={"PATH": f"{bin_};C:\\Windows\\System32"},
    )
    assert (install_at(document, bin_).version, install_at(document, bin_).version_source) == ("9.1.0", HEADER)


def test_the_live_load_is_not_asked_when_the_files_tell():
    files = wheel()
    files[f"{WHEEL}/libcudnn.so.9"]["load"] = {
        "ok": True,
        "cudnn_version": 90100,
    }  # answered by whichever graph library won
    assert install_at(ort_machine(files, WHEEL), WHEEL).version == "9.28.1.4"


# --- never another installation's header ----------------------------------------------------------


def test_a_wheel_never_borrows_the_system_or_toolkit_header():
    files = wheel(release=None)
    del files[f"{SITE}/nvidia_cudnn_cu12-9.28.1.4.dist-info/METADATA"]
    files["/usr/include/x86_64-linux-gnu/cudnn_version_v9.h"] = header(9, 1, 0)
    files["/usr/include/cudnn_version.h"] = header(9, 1, 0)
    toolkit = "/usr/local/cuda-12.4"
    files[f"{toolkit}/bin/nvcc"] = {"size": 10, "text": ""}
    files[f"{toolkit}/version.json"] = {"text": '{"cuda": {"version": "12.4.1"}}'}
    files[f"{toolkit}/include/cudnn_version.h"] = header(9, 1, 0)
    nested = f"{toolkit}/cudnn-linux-x86_64-9.3.0.75_cuda12-archive"
    files.update(cudnn9(f"{nested}/lib", "9.3.0"))
    sys_lib = "/usr/lib/x86_64-linux-gnu"
    files.update(cudnn9(sys_lib))
    document = ort_machine(files, WHEEL)
    document["env"]["PATH"] = f"{toolkit}/bin:/usr/bin"
    installs = {i.folder: i for i in run(document).facts.cudnn}
    assert installs[WHEEL].version is None and installs[WHEEL].header is None  # not the system's 9.1.0
    assert (installs[f"{nested}/lib"].version, installs[f"{nested}/lib"].version_source) == (
        "9.3.0",
        ASKED_NAMES,
    )  # not the toolkit's
    assert (installs[sys_lib].version, installs[sys_lib].header) == (
        "9.1.0",
        "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h",
    )  # its own


# --- every library of one load --------------------------------------------------------------------


def _stray_front_ahead_of_the_wheel(make) -> dict[str, Any]:
    """A stray 9.1 libcudnn.so.9 on LD_LIBRARY_PATH ahead of a 9.28 wheel that is also on it."""
    files = {**wheel(), f"{STRAY}/libcudnn.so.9": front("9.1.0")}
    return make(files, f"{STRAY}:{WHEEL}")


@pytest.mark.parametrize("make", [ort_machine, torch_machine], ids=["onnxruntime", "torch"])
def test_a_stray_older_front_ahead_of_a_wheel_is_mixed_versions_with_the_right_versions(make):
    found = findings(_stray_front_ahead_of_the_wheel(make), "cudnn-mixed-versions")
    assert len(found) == 1, found
    libraries = found[0].evidence["libraries"]
    assert libraries[f"{STRAY}/libcudnn.so.9"] == "9.1.0"
    assert libraries[f"{WHEEL}/libcudnn_graph.so.9"] == "9.28.1"
    assert (
        libraries[f"{WHEEL}/libcudnn_engines_precompiled.so.9"] == "9.28.1"
    )  # loaded at run time by the graph library
    assert "combines releases 9.1.0, 9.28.1" in found[0].detail
    known = found[0].evidence["known_from"]  # how each version is known
    assert (known[f"{STRAY}/libcudnn.so.9"], known[f"{WHEEL}/libcudnn_graph.so.9"]) == (ASKED_NAMES, DIST_INFO)


def test_a_stray_front_ahead_of_a_wheel_without_any_framework():
    """No framework installed: a program started here loads the stray front by name and gets the wheel's sub-libraries."""
    python = {
        "executable": "/v/bin/python",
        "version": "3.11.7",
        "current": True,
        "kind": "venv",
        "packages": {},
        "frameworks": {},
    }
    files = {**wheel(), f"{STRAY}/libcudnn.so.9": front("9.1.0")}
    document = machine(LINUX_BASE, files=files, env={"LD_LIBRARY_PATH": f"{STRAY}:{WHEEL}"}, pythons=[python])
    found = findings(document, "cudnn-mixed-versions")
    assert len(found) == 1 and "a program started here combines releases 9.1.0, 9.28.1" in found[0].detail, found
    assert found[0].evidence["libraries"][f"{STRAY}/libcudnn.so.9"] == "9.1.0"


@pytest.mark.parametrize("make", [ort_machine, torch_machine], ids=["onnxruntime", "torch"])
def test_the_same_wheel_alone_is_one_release(make):
    document = make(wheel(), f"{WHEEL}:/usr/local/cuda-12/lib64")
    assert not findings(document, "cudnn-mixed-versions")
    # The full-release names are tried before the soname, which is the one the emulation follows: no missing library.
    steps = [s for r in run(document).facts.resolutions for s in r.steps]
    assert any(s.name == "libcudnn_graph.so.9" and s.winner for s in steps)
    assert not any(s.name.endswith(".9.28.1") for s in steps) and not findings(document, "dependency-missing")


def test_the_front_takes_a_file_of_its_full_release_name_before_the_soname_search():
    """A system package ships real `libcudnn_graph.so.9.1.0` files (the `.so.9` names are links). A
    9.1.0 front asks for that name first, so the loader takes the system's graph library from a
    default folder even though a 9.28 wheel's `libcudnn_graph.so.9` comes earlier on LD_LIBRARY_PATH;
    the system graph library then loads the wheel's engines by their plain names."""
    system = "/usr/lib/x86_64-linux-gnu"
    files = {**wheel(), f"{STRAY}/libcudnn.so.9": front("9.1.0")}
    for part in PARTS:
        real = f"{system}/libcudnn_{part}.so.9.1.0"
        files[f"{system}/libcudnn_{part}.so.9"] = {"link": f"libcudnn_{part}.so.9.1.0"}
        files[real] = {**cudnn9(system, parts=(part,), with_front=False)[f"{system}/libcudnn_{part}.so.9"], "rpath": []}
    document = ort_machine(files, f"{STRAY}:{WHEEL}:/usr/local/cuda-12/lib64")
    steps = {s.name: s for r in run(document).facts.resolutions for s in r.steps if not s.reused}
    assert steps["libcudnn_graph.so.9.1.0"].winner == f"{system}/libcudnn_graph.so.9.1.0"
    assert (
        "libcudnn_graph.so.9" not in steps
        and steps["libcudnn_ops.so.9.1.0"].winner == f"{system}/libcudnn_ops.so.9.1.0"
    )
    assert steps["libcudnn_engines_precompiled.so.9"].winner == f"{WHEEL}/libcudnn_engines_precompiled.so.9"
    libraries = findings(document, "cudnn-mixed-versions")[0].evidence["libraries"]
    assert (
        libraries[f"{system}/libcudnn_graph.so.9.1.0"] == "9.1.0"
        and libraries[f"{WHEEL}/libcudnn_heuristic.so.9"] == "9.28.1"
    )


def test_an_older_front_copied_over_a_wheel_is_mixed():
    """No framework: a program loading the wheel by path combines the front's own release with its wheel's."""
    files = wheel(release=None)
    files[f"{WHEEL}/libcudnn.so.9"] = front("9.24.0")
    python = {
        "executable": "/v/bin/python",
        "version": "3.11.7",
        "current": True,
        "kind": "venv",
        "packages": {},
        "frameworks": {},
    }
    found = findings(machine(LINUX_BASE, files=files, pythons=[python]), "cudnn-mixed-versions")
    assert len(found) == 1 and "combines releases 9.24.0, 9.28.1" in found[0].detail, found
    assert not findings(machine(LINUX_BASE, files=wheel(), pythons=[python]), "cudnn-mixed-versions")


def test_an_older_front_in_a_conda_environment_nothing_loads_is_mixed_within_the_folder():
    """Off every search path, nothing loads it: the folder alone shows it, by the front's own release
    against the package record (conda wrote every file it lists; a header would say nothing of that)."""
    prefix = "/home/dev/miniconda3/envs/old"
    files = cudnn9(f"{prefix}/lib", "9.1.0")
    files[f"{prefix}/conda-meta/cudnn-9.3.0.75-h93bb076_0.json"] = {
        "text": json.dumps({"version": "9.3.0.75", "build": "h93bb076_0"})
    }
    python = {
        "executable": f"{prefix}/bin/python",
        "version": "3.11.7",
        "current": True,
        "kind": "conda",
        "packages": {},
        "frameworks": {},
    }
    found = findings(machine(LINUX_BASE, files=files, pythons=[python]), "cudnn-mixed-versions")
    assert len(found) == 1 and found[0].evidence == {"folder": f"{prefix}/lib"}, found
    assert (
        "releases 9.1.0, 9.3.0" in found[0].detail and f"{prefix}/lib/libcudnn_graph.so.9 (9.3.0.75)" in found[0].detail
    )
    files[f"{prefix}/include/cudnn_version.h"] = header(9, 3, 0)
    del files[f"{prefix}/conda-meta/cudnn-9.3.0.75-h93bb076_0.json"]
    assert not findings(machine(LINUX_BASE, files=files, pythons=[python]), "cudnn-mixed-versions")


def _engines_for_cuda_11_on_the_path(make) -> dict[str, Any]:
    """cuDNN 9.1 engines of a CUDA 11 build on LD_LIBRARY_PATH: the wheel's graph library (RUNPATH
    $ORIGIN) looks there first for what it loads at run time."""
    old = "/opt/cudnn-9.1-cuda11/lib"
    files = {**wheel(), **cudnn9(old, cuda=11, parts=ENGINES, with_front=False)}
    files["/opt/cudnn-9.1-cuda11/include/cudnn_version.h"] = header(9, 1, 0)
    return make(files, f"{old}:{WHEEL}:/usr/local/cuda-12/lib64:/usr/local/cuda-11/lib64")


@pytest.mark.parametrize("make", [ort_machine, torch_machine], ids=["onnxruntime", "torch"])
def test_engines_from_another_installation_are_judged_for_cuda_and_release(make):
    document = _engines_for_cuda_11_on_the_path(make)
    cuda = findings(document, "cudnn-cuda-mismatch")
    assert len(cuda) == 1 and cuda[0].evidence["cudnn"] == "/opt/cudnn-9.1-cuda11/lib", cuda
    assert cuda[0].evidence["libraries"] == {f"/opt/cudnn-9.1-cuda11/lib/libcudnn_{p}.so.9": 11 for p in ENGINES}
    assert "libcudnn_engines_precompiled.so.9" in cuda[0].detail and "CUDA 11" in cuda[0].detail
    mixed = findings(document, "cudnn-mixed-versions")
    assert mixed and "9.1.0, 9.28.1" in mixed[0].detail, mixed


def test_a_bundling_framework_loading_only_its_own_cudnn_has_no_cuda_finding():
    assert not findings(torch_machine(wheel(), ""), "cudnn-cuda-mismatch")


# --- the front's release read from its code -------------------------------------------------------


@pytest.mark.live
@needs_gcc
@pytest.mark.parametrize("optimise", ["-O0", "-O2"])
def test_the_release_a_front_formats_its_sub_library_names_with(tmp_path, optimise):
    """The same shape as cuDNN's: snprintf("%s.%d.%d.%d", name, MAJOR, MINOR, PATCH), then .%d.%d, then .%d."""
    source = tmp_path / "front.c"
    source.write_text(
        "#include <stdio.h>\n#include <dlfcn.h>\n"
        "static void *open_versioned(const char *name) {\n  char buf[64];\n"
        '  snprintf(buf, sizeof buf, "%s.%d.%d.%d", name, 9, 3, 2);\n  void *h = dlopen(buf, 2);\n  if (h) return h;\n'
        '  snprintf(buf, sizeof buf, "%s.%d.%d", name, 9, 3);\n  h = dlopen(buf, 2);\n  if (h) return h;\n'
        '  snprintf(buf, sizeof buf, "%s.%d", name, 9);\n  return dlopen(buf, 2);\n}\n'
        'void *graph(void) { return open_versioned("libcudnn_graph.so"); }\n'
    )
    out = tmp_path / "libcudnn.so.9"
    subprocess.run(
        ["gcc", optimise, "-shared", "-fPIC", "-o", str(out), str(source), "-Wl,-soname,libcudnn.so.9"], check=True
    )
    assert front_release(str(out), 9) == (9, 3, 2)
    assert front_release(str(out), 8) is None  # a major that is not the library's own: not trusted
    assert (
        "libcudnn_graph.so.9.3.2" in read_binary(str(out)).loads
        and "libcudnn_graph.so.9" in read_binary(str(out)).loads
    )
    other = tmp_path / "libother.so"
    subprocess.run(
        ["gcc", optimise, "-shared", "-fPIC", "-o", str(other), str(source), "-Wl,-soname,libother.so.9"], check=True
    )
    assert not any(n.endswith(".9.3.2") for n in read_binary(str(other)).loads)  # only a cuDNN front is read this way


def _real_fronts() -> dict[str, Path]:
    """release → a real libcudnn.so.9 from an installed nvidia-cudnn wheel (the test venvs, this interpreter's)."""
    sites = list(CACHE.glob("venvs/*/lib/python*/site-packages")) + [
        Path(p) for p in sys.path if p.endswith("site-packages")
    ]
    fronts = {}
    for site in sites:
        for info in site.glob("nvidia_cudnn_cu*-9.*.dist-info"):
            path = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
            if path.is_file():
                fronts[info.name.split("-")[1].rsplit(".dist", 1)[0]] = path
    return fronts


def test_real_cudnn_9_fronts_name_their_own_release():
    fronts = _real_fronts()
    if not fronts:
        pytest.skip("no nvidia-cudnn cuDNN 9 wheel installed here")
    for version, path in fronts.items():
        major, minor, patch = (int(n) for n in version.split(".")[:3])
        assert front_release(str(path), 9) == (major, minor, patch), path
        assert f"libcudnn_graph.so.{major}.{minor}.{patch}" in read_binary(str(path)).loads


def test_a_stray_real_front_ahead_of_a_real_wheel_front(tmp_path):
    """The acceptance machine from real fronts: the older release's libcudnn.so.9 first on LD_LIBRARY_PATH,
    the newer wheel after it (its sub-libraries as the fixture describes them: the real ones are 0.9 GB)."""
    fronts = _real_fronts()
    if len(fronts) < 2:
        pytest.skip("needs two releases of the nvidia-cudnn cuDNN 9 wheel installed here")
    old, new = (
        sorted(fronts, key=lambda v: tuple(int(n) for n in v.split(".")))[:2][0],
        max(fronts, key=lambda v: tuple(int(n) for n in v.split("."))),
    )
    shutil.copy(fronts[old], tmp_path / "old-libcudnn.so.9")
    shutil.copy(fronts[new], tmp_path / "new-libcudnn.so.9")
    files = wheel(new, release=None)
    files[f"{WHEEL}/libcudnn.so.9"] = {"source": "new-libcudnn.so.9"}
    files[f"{STRAY}/libcudnn.so.9"] = {"source": "old-libcudnn.so.9"}
    document = validate(ort_machine(files, f"{STRAY}:{WHEEL}"))
    diagnosis = diagnose(FixtureSystem(document, origin=tmp_path / "machine.yaml"))
    stray = next(i for i in diagnosis.facts.cudnn if i.folder == STRAY)
    assert (stray.version, stray.version_source) == (".".join(old.split(".")[:3]), ASKED_NAMES)
    mixed = [f for f in diagnosis.findings if f.id == "cudnn-mixed-versions"]
    assert mixed, [f.id for f in diagnosis.findings]
    libraries = mixed[0].evidence["libraries"]
    assert libraries[f"{STRAY}/libcudnn.so.9"] == ".".join(old.split(".")[:3])
    assert libraries[f"{WHEEL}/libcudnn_graph.so.9"] == ".".join(new.split(".")[:3])


def test_a_full_release_name_is_tried_before_the_soname_it_extends():
    """The try-list order of the front's names is the order ld.so's LD_DEBUG=libs shows it trying them."""
    from cudnn_doctor.binaries.names import group_loads

    groups = group_loads(
        [
            "libcudnn_graph.so.9",
            "libcudnn_graph.so.9.28",
            "libcudnn_graph.so.9.28.1",
            "libcudart.so.12",
            "libcudart.so.13",
        ]
    )
    assert groups == [
        ("libcudnn_graph.so.9.28.1", "libcudnn_graph.so.9.28", "libcudnn_graph.so.9"),
        ("libcudart.so.13", "libcudart.so.12"),
    ]
