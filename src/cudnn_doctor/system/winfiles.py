"""Is a file held by another program, and by which? (`LiveSystem.in_use` on Windows.)

Windows refuses to replace or delete a DLL that a process has loaded, and reports it as "access
denied" (WinError 5, as for a missing right), so the refusal alone does not say which. Opening the
file for writing while sharing everything tells them apart: a mapped image, or a file another
program opened without sharing writes, fails with ERROR_SHARING_VIOLATION (32) — a permission or
read-only problem fails with ERROR_ACCESS_DENIED (5) instead. The open changes nothing (OPEN_EXISTING,
no byte written). Who holds it comes from the Restart Manager, the API installers use for this.

Microsoft's documentation of each call and structure used here:
- CreateFileW (GENERIC_WRITE, FILE_SHARE_*, OPEN_EXISTING):
https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-createfilew
- System error codes 32 ERROR_SHARING_VIOLATION, 33 ERROR_LOCK_VIOLATION, 234 ERROR_MORE_DATA:
  https://learn.microsoft.com/windows/win32/debug/system-error-codes--0-499-
- RmStartSession, RmRegisterResources, RmGetList, RmEndSession, RM_PROCESS_INFO, RM_UNIQUE_PROCESS
  (CCH_RM_MAX_APP_NAME 255, CCH_RM_MAX_SVC_NAME 63, CCH_RM_SESSION_KEY 32):
  https://learn.microsoft.com/windows/win32/api/restartmanager/
- OpenProcess (PROCESS_QUERY_LIMITED_INFORMATION 0x1000), QueryFullProcessImageNameW:
  https://learn.microsoft.com/windows/win32/api/processthreadsapi/
Wine 8's Restart Manager is a stub that lists nobody: the caller then names the file only.

The DLLs are parameters, so tests give fakes on any OS.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Optional, Sequence

GENERIC_WRITE = 0x40000000
FILE_SHARE_ALL = 0x1 | 0x2 | 0x4  # FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE
OPEN_EXISTING = 3
INVALID_HANDLE_VALUE = ctypes.c_void_p(-1).value
ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION, ERROR_MORE_DATA = 32, 33, 234
PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
CCH_RM_SESSION_KEY = 32


class FILETIME(ctypes.Structure):
    _fields_ = [("dwLowDateTime", ctypes.c_uint32), ("dwHighDateTime", ctypes.c_uint32)]


class RM_UNIQUE_PROCESS(ctypes.Structure):
    _fields_ = [("dwProcessId", ctypes.c_uint32), ("ProcessStartTime", FILETIME)]


class RM_PROCESS_INFO(ctypes.Structure):
    _fields_ = [
        ("Process", RM_UNIQUE_PROCESS),
        ("strAppName", ctypes.c_wchar * 256),  # CCH_RM_MAX_APP_NAME + 1
        ("strServiceShortName", ctypes.c_wchar * 64),  # CCH_RM_MAX_SVC_NAME + 1
        ("ApplicationType", ctypes.c_int),  # RM_APP_TYPE
        ("AppStatus", ctypes.c_ulong),
        ("TSSessionId", ctypes.c_uint32),
        ("bRestartable", ctypes.c_int),  # BOOL
    ]


def _kernel32() -> Any:
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]  # Windows only
    kernel32.CreateFileW.restype = ctypes.c_void_p
    kernel32.CreateFileW.argtypes = [
        ctypes.c_wchar_p,
        ctypes.c_uint32,
        ctypes.c_uint32,
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_uint32,
        ctypes.c_void_p,
    ]
    kernel32.CloseHandle.argtypes = [ctypes.c_void_p]
    kernel32.OpenProcess.restype = ctypes.c_void_p
    kernel32.OpenProcess.argtypes = [ctypes.c_uint32, ctypes.c_int, ctypes.c_uint32]
    kernel32.QueryFullProcessImageNameW.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_wchar_p,
        ctypes.POINTER(ctypes.c_uint32),
    ]
    return kernel32


def _rstrtmgr() -> Any:
    rm = ctypes.WinDLL("rstrtmgr", use_last_error=True)  # type: ignore[attr-defined]  # Windows only (Vista and later)
    rm.RmStartSession.argtypes = [ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32, ctypes.c_wchar_p]
    rm.RmRegisterResources.argtypes = [
        ctypes.c_uint32,
        ctypes.c_uint,
        ctypes.POINTER(ctypes.c_wchar_p),
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_uint,
        ctypes.c_void_p,
    ]
    rm.RmGetList.argtypes = [
        ctypes.c_uint32,
        ctypes.POINTER(ctypes.c_uint),
        ctypes.POINTER(ctypes.c_uint),
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_uint32),
    ]
    rm.RmEndSession.argtypes = [ctypes.c_uint32]
    return rm


def _last_error() -> int:
    return ctypes.get_last_error()  # type: ignore[attr-defined]  # Windows only


def sharing_violation(path: str, kernel32: Any = None, last_error: Callable[[], int] = _last_error) -> bool:
    """True when opening `path` for writing, sharing everything, fails because another program holds it."""
    kernel32 = kernel32 or _kernel32()
    handle = kernel32.CreateFileW(path, GENERIC_WRITE, FILE_SHARE_ALL, None, OPEN_EXISTING, 0, None)
    if handle is None or handle == INVALID_HANDLE_VALUE:
        return last_error() in (ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION)
    kernel32.CloseHandle(handle)
    return False


def holders(paths: Sequence[str], rstrtmgr: Any = None, kernel32: Any = None) -> list[str]:
    """The programs the Restart Manager says hold any of `paths`, as "python.exe (pid 4242)"; [] when it cannot tell."""
    try:
        rm = rstrtmgr or _rstrtmgr()
    except OSError:
        return []
    session = ctypes.c_uint32()
    key = ctypes.create_unicode_buffer(CCH_RM_SESSION_KEY + 1)
    if rm.RmStartSession(ctypes.byref(session), 0, key) != 0:
        return []
    try:
        files = (ctypes.c_wchar_p * len(paths))(*paths)
        if rm.RmRegisterResources(session.value, len(paths), files, 0, None, 0, None) != 0:
            return []
        infos = _process_list(rm, session.value)
    finally:
        rm.RmEndSession(session.value)
    found: list[str] = []
    for info in infos:
        pid = int(info.Process.dwProcessId)
        name = _image_name(pid, kernel32) or info.strAppName or "a program"
        if f"{name} (pid {pid})" not in found:
            found.append(f"{name} (pid {pid})")
    return found


def _process_list(rm: Any, session: int) -> list[RM_PROCESS_INFO]:
    """RmGetList, asked again with room for all when processes started between the two calls."""
    room = 8
    for _ in range(4):
        needed, count, reasons = ctypes.c_uint(), ctypes.c_uint(room), ctypes.c_uint32()
        infos = (RM_PROCESS_INFO * room)()
        status = rm.RmGetList(session, ctypes.byref(needed), ctypes.byref(count), infos, ctypes.byref(reasons))
        if status == 0:
            return list(infos[: min(count.value, room)])
        if status != ERROR_MORE_DATA:
            return []
        room = needed.value + 4
    return []


def _image_name(pid: int, kernel32: Any) -> Optional[str]:
    """The file name of a process's program ("python.exe"), None when Windows will not say."""
    try:
        kernel32 = kernel32 or _kernel32()
    except OSError:
        return None
    handle = kernel32.OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return None
    try:
        buffer = ctypes.create_unicode_buffer(32768)
        size = ctypes.c_uint32(len(buffer))
        if not kernel32.QueryFullProcessImageNameW(handle, 0, buffer, ctypes.byref(size)):
            return None
        return buffer.value.replace("/", "\\").rsplit("\\", 1)[-1] or None
    finally:
        kernel32.CloseHandle(handle)
