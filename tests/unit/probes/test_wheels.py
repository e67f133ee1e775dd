"""pip nvidia-* wheels: which wheel ships which library, and whether a framework's process finds them.

ONNX Runtime (like TensorFlow and PaddlePaddle) loads CUDA and cuDNN by name; its CUDA provider
has no RUNPATH into site-packages, so wheels installed beside it are found only through
`onnxruntime.preload_dlls()` or LD_LIBRARY_PATH / PATH. Each case is a small machine per OS:
wheels installed but not searched, wheels on the search path (healthy), wheels missing.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from cudnn_doctor import knowledge
from cudnn_doctor.findings import Severity
from tests.conftest import LINUX_BASE, WINDOWS_BASE, machine, run

ORT_REPORT = {
    "version": "{v}",
    "providers": ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"],
}
CUDNN9 = [*knowledge.cudnn_release(9).parts, *knowledge.cudnn_release(9).optional]

LINUX_EXE = "/home/dev/.venv/bin/python"
LINUX_SITE = "/home/dev/.venv/lib/python3.11/site-packages"
WINDOWS_EXE = "C:\\Users\\dev\\env\\python.exe"
WINDOWS_SITE = "C:\\Users\\dev\\env\\Lib\\site-packages"

# (distribution, version, folder below site-packages, file names) per CUDA major and OS, as the real wheels lay them out
CU12_LINUX = [
    ("nvidia-cudnn-cu12", "9.5.1.17", "nvidia/cudnn/lib", ["libcudnn.so.9", *(f"libcudnn_{p}.so.9" for p in CUDNN9)]),
    ("nvidia-cuda-runtime-cu12", "12.9.79", "nvidia/cuda_runtime/lib", ["libcudart.so.12"]),
    ("nvidia-cublas-cu12", "12.6.4.1", "nvidia/cublas/lib", ["libcublas.so.12", "libcublasLt.so.12"]),
    ("nvidia-curand-cu12", "10.3.7.77", "nvidia/curand/lib", ["libcurand.so.10"]),
]
CU12_WINDOWS = [
    ("nvidia-cudnn-cu12", "9.28.0.42", "nvidia/cudnn/bin", ["cudnn64_9.dll", *(f"cudnn_{p}64_9.dll" for p in CUDNN9)]),
    ("nvidia-cuda-runtime-cu12", "12.9.79", "nvidia/cuda_runtime/bin", ["cudart64_12.dll"]),
    ("nvidia-cublas-cu12", "12.9.2.10", "nvidia/cublas/bin", ["cublas64_12.dll", "cublasLt64_12.dll"]),
    ("nvidia-curand-cu12", "10.3.10.19", "nvidia/curand/bin", ["curand64_10.dll"]),
]
CU13_LINUX = [
    ("nvidia-cudnn-cu13", "9.28.1.4", "nvidia/cudnn/lib", ["libcudnn.so.9", *(f"libcudnn_{p}.so.9" for p in CUDNN9)]),
    ("nvidia-cuda-runtime", "13.5.37", "nvidia/cu13/lib", ["libcudart.so.13"]),
    ("nvidia-cublas", "13.10.0.20", "nvidia/cu13/lib", ["libcublas.so.13", "libcublasLt.so.13"]),
    ("nvidia-curand", "10.4.5.25", "nvidia/cu13/lib", ["libcurand.so.10"]),
]
CU13_WINDOWS = [
    ("nvidia-cudnn-cu13", "9.28.1.4", "nvidia/cudnn/bin", ["cudnn64_9.dll", *(f"cudnn_{p}64_9.dll" for p in CUDNN9)]),
    ("nvidia-cuda-runtime", "13.5.37", "nvidia/cu13/bin/x86_64", ["cudart64_13.dll"]),
    ("nvidia-cublas", "13.10.0.20", "nvidia/cu13/bin/x86_64", ["cublas64_13.dll", "cublasLt64_13.dll"]),
    ("nvidia-curand", "10.4.5.25", "nvidia/cu13/bin/x86_64", ["curand64_10.dll"]),
]


def _folder(windows: bool, relative: str) -> str:
    return (WINDOWS_SITE + "\\" + relative.replace("/", "\\")) if windows else f"{LINUX_SITE}/{relative}"


def ort_machine(
    windows: bool,
    version: str = "1.22.0",
    wheels: list = (),
    provider_imports: list[str] = (),
    env: dict[str, str] = (),
) -> dict[str, Any]:
    """ONNX Runtime `version` in a venv, with these nvidia-* wheels' files installed beside it."""
    sep = "\\" if windows else "/"
    site = WINDOWS_SITE if windows else LINUX_SITE
    provider = "onnxruntime_providers_cuda.dll" if windows else "libonnxruntime_providers_cuda.so"
    files: dict[str, Any] = {
        sep.join([site, "onnxruntime", "capi", provider]): {"size": 300_000_000, "imports": list(provider_imports)}
    }
    packages = {"onnxruntime-gpu": version}
    for dist, dist_version, folder, names in wheels:
        packages[dist] = dist_version
        for name in names:
            files[_folder(windows, folder) + sep + name] = {"size": 1_000_000}
    report = {"onnxruntime": {**ORT_REPORT, "version": version}}
    python = {
        "executable": WINDOWS_EXE if windows else LINUX_EXE,
        "version": "3.11.7",
        "current": True,
        "kind": "venv",
        "packages": packages,
        "frameworks": report,
    }
    return machine(WINDOWS_BASE if windows else LINUX_BASE, files=files, env=dict(env), pythons=[python])


