"""Hard deadlines for every child (issue 10): the whole tree dies, no pipe is waited on, output so far is kept.

The Linux tests start real process trees and check by pid that the grandchild is gone; on Windows
(the Wine lane) a real Job object must do the same; and everywhere the Job-object code runs against a
fake kernel32 that records the Win32 calls.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Optional

import pytest

from cudnn_doctor.system import child, winjob
from cudnn_doctor.system.child import run_child
from cudnn_doctor.system.live import LiveSystem

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="starts POSIX process trees and reads /proc")

# A grandchild that holds the child's stdout and stderr and sleeps; `new_session` puts it out of the
# child's process group, as a daemon does. It writes its pid to argv[1] once it runs.
GRANDCHILD = """
import os, subprocess, sys, time
holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(100)", sys.argv[1]],
                          start_new_session=sys.argv[2] == "new-session")
while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():
    time.sleep(0.01)
print("before the deadline", flush=True)
print("said on stderr", file=sys.stderr, flush=True)
if sys.argv[3] == "hang":
    time.sleep(100)
"""


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie waiting for its (new) parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def _gone_soon(pid: int) -> bool:
    deadline = time.monotonic() + 3
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _grandchild_pid(path: Path) -> int:
    return int(path.read_text())


def _cleanup(path: Path) -> None:
    if path.exists() and path.read_text():
        try:
            os.kill(int(path.read_text()), signal.SIGKILL)
        except OSError:
            pass


@pytest.mark.live
@LINUX
@pytest.mark.parametrize("session", ["same-group", "new-session"])
@pytest.mark.parametrize("ending", ["hang", "exit"])
def test_grandchild_holding_the_output_never_holds_up_the_call(tmp_path, session, ending):
    pidfile = tmp_path / "grandchild.pid"
    timeout = 2.0 if ending == "hang" else 60.0
    started = time.monotonic()
    try:
        result = run_child([sys.executable, "-c", GRANDCHILD, str(pidfile), session, ending], timeout=timeout)
        elapsed = time.monotonic() - started
        gone = _gone_soon(_grandchild_pid(pidfile))
    finally:
        _cleanup(pidfile)
    assert result.stdout == "before the deadline\n" and result.stderr == "said on stderr\n"  # kept, also on timeout
    if ending == "hang":
        assert result.timed_out and result.returncode is None
        assert elapsed < timeout + 8, elapsed  # the deadline plus a generous margin, never the grandchild's 100 s
    else:
        assert not result.timed_out and result.returncode == 0
        assert elapsed < 30, elapsed
    assert gone, "the grandchild holding stdout/stderr outlived the call"


@pytest.mark.live
@LINUX
def test_framework_probe_that_hangs_in_a_grandchild(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "jax").mkdir(parents=True)
    pidfile = tmp_path / "grandchild.pid"
    body = f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(100)"],
                         start_new_session=True)
        time.sleep(100)
    """
    (site / "jax" / "__init__.py").write_text(textwrap.dedent(body), encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(site))
    started = time.monotonic()
    try:
        reports = LiveSystem().framework_reports(sys.executable, ["jax"], timeout=3)
        elapsed = time.monotonic() - started
        deadline = time.monotonic() + 5
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        gone = _gone_soon(_grandchild_pid(pidfile))
    finally:
        _cleanup(pidfile)
    assert "took longer than 3 s" in reports["jax"]["error"]
    assert elapsed < 3 + 8, elapsed
    assert gone, "the framework's grandchild outlived the probe"


@pytest.mark.live
@LINUX
@pytest.mark.parametrize("ending", ["exit", "hang"])
def test_the_pool_place_is_given_back_when_the_child_has_ended_not_after_its_leftovers_are_looked_for(
    monkeypatch, ending
):
    """`ended` runs after a normal exit, before /proc is scanned for what the child left (the next framework child
    need not wait for that scan); never at a deadline, where the caller must note the hang before giving back."""
    order: list[str] = []
    scan = child._tree

    def scanning(root, tag):
        order.append("scan")
        return scan(root, tag)

    monkeypatch.setattr(child, "_tree", scanning)
    script = "import time; time.sleep(100)" if ending == "hang" else "pass"
    done = run_child([sys.executable, "-c", script], 1.5, ended=lambda: order.append("ended"))
    assert done.timed_out is (ending == "hang")
    assert order == (["ended", "scan"] if ending == "exit" else ["scan"])


