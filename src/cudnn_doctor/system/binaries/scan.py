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

import hashlib
import mmap
import os
from typing import Any, Optional

from cudnn_doctor.lazyre import regex
from cudnn_doctor.system.state_files import read_state_json, write_state_json

_FAMILIES = (
    "cudnn",
    "cublas",
    "cudart",
    "nvrtc",
    "zlibwapi",
    "nvcuda",
    "cufft",
    "curand",
    "cusolver",
    "cusparse",
    "nvjitlink",
)
_STARTS = {"pe": _FAMILIES, "elf": (*(f"lib{family}" for family in _FAMILIES), "libcuda.so", "libz.so")}
_NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+%")
_SUFFIX = {"pe": regex(rb"\.(?:dll|DLL)"), "elf": regex(rb"\.so")}  # one compiled alternation per format
_VERSION_PART = rb"(?:[0-9]+|%[0-9]*[dui])+"
_TAIL = {"pe": regex(rb"^\.(?:dll|DLL)"), "elf": regex(rb"^\.so(?:\." + _VERSION_PART + rb")*\.?")}
CACHE_FROM = 4 << 20  # bytes scanned from which a result is cached: below it the scan costs less than the cache
CACHE_ENTRIES = 1024  # the newest kept; a library is about 150 bytes of cache


def _printable(byte: int) -> bool:
    return 0x20 <= byte < 0x7F


def library_names(path: str, binary_format: str, ranges: Optional[list[tuple[int, int]]] = None) -> list[str]:
    """Library names of the GPU-stack families that appear as strings in the file.

    `ranges` (offset, size) limits the scan to the read-only data sections where string
    constants live; NVIDIA's largest libraries are mostly GPU code (.nv_fatbin), which then
    is never touched. A scan of many megabytes is cached in the state folder by the hash of the
    bytes it read, found again by the file's identity (device, inode, size, times) without
    reading it; a second copy of the same library (another environment's) is hashed, not scanned.
    """
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            spans = [
                (start, min(info.st_size, start + size))
                for start, size in ranges or [(0, info.st_size)]
                if start < info.st_size
            ]
            if not spans:
                return []
            file_key = None
            if sum(end - start for start, end in spans) >= CACHE_FROM:
                file_key = (
                    f"{binary_format}:{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
                    f":{info.st_ctime_ns}:{spans}"
                )
                cached = _CACHE.by_file(file_key)
                if cached is not None:
                    return cached
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                content = _content_key(data, spans, binary_format) if file_key else None
                cached = _CACHE.by_content(content) if content else None
                found = cached if cached is not None else _scan(data, spans, binary_format)
                if file_key and content:
                    _CACHE.store(file_key, content, found)
                return found
    except (OSError, ValueError):  # empty or unreadable: nothing to report
        return []


def _scan(data: mmap.mmap, spans: list[tuple[int, int]], binary_format: str) -> list[str]:
    found: set[str] = set()
    suffix = _SUFFIX[binary_format]
    for start, end in spans:
        for match in suffix.finditer(data, start, end):
            name = _widen(data, match.start(), binary_format)
            if name:
                found.add(name)
    return sorted(found)


def _content_key(data: mmap.mmap, spans: list[tuple[int, int]], binary_format: str) -> str:
    """The hash of exactly the bytes a scan reads (and the spans and format): the result depends on nothing else."""
    digest = hashlib.blake2b(
        f"{binary_format}:{[(s - spans[0][0], e - spans[0][0]) for s, e in spans]}".encode(), digest_size=20
    )
    with memoryview(data) as view:
        for start, end in spans:
            digest.update(view[start:end])
    return digest.hexdigest()


FILE = "scan-cache.json"


class _ScanCache:
    """The state folder's scan-cache.json: {"files": {identity: content}, "names": {content: [names]}}, read once
    per process and written back once at exit when it grew. A damaged or unreadable cache is ignored."""

    def __init__(self) -> None:
        self._files: Optional[dict[str, str]] = None
        self._names: dict[str, list[str]] = {}
        self._dirty = False

    def _load(self) -> dict[str, str]:
        if self._files is None:
            self._files = {}
            document: Any = read_state_json(FILE, 16 << 20)  # any JSON: a shape other than the cache's is caught below
            try:
                files, names = document["files"], document["names"]
                if isinstance(files, dict) and isinstance(names, dict):
                    self._names = {
                        k: v for k, v in names.items() if isinstance(v, list) and all(isinstance(n, str) for n in v)
                    }
                    self._files = {k: v for k, v in files.items() if isinstance(v, str) and v in self._names}
            except (KeyError, TypeError, AttributeError):
                self._files, self._names = {}, {}
        return self._files

    def by_file(self, key: str) -> Optional[list[str]]:
        content = self._load().get(key)
        return list(self._names[content]) if content is not None else None

    def by_content(self, content: str) -> Optional[list[str]]:
        self._load()
        found = self._names.get(content)
        return list(found) if found is not None else None

    def store(self, file_key: str, content: str, names: list[str]) -> None:
        files = self._load()
        files.pop(file_key, None)
        files[file_key] = content  # the newest last: the oldest are dropped first
        self._names[content] = list(names)
        if not self._dirty:
            import atexit

            atexit.register(self.save)
        self._dirty = True

    def save(self) -> None:
        """Write the cache (the newest CACHE_ENTRIES files) atomically; a state folder that cannot be written is no
        error."""
        if not self._dirty or self._files is None:
            return
        files = dict(list(self._files.items())[-CACHE_ENTRIES:])
        if write_state_json(FILE, {"files": files, "names": {c: self._names[c] for c in set(files.values())}}):
            self._dirty = False


_CACHE = _ScanCache()


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
