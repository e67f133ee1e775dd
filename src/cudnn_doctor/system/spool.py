"""The spool: the folder an install reads the archive into, on the target's file system, so that each file is
renamed into place; noted in the state folder first, so that a killed run's is removed by the next install or
rollback."""

from __future__ import annotations

import os
import shutil
import uuid

SPOOL_PREFIX = ".cudnn-doctor-spool-"


def new_spool(root: str) -> tuple[str, bytes]:
    """A fresh spool folder's name in `root` and the bytes that note it (its name's own bytes, a line)."""
    folder = os.path.join(root, f"{SPOOL_PREFIX}{uuid.uuid4().hex[:12]}")
    return folder, os.fsencode(folder) + b"\n"


def spool_of_note(data: bytes) -> str:
    """The folder a spool note names (a newline or a byte that is not UTF-8 may be part of its name)."""
    return os.fsdecode(data[:-1] if data.endswith(b"\n") else data)


def make_spool(folder: str) -> bool:
    """Create the spool folder, private to this user; False when `root` cannot be written (not yours without sudo)."""
    try:
        os.mkdir(folder, 0o700)
    except OSError:
        return False
    return True


def remove_spool(folder: str) -> None:
    """Remove a spool folder and the numbered files in it; only a folder of that name, never anything else."""
    if (
        os.path.basename(folder.rstrip("/\\")).startswith(SPOOL_PREFIX)
        and os.path.isdir(folder)
        and not os.path.islink(folder)
    ):
        shutil.rmtree(folder, ignore_errors=True)


def fsync(path: str) -> None:
    """A spooled file's bytes on the disk before the journal says it is staged."""
    descriptor = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
