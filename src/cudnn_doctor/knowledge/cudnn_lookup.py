"""cuDNN: releases, file names, the support matrix per CUDA, and NVIDIA's archive names."""

from __future__ import annotations

import re
from typing import Optional

from packaging.version import Version

from cudnn_doctor.knowledge import _lookup, _parsed, records, table
from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record


def legacy_cudnn_name(name: str, os_name: str) -> Optional[records.LegacyCudnnName]:
    """The row of a cuDNN 1-3 library name (cudnn64_70.dll, libcudnn.so.7.0), or None."""
    return next(
        (row for row in table("cudnn").legacy_names if row.os == os_name and row.name.lower() == name.lower()), None
    )


def cudnn_release(major: int) -> Optional[records.CudnnRelease]:
    return next((row for row in table("cudnn").releases if row.major == major), None)


def cudnn_file_name(part: str, major: int, os_name: str) -> str:
    """cudnn64_8.dll / cudnn_ops_infer64_8.dll on Windows, libcudnn.so.8 / libcudnn_ops_infer.so.8 on Linux."""
    if os_name == "windows":
        return f"cudnn_{part}64_{major}.dll" if part else f"cudnn64_{major}.dll"
    return f"libcudnn_{part}.so.{major}" if part else f"libcudnn.so.{major}"


def zlibwapi_required(cudnn_version: Version) -> bool:
    return cudnn_version in table("cudnn").zlibwapi.versions


def cudnn_support_rows() -> tuple[records.CudnnSupport, ...]:
    return table("cudnn").support


def _serves(row: records.CudnnSupport, cuda: Version) -> bool:
    """The build serves that toolkit release (X.Y), or for a bare major ("12") is a build of that major."""
    if len(cuda.release) == 1:
        return row.cuda.split(".")[0] == str(cuda.major)
    return row.toolkits.contains(cuda, prereleases=True)


@_lookup
def cudnn_releases_for(cuda: Version, os_name: str) -> tuple[tuple[str, records.CudnnSupport], ...]:
    """Every released full cuDNN version whose build serves CUDA `cuda` (X.Y, or a bare major) on `os_name`
    ("wsl" is Linux), newest first, each with the first support row that says so."""
    os_name = "linux" if os_name == "wsl" else os_name
    found: dict[str, records.CudnnSupport] = {}
    for row in table("cudnn").support:
        if os_name in row.os and _serves(row, cuda):
            for full in row.full_versions:
                found.setdefault(full, row)
    return tuple(sorted(found.items(), key=lambda item: _parsed(item[0]), reverse=True))


def _first_release(row: records.CudnnSupport) -> Version:
    return min(Version(s.version) for s in row.versions if s.operator in (">=", "==", "~="))


@_lookup
def cudnn_min_compute_capability(row: records.CudnnSupport) -> Optional[tuple[str, str]]:
    """The lowest compute capability a build runs on, with the row that says so: its own, else the highest floor of
    an older release's build for the same CUDA major (NVIDIA raises a floor, never lowers it: Kepler went at 8.8)."""
    if row.cc_min is not None:
        return row.cc_min, row.source
    major, first = Version(row.cuda).major, _first_release(row)
    older = [
        (r.cc_min, r.source)
        for r in table("cudnn").support
        if r.cc_min is not None and Version(r.cuda).major == major and _first_release(r) < first
    ]
    return max(older, key=lambda floor: Version(floor[0]), default=None)


@_lookup
def cudnn_series_known(wanted: str) -> bool:
    """Some release of cuDNN `wanted` ("8.1", "7") is in the support matrix: for an older one the data says nothing."""
    prefix = Version(wanted).release
    return any(
        Version(full).release[: len(prefix)] == prefix for row in table("cudnn").support for full in row.full_versions
    )


class ArchiveName(Record):
    """What NVIDIA's file name of a cuDNN archive says."""

    version: str  # the full cuDNN version
    cuda_major: int
    cuda: Optional[str]  # major.minor where the name has one
    os: str
    arch: str


_PLACEHOLDERS = {
    "version": r"(?P<version>\d+(?:\.\d+)+)",
    "cuda": r"(?P<cuda>\d+\.\d+)",
    "cuda_major": r"(?P<cuda_major>\d+)",
    "arch": r"(?P<arch>[a-z0-9_]+)",
}
_EXTENSION = regex(r"\.(?:tar\.xz|tar\.gz|tgz|zip)$")


@_lookup
def _archive_patterns() -> tuple[tuple[re.Pattern[str], records.CudnnArchive], ...]:
    """Each `archives` pattern as a regex that finds the name in a path, with or without its extension and
    with a browser's " (1)" before it."""
    compiled = []
    for row in table("cudnn").archives:
        extension = _EXTENSION.search(row.pattern)
        body = row.pattern[: extension.start()] if extension else row.pattern
        parts = re.split(r"{(\w+)}", body)
        name_regex = "".join(_PLACEHOLDERS[part] if i % 2 else re.escape(part) for i, part in enumerate(parts))
        tail = rf"(?: ?\(\d+\))?(?:{re.escape(extension.group())})?$" if extension else "$"
        compiled.append((re.compile(rf"(?:^|[\\/]){name_regex}{tail}", re.IGNORECASE), row))
    return tuple(compiled)


def parse_cudnn_archive_name(name: str) -> Optional[ArchiveName]:
    """The cuDNN version, CUDA and platform NVIDIA's archive name (or its top folder's name) says, None for another
    name."""
    for pattern, row in _archive_patterns():
        found = pattern.search(name)
        if found is None:
            continue
        fields = found.groupdict()
        cuda = fields.get("cuda")
        major = int(fields.get("cuda_major") or Version(cuda or "0").major)
        return ArchiveName(fields["version"], major, cuda, row.os, (fields.get("arch") or "x86_64").lower())
    return None


@_lookup
def cudnn_archive_name(full_version: str, cuda: Version, os_name: str, arch: str = "x86_64") -> Optional[str]:
    """NVIDIA's file name of cuDNN `full_version` built for `cuda` ("cudnn-11.2-windows-x64-v8.1.1.33.zip"), None
    when the data has no such build."""
    os_name = "linux" if os_name == "wsl" else os_name
    era = next(
        (
            row
            for row in table("cudnn").archives
            if row.os == os_name and row.versions.contains(full_version, prereleases=True)
        ),
        None,
    )
    if era is None:
        return None
    build = next(
        (
            row
            for row in table("cudnn").support
            if full_version in row.full_versions and os_name in row.os and _serves(row, cuda)
        ),
        None,
    )
    if build is None and "{cuda}" in era.pattern:
        return None
    named = build.cuda if build is not None else str(cuda.major)
    if "{cuda}" in era.pattern and "." not in named:
        return None
    return era.pattern.format(version=full_version, cuda=named, cuda_major=Version(named).major, arch=arch)
