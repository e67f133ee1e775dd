"""ELF files: DT_NEEDED, DT_SONAME, DT_RUNPATH, DT_RPATH and the machine, read with `struct` (elfheader.py),
or with `pyelftools` (a heavy import: docs/speed.md) for any file that reader leaves to it."""

from __future__ import annotations

from typing import Optional

from cudnn_doctor.binaries import ELF_MACHINES, BinaryInfo

_STRING_SECTIONS = (".rodata", ".dynstr", ".data.rel.ro", ".data")  # where a library keeps names it loads at run time


def read_elf(path: str) -> BinaryInfo:
    return _read_quickly(path) or read_elf_with_pyelftools(path)


def _read_quickly(path: str) -> Optional[BinaryInfo]:
    """What `read_elf_with_pyelftools` says, for every file the struct reader reads to the end; else None."""
    from cudnn_doctor.binaries import elfheader

    try:
        with open(path, "rb") as handle:
            header = elfheader.read_header(handle)
            dynamic = elfheader.read_dynamic(handle, header) if header is not None else None
    except OSError:
        return None
    if header is None or dynamic is None:
        return None
    strings = tuple((s.offset, s.size) for s in header.sections if s.name in _STRING_SECTIONS)
    machine = ELF_MACHINES.get(header.machine, header.machine)
    return BinaryInfo(
        "elf",
        machine,
        dynamic.needed,
        soname=dynamic.soname,
        runpath=dynamic.runpath,
        rpath=dynamic.rpath,
        string_ranges=strings,
    )


def read_elf_with_pyelftools(path: str) -> BinaryInfo:
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            machine = ELF_MACHINES.get(elf["e_machine"], str(elf["e_machine"]))
            needed, runpath, rpath, soname = [], [], [], None
            for section in elf.iter_sections():
                if not isinstance(section, DynamicSection):
                    continue
                for tag in section.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif tag.entry.d_tag == "DT_SONAME":
                        soname = tag.soname
                    elif tag.entry.d_tag == "DT_RUNPATH":
                        runpath += [p for p in tag.runpath.split(":") if p]
                    elif tag.entry.d_tag == "DT_RPATH":
                        rpath += [p for p in tag.rpath.split(":") if p]
            strings = [(s["sh_offset"], s["sh_size"]) for s in elf.iter_sections() if s.name in _STRING_SECTIONS]
            return BinaryInfo(
                "elf",
                machine,
                tuple(needed),
                soname=soname,
                runpath=tuple(runpath),
                rpath=tuple(rpath),
                string_ranges=tuple(strings),
            )
    except (ELFError, OSError, ValueError) as error:
        return BinaryInfo(None, error=f"not a valid ELF file: {error}")
