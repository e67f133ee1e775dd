"""The few ELF header fields the doctor reads, with `struct`: importing pyelftools costs a hundred times more than
reading them (docs/speed.md).

What `elf.read_elf` and `versioned.front_release` need: the machine, the section headers (name, type,
offset, size, address, link) and the dynamic section's DT_NEEDED, DT_SONAME, DT_RUNPATH and DT_RPATH,
read as pyelftools reads them (strings from the string table the dynamic section links to, decoded
as UTF-8 with replacement; names of sections from the section-name table). Anything unusual (an
unknown machine, an extended section count or index, a string or table running off its section, a
truncated file) is None: the caller then asks pyelftools, whose answer (or error message) stays the
reference; tests/unit/binaries/test_elf_header.py pins the two together on every ELF file the tests download.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Optional

from cudnn_doctor.record import Record

# e_machine values whose pyelftools names binaries.ELF_MACHINES maps (ELF gABI, "Machine Information")
MACHINE_NAMES = {3: "EM_386", 40: "EM_ARM", 62: "EM_X86_64", 183: "EM_AARCH64", 21: "EM_PPC64"}
SHT_STRTAB = 3
SHT_DYNAMIC = 6
DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH = 1, 14, 15, 29
_SHN_LORESERVE = 0xFF00


class Section(Record):
    name: str
    type: int
    addr: int
    offset: int
    size: int
    link: int


class Header(Record):
    machine: str  # pyelftools' name: "EM_X86_64"
    sections: tuple[Section, ...]
    endian: str  # "<" or ">"
    bits: int  # 32 or 64


class Dynamic(Record):
    needed: tuple[str, ...]
    soname: Optional[str]
    runpath: tuple[str, ...]
    rpath: tuple[str, ...]


def read_header(handle: BinaryIO) -> Optional[Header]:
    """The machine and section headers; None for anything pyelftools should read instead."""
    try:
        return _header(handle)
    except (OSError, struct.error, ValueError, IndexError):
        return None


def _header(handle: BinaryIO) -> Optional[Header]:
    handle.seek(0)
    ident = handle.read(64)
    if len(ident) < 52 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return None
    bits, endian = (32 if ident[4] == 1 else 64), ("<" if ident[5] == 1 else ">")
    machine = MACHINE_NAMES.get(struct.unpack_from(endian + "H", ident, 18)[0])
    if machine is None:
        return None
    if bits == 64:  # e_shoff at 40; e_shentsize, e_shnum, e_shstrndx at 58
        (shoff,), (shentsize, shnum, shstrndx) = (
            struct.unpack_from(endian + "Q", ident, 40),
            struct.unpack_from(endian + "HHH", ident, 58),
        )
        entry, size = endian + "IIQQQQII", 64
    else:  # e_shoff at 32; the three at 46
        (shoff,), (shentsize, shnum, shstrndx) = (
            struct.unpack_from(endian + "I", ident, 32),
            struct.unpack_from(endian + "HHH", ident, 46),
        )
        entry, size = endian + "IIIIIIII", 40
    if shoff == 0:
        return Header(machine, (), endian, bits)
    if shentsize != size or shnum == 0 or shnum >= _SHN_LORESERVE or shstrndx == 0 or shstrndx >= shnum:
        return None
    handle.seek(shoff)
    table = handle.read(shnum * size)
    if len(table) < shnum * size:
        return None
    raw = [struct.unpack_from(entry, table, index * size) for index in range(shnum)]
    # (sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info): the same order in both classes
    names = _read(handle, raw[shstrndx][4], raw[shstrndx][5])
    if names is None:
        return None
    sections = []
    for sh_name, sh_type, _flags, addr, offset, sh_size, link, _info in raw:
        name = _string(names, sh_name)
        if name is None:
            return None
        sections.append(Section(name, sh_type, addr, offset, sh_size, link))
    return Header(machine, tuple(sections), endian, bits)


def read_dynamic(handle: BinaryIO, header: Header) -> Optional[Dynamic]:
    """DT_NEEDED (in order), the last DT_SONAME, DT_RUNPATH and DT_RPATH entries (split on ':', empty ones
    dropped) of every dynamic section; None for anything pyelftools should read instead."""
    try:
        return _dynamic(handle, header)
    except (OSError, struct.error, ValueError, IndexError):
        return None


def _dynamic(handle: BinaryIO, header: Header) -> Optional[Dynamic]:
    needed: list[str] = []
    runpath: list[str] = []
    rpath: list[str] = []
    soname: Optional[str] = None
    form, width = (header.endian + "qQ", 16) if header.bits == 64 else (header.endian + "iI", 8)
    for section in header.sections:
        if section.type != SHT_DYNAMIC:
            continue
        if section.link >= len(header.sections) or header.sections[section.link].type != SHT_STRTAB:
            return None
        strings = _read(handle, header.sections[section.link].offset, header.sections[section.link].size)
        entries = _read(handle, section.offset, section.size)
        if strings is None or entries is None:
            return None
        for at in range(0, len(entries) - width + 1, width):
            tag, value = struct.unpack_from(form, entries, at)
            if tag == 0:  # DT_NULL ends the table
                break
            if tag in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH):
                text = _string(strings, value)
                if text is None:
                    return None
                if tag == DT_NEEDED:
                    needed.append(text)
                elif tag == DT_SONAME:
                    soname = text
                elif tag == DT_RUNPATH:
                    runpath += [p for p in text.split(":") if p]
                else:
                    rpath += [p for p in text.split(":") if p]
        else:
            return None  # no DT_NULL inside the section: pyelftools would read on past it
    return Dynamic(tuple(needed), soname, tuple(runpath), tuple(rpath))


def _read(handle: BinaryIO, offset: int, size: int) -> Optional[bytes]:
    handle.seek(offset)
    data = handle.read(size)
    return data if len(data) == size else None


def _string(table: bytes, offset: int) -> Optional[str]:
    """The NUL-terminated string at `offset`, decoded as pyelftools decodes it; None when it runs off the table."""
    end = table.find(b"\0", offset)
    if offset > len(table) or end < 0:
        return None
    return table[offset:end].decode("utf-8", errors="replace")
