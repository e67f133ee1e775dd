"""Live acceptance on this machine: onnxruntime-gpu in real venvs, with and without its [cuda,cudnn] extras.

The venvs are built once in ~/.cache/cudnn-doctor-tests/venvs (outside the repository) and the
tests skip when the package registry cannot be reached. The doctor runs with the venv's own
interpreter as the current one (its dependencies from a `--target` folder, which is no
site-packages), so only that venv's frameworks are diagnosed.

Three cases: onnxruntime-gpu alone (the pip line is the fix); with its extras (installed but not
searched: preload_dlls() or the exact LD_LIBRARY_PATH line, never "install cuDNN"); with the
extras' folders on LD_LIBRARY_PATH (healthy: the only error is the missing driver).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from cudnn_doctor.binaries import BinaryInfo
from cudnn_doctor.system.binaries import read_binary
from tests.conftest import cached, cached_venv, content_name, pip_install

pytestmark = [pytest.mark.network, pytest.mark.skipif(sys.platform != "linux", reason="the live venvs are Linux venvs")]

SRC = Path(__file__).resolve().parents[2] / "src"
ORT = "onnxruntime-gpu==1.31.1"
CUDA_ITEM = "needs issue 9's item on ONNX Runtime's CUDA version (build_and_package_info.py, the provider's DT_NEEDED): the doctor still takes CUDA {said} from its table, the provider needs CUDA {real}"
SCAN_ITEM = (
    "needs issue 9's item on names from the binary string scan (junk, or another CUDA major's fallback names): {names}"
)
CUDA_RUNTIME = re.compile(r"^lib(?:cudart|cublas|cublasLt|nvrtc)\.so\.(\d+)")
LIBRARY_NAME = re.compile(r"^(lib[\w.+-]+\.so[.\d]*|[\w.+-]+\.dll)$")


def _deps() -> Path:
    """The doctor's own dependencies, installed once (under a lock) for running it under a venv's interpreter."""
    text = (SRC.parent / "pyproject.toml").read_text(encoding="utf-8")  # tomllib is 3.11+; the list is one simple array
    dependencies = re.findall(r'"([^"]+)"', text.split("dependencies = [", 1)[1].split("]", 1)[0])
    with cached(f"doctor-deps-{content_name(sys.version, *dependencies)}") as folder:
        if not (folder / "cudnn-doctor-requirements.txt").is_file():
            pip_install(Path(sys.executable), "--target", str(folder), *dependencies, timeout=600)
            (folder / "cudnn-doctor-requirements.txt").write_text("\n".join(dependencies) + "\n", encoding="utf-8")
    return folder


def _site(python: Path) -> Path:
    return next((python.parent.parent / "lib").glob("python*/site-packages"))


def _doctor(python: Path, tmp_path: Path, ld_library_path: Optional[str] = None) -> dict[str, Any]:
    env = {
        "HOME": str(Path.home()),
        "PATH": f"{python.parent}:/usr/sbin:/usr/bin:/sbin:/bin",  # ldconfig -p: the loader cache
        "VIRTUAL_ENV": str(python.parent.parent),
        "PYTHONPATH": f"{SRC}:{_deps()}",
    }
    if ld_library_path:
        env["LD_LIBRARY_PATH"] = ld_library_path
    done = subprocess.run(
        [str(python), "-m", "cudnn_doctor", "check", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _provider(python: Path) -> BinaryInfo:
    return read_binary(str(_site(python) / "onnxruntime" / "capi" / "libonnxruntime_providers_cuda.so"))


def _provider_cuda_major(python: Path) -> int:
    """The CUDA major the real CUDA provider links against, from its DT_NEEDED."""
    cudart = next(name for name in _provider(python).imports if name.startswith("libcudart.so."))
    return int(cudart.split(".")[2])


def _other_major(name: str, major: int) -> bool:
    """A CUDA runtime name of another major than the provider's (a name the string scan found, not one it links)."""
    match = CUDA_RUNTIME.match(name)
    return match is not None and int(match.group(1)) != major


def _ort_build(report: dict[str, Any]) -> dict[str, Any]:
    return next(b for b in report["facts"]["builds"] if b["name"] == "onnxruntime")


