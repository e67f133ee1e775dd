"""The state folder's lock file: one install or rollback at a time on this machine (`LiveSystem.lock`).

POSIX uses `filelock` (flock). On Windows the lock is taken here with `msvcrt.locking` on the
file's first byte: filelock tells "held by another process" from a real failure by the errno
(EACCES), and Wine's C runtime reports a held lock with errno 0, so there filelock raised a bare
"[Errno 0] Error" that the install turned into "cannot write ...\\lock" instead of "busy". Here any
refusal of the lock itself, after the file opened, means another holder.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

from cudnn_doctor.errors import Busy


def _busy(path: str) -> Busy:
    return Busy(f"another cudnn-doctor install or rollback is running (it holds {path}); wait for it to finish")


@contextmanager
def hold(path: str) -> Iterator[None]:
    """Hold the lock file `path` while the block runs; `Busy` at once when another process holds it.
    An OSError means the file itself cannot be opened or created (the caller names the folder)."""
    if sys.platform != "win32":
        with _hold_posix(path):
            yield
        return
    import msvcrt

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # from the file's start: one byte, as every holder does
        except OSError:
            raise _busy(path) from None
        try:
            yield
        finally:
            os.lseek(fd, 0, os.SEEK_SET)  # unlocking takes the same byte, from the same position
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    finally:
        os.close(fd)


@contextmanager
def _hold_posix(path: str) -> Iterator[None]:
    import filelock

    held = filelock.FileLock(path, timeout=0)
    try:
        held.acquire()
    except filelock.Timeout:
        raise _busy(path) from None
    try:
        yield
    finally:
        held.release()
