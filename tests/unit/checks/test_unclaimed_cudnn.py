"""A cuDNN installation that no known framework loads is judged as any program started here would
load it: a native program, an unknown package or a machine without Python gets the same checks."""

from __future__ import annotations

from typing import Any

from cudnn_doctor import knowledge
from cudnn_doctor.findings import Severity
from tests.conftest import LINUX_BASE, WINDOWS_BASE, machine, run

LIB = "/usr/lib/x86_64-linux-gnu"
PARTS9 = ("graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv")


def cudnn9_linux(folder: str, cuda: int = 12, **overrides: Any) -> dict[str, Any]:
    """cuDNN 9 as the tar and the wheels ship it: the front loads its parts from its own folder; ops needs cuBLAS."""
    files: dict[str, Any] = {
        f"{folder}/libcudnn.so.9": {
            "soname": "libcudnn.so.9",
            "imports": ["libc.so.6"],
            "loads": [f"libcudnn_{p}.so.9" for p in PARTS9],
            "rpath": ["$ORIGIN"],
        }
    }
    for part in PARTS9:
        imports = [f"libcublas.so.{cuda}", f"libcublasLt.so.{cuda}"] if part == "ops" else []
        files[f"{folder}/libcudnn_{part}.so.9"] = {
            "soname": f"libcudnn_{part}.so.9",
            "imports": [*imports, "libc.so.6"],
            "rpath": ["$ORIGIN"],
        }
    for path, changes in overrides.items():
        files[path] = {**files.get(path, {}), **changes}
    return files


def cublas(folder: str, cuda: int = 12) -> dict[str, Any]:
    return {
        f"{folder}/{name}": {"soname": name, "imports": ["libc.so.6"]}
        for name in (f"libcublas.so.{cuda}", f"libcublasLt.so.{cuda}")
    }


def by_id(document: dict[str, Any]) -> dict[str, Any]:
    return {f.id: f for f in run(document).findings}


def test_a_system_cudnn_no_framework_uses_still_needs_the_cublas_of_its_cuda():
    found = by_id(machine(LINUX_BASE, files=cudnn9_linux(LIB), pythons=[]))
    missing = found["dependency-missing"]
    assert (
        "libcudnn_ops.so.9" in missing.detail
        and "libcublas" in missing.detail
        and f"{LIB}/libcudnn.so.9" in missing.detail
    ), missing.detail
    assert missing.severity is Severity.ERROR
    healthy = by_id(machine(LINUX_BASE, files={**cudnn9_linux(LIB), **cublas(LIB)}, pythons=[]))
    assert "dependency-missing" not in healthy, healthy["dependency-missing"].detail


def test_broken_files_of_an_unclaimed_cudnn_on_ld_library_path():
    folder = "/opt/cudnn/lib"
    files = {
        **cudnn9_linux(
            folder,
            **{f"{folder}/libcudnn_cnn.so.9": {"machine": "aarch64"}, f"{folder}/libcudnn_adv.so.9": {"size": 0}},
        ),
        **cublas(LIB),
    }
    found = by_id(machine(LINUX_BASE, files=files, env={"LD_LIBRARY_PATH": folder}))
    assert "libcudnn_cnn.so.9" in found["library-wrong-architecture"].detail
    assert "libcudnn_adv.so.9" in found["library-zero-bytes"].detail
    # The same folder off every search path is loaded by nothing: the loads are not judged.
    unreached = by_id(machine(LINUX_BASE, files={**cudnn9_linux(folder), **cublas(LIB)}))
    assert "dependency-missing" not in unreached and "library-wrong-architecture" not in unreached