def _dist_version(python: Path, name: str) -> str:
    folder = next(_site(python).glob(f"{name.replace('-', '_')}-*.dist-info"))
    return folder.name[len(name) + 1 : -len(".dist-info")]


def _needs_other_items(report: dict[str, Any], python: Path) -> None:
    """xfail, with the reason, when what remains wrong belongs to another item of issue 9."""
    said = (_ort_build(report).get("cuda") or {}).get("value")
    real = _provider_cuda_major(python)
    if said is None or int(said.split(".")[0]) != real:
        pytest.xfail(CUDA_ITEM.format(said=said, real=real))
    needed = set(_provider(python).imports)
    junk = [
        name
        for name in (
            f["evidence"].get("name") or ""
            for f in report["findings"]
            if f["id"] == "dependency-missing" and f["severity"] == "error"
        )
        if not LIBRARY_NAME.match(name) or (name not in needed and _other_major(name, real))
    ]
    if junk:
        pytest.xfail(SCAN_ITEM.format(names=", ".join(junk)))


def _has_driver(report: dict[str, Any]) -> bool:
    return report["facts"]["driver"]["source"] is not None


def test_provider_has_no_runpath_into_the_wheels():
    """The reason ONNX Runtime needs preload_dlls(): its CUDA provider's RUNPATH / RPATH never reach site-packages/nvidia."""
    python = cached_venv("ort-alone", ORT)
    binary = _provider(python)
    assert "libcudart.so." + str(_provider_cuda_major(python)) in binary.imports
    assert not any("nvidia" in entry for entry in (*binary.runpath, *binary.rpath))


def test_onnxruntime_alone_gets_its_pip_extras_line(tmp_path):
    python = cached_venv("ort-alone", ORT)
    report = _doctor(python, tmp_path)
    version = _ort_build(report)["version"]
    cudnn = next(f for f in report["findings"] if f["id"] == "cudnn-missing")
    assert cudnn["fix"][0] == f'"{python}" -m pip install "onnxruntime-gpu[cuda,cudnn]=={version}"'
    assert "preload_dlls()" in cudnn["fix"][1]
    every_fix = [step for f in report["findings"] for step in f["fix"]]
    assert not [s for s in every_fix if re.search(r"nvidia-(cublas|cuda-runtime|cuda-nvrtc|curand|cufft)-cu13", s)], (
        "deprecated placeholder names"
    )
    assert _no_gpu(report) <= {f["id"] for f in report["findings"]}


def test_onnxruntime_with_extras_installed_but_not_searched(tmp_path):
    python = cached_venv("ort-extras", ORT.replace("==", "[cuda,cudnn]=="))
    site = _site(python)
    report = _doctor(python, tmp_path)
    cudnn = next(f for f in report["findings"] if f["id"] == "cudnn-missing")
    cudnn_version = _dist_version(python, "nvidia_cudnn_cu13")
    assert (
        f"installed in this environment as nvidia-cudnn-cu13 {cudnn_version} in {site}/nvidia/cudnn/lib"
        in cudnn["detail"]
    )
    assert "does not search there" in cudnn["detail"]
    assert cudnn["fix"][0].startswith(
        "Call `import onnxruntime; onnxruntime.preload_dlls()` before creating the InferenceSession"
    )
    assert (
        cudnn["fix"][1]
        == f"Or, before starting Python: export LD_LIBRARY_PATH={site}/nvidia/cudnn/lib:{site}/nvidia/cu13/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"
    )
    every_fix = [step for f in report["findings"] for step in f["fix"]]
    assert not [s for s in every_fix if "cudnn-archive" in s or "nvidia-cudnn" in s], (
        "a fix that installs the cuDNN already installed"
    )
    provider_needs = {
        f["evidence"]["name"]: f
        for f in report["findings"]
        if f["id"] == "dependency-missing" and f["evidence"]["name"].endswith(".so.13")
    }
    assert provider_needs, "the provider's CUDA 13 imports are reported"
    for name, finding in provider_needs.items():
        assert f"{site}/nvidia/cu13/lib" in finding["detail"] and "preload_dlls()" in finding["fix"][0], name
    _needs_other_items(report, python)
    heads = {f["id"] for f in report["findings"] if f["severity"] == "error" and f.get("symptom_of") is None}
    assert heads == {"cudnn-missing"} | _no_gpu(report), heads


