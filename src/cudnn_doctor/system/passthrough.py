"""Running a user's program for `run`: its stdin and stdout are its own, its stderr is copied through byte for
byte as it comes (and its end kept), and on Linux the dynamic loader's trace goes to private files.

Apart from the live System so that `run` starts the program without importing the rest of the doctor: what a
successful program pays for the wrapper is this module and the interpreter's start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from typing import Any, Callable, Optional, Sequence

from cudnn_doctor.system.interface import PassThrough


def run_passthrough(argv: Sequence[str], trace_loader: bool, keep: int = 1 << 20, wanted: Optional[Callable[[int, str], bool]] = None) -> PassThrough:
    """Run `argv`; with `trace_loader`, LD_DEBUG=libs,files to a private folder, read back only when `wanted(returncode,
    stderr end)` says the traces are needed (always when `wanted` is None). Raises OSError when it cannot start."""
    folder = tempfile.mkdtemp(prefix="cudnn-doctor-trace-") if trace_loader else None
    environment = dict(os.environ)
    if folder is not None:
        environment.update(LD_DEBUG="libs,files", LD_DEBUG_OUTPUT=os.path.join(folder, "trace"))
    try:
        process = subprocess.Popen(list(argv), stderr=subprocess.PIPE, env=environment)
        tail = bytearray()
        copier = threading.Thread(target=_copy_stderr, args=(process.stderr, tail, keep), daemon=True)
        copier.start()
        while True:
            try:
                returncode = process.wait()
                break
            except KeyboardInterrupt:  # the program got the same Ctrl-C: let it end its own way
                continue
        copier.join()
        text = tail.decode("utf-8", errors="replace")
        traces: tuple[str, ...] = ()
        if folder is not None and (wanted is None or wanted(returncode, text)):
            traces = tuple(_read(os.path.join(folder, name)) for name in sorted(os.listdir(folder)))
        return PassThrough(returncode, text, traces)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _copy_stderr(stream: Any, tail: bytearray, keep: int) -> None:
    """The program's stderr to ours unchanged (straight to file descriptor 2), keeping the last `keep` bytes."""
    for chunk in iter(lambda: stream.read1(1 << 16), b""):
        try:
            os.write(2, chunk)
        except OSError:  # our stderr is gone: keep reading so the program never blocks on a full pipe
            pass
        tail.extend(chunk)
        del tail[:-keep]
