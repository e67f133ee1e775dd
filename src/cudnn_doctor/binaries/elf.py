"""ELF files with `pyelftools`: DT_NEEDED, DT_SONAME, DT_RUNPATH, DT_RPATH and the machine."""

from __future__ import annotations

from cudnn_doctor.binaries import ELF_MACHINES, BinaryInfo


def read_elf(path: str) -> BinaryInfo:
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
            strings = [(s["sh_offset"], s["sh_size"]) for s in elf.iter_sections() if s.name in (".rodata", ".dynstr", ".data.rel.ro", ".data")]
            return BinaryInfo("elf", machine, tuple(needed), soname=soname, runpath=tuple(runpath), rpath=tuple(rpath), string_ranges=tuple(strings))
    except (ELFError, OSError, ValueError) as error:
        return BinaryInfo(None, error=f"not a valid ELF file: {error}")
