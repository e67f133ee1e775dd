"""What a cuDNN archive holds, read from its name, its first members and its libraries' headers: the release, the
CUDA major, the OS and architecture, the layout (archive, installer, NVIDIA's pip wheel); and whether a library is
one for this machine."""

from __future__ import annotations

import lzma
import re
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Optional

from cudnn_doctor import knowledge
from cudnn_doctor.binaries import arch_of_machine, head_machine
from cudnn_doctor.lazyre import regex
from cudnn_doctor.system.archive import (
    BLOCK,
    CUBLAS_NAME,
    LIBRARY_NAME,
    OPS_NAME,
    Archive,
    ArchiveInfo,
    Member,
    cuda_from_names,
)
from cudnn_doctor.versions import cuda_major_of_dll_number, cudnn_header_version


def library_problem(name: str, head: bytes, os_name: str, arch: Optional[str]) -> Optional[str]:
    """Why the first bytes of a library do not fit its name and the target OS and machine, or None."""
    if not LIBRARY_NAME.search(name):
        return None
    wanted = "pe" if name.lower().endswith(".dll") else "elf"
    if wanted != ("pe" if os_name == "windows" else "elf"):
        return f"a {'.dll' if wanted == 'pe' else '.so'} file is no library on {os_name}"
    found = head_machine(head)
    if found is None or found[0] != wanted:
        return f"it is not {'a PE (MZ)' if wanted == 'pe' else 'an ELF'} file"
    if arch is not None and found[1] is not None and arch_of_machine(found[1]) != arch:
        return f"it is built for {arch_of_machine(found[1])}, this machine is {arch}"
    return None


# NVIDIA's own pip wheel of cuDNN: nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl, its files in
# nvidia/cudnn/
_WHEEL = regex(r"^nvidia_cudnn_cu(?P<cuda>\d+)-(?P<version>\d+(?:\.\d+){1,3})-[^/]*\.whl$")


WHEEL_TOP = "nvidia/cudnn"


def is_wheel_payload(name: str) -> bool:
    """A file of a cuDNN wheel that belongs in a toolkit: under nvidia/cudnn/, not the package's Python files."""
    return name.startswith(WHEEL_TOP + "/") and not name.endswith((".py", ".pyc")) and "/__pycache__/" not in name


def named_info(path: Path) -> Optional[ArchiveInfo]:
    """What the file's name alone says (NVIDIA's archive names, its wheels' names): enough to refuse a wrong archive
    before reading a byte of it. None for another name."""
    wheel = _WHEEL.match(path.name)
    if wheel:
        tag = path.name.rsplit("-", 1)[-1]
        os_name = "windows" if tag.startswith("win") else "linux" if "linux" in tag else None
        arch = "aarch64" if "aarch64" in tag else "x86_64" if ("x86_64" in tag or "amd64" in tag) else None
        return ArchiveInfo(
            path, WHEEL_TOP, "wheel", wheel.group("version"), int(wheel.group("cuda")), os_name, arch, ()
        )
    parsed = knowledge.parse_cudnn_archive_name(path.name)
    if parsed is None:
        return None
    arch = {"sbsa": "aarch64", "x64": "x86_64"}.get(parsed.arch, parsed.arch)
    return ArchiveInfo(
        path,
        "",
        "named",
        parsed.version,
        parsed.cuda_major,
        parsed.os,
        arch if arch in ("x86_64", "aarch64") else None,
        (),
    )


