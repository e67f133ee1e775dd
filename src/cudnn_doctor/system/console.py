"""The standard streams of this process at the level of file descriptors: a closed one is opened on the null device,
and a stream whose writes fail is pointed there, so the command ends with its own exit code and no traceback."""

from __future__ import annotations

import os
from typing import IO


def reopen_closed_descriptors() -> None:
    """A closed descriptor 0, 1 or 2 is opened on the null device: otherwise the next file opened takes its number,
    and what this process (or a program it starts) writes to stdout or stderr would land in that file."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            except OSError:
                continue
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def null_stream(mode: str) -> IO[str]:
    """The null device as a text stream (the caller closes it): a missing stdin reads nothing, stdout writes nowhere."""
    return open(os.devnull, mode, encoding="utf-8")


def discard(stream: object) -> None:
    """Point a stream's descriptor at the null device, so that the interpreter's own flush at exit has nowhere to
    fail."""
    inner = getattr(stream, "stream", stream)
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, inner.fileno())  # type: ignore[attr-defined]
        finally:
            os.close(null)
    except (OSError, ValueError, AttributeError):  # not a real file (tests capture it): nothing left to flush
        pass


def no_color() -> bool:
    """Whether the user asked every program for plain text (https://no-color.org)."""
    return "NO_COLOR" in os.environ