def test_a_cudnn_wheel_in_a_venv_without_any_framework():
    site = "/home/dev/.venv/lib/python3.11/site-packages"
    packages = {"nvidia-cudnn-cu12": "9.1.0.70"}
    pythons = [
        {
            "executable": "/home/dev/.venv/bin/python",
            "version": "3.11.7",
            "current": True,
            "kind": "venv",
            "packages": packages,
            "frameworks": {},
        }
    ]
    findings = run(machine(LINUX_BASE, files=cudnn9_linux(f"{site}/nvidia/cudnn/lib"), pythons=pythons)).findings
    missing = [f for f in findings if f.id == "dependency-missing"]
    assert missing and all(f.severity is Severity.ERROR for f in missing)
    assert (
        "libcublasLt.so.12" in " ".join(f.detail for f in missing)
        and f"{site}/nvidia/cudnn/lib/libcudnn.so.9" in missing[0].detail
    )
    with_cublas = machine(
        LINUX_BASE,
        files={**cudnn9_linux(f"{site}/nvidia/cudnn/lib"), **cublas(f"{site}/nvidia/cublas/lib")},
        pythons=pythons,
    )
    with_cublas["files"][f"{site}/nvidia/cudnn/lib/libcudnn_ops.so.9"]["rpath"] = [
        "$ORIGIN",
        "$ORIGIN/../../cublas/lib",
    ]
    assert "dependency-missing" not in by_id(with_cublas)


def test_a_cudnn_for_cuda_12_copied_into_a_cuda_11_8_toolkit():
    cuda = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8"
    files: dict[str, Any] = {f"{cuda}\\bin\\nvcc.exe": {"size": 1000}, f"{cuda}\\bin\\cudart64_110.dll": {"size": 1000}}
    files[f"{cuda}\\bin\\cudnn64_9.dll"] = {
        "size": 300000,
        "version": "9.1.0.70",
        "imports": ["KERNEL32.dll"],
        "loads": [f"cudnn_{p}64_9.dll" for p in PARTS9],
    }
    for part in PARTS9:
        loads = ["cublas64_12.dll", "cublasLt64_12.dll"] if part == "ops" else []
        files[f"{cuda}\\bin\\cudnn_{part}64_9.dll"] = {
            "size": 9000000,
            "version": "9.1.0.70",
            "imports": ["KERNEL32.dll"],
            "loads": loads,
        }
    nvcc = {"nvcc --version": {"returncode": 0, "stdout": "Cuda compilation tools, release 11.8, V11.8.89\n"}}
    env = {"PATH": f"{cuda}\\bin;C:\\Windows\\System32;C:\\Windows", "CUDA_PATH": cuda}
    found = by_id(machine(WINDOWS_BASE, files=files, env=env, commands=nvcc))
    mismatch = found["cudnn-cuda-mismatch"]
    assert (
        "built for CUDA 12" in mismatch.detail
        and "the CUDA 11.8" in mismatch.detail
        and "_cuda11-archive" in mismatch.fix[0]
    ), mismatch.detail
    # Its missing cublas64_12.dll is the same problem, said under the mismatch.
    findings = run(machine(WINDOWS_BASE, files=files, env=env, commands=nvcc)).findings
    missing = [f for f in findings if f.id == "dependency-missing" and "cublas64_12.dll" in f.detail]
    assert missing and all(
        f.symptom_of is not None and findings[f.symptom_of].id == "cudnn-cuda-mismatch" for f in missing
    )


def _paddle(log: str) -> list[dict[str, Any]]:
    report = {"paddle": {"version": "2.6.1", "compiled_with_cuda": True, "error": log}}
    return [
        {
            "executable": "C:\\env\\python.exe",
            "version": "3.10.11",
            "current": True,
            "kind": "venv",
            "packages": {"paddlepaddle-gpu": "2.6.1"},
            "frameworks": report,
        }
    ]


def test_a_library_a_framework_says_it_failed_to_load_is_resolved_without_a_table_row():
    log = "RuntimeError: (PreconditionNotMet) The third-party dynamic library (cudnn64_8.dll) that Paddle depends on is not configured correctly."
    findings = run(machine(WINDOWS_BASE, pythons=_paddle(log))).findings
    missing = [f for f in findings if f.id == "dependency-missing"]
    assert len(missing) == 1 and "needs cudnn64_8.dll" in missing[0].detail, [f.detail for f in missing]
    # Once the file is on PATH the framework's old message is not repeated; what that file needs is judged instead.
    files = {
        "C:\\cudnn\\bin\\cudnn64_8.dll": {
            "size": 1000,
            "version": "8.9.7.29",
            "imports": ["KERNEL32.dll", "zlibwapi.dll"],
        }
    }
    env = {"PATH": "C:\\cudnn\\bin;C:\\Windows\\System32;C:\\Windows"}
    found = [
        f.detail
        for f in run(machine(WINDOWS_BASE, files=files, env=env, pythons=_paddle(log))).findings
        if f.id == "dependency-missing"
    ]
    assert not [d for d in found if "needs cudnn64_8.dll" in d] and [
        d for d in found if d.startswith("cudnn64_8.dll") and "needs zlibwapi.dll" in d
    ], found


