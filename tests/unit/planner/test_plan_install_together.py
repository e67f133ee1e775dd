"""Issue 30: plans a user can install. The pip packages of one plan are checked together against each release's recorded
Requires-Dist; aarch64 is an input (SBSA wheels and archives, a Jetson told where its wheels are); CuPy is planned
from the recorded index; toolkits NVIDIA lists after 13.2 are known."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudnn_doctor.errors import UsageError
from cudnn_doctor.planner import pins
from tests.unit.planner.test_plan import plan


def _pin(text: str, via: str = "a==1") -> pins.Pin:
    name, _, spec = text.partition("=")
    return pins.Pin(name, SpecifierSet("=" + spec if spec else ""), text, via)


def test_an_exact_pin_clashes_with_a_requirement_that_excludes_it():
    torch = (
        pins.Pin("nvidia-cudnn-cu12", SpecifierSet("==9.10.2.21"), "nvidia-cudnn-cu12==9.10.2.21", "torch==2.9.1"),
    )
    tf_old = (
        pins.Pin(
            "nvidia-cudnn-cu12",
            SpecifierSet("==9.3.0.75"),
            "nvidia-cudnn-cu12==9.3.0.75",
            "tensorflow[and-cuda]==2.19.0",
        ),
    )
    tf_new = (
        pins.Pin(
            "nvidia-cudnn-cu12",
            SpecifierSet("<10.0,>=9.3.0.75"),
            "nvidia-cudnn-cu12<10.0,>=9.3.0.75",
            "tensorflow[and-cuda]==2.21.0",
        ),
    )
    clash = pins.clash(tf_old, torch)
    assert clash is not None and "nvidia-cudnn-cu12==9.3.0.75" in clash and "nvidia-cudnn-cu12==9.10.2.21" in clash
    assert pins.clash(tf_new, torch) is None  # 9.10.2.21 is inside >=9.3.0.75,<10
    assert pins.exact(SpecifierSet("<=0.7.0,>=0.7.0")) == Version("0.7.0")  # JAX's way of pinning
    assert pins.exact(SpecifierSet(">=9.3")) is None


def test_what_a_release_requires_is_followed_through_the_recorded_index():
    """jax[cuda12]==0.7.0 -> jax-cuda12-plugin[with-cuda]==0.7.0 -> its nvidia-* ranges, read from the recorded METADATA."""
    found = {pin.distribution: pin for pin in pins.pins("jax[cuda12]==0.7.0")}
    assert "jax-cuda12-plugin" in found and "nvidia-cudnn-cu12" in found
    assert found["nvidia-cudnn-cu12"].via == "jax[cuda12]==0.7.0 -> jax-cuda12-plugin[with-cuda]"
    assert (
        pins.pins("torch==2.9.1", ("--index-url", "https://download.pytorch.org/whl/cu126")) == ()
    )  # another index's build


def test_two_frameworks_that_pin_different_wheels_are_not_planned_together():
    """torch 2.9.1 (PyPI's CUDA 12.8 wheel) pins nvidia-cublas-cu12==12.8.4.1 and cuDNN 9.10.2.21; tensorflow[and-cuda]
    2.19.0 pins 12.5.3.2 and 9.3.0.75: pip cannot install both, so TensorFlow takes the system-CUDA build."""
    report = plan("torch==2.9.1", "tensorflow==2.19", os="linux")
    chosen = [(f["framework"], f["build"]) for f in report["stack"]["frameworks"]]
    assert chosen == [("torch", "cu128"), ("tensorflow", "system")], chosen
    (and_cuda,) = [r for r in report["rejected"] if r["framework"] == "tensorflow" and r["build"] == "and-cuda"]
    assert (
        "pip cannot install both" in and_cuda["reasons"][0]["text"] and "torch==2.9.1" in and_cuda["reasons"][0]["text"]
    )
    # TensorFlow 2.21's extra takes ranges, but one still excludes torch's NCCL: nvidia-nccl-cu12>=2.27.7 against ==2.27.5
    newer = plan("torch==2.9.1", "tensorflow==2.21", os="linux")["rejected"]
    assert any("nvidia-nccl-cu12<3.0,>=2.27.7" in r["reasons"][0]["text"] for r in newer if r["build"] == "and-cuda")
    # JAX's CUDA 12 plugin asks only for ranges that torch's pins meet: both from pip, in one environment
    together = plan("torch==2.9.1", "jax==0.7.0", os="linux")
    assert [f["build"] for f in together["stack"]["frameworks"]] == ["cu128", "cuda12"]


@pytest.mark.parametrize(
    "framework, version, cuda",
    [
        ("torch", "2.15.0", "13.2"),  # PyPI's aarch64 wheel pins cuda-toolkit==13.2.2 (its METADATA)
        ("torch==2.11.0", "2.11.0", "13.0"),  # the first CUDA build on PyPI for aarch64: cuda-toolkit==13.0.2
    ],
)
def test_aarch64_plans_the_wheels_built_for_it(framework, version, cuda):
    stack = plan(framework, os="linux", gpu="9.0", arch="aarch64")["stack"]
    assert (stack["version"], stack["cuda"]) == (version, cuda), stack


def test_aarch64_refuses_what_has_no_build_there_and_says_why():
    cpu = plan("torch==2.10.0", os="linux", gpu="9.0", arch="aarch64")["rejected"][0]["reasons"][0]["text"]
    assert (
        cpu == "has no GPU build for Linux aarch64 in the recorded package index"
    )  # 2.10's aarch64 wheel pins no CUDA
    tensorflow = plan("tensorflow", os="linux", arch="aarch64")["rejected"][0]["reasons"][0]
    assert tensorflow["text"] == "has no GPU build for Linux aarch64" and "AWS" in tensorflow["source"]
    jetson = plan("torch", os="linux", gpu="Jetson AGX Orin", arch="aarch64")["rejected"][0]["reasons"][0]["text"]
    assert "a Jetson (compute capability 8.7) runs JetPack's own CUDA" in jetson and "pypi.jetson-ai-lab.dev" in jetson
    with pytest.raises(UsageError, match="only Linux is planned on aarch64"):
        plan("torch", os="windows", arch="aarch64")


def test_aarch64_archives_are_nvidias_sbsa_builds():
    assert plan(os="linux", cuda="12.9", arch="aarch64")["stack"]["cudnn_archive"].startswith("cudnn-linux-sbsa-")
    assert plan(os="linux", cuda="12.9")["stack"]["cudnn_archive"].startswith("cudnn-linux-x86_64-")


def test_cupy_is_planned_without_cudnn():
    """CuPy v14 takes CUDA from NVIDIA's wheels through its `ctk` extra (recorded METADATA); v13 loads a system toolkit
    of its major; neither needs cuDNN, so no cuDNN archive is planned."""
    newest = plan("cupy", os="linux")
    assert any('"cupy-cuda13x[ctk]==14.2.0"' in line for line in newest["commands"]), newest["commands"]
    older = plan("cupy==13.6.0", os="linux", cuda="12.8")
    assert older["stack"]["toolkit"] == "12.8.1" and older["stack"]["cudnn_archive"] is None
    assert any('"cupy-cuda12x==13.6.0"' in line for line in older["commands"])
    assert not any("cuDNN" in download["what"] for download in older["downloads"])


def test_toolkits_after_13_2_are_known():
    """13.3 from Table 3 (610.43.02); 13.4, whose own minimum the data lacks, needs at least its predecessor's."""
    assert plan(os="linux", cuda="13.3")["stack"]["min_driver"]["linux"] == "610.43.02"
    stack = plan(os="linux", cuda="13.4")["stack"]
    assert (stack["toolkit"], stack["min_driver"]["linux"]) == ("13.4.2", "610.43.02")
