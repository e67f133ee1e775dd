"""`xz -dc` in another process: an .xz archive decompressed beside the hashing and writing of its members."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import IO, Iterator, Optional


@contextlib.contextmanager
def xz_stream(path: Path) -> Iterator[Optional[IO[bytes]]]:
    """The decompressed bytes of an .xz file from `xz -dc` in another process, as `tar -xf` reads them, so that
    decompressing runs beside the hashing and writing; None where there is no xz (Python's lzma then does it).
    A failure of xz (a truncated or corrupt file) is a tarfile.ReadError once the stream is read."""
    xz = shutil.which("xz")
    if xz is None:
        yield None
        return
    process = subprocess.Popen(
        [xz, "-dc", "--", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    assert process.stdout is not None and process.stderr is not None
    _widen_pipe(process.stdout.fileno())
    try:
        yield process.stdout
        while process.stdout.read(1 << 20):  # the zero blocks after the end-of-archive marker
            pass
        if process.wait() != 0:
            why = process.stderr.read(4096).decode("utf-8", "replace").strip().splitlines()
            raise tarfile.ReadError(f"xz: {why[-1] if why else 'failed'}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


def _widen_pipe(descriptor: int) -> None:
    """A 1 MB pipe instead of 64 KB (Linux): xz keeps decompressing while a block is hashed and written."""
    try:
        import fcntl

        if sys.version_info >= (3, 10):  # F_SETPIPE_SZ is Python 3.10's (before it: AttributeError, as on macOS)
            fcntl.fcntl(descriptor, fcntl.F_SETPIPE_SZ, 1 << 20)
    except (ImportError, AttributeError, OSError):
        pass
