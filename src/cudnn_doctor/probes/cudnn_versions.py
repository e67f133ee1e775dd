"""A cuDNN installation's version from its own evidence, and how it is known (issue 9, item 4).

In order of trust: the installation's own header; its distribution's metadata (the
nvidia-cudnn-cuXX wheel's dist-info METADATA in the same site-packages, or conda's
conda-meta record of the environment); the full-release names its cuDNN 9 front library asks
for first (`libcudnn_graph.so.9.<minor>.<patch>`); the PE FileVersion or `.so.X.Y.Z` file
name. The live `cudnnGetVersion()` stays the caller's last resort: it is answered by whichever
sub-library the loader picked, so it reads through the very mixing the doctor must detect.
Another installation's header is never borrowed: a wheel without one does not take the system's.
"""

from __future__ import annotations

import re
from typing import Optional

from packaging.version import Version

from cudnn_doctor.facts import ASKED_NAMES, CONDA_META, DIST_INFO, FILE_NAME, FILE_VERSION, HEADER, CudnnLibrary
from cudnn_doctor.kinds import CudnnVersionFrom
from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record
from cudnn_doctor.system.interface import Files
from cudnn_doctor.versions import cuda_in_tag, cuda_of_digits, cudnn_header_version, parse_cudnn_version

LINUX_NAME = regex(r"^libcudnn(?:_([a-z_]+))?\.so\.(\d+)((?:\.\d+)*)$")  # libcudnn_ops.so.9.1.0: part, major, rest
_ASKED = regex(r"^libcudnn_[a-z_]+\.so\.(\d+)\.(\d+)\.(\d+)$")  # libcudnn_graph.so.9.28.1
_DIST_INFO = regex(r"(?i)^nvidia_cudnn_cu(\d+)-([^-]+)\.dist-info$")
_CONDA_RECORD = regex(r"(?i)^cudnn-(\d[^-]*)-([^-]+)\.json$")  # conda-meta/cudnn-9.3.0.75-h93bb076_0.json


class Distribution(Record):
    """The package whose files an installation folder holds, as its own metadata says."""

    name: str  # nvidia-cudnn-cu12 | conda cudnn
    version: str
    cuda_major: Optional[int]
    how: CudnnVersionFrom  # DIST_INFO | CONDA_META


def library_version(system: Files, path: str, binary, major: int) -> tuple[Optional[str], Optional[CudnnVersionFrom]]:
    """The library's own version and how it is known: the full-release names it asks its
    sub-libraries for (a cuDNN 9 front), its PE FileVersion (cuDNN <= 7 carries a CUDA-style one:
    ignored), or its real `.so.X.Y.Z` name."""
    asked = {
        m.groups()
        for m in (_ASKED.match(n) for n in (binary.loads if binary else ()))
        if m and int(m.group(1)) == major
    }
    if len(asked) == 1:
        return ".".join(asked.pop()), ASKED_NAMES
    if binary is not None and binary.version and _of_major(binary.version, major):
        return (
            binary.version,
            FILE_VERSION,
        )  # cuDNN 7's DLLs carry a driver-style FileVersion (6.14.11.x): not a cuDNN version
    if not system.paths.windows:
        real = system.paths.basename(system.realpath(path))
        match = LINUX_NAME.match(real)
        if (
            match and match.group(3) and int(match.group(2)) == major
        ):  # cuDNN 1-3: libcudnn.so.7.0.64 is named after CUDA 7.0
            return f"{match.group(2)}{match.group(3)}", FILE_NAME
    return None, None


def own_header(
    system: Files, folder: str, toolkit: Optional[str], nested: Optional[str], system_dir: bool, major: int
) -> tuple[Optional[str], Optional[str]]:
    """The installation's own header: beside its libraries, in the toolkit it was copied into
    (not for an archive left nested below it), or the system include folders for a system-folder
    install. Never another installation's."""
    rules = system.paths
    parent = rules.dirname(folder)
    if rules.basename(folder).lower() == "x64":
        parent = rules.dirname(parent)
    includes = [rules.join(parent, "include")]
    if rules.basename(rules.dirname(folder)).lower() == "bin":  # standalone cuDNN 9: bin\12.x
        includes.append(rules.join(rules.dirname(parent), "include", rules.basename(folder)))
    if toolkit and not nested:
        includes.append(rules.join(toolkit, "include"))
    if system_dir and not rules.windows:
        includes += ["/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu", "/usr/include"]
    for include in includes:
        for name in (f"cudnn_version_v{major}.h", "cudnn_version.h", f"cudnn_v{major}.h", "cudnn.h"):
            path = rules.join(include, name)
            text = system.read_text(path, limit=64 * 1024)
            if not text:
                continue
            version = cudnn_header_version(text)
            if version is not None and int(version.split(".")[0]) == major:
                return path, version
    return None, None