def test_onnxruntime_extras_on_ld_library_path_is_healthy(tmp_path):
    python = cached_venv("ort-extras", ORT.replace("==", "[cuda,cudnn]=="))
    site = _site(python)
    report = _doctor(python, tmp_path, f"{site}/nvidia/cu13/lib:{site}/nvidia/cudnn/lib")
    assert not [f for f in report["findings"] if f["id"] == "cudnn-missing"]
    assert not [
        f for f in report["findings"] if f["id"] == "dependency-missing" and f["evidence"]["name"].endswith(".so.13")
    ]
    _needs_other_items(report, python)
    heads = {f["id"] for f in report["findings"] if f["severity"] == "error" and f.get("symptom_of") is None}
    assert heads == _no_gpu(report), heads


def _no_gpu(report: dict) -> set[str]:
    """What a machine without the driver gets: no-nvidia-gpu, or in a container without the GPU passed in (as CI's and
    this sandbox may be) gpu-not-passed-to-container, with no-nvidia-gpu as its symptom."""
    if _has_driver(report):
        return set()
    ids = {f["id"] for f in report["findings"]}
    return {"gpu-not-passed-to-container"} if "gpu-not-passed-to-container" in ids else {"no-nvidia-gpu"}


def _record_libraries(dist_info: Path) -> list[str]:
    """The library files a wheel installed, from its RECORD (paths relative to site-packages)."""
    rows = (line.split(",", 1)[0] for line in (dist_info / "RECORD").read_text(encoding="utf-8").splitlines())
    return [row for row in rows if row.startswith("nvidia/") and re.search(r"\.so(\.\d+)*$", row)]


def test_the_wheel_table_matches_the_installed_wheels_records():
    """Every library the real CUDA 13 wheels of the extras installed maps to its own distribution and folder in the table."""
    from cudnn_doctor import knowledge
    from cudnn_doctor.versions import canonical_name

    python = cached_venv("ort-extras", ORT.replace("==", "[cuda,cudnn]=="))
    checked = 0
    for dist_info in _site(python).glob("nvidia_*.dist-info"):
        distribution = canonical_name(dist_info.name.split("-")[0])
        for member in _record_libraries(dist_info):
            folder, name = member.rsplit("/", 1)
            if name.startswith(("libcudadevrt", "libcudart_static")):
                continue
            row = knowledge.wheel_providing(name, "linux", 13)
            assert row is not None, member
            assert (canonical_name(row.distribution), "/".join(knowledge.wheel_folder(row, "linux"))) == (
                distribution,
                folder,
            ), member
            checked += 1
    assert checked >= 10


@pytest.mark.parametrize("platform", ["win_amd64", "manylinux_2_28_x86_64"])
def test_the_wheel_table_matches_a_downloaded_cuda13_runtime_wheel(platform):
    """The CUDA 13 runtime wheel for each OS: its library lies where the table says (nvidia/cu13/bin/x86_64 on Windows)."""
    import zipfile

    from cudnn_doctor import knowledge

    with cached(
        f"wheels/{platform}/nvidia-cuda-runtime-13.0.96"
    ) as folder:  # under a lock: one download, whoever is first
        wheels = list(folder.glob("*.whl"))
        if not wheels:
            command = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--platform",
                platform,
            ]
            tags = (
                ["--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64"]
                if platform.startswith("manylinux")
                else []
            )
            try:
                done = subprocess.run(
                    [*command, *tags, "-d", str(folder), "nvidia-cuda-runtime==13.0.96"],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
            except subprocess.TimeoutExpired:
                pytest.skip("the package registry did not answer in time")
            wheels = list(folder.glob("*.whl"))
            if done.returncode != 0 or not wheels:
                pytest.skip("cannot download nvidia-cuda-runtime 13.0.96 from the package registry")
    os_name = "windows" if platform.startswith("win") else "linux"
    with zipfile.ZipFile(wheels[0]) as wheel:
        members = [m for m in wheel.namelist() if re.search(r"\.(dll|so(\.\d+)*)$", m) and "cudart" in m]
    assert members
    for member in members:
        folder_part, name = member.rsplit("/", 1)
        row = knowledge.wheel_providing(name, os_name)
        assert row is not None and row.distribution == "nvidia-cuda-runtime", member
        assert "/".join(knowledge.wheel_folder(row, os_name)) == folder_part