def test_a_try_list_in_one_message_is_one_request():
    log = "The third-party dynamic library (cufft64_120.dll;cufft64_12.dll;cufft64_10.dll) that Paddle depends on is not configured correctly."
    missing = [f for f in run(machine(WINDOWS_BASE, pythons=_paddle(log))).findings if f.id == "dependency-missing"]
    assert len(missing) == 1 and "one of cufft64_120.dll, cufft64_12.dll, cufft64_10.dll" in missing[0].detail, [
        f.detail for f in missing
    ]


def test_the_summary_lists_an_unclaimed_installation_by_its_folder_not_as_a_framework():
    import io

    from cudnn_doctor.reports import terminal

    out = io.StringIO()
    terminal.render(run(machine(LINUX_BASE, files={**cudnn9_linux(LIB), **cublas(LIB)}, pythons=[])), out, color=False)
    assert f"9 for CUDA 12 at {LIB}" in out.getvalue() and "process loads" not in out.getvalue(), out.getvalue()


def _installs(document: dict[str, Any]) -> dict[str, Any]:
    return {i.folder: i for i in run(document).facts.cudnn}


def test_cudnn_3_and_2_are_recognised_by_their_cuda_numbered_names():
    """cuDNN 1-3 named their library after the CUDA release (cudnn64_70.dll, libcudnn.so.7.0), not after cuDNN's major."""
    cuda = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v7.0"
    header = {"text": "#define CUDNN_MAJOR      3\n#define CUDNN_MINOR      0\n#define CUDNN_PATCHLEVEL 7\n"}
    windows = machine(
        WINDOWS_BASE,
        files={
            f"{cuda}\\bin\\cudnn64_70.dll": {"size": 60000000, "imports": ["KERNEL32.dll"]},
            f"{cuda}\\include\\cudnn.h": header,
        },
        env={"PATH": f"{cuda}\\bin;C:\\Windows\\System32", "CUDA_PATH": cuda},
    )
    install = _installs(windows)[f"{cuda}\\bin"]
    assert (install.major, install.version, install.cuda_major) == (3, "3.0.7", 7), install
    linux_folder = "/usr/local/cuda-6.5/lib64"
    files = {
        f"{linux_folder}/libcudnn.so.6.5.48": {"soname": "libcudnn.so.6.5", "imports": ["libc.so.6"]},
        f"{linux_folder}/libcudnn.so.6.5": {"link": "libcudnn.so.6.5.48"},
        f"{linux_folder}/libcudnn.so": {"link": "libcudnn.so.6.5"},
    }
    install = _installs(machine(LINUX_BASE, files=files, env={"LD_LIBRARY_PATH": linux_folder}))[linux_folder]
    # its file name says CUDA 6.5, not a cuDNN version: no version is claimed without a header; nor a CUDA major it
    # needs, since cuDNN v2 "for CUDA 6.5" ran with CUDA 7.x toolkits as well
    assert (install.major, install.version, install.cuda_major) == (2, None, None), install
    # near miss: cuDNN 7.0.5's real file libcudnn.so.7.0.5 (soname libcudnn.so.7) is cuDNN 7
    modern = {
        f"{LIB}/libcudnn.so.7.0.5": {"soname": "libcudnn.so.7", "imports": ["libc.so.6"]},
        f"{LIB}/libcudnn.so.7": {"link": "libcudnn.so.7.0.5"},
    }
    install = _installs(machine(LINUX_BASE, files=modern))[LIB]
    assert (install.major, install.version) == (7, "7.0.5"), install


def test_a_driver_style_file_version_is_not_a_cudnn_version():
    """cuDNN 7's cudnn64_7.dll carries a FileVersion that starts with 6 (driver-style): the header says the release."""
    cuda = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.0"
    files = {
        f"{cuda}\\bin\\cudnn64_7.dll": {
            "size": 300000000,
            "version": "6.14.11.10000",
            "imports": ["KERNEL32.dll", "cublas64_100.dll"],
        }
    }
    document = machine(WINDOWS_BASE, files=files, env={"PATH": f"{cuda}\\bin;C:\\Windows\\System32", "CUDA_PATH": cuda})
    install = _installs(document)[f"{cuda}\\bin"]
    assert install.major == 7 and install.version is None and install.libraries[0].version is None, install
    files[f"{cuda}\\include\\cudnn.h"] = {
        "text": "#define CUDNN_MAJOR 7\n#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 5\n"
    }
    document = machine(WINDOWS_BASE, files=files, env={"PATH": f"{cuda}\\bin;C:\\Windows\\System32", "CUDA_PATH": cuda})
    assert _installs(document)[f"{cuda}\\bin"].version == "7.6.5"


