"""Opening files that are regular files, and reading them with a bound.

A FIFO named `nvcc` on PATH blocks `open()` until someone writes to it, and `/dev/zero` never
ends, so the doctor opens without blocking (O_NONBLOCK) and checks what it opened (fstat), not
what a path looked like a moment earlier: only a regular file is read, and never past a limit.
The code lives with the reader of untrusted files (`cudnn_doctor.system.untrusted`), which the knowledge
layer uses too; the live system imports it from here.
"""

from __future__ import annotations

from cudnn_doctor.system.untrusted import NotRegularFile, open_regular, read_regular

__all__ = ["NotRegularFile", "open_regular", "read_regular"]
