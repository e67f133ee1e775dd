"""The installer's file primitives, through a System: identities, copies, the one containment rule, files in use,
and the one-line messages for what the operating system refuses."""

from __future__ import annotations

import errno
import hashlib
from typing import Any, Optional, Sequence

from cudnn_doctor.errors import CudnnDoctorError, InputError
from cudnn_doctor.install.plan import sha256_of
from cudnn_doctor.system.interface import System

TEMP_SUFFIX = ".cudnn-doctor-tmp"
# a history entry whose rollback started and has not finished: `rollback` finishes it
UNFINISHED = "rollback-unfinished"
BLOCK = 4 << 20
SPACE_MARGIN = 16 << 20  # the journal, the history and the file system's own rounding


class InstallFailed(CudnnDoctorError):
    """The install failed and what it did was undone."""

    exit_code = 1


class FileInUse(CudnnDoctorError):
    """Files another program holds (a DLL loaded by Jupyter or an IDE): Windows will not replace or delete them."""

    exit_code = 2

    def __init__(self, held: Sequence[tuple[str, Sequence[str]]], doing: str, again: str) -> None:
        self.held = [(path, list(programs)) for path, programs in held]
        super().__init__(in_use_message(self.held, doing, again))


def in_use_message(held: Sequence[tuple[str, Sequence[str]]], doing: str, again: str) -> str:
    """One line: which files, which programs hold them (or that Windows did not say), and what to do."""
    files = ", ".join(path for path, _ in held[:5]) + (f" (and {len(held) - 5} more)" if len(held) > 5 else "")
    programs = list(dict.fromkeys(p for _, found in held for p in found))
    verb = "is" if len(held) == 1 else "are"
    if programs:
        who = (
            f"{verb} in use by {', '.join(programs[:5])}: close {'it' if len(programs) == 1 else 'them'} (or "
            f"restart the Jupyter kernel)"
        )
    else:
        who = (
            f"{verb} in use by a running program (Windows did not say which): close the Python, Jupyter and IDE "
            f"processes using {'it' if len(held) == 1 else 'them'}"
        )
    return f"cannot {doing}: {files} {who}, then {again}"


def held_files(system: System, paths: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The files among `paths` that another program holds, each with the programs Windows names."""
    found = []
    for path in paths:
        programs = system.in_use(path)
        if programs is not None:
            found.append((path, programs))
    return found


def held_by(system: System, path: str, error: BaseException) -> Optional[list[str]]:
    """The programs holding `path`, when `error` (a refused rename onto it, or its delete) is Windows refusing a
    file in use, not a missing right; None otherwise. The staged file was written in the same folder, so the
    folder is writable; what tells a held file from a read-only or locked-down one is that it cannot be
    opened for writing even sharing everything (ERROR_SHARING_VIOLATION), which `System.in_use` asks."""
    if system.os != "windows" or not isinstance(error, OSError):
        return None
    winerror = getattr(error, "winerror", None)
    if not isinstance(error, PermissionError) and winerror not in (5, 32, 33):
        return None
    programs = system.in_use(path)
    if programs is None and winerror in (32, 33):  # the rename itself said "sharing violation"
        return []
    return programs


def identity(system: System, path: str) -> Optional[str]:
    """What is at `path`: "sha256:…" for a file, "link:…" for a symbolic link, "folder", or None."""
    link = system.link_target(path)
    if link is not None:
        return f"link:{link}"
    info = system.stat(path)
    if info is None:
        return None
    if info.is_dir:
        return "folder"
    return f"sha256:{sha256_of(system.open_read(path))}"


# The one containment rule ------------------------------------------------------------------


class OutsideTarget(InputError):
    """A write whose folder leads, through a link, out of the folder its step may change."""


def check_inside(system: System, path: str, root: Optional[str], doing: str = "write") -> None:
    """The rule every write of install, fix, rollback and recovery follows: the real path of `path`'s folder,
    resolved now (immediately before the write), lies inside `root`, itself a real path resolved when the
    transaction began. None: no root was recorded (a history written before the rule), nothing to check."""
    if root is None:
        return
    folder = system.realpath(system.paths.dirname(path))
    if not system.paths.inside(folder, root):
        raise OutsideTarget(f"refusing to {doing} {path}: its folder leads to {folder}, outside {root}")


def on_the_way(system: System, folder: str, root: Optional[str]) -> bool:
    """A folder the transaction made on the way to its writes: still inside `root`, or one of the folders above it
    (an --into target or a quarantine made whole), never one a link now leads elsewhere."""
    if root is None:
        return True
    real, rules = system.realpath(folder), system.paths
    return rules.inside(real, root) or rules.inside(root, real)


# File helpers ----------------------------------------------------------------------------


def copy_file(system: System, source: str, target: str) -> Optional[str]:
    """A byte-for-byte copy, or the same link; returns the identity of what was copied."""
    discard(system, target)
    link = system.link_target(source)
    if link is not None:
        system.symlink(link, target)
        return f"link:{link}"
    digest = hashlib.sha256()
    with system.open_read(source) as reader, system.open_write(target) as writer:
        for block in iter(lambda: reader.read(BLOCK), b""):
            digest.update(block)
            writer.write(block)
    return f"sha256:{digest.hexdigest()}"


def size_of(path: Any) -> Optional[int]:
    """The size of an archive file on this host (None for an extracted folder)."""
    try:
        return int(path.stat().st_size) if path.is_file() else None
    except OSError:
        return None


def present(system: System, path: str) -> bool:
    """A file or a link (even one that dangles) is at path."""
    return system.link_target(path) is not None or system.stat(path) is not None


def discard(system: System, path: str) -> None:
    if present(system, path):
        system.remove(path)


def permission_message(error: OSError, os_name: str) -> str:
    path = str(error.filename2 or error.filename or "a file")  # a rename names its target second
    if path.endswith(TEMP_SUFFIX):
        path = path[: -len(TEMP_SUFFIX)]
    if getattr(error, "winerror", None) == 32:
        return f"{path} is in use by a running program: close Python, Jupyter and the IDE, then run the install again"
    if error.errno == errno.EROFS:
        return f"{path} is on a read-only file system"
    if os_name == "windows":
        return (
            f"permission denied writing {path}: run the install again from an elevated terminal (Run as administrator)"
        )
    return f"permission denied writing {path}: run the install again with sudo"


def move_file(system: System, source: str, dest: str, expected: Optional[str]) -> None:
    """A rename; across file systems (EXDEV), a copy checked against `expected`, put in place, then the source
    deleted."""
    try:
        system.replace(source, dest)
        return
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
    temp = dest + TEMP_SUFFIX
    if copy_file(system, source, temp) != expected:
        discard(system, temp)
        raise InstallFailed(f"{source} changed while it was being moved to {dest}")
    system.replace(temp, dest)
    system.remove(source)