def errors(document: dict[str, Any]) -> dict[str, Any]:
    """Every error, by id (the first of each)."""
    found: dict[str, Any] = {}
    for f in run(document).findings:
        if f.severity is Severity.ERROR:
            found.setdefault(f.id, f)
    return found


def all_of(document: dict[str, Any], finding_id: str) -> list:
    return [f for f in run(document).findings if f.id == finding_id]


def folders(windows: bool, wheels: list) -> list[str]:
    return list(dict.fromkeys(_folder(windows, folder) for _, _, folder, _ in wheels))


# --- installed, but not searched --------------------------------------------------------------


@pytest.mark.parametrize("windows", [False, True], ids=["linux", "windows"])
def test_installed_wheels_that_onnxruntime_does_not_search(windows):
    wheels = CU12_WINDOWS if windows else CU12_LINUX
    found = errors(ort_machine(windows, wheels=wheels))
    cudnn = found["cudnn-missing"]
    version = wheels[0][1]
    assert (
        f"installed in this environment as nvidia-cudnn-cu12 {version} in {_folder(windows, wheels[0][2])}"
        in cudnn.detail
    )
    assert "onnxruntime 1.22.0 does not search there" in cudnn.detail and "preload_dlls()" in cudnn.detail
    assert cudnn.fix[0].startswith(
        "Call `import onnxruntime; onnxruntime.preload_dlls()` before creating the InferenceSession"
    )
    expected = folders(windows, wheels)
    if windows:
        joined = ";".join(expected)
        assert (
            cudnn.fix[1]
            == f'Or, before starting Python: set "PATH={joined};%PATH%" (cmd) or $env:PATH = "{joined};$env:PATH" (PowerShell)'
        )
    else:
        assert (
            cudnn.fix[1]
            == f"Or, before starting Python: export LD_LIBRARY_PATH={':'.join(expected)}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"
        )
    # never "install what is already installed"
    assert not any("pip install" in step or "cudnn-archive" in step for step in cudnn.fix)
    cudart = found["cuda-libs-not-found"]
    assert "installed in this environment as nvidia-cuda-runtime-cu12 12.9.79" in cudart.detail
    assert "preload_dlls()" in cudart.fix[0] and not any(
        "pip install" in step or "toolkit" in step for step in cudart.fix
    )


