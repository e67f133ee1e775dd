"""Hostile cuDNN archives, built here (nothing hostile is committed), installed through the CLI.

Each must be refused with exit code 2 and one line on stderr, and leave the target and every
file around it exactly as they were: the tree hash of the target's parent folder is compared
before and after, so a write anywhere near the target (through a link, a `..`, a hard link)
fails the test.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import struct
import sys
import tarfile
import warnings
import zipfile
from pathlib import Path
from typing import Callable

import pytest

from cudnn_doctor.cli import main
from tests import archives
from tests.conftest import live_install

WINDOWS = sys.platform == "win32"
LIB = "lib/x64" if WINDOWS else "lib64"  # the toolkit's library folder on this OS
TOP = "cudnn-linux-x86_64-9.1.0.70_cuda12-archive"
HEADER = archives.version_header("9.1.0.70").encode()


def elf(machine: int = 62, size: int = 2048) -> bytes:
    """An ELF64 header pyelftools reads (62 = x86_64, 183 = aarch64), then filler."""
    header = (
        b"\x7fELF"
        + bytes([2, 1, 1, 0])
        + bytes(8)
        + struct.pack("<HHIQQQIHHHHHH", 3, machine, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0)
    )
    return header + os.urandom(size)


def valid() -> list[tuple]:
    """A small but real-looking cuDNN 9 Linux archive, which the hostile members join."""
    return [
        ("file", f"{TOP}/include/cudnn_version.h", HEADER),
        ("file", f"{TOP}/lib/libcudnn.so.9.1.0", elf()),
        ("link", f"{TOP}/lib/libcudnn.so.9", "libcudnn.so.9.1.0"),
    ]


def tar(path: Path, entries: list[tuple], mode: str = "w:xz") -> Path:
    with tarfile.open(path, mode) as archive:
        for kind, name, value in entries:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(value)
                archive.addfile(info, io.BytesIO(value))
                continue
            info.type = {
                "link": tarfile.SYMTYPE,
                "hard": tarfile.LNKTYPE,
                "dir": tarfile.DIRTYPE,
                "chr": tarfile.CHRTYPE,
                "fifo": tarfile.FIFOTYPE,
            }[kind]
            if kind in ("link", "hard"):
                info.linkname = value
            archive.addfile(info)
    return path


def zipped(path: Path, entries: list[tuple]) -> Path:
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        warnings.simplefilter("ignore")  # duplicate names are the point of one case
        for kind, name, value in entries:
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.compress_type = zipfile.ZIP_DEFLATED
            mode = {"file": 0o100644, "link": 0o120777, "fifo": 0o010644}[kind]
            info.external_attr = mode << 16
            archive.writestr(info, value.encode() if isinstance(value, str) else value)
    return path


def truncated(path: Path, build: Callable[[Path], Path]) -> Path:
    whole = build(path.with_name("whole-" + path.name)).read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    return path


def many_members(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for number in range(20_001):
            archive.writestr(f"{TOP}/include/cudnn_{number}.h", b"")
    return path


def zeros(size: int) -> bytes:
    return bytes(size)


WTOP = "cudnn-windows-x86_64-9.1.0.70_cuda12-archive"


def valid_windows() -> list[tuple]:
    """A small but real-looking cuDNN 9 Windows archive (the 9.x installer layout: bin/12.x, include/12.x)."""
    return [
        ("file", f"{WTOP}/include/12.x/cudnn_version.h", HEADER),
        ("file", f"{WTOP}/bin/12.x/cudnn64_9.dll", archives.pe_image()),
    ]


# (case id, builder(path) -> archive, what the one line must say, archive suffix)
# Refused while the archive is read, whatever the OS: these run on Linux and on Windows alike.
CASES: list[tuple[str, Callable[[Path], Path], str, str]] = [
    ("tar-dotdot", lambda p: tar(p, [*valid(), ("file", "../../evil.so", elf())]), "climbs out", ".tar.xz"),
    ("zip-dotdot", lambda p: zipped(p, [*valid(), ("file", f"{TOP}/../../evil.so", elf())]), "climbs out", ".zip"),
    (
        "zip-backslash-dotdot",
        lambda p: zipped(p, [*valid(), ("file", f"{TOP}\\..\\..\\evil.so", elf())]),
        "climbs out",
        ".zip",
    ),
    (
        "tar-absolute",
        lambda p: tar(p, [*valid(), ("file", "/tmp/cudnn-doctor-evil", b"x")]),
        "absolute path",
        ".tar.xz",
    ),
    (
        "zip-absolute",
        lambda p: zipped(p, [*valid(), ("file", "/tmp/cudnn-doctor-evil", b"x")]),
        "absolute path",
        ".zip",
    ),
    (
        "zip-drive-letter",
        lambda p: zipped(p, [*valid(), ("file", "C:/Windows/System32/evil.dll", b"MZ")]),
        "absolute path",
        ".zip",
    ),
    (
        "tar-link-absolute",
        lambda p: tar(p, [*valid(), ("link", f"{TOP}/lib/libcudnn_evil.so", "/etc/passwd")]),
        "absolute target",
        ".tar.xz",
    ),
    (
        "zip-link-absolute",
        lambda p: zipped(p, [*valid(), ("link", f"{TOP}/lib/libcudnn_evil.so", "/etc/passwd")]),
        "absolute target",
        ".zip",
    ),
    (
        "tar-link-leaves-archive",
        lambda p: tar(p, [*valid(), ("link", f"{TOP}/lib/up", "../../../etc")]),
        "points outside the archive",
        ".tar.xz",
    ),
    (
        "tar-write-through-own-link",
        lambda p: tar(p, [*valid(), ("link", f"{TOP}/lib/up", "../.."), ("file", f"{TOP}/lib/up/outside.so", elf())]),
        "written through the link",
        ".tar.xz",
    ),
    (
        "tar-link-chain",
        lambda p: tar(
            p,
            [
                *valid(),
                ("link", f"{TOP}/lib/l1", ".."),
                ("link", f"{TOP}/lib/l1/l2", ".."),
                ("file", f"{TOP}/lib/l1/l2/x.so", elf()),
            ],
        ),
        "written through the link",
        ".tar.xz",
    ),
    (
        "tar-link-dotdot-after-name",
        lambda p: tar(p, [*valid(), ("link", f"{TOP}/lib/x", "libcudnn.so.9/../..")]),
        "'..' after a folder name",
        ".tar.xz",
    ),
    (
        "tar-hardlink-leaves-archive",
        lambda p: tar(p, [*valid(), ("hard", f"{TOP}/lib/libcudnn_h.so.9", "../../etc/passwd")]),
        "names no file",
        ".tar.xz",
    ),
    (
        "tar-hardlink-absolute",
        lambda p: tar(p, [*valid(), ("hard", f"{TOP}/lib/libcudnn_h.so.9", "/etc/passwd")]),
        "names no file",
        ".tar.xz",
    ),
    (
        "tar-hardlink-to-nothing",
        lambda p: tar(p, [*valid(), ("hard", f"{TOP}/lib/libcudnn_h.so.9", f"{TOP}/lib/nothing")]),
        "names no file",
        ".tar.xz",
    ),
    ("tar-char-device", lambda p: tar(p, [*valid(), ("chr", f"{TOP}/lib/null", None)]), "device or FIFO", ".tar.xz"),
    ("tar-fifo", lambda p: tar(p, [*valid(), ("fifo", f"{TOP}/lib/pipe", None)]), "device or FIFO", ".tar.xz"),
    ("zip-fifo", lambda p: zipped(p, [*valid(), ("fifo", f"{TOP}/lib/pipe", b"")]), "FIFO", ".zip"),
    (
        "tar-truncated",
        lambda p: truncated(
            p, lambda q: tar(q, [*valid(), ("file", f"{TOP}/lib/libcudnn_ops.so.9.1.0", os.urandom(200_000))])
        ),
        "truncated",
        ".tar.xz",
    ),
    (
        "zip-truncated",
        lambda p: truncated(
            p, lambda q: zipped(q, [*valid(), ("file", f"{TOP}/lib/libcudnn_ops.so.9.1.0", os.urandom(200_000))])
        ),
        "truncated",
        ".zip",
    ),
    (
        "zip-member-bomb",
        lambda p: zipped(p, [*valid(), ("file", f"{TOP}/lib/libcudnn_ops.so.9.1.0", zeros(48 << 20))]),
        "bomb",
        ".zip",
    ),
    (
        "zip-total-bomb",
        lambda p: zipped(
            p, [*valid(), *[("file", f"{TOP}/lib/libcudnn_part{i}.so.9", zeros(1 << 20)) for i in range(200)]]
        ),
        "bomb",
        ".zip",
    ),
    (
        "tar-gz-bomb",
        lambda p: tar(
            p, [*valid(), *[("file", f"{TOP}/lib/libcudnn_part{i}.so.9", zeros(16 << 20)) for i in range(5)]], "w:gz"
        ),
        "bomb",
        ".tar.gz",
    ),
    (
        "no-cudnn-at-all",
        lambda p: tar(
            p,
            [
                ("file", "openssl-3.0.13/include/openssl/ssl.h", b"#define OPENSSL 1\n"),
                ("file", "openssl-3.0.13/lib/libssl.so.3", elf()),
            ],
        ),
        "it is not a cuDNN archive",  # said from its first members, before it is read (issue 31)
        ".tar.xz",
    ),
    (
        "tar-duplicate-member",
        lambda p: tar(p, [*valid(), ("file", f"{TOP}/lib/libcudnn.so.9.1.0", elf())]),
        "twice",
        ".tar.xz",
    ),
    (
        "zip-duplicate-member",
        lambda p: zipped(p, [*valid(), ("file", f"{TOP}/lib/libcudnn.so.9.1.0", elf())]),
        "twice",
        ".zip",
    ),
    ("too-many-members", many_members, "more than 20,000 members", ".zip"),
    (
        "control-character-name",
        lambda p: tar(p, [*valid(), ("file", f"{TOP}/lib/libcudnn\x1b[2J.so", elf())]),
        "control character",
        ".tar.xz",
    ),
    (
        "windows-stream-name",
        lambda p: zipped(p, [*valid(), ("file", f"{TOP}/include/cudnn.h:hidden", b"x")]),
        "control character or one of",
        ".zip",
    ),
]

# Refused by the plan, for the OS the archive is built for: a Linux archive on Linux, a Windows one on Windows.
LINUX_CASES: list[tuple[str, Callable[[Path], Path], str, str]] = [
    (
        "tar-link-escapes-once-installed",
        lambda p: tar(p, [*valid(), ("link", f"{TOP}/lib/up", "../..")]),
        "outside",
        ".tar.xz",
    ),
    (
        "zip-link-escapes-once-installed",
        lambda p: zipped(p, [*valid(), ("link", f"{TOP}/lib/up", "../..")]),
        "outside",
        ".zip",
    ),
    (
        "so-that-is-not-elf",
        lambda p: tar(p, [*valid(), ("file", f"{TOP}/lib/libcudnn_ops.so.9.1.0", b"#!/bin/sh\nrm -rf ~\n")]),
        "not an ELF",
        ".tar.xz",
    ),
    (
        "aarch64-library",
        lambda p: tar(
            p, [("file", f"{TOP}/include/cudnn_version.h", HEADER), ("file", f"{TOP}/lib/libcudnn.so.9.1.0", elf(183))]
        ),
        "aarch64",
        ".tar.xz",
    ),
    (
        "aarch64-behind-a-link",
        lambda p: tar(
            p,
            [
                ("file", f"{TOP}/include/cudnn_version.h", HEADER),
                ("link", f"{TOP}/lib/libcudnn.so", "libcudnn.so.9.1.0"),
                ("file", f"{TOP}/lib/libcudnn.so.9.1.0", elf(183)),
            ],
        ),
        "aarch64",
        ".tar.xz",
    ),
    (
        "two-members-one-destination",
        lambda p: tar(p, [*valid(), ("file", f"{TOP}/lib64/libcudnn.so.9.1.0", elf())]),
        "would both be installed",
        ".tar.xz",
    ),
    (
        "file-over-a-toolkit-folder",
        lambda p: tar(p, [*valid(), ("file", f"{TOP}/lib/stubs", elf())]),
        "replace the folder",
        ".tar.xz",
    ),
    (
        "dll-in-a-linux-archive",
        lambda p: tar(p, [*valid(), ("file", f"{TOP}/bin/cudnn64_9.dll", b"MZ" + bytes(100))]),
        "windows archive",
        ".tar.xz",
    ),
]
WINDOWS_CASES: list[tuple[str, Callable[[Path], Path], str, str]] = [
    (
        "win-link-escapes-once-installed",
        lambda p: zipped(p, [*valid_windows(), ("link", f"{WTOP}/bin/12.x/up", "../..")]),
        "outside",
        ".zip",
    ),
    (
        "win-link-inside",
        lambda p: zipped(p, [*valid_windows(), ("link", f"{WTOP}/bin/12.x/cudnn.dll", "cudnn64_9.dll")]),
        "no links",
        ".zip",
    ),
    (
        "dll-that-is-not-pe",
        lambda p: zipped(
            p, [*valid_windows(), ("file", f"{WTOP}/bin/12.x/cudnn_ops64_9.dll", b"@echo off\r\ndel /q *\r\n")]
        ),
        "not a PE",
        ".zip",
    ),
    (
        "arm64-dll",
        lambda p: zipped(
            p,
            [
                ("file", f"{WTOP}/include/12.x/cudnn_version.h", HEADER),
                ("file", f"{WTOP}/bin/12.x/cudnn64_9.dll", archives.pe_image(0xAA64)),
            ],
        ),
        "aarch64",
        ".zip",
    ),
    (
        "win-two-members-one-destination",
        lambda p: zipped(p, [*valid_windows(), ("file", f"{WTOP}/bin/cudnn64_9.dll", archives.pe_image())]),
        "would both be installed",
        ".zip",
    ),
    (
        "win-file-over-a-toolkit-folder",
        lambda p: zipped(p, [*valid_windows(), ("file", f"{WTOP}/lib/12.x/x64/stubs", b"x")]),
        "replace the folder",
        ".zip",
    ),
    (
        "so-in-a-windows-archive",
        lambda p: zipped(p, [*valid_windows(), ("file", f"{WTOP}/bin/12.x/libcudnn.so.9", elf())]),
        "no windows library",
        ".zip",
    ),
]


def tree_hash(root: Path) -> str:
    """Every path below root with its type, mode, link target or bytes: any change anywhere changes the hash."""
    digest = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(folder) / name
            info = path.lstat()
            digest.update(
                f"{path.relative_to(root)}\0{stat.S_IFMT(info.st_mode)}\0{stat.S_IMODE(info.st_mode)}\0".encode()
            )
            if path.is_symlink():
                digest.update(os.readlink(path).encode())
            elif path.is_file():
                digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    folder = tmp_path / "state"
    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(folder))
    return folder


def machine(tmp_path: Path) -> tuple[Path, Path]:
    """A folder holding a CUDA toolkit (with lib64/stubs, as every toolkit has) and files beside it an escape would hit."""
    parent = tmp_path / "machine"
    target = archives.toolkit(parent / "cuda-12.6")
    (target / LIB / "stubs").mkdir()
    (target / LIB / "stubs" / "libcuda.so").write_bytes(elf())
    (parent / "etc").mkdir()
    (parent / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (parent / "outside.so").write_bytes(b"the user's own file")
    return parent, target


PLATFORM_CASES = WINDOWS_CASES if WINDOWS else LINUX_CASES


@pytest.mark.live
@pytest.mark.parametrize(
    ("build", "message", "suffix"),
    [case[1:] for case in CASES + PLATFORM_CASES],
    ids=[case[0] for case in CASES + PLATFORM_CASES],
)
def test_hostile_archive_is_refused_and_nothing_changes(tmp_path, capsys, build, message, suffix):
    parent, target = machine(tmp_path)
    (tmp_path / "archives").mkdir()
    archive = build(tmp_path / "archives" / f"hostile{suffix}")
    before = tree_hash(parent)
    code = main(["install", str(archive), "--into", str(target), "--yes"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert tree_hash(parent) == before
    assert not Path("/tmp/cudnn-doctor-evil").exists()


def test_there_are_at_least_thirty_hostile_archives_of_both_kinds():
    assert len(CASES + LINUX_CASES) >= 30 and len(CASES + WINDOWS_CASES) >= 30
    assert {suffix for *_, suffix in CASES} >= {".zip", ".tar.xz", ".tar.gz"}


@pytest.mark.live
@pytest.mark.skipif(WINDOWS, reason="Wine makes no symbolic links (os.symlink succeeds and leaves nothing)")
def test_a_link_in_the_target_that_leads_out_is_never_written_through(tmp_path, capsys):
    """The toolkit's own lib64 is a link to a folder outside it: the archive's libraries would land there."""
    parent, target = machine(tmp_path)
    elsewhere = parent / "elsewhere"
    elsewhere.mkdir()
    (target / "lib64" / "stubs" / "libcuda.so").unlink()
    (target / "lib64" / "stubs").rmdir()
    (target / "lib64").rmdir()
    (target / "lib64").symlink_to(elsewhere)
    archive = tar(tmp_path / "cudnn.tar.xz", valid())
    before = tree_hash(parent)
    assert main(["install", str(archive), "--into", str(target), "--yes"]) == 2
    assert "outside" in capsys.readouterr().err
    assert tree_hash(parent) == before


@pytest.mark.live
@live_install
def test_a_hard_link_is_installed_as_a_copy_of_the_file_it_names(tmp_path):
    _, target = machine(tmp_path)
    if WINDOWS:
        library, base, original, copy = (
            archives.pe_image(),
            valid_windows(),
            f"{WTOP}/bin/12.x/cudnn_ops64_9.dll",
            target / "bin" / "cudnn_ops64_9b.dll",
        )
        hard = f"{WTOP}/bin/12.x/cudnn_ops64_9b.dll"
    else:
        library, base, original, copy = (
            elf(),
            valid(),
            f"{TOP}/lib/libcudnn_ops.so.9.1.0",
            target / "lib64" / "libcudnn_ops.so.9",
        )
        hard = f"{TOP}/lib/libcudnn_ops.so.9"
    archive = tar(tmp_path / "cudnn.tar.xz", [*base, ("file", original, library), ("hard", hard, original)])
    assert main(["install", str(archive), "--into", str(target), "--yes"]) in (0, 1)
    assert not copy.is_symlink() and copy.read_bytes() == library


@pytest.mark.live
@pytest.mark.skipif(WINDOWS, reason="a Windows install refuses links (the win-link-inside case)")
def test_links_that_stay_inside_once_installed_are_kept(tmp_path):
    """NVIDIA's own chains (libcudnn.so -> libcudnn.so.9 -> libcudnn.so.9.1.0) and a climb that stays in the toolkit."""
    _, target = machine(tmp_path)
    archive = tar(
        tmp_path / "cudnn.tar.xz",
        [
            *valid(),
            ("link", f"{TOP}/lib/libcudnn.so", "libcudnn.so.9"),
            ("link", f"{TOP}/lib/cudnn_version.h", "../include/cudnn_version.h"),
        ],
    )
    assert main(["install", str(archive), "--into", str(target), "--yes"]) in (0, 1)
    assert os.readlink(target / "lib64" / "libcudnn.so") == "libcudnn.so.9"
    assert (target / "lib64" / "cudnn_version.h").read_bytes() == HEADER