def first_names(path: Path, limit: int = 32) -> Optional[list[str]]:
    """The names of an archive's first members (a zip's directory, a tar's first headers), read without reading the
    rest; None for a folder or a file that is not a readable archive (the full read says what is wrong with it)."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                return archive.namelist()[: max(limit, 1000)]
        names: list[str] = []
        with tarfile.open(path, "r|*") as archive:
            for member in archive:
                names.append(member.name)
                if len(names) >= limit:
                    break
        return names
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, lzma.LZMAError, zlib.error):
        return None


def inspect(archive: Archive) -> ArchiveInfo:
    """Find the layout, the cuDNN version, the CUDA major and the platform of an archive."""
    files = [m for m in archive.members if not m.is_dir]
    named = _WHEEL.match(archive.path.name)  # NVIDIA's wheel name says its cuDNN release and CUDA major
    wheel = named or (
        any(m.name.endswith(".dist-info/WHEEL") for m in files) and any(is_wheel_payload(m.name) for m in files)
    )
    if wheel:
        files = [m for m in files if is_wheel_payload(m.name)]
    top = WHEEL_TOP if wheel else _common_top(files)
    rel = [m.name[len(top) + 1 :] if top else m.name for m in files]
    if wheel:
        layout = "wheel"
    elif any(r.startswith("bin/") and re.match(r"bin/\d+\.x/", r) for r in rel):
        layout = "cudnn9-installer"
    elif top.rsplit("/", 1)[-1] == "cuda":
        layout = "cuda-folder"
    elif top.endswith("-archive"):
        layout = "linux-archive" if any(r.endswith(".so") or ".so." in r for r in rel) else "archive-folder"
    else:
        layout = "flat"
    real = [m for m in files if m.is_file]  # a header or library given as a link (dangling, perhaps) is not read
    header = next((m for m in real if m.name.endswith("cudnn_version.h")), None) or next(
        (m for m in real if m.name.endswith("/cudnn.h")), None
    )
    version = cudnn_header_version(archive.read_text(header, 256 * 1024)) if header is not None else None
    version = version or (named.group("version") if named else None)
    cuda_major = (
        (int(named.group("cuda")) if named else None)
        or cuda_from_names(archive.path.name, top, rel)
        or _cuda_from_libraries(archive, real)
    )
    os_name = (
        "windows"
        if any(m.name.lower().endswith(".dll") for m in files)
        else "linux"
        if any(".so" in m.name for m in files)
        else None
    )
    return ArchiveInfo(archive.path, top, layout, version, cuda_major, os_name, _arch(archive, real), archive.members)


def _common_top(files: list[Member]) -> str:
    if not files:
        return ""
    parts = [m.name.split("/") for m in files]
    top: list[str] = []
    for level in zip(*parts):
        if len(set(level)) != 1 or any(len(p) <= len(top) + 1 for p in parts):
            break
        top.append(level[0])
        if level[0] in ("bin", "include", "lib", "lib64"):
            top.pop()
            break
    return "/".join(top)


def _arch(archive: Archive, real: list[Member]) -> Optional[str]:
    """The machine of the first library that is a real file, from its first 64 KB (never from a link member)."""
    candidate = next((m for m in real if LIBRARY_NAME.search(m.name)), None)
    found = head_machine(archive.read_head(candidate)) if candidate is not None else None
    arch = arch_of_machine(found[1]) if found and found[1] else None
    return arch if arch in ("x86_64", "aarch64", "x86") else None


def _cuda_from_libraries(archive: Archive, files: list[Member]) -> Optional[int]:
    """The cuBLAS major the cuDNN ops library names (cublas64_11.dll / libcublas.so.12): found by the pass that
    read the archive, or for a folder read here as a stream."""
    ops = next((m for m in files if OPS_NAME.search(m.name)), None)
    if ops is None:
        return None
    found = archive.cublas_name() if archive.kind != "folder" else _search_cublas(archive, ops)
    match = CUBLAS_NAME.fullmatch(found) if found else None
    if match is None:
        return None
    return cuda_major_of_dll_number(match.group(1).decode()) if match.group(1) else int(match.group(2))


def _search_cublas(archive: Archive, ops: Member) -> Optional[bytes]:
    tail = b""
    with archive.open(ops) as stream:
        for block in iter(lambda: stream.read(BLOCK), b""):
            match = CUBLAS_NAME.search(tail + block)
            if match:
                return match.group(0)
            tail = block[-64:]
    return None
