"""The few PE fields the doctor reads, with `struct`: importing pefile, and parsing a file with it, cost far more
(docs/speed.md).

What `pe.read_pe` needs: the machine, the import and delay-import DLL names (in pefile's order), the
FileVersion of the first VS_FIXEDFILEINFO and the file ranges of the .rdata/.data sections. Only the
headers, the section table and the three directories are read, through a small block cache.

The answer must be the one `pe.read_pe_with_pefile` gives, so this reader follows pefile's own rules
(how an address maps to a section, where a thunk table ends, which names it calls invalid) and raises
`Irregular` wherever pefile would adjust, cut, drop or guess: an address outside the sections' data, a
section that pefile realigns, a thunk table one of its heuristics stops, a resource tree with a loop or
an overlap, an old address-based delay table, a truncated file. The caller then asks pefile, whose
answer stays the reference; tests/unit/binaries/test_pe_header.py pins the two together on every real PE file the
tests download.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Iterator, Optional

from cudnn_doctor.binaries import PE_MACHINES, BinaryInfo
from cudnn_doctor.record import Record

# pefile's limits and constants (pefile 2024.8.26, module level and PE.get_import_table)
MAX_SECTIONS = 0x800
MAX_IMPORT_SYMBOLS = 0x2000
MAX_NAME_LENGTH = 0x200  # MAX_DLL_LENGTH and MAX_IMPORT_NAME_LENGTH
MAX_RESOURCE_ENTRIES = 0x8000
MAX_RESOURCE_DEPTH = 32
MAX_DIRECTORY_ENTRIES = 4096
MAX_ADDRESS_SPREAD = 128 * 2**20
MAX_REPEATED_ADDRESSES = 15
RT_STRING, RT_VERSION = 6, 16
IMPORT, RESOURCE, DELAY_IMPORT = 1, 2, 13
I386 = 0x14C
_DOS_NAME = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'()-@^_`{}~+,.;=[]:\\/")
_FUNCTION_NAME = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._?@$()<>")
_VS_VERSION_INFO = "VS_VERSION_INFO\0".encode("utf-16le")
_BLOCK = 1 << 16


class Irregular(Exception):
    """The file is not one this reader answers for: pefile reads it instead."""


class Section(Record):
    name: bytes
    address: int  # VirtualAddress
    virtual_size: int
    offset: int  # PointerToRawData
    size: int  # SizeOfRawData
    end: int  # the first address past it, as pefile's contains_rva computes it


class _Image:
    """A PE file's bytes by file offset (read in cached blocks) and by address (pefile's get_data)."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self.handle, self.size = handle, size
        self.blocks: dict[int, bytes] = {}
        self.sections: list[Section] = []
        self.last: Optional[Section] = None

    def read(self, offset: int, size: int) -> bytes:
        """Up to `size` bytes at `offset` (fewer at the end of the file)."""
        size = min(size, self.size - offset)  # a resource's Size may say 4 GB
        parts = []
        first, last = offset // _BLOCK, (offset + size - 1) // _BLOCK
        for index in range(first, last + 1):
            block = self.blocks.get(index)
            if block is None:
                self.handle.seek(index * _BLOCK)
                block = self.blocks[index] = self.handle.read(_BLOCK)
            parts.append(block)
        data = b"".join(parts) if len(parts) > 1 else parts[0] if parts else b""
        start = offset - first * _BLOCK
        return data[start : start + size]

    def section(self, rva: int) -> Section:
        """The section holding `rva`; an address outside every section is irregular (pefile reads the header or
        the file there)."""
        if self.last is not None and self.last.address <= rva < self.last.end:
            return self.last
        for section in self.sections:
            if section.address <= rva < section.end:
                self.last = section
                return section
        raise Irregular(f"address 0x{rva:x} outside the sections")

    def offset(self, rva: int) -> tuple[Section, int]:
        """The section holding `rva` and the file offset of `rva` in it."""
        section = self.section(rva)
        return section, rva - section.address + section.offset

    def _in_section(self, rva: int, length: int) -> bytes:
        """Up to `length` bytes at `rva`, cut at the end of its section's data as pefile's get_data cuts them."""
        section, offset = self.offset(rva)
        end = min(offset + length, section.offset + section.size)
        return self.read(offset, end - offset) if end > offset else b""

    def data(self, rva: int, length: int) -> bytes:
        """`length` bytes at `rva`; a read the section's data cuts short is irregular."""
        data = self._in_section(rva, length)
        if len(data) != length:
            raise Irregular(f"{length} bytes at 0x{rva:x} run off the section's data")
        return data

    def string(self, rva: int) -> bytes:
        """The NUL-terminated ASCII string at `rva`, as pefile's get_string_at_rva with a 0x200 limit finds it."""
        data = self._in_section(rva, MAX_NAME_LENGTH)
        stop = data.find(b"\0")
        if stop < 0:
            raise Irregular(f"no end to the string at 0x{rva:x}")
        return data[:stop]


