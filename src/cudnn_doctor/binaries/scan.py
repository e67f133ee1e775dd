"""Names of libraries a binary loads at run time, found as strings inside it.

cuDNN opens its sub-libraries, cuBLAS (on Windows), zlibwapi.dll and libnvrtc.so with
LoadLibrary / dlopen by name, so the import table does not show them. The file is
memory-mapped (a 600 MB library is never read into memory) and searched for the literal
suffix (".so" / ".dll"), which the regex engine finds with a fast substring search
(about 1.7 GB/s here); each hit is then widened backwards into a name and kept only if it
belongs to a library family that matters to the GPU stack.

A name counts only when it is a whole string: it starts where a printable run starts (after a
NUL or other non-printable byte) and ends at one, so `olibcuda.so.1` or `…_Blibcuda.so.1`
(packed literals and build flags glued to a name) and names quoted inside messages do not. One
exception: a message that *ends* with the name after a space, since the linker may share a
string literal with the tail of a longer one. Names the library completes at run time
(`libnvrtc.so.%d`, `libnvrtc.so.`, `cudnn64_%d.dll`) are kept as they are spelt: `names.py`
says what they stand for.
"""

from __future__ import annotations

import mmap
import re
from typing import Optional

_FAMILIES = ("cudnn", "cublas", "cudart", "nvrtc", "zlibwapi", "nvcuda", "cufft", "curand", "cusolver", "cusparse", "nvjitlink")
_STARTS = {"pe": _FAMILIES, "elf": (*(f"lib{family}" for family in _FAMILIES), "libcuda.so", "libz.so")}
_NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+%")
_SUFFIXES = {"pe": (rb"\.dll", rb"\.DLL"), "elf": (rb"\.so",)}
_VERSION_PART = rb"(?:[0-9]+|%[0-9]*[dui])+"
_TAIL = {"pe": re.compile(rb"^\.(?:dll|DLL)"), "elf": re.compile(rb"^\.so(?:\." + _VERSION_PART + rb")*\.?")}


def _printable(byte: int) -> bool:
    return 0x20 <= byte < 0x7F


def library_names(path: str, binary_format: str, ranges: Optional[list[tuple[int, int]]] = None) -> list[str]:
    """Library names of the GPU-stack families that appear as strings in the file.

    `ranges` (offset, size) limits the scan to the read-only data sections where string
    constants live; NVIDIA's largest libraries are mostly GPU code (.nv_fatbin), which then
    is never touched.
    """
    found: set[str] = set()
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for start, size in ranges or [(0, len(data))]:
                end = min(len(data), start + size)
                for suffix in _SUFFIXES[binary_format]:
                    for match in re.compile(suffix).finditer(data, start, end):
                        name = _widen(data, match.start(), binary_format)
                        if name:
                            found.add(name)
    except (OSError, ValueError):  # empty or unreadable: nothing to report
        return []
    return sorted(found)


def _widen(data: mmap.mmap, dot: int, binary_format: str) -> str:
    """The whole-string library name around the suffix at `dot`, or "" when there is none."""
    start = dot
    while start > 0 and dot - start < 96 and data[start - 1] in _NAME_CHARS:
        start -= 1
    if start == dot or (start > 0 and data[start - 1] != 0x20 and _printable(data[start - 1])):
        return ""  # glued to other characters: not a name of its own
    tail = _TAIL[binary_format].match(data[dot : dot + 24])
    if tail is None:
        return ""
    end = dot + tail.end()
    if end < len(data) and _printable(data[end]):  # ".dllfoo", "libcuda.so.1: %s": not a whole string
        return ""
    name = data[start:end].decode("ascii", "replace")
    return name if name.lower().startswith(_STARTS[binary_format]) else ""
