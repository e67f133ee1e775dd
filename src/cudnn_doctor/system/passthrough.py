"""Running a user's program for `run`: its stdin and stdout are its own, its stderr is copied through byte for
byte as it comes (and its end kept), and on Linux the dynamic loader's trace goes to private files.

As transparent as `exec` where a wrapper can be: `run` returns when the program exits, even while background
children it left hold its stderr (they keep it: a detached copier takes the pipe over, so they neither block nor
die of a closed pipe); SIGINT, SIGTERM and SIGHUP sent to `run` reach the program (a Ctrl-C the terminal gave the
whole foreground group is not sent twice); and the trace folder is removed on every way out that a process can
act on (all but SIGKILL).

Apart from the live System so that `run` starts the program without importing the rest of the doctor: what a
successful program pays for the wrapper is this module and the interpreter's start.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Optional, Sequence

from cudnn_doctor.system.interface import PassThrough

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP")
DRAIN_S = 0.2  # after the program's exit, how long its stderr is read on while more keeps coming
_CHUNK = 1 << 16

# The copier a pipe still held by background children is handed to: their stderr to ours until they all close it.
_HAND_OVER = (
    "import os\n"
    "while True:\n"
    "    try:\n"
    "        chunk = os.read(0, 65536)\n"
    "    except OSError:\n"
    "        break\n"
    "    if not chunk:\n"
    "        break\n"
    "    try:\n"
    "        while chunk:\n"
    "            chunk = chunk[os.write(2, chunk):]\n"
    "    except OSError:\n"
    "        pass\n"
)


def run_passthrough(
    argv: Sequence[str], trace_loader: bool, keep: int = 1 << 20, wanted: Optional[Callable[[int, str], bool]] = None
) -> PassThrough:
    """Run `argv`; with `trace_loader`, LD_DEBUG=libs,files to a private folder, read back only when `wanted(returncode,
    stderr end)` says the traces are needed (always when `wanted` is None). The return code is Popen's: -N for a
    death by signal N. Raises OSError when it cannot start."""
    with _Forwarding() as forwarding:
        folder = tempfile.mkdtemp(prefix="cudnn-doctor-trace-") if trace_loader else None
        try:
            environment = dict(os.environ)
            if folder is not None:
                environment.update(LD_DEBUG="libs,files", LD_DEBUG_OUTPUT=os.path.join(folder, "trace"))
            process = subprocess.Popen(list(argv), stderr=subprocess.PIPE, env=environment)
            forwarding.started(process)
            copier = _Copier(process.stderr, keep)
            copier.start()
            returncode = _wait(process)
            copier.finish()
            text = bytes(copier.tail).decode("utf-8", errors="replace")
            traces: tuple[str, ...] = ()
            if folder is not None and (wanted is None or wanted(returncode, text)):
                traces = tuple(_read(os.path.join(folder, name)) for name in sorted(os.listdir(folder)))
            return PassThrough(returncode, text, traces)
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)


def exit_status(returncode: int) -> int:
    """The exit status a shell gives a program's end: 128+N for a death by signal N (Popen says -N)."""
    return 128 - returncode if returncode < 0 else returncode


def _wait(process: subprocess.Popen[bytes]) -> int:
    while True:
        try:
            return process.wait()
        except (
            KeyboardInterrupt
        ):  # where no handler of ours runs (not the main thread): the program got the same Ctrl-C
            continue


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


class _Forwarding:
    """While the program runs: SIGINT, SIGTERM and SIGHUP sent to this process are sent on to it (one that comes
    before it starts, once it has), instead of ending this process and leaving it orphaned and its traces behind.
    Only in the main thread, where Python runs signal handlers; the old handlers are put back after."""

    def __init__(self) -> None:
        self.active = threading.current_thread() is threading.main_thread()
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.pending: list[int] = []
        self.saved: dict[int, Any] = {}

    def __enter__(self) -> _Forwarding:
        if self.active:
            for name in FORWARDED:
                number = getattr(signal, name, None)
                if number is None:  # SIGHUP: not on Windows
                    continue
                try:
                    self.saved[number] = signal.signal(number, self._received)
                except (OSError, ValueError):
                    continue
        return self

    def __exit__(self, *exc: object) -> None:
        for number, handler in self.saved.items():
            signal.signal(number, handler)

    def started(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        for number in self.pending:
            self._send(number)
        self.pending.clear()

    def _received(self, number: int, frame: object) -> None:
        if number == getattr(signal, "SIGINT", None) and _terminal_group_signalled():
            return  # the terminal's Ctrl-C went to the whole foreground group: the program has it already
        if self.process is None:
            self.pending.append(number)
        else:
            self._send(number)

    def _send(self, number: int) -> None:
        assert self.process is not None
        if self.process.returncode is None:
            try:
                self.process.send_signal(number)
            except OSError:  # it has just ended
                pass


def _terminal_group_signalled() -> bool:
    """Whether a SIGINT most likely came from the terminal: this process's group is its foreground group (the
    program, in the same group, got the same signal). Without a terminal a SIGINT was sent to this process alone."""
    if os.name != "posix":
        return True  # Windows: a console Ctrl-C reaches every process attached to the console
    for fd in (0, 1, 2):
        try:
            return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


class _Copier(threading.Thread):
    """The program's stderr to ours unchanged (straight to file descriptor 2), keeping the last `keep` bytes.

    `finish()`, once the program has exited, reads what it left in the pipe and returns, even when background
    children of the program still hold the pipe open: on POSIX a detached copier then carries their output on."""

    def __init__(self, stream: Any, keep: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.keep = stream, keep
        self.tail = bytearray()
        self.ended = False  # the pipe's end was read: every holder closed it
        self.stopping = threading.Event()
        self.polled = os.name == "posix"  # select() works on pipes; Windows has it for sockets only

    def run(self) -> None:
        fd = self.stream.fileno()
        drain_until: Optional[float] = None
        while True:
            if self.polled:
                import select

                if self.stopping.is_set() and drain_until is None:
                    drain_until = time.monotonic() + DRAIN_S
                ready, _, _ = select.select([fd], [], [], 0 if drain_until is not None else 0.05)
                if not ready:
                    if drain_until is not None:
                        return  # nothing more for now: the program's own output is all read
                    continue
                if drain_until is not None and time.monotonic() > drain_until:
                    return  # something keeps writing: not the program, which has ended
            try:
                chunk = os.read(fd, _CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                self.ended = True
                return
            _write_all(chunk)
            self.tail.extend(chunk)
            del self.tail[: -self.keep]

    def finish(self) -> None:
        self.stopping.set()
        self.join(None if self.polled else DRAIN_S)
        if self.ended:
            self.stream.close()
            return
        if not self.polled:
            return  # Windows: the thread copies on while this process lives
        try:
            subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _HAND_OVER],
                stdin=self.stream,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # out of the terminal's signals: it ends when the last holder closes the pipe
            )
        except OSError:
            pass  # no copier: the pipe closes with this process, as it did before
        self.stream.close()


def _write_all(chunk: bytes) -> None:
    try:
        while chunk:
            chunk = chunk[os.write(2, chunk) :]
    except OSError:  # our stderr is gone: keep reading so the program never blocks on a full pipe
        pass
