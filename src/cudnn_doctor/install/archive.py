"""Reading a cuDNN archive (.zip, .tar.xz, .tar.gz or an extracted folder) without extracting it blindly.

Every member name is checked before anything is written: absolute paths, drive letters, `..`
components and links that leave the archive are refused, and so are archives whose
uncompressed size or compression ratio is absurd (zip bombs) or that are truncated.
"""

from __future__ import annotations

import os
import posixpath
import re
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Optional

from cudnn_doctor.errors import InputError
from cudnn_doctor.versions import cudnn_header_version

MAX_TOTAL_BYTES = 64 * 1024**3  # the largest cuDNN release is a few GB uncompressed
MAX_RATIO = 200  # NVIDIA's libraries compress 2-4x; a bomb compresses thousands of times
_DRIVE = re.compile(r"^[A-Za-z]:")
# cudnn-windows-x86_64-8.5.0.96_cuda11-archive, cudnn-11.3-windows-x64-v8.2.0.53, bin/12.x/
_ARCHIVE_CUDA = re.compile(r"(?i)_cuda(\d+)(?:\.\d+)?[-_]archive|cudnn-(\d+)\.\d+-(?:windows|linux)|[\\/](\d+)\.x[\\/]")
_CUBLAS_NAME = re.compile(rb"cublas(?:Lt)?64_(\d+)\.dll|libcublas(?:Lt)?\.so\.(\d+)")


@dataclass(frozen=True)
class Member:
    """One entry of the archive, by its normalized relative path."""

    name: str  # posix-style, relative, no top folder removed
    size: int
    compressed: int
    link: Optional[str] = None  # symbolic link target (tar)
    is_dir: bool = False


@dataclass(frozen=True)
class ArchiveInfo:
    """What the archive is: its layout, release, CUDA major and platform."""

    path: Path
    top: str  # the top folder every member lives under ("" when none)
    layout: str  # cuda-folder | archive-folder | cudnn9-installer | linux-archive | flat
    version: Optional[str]
    cuda_major: Optional[int]
    os: Optional[str]  # windows | linux
    arch: Optional[str]  # x86_64 | aarch64
    members: tuple[Member, ...]


class Archive:
    """A uniform, validated view of a zip, a tar or a folder."""

    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise InputError(f"no such archive: {path}")
        self.path = path
        try:
            if path.is_dir():
                self.kind = "folder"
                self._members = self._folder_members()
            elif zipfile.is_zipfile(path):
                self.kind = "zip"
                self._zip = zipfile.ZipFile(path)
                self._zip_names = {_clean(n): n for n in self._zip.namelist()}
                self._members = self._zip_members()
            elif tarfile.is_tarfile(path):
                self.kind = "tar"
                self._tar = tarfile.open(path)  # noqa: SIM115 - closed by Archive.close()
                self._tar_infos = {_clean(m.name): m for m in self._tar.getmembers()}
                self._members = self._tar_members()
            else:
                raise InputError(f"{path.name} is not a .zip, .tar.xz or .tar.gz archive (or it is truncated)")
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as error:
            raise InputError(f"{path.name} is corrupt or truncated: {error}") from None
        self._validate()

    @property
    def members(self) -> tuple[Member, ...]:
        return self._members

    def _zip_members(self) -> tuple[Member, ...]:
        members = []
        for info in self._zip.infolist():
            mode = (info.external_attr >> 16) & 0o170000
            if mode == 0o120000:  # a symbolic link stored in a zip: its target is the data
                target = self._zip.read(info).decode("utf-8", "replace")
                members.append(Member(_clean(info.filename), 0, info.compress_size, link=target))
            else:
                members.append(Member(_clean(info.filename), info.file_size, info.compress_size, is_dir=info.is_dir()))
        return tuple(members)

    def _tar_members(self) -> tuple[Member, ...]:
        members = []
        for info in self._tar.getmembers():
            if info.issym() or info.islnk():
                members.append(Member(_clean(info.name), 0, 0, link=info.linkname))
            elif info.isdir():
                members.append(Member(_clean(info.name), 0, 0, is_dir=True))
            elif info.isfile():
                members.append(Member(_clean(info.name), info.size, info.size))
            else:
                raise InputError(f"{self.path.name}: {info.name!r} is a device or FIFO, not a file")
        return tuple(members)

    def _folder_members(self) -> tuple[Member, ...]:
        members = []
        for folder, dirs, files in os.walk(self.path):
            for name in sorted(dirs + files):
                full = Path(folder) / name
                rel = full.relative_to(self.path).as_posix()
                if full.is_symlink():
                    members.append(Member(rel, 0, 0, link=os.readlink(full)))
                elif full.is_file():
                    size = full.stat().st_size
                    members.append(Member(rel, size, size))
        return tuple(members)

    def _validate(self) -> None:
        total = compressed = 0
        for member in self._members:
            name = member.name
            if not name or name.startswith("/") or _DRIVE.match(name):
                raise InputError(f"{self.path.name}: refusing member with an absolute path: {name!r}")
            if ".." in name.split("/"):
                raise InputError(f"{self.path.name}: refusing member that climbs out of the archive: {name!r}")
            if member.link is not None:
                target = member.link
                if target.startswith("/") or _DRIVE.match(target):
                    raise InputError(f"{self.path.name}: refusing link {name!r} → {target!r} (absolute target)")
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
                if resolved.startswith("../") or resolved == "..":
                    raise InputError(f"{self.path.name}: refusing link {name!r} → {target!r} (points outside the archive)")
            total += member.size
            compressed += member.compressed
            if member.compressed and member.size / max(member.compressed, 1) > MAX_RATIO and member.size > 16 * 1024**2:
                raise InputError(f"{self.path.name}: refusing {name!r}: it expands {member.size // max(member.compressed, 1)}x (a zip bomb?)")
        if total > MAX_TOTAL_BYTES:
            raise InputError(f"{self.path.name}: refusing an archive that expands to {total / 1024**3:.0f} GB")

    def open(self, member: Member) -> IO[bytes]:
        """A stream of the member's bytes."""
        try:
            if self.kind == "zip":
                return self._zip.open(self._zip_names[member.name])
            if self.kind == "tar":
                stream = self._tar.extractfile(self._tar_infos[member.name])
                if stream is None:
                    raise InputError(f"{self.path.name}: cannot read {member.name}")
                return stream
            return open(self.path / member.name, "rb")
        except (zipfile.BadZipFile, tarfile.TarError, EOFError) as error:
            raise InputError(f"{self.path.name} is corrupt or truncated at {member.name}: {error}") from None

    def read_text(self, member: Member, limit: int = 1 << 20) -> str:
        with self.open(member) as stream:
            return stream.read(limit).decode("utf-8", "replace")

    def read_head(self, member: Member, limit: int = 1 << 16) -> bytes:
        with self.open(member) as stream:
            return stream.read(limit)

    def close(self) -> None:
        for attribute in ("_zip", "_tar"):
            handle = getattr(self, attribute, None)
            if handle is not None:
                handle.close()


