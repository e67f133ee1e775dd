"""A Windows Job object that takes a child's whole process tree with it (`run_child` on Windows).

Windows has no process groups that a kill reaches: `taskkill /T` walks parent ids, and misses a
grandchild whose parent has already exited. A process assigned to a job takes every process it
starts into the same job, and a job whose limits carry JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE kills all
of them when its last handle closes, so even a doctor that dies leaves nothing behind.

Microsoft's documentation of each call and structure used here:
- CreateJobObjectW, AssignProcessToJobObject, TerminateJobObject, SetInformationJobObject:
  https://learn.microsoft.com/windows/win32/api/jobapi2/
- JOBOBJECT_EXTENDED_LIMIT_INFORMATION (information class 9, JobObjectExtendedLimitInformation),
  JOBOBJECT_BASIC_LIMIT_INFORMATION, IO_COUNTERS: https://learn.microsoft.com/windows/win32/api/winnt/
- JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE (0x2000), in LimitFlags of the basic limits.
Since Windows 8 a process already in a job (a CI runner's, a terminal's) can join a nested job.

The Win32 functions come from `kernel32`, a parameter, so tests give a fake one on any OS.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Optional

JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS = 9  # JobObjectExtendedLimitInformation
KILLED_EXIT_CODE = 1  # what TerminateJobObject gives every process in the job, as Popen.kill() does


@functools.cache
def _structures() -> dict[str, Any]:
    """The ctypes structures, defined on first use: ctypes' import is for Windows runs, not every child."""
    import ctypes

    class JOBOBJECT_BASIC_LIMIT_INFORMATION(ctypes.Structure):
        _fields_ = [
            ("PerProcessUserTimeLimit", ctypes.c_int64),  # LARGE_INTEGER
            ("PerJobUserTimeLimit", ctypes.c_int64),
            ("LimitFlags", ctypes.c_uint32),  # DWORD
            ("MinimumWorkingSetSize", ctypes.c_size_t),  # SIZE_T
            ("MaximumWorkingSetSize", ctypes.c_size_t),
            ("ActiveProcessLimit", ctypes.c_uint32),
            ("Affinity", ctypes.c_size_t),  # ULONG_PTR
            ("PriorityClass", ctypes.c_uint32),
            ("SchedulingClass", ctypes.c_uint32),
        ]

    class IO_COUNTERS(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_uint64)  # ULONGLONG
            for name in (
                "ReadOperationCount",
                "WriteOperationCount",
                "OtherOperationCount",
                "ReadTransferCount",
                "WriteTransferCount",
                "OtherTransferCount",
            )
        ]

    class JOBOBJECT_EXTENDED_LIMIT_INFORMATION(ctypes.Structure):
        _fields_ = [
            ("BasicLimitInformation", JOBOBJECT_BASIC_LIMIT_INFORMATION),
            ("IoInfo", IO_COUNTERS),
            ("ProcessMemoryLimit", ctypes.c_size_t),
            ("JobMemoryLimit", ctypes.c_size_t),
            ("PeakProcessMemoryUsed", ctypes.c_size_t),
            ("PeakJobMemoryUsed", ctypes.c_size_t),
        ]

    return {
        "JOBOBJECT_BASIC_LIMIT_INFORMATION": JOBOBJECT_BASIC_LIMIT_INFORMATION,
        "IO_COUNTERS": IO_COUNTERS,
        "JOBOBJECT_EXTENDED_LIMIT_INFORMATION": JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    }


_STRUCTURES = ("JOBOBJECT_BASIC_LIMIT_INFORMATION", "IO_COUNTERS", "JOBOBJECT_EXTENDED_LIMIT_INFORMATION")


def __getattr__(name: str) -> Any:
    """`winjob.JOBOBJECT_EXTENDED_LIMIT_INFORMATION` and the other structures, built on first use."""
    if name in _STRUCTURES:  # asked first: `from winjob import Job` asks for __path__, which must not build them
        return _structures()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _kernel32() -> Any:
    """The real kernel32 with the argument types of the calls used here (handles are pointer-sized)."""
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]  # Windows only
    kernel32.CreateJobObjectW.restype = ctypes.c_void_p
    kernel32.CreateJobObjectW.argtypes = [ctypes.c_void_p, ctypes.c_wchar_p]
    kernel32.SetInformationJobObject.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32]
    kernel32.AssignProcessToJobObject.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    kernel32.TerminateJobObject.argtypes = [ctypes.c_void_p, ctypes.c_uint]
    kernel32.CloseHandle.argtypes = [ctypes.c_void_p]
    return kernel32


class Job:
    """One kill-on-close job holding one child and everything it starts."""

    def __init__(self, handle: int, kernel32: Any) -> None:
        self.handle: Optional[int] = handle
        self._kernel32 = kernel32
        self._lock = threading.Lock()  # Ctrl-C's kill_all may kill while the worker closes

    @classmethod
    def contain(cls, process_handle: int, kernel32: Any = None) -> Optional[Job]:
        """Put a just-started process in a new kill-on-close job; None when Windows (or Wine) refuses,
        and the caller falls back to killing by process id. The child is assigned right after it
        starts: a grandchild it starts before that escapes, which takes a native program microseconds."""
        kernel32 = kernel32 or _kernel32()
        handle = kernel32.CreateJobObjectW(None, None)  # unnamed, and its handle not inherited by the child
        if not handle:
            return None
        import ctypes

        job = cls(handle, kernel32)
        limits = _structures()["JOBOBJECT_EXTENDED_LIMIT_INFORMATION"]()
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        if not kernel32.SetInformationJobObject(
            handle, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS, ctypes.addressof(limits), ctypes.sizeof(limits)
        ):
            job.close()
            return None
        if not kernel32.AssignProcessToJobObject(handle, process_handle):
            job.close()  # nothing is in it yet: closing kills nothing
            return None
        return job

    def kill(self) -> None:
        """Kill every process in the job now; the handle stays open until `close`."""
        with self._lock:
            if self.handle:
                self._kernel32.TerminateJobObject(self.handle, KILLED_EXIT_CODE)

    def close(self) -> None:
        """Close the job: whatever the child left running dies with it (kill-on-close)."""
        with self._lock:
            if self.handle:
                handle, self.handle = self.handle, None
                self._kernel32.CloseHandle(handle)
