"""Run inside a target interpreter (as `python -c`): load libraries by name and say which files were mapped.

Prints one JSON object: {"loaded": {name: path}, "errors": {name: message}}. Stand-alone on
purpose; it runs in whatever Python the framework lives in.
"""

import ctypes
import json
import os
import sys


def _mapped_linux():
    paths = {}
    with open("/proc/self/maps") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 6 and parts[5].startswith("/"):
                paths.setdefault(os.path.basename(parts[5]), parts[5])
    return paths


def _path_windows(name):
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.GetModuleHandleW.restype = ctypes.c_void_p
    handle = kernel32.GetModuleHandleW(name)
    if not handle:
        return None
    buffer = ctypes.create_unicode_buffer(32768)
    kernel32.GetModuleFileNameW(ctypes.c_void_p(handle), buffer, 32768)
    return buffer.value


def _load(name):
    """LoadLibrary's standard search on Windows: ctypes.CDLL alone (Python >= 3.8) passes
    LOAD_LIBRARY_SEARCH_DEFAULT_DIRS, which skips PATH; winmode=0 asks for the standard order."""
    if sys.platform == "win32" and sys.version_info >= (3, 8):
        return ctypes.CDLL(name, winmode=0)
    return ctypes.CDLL(name)


def report(names):
    """What loading `names` in order maps, as {"loaded": {name: path}, "errors": {name: message}};
    the framework probe runs this too, in a fork taken before its import (framework_probe.py)."""
    loaded, errors = {}, {}
    for name in names:
        try:
            _load(name)
        except OSError as error:
            errors[name] = str(error)
    if sys.platform == "win32":
        for name in names:
            if name not in errors:
                loaded[name] = _path_windows(name)
    else:
        mapped = _mapped_linux()
        for name in names:
            if name in errors:
                continue
            base = os.path.basename(name)
            match = mapped.get(base) or next((p for b, p in mapped.items() if b.startswith(base + ".")), None)
            loaded[name] = os.path.realpath(match) if match else None
    return {"loaded": loaded, "errors": errors}


def main(names):
    print(json.dumps(report(names)))


if __name__ == "__main__":
    main(sys.argv[1:])