@pytest.mark.parametrize("windows", [False, True], ids=["linux", "windows"])
def test_cuda13_wheels_named_without_suffix_in_one_shared_folder(windows):
    """CUDA 13 wheels drop the -cu13 suffix and share nvidia/cu13/lib (Windows: nvidia\\cu13\\bin\\x86_64)."""
    wheels = CU13_WINDOWS if windows else CU13_LINUX
    imports = ["cublasLt64_13.dll", "cudart64_13.dll"] if windows else ["libcublasLt.so.13", "libcudart.so.13"]
    document = ort_machine(windows, version="1.31.1", wheels=wheels, provider_imports=imports)
    missing = {f.evidence["name"]: f for f in all_of(document, "dependency-missing")}
    cublas = missing[imports[0]]
    shared = _folder(windows, wheels[1][2])
    assert f"installed in this environment as nvidia-cublas 13.10.0.20 in {shared}" in cublas.detail
    assert "preload_dlls()" in cublas.fix[0]
    assert (
        shared in cublas.fix[1] and _folder(windows, "nvidia/cudnn/" + ("bin" if windows else "lib")) in cublas.fix[1]
    )
    assert f"nvidia-cuda-runtime 13.5.37 in {shared}" in missing[imports[1]].detail
    assert not any("-cu13" in step for f in missing.values() for step in f.fix)


def test_before_preload_dlls_only_the_search_path_helps():
    """onnxruntime-gpu before 1.21 has no preload_dlls(): the fix is the variable line alone."""
    cudnn = errors(ort_machine(False, version="1.20.1", wheels=CU12_LINUX))["cudnn-missing"]
    assert "installed in this environment as nvidia-cudnn-cu12" in cudnn.detail and "preload_dlls" not in cudnn.detail
    assert len(cudnn.fix) == 1 and cudnn.fix[0].startswith(
        "Put the wheels' folders on the search path, before starting Python: export LD_LIBRARY_PATH="
    )


# --- on the search path: healthy ---------------------------------------------------------------


@pytest.mark.parametrize("windows", [False, True], ids=["linux", "windows"])
def test_wheels_on_the_search_path_are_found(windows):
    wheels = CU12_WINDOWS if windows else CU12_LINUX
    imports = (
        ["cublasLt64_12.dll", "cublas64_12.dll", "curand64_10.dll", "cudart64_12.dll"]
        if windows
        else ["libcublasLt.so.12", "libcurand.so.10"]
    )
    on_path = folders(windows, wheels)
    env = (
        {"PATH": ";".join([*on_path, WINDOWS_BASE["env"]["PATH"]])}
        if windows
        else {"LD_LIBRARY_PATH": ":".join(on_path)}
    )
    found = errors(ort_machine(windows, wheels=wheels, provider_imports=imports, env=env))
    assert not {"cudnn-missing", "cuda-libs-not-found", "dependency-missing"} & set(found), found


# --- missing: the pip line ---------------------------------------------------------------------


@pytest.mark.parametrize("windows", [False, True], ids=["linux", "windows"])
def test_missing_wheels_get_the_frameworks_pip_extras(windows):
    found = errors(ort_machine(windows))
    exe = WINDOWS_EXE if windows else LINUX_EXE
    for finding_id in ("cudnn-missing", "cuda-libs-not-found"):
        fix = found[finding_id].fix
        assert fix[0] == f'"{exe}" -m pip install "onnxruntime-gpu[cuda,cudnn]==1.22.0"', fix
        assert "preload_dlls()" in fix[1]


