"""CUDA build tags (issue 29, class 3): +cu121, .post112, +cuda111, cupy-cuda12x, nvidia-cublas-cu117, 64_112
are CUDA 12.1 / 11.2 / 11.1 / 12 / 11.7 / 11.2, never a number like 112; one table of shapes in `versions`,
read by every probe that meets a tag."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from cudnn_doctor.facts import PythonEnv, WheelRequirement
from cudnn_doctor.probes import builds
from cudnn_doctor.probes.cudnn import _cuda_in_path
from cudnn_doctor.probes.wheel_files import requirement_majors
from cudnn_doctor.versions import (
    CUDA_TAG_SHAPES,
    cuda_in_tag,
    cuda_major_of_dll_number,
    cuda_of_digits,
    cuda_tag,
    cuda_text,
    parse_cuda_version,
)

# (text, shape, CUDA it names: "X.Y", a major alone "X", or None)
TABLE = [
    # PyTorch's local version (and torchvision's)
    ("2.1.0+cu121", "torch-local", "12.1"),
    ("2.0.1+cu118", "torch-local", "11.8"),
    ("1.7.1+cu110", "torch-local", "11.0"),
    ("1.8.1+cu101", "torch-local", "10.1"),
    ("1.4.0+cu100", "torch-local", "10.0"),
    ("1.4.0+cu92", "torch-local", "9.2"),
    ("1.0.0+cu80", "torch-local", "8.0"),
    ("2.9.0+cu130", "torch-local", "13.0"),
    ("2.1.0+cu1180", "torch-local", None),  # garbage: no CUDA is written with four digits
    ("2.1.0+cpu", "torch-local", None),
    ("2.1.0+rocm6.0", "torch-local", None),
    ("2.1.0", "torch-local", None),
    ("2.1.0+cu20", "torch-local", None),  # no CUDA 2.0 build exists
    ("2.1.0+cu5", "torch-local", None),
    ("2.1.0+cu012", "torch-local", None),
    # PaddlePaddle's release suffix
    ("2.2.0.post112", "paddle-post", "11.2"),
    ("2.3.2.post101", "paddle-post", "10.1"),
    ("2.6.1.post120", "paddle-post", "12.0"),
    ("2.5.2.post1", "paddle-post", None),  # a plain post release, no CUDA
    ("2.2.0", "paddle-post", None),
    # jaxlib's local version: a major (cuda12) or, before 0.1.70, major and minor (cuda111)
    ("0.4.23+cuda12.cudnn89", "jaxlib-local", "12"),
    ("0.3.25+cuda11.cudnn82", "jaxlib-local", "11"),
    ("0.1.69+cuda111", "jaxlib-local", "11.1"),
    ("0.1.57+cuda102", "jaxlib-local", "10.2"),
    ("0.4.23", "jaxlib-local", None),
    # JAX's plugins
    ("jax-cuda12-plugin", "jax-plugin", "12"),
    ("jax-cuda13-pjrt", "jax-plugin", "13"),
    ("jax-cuda-plugin", "jax-plugin", None),
    # CuPy's wheels
    ("cupy-cuda12x", "cupy-wheel", "12"),
    ("cupy-cuda11x", "cupy-wheel", "11"),
    ("cupy-cuda113", "cupy-wheel", "11.3"),
    ("cupy-cuda102", "cupy-wheel", "10.2"),
    ("cupy-cuda92", "cupy-wheel", "9.2"),
    ("cupy-cuda80", "cupy-wheel", "8.0"),
    ("cupy-cuda1180", "cupy-wheel", None),
    ("cupy-rocm-5-0", "cupy-wheel", None),
    # NVIDIA's pip wheels
    ("nvidia-cudnn-cu12", "nvidia-wheel", "12"),
    ("nvidia-cublas-cu11", "nvidia-wheel", "11"),
    ("nvidia-cuda-runtime-cu117", "nvidia-wheel", "11.7"),
    ("nvidia-cudnn-cu116", "nvidia-wheel", "11.6"),
    ("nvidia-cudnn", "nvidia-wheel", None),
    # pip indexes and the planner's build names
    ("https://download.pytorch.org/whl/cu121", "index", "12.1"),
    ("https://download.pytorch.org/whl/cu118/", "index", "11.8"),
    ("cu126", "index", "12.6"),
    ("https://download.pytorch.org/whl/cpu", "index", None),
    # TensorFlow's Windows build_info
    ("64_112", "tf-windows", "11.2"),
    ("64_110", "tf-windows", "11.0"),
    ("64_101", "tf-windows", "10.1"),
    ("64_100", "tf-windows", "10.0"),
    ("64_90", "tf-windows", "9.0"),
    ("64_80", "tf-windows", "8.0"),
    ("64_1180", "tf-windows", None),
    # conda build strings
    ("cuda10.2_0", "conda-build", "10.2"),
    ("cuda11.3_0", "conda-build", "11.3"),
    ("cuda112_0", "conda-build", "11.2"),
    ("h3d4d5c9_cuda11_0", "conda-build", "11"),
    ("h93bb076_0", "conda-build", None),
    # a tag alone
    ("112", "bare", "11.2"),
    ("12", "bare", "12"),
    ("12x", "bare", "12"),
    ("1180", "bare", None),
]


def _expected(text):
    return None if text is None else Version(text)


@pytest.mark.parametrize("text, shape, cuda", TABLE, ids=[f"{s}:{t}" for t, s, _ in TABLE])
def test_every_shape_names_its_cuda(text, shape, cuda):
    assert cuda_in_tag(text, shape) == _expected(cuda)
    if cuda is not None:
        assert cuda_text(cuda_in_tag(text, shape)) == cuda  # a major alone stays a major alone: "12", never "12.0"


def test_every_shape_of_the_table_is_tested_and_documented():
    assert {shape for _, shape, _ in TABLE} == set(CUDA_TAG_SHAPES)
    for name, shape in CUDA_TAG_SHAPES.items():
        assert shape.where and "(?P<digits>" in shape.pattern, name


@pytest.mark.parametrize("digits", [str(n) for n in range(0, 2000)] + ["12x", "11x", "9x", "20x", "1x"])
def test_a_tag_never_yields_a_number_like_112(digits):
    """Every digit string any shape can carry: a major from 7 to 19 and a minor below 10, or nothing."""
    x = digits.endswith("x")
    version = cuda_of_digits(digits.rstrip("x"), major_only=x)
    if version is None:
        return
    assert 7 <= version.release[0] <= 19
    assert len(version.release) <= 2
    assert len(version.release) == 1 or version.release[1] <= 9
    if len(version.release) == 2:
        assert cuda_tag(version) == digits  # and the planner writes the same digits back
    for shape in CUDA_TAG_SHAPES:  # no shape reads the digits differently from the table
        pattern = CUDA_TAG_SHAPES[shape].pattern
        assert "(?P<digits>" in pattern


@pytest.mark.parametrize(
    "cuda, tag",
    [
        ("12.1", "121"),
        ("11.8", "118"),
        ("11.2", "112"),
        ("10.0", "100"),
        ("10.1", "101"),
        ("9.2", "92"),
        ("8.0", "80"),
        ("13.0", "130"),
    ],
)
def test_cuda_tag_writes_what_the_table_reads(cuda, tag):
    assert cuda_tag(cuda) == tag
    assert cuda_of_digits(tag) == Version(cuda)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("64_112", "11.2"),
        ("112", "11.2"),
        ("118", "11.8"),
        ("80", "8.0"),
        ("12", "12"),
        ("12040", "12.4"),
        ("11.2", "11.2"),
        ("64_1180", None),
    ],
)
def test_parse_cuda_version_reads_a_bare_tag_as_a_tag(value, expected):
    assert parse_cuda_version(value) == _expected(expected)


@pytest.mark.parametrize(
    "number, major",
    [("12", 12), ("11", 11), ("110", 11), ("101", 10), ("100", 10), ("80", 8), ("90", 9), ("1180", None), ("x", None)],
)
def test_a_dll_number_is_read_by_the_same_table(number, major):
    assert cuda_major_of_dll_number(number) == major


# --- the probes that meet tags -------------------------------------------------------------------


def _python(packages):
    return PythonEnv(
        executable="/env/bin/python", version="3.11.8", kind="venv", current=True, packages=packages, frameworks={}
    )


def _build(name, packages):
    return next(b for b in builds.probe_builds((_python(packages),), "linux") if b.name == name)


def test_old_jaxlib_tag_with_a_minor_is_cuda_11_1_not_111():
    build = _build("jax", {"jax": "0.2.17", "jaxlib": "0.1.69+cuda111"})
    assert build.cuda is not None and build.cuda.value == "11.1"
    assert build.cuda_version == Version("11.1")


def test_jaxlib_tag_with_a_major_keeps_its_cudnn():
    build = _build("jax", {"jax": "0.4.23", "jaxlib": "0.4.23+cuda12.cudnn89"})
    assert (build.cuda.value, build.cudnn.value) == ("12", "8.9")


def test_a_garbage_torch_tag_is_no_cuda():
    build = _build("torch", {"torch": "2.1.0+cu1180"})
    assert build.cuda is None or build.cuda_version.release[0] < 20  # never CUDA 118.0


def test_cupy_wheels_read_by_the_table():
    assert _build("cupy", {"cupy-cuda12x": "13.3.0"}).cuda.value == "12"
    assert _build("cupy", {"cupy-cuda113": "10.6.0"}).cuda.value == "11.3"


def test_paddle_post_tag_still_finds_its_row():
    build = _build("paddle", {"paddlepaddle-gpu": "2.2.0.post112"})
    assert build.cuda.value == "11.2"


def test_an_nvidia_wheel_named_with_major_and_minor_is_that_major():
    requirement = WheelRequirement(name="nvidia-cuda-runtime-cu117", specifier="==11.7.99")
    cuda, _ = requirement_majors([requirement], "METADATA", "torch 1.13.1")
    assert cuda is not None and cuda.value == "11"


@pytest.mark.parametrize(
    "folder, major",
    [
        ("/opt/cudnn/cu118/lib", 11),
        ("/opt/cudnn/cu12/lib", 12),
        ("/x/nvidia/cudnn-cu12/lib", 12),
        ("C:\\cudnn\\bin\\12.x", 12),
        ("/opt/cudnn/cu1180/lib", None),
    ],
)
def test_a_cuda_in_a_folder_name_is_read_by_the_table(folder, major):
    assert _cuda_in_path(folder)[0] == major


def test_no_probe_splits_cuda_digits_itself():
    """The old per-probe patterns (`\\+cu(\\d+)(\\d)$`, `post(\\d+)(\\d)`, `cuda(\\d+?)(x|\\d)`, `-cu(\\d+)$`) are gone:
    a new tag shape is a row of CUDA_TAG_SHAPES."""
    import pathlib

    import cudnn_doctor

    root = pathlib.Path(cudnn_doctor.__file__).parent
    for path in (
        root / "probes" / "builds.py",
        root / "probes" / "wheel_files.py",
        root / "probes" / "cudnn_versions.py",
        root / "planner" / "candidates.py",
    ):
        text = path.read_text(encoding="utf-8")
        for old in (r"\+cu(\d+)(\d)", r"post(\d+)(\d)", r"cuda(\d+?)(x|\d)", r'"-cu(\d+)$"', 'replace(".", "")'):
            assert old not in text, (path.name, old)
    assert re.search(r"CUDA_TAG_SHAPES", (root / "versions.py").read_text(encoding="utf-8"))