@pytest.mark.live
@LINUX
def test_descendants_follow_parent_ids_across_sessions():
    """`_tree` finds a grandchild that left its parent's session, and nothing under a pid without children."""
    script = "import subprocess, sys, time; subprocess.Popen(['sleep', '100'], start_new_session=True); print(flush=True); time.sleep(100)"
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, start_new_session=True)
    try:
        parent.stdout.readline()  # the grandchild has been started
        deadline = time.monotonic() + 10
        while True:  # on a loaded machine /proc may show the grandchild a moment before its command line
            below = child._tree(parent.pid, b"no such tag")
            commands = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] for pid in below]
            if commands == [b"sleep"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        for pid in child._tree(parent.pid, b"no such tag"):
            os.kill(pid, signal.SIGKILL)
        parent.kill()
        parent.wait()
    assert commands == [b"sleep"]
    assert child._tree(below[0], b"no such tag") == []


# The Windows Job object for real (Windows, or Wine) ----------------------------------------------

WINDOWS = pytest.mark.skipif(sys.platform != "win32", reason="a real Job object: Windows (the Wine lane)")

# The child starts a grandchild that inherits its stdout and stderr, says its pid, and writes argv[1]
# after 4 s unless it is killed first; then the child hangs or exits.
WINDOWS_GRANDCHILD = """
import subprocess, sys, time
later = "import sys, time; time.sleep(4); open(sys.argv[1], 'w').write('the grandchild outlived the call')"
holder = subprocess.Popen([sys.executable, "-c", later, sys.argv[1]])
print("grandchild", holder.pid, flush=True)
print("said on stderr", file=sys.stderr, flush=True)
if sys.argv[2] == "hang":
    time.sleep(100)
"""


def _windows_process_ended(pid: int, within: float) -> bool:
    """OpenProcess + WaitForSingleObject: the process has ended (or is gone) within `within` seconds."""
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.OpenProcess.restype = ctypes.c_void_p
    kernel32.WaitForSingleObject.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    kernel32.CloseHandle.argtypes = [ctypes.c_void_p]
    handle = kernel32.OpenProcess(0x00100000, False, pid)  # SYNCHRONIZE
    if not handle:
        return True  # no such process any more
    try:
        return kernel32.WaitForSingleObject(handle, int(within * 1000)) == 0  # WAIT_OBJECT_0: it ended
    finally:
        kernel32.CloseHandle(handle)


@pytest.mark.live
@WINDOWS
@pytest.mark.parametrize("ending", ["hang", "exit"])
def test_windows_grandchild_holding_the_output_dies_with_the_job(tmp_path, ending):
    """The Job object (kill-on-close): the call returns at its deadline (or at the child's exit) with the output
    so far, and the grandchild that holds the output handles is dead, not left to finish its work."""
    marker = tmp_path / "survived.txt"
    timeout = 3.0 if ending == "hang" else 60.0
    started = time.monotonic()
    result = run_child([sys.executable, "-c", WINDOWS_GRANDCHILD, str(marker), ending], timeout=timeout)
    elapsed = time.monotonic() - started
    assert result.stdout.startswith("grandchild ") and result.stderr == "said on stderr\n", (
        result
    )  # kept, also on timeout
    pid = int(result.stdout.split()[1])
    ended = _windows_process_ended(pid, within=3)
    if ending == "hang":
        assert result.timed_out and result.returncode is None
        assert elapsed < timeout + 8, elapsed  # the deadline plus a margin, never the child's 100 s
    else:
        assert not result.timed_out and result.returncode == 0 and elapsed < 30, elapsed
    time.sleep(max(0.0, 5.5 - (time.monotonic() - started)))  # past the grandchild's 4 s
    assert ended and not marker.exists(), "the grandchild holding stdout/stderr outlived the call"


@pytest.mark.live
@WINDOWS
def test_windows_children_are_put_in_a_job():
    """Where Windows (or Wine) refuses the job, run_child falls back to taskkill: the lane must see the job made."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], stdin=subprocess.DEVNULL)
    try:
        job = child._contain(process)
        assert job is not None, "CreateJobObjectW / SetInformationJobObject / AssignProcessToJobObject refused"
        job.kill()
        assert process.wait(timeout=10) == winjob.KILLED_EXIT_CODE
        job.close()
    finally:
        process.kill()
        process.wait()


# The Windows Job object, with the Win32 calls faked ---------------------------------------------


class FakeKernel32:
    """Records the Job-object calls; `fail` names the one that returns FALSE/NULL."""

    def __init__(self, fail: Optional[str] = None) -> None:
        self.fail = fail
        self.calls: list[tuple[Any, ...]] = []
        self.limits: Optional[winjob.JOBOBJECT_EXTENDED_LIMIT_INFORMATION] = None

    def CreateJobObjectW(self, attributes: Any, name: Any) -> int:
        self.calls.append(("CreateJobObjectW", attributes, name))
        return 0 if self.fail == "CreateJobObjectW" else 0x44

    def SetInformationJobObject(self, job: int, kind: int, address: int, size: int) -> int:
        self.calls.append(("SetInformationJobObject", job, kind, size))
        self.limits = winjob.JOBOBJECT_EXTENDED_LIMIT_INFORMATION.from_buffer_copy(ctypes.string_at(address, size))
        return 0 if self.fail == "SetInformationJobObject" else 1

    def AssignProcessToJobObject(self, job: int, process: int) -> int:
        self.calls.append(("AssignProcessToJobObject", job, process))
        return 0 if self.fail == "AssignProcessToJobObject" else 1

    def TerminateJobObject(self, job: int, code: int) -> int:
        self.calls.append(("TerminateJobObject", job, code))
        return 1

    def CloseHandle(self, handle: int) -> int:
        self.calls.append(("CloseHandle", handle))
        return 1

    def names(self) -> list[str]:
        return [call[0] for call in self.calls]


def test_job_is_kill_on_close_and_holds_the_child():
    kernel32 = FakeKernel32()
    job = winjob.Job.contain(0x99, kernel32)
    assert job is not None
    assert kernel32.calls[0] == ("CreateJobObjectW", None, None)  # unnamed, handle not inheritable
    _, handle, kind, size = kernel32.calls[1]
    assert (handle, kind) == (0x44, 9)  # JobObjectExtendedLimitInformation
    assert size == ctypes.sizeof(winjob.JOBOBJECT_EXTENDED_LIMIT_INFORMATION)
    assert kernel32.limits is not None and kernel32.limits.BasicLimitInformation.LimitFlags == 0x2000
    assert kernel32.calls[2] == ("AssignProcessToJobObject", 0x44, 0x99)
    job.kill()
    job.close()
    job.close()
    job.kill()  # after close: nothing, the handle may belong to something else by now
    assert kernel32.names()[3:] == ["TerminateJobObject", "CloseHandle"]


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="the 64-bit layout")
def test_extended_limit_layout_matches_winnt_h_on_64_bit():
    """144 bytes on x64: 64 of basic limits (with padding), 48 of IO_COUNTERS, four SIZE_T."""
    assert ctypes.sizeof(winjob.JOBOBJECT_BASIC_LIMIT_INFORMATION) == 64
    assert ctypes.sizeof(winjob.IO_COUNTERS) == 48
    assert ctypes.sizeof(winjob.JOBOBJECT_EXTENDED_LIMIT_INFORMATION) == 144
    assert winjob.JOBOBJECT_BASIC_LIMIT_INFORMATION.LimitFlags.offset == 16


@pytest.mark.parametrize("failing", ["CreateJobObjectW", "SetInformationJobObject", "AssignProcessToJobObject"])
def test_a_refused_job_is_none_and_its_handle_closed(failing):
    kernel32 = FakeKernel32(fail=failing)
    assert winjob.Job.contain(0x99, kernel32) is None
    opened = failing != "CreateJobObjectW"
    assert ("CloseHandle", 0x44) in kernel32.calls if opened else kernel32.names() == ["CreateJobObjectW"]


class FakeProcess:
    pid = 4242
    _handle = 0x99
    returncode = None

    def wait(self, timeout: float) -> int:
        self.returncode = 1
        return 1

    def kill(self) -> None:
        raise AssertionError("the job kills the tree; no per-process kill")


def test_kill_tree_and_kill_all_go_through_the_job(monkeypatch):
    kernel32 = FakeKernel32()
    job = winjob.Job.contain(0x99, kernel32)
    assert job is not None
    monkeypatch.setattr(child.subprocess, "run", lambda *a, **k: pytest.fail("taskkill run although there is a job"))
    monkeypatch.setattr(
        child.os, "killpg", lambda *a: pytest.fail("killpg run although there is a job"), raising=False
    )  # absent on Windows
    process = FakeProcess()
    monkeypatch.setitem(child._live, process, child._Running(job, b"no such tag"))  # type: ignore[arg-type]
    child.kill_all()
    assert kernel32.names().count("TerminateJobObject") == 1 and process.returncode == 1


def test_no_job_where_windows_has_none(monkeypatch):
    """Off Windows (or when Wine lacks the calls) `_contain` gives None, and the caller kills by pid."""
    monkeypatch.setattr(winjob, "_kernel32", lambda: (_ for _ in ()).throw(AttributeError("no WinDLL")))
    assert child._contain(FakeProcess()) is None  # type: ignore[arg-type]
