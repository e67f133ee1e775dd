"""The planner's release pins (issue 11 gaps): exact patch releases, conda lines, the TensorFlow
package per era and the release lists of onnxruntime-gpu, paddlepaddle-gpu and jax. Each check
cites the row it reads (pip index versions, pytorch.org previous-versions, tensorflow.org)."""

from __future__ import annotations

import copy

import pytest
from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.errors import KnowledgeError
from cudnn_doctor.knowledge import files, generate, schema


def _shipped(name: str) -> dict:
    path = generate.DATA / f"{name}.yaml"
    return files.parse_yaml(path.read_text(encoding="utf-8"), path.name)


# --- torch: patch pins and conda lines ----------------------------------------------------------


@pytest.mark.parametrize(
    ("minor", "patch"),
    [
        ("1.12", "1.12.1"),
        ("1.10", "1.10.2"),
        ("2.1", "2.1.2"),
        ("2.2", "2.2.2"),
        ("2.8", "2.8.0"),
        ("2.14", "2.14.1"),
        ("2.15", "2.15.0"),
    ],
)
def test_torch_patch_is_the_newest_pypi_release_of_the_minor(minor, patch):
    # pip index versions torch: … 2.14.1, 2.14.0, … 2.2.2, 2.2.1, 2.2.0, 2.1.2, … 1.12.1, 1.12.0, … 1.10.2
    assert knowledge.torch_release(Version(minor)).patch == patch


def test_every_torch_release_row_has_a_patch_of_its_own_minor():
    for row in knowledge.table("torch").releases:
        assert row.patch is not None and Version(row.patch).release[:2] == Version(row.version).release[:2]


def test_torch_2_x_conda_line_is_the_pytorch_cuda_form_for_the_listed_cuda_only():
    row = knowledge.torch_release(Version("2.1"))
    # previous-versions #v212: "conda install pytorch==2.1.2 … pytorch-cuda=12.1 -c pytorch -c nvidia"
    assert row.conda_command("12.1") == "conda install pytorch==2.1.2 pytorch-cuda=12.1 -c pytorch -c nvidia"
    assert row.conda_command("12.4") is None  # 2.1 has conda lines for CUDA 11.8 and 12.1 only
    assert (
        knowledge.torch_release(Version("2.5"))
        .conda_command("12.4")
        .startswith("conda install pytorch==2.5.1 pytorch-cuda=12.4")
    )


def test_torch_1_12_conda_line_adds_conda_forge_for_cuda_11_6_only():
    row = knowledge.torch_release(Version("1.12"))
    # "cudatoolkit=11.6 -c pytorch -c conda-forge" but "cudatoolkit=11.3 -c pytorch"
    assert row.conda_command("11.6") == "conda install pytorch==1.12.1 cudatoolkit=11.6 -c pytorch -c conda-forge"
    assert row.conda_command("11.3") == "conda install pytorch==1.12.1 cudatoolkit=11.3 -c pytorch"


def test_torch_1_9_conda_offers_cuda_11_3_where_the_wheels_have_11_1():
    row = knowledge.torch_release(Version("1.9"))
    assert "11.1" in row.cuda and row.conda_command("11.1") is None  # wheels: +cu111; conda: cudatoolkit=11.3
    assert row.conda_command("11.3") == "conda install pytorch==1.9.1 cudatoolkit=11.3 -c pytorch -c conda-forge"


def test_torch_2_6_and_later_have_no_conda_line():
    # previous-versions #v260: Wheel only (conda dropped after 2.5)
    for minor in ("2.6", "2.9", "2.15"):
        row = knowledge.torch_release(Version(minor))
        assert row.conda is None and row.conda_command("12.6") is None


def test_torch_2_15_pypi_wheel_is_cuda_13_2_with_cudnn_9_26_and_its_variants_stay_unknown():
    row = knowledge.torch_release(Version("2.15"))
    # METADATA of torch-2.15.0-cp312 manylinux_2_28: cuda-toolkit[…]==13.2.2; nvidia-cudnn-cu13==9.26.0.51
    assert (row.pypi_cuda, row.pypi_cudnn, row.cuda) == ("13.2", "9.26.0.51", ())


def test_a_torch_patch_of_another_minor_is_rejected():
    document = _shipped("torch")
    document["releases"][0]["patch"] = "2.14.1"  # on the 2.15 row
    with pytest.raises(KnowledgeError, match=r"torch 2\.15: patch 2\.14\.1 is not a 2\.15 release"):
        schema.build("torch", document, "torch.yaml")


def test_a_torch_conda_line_without_a_cuda_placeholder_is_rejected():
    document = _shipped("torch")
    row = next(row for row in document["releases"] if row["version"] == "2.1")
    row["conda"] = "conda install pytorch==2.1.2 pytorch-cuda=12.1 -c pytorch -c nvidia"
    with pytest.raises(KnowledgeError, match=r"torch 2\.1: conda needs a \{cuda\} placeholder"):
        schema.build("torch", document, "torch.yaml")


# --- tensorflow: patch per tested build, package per era, Windows conda line ---------------------


@pytest.mark.parametrize(
    ("minor", "os_name", "patch"),
    [
        ("1.15", "linux", "1.15.5"),
        ("2.0", "linux", "2.0.4"),
        ("2.10", "windows", "2.10.1"),
        ("2.15", "linux", "2.15.1"),
        ("2.21", "linux", "2.21.0"),
    ],
)
def test_tensorflow_patch_is_the_newest_pypi_release_of_the_minor(minor, os_name, patch):
    # pip index versions tensorflow(-gpu): 2.21.0, …, 2.15.1, 2.15.0.post1, …, 2.10.1, …, 2.0.4, …, 1.15.5
    assert knowledge.tensorflow_build(Version(minor), os_name).patch == patch