class _Headers(Record):
    machine: int
    plus: bool  # PE32+
    directories: tuple[tuple[int, int], ...]  # (VirtualAddress, Size) of the 16 data directories


def read_pe_quickly(handle: BinaryIO) -> BinaryInfo:
    """What `system.binaries.pe.read_pe_with_pefile` says about the open file; `Irregular` when only pefile can say
    it."""
    try:
        return _read(handle)
    except struct.error as error:
        raise Irregular(str(error)) from error


def _read(handle: BinaryIO) -> BinaryInfo:
    handle.seek(0, 2)
    image = _Image(handle, handle.tell())
    headers = _headers(image)
    if isinstance(headers, BinaryInfo):
        return headers
    counter = [0]  # pefile's import symbol count, shared by both import tables
    names = _imports(image, headers, counter) + _delay_imports(image, headers, counter)
    version = _version(image, headers)
    strings = tuple((s.offset, s.size) for s in image.sections if s.name.rstrip(b"\0") in (b".rdata", b".data"))
    machine = PE_MACHINES.get(headers.machine, hex(headers.machine))
    return BinaryInfo(
        "pe", machine, tuple(n.decode("ascii", "replace") for n in names), version=version, string_ranges=strings
    )


def _not_pe(message: str) -> BinaryInfo:
    return BinaryInfo(None, error=f"not a valid PE file: {message}")


def _headers(image: _Image) -> _Headers | BinaryInfo:
    """The file header, optional header and section table; pefile's error for what is plainly not a PE file."""
    if image.size == 0:
        return _not_pe("The file is empty")
    dos = image.read(0, 64)
    if len(dos) < 64:
        return _not_pe("Unable to read the DOS Header, possibly a truncated file.")
    magic, lfanew = struct.unpack_from("<H", dos)[0], struct.unpack_from("<I", dos, 0x3C)[0]
    if magic == 0x4D5A:
        return _not_pe("Probably a ZM Executable (not a PE file).")
    if magic != 0x5A4D:
        return _not_pe("DOS Header magic not found.")
    if lfanew > image.size:
        return _not_pe("Invalid e_lfanew value, probably not a PE file")
    head = image.read(lfanew, 4 + 20 + 112 + 16 * 8)
    signature = struct.unpack_from("<I", head)[0] if len(head) >= 4 else 0
    if not signature:
        return _not_pe("NT Headers not found.")
    kinds = {0x454E: "NE", 0x454C: "LE", 0x584C: "LX", 0x5A56: "TE"}
    if signature & 0xFFFF in kinds:
        return _not_pe(f"Invalid NT Headers signature. Probably a {kinds[signature & 0xFFFF]} file")
    if signature != 0x4550:
        return _not_pe("Invalid NT Headers signature.")
    if len(head) < 4 + 20 + 2:
        raise Irregular("truncated headers")
    machine, count, _time, _symbols, _number, optional_size, _flags = struct.unpack_from("<HHIIIHH", head, 4)
    optional = 24
    magic = struct.unpack_from("<H", head, optional)[0]
    if magic not in (0x10B, 0x20B):
        raise Irregular(f"optional header magic 0x{magic:x}")
    plus = magic == 0x20B
    fixed = 112 if plus else 96
    if len(head) < optional + fixed + 16 * 8:
        raise Irregular("truncated optional header")
    section_alignment, file_alignment = struct.unpack_from("<II", head, optional + 32)
    (rva_count,) = struct.unpack_from("<I", head, optional + fixed - 4)
    if rva_count & 0x7FFFFFFF < 16:
        raise Irregular(f"{rva_count} data directories")  # pefile stops at the first missing one
    directories = tuple(struct.unpack_from("<II", head, optional + fixed + 8 * index) for index in range(16))
    image.sections = _sections(image, lfanew + optional + optional_size, count, section_alignment, file_alignment)
    return _Headers(machine, plus, directories)


