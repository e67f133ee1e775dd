"""Every child process the doctor starts goes through `run_child`: a hard deadline, and nothing left behind.

`subprocess.run(timeout=...)` kills only the child, then waits for its pipes to close; a grandchild
that inherited stdout (`sleep &` in a wrapper script, a daemon a framework starts) keeps that wait
going for as long as it lives. Here the child's output goes to temporary files rather than pipes, so
no read can block on a descendant, and the child's whole tree is killed at the deadline: on POSIX the
child leads a new session and its process group is killed, and on Linux so is every process found
under it by parent id or carrying its TAG in its environment (a daemon that left the group with
setsid and outlived its parent); on Windows it is put in a kill-on-close Job object (`winjob`),
which holds every process it starts. The call returns at its deadline whatever the children do,
with what they wrote until then. After a normal exit the same kill ends what the child left running.
"""

from __future__ import annotations

import io
import locale
import os
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any, Callable, Mapping, Optional, Sequence

from cudnn_doctor.record import Record
from cudnn_doctor.system.winjob import Job

MAX_OUTPUT = 16 << 20  # bytes kept of each stream; a child that prints more is cut, not read into memory
_WINDOWS = os.name == "nt"
TAG = "CUDNN_DOCTOR_CHILD"  # environment variable marking a child's tree with the child's own id (Linux)


class _Running(Record):
    """What it takes to kill one running child's tree."""

    job: Optional[Job]  # its Job object (Windows)
    tag: bytes  # the TAG=id entry in its environment, as /proc/PID/environ shows it (Linux)


_live: dict[subprocess.Popen, _Running] = {}
_live_lock = threading.Lock()


class ChildResult(Record):
    """What a child said and how it ended; `returncode` is None when it was killed at its deadline."""

    returncode: Optional[int]
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    def report_after(self, marker: str, parse: Optional[Callable[[str], Any]] = None) -> Optional[dict]:
        """The object a stand-alone script printed on the line after `marker` (whatever a framework printed
        above it), read by `parse` (JSON unless told; it raises ValueError on bad text), None when there is none."""
        if parse is None:
            import json  # only here: `check`'s own children answer in Python literals (framework_probe)

            parse = json.loads
        _, found, tail = self.stdout.rpartition(marker)
        try:
            report = parse(tail.strip().splitlines()[0]) if found else None
        except (ValueError, IndexError):
            return None
        return report if isinstance(report, dict) else None


def run_child(
    argv: Sequence[str],
    timeout: float,
    cwd: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    encoding: Optional[str] = None,
    ended: Optional[Callable[[], None]] = None,
) -> ChildResult:
    """Run `argv` for at most `timeout` seconds; raises OSError only when it cannot be started at all.

    `ended` is called when the child has exited on its own, before what it left running is looked for and its
    output read: a pool gives its place to the next child there. Not at a deadline: the caller first notes that
    the program hung (so that no import waiting for the place starts it again), then gives the place back."""
    options: dict[str, Any]
    if _WINDOWS and sys.platform == "win32":  # one question: mypy reads the second (Windows-only flags)
        options = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_NO_WINDOW}
    else:
        options = {"start_new_session": True}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        tagged = {
            **(os.environ if env is None else env),
            TAG: os.urandom(16).hex(),
        }  # inherited by what the child starts
        process = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd, env=tagged, **options
        )
        running = _Running(_contain(process) if _WINDOWS else None, f"{TAG}={tagged[TAG]}".encode())
        with _live_lock:
            _live[process] = running
        timed_out = False
        try:
            _wait(process, max(timeout, 0.001))
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # also on KeyboardInterrupt: children in their own group do not get the terminal's Ctrl-C
            alive = timed_out or process.returncode is None
            if ended is not None and not alive:
                ended()
            _kill_tree(process, running, alive=alive)
            with _live_lock:
                _live.pop(process, None)
            if running.job is not None:
                running.job.close()
        encoding = encoding or locale.getpreferredencoding(False)
        return ChildResult(
            None if timed_out else process.returncode, _text(out, encoding), _text(err, encoding), timed_out
        )


def _wait(process: subprocess.Popen, timeout: float) -> None:
    """`process.wait(timeout)`, woken by the exit itself where Linux gives a pidfd: Popen.wait with a
    timeout polls with sleeps of up to 50 ms, which each of many short framework children pays."""
    pidfd_open = getattr(os, "pidfd_open", None)
    try:
        descriptor = pidfd_open(process.pid) if pidfd_open is not None else None
    except OSError:  # an older kernel, or a sandbox that refuses the call
        descriptor = None
    if descriptor is None:
        process.wait(timeout=timeout)
        return
    import select

    try:
        if not select.select([descriptor], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(process.args, timeout)
    finally:
        os.close(descriptor)
    process.wait()  # it has ended: this only reaps it


def kill_all() -> None:
    """Kill every child still running (Ctrl-C in the main thread while workers wait on children)."""
    with _live_lock:
        running = list(_live.items())
    for process, tree in running:
        _kill_tree(process, tree, alive=True)


def _contain(process: subprocess.Popen) -> Optional[Job]:
    """The child's Job object, or None where Windows (or Wine) will not make one: then taskkill."""
    try:
        return Job.contain(int(process._handle))  # type: ignore[attr-defined]  # Popen's process handle on Windows
    except (OSError, AttributeError, ValueError):
        return None


def _kill_tree(process: subprocess.Popen, running: _Running, alive: bool) -> None:
    """Kill the child's whole tree; after a normal exit, only what it left running (its group, its job, its tag)."""
    if running.job is not None:
        running.job.kill()  # every process the child started, whether or not its parent still runs
    elif _WINDOWS and sys.platform == "win32":  # one question: mypy reads the second (a Windows-only flag)
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
        escaped = _tree(
            process.pid if alive else None, running.tag
        )  # the child is reaped after a normal exit: its pid may be reused
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the group outlives its leader while members remain
        except (ProcessLookupError, PermissionError):
            pass
        for pid in escaped:  # a descendant that left the group (setsid, a daemon), and the group it leads
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
    if alive:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # unkillable (a process stuck in the kernel): abandon it
            pass


def _tree(root: Optional[int], tag: bytes) -> list[int]:
    """Every process under `root` by parent id, and every one whose environment carries `tag`: a
    descendant that left the child's group and outlived its parent (a daemon) is found by the tag
    it inherited. Read from /proc (Linux); [] where there is none."""
    children: dict[int, list[int]] = {}
    tagged: list[int] = []
    try:
        entries = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for name in entries:
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()  # after "(command)", which may hold spaces
            children.setdefault(int(fields[1]), []).append(int(name))
            with open(f"/proc/{name}/environ", "rb") as handle:
                if tag in handle.read().split(b"\0"):
                    tagged.append(int(name))
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile, or another user's
    found, todo = list(tagged), [] if root is None else [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            if pid not in found:
                found.append(pid)
                todo.append(pid)
    return [pid for pid in found if pid != os.getpid()]


def _text(handle: io.BufferedRandom, encoding: str) -> str:
    """At most MAX_OUTPUT bytes of a stream, decoded with universal newlines as `text=True` would."""
    handle.seek(0)
    data = handle.read(MAX_OUTPUT)
    return io.TextIOWrapper(io.BytesIO(data), encoding=encoding, errors="replace").read()