def test_missing_wheels_of_an_older_release_get_one_wheel_per_library():
    """Without extras the wheel of each library for the build's CUDA major, cuDNN pinned to its major, and the folder it will land in."""
    found = errors(ort_machine(False, version="1.20.1"))
    fix = found["cudnn-missing"].fix
    assert fix[0].startswith("Download the cuDNN release")
    assert fix[1] == f'Or: "{LINUX_EXE}" -m pip install "nvidia-cudnn-cu12==9.*"'
    assert (
        fix[2]
        == f"Put the wheels' folders on the search path, before starting Python: export LD_LIBRARY_PATH={LINUX_SITE}/nvidia/cudnn/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"
    )
    cudart = found["cuda-libs-not-found"].fix
    assert f'Or: "{LINUX_EXE}" -m pip install nvidia-cuda-runtime-cu12 nvidia-cublas-cu12' in cudart


def test_extras_installed_but_another_major_missing_is_no_pip_extras_line():
    """With the extras installed, `pip install onnxruntime-gpu[cuda,cudnn]` would change nothing: the wheel of the name is named instead."""
    document = ort_machine(False, wheels=CU12_LINUX[:1])  # cuDNN only
    fix = errors(document)["cuda-libs-not-found"].fix
    assert not any("onnxruntime-gpu[" in step for step in fix)
    assert any("nvidia-cuda-runtime-cu12" in step for step in fix)


# --- the table ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "os_name", "cuda", "distribution", "folder"),
    [
        ("libcudart.so.13", "linux", None, "nvidia-cuda-runtime", "nvidia/cu13/lib"),
        ("cudart64_13.dll", "windows", None, "nvidia-cuda-runtime", "nvidia/cu13/bin/x86_64"),
        ("libcublasLt.so.13", "linux", None, "nvidia-cublas", "nvidia/cu13/lib"),
        ("CUBLASLT64_12.DLL", "windows", None, "nvidia-cublas-cu12", "nvidia/cublas/bin"),
        ("nvrtc64_120_0.dll", "windows", None, "nvidia-cuda-nvrtc-cu12", "nvidia/cuda_nvrtc/bin"),
        ("nvrtc64_130_0.dll", "windows", None, "nvidia-cuda-nvrtc", "nvidia/cu13/bin/x86_64"),
        ("nvrtc64_112_0.dll", "windows", None, "nvidia-cuda-nvrtc-cu11", "nvidia/cuda_nvrtc/bin"),
        ("libnvrtc.so.11.2", "linux", None, "nvidia-cuda-nvrtc-cu11", "nvidia/cuda_nvrtc/lib"),
        ("nvJitLink_120_0.dll", "windows", None, "nvidia-nvjitlink-cu12", "nvidia/nvjitlink/bin"),
        ("libnvJitLink.so.13", "linux", None, "nvidia-nvjitlink", "nvidia/cu13/lib"),
        ("libcufft.so.11", "linux", None, "nvidia-cufft-cu12", "nvidia/cufft/lib"),
        ("cufft64_12.dll", "windows", None, "nvidia-cufft", "nvidia/cu13/bin/x86_64"),
        ("libcurand.so.10", "linux", 12, "nvidia-curand-cu12", "nvidia/curand/lib"),
        ("curand64_10.dll", "windows", 13, "nvidia-curand", "nvidia/cu13/bin/x86_64"),
        ("cusolver64_11.dll", "windows", 12, "nvidia-cusolver-cu12", "nvidia/cusolver/bin"),
        ("libcusparse.so.12", "linux", 13, "nvidia-cusparse", "nvidia/cu13/lib"),
        ("libcudnn_graph.so.9", "linux", 13, "nvidia-cudnn-cu13", "nvidia/cudnn/lib"),
        ("cudnn_ops64_9.dll", "windows", 11, "nvidia-cudnn-cu11", "nvidia/cudnn/bin"),
        ("libcudart.so.11.0", "linux", None, "nvidia-cuda-runtime-cu11", "nvidia/cuda_runtime/lib"),
    ],
)
def test_which_wheel_provides_a_library(name, os_name, cuda, distribution, folder):
    row = knowledge.wheel_providing(name, os_name, cuda)
    assert row is not None and row.distribution == distribution
    assert "/".join(knowledge.wheel_folder(row, os_name)) == folder


