"""What a PE or ELF file's headers say, as values: `BinaryInfo`, the machine names, and the parsers of open files and
first bytes (elfheader, peheader, `head_machine`). Bytes in, facts out; no judgement, no search, no file opened here:
`system.binaries.read_binary(path)` opens a file on the machine and reads it with these.
"""

from __future__ import annotations

from typing import Optional

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


_EM_NAMES = {
    2: "EM_SPARC",
    3: "EM_386",
    8: "EM_MIPS",
    20: "EM_PPC",
    21: "EM_PPC64",
    22: "EM_S390",
    40: "EM_ARM",
    62: "EM_X86_64",
    183: "EM_AARCH64",
    243: "EM_RISCV",
}  # e_machine numbers, as pyelftools names them


def head_machine(head: bytes) -> Optional[tuple[str, Optional[str]]]:
    """(pe | elf, machine as the header names it) from a library's first bytes, None when neither: what the installer
    reads
    of an archive's member as it streams by (pefile for a PE header, the ELF header's e_machine)."""
    try:
        if head[:2] == b"MZ":
            offset = int.from_bytes(head[0x3C:0x40], "little") if len(head) >= 0x40 else -1
            if not 0 <= offset <= len(head) - 24 or head[offset : offset + 4] != b"PE\0\0":
                return (
                    "pe",
                    None,
                )  # a DOS stub only: pefile would refuse it (and its failure path runs gc.collect(), a slow one)
            import pefile

            try:
                machine = pefile.PE(data=head, fast_load=True).FILE_HEADER.Machine
            except pefile.PEFormatError:
                return ("pe", None)
            return ("pe", PE_MACHINES.get(machine, hex(machine)))
        if head[:4] == b"\x7fELF":  # e_machine, read as pyelftools does (without importing it: 0.1 s of a dry run)
            if len(head) < 20 or head[4] not in (1, 2) or head[5] not in (1, 2):
                return ("elf", None)
            number = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
            machine = _EM_NAMES.get(number, str(number))
            return ("elf", ELF_MACHINES.get(machine, machine))
    except Exception:  # a header too odd for the parsers: the format is known, the machine is not
        return ("pe" if head[:2] == b"MZ" else "elf", None)
    return None