def test_tensorflow_1_10_patch_differs_between_linux_and_windows():
    # tensorflow-gpu 1.10.1 has Linux wheels only; the Windows list stops at 1.10.0
    assert knowledge.tensorflow_build(Version("1.10"), "linux").patch == "1.10.1"
    assert knowledge.tensorflow_build(Version("1.10"), "windows").patch == "1.10.0"


def test_tensorflow_gpu_package_up_to_2_0_and_tensorflow_from_2_1():
    # tensorflow.org/install/gpu: "pip install tensorflow-gpu==1.15 # GPU"; RELEASE.md 2.1.0: GPU support by default
    assert knowledge.tensorflow_package(Version("1.15.5")).name == "tensorflow-gpu"
    assert knowledge.tensorflow_package(Version("2.0.4")).name == "tensorflow-gpu"
    assert knowledge.tensorflow_package(Version("2.1.0")).name == "tensorflow"
    assert knowledge.tensorflow_package(Version("2.21.0")).name == "tensorflow"


def test_tensorflow_windows_conda_line_is_for_2_10_and_older():
    # tensorflow.org/install/pip Windows Native: conda line, then pip install "tensorflow<2.11"
    assert (
        knowledge.tensorflow_windows_conda(Version("2.10.1")).command
        == "conda install -c conda-forge cudatoolkit=11.2 cudnn=8.1.0"
    )
    assert knowledge.tensorflow_windows_conda(Version("2.11.0")) is None


def test_a_tensorflow_patch_of_another_minor_is_rejected():
    document = _shipped("tensorflow")
    document["tested_builds"][0]["patch"] = "2.9.3"  # on the 2.10.0 windows row
    with pytest.raises(KnowledgeError, match=r"tensorflow \(windows\) 2\.10\.0: patch 2\.9\.3"):
        schema.build("tensorflow", document, "tensorflow.yaml")


# --- frameworks: release lists ------------------------------------------------------------------


def test_onnxruntime_gpu_releases_hold_the_ones_the_builds_name():
    releases = knowledge.framework_releases("onnxruntime-gpu")
    assert {"1.18.1", "1.19.0", "1.17.1", "1.31.1"} <= set(releases)
    assert "1.19.1" not in releases  # pip index versions: … 1.19.2, 1.19.0, 1.18.1 …
    assert releases[0] == "1.31.1" and releases[-1] == "1.11.0"


def test_release_lists_are_newest_first_and_the_name_is_normalised():
    assert knowledge.framework_releases("JAX") == knowledge.framework_releases("jax")
    for name in ("onnxruntime-gpu", "paddlepaddle-gpu", "jax", "tensorflow", "torch", "cupy-cuda12x"):
        releases = knowledge.framework_releases(name)
        assert list(releases) == sorted(releases, key=Version, reverse=True)


def test_jax_releases_are_the_index_s_and_skip_the_versions_pypi_lacks():
    releases = knowledge.framework_releases("jax")
    assert "0.4.0" not in releases and "0.4.32" not in releases  # never on PyPI
    assert {"0.4.1", "0.4.30", "0.4.31", "0.9.0.1", "0.10.2", "0.12.1"} <= set(releases)


def test_paddle_releases_hold_every_version_a_paddle_build_row_names():
    releases = set(knowledge.framework_releases("paddlepaddle-gpu"))
    assert {"2.6.2", "2.1.3", "3.0.0b0", "3.0.0b2", "3.2.0"} <= releases
    for row in knowledge.table("frameworks").paddle_builds:
        if row.versions is not None:
            assert any(row.versions.contains(Version(v), prereleases=True) for v in releases), row


def test_an_unsorted_release_list_is_rejected():
    document = _shipped("frameworks")
    row = next(row for row in document["releases"] if row["distribution"] == "paddlepaddle-gpu")
    row["versions"] = list(reversed(row["versions"]))
    with pytest.raises(KnowledgeError, match=r"releases \(paddlepaddle-gpu\): versions must be newest first"):
        schema.build("frameworks", copy.deepcopy(document), "frameworks.yaml")


# --- torch: the PyPI wheel's CUDA and cuDNN pins (per-variant cuDNN where the matrix gives only a major) --


@pytest.mark.parametrize(
    ("minor", "cuda", "cudnn"),
    [
        ("2.1", "12.1", "8.9.2.26"),
        ("2.3", "12.1", "8.9.2.26"),
        ("2.4", "12.1", "9.1.0.70"),
        ("2.7", "12.6", "9.5.1.17"),
        ("2.11", "13.0", "9.19.0.56"),
    ],
)
def test_torch_pypi_wheel_pins(minor, cuda, cudnn):
    # METADATA of the newest patch's Linux wheel: nvidia-cuda-runtime-cu12==12.1.105 / cuda-toolkit[…]==13.0.2 and nvidia-cudnn-cu1X
    row = knowledge.torch_release(Version(minor))
    assert (row.pypi_cuda, row.pypi_cudnn) == (cuda, cudnn)


def test_torch_cu121_wheel_moves_from_cudnn_8_to_9_at_2_4():
    assert Version(knowledge.torch_release(Version("2.3")).pypi_cudnn).major == 8
    assert Version(knowledge.torch_release(Version("2.4")).pypi_cudnn).major == 9
