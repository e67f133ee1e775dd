"""The libraries of the stack: who provides a file name (toolkit, driver, wheel), the CUDA wheels and where their
libraries lie, and the environment variables the frameworks read."""

from __future__ import annotations

import re
from typing import Optional

from packaging.version import Version

from cudnn_doctor.knowledge import _lookup, framework_records, records, table
from cudnn_doctor.versions import canonical_name as canonicalize_name
from cudnn_doctor.versions import cuda_major_of_dll_number


def library_provider(name: str) -> Optional[records.LibraryProvider]:
    """What provides a library file name: its row, with `{major}` in the provider and fix texts filled in."""

    for row in table("libraries").providers:
        match = re.match(row.pattern, name)
        if match:
            groups = match.groupdict()
            major = groups.get("major") or str(cuda_major_of_dll_number(groups.get("digits") or "") or "")
            return row._replace(provider=row.provider.replace("{major}", major), fix=row.fix.replace("{major}", major))
    return None


def cuda_wheels() -> tuple[records.CudaWheel, ...]:
    return table("cuda_wheels").wheels


@_lookup
def wheels_shipping(name: str, os_name: str) -> tuple[records.CudaWheel, ...]:
    """The nvidia-* wheel rows whose files include the library `name`, one per CUDA major that ships it: every
    environment asks this of the same few names."""

    flags = re.IGNORECASE if os_name == "windows" else 0
    return tuple(
        row for row in cuda_wheels() if re.match(row.windows if os_name == "windows" else row.linux, name, flags)
    )


def wheel_providing(name: str, os_name: str, cuda_major: Optional[int] = None) -> Optional[records.CudaWheel]:
    """The nvidia-* wheel that ships a library file name (`libcublasLt.so.13`, `nvrtc64_120_0.dll`);
    for names every CUDA major shares (`libcudnn.so.9`, `curand64_10.dll`) the row of `cuda_major`
    when given (None when no wheel exists for that CUDA: CUDA 10 had none), else the newest."""
    rows = wheels_shipping(name, os_name)
    if cuda_major is not None:
        rows = tuple(row for row in rows if row.cuda == cuda_major)
    return max(rows, key=lambda row: row.cuda) if rows else None


def wheel_folder(row: records.CudaWheel, os_name: str) -> tuple[str, ...]:
    """The in-wheel folder of a row's files, as parts below site-packages."""
    return tuple((row.windows_folder if os_name == "windows" else row.linux_folder).split("/"))


@_lookup
def wheel_reach(framework_name: str, os_name: str, version: Optional[Version]) -> Optional[records.WheelReach]:
    """How a framework release reaches installed nvidia-* wheels on an OS (the first row whose range holds it)."""
    for row in table("cuda_wheels").reach:
        if row.framework == framework_name and row.os == os_name and (version is None or version in row.versions):
            return row
    return None


def wheel_placeholders() -> dict[str, str]:
    """Deprecated PyPI names that fail to install → the name to install instead."""
    return {canonicalize_name(row.name): row.instead for row in table("cuda_wheels").placeholders}


@_lookup
def pip_brings_cuda(framework_name: str, version: Version, os_name: str) -> Optional[framework_records.PipCuda]:
    """The row saying a release's wheels on `os_name` bring CUDA and cuDNN from pip, or None."""
    return next(
        (
            row
            for row in table("frameworks").pip_cuda
            if row.framework == framework_name
            and row.os == os_name
            and row.versions.contains(version, prereleases=True)
        ),
        None,
    )


@_lookup
def jax_builds(version: Version) -> tuple[framework_records.JaxBuild, ...]:
    """What each pip extra of a JAX release installs (one row per extra)."""
    return tuple(row for row in table("frameworks").jax_builds if row.versions.contains(version, prereleases=True))


@_lookup
def jax_build(version: Version, extra: str) -> Optional[framework_records.JaxBuild]:
    """One extra of a JAX release (`cuda12`, `cuda12-local`; `_` and `-` alike, as pip treats them)."""
    wanted = canonicalize_name(extra)
    return next((row for row in jax_builds(version) if canonicalize_name(row.extra) == wanted), None)


@_lookup
def tensorflow_and_cuda(version: Version) -> Optional[framework_records.TensorflowAndCuda]:
    """The nvidia-* wheels `tensorflow[and-cuda]` installs for a release (None before 2.14, or not yet read)."""
    return next((row for row in table("tensorflow").and_cuda if version in row.versions), None)


# --- release pins for the planner: exact versions that exist, packages and conda lines per era ---


@_lookup
def framework_releases(distribution: str) -> tuple[str, ...]:
    """The releases of a distribution a plan may pin (`onnxruntime-gpu`, `paddlepaddle-gpu`, `jax`), newest first: those
    the package index lists (the recorded `published` source) and those a hand-kept row adds from another index;
    empty when neither lists any."""
    wanted = canonicalize_name(distribution)
    row = next((row for row in table("frameworks").releases if canonicalize_name(row.distribution) == wanted), None)
    found = {*(r.version for r in published(distribution)), *(row.versions if row else ())}
    return tuple(sorted(found, key=Version, reverse=True))


@_lookup
def published(distribution: str) -> tuple[framework_records.PublishedRelease, ...]:
    """The releases of `distribution` the package index listed when its source was recorded, newest first; () when the
    distribution is not recorded."""
    wanted = canonicalize_name(distribution)
    return tuple(row for row in table("published").releases if canonicalize_name(row.distribution) == wanted)


def published_extra(distribution: str, version: str, extra: str) -> Optional[framework_records.PublishedExtra]:
    """What `distribution[extra]==version` requires, per that release's METADATA; None when the release does not provide
    the extra (or its extras were not recorded)."""
    wanted = (canonicalize_name(distribution), canonicalize_name(extra))
    return next(
        (
            row
            for row in _extras_of(version)
            if (canonicalize_name(row.distribution), canonicalize_name(row.extra)) == wanted
        ),
        None,
    )


def extras_recorded(distribution: str, version: str) -> bool:
    """Whether the extras of that release were read (its METADATA is in the source)."""
    wanted = canonicalize_name(distribution)
    return any(canonicalize_name(row.distribution) == wanted for row in _extras_of(version))


@_lookup
def _extras_of(version: str) -> tuple[framework_records.PublishedExtra, ...]:
    return tuple(row for row in table("published").extras if row.version == version)


@_lookup
def tensorflow_package(version: Version) -> Optional[framework_records.TensorflowPackage]:
    """The pip package holding TensorFlow's GPU build for a release (`tensorflow-gpu` before 2.1)."""
    return next((row for row in table("tensorflow").packages if row.versions.contains(version, prereleases=True)), None)


def tensorflow_windows_conda(version: Version) -> Optional[framework_records.TensorflowConda]:
    """The native-Windows guide's conda line for CUDA and cuDNN, for the releases it applies to."""
    row: Optional[framework_records.TensorflowConda] = table("tensorflow").windows_conda
    return row if row is not None and row.versions.contains(version, prereleases=True) else None
