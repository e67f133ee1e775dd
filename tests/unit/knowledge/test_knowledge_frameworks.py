"""The framework tables of issue 11: each correction of the knowledge review (W1-W6, S1, S3) fails on
the old rows, and spot checks cite the row they read (values from docs/research/issue-11)."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.facts import NVIDIA_WHEELS, SYSTEM
from tests.conftest import LINUX_BASE, WINDOWS_BASE, findings_of, machine, run


def python(exe: str, version: str, packages: dict, frameworks: dict | None = None) -> dict:
    return {
        "executable": exe,
        "version": version,
        "current": True,
        "kind": "venv",
        "packages": packages,
        "frameworks": frameworks or {},
    }


# --- W1, W2 and the older releases: onnxruntime-gpu per release and feed -------------------------


def test_w1_onnxruntime_1_18_on_pypi_is_cuda_11_8_and_its_cuda_12_build_is_a_side_feed():
    pypi = knowledge.onnxruntime_build(Version("1.18.1"))
    assert (pypi.feed, pypi.cuda, pypi.cudnn) == ("pypi", "11.8", "8")  # "1.18.x | 11.8 | 8.x | Available in pypi"
    side = knowledge.onnxruntime_build(Version("1.18.1"), "onnxruntime-cuda-12")
    assert (side.cuda, side.cudnn) == ("12", "9")  # "1.18.1 | 12.x | 9.x | cuDNN 9 is required"
    assert knowledge.onnxruntime_build(Version("1.18.0"), "onnxruntime-cuda-12").cudnn == "8"  # "1.18.0 | 12.x | 8.x"
    assert knowledge.onnxruntime_build(Version("1.19.0")).cuda == "12"  # CUDA 12 the PyPI default from 1.19


def test_w2_onnxruntime_1_27_and_later_are_cuda_13_with_cuda_12_on_a_side_feed():
    assert knowledge.onnxruntime_build(Version("1.28")).cuda == "13.0"
    assert knowledge.onnxruntime_build(Version("1.26.0")).cuda == "12"
    assert [(row.feed, row.cuda) for row in knowledge.onnxruntime_builds(Version("1.28.0"))] == [
        ("pypi", "13.0"),
        ("onnxruntime-cuda-12", "12"),
    ]
    assert knowledge.onnxruntime_build(Version("1.28.0"), "onnxruntime-cuda-12").cudnn is None  # not stated by #29831


@pytest.mark.parametrize(
    ("version", "cuda"),
    [
        ("1.10.0", "11.4"),
        ("1.11.1", "11.4"),
        ("1.12.1", "11.4"),
        ("1.13.1", "11.6"),
        ("1.14.1", "11.6"),
        ("1.17.3", "11.8"),
    ],
)
def test_onnxruntime_requirements_table_rows(version, cuda):
    """onnxruntime.ai CUDA EP requirements: "1.10 | 11.4", "1.12 1.11 | 11.4", "1.14 1.13.1 1.13 | 11.6", "1.15 1.16 1.17 | 11.8"."""
    row = knowledge.onnxruntime_build(Version(version))
    assert (row.feed, row.cuda, row.cudnn) == ("pypi", cuda, "8")


def test_onnxruntime_1_17_had_a_cuda_12_2_side_feed():
    assert (
        knowledge.onnxruntime_build(Version("1.17.1"), "onnxruntime-cuda-12").cuda == "12.2"
    )  # "1.17 | 12.2 | 8.9.2.26"
    assert knowledge.onnxruntime_build(Version("1.16.3"), "onnxruntime-cuda-12") is None


# --- W3, W4, S1: PyTorch --------------------------------------------------------------------------


def test_w3_torch_1_12_has_cu102():
    assert knowledge.torch_release(Version("1.12.1")).cuda == ("10.2", "11.3", "11.6")  # previous-versions #v1121


@pytest.mark.parametrize(
    ("torch", "os_name", "python_version", "supported"),
    [
        ("2.2.0+cu121", "linux", "3.12.1", True),  # W4: cp312 wheels
        ("2.3.1+cu121", "windows", "3.12.4", True),  # torch-2.3.1-cp312-cp312-win_amd64.whl
        ("2.5.1+cu124", "linux", "3.13.0", True),
        ("1.13.1+cu117", "linux", "3.11.4", True),  # torch-1.13.1-cp311-cp311-manylinux1_x86_64.whl
        ("1.13.1+cu117", "windows", "3.11.4", False),  # no cp311 win_amd64 wheel of 1.13
        ("2.14.1+cu130", "linux", "3.15.0", False),  # no cp315 wheel of 2.14 on PyPI
        ("2.15.0", "linux", "3.15.0", True),  # 2.15.0: cp311-cp315
        ("2.15.0", "linux", "3.10.12", False),  # 2.15 dropped cp310
    ],
)
def test_w4_python_unsupported_follows_the_wheels_of_the_os(torch, os_name, python_version, supported):
    base, exe = (WINDOWS_BASE, "C:\\v\\Scripts\\python.exe") if os_name == "windows" else (LINUX_BASE, "/v/bin/python")
    report = {"torch": {"version": torch, "cuda": None, "cuda_available": False, "device_count": 0, "arch_list": []}}
    found = findings_of(
        machine(base, pythons=[python(exe, python_version, {"torch": torch}, report)]), "python-unsupported"
    )
    assert (not found) is supported


def test_torch_releases_from_1_7_to_2_15_with_pypi_cuda_and_cudnn():
    versions = [row.version for row in knowledge.table("torch").releases]
    assert versions[0] == "2.15" and versions[-1] == "1.7" and len(versions) == 23
    assert knowledge.torch_release(Version("1.7.1")).cuda == ("9.2", "10.1", "10.2", "11.0")  # previous-versions #v171
    assert (
        knowledge.torch_release(Version("2.14.0")).pypi_cuda == "13.0"
    )  # test-infra STABLE_CUDA_VERSIONS "test": "13.0"
    assert knowledge.torch_release(Version("2.7.0")).pypi_cuda == "12.6"
    assert (
        knowledge.torch_release(Version("2.6.0")).pypi_cudnn == "9.1.0.70"
    )  # Requires-Dist nvidia-cudnn-cu12 (==9.1.0.70)
    assert knowledge.torch_release(Version("1.13.1")).pypi_cudnn == "8.5.0.96"
    assert knowledge.torch_release(Version("2.4.1")).cudnn_major == "9"
    assert knowledge.torch_release(Version("2.15.0")).cuda == ()  # not sourced yet: no variant is offered


def test_a_linux_only_variant_is_not_offered_on_windows():
    row = knowledge.torch_release(Version("1.11.0"))
    assert row.cuda_on("linux") == ("10.2", "11.3") and row.cuda_on("windows") == (
        "11.3",
    )  # "CUDA-10.2 PyTorch builds are no longer available for Windows"
    # a CPU torch 1.11 with a driver for CUDA 11.0 (451.48): on Linux it is above the 11.x minor-version floor (450.80.02),
    # so cu113 runs; on Windows it is below that floor (452.39), so cu113 needs a driver update, and cu102 is no 1.11 build
    nvml = {
        "driver_version": "451.48",
        "cuda_driver_version": 11000,
        "gpus": [{"name": "NVIDIA GeForce RTX 2080", "compute_capability": "7.5"}],
    }
    report = {
        "torch": {"version": "1.11.0+cpu", "cuda": None, "cuda_available": False, "device_count": 0, "arch_list": []}
    }
    linux = findings_of(
        machine(LINUX_BASE, nvml=nvml, pythons=[python("/v/bin/python", "3.9.7", {"torch": "1.11.0+cpu"}, report)]),
        "torch-cpu-build",
    )
    assert (
        '"/v/bin/python" -m pip install torch==1.11.0 --index-url https://download.pytorch.org/whl/cu113'
        in linux[0].fix
    )
    exe = "C:\\v\\Scripts\\python.exe"
    windows = findings_of(
        machine(WINDOWS_BASE, nvml=nvml, pythons=[python(exe, "3.9.7", {"torch": "1.11.0+cpu"}, report)]),
        "torch-cpu-build",
    )
    assert not any("torch==1.11" in line and "cu102" in line for line in windows[0].fix)
    assert any(
        "torch==1.11.0 --index-url https://download.pytorch.org/whl/cu113" in line and ">= 452.39" in line
        for line in windows[0].fix
    )


# --- TensorFlow: 2.19-2.21, [and-cuda] wheels, W6 --------------------------------------------------


@pytest.mark.parametrize(
    ("version", "python_range", "cudnn", "cuda"),
    [
        ("2.21.0", ">=3.10,<3.14", "9.3", "12.5"),
        ("2.20.0", ">=3.9,<3.14", "9.3", "12.5"),
        ("2.19.1", ">=3.9,<3.13", "9.3", "12.5"),
    ],
)
def test_tensorflow_linux_tested_builds_to_2_21(version, python_range, cudnn, cuda):
    row = knowledge.tensorflow_build(
        Version(version), "linux"
    )  # tensorflow/docs source.md: "tensorflow-2.21.0 | 3.10-3.13 | … | 9.3 | 12.5"
    assert (str(row.python), row.cudnn, row.cuda) == (python_range, cudnn, cuda)


def test_w6_tensorflow_2_14_and_cuda_installs_cu11_wheels_and_they_count_as_pip_cuda():
    assert (
        "nvidia-cudnn-cu11" in knowledge.tensorflow_and_cuda(Version("2.14.1")).wheels
    )  # nvidia-cudnn-cu11 (==8.7.0.84)
    assert "nvidia-cudnn-cu12" in knowledge.tensorflow_and_cuda(Version("2.16.1")).wheels
    assert knowledge.tensorflow_and_cuda(Version("2.13.0")) is None  # [and-cuda] starts with 2.14
    assert not knowledge.loads_system_cuda("tensorflow", {"nvidia-cudnn-cu11", "nvidia-cuda-runtime-cu11"})
    assert not knowledge.loads_system_cuda("tensorflow", {"nvidia-cudnn-cu13", "nvidia-cuda-runtime"})
    assert knowledge.loads_system_cuda("tensorflow", {"numpy"})


def test_every_and_cuda_wheel_list_makes_tensorflow_use_pip_cuda():
    for row in knowledge.table("tensorflow").and_cuda:
        assert not knowledge.loads_system_cuda("tensorflow", set(row.wheels)), row.versions


def test_tensorflow_2_14_with_its_and_cuda_wheels_is_not_a_system_cuda_build():
    packages = {"tensorflow": "2.14.1", "nvidia-cudnn-cu11": "8.7.0.84", "nvidia-cuda-runtime-cu11": "11.8.89"}
    diagnosis = run(machine(LINUX_BASE, pythons=[python("/v/bin/python", "3.11.4", packages)]))
    (build,) = [b for b in diagnosis.facts.builds if b.name == "tensorflow"]
    assert build.cuda_from == NVIDIA_WHEELS


# --- W5: PaddlePaddle --------------------------------------------------------------------------------


def test_w5_paddle_3_linux_wheels_bring_cuda_from_pip():
    assert not knowledge.loads_system_cuda("paddle", {}, Version("3.2.0"), "linux")
    assert not knowledge.loads_system_cuda("paddle", {}, Version("3.0.0b2"), "linux")  # "您无需再安装 CUDA\CUDNN\NCCL"
    assert knowledge.loads_system_cuda(
        "paddle", {}, Version("3.0.0b0"), "linux"
    )  # its page still asks for CUDA 11.8 + cuDNN 8.6.0
    assert knowledge.loads_system_cuda("paddle", {}, Version("3.2.0"), "windows")
    assert knowledge.loads_system_cuda("paddle", {}, Version("2.6.2"), "linux")


def test_paddle_3_on_linux_is_not_diagnosed_as_a_system_cuda_build():
    packages = {"paddlepaddle-gpu": "3.2.0"}
    diagnosis = run(machine(LINUX_BASE, pythons=[python("/v/bin/python", "3.11.4", packages)]))
    (build,) = [b for b in diagnosis.facts.builds if b.name == "paddle"]
    assert build.cuda_from != SYSTEM and build.system_libraries is None


@pytest.mark.parametrize(
    ("release", "os_name", "cudnn"),
    [
        ("2.1.3", "linux", "8.1.1"),
        ("2.3.2", "linux", "8.1.1"),
        ("2.4.2", "linux", "8.2.1"),
        ("2.1.3", "windows", "8.1.1"),
        ("2.2.0", "windows", "8.2.1"),
    ],
)
def test_paddle_post112_cudnn_depends_on_release_and_os(release, os_name, cudnn):
    """PaddlePaddle/docs release/2.x install pages: 'CUDA 工具包11.2配合cuDNN v8.1.1' (Linux 2.1-2.3, Windows 2.1), 'v8.2.1' later."""
    assert knowledge.paddle_build("post112", os_name, Version(release)).cudnn == cudnn


def test_paddle_rows_per_release_and_os():
    assert knowledge.paddle_build("post120", "linux", Version("2.6.1")).cuda == "12.0"
    assert knowledge.paddle_build("pypi", "linux", Version("2.5.2")).cuda == "11.8"  # the plain wheel of 2.5-2.6
    assert knowledge.paddle_build("pypi", "windows", Version("2.4.2")).cuda == "10.2"
    assert knowledge.paddle_build("post101", "linux", Version("2.4.2")) is None  # 2.4 has no post101 build
    cu126 = knowledge.paddle_build("cu126", "linux", Version("3.2.0"))
    assert (cu126.cuda, cu126.cudnn, cu126.index_url) == (
        "12.6",
        None,
        "https://www.paddlepaddle.org.cn/packages/stable/cu126/",
    )


# --- S3: JAX -------------------------------------------------------------------------------------------


def test_s3_jax_plugins_are_jax_distributions_and_local_extras_use_system_cuda():
    assert {"jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin", "jax-cuda13-pjrt", "jaxlib"} <= set(
        knowledge.framework("jax").distributions
    )
    assert knowledge.loads_system_cuda(
        "jax", {"jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt"}
    )  # jax[cuda12-local]
    assert not knowledge.loads_system_cuda(
        "jax", {"jax", "jax-cuda12-plugin", "nvidia-cudnn-cu12", "nvidia-cuda-runtime-cu12"}
    )  # jax[cuda12]
    assert not knowledge.loads_system_cuda(
        "jax", {"jax", "jax-cuda13-plugin", "nvidia-cudnn-cu13", "nvidia-cuda-runtime"}
    )  # jax[cuda13]


def test_jax_builds_per_extra():
    cuda13 = knowledge.jax_build(Version("0.8.0"), "cuda13")
    assert (cuda13.cuda, cuda13.loads_cuda, cuda13.driver_linux, cuda13.cudnn) == ("13", "bundled", "580", "9.12")
    local = knowledge.jax_build(Version("0.8.0"), "cuda12_local")  # pip treats - and _ alike
    assert (local.extra, local.loads_cuda, local.cudnn) == ("cuda12-local", "system", "9.8")
    assert (
        knowledge.jax_build(Version("0.4.30"), "cuda12").cudnn == "9.0"
    )  # jax_cuda12_plugin 0.4.30: nvidia-cudnn-cu12 <10.0,>=9.0
    assert knowledge.jax_build(Version("0.4.20"), "cuda11_pip").driver_linux == "450.80.02"
    assert knowledge.jax_build(Version("0.8.0"), "cuda11_pip") is None
    assert {row.extra for row in knowledge.jax_builds(Version("0.8.0"))} == {
        "cuda12",
        "cuda12-local",
        "cuda13",
        "cuda13-local",
    }


def test_jax_local_plugin_without_cuda_wheels_needs_the_system_cuda():
    packages = {"jax": "0.8.0", "jaxlib": "0.8.0", "jax-cuda12-plugin": "0.8.0", "jax-cuda12-pjrt": "0.8.0"}
    diagnosis = run(machine(LINUX_BASE, pythons=[python("/v/bin/python", "3.11.4", packages)]))
    (build,) = [b for b in diagnosis.facts.builds if b.name == "jax"]
    assert build.cuda_from == SYSTEM and build.system_libraries.cudart == "libcudart.so.12"
    packages.update({"nvidia-cudnn-cu12": "9.10.2.21", "nvidia-cuda-runtime-cu12": "12.9.79"})
    diagnosis = run(machine(LINUX_BASE, pythons=[python("/v/bin/python", "3.11.4", packages)]))
    (build,) = [b for b in diagnosis.facts.builds if b.name == "jax"]
    assert build.cuda_from == NVIDIA_WHEELS


# --- provenance ------------------------------------------------------------------------------------------

# The vendors' own sites and repositories (a third-party page may only be a `copy`).
_VENDOR = re.compile(
    r"^https://(pytorch\.org|download\.pytorch\.org|pypi\.org|www\.tensorflow\.org|onnxruntime\.ai|www\.paddlepaddle\.org\.cn|docs\.jax\.dev|docs\.cupy\.dev"
    r"|github\.com/(pytorch|tensorflow|microsoft/onnxruntime|PaddlePaddle|jax-ml|cupy)/)"
)


@pytest.mark.parametrize("name", ["frameworks", "torch", "tensorflow"])
def test_every_framework_row_cites_the_vendor(name):
    data = knowledge.table(name)
    for section in data._fields[1:]:
        rows = getattr(data, section)
        for row in (rows,) if hasattr(rows, "_fields") else rows:  # a single row is a NamedTuple too
            assert _VENDOR.match(row.source), f"{name}.{section}: {row.source[:80]}"
