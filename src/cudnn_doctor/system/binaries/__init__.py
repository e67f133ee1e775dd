"""Reading the PE and ELF files of the machine: `read_binary(path)` sniffs the format and returns a `BinaryInfo`; a
file that is empty, truncated or not a binary yields `BinaryInfo(format=None, error=...)`, never an exception
(auditwheel's lddtree crashes on a 0-byte library; this must not). The parsers of the headers are in `binaries`.
"""

from __future__ import annotations

import os
import re
from typing import Optional

from cudnn_doctor.binaries import BinaryInfo
from cudnn_doctor.lazyre import regex


def read_binary(path: str, scan_loads: bool = True) -> BinaryInfo:
    """Parse the file at `path` (PE or ELF) and, optionally, scan it for run-time load names."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as error:
        return BinaryInfo(None, error=f"{type(error).__name__}: {error.strerror or error}")
    if len(magic) < 4:
        return BinaryInfo(None, error="file too short")
    if magic[:2] == b"MZ":
        from cudnn_doctor.system.binaries.pe import read_pe

        info = read_pe(path)
    elif magic == b"\x7fELF":
        from cudnn_doctor.system.binaries.elf import read_elf

        info = read_elf(path)
    else:
        return BinaryInfo(None, error="not a PE or ELF file")
    if scan_loads and info.format is not None:
        from cudnn_doctor.binaries.names import family
        from cudnn_doctor.system.binaries.scan import library_names

        own = {os.path.basename(path).lower(), (info.soname or "").lower()}
        found = _version_like_requester(library_names(path, info.format, list(info.string_ranges) or None), info.soname)
        imported = {
            family(n) for n in info.imports
        }  # libcudart.so.12 beside an imported libcudart.so.13: the import covers it
        names = [
            n for n in found if family(n) not in imported and n.lower() not in own and not _has_versioned_twin(n, found)
        ]
        info = info._replace(loads=tuple(names + _versioned_names(path, info.soname, names)))
    return info


def _versioned_names(path: str, soname: Optional[str], names: list[str]) -> list[str]:
    """The full-release names a cuDNN front library tries before each sub-library's soname
    (`libcudnn_graph.so.9.28.1` before `libcudnn_graph.so.9`), read from its code."""
    match = re.match(r"^libcudnn\.so\.(\d+)$", soname or "")
    if not match:
        return []
    from cudnn_doctor.system.binaries.versioned import front_release

    found = front_release(path, int(match.group(1)))
    if found is None:
        return []
    suffix = f".{found[1]}.{found[2]}"
    return [n + suffix for n in names if _CUDNN_SONAME.match(n) and n != soname]


def _has_versioned_twin(name: str, names: list[str]) -> bool:
    """`libcudnn_ops.so` next to `libcudnn_ops.so.9`: the unversioned name is only a fallback spelling."""
    return name.endswith(".so") and any(other.startswith(name + ".") for other in names)


_CUDNN_SONAME = regex(r"^libcudnn[a-z_]*\.so\.(\d+)$")


def _version_like_requester(names: list[str], soname: Optional[str]) -> list[str]:
    """cuDNN keeps its sub-library names unversioned ("libcudnn_ops.so") and appends its own
    major at run time: give them the requester's major, as the dlopen call will."""
    match = _CUDNN_SONAME.match(soname or "")
    if not match:
        return names
    return sorted({f"{n}.{match.group(1)}" if n.startswith("libcudnn") and n.endswith(".so") else n for n in names})