def _sections(image: _Image, offset: int, count: int, section_alignment: int, file_alignment: int) -> list[Section]:
    """The section table sorted by address, each with the end pefile's contains_rva gives it. A section pefile
    realigns or drops is irregular; one it only warns about (cuDNN's 400 MB .nv_fatbin) is read as it reads it."""
    if not 0 < count <= MAX_SECTIONS:
        raise Irregular(f"{count} sections")
    table = image.read(offset, 40 * count)
    if len(table) != 40 * count:
        raise Irregular("truncated section table")
    alignment = section_alignment if section_alignment >= 0x1000 else file_alignment
    raw = []
    for index in range(count):
        entry = table[40 * index : 40 * index + 40]
        if not entry.strip(b"\0"):
            raise Irregular("a null section header")  # pefile stops reading the table there
        name, virtual_size, address, size, pointer = struct.unpack_from("<8sIIII", entry)
        if pointer + size > image.size or pointer % 0x200 or (alignment and address % alignment):
            raise Irregular(f"section {index} runs off the file or is realigned")  # pefile rounds both addresses down
        warnings = (file_alignment and pointer % file_alignment, virtual_size > 0x10000000, address > 0x10000000)
        if sum(bool(w) for w in warnings) >= 3:
            raise Irregular(f"section {index} is irregular")  # pefile stops reading the table there
        raw.append((name, virtual_size, address, size, pointer))
    raw.sort(key=lambda s: s[2])
    sections = []
    for index, (name, virtual_size, address, size, pointer) in enumerate(raw):
        end = address + max(size, virtual_size)
        if index + 1 < len(raw):
            following = raw[index + 1][2]
            if following == address:
                raise Irregular("two sections at one address")
            end = min(end, following)
        sections.append(Section(name, address, virtual_size, pointer, size, end))
    return sections


def _imports(image: _Image, headers: _Headers, counter: list[int]) -> list[bytes]:
    """The import directory's DLL names, in order: pefile's parse_import_directory when no entry is dropped."""
    names = []
    for at, raw in _descriptors(image, headers.directories[IMPORT][0], 20):
        first_lookup, _time, _forwarder, name, first_thunk = struct.unpack("<IIIII", raw)
        _symbols(
            image,
            headers,
            counter,
            first_lookup,
            first_thunk,
            _max_length(image, at, at + 20, first_lookup, first_thunk),
        )
        names.append(_dll_name(image, name))
    return names


def _delay_imports(image: _Image, headers: _Headers, counter: list[int]) -> list[bytes]:
    """The delay-import directory's DLL names, in order: pefile's parse_delay_import_directory when nothing is
    dropped."""
    names = []
    for at, raw in _descriptors(image, headers.directories[DELAY_IMPORT][0], 32):
        attributes, name, _module, address_table, name_table, _bound, _unload, _time = struct.unpack("<8I", raw)
        if attributes == 0 and headers.machine == I386:
            raise Irregular("an address-based delay-import table")  # pefile turns its addresses into RVAs
        _symbols(
            image,
            headers,
            counter,
            name_table,
            address_table,
            _max_length(image, at, at + 32, name_table, address_table),
        )
        if counter[0] > MAX_IMPORT_SYMBOLS:
            raise Irregular("too many imported symbols")
        names.append(_dll_name(image, name))
    return names


def _descriptors(image: _Image, rva: int, size: int) -> Iterator[tuple[int, bytes]]:
    """Each `size`-byte descriptor of the table at `rva` (none where `rva` is 0), with its address, up to the
    all-zero one that ends the table."""
    if not rva:
        return
    while True:
        raw = image.data(rva, size)
        if not raw.strip(b"\0"):
            return
        yield rva, raw
        rva += size


def _max_length(image: _Image, descriptor: int, after: int, lookup: int, address: int) -> int:
    """How far pefile lets a thunk table run: to the end of the file, or up to the descriptor when a table lies before
    it."""
    if after > lookup or after > address:
        return max(after - lookup, after - address)
    return image.size - image.offset(descriptor)[1]


def _dll_name(image: _Image, rva: int) -> bytes:
    name = image.string(rva)
    if not name or not set(name) <= _DOS_NAME:
        raise Irregular(f"DLL name {name!r}")  # pefile says *invalid* or drops it
    return name


def _symbols(image: _Image, headers: _Headers, counter: list[int], lookup: int, address: int, max_length: int) -> None:
    """Check the imported symbols as pefile's parse_imports reads them: every entry a valid name or ordinal."""
    table = _thunks(image, headers, counter, lookup, max_length)
    _thunks(image, headers, counter, address, max_length)  # read only for pefile's symbol count
    if not table:
        raise Irregular("an empty or broken import lookup table")
    flag = 1 << 63 if headers.plus else 1 << 31
    mask = flag - 1
    for value in table:
        if value & flag:
            if not value & 0xFFFF:
                raise Irregular("ordinal 0")
            continue
        image.data(value & mask, 2)  # the hint
        name = image.string(value + 2)
        if not name or not set(name) <= _FUNCTION_NAME:
            raise Irregular(f"imported name {name!r}")  # pefile skips it, and drops a DLL left with none


