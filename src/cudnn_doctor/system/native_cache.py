"""Live: which CUDA-family libraries each native file names, kept between runs (issue 29).

Every native extension of every environment is a candidate root of the process model; nearly
all of them name no CUDA library. Reading each one's headers again on every run would cost
seconds on a machine with many environments, so the answer is kept in the state folder's
native-names.json, keyed by path and checked against size and mtime: a file that changed is
read again. Read once per process, written back once at exit when it grew; a damaged or
unwritable cache is ignored.
"""

from __future__ import annotations

import os
from typing import Callable, Optional

from cudnn_doctor.system.state_files import read_state_json, write_state_json

FILE = "native-names.json"
CACHE_ENTRIES = 50000  # the newest kept: about 120 bytes each


class NativeNames:
    def __init__(self) -> None:
        self._entries: Optional[dict[str, list]] = None
        self._dirty = False

    def _load(self) -> dict[str, list]:
        if self._entries is None:
            self._entries = {}
            document = read_state_json(FILE, 64 << 20)
            files = document.get("files") if isinstance(document, dict) else None
            if isinstance(files, dict):
                self._entries = {
                    k: v
                    for k, v in files.items()
                    if isinstance(v, list)
                    and len(v) == 3
                    and isinstance(v[2], list)
                    and all(isinstance(n, str) for n in v[2])
                }
        return self._entries

    def names(self, path: str, read: Callable[[str], tuple[str, ...]]) -> tuple[str, ...]:
        """The cached names of the file at `path` while its size and mtime are unchanged, else `read(path)`, kept."""
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return ()
        entries = self._load()
        cached = entries.get(path)
        if cached is not None and cached[0] == info.st_size and cached[1] == info.st_mtime_ns:
            return tuple(cached[2])
        found = read(path)
        entries.pop(path, None)
        entries[path] = [info.st_size, info.st_mtime_ns, list(found)]
        if not self._dirty:
            import atexit

            atexit.register(self.save)
        self._dirty = True
        return found

    def save(self) -> None:
        if not self._dirty or self._entries is None:
            return
        if write_state_json(FILE, {"files": dict(list(self._entries.items())[-CACHE_ENTRIES:])}):
            self._dirty = False


NATIVE_NAMES = NativeNames()