def test_no_row_names_a_placeholder_that_fails_to_install():
    placeholders = knowledge.wheel_placeholders()
    assert placeholders and all(name.endswith("-cu13") for name in placeholders)
    assert not {row.distribution for row in knowledge.cuda_wheels()} & set(placeholders)
    assert set(placeholders.values()) <= {row.distribution for row in knowledge.cuda_wheels()}


def test_unknown_names_have_no_wheel():
    assert knowledge.wheel_providing("libfoo.so.1", "linux") is None
    assert knowledge.wheel_providing("libcudart.so.13", "windows") is None  # a Linux name is no DLL


def test_how_frameworks_reach_the_wheels():
    from packaging.version import Version

    assert knowledge.wheel_reach("onnxruntime", "linux", Version("1.31.1")).how == "preload_dlls"
    assert knowledge.wheel_reach("onnxruntime", "windows", Version("1.21.0")).extras == "cuda,cudnn"
    assert knowledge.wheel_reach("onnxruntime", "linux", Version("1.20.2")).how == "none"
    assert knowledge.wheel_reach("torch", "linux", Version("2.14.1")).how == "runpath"
    assert knowledge.wheel_reach("torch", "windows", Version("2.14.1")).how == "preload"


def test_the_probe_lists_installed_wheels_and_their_folders():
    facts = run(ort_machine(False, version="1.31.1", wheels=CU13_LINUX)).facts
    wheels = {w.distribution: w for w in facts.wheels}
    assert set(wheels) == {"nvidia-cudnn-cu13", "nvidia-cuda-runtime", "nvidia-cublas", "nvidia-curand"}
    assert wheels["nvidia-cublas"].folder == f"{LINUX_SITE}/nvidia/cu13/lib"
    assert wheels["nvidia-cublas"].libraries == (
        "libcublas.so.13",
        "libcublasLt.so.13",
    )  # not cuDNN's or cudart's, though they share the folder
    assert wheels["nvidia-cudnn-cu13"].version == "9.28.1.4"


def test_a_wheel_whose_files_are_gone_is_not_listed():
    document = ort_machine(False, wheels=CU12_LINUX)
    document["files"] = {k: v for k, v in document["files"].items() if "/nvidia/cudnn/" not in k}
    facts = run(document).facts
    assert "nvidia-cudnn-cu12" not in {w.distribution for w in facts.wheels}
    assert "installed in this environment" not in errors(document)["cudnn-missing"].detail


def test_runpath_chains_between_wheels_reach_the_shared_cuda13_folder():
    """cuDNN's wheel libraries carry RUNPATH $ORIGIN/../../cu13/lib: once cuDNN itself is found, its CUDA 13 imports
    resolve inside the wheels, while the ONNX Runtime provider (no RUNPATH) still finds nothing there."""
    document = ort_machine(
        False,
        version="1.31.1",
        wheels=CU13_LINUX,
        provider_imports=["libcudart.so.13"],
        env={"LD_LIBRARY_PATH": f"{LINUX_SITE}/nvidia/cudnn/lib"},
    )
    front = f"{LINUX_SITE}/nvidia/cudnn/lib/libcudnn.so.9"
    document["files"][front].update(
        imports=["libcublasLt.so.13"], rpath=["$ORIGIN", "$ORIGIN/../../cublas/lib", "$ORIGIN/../../cu13/lib"]
    )
    diagnosis = run(document)
    resolution = next(r for r in diagnosis.facts.resolutions if r.framework == "onnxruntime")
    through_runpath = next(s for s in resolution.steps if s.requester == front and s.name == "libcublasLt.so.13")
    assert through_runpath.winner == f"{LINUX_SITE}/nvidia/cu13/lib/libcublasLt.so.13"
    assert not [f for f in diagnosis.findings if f.id == "cudnn-missing"]
    missing = {f.evidence["name"]: f for f in diagnosis.findings if f.id == "dependency-missing"}
    assert "libcublasLt.so.13" not in missing
    assert "installed in this environment as nvidia-cuda-runtime 13.5.37" in missing["libcudart.so.13"].detail
    assert f"{LINUX_SITE}/nvidia/cu13/lib" in missing["libcudart.so.13"].fix[1]