def _thunks(image: _Image, headers: _Headers, counter: list[int], rva: int, max_length: int) -> list[int]:
    """pefile's get_import_table: the table's values, or [] where pefile gives up on it; a cut table is irregular."""
    flag, width, form = (1 << 63, 8, "<Q") if headers.plus else (1 << 31, 4, "<I")
    table: list[int] = []
    low32 = high32 = low64 = high64 = None
    repeated = 0
    seen: set[int] = set()
    start = rva
    while rva:
        if rva >= start + max_length:
            raise Irregular("a thunk table runs past its bounds")
        if counter[0] > MAX_IMPORT_SYMBOLS:
            raise Irregular("too many imported symbols")
        counter[0] += 1
        if repeated >= MAX_REPEATED_ADDRESSES:
            return []
        if (low32 is not None and high32 - low32 > MAX_ADDRESS_SPREAD) or (
            low64 is not None and high64 - low64 > MAX_ADDRESS_SPREAD
        ):
            return []
        value = struct.unpack(form, image.data(rva, width))[0]  # where pefile reads the header or says None
        if start <= value <= rva:
            raise Irregular("a thunk points into its own table")
        if value:
            if value & flag:
                if value & 0x7FFFFFFF > 0xFFFF:
                    return []
            else:
                if value in seen:
                    repeated += 1
                seen.add(value)
                if value >= 1 << 32:
                    low64, high64 = (value, value) if low64 is None else (min(low64, value), max(high64, value))
                else:
                    low32, high32 = (value, value) if low32 is None else (min(low32, value), max(high32, value))
        else:
            break
        rva += width
        table.append(value)
    return table


def _version(image: _Image, headers: _Headers) -> Optional[str]:
    """The first VS_FIXEDFILEINFO's FileVersion, found as pefile's parse_resources_directory finds it."""
    rva = headers.directories[RESOURCE][0]
    if not rva:
        return None
    walk = _Resources(image, rva)
    walk.directory(rva, 0, (rva,))
    if walk.version is None:
        return None
    ms, ls = walk.version
    return f"{ms >> 16}.{ms & 0xFFFF}.{ls >> 16}.{ls & 0xFFFF}"


class _Entry(Record):
    name: int
    entries: Optional[list[_Entry]]  # a subdirectory's entries
    data: Optional[tuple[int, int]]  # a leaf's (OffsetToData, Size)


class _Resources:
    """The resource tree, walked whole as pefile walks it; whatever would make pefile stop early is irregular."""

    def __init__(self, image: _Image, base: int) -> None:
        self.image, self.base = image, base
        self.total = 0
        self.version: Optional[tuple[int, int]] = None

    def directory(self, rva: int, level: int, path: tuple[int, ...]) -> list[_Entry]:
        if level > MAX_RESOURCE_DEPTH:
            raise Irregular("resource tree too deep")
        named, ids = struct.unpack_from("<HH", self.image.data(rva, 16), 12)
        count = named + ids
        self.total += count
        if count > MAX_DIRECTORY_ENTRIES or self.total > MAX_RESOURCE_ENTRIES:
            raise Irregular("too many resource entries")
        entries: list[_Entry] = []
        last_name: Optional[tuple[int, int]] = None
        at = rva + 16
        for _ in range(count):
            name, target = struct.unpack("<II", self.image.data(at, 8))
            if name & 0x80000000:
                start = self.base + (name & 0x7FFFFFFF)
                length = struct.unpack("<H", self.image.data(start, 2))[0]
                if last_name and last_name[0] < start <= last_name[1]:
                    raise Irregular("resource names overlap")
                last_name = (start, start + length)
            if target & 0x80000000:
                child = self.base + (target & 0x7FFFFFFF)
                if child in path:
                    raise Irregular("a loop in the resource tree")
                entry = _Entry(name, self.directory(child, level + 1, (*path, child)), None)
            else:
                offset, size = struct.unpack_from("<II", self.image.data(self.base + target, 16))
                entry = _Entry(name, None, (offset, size))
            entries.append(entry)
            if level == 0 and name & 0xFFFF == RT_VERSION and entry.entries:
                self._versions(entry.entries)
            at += 8
        return entries

    def _versions(self, types: list[_Entry]) -> None:
        """parse_version_information on each language of the first version resource."""
        if not types[0].entries:
            return
        for language in types[0].entries:
            if language.data is not None and self.version is None:
                self.version = self._fixed(*language.data)

    def _fixed(self, rva: int, size: int) -> Optional[tuple[int, int]]:
        raw = self.image.read(self.image.offset(rva)[1], size)
        if len(raw) < 6:
            return None
        key = rva + 6
        section = self.image.section(key)
        if (section.address + max(section.size, section.virtual_size) - key) >> 1 < len(_VS_VERSION_INFO) // 2:
            raise Irregular("the version key is cut")
        if self.image.data(key, len(_VS_VERSION_INFO)) != _VS_VERSION_INFO:
            raise Irregular("no VS_VERSION_INFO key")  # pefile warns and skips the block
        fixed = ((6 + len(_VS_VERSION_INFO) + rva + 3) & ~3) - (rva & ~3)
        if len(raw) < fixed + 52:
            return None
        return struct.unpack_from("<II", raw, fixed + 8)