def test_cudnn_v2_named_for_cuda_6_5_in_a_cuda_7_toolkit_is_no_cuda_mismatch():
    """TensorFlow 0.6-0.8 ran cuDNN v2 (libcudnn.so.6.5) in CUDA 7.0 toolkits: its name is no CUDA major it needs.
    The v3 name (libcudnn.so.7.0) still says CUDA 7, the one major its builds served."""
    rows = {row.name: row for row in knowledge.table("cudnn").legacy_names}
    assert rows["libcudnn.so.6.5"].cuda_majors() == [6, 7] and rows["libcudnn.so.7.0"].cuda_majors() == [7]
    root = "/usr/local/cuda-7.0"
    files = {
        f"{root}/bin/nvcc": {"size": 1000},
        f"{root}/lib64/libcudart.so.7.0": {"soname": "libcudart.so.7.0", "imports": ["libc.so.6"]},
        f"{root}/lib64/libcudnn.so.6.5.48": {"soname": "libcudnn.so.6.5", "imports": ["libc.so.6"]},
        f"{root}/lib64/libcudnn.so.6.5": {"link": "libcudnn.so.6.5.48"},
        f"{root}/include/cudnn.h": {
            "text": "#define CUDNN_MAJOR 2\n#define CUDNN_MINOR 0\n#define CUDNN_PATCHLEVEL 0\n"
        },
    }
    commands = {"nvcc --version": {"returncode": 0, "stdout": "Cuda compilation tools, release 7.0, V7.0.27\n"}}
    env = {"PATH": f"{root}/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": f"{root}/lib64"}
    found = by_id(machine(LINUX_BASE, files=files, env=env, commands=commands))
    assert "cudnn-cuda-mismatch" not in found, found["cudnn-cuda-mismatch"].detail
    # the same library unreadable, as NVIDIA's tarball left it after `sudo cp`: that is the error, and only that
    files[f"{root}/lib64/libcudnn.so.6.5.48"] = {**files[f"{root}/lib64/libcudnn.so.6.5.48"], "readable": False}
    found = by_id(machine(LINUX_BASE, files=files, env=env, commands=commands))
    assert "library-unreadable" in found and "cudnn-cuda-mismatch" not in found, sorted(found)


def test_a_sub_library_copied_alone_onto_path_is_loaded_by_name_and_its_imports_judged():
    """Users copy the one DLL an error names (cudnn_cnn_infer64_8.dll) into a toolkit's bin: a program that asks
    for it loads it from PATH, and it needs cudnn_ops_infer64_8.dll and zlibwapi.dll, which are not there."""
    cuda = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.1"
    part = f"{cuda}\\bin\\cudnn_cnn_infer64_8.dll"
    files = {
        part: {
            "size": 600000000,
            "version": "8.9.7.29",
            "imports": ["cudnn_ops_infer64_8.dll", "KERNEL32.dll"],
            "loads": ["zlibwapi.dll"],
        }
    }
    env = {"PATH": f"{cuda}\\bin;C:\\Windows\\System32", "CUDA_PATH": cuda}
    missing = [
        f for f in run(machine(WINDOWS_BASE, files=files, env=env, pythons=[])).findings if f.id == "dependency-missing"
    ]
    names = {f.evidence["name"] for f in missing}
    assert {"cudnn_ops_infer64_8.dll", "zlibwapi.dll"} <= names, [f.detail for f in missing]
    # near miss: the same DLL in a folder off PATH is loaded by nothing, so nothing of it is judged as a load
    off_path = {"PATH": "C:\\Windows\\System32", "CUDA_PATH": cuda}
    found = run(machine(WINDOWS_BASE, files=files, env=off_path, pythons=[])).findings
    assert not [f for f in found if f.id == "dependency-missing"], [f.detail for f in found]
