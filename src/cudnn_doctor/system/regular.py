"""Opening files that are regular files, and reading them with a bound.

A FIFO named `nvcc` on PATH blocks `open()` until someone writes to it, and `/dev/zero` never
ends, so the doctor opens without blocking (O_NONBLOCK) and checks what it opened (fstat), not
what a path looked like a moment earlier: only a regular file is read, and never past a limit.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


class NotRegularFile(OSError):
    """The path is a folder, FIFO, socket or device: nothing the doctor reads."""


def open_regular(path: str) -> BinaryIO:
    """The file at `path` opened for reading; NotRegularFile (an OSError) for anything but a regular file."""
    fd = os.open(path, _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", path)
        if getattr(os, "O_NONBLOCK", 0) and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int) -> bytes:
    """At most `limit` bytes from the start of a regular file."""
    with open_regular(path) as handle:
        return handle.read(limit)
