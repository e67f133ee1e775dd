"""The frameworks' builds: TensorFlow's tested configurations, PyTorch's releases and index, ONNX Runtime's and
PaddlePaddle's builds, and which frameworks load the system's CUDA."""

from __future__ import annotations

from typing import Any, Optional

from packaging.version import Version

from cudnn_doctor.knowledge import _lookup, framework_records, records, table
from cudnn_doctor.knowledge.libraries import pip_brings_cuda
from cudnn_doctor.versions import canonical_name as canonicalize_name
from cudnn_doctor.versions import cuda_tag


@_lookup
def tensorflow_build(version: Version, os_name: str) -> Optional[framework_records.TensorflowBuild]:
    """TensorFlow's tested build configuration for a release (matched on major.minor)."""
    for row in table("tensorflow").tested_builds:
        if row.os == os_name and Version(row.version).release[:2] == version.release[:2]:
            return row
    return None


def tensorflow_windows_gpu_last() -> tuple[Version, str]:
    row: framework_records.WindowsGpuLast = table("tensorflow").windows_native_gpu_last
    return Version(row.version), row.source


@_lookup
def torch_release(version: Version) -> Optional[framework_records.TorchRelease]:
    """The row of a PyTorch minor release (matched on major.minor)."""
    for row in table("torch").releases:
        if Version(row.version).release[:2] == version.release[:2]:
            return row
    return None


def torch_index_url(cuda: Version) -> str:
    return table("torch").index_url.template.format(tag=cuda_tag(cuda))


def frameworks() -> tuple[framework_records.Framework, ...]:
    return table("frameworks").frameworks


def framework(name: str) -> framework_records.Framework:
    return next(f for f in frameworks() if f.name == name)


@_lookup
def onnxruntime_build(version: Version, feed: str = "pypi") -> Optional[framework_records.OnnxruntimeBuild]:
    """The onnxruntime-gpu build of a release on one feed, PyPI unless named (the first row whose range holds it)."""
    for row in table("frameworks").onnxruntime_builds:
        if row.feed == feed and version in row.versions:
            return row
    return None


@_lookup
def onnxruntime_builds(version: Version) -> tuple[framework_records.OnnxruntimeBuild, ...]:
    """Every build of a release, one per feed (PyPI first when it has one), so a planner can say where each comes
    from."""
    feeds = dict.fromkeys(row.feed for row in table("frameworks").onnxruntime_builds)
    found = (onnxruntime_build(version, feed) for feed in sorted(feeds, key=lambda f: f != "pypi"))
    return tuple(row for row in found if row is not None)


@_lookup
def paddle_build(tag: str, os_name: str, version: Optional[Version] = None) -> Optional[framework_records.PaddleBuild]:
    """The row of a paddlepaddle-gpu build (`post112`, `pypi`, `cu126`) on one OS for release `version`
    (the same tag was paired with different cuDNN releases over time); without a version, the newest era's row."""
    rows = [row for row in table("frameworks").paddle_builds if row.tag == tag and row.os == os_name]
    if version is None:
        return max(rows, key=_era, default=None)
    return next((row for row in rows if row.versions is None or row.versions.contains(version, prereleases=True)), None)


def _era(row: framework_records.PaddleBuild) -> Version:
    """The oldest release a row's range admits, to rank rows by era."""
    floors = [Version(spec.version) for spec in row.versions or () if spec.operator in (">=", "==", "~=")]
    return max(floors) if floors else Version("0")


def ineffective_variables() -> dict[str, records.IneffectiveVariable]:
    return {row.name: row for row in table("environment").ineffective}


def known_variables() -> frozenset[str]:
    return frozenset(table("environment").known.names)


def reviewed_dates() -> dict[str, str]:
    from cudnn_doctor.knowledge import schema

    return {name: table(name).reviewed for name in schema.TABLES}


def loads_system_cuda(
    framework_name: str, packages: Any, version: Optional[Version] = None, os_name: Optional[str] = None
) -> bool:
    """Whether a framework, given the distributions installed beside it (and, when known, its release
    and OS: Paddle 3.x wheels on Linux bring CUDA from pip), loads CUDA from the system."""
    entry = framework(framework_name)
    if entry.loads_cuda != "system":
        return False
    if version is not None and os_name is not None and pip_brings_cuda(framework_name, version, os_name):
        return False
    bundled = {canonicalize_name(d) for d in entry.bundled_when}
    return not (bundled & set(packages))
