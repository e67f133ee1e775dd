"""Every child process the doctor starts goes through `run_child`: a hard deadline, and nothing left behind.

`subprocess.run(timeout=...)` kills only the child, then waits for its pipes to close; a grandchild
that inherited stdout (`sleep &` in a wrapper script, a daemon a framework starts) keeps that wait
going for as long as it lives. Here the child leads a new process group (a new session on POSIX, a
new process group on Windows), its output goes to temporary files rather than pipes, and on timeout
the whole group is killed, so the call returns at its deadline whatever the children do.
"""

from __future__ import annotations

import io
import locale
import os
import signal
import subprocess
import tempfile
import threading
from typing import Mapping, NamedTuple, Optional, Sequence

MAX_OUTPUT = 16 << 20  # bytes kept of each stream; a child that prints more is cut, not read into memory
_WINDOWS = os.name == "nt"

_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


class ChildResult(NamedTuple):
    """What a child said and how it ended; `returncode` is None when it was killed at its deadline."""

    returncode: Optional[int]
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False


def run_child(
    argv: Sequence[str], timeout: float, cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None, encoding: Optional[str] = None
) -> ChildResult:
    """Run `argv` for at most `timeout` seconds; raises OSError only when it cannot be started at all."""
    options: dict = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_NO_WINDOW} if _WINDOWS else {"start_new_session": True}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd, env=env, **options)
        with _live_lock:
            _live.add(process)
        timed_out = False
        try:
            process.wait(timeout=max(timeout, 0.001))
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # also on KeyboardInterrupt: children in their own group do not get the terminal's Ctrl-C
            _kill_tree(process, alive=timed_out or process.returncode is None)
            with _live_lock:
                _live.discard(process)
        encoding = encoding or locale.getpreferredencoding(False)
        return ChildResult(None if timed_out else process.returncode, _text(out, encoding), _text(err, encoding), timed_out)


def kill_all() -> None:
    """Kill every child still running (Ctrl-C in the main thread while workers wait on children)."""
    with _live_lock:
        running = list(_live)
    for process in running:
        _kill_tree(process, alive=True)


def _kill_tree(process: subprocess.Popen, alive: bool) -> None:
    """Kill the child's whole process group; after a normal exit, only what it left running in its group."""
    if _WINDOWS:
        if alive:
            try:
                subprocess.run(
                    ["taskkill", "/T", "/F", "/PID", str(process.pid)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=10,
                    creationflags=subprocess.CREATE_NO_WINDOW,
                )
            except (OSError, subprocess.TimeoutExpired):
                pass
            process.kill()
    else:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the group outlives its leader while members remain
        except (ProcessLookupError, PermissionError):
            pass
    if alive:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # unkillable (a process stuck in the kernel): abandon it
            pass


def _text(handle: io.BufferedRandom, encoding: str) -> str:
    """At most MAX_OUTPUT bytes of a stream, decoded with universal newlines as `text=True` would."""
    handle.seek(0)
    data = handle.read(MAX_OUTPUT)
    return io.TextIOWrapper(io.BytesIO(data), encoding=encoding, errors="replace").read()
