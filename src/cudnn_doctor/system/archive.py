"""Reading a cuDNN archive (.zip, .tar.xz, .tar.gz or an extracted folder) without extracting it blindly.

Every member is judged before anything is written, the way `tarfile`'s `data` filter does:
absolute paths, drive letters, `..` components, names no file system takes, duplicates,
members below a link of the same archive, links that leave the archive or climb with `..`
after a folder name, hard links to anything but a file of the archive, devices and FIFOs,
too many members, and archives whose size or compression ratio is absurd (bombs) or that are
truncated or hold no cuDNN file at all. Where a link lands once installed is judged by the plan; what the archive
holds (release, CUDA major, OS, architecture, layout) is read by archive_info.py.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import lzma
import os
import posixpath
import shutil
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, ContextManager, Iterator, Optional

from cudnn_doctor import knowledge
from cudnn_doctor.errors import InputError
from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record
from cudnn_doctor.system.sink import Sink

# Limits, calibrated on NVIDIA's real archives and wheels (tests/unit/install/test_install_wheels.py reads them): a
# cuDNN release expands to 1-3 GB (nvidia-cudnn-cu12 9.1.0.70: 1.0 GB from 665 MB, 31 members), its largest member
# is under 1 GB, and its most compressible one expands about 100x (libcudnn.so.9 of nvidia-cudnn-cu13 9.26.0.51 for
# aarch64: 99.8x), the archive as a whole 1.5-10x. Bombs are judged by absolute sizes first, then by ratios far beyond
# those.
MAX_TOTAL_BYTES = 16 * 1024**3  # what a whole archive may expand to
MAX_MEMBER_BYTES = 4 * 1024**3  # what one member may expand to
MAX_RATIO = 500  # a member's expansion over its compressed size (NVIDIA's worst: ~100x)
MAX_ARCHIVE_RATIO = 200  # the whole archive's expansion over its size on disk (NVIDIA's: 1.5-10x)
RATIO_FLOOR = 1 << 20  # below this a member (or 64x this, an archive) is too small to be judged by its ratio
MAX_MEMBERS = 20_000  # a cuDNN release has about 100 files
SPOOL_MARGIN = 16 << 20  # what the journal and the file system's rounding need beside the spooled files
_DISK_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
_DRIVE = regex(r"^[A-Za-z]:")
_UNUSABLE = regex(r'[\x00-\x1f<>:"|?*]')  # control characters and what Windows refuses in a name
CUDNN_FILE = regex(r"(?i)(^|/)(lib)?cudnn[^/]*\.(h|dll|lib|a|so(\.\d+)*)$")
LIBRARY_NAME = regex(r"(?i)\.(dll|so(\.\d+)*)$")
INSTALLER_CUDA = regex(r"^bin/(\d+)\.x/")  # the cuDNN 9 installer's per-CUDA folders: bin/12.x/
CUBLAS_NAME = regex(rb"cublas(?:Lt)?64_(\d+)\.dll|libcublas(?:Lt)?\.so\.(\d+)")
OPS_NAME = regex(r"(?i)cudnn_ops(_infer)?(64_\d+\.dll|\.so\.\d+[.\d]*)$")
_HEAD = 1 << 16  # a library's first bytes: its headers (ELF, PE)
_HEADER_HEAD = 256 * 1024  # a C header: where its version is
BLOCK = 4 << 20
_BUFFER = 1 << 20


@dataclass(frozen=True)
class Member:
    """One entry of the archive, by its normalized relative path."""

    name: str  # posix-style, relative, no top folder removed
    size: int
    compressed: int
    link: Optional[str] = None  # symbolic link target, relative to the link's folder
    is_dir: bool = False
    hardlink: Optional[str] = None  # tar hard link: the name of the archive file whose bytes this is

    @property
    def is_file(self) -> bool:
        return not self.is_dir and self.link is None


@dataclass(frozen=True)
class ArchiveInfo:
    """What the archive is: its layout, release, CUDA major and platform."""

    path: Path
    top: str  # the top folder every member lives under ("" when none)
    layout: str  # cuda-folder | archive-folder | cudnn9-installer | linux-archive | wheel | flat
    version: Optional[str]
    cuda_major: Optional[int]
    os: Optional[str]  # windows | linux
    arch: Optional[str]  # x86_64 | aarch64
    members: tuple[Member, ...]


class Archive:
    """A uniform, validated view of a zip, a tar or a folder, read in one pass.

    A tar is read as a stream (one decompression: by `opener`, the CLI's `xz -d`, or by Python)
    and a zip member by member, each member once: its SHA-256, its first bytes (what the plan reads: a header's
    version, a
    library's machine) and, where the archive's name does not say the CUDA major, the cuBLAS
    name the ops library asks for are taken on the way. With `spool` (a folder, best on the
    target's file system), each file's bytes are also written there under a numbered name, so
    the install renames them into place instead of decompressing the archive again; names
    from the archive never become paths before they are judged. The byte and count limits
    are checked as each member's header is read, so a bomb stops before it fills the disk.
    """

    def __init__(self, path: Path, spool: Optional[str] = None, opener: Optional[Opener] = None) -> None:
        if not path.exists():
            raise InputError(f"no such archive: {path}")
        self.path = path
        self.kind = "folder"
        self._spool = spool
        self._opener = opener
        self._facts: dict[str, _Facts] = {}  # regular files by name: digest, head, spooled copy
        self._cublas: Optional[bytes] = None
        self._total = 0
        self._spool_free = _free_bytes(spool) if spool is not None else None
        try:
            if path.is_dir():
                self._members = self._folder_members()
                self._packed = None
            elif not path.is_file():
                raise InputError(f"{path.name} is not a regular file (a device or FIFO?)")
            elif zipfile.is_zipfile(path):
                if tarfile.is_tarfile(
                    path
                ):  # a polyglot: which files it installs would depend on the reader that looked first
                    raise InputError(
                        f"{path.name} is both a valid zip and a valid tar archive, so what it holds depends on "
                        f"the program that reads it;"
                        " refused: unpack it with the tool its source names and repack it as one kind"
                    )
                self.kind = "zip"
                self._zip = zipfile.ZipFile(path)
                infos = self._zip.infolist()
                self._check_count(len(infos))
                self._zip_names = {clean_name(i.filename): i for i in infos}
                self._members = self._zip_members(infos)
                self._packed = sum(i.compress_size for i in infos)
                self._validate()  # a zip says everything before its data: judged before a byte is read
                self._read_zip_data()
            elif tarfile.is_tarfile(path):
                self.kind = "tar"
                self._packed = path.stat().st_size
                self._members = self._read_tar()
            else:
                raise InputError(f"{path.name} is not a .zip, .tar.xz or .tar.gz archive (or it is truncated)")
        except (
            zipfile.BadZipFile,
            tarfile.TarError,
            EOFError,
            lzma.LZMAError,
            zlib.error,
            UnicodeDecodeError,
        ) as error:
            raise InputError(f"{path.name} is corrupt or truncated: {error}") from None
        except OSError as error:
            if spool is not None and (error.errno in _DISK_FULL or str(error.filename or "").startswith(spool)):
                raise InputError(
                    f"cannot write the archive's files in {spool} ({error.strerror or error}): free some space "
                    f"there; nothing was changed"
                ) from None
            raise InputError(f"{path.name} is corrupt or truncated: {error}") from None
        self._by_name = {m.name: m for m in self._members}
        if self.kind != "zip":
            self._validate()

    @property
    def members(self) -> tuple[Member, ...]:
        return self._members

    def _check_count(self, count: int) -> None:
        if count > MAX_MEMBERS:
            raise InputError(
                f"{self.path.name}: refusing an archive of more than {MAX_MEMBERS:,} members (a cuDNN release has "
                f"about 100)"
            )

    def _check_growth(self, name: str, size: int) -> None:
        """The running total of a tar's sizes, judged before the member's bytes are read."""
        self._total += size
        if self._total > MAX_TOTAL_BYTES:
            raise self._refuse(f"an archive that expands to more than {MAX_TOTAL_BYTES / 1024**3:.0f} GB")
        if self._spool_free is not None and self._total + SPOOL_MARGIN > self._spool_free:
            raise InputError(
                f"the new files need more than {self._total / 1024**2:,.0f} MB in {self._spool}, which has "
                f"{self._spool_free / 1024**2:,.0f} MB free: "
                "free some space; nothing was changed"
            )
        if size > MAX_MEMBER_BYTES:
            raise self._refuse(f"{name!r}: a member of {size / 1024**3:,.1f} GB (no cuDNN file is larger than 1 GB)")
        packed = max(self._packed or 0, 1)
        if self._total > 64 * RATIO_FLOOR and self._total > MAX_ARCHIVE_RATIO * packed:
            raise self._refuse(
                f"an archive that expands more than {MAX_ARCHIVE_RATIO}x, to {self._total / 1024**2:,.0f} MB at "
                f"{name!r} (an archive bomb?)"
            )

    def _read_tar(self) -> tuple[Member, ...]:
        """Every member in one streaming pass: headers judged for count and size, files read once."""
        members: list[Member] = []
        regular: dict[str, int] = {}
        with _tar_stream(self.path, self._opener) as tar:
            for info in tar:  # counted while reading, so a million members stop early
                self._check_count(len(members) + 1)
                name = clean_name(info.name)
                if info.issym():
                    members.append(Member(name, 0, 0, link=info.linkname))
                elif info.islnk():  # a hard link names another member (an earlier one, in a tar) by its path
                    source = clean_name(info.linkname)
                    if source not in regular or source == name:
                        raise InputError(
                            f"{self.path.name}: refusing hard link {name!r} → {info.linkname!r} (it names no file "
                            f"of the archive)"
                        )
                    members.append(Member(name, regular[source], 0, hardlink=source))
                elif info.isdir():
                    members.append(Member(name, 0, 0, is_dir=True))
                elif info.isfile():
                    self._check_growth(name, info.size)
                    members.append(Member(name, info.size, info.size))
                    regular[name] = info.size
                    stream = tar.extractfile(info)
                    if stream is None:
                        raise InputError(f"{self.path.name}: cannot read {name}")
                    self._take(name, info.size, stream, len(members))
                else:
                    raise InputError(f"{self.path.name}: {info.name!r} is a device or FIFO, not a file")
        return tuple(members)

    def _read_zip_data(self) -> None:
        for index, member in enumerate(self._members):
            if member.is_file:
                with self._zip.open(self._zip_names[member.name]) as stream:
                    self._take(member.name, member.size, stream, index + 1)

    def _take(self, name: str, size: int, stream: IO[bytes], number: int) -> None:
        """Read one member's bytes once: hash them, keep the first bytes, look for the cuBLAS name, spool them.

        A big member is hashed and written by a second thread while this one waits for the next bytes
        from the decompressor (each of the three lets go of the GIL), as `tar -xf` and `xz -d` run side by side."""
        keep = _HEADER_HEAD if name.endswith(".h") else _HEAD
        head = b""
        spooled = os.path.join(self._spool, f"{number:05d}") if self._spool is not None else None
        look = (
            self._cublas is None
            and OPS_NAME.search(name) is not None
            and cuda_from_names(self.path.name, name.split("/")[0], []) is None
        )
        tail = b""
        written = 0
        with (
            open(spooled, "wb") if spooled else contextlib.nullcontext() as out,
            Sink(out, threaded=size > 2 * BLOCK) as sink,
        ):
            for block in iter(lambda: stream.read(BLOCK), b""):
                if len(head) < keep:
                    head += block[: keep - len(head)]
                if look:
                    found = CUBLAS_NAME.search(tail + block)
                    if found:
                        self._cublas, look = found.group(0), False
                    tail = block[-64:]
                sink.put(block)
                written += len(block)
        if written != size:
            raise InputError(f"{self.path.name} is corrupt or truncated at {name}: {written} of {size} bytes")
        self._facts[name] = _Facts(sink.digest.hexdigest(), head, spooled)

    def _zip_members(self, infos: list[zipfile.ZipInfo]) -> tuple[Member, ...]:
        members = []
        for info in infos:
            mode = (info.external_attr >> 16) & 0o170000
            if mode == 0o120000:  # a symbolic link stored in a zip: its target is the data
                target = self._zip.read(info)[:4096].decode("utf-8", "replace")
                members.append(Member(clean_name(info.filename), 0, info.compress_size, link=target))
            elif mode not in (0, 0o100000, 0o040000):
                raise InputError(f"{self.path.name}: {info.filename!r} is a device, FIFO or socket, not a file")
            else:
                members.append(
                    Member(clean_name(info.filename), info.file_size, info.compress_size, is_dir=info.is_dir())
                )
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
                    self._check_count(len(members))
        return tuple(members)

    def _refuse(self, message: str) -> InputError:
        return InputError(f"{self.path.name}: refusing {message}")

    def _validate(self) -> None:
        links = {m.name for m in self._members if m.link is not None}
        seen: set[str] = set()
        total = 0
        for member in self._members:
            name = member.name
            if not name or name.startswith("/") or _DRIVE.match(name):
                raise self._refuse(f"member with an absolute path: {name!r}")
            parts = name.split("/")
            if ".." in parts:
                raise self._refuse(f"member that climbs out of the archive: {name!r}")
            if _UNUSABLE.search(name):
                raise self._refuse(f'member {name!r}: its name has a control character or one of <>:"|?*')
            if name in seen:
                raise self._refuse(f"an archive that holds {name!r} twice")
            seen.add(name)
            below = next(("/".join(parts[:i]) for i in range(1, len(parts)) if "/".join(parts[:i]) in links), None)
            if below is not None:
                raise self._refuse(f"{name!r}: it would be written through the link {below!r} of the same archive")
            if member.link is not None:
                problem = link_problem(member.link)
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), member.link.replace("\\", "/")))
                if problem is None and (resolved.startswith("../") or resolved == ".."):
                    problem = "points outside the archive"
                if problem is not None:
                    raise self._refuse(f"link {name!r} → {member.link!r} ({problem})")
            if member.is_file and member.hardlink is None:
                total += member.size
                if member.size > MAX_MEMBER_BYTES:
                    raise self._refuse(
                        f"{name!r}: a member of {member.size / 1024**3:,.1f} GB (no cuDNN file is larger than 1 GB)"
                    )
                if (
                    member.size > RATIO_FLOOR
                    and member.size > MAX_RATIO * max(member.compressed, 1)
                    and self.kind == "zip"
                ):
                    raise self._refuse(
                        f"{name!r}: it expands {member.size // max(member.compressed, 1)}x (a zip bomb?)"
                    )
        if total > MAX_TOTAL_BYTES:
            raise self._refuse(f"an archive that expands to {total / 1024**3:.0f} GB")
        if self._packed is not None and total > 64 * RATIO_FLOOR and total > MAX_ARCHIVE_RATIO * max(self._packed, 1):
            raise self._refuse(
                f"an archive that expands {total // max(self._packed, 1)}x, to {total / 1024**2:,.0f} MB (an "
                f"archive bomb?)"
            )
        if not any(CUDNN_FILE.search(m.name) for m in self._members if m.is_file):
            raise InputError(f"{self.path.name} holds no cuDNN library or header: it is not a cuDNN archive")

    def _source(self, member: Member) -> Member:
        return self._by_name[member.hardlink] if member.hardlink is not None else member

    def digest(self, member: Member) -> str:
        """The member's SHA-256 (hex), from the pass that read it; a folder's file is hashed when asked."""
        facts = self._facts.get(self._source(member).name)
        if facts is not None:
            return facts.digest
        digest = hashlib.sha256()
        with self.open(member) as stream:
            for block in iter(lambda: stream.read(BLOCK), b""):
                digest.update(block)
        return digest.hexdigest()

    def spooled(self, member: Member) -> Optional[str]:
        """The spool file holding the member's bytes, or None when the archive was not spooled."""
        facts = self._facts.get(self._source(member).name)
        return facts.spooled if facts is not None else None

    def sharers(self, member: Member) -> int:
        """How many file members (the file and its hard links) take their bytes from the same spool file."""
        source = self._source(member).name
        return sum(1 for m in self._members if m.is_file and self._source(m).name == source)

    def open(self, member: Member) -> IO[bytes]:
        """A stream of the member's bytes (a hard link's are those of the file it names)."""
        member = self._source(member)
        spooled = self.spooled(member)
        try:
            if spooled is not None and os.path.exists(spooled):
                return open(spooled, "rb")
            if self.kind == "zip":
                return self._zip.open(self._zip_names[member.name])
            if self.kind == "tar":
                return self._random_access(member)
            return open(self.path / member.name, "rb")
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, lzma.LZMAError, zlib.error) as error:
            raise InputError(f"{self.path.name} is corrupt or truncated at {member.name}: {error}") from None

    def _random_access(self, member: Member) -> IO[bytes]:
        """A tar member's bytes again, when they were not spooled: the archive is decompressed up to it once more."""
        if getattr(self, "_tar", None) is None:
            self._tar = tarfile.open(self.path)  # noqa: SIM115 - closed by Archive.close()
            self._tar_infos = {clean_name(m.name): m for m in self._tar.getmembers()}
        stream = self._tar.extractfile(self._tar_infos[member.name])
        if stream is None:
            raise InputError(f"{self.path.name}: cannot read {member.name}")
        return stream

    def read_text(self, member: Member, limit: int = 1 << 20) -> str:
        return self.read_head(member, limit).decode("utf-8", "replace")

    def read_head(self, member: Member, limit: int = 1 << 16) -> bytes:
        facts = self._facts.get(self._source(member).name)
        if facts is not None and (len(facts.head) >= limit or len(facts.head) == self._source(member).size):
            return facts.head[:limit]
        with self.open(member) as stream:
            return stream.read(limit)

    def cublas_name(self) -> Optional[bytes]:
        """The cuBLAS library name the ops library asks for, when the pass looked for it."""
        return self._cublas

    def close(self) -> None:
        for attribute in ("_zip", "_tar"):
            handle = getattr(self, attribute, None)
            if handle is not None:
                handle.close()


class _Facts(Record):
    digest: str
    head: bytes
    spooled: Optional[str]


Opener = Callable[[Path], ContextManager[Optional[IO[bytes]]]]  # the decompressed bytes of an .xz file, or None


@contextlib.contextmanager
def _tar_stream(path: Path, opener: Optional[Opener]) -> Iterator[tarfile.TarFile]:
    """The tar read as a stream. An .xz one is decompressed by `opener` where it gives a stream (the CLI's runs
    `xz -d` in another process, as `tar -xf` does, beside the hashing and writing done here), else by Python."""
    with contextlib.ExitStack() as stack:
        raw = stack.enter_context(opener(path)) if opener is not None and _is_xz(path) else None
        if raw is not None:
            with tarfile.open(fileobj=raw, mode="r|", bufsize=_BUFFER) as tar:
                yield tar
            return
        with tarfile.open(path, "r|*", bufsize=_BUFFER) as tar:
            yield tar


def _free_bytes(folder: str) -> Optional[int]:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def _is_xz(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(6) == b"\xfd7zXZ\x00"


def link_problem(target: str) -> Optional[str]:
    """Why a link target is unsafe wherever it lands, or None: absolute, or `..` after a folder name
    (`sub/../..` climbs from wherever `sub` points, not from where it stands)."""
    text = target.replace("\\", "/")
    if not text or text.startswith("/") or _DRIVE.match(text) or "\x00" in text:
        return "absolute target"
    named = False
    for part in text.split("/"):
        if part == "..":
            if named:
                return "a '..' after a folder name"
        elif part not in ("", "."):
            named = True
    return None


def clean_name(name: str) -> str:
    return name.replace("\\", "/").rstrip("/")


def cuda_from_names(file_name: str, top: str, rel: list[str]) -> Optional[int]:
    """The CUDA major NVIDIA's name of the archive or of its top folder says (knowledge's `archives` patterns),
    or the installer layout's bin/12.x/ folder."""
    for name in (file_name, top.rsplit("/", 1)[-1]):
        parsed = knowledge.parse_cudnn_archive_name(name) if name else None
        if parsed is not None:
            return parsed.cuda_major
    installer = next((found for found in map(INSTALLER_CUDA.search, rel) if found), None)
    return int(installer.group(1)) if installer else None