def distribution(system: Files, folder: str, major: int) -> Optional[Distribution]:
    """The wheel or conda package of this major whose files `folder` holds, when exactly one release is recorded."""
    return _wheel(system, folder, major) or _conda(system, folder, major)


def _wheel(system: Files, folder: str, major: int) -> Optional[Distribution]:
    """The dist-info of nvidia-cudnn-cu11/12/13 in the same site-packages as site-packages/nvidia/cudnn/<lib|bin>."""
    rules = system.paths
    package = rules.dirname(folder)
    if rules.basename(package).lower() != "cudnn" or rules.basename(rules.dirname(package)).lower() != "nvidia":
        return None
    found = set()
    for entry in system.list_dir(rules.dirname(rules.dirname(package)), sizes=False) or []:
        match = _DIST_INFO.match(rules.basename(entry.path))
        if not match or not entry.is_dir:
            continue
        text = system.read_text(rules.join(entry.path, "METADATA"), limit=16 * 1024) or ""
        version = next(
            (line.split(":", 1)[1].strip() for line in text.splitlines() if line.lower().startswith("version:")), None
        )
        cuda = cuda_of_digits(match.group(1))  # nvidia_cudnn_cu12: CUDA 12; nvidia_cudnn_cu116: CUDA 11.6
        if version is not None and _of_major(version, major):
            found.add(
                Distribution(f"nvidia-cudnn-cu{match.group(1)}", version, cuda.release[0] if cuda else None, DIST_INFO)
            )
    return found.pop() if len(found) == 1 else None  # two releases over one folder: the files say which won


def _conda(system: Files, folder: str, major: int) -> Optional[Distribution]:
    """conda's record of the cudnn package in the environment whose lib (Library\\bin) is `folder`."""
    rules = system.paths
    prefix = rules.dirname(folder)
    if rules.windows and rules.basename(prefix).lower() == "library":
        prefix = rules.dirname(prefix)
    found = set()
    for entry in system.list_dir(rules.join(prefix, "conda-meta"), sizes=False) or []:
        match = _CONDA_RECORD.match(rules.basename(entry.path))
        if not match or entry.is_dir:
            continue
        try:
            import json  # only where conda metadata is read

            record = json.loads(system.read_text(entry.path, limit=1 << 20) or "{}")
        except ValueError:
            continue
        version = str(record.get("version") or match.group(1))
        build = str(record.get("build") or match.group(2))
        depends = " ".join(str(d) for d in record.get("depends") or [])
        cuda = cuda_in_tag(build, "conda-build")  # cuda11.3_0, cuda112_0
        if cuda is None:
            floor = re.search(r"cuda-version\s*>=\s*(\d+(?:\.\d+)?)", depends)
            cuda = Version(floor.group(1)) if floor else None
        if _of_major(version, major):
            found.add(Distribution("conda cudnn", version, cuda.release[0] if cuda else None, CONDA_META))
    return found.pop() if len(found) == 1 else None


def _of_major(version: Optional[str], major: int) -> bool:
    parsed = parse_cudnn_version(version) if version else None
    return parsed is not None and parsed.release[0] == major


def install_version(
    libraries: dict[str, CudnnLibrary], header: Optional[str], dist: Optional[Distribution]
) -> tuple[Optional[str], Optional[CudnnVersionFrom]]:
    """The installation's version from its own evidence, most trusted first; the live load is the caller's last
    resort."""
    if header:
        return header, HEADER
    if dist:
        return dist.version, dist.how
    front = libraries.get("")
    if front and front.version:
        return front.version, front.version_source
    versions = {(lib.version, lib.version_source) for lib in libraries.values() if lib.version}
    if len({v for v, _ in versions}) == 1:
        return versions.pop()
    return None, None
