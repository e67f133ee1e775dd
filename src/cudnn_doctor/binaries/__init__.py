"""Reading PE and ELF files: bytes in, facts out. No judgement, no search.

`read_binary(path)` sniffs the format and returns a `BinaryInfo`; a file that is empty,
truncated or not a binary yields `BinaryInfo(format=None, error=...)`, never an exception
(auditwheel's lddtree crashes on a 0-byte library; this must not).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class BinaryInfo:
    """What a library's headers say about it."""

    format: Optional[str]  # "pe" | "elf" | None when unreadable or not a binary
    machine: Optional[str] = None  # x64, x86, arm64 (PE); x86_64, aarch64 (ELF)
    imports: tuple[str, ...] = ()  # PE import table (+ delay imports) / ELF DT_NEEDED
    loads: tuple[str, ...] = ()  # names loaded at run time by name (string scan or fixture)
    soname: Optional[str] = None
    runpath: tuple[str, ...] = ()  # DT_RUNPATH
    rpath: tuple[str, ...] = ()  # DT_RPATH (legacy)
    version: Optional[str] = None  # PE FileVersion
    error: Optional[str] = None
    loads_complete: bool = False  # True when `loads` is known to be the whole list (a fixture says so)


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
        from cudnn_doctor.binaries.scan import library_names

        own = {os.path.basename(path).lower(), (info.soname or "").lower()}
        names = [n for n in library_names(path, info.format) if n not in info.imports and n.lower() not in own]
        info = BinaryInfo(**{**info.__dict__, "loads": tuple(names)})
    return info