def test_no_variable_line_without_a_folder_to_put_on_it():
    """A library no wheel provides gets no `export LD_LIBRARY_PATH=:$LD_LIBRARY_PATH` line with nothing in it."""
    from cudnn_doctor.checks._wheels import install_fixes, reach_fixes

    facts = run(ort_machine(False, version="1.20.1")).facts
    build = next(b for b in facts.builds if b.name == "onnxruntime")
    assert reach_fixes(facts, build, []) == []
    assert install_fixes(facts, build, ["libfoo.so.1"]) == []


def test_verbose_report_lists_each_wheel_and_its_folder():
    import io

    from cudnn_doctor.reports import terminal

    out = io.StringIO()
    terminal.render(run(ort_machine(False, version="1.31.1", wheels=CU13_LINUX)), out, verbose=True, color=False)
    assert (
        f"wheel nvidia-cublas 13.10.0.20: {LINUX_SITE}/nvidia/cu13/lib (libcublas.so.13, libcublasLt.so.13)"
        in out.getvalue()
    )


def test_one_pip_line_is_one_cause():
    """Without the extras, cuDNN and the provider's CUDA imports are missing for one reason: one head, the rest its symptoms."""
    document = ort_machine(False, version="1.31.1", provider_imports=["libcublasLt.so.13", "libcurand.so.10"])
    document["files"]["/usr/lib/x86_64-linux-gnu/libcudart.so.13"] = {
        "size": 700000
    }  # a toolkit's runtime: no cuda-libs-not-found to tie them
    findings = run(document).findings
    assert "cuda-libs-not-found" not in {f.id for f in findings}
    ours = {
        "cudnn-missing",
        "cuda-libs-not-found",
        "dependency-missing",
    }  # the test machine's driver is too old for CUDA 13: another finding
    heads = [f for f in findings if f.severity is Severity.ERROR and f.symptom_of is None and f.id in ours]
    assert [f.id for f in heads] == ["cudnn-missing"], [(f.id, f.detail[:80]) for f in heads]
    missing = [f for f in findings if f.id == "dependency-missing"]
    assert missing and all(f.symptom_of is not None for f in missing)
    assert all(f.fix[0] == f'"{LINUX_EXE}" -m pip install "onnxruntime-gpu[cuda,cudnn]==1.31.1"' for f in missing)


def test_no_wheel_is_offered_for_a_cuda_release_that_has_none():
    """CUDA 10 had no nvidia-* wheels: a CUDA 10.1 build missing cuDNN 7 must not be told to pip install the CUDA 13 one."""
    assert knowledge.wheel_providing("cudnn64_7.dll", "windows", 10) is None
    assert knowledge.wheel_providing("libcudnn.so.9", "linux", 12).distribution == "nvidia-cudnn-cu12"


@pytest.mark.live
@pytest.mark.parametrize("before, after", [(None, "/w/a:/w/b"), ("", "/w/a:/w/b"), ("/old", "/w/a:/w/b:/old")])
def test_the_ld_library_path_line_leaves_no_empty_entry(before, after):
    """An empty entry (`A:` with the variable unset) is the current folder to the loader: the line never makes one."""
    import subprocess

    from cudnn_doctor.paths import prepend_ld_library_path

    env = {"PATH": "/usr/bin:/bin", **({"LD_LIBRARY_PATH": before} if before is not None else {})}
    script = f'{prepend_ld_library_path(["/w/a", "/w/b"])}; printf %s "$LD_LIBRARY_PATH"'
    shell = shutil.which("sh")
    if shell is None:
        pytest.skip("no POSIX shell")
    assert subprocess.run([shell, "-c", script], env=env, capture_output=True, text=True, check=True).stdout == after