def _clean(name: str) -> str:
    return name.replace("\\", "/").rstrip("/")


def inspect(archive: Archive) -> ArchiveInfo:
    """Find the layout, the cuDNN version, the CUDA major and the platform of an archive."""
    files = [m for m in archive.members if not m.is_dir]
    top = _common_top(files)
    rel = [m.name[len(top) + 1:] if top else m.name for m in files]
    if any(r.startswith("bin/") and re.match(r"bin/\d+\.x/", r) for r in rel):
        layout = "cudnn9-installer"
    elif top.rsplit("/", 1)[-1] == "cuda":
        layout = "cuda-folder"
    elif top.endswith("-archive"):
        layout = "linux-archive" if any(r.endswith(".so") or ".so." in r for r in rel) else "archive-folder"
    else:
        layout = "flat"
    header = next((m for m in files if m.name.endswith(("cudnn_version.h",))), None) or next((m for m in files if m.name.endswith("/cudnn.h")), None)
    version = cudnn_header_version(archive.read_text(header, 256 * 1024)) if header is not None else None
    cuda = _ARCHIVE_CUDA.search(f"/{archive.path.name}/" + " ".join(m.name for m in files[:50]))
    cuda_major = int(next(g for g in cuda.groups() if g)) if cuda else _cuda_from_libraries(archive, files)
    os_name = "windows" if any(m.name.lower().endswith(".dll") for m in files) else "linux" if any(".so" in m.name for m in archive.members) else None
    arch = _arch(archive, files, os_name)
    return ArchiveInfo(archive.path, top, layout, version, cuda_major, os_name, arch, archive.members)


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


def _arch(archive: Archive, files: list[Member], os_name: Optional[str]) -> Optional[str]:
    """The machine of the first library, from its header bytes (pefile / pyelftools on the first 64 KB)."""
    import io

    candidate = next((m for m in files if m.name.lower().endswith(".dll") or re.search(r"\.so(\.\d+)*$", m.name)), None)
    if candidate is None or candidate.link:
        return None
    head = archive.read_head(candidate)
    try:
        if head[:2] == b"MZ":
            import pefile

            machine = pefile.PE(data=head, fast_load=True).FILE_HEADER.Machine
            return {0x8664: "x86_64", 0xAA64: "aarch64", 0x14C: "x86"}.get(machine)
        if head[:4] == b"\x7fELF":
            from elftools.elf.elffile import ELFFile

            return {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64"}.get(ELFFile(io.BytesIO(head))["e_machine"])
    except Exception:  # a library too odd to read its header: the platform stays unknown
        return None
    return None


def _cuda_from_libraries(archive: Archive, files: list[Member]) -> Optional[int]:
    """The cuBLAS major the cuDNN ops library names (cublas64_11.dll / libcublas.so.12), read as a stream."""
    ops = next((m for m in files if re.search(r"(?i)cudnn_ops(_infer)?(64_\d+\.dll|\.so\.\d+[.\d]*)$", m.name) and not m.link), None)
    if ops is None:
        return None
    tail = b""
    with archive.open(ops) as stream:
        for block in iter(lambda: stream.read(8 << 20), b""):
            match = _CUBLAS_NAME.search(tail + block)
            if match:
                digits = (match.group(1) or match.group(2)).decode()
                return int(digits[:-1]) if int(digits) >= 20 else int(digits)
            tail = block[-64:]
    return None
