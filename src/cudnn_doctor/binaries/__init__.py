"""Reading PE and ELF files: bytes in, facts out. No judgement, no search.

`read_binary(path)` sniffs the format and returns a `BinaryInfo`; a file that is empty,
truncated or not a binary yields `BinaryInfo(format=None, error=...)`, never an exception
(auditwheel's lddtree crashes on a 0-byte library; this must not).
"""

from __future__ import annotations

import os
import re
from typing import Optional

from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record


class BinaryInfo(Record):
    """What a library's headers say about it."""

    format: Optional[str]  # "pe" | "elf" | None when unreadable or not a binary
    machine: Optional[str] = None  # in the header's own spelling: PE_MACHINES or ELF_MACHINES
    imports: tuple[str, ...] = ()  # PE import table (+ delay imports) / ELF DT_NEEDED
    loads: tuple[str, ...] = ()  # names loaded at run time by name (string scan or fixture)
    soname: Optional[str] = None
    runpath: tuple[str, ...] = ()  # DT_RUNPATH
    rpath: tuple[str, ...] = ()  # DT_RPATH (legacy)
    version: Optional[str] = None  # PE FileVersion
    error: Optional[str] = None
    loads_complete: bool = False  # True when `loads` is known to be the whole list (a fixture says so)
    string_ranges: tuple[tuple[int, int], ...] = ()  # (offset, size) of the sections holding string constants


# A header's machine field, named as each platform names it (the fixture format records these names).
PE_MACHINES = {0x8664: "x64", 0x14C: "x86", 0xAA64: "arm64", 0x1C4: "arm"}  # IMAGE_FILE_MACHINE_*
ELF_MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_386": "x86", "EM_ARM": "arm", "EM_PPC64": "ppc64le"}
_ARCH_OF_PE_MACHINE = {"x64": "x86_64", "arm64": "aarch64"}  # the PE names that differ from the platform's arch


def arch_of_machine(machine: str) -> str:
    """The platform arch (as `System.arch` says it: x86_64, aarch64) a header's machine name runs on."""
    return _ARCH_OF_PE_MACHINE.get(machine, machine)


def machine_of_arch(os_name: str, arch: str) -> str:
    """The machine name the headers of `os_name`'s libraries give the platform arch: x86_64 is x64 in a PE file."""
    if os_name == "windows":
        return next((pe for pe, same in _ARCH_OF_PE_MACHINE.items() if same == arch), arch)
    return arch


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
        from cudnn_doctor.binaries.pe import read_pe

        info = read_pe(path)
    elif magic == b"\x7fELF":
        from cudnn_doctor.binaries.elf import read_elf

        info = read_elf(path)
    else:
        return BinaryInfo(None, error="not a PE or ELF file")
    if scan_loads and info.format is not None:
        from cudnn_doctor.binaries.names import family
        from cudnn_doctor.binaries.scan import library_names

        own = {os.path.basename(path).lower(), (info.soname or "").lower()}
        found = _version_like_requester(library_names(path, info.format, list(info.string_ranges) or None), info.soname)
        imported = {family(n) for n in info.imports}  # libcudart.so.12 beside an imported libcudart.so.13: the import covers it
        names = [n for n in found if family(n) not in imported and n.lower() not in own and not _has_versioned_twin(n, found)]
        info = info._replace(loads=tuple(names + _versioned_names(path, info.soname, names)))
    return info


def _versioned_names(path: str, soname: Optional[str], names: list[str]) -> list[str]:
    """The full-release names a cuDNN front library tries before each sub-library's soname
    (`libcudnn_graph.so.9.28.1` before `libcudnn_graph.so.9`), read from its code."""
    match = re.match(r"^libcudnn\.so\.(\d+)$", soname or "")
    if not match:
        return []
    from cudnn_doctor.binaries.versioned import front_release

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
