"""The release a cuDNN front library asks its sub-libraries for, read from its own code.

cuDNN 9's `libcudnn.so.9` opens `libcudnn_graph.so.9.<minor>.<patch>` first, then
`.so.9.<minor>`, then `.so.9` (glibc's LD_DEBUG=libs shows the three tries). The names are
not strings in the file: it formats them with `snprintf(buf, size, "%s.%d.%d.%d", name,
MAJOR, MINOR, PATCH)`, the numbers compiled in as immediates. On x86-64 the System V calling
convention puts MAJOR in r8d, MINOR in r9d and PATCH on the stack, so the instructions around
the one reference to that format string carry the front library's own release, independent of
whichever sub-library a live `cudnnGetVersion()` would reach. Other architectures: not read.
"""

from __future__ import annotations

import re
from typing import Optional

from cudnn_doctor.lazyre import LazyPattern, regex

_LEA_RIP = regex(rb"[\x48\x4c]\x8d[\x05\x0d\x15\x1d\x25\x2d\x35\x3d](....)", re.DOTALL)  # lea reg, [rip + disp32]
_MOV_R8D = regex(rb"\x41\xb8(....)", re.DOTALL)  # mov r8d, imm32: the 5th argument
_MOV_R9D = regex(rb"\x41\xb9(....)", re.DOTALL)  # mov r9d, imm32: the 6th argument
_PUSH = regex(rb"\x6a(.)|\x68(....)", re.DOTALL)  # push imm8 / imm32: the 7th argument, on the stack
_WINDOW = 48  # bytes either side of the lea: the compiler schedules the argument set-up around it


def front_release(path: str, major: int) -> Optional[tuple[int, int, int]]:
    """(major, minor, patch) the front library formats its sub-library names with, or None.

    Kept only when the major it formats is the library's own soname major and the
    three-number and two-number formats agree on the minor: a stray byte pattern cannot pass both.
    """
    sections = _sections(path)
    if sections is None:
        return None
    (rodata_addr, strings), (text_addr, code) = sections
    three = _arguments(code, text_addr, _address(strings, rodata_addr, b"%s.%d.%d.%d\x00"), with_patch=True)
    two = _arguments(code, text_addr, _address(strings, rodata_addr, b"%s.%d.%d\x00"), with_patch=False)
    if three is None or three[0] != major or (two is not None and two[:2] != three[:2]):
        return None
    return three


def _sections(path: str) -> Optional[tuple[tuple[int, bytes], tuple[int, bytes]]]:
    """(address, bytes) of .rodata and of .text of an x86-64 ELF file; None for another machine or without them.
    The struct reader's section headers when it reads the file, else pyelftools'."""
    from cudnn_doctor.binaries import elfheader

    try:
        with open(path, "rb") as handle:
            header = elfheader.read_header(handle)
            if header is None:
                return _sections_with_pyelftools(path)
            if header.machine != "EM_X86_64":
                return None
            found = {
                s.name: s for s in header.sections
            }  # the last of a name, as pyelftools' get_section_by_name finds it
            rodata, text = found.get(".rodata"), found.get(".text")
            if rodata is None or text is None:
                return None
            handle.seek(rodata.offset)
            strings = handle.read(rodata.size)
            handle.seek(text.offset)
            code = handle.read(text.size)
    except (OSError, ValueError):
        return None
    return (rodata.addr, strings), (text.addr, code)


def _sections_with_pyelftools(path: str) -> Optional[tuple[tuple[int, bytes], tuple[int, bytes]]]:
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile

        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            if elf["e_machine"] != "EM_X86_64":
                return None
            rodata, text = elf.get_section_by_name(".rodata"), elf.get_section_by_name(".text")
            if rodata is None or text is None:
                return None
            handle.seek(rodata["sh_offset"])
            strings = handle.read(rodata["sh_size"])
            handle.seek(text["sh_offset"])
            code = handle.read(text["sh_size"])
    except (OSError, ValueError, ELFError):
        return None
    return (rodata["sh_addr"], strings), (text["sh_addr"], code)


def _address(strings: bytes, base: int, literal: bytes) -> Optional[int]:
    at = strings.find(literal)
    while at > 0 and strings[at - 1] != 0:  # a suffix of a longer string is not this format
        at = strings.find(literal, at + 1)
    return base + at if at >= 0 else None


def _arguments(code: bytes, base: int, target: Optional[int], with_patch: bool) -> Optional[tuple[int, int, int]]:
    """The immediates passed beside the first instruction that loads `target`'s address."""
    if target is None:
        return None
    for match in _LEA_RIP.finditer(code):
        if base + match.end() + int.from_bytes(match.group(1), "little", signed=True) != target:
            continue
        start = max(0, match.start() - _WINDOW)
        window = code[start : match.end() + _WINDOW]
        lea = match.start() - start
        major, minor = _nearest(_MOV_R8D, window, lea), _nearest(_MOV_R9D, window, lea)
        patch = _nearest(_PUSH, window, lea) if with_patch else 0
        if major is None or minor is None or patch is None:
            return None
        values = (major, minor, patch)
        return values if all(v < 1000 for v in values) else None
    return None


def _nearest(pattern: LazyPattern[bytes], window: bytes, at: int) -> Optional[int]:
    """The immediate of the matching instruction closest to offset `at`."""
    found = sorted(pattern.finditer(window), key=lambda m: abs(m.start() - at))
    return int.from_bytes(next(g for g in found[0].groups() if g is not None), "little") if found else None
