"""Live: which CUDA-family libraries each native file names, kept between runs (issue 29).

Every native extension of every environment is a candidate root of the process model; nearly
all of them name no CUDA library. Reading each one's headers again on every run would cost
seconds on a machine with many environments, so the answer is kept in the state folder's
native-names.json, keyed by path and checked against size and mtime: a file that changed is
read again. Read once per process, written back once at exit when it grew; a damaged or
unwritable cache is ignored.
"""

from __future__ import annotations

import json
import os
from typing import Callable, Optional

CACHE_ENTRIES = 50000  # the newest kept: about 120 bytes each


class NativeNames:
    def __init__(self) -> None:
        self._entries: Optional[dict[str, list]] = None
        self._dirty = False

    def _path(self) -> str:
        from cudnn_doctor.paths import state_dir

        return os.path.join(state_dir(), "native-names.json")

    def _load(self) -> dict[str, list]:
        if self._entries is None:
            self._entries = {}
            try:
                with open(self._path(), "rb") as handle:
                    document = json.loads(handle.read(64 << 20))
                files = document["files"]
                if isinstance(files, dict):
                    self._entries = {
                        k: v
                        for k, v in files.items()
                        if isinstance(v, list) and len(v) == 3 and isinstance(v[2], list) and all(isinstance(n, str) for n in v[2])
                    }
            except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):  # a damaged cache is no cache
                self._entries = {}
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
        files = dict(list(self._entries.items())[-CACHE_ENTRIES:])
        path = self._path()
        temp = f"{path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(temp, "w", encoding="utf-8") as handle:
                json.dump({"files": files}, handle)
            os.replace(temp, path)
            self._dirty = False
        except OSError:
            try:
                os.unlink(temp)
            except OSError:
                pass


NATIVE_NAMES = NativeNames()
