"""Folder listings and the Linux loader cache, each read once per diagnosis.

Resolving many names over a long PATH then costs one listing per folder, not one stat per
name and folder: the time grows linearly with the number of folders.
"""

from __future__ import annotations

import threading
from typing import Optional

from cudnn_doctor.lazyre import regex
from cudnn_doctor.system.interface import System

_LDCONFIG = ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig")
_CACHE_LINE = regex(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")


class FolderIndex:
    """File name (case-folded on Windows) → path, per folder, listed lazily."""

    def __init__(self, system: System) -> None:
        self.system = system
        self._listings: dict[str, Optional[dict[str, str]]] = {}
        self._cache: Optional[dict[str, str]] = None
        self._cache_known = False
        self._reading: Optional[threading.Thread] = None
        self._by_real: dict[str, Optional[dict[str, str]]] = {}  # real path → listing (see _real)

    def prefetch(self) -> None:
        """Start reading the loader cache now, in a thread, where the System may run two commands at once (the live
        machine): `ldconfig -p` then runs while the other probes do, instead of after them."""
        if (
            self._cache is None
            and self._reading is None
            and not self.system.paths.windows
            and getattr(self.system, "runs_concurrently", False)
        ):
            self._reading = threading.Thread(target=self._read_quietly, name="ldconfig", daemon=True)
            self._reading.start()

    def _read_quietly(self) -> None:
        try:
            self._read_cache()
        except Exception:  # read again in the caller's thread, where an error is a probe failure as before
            self._cache, self._cache_known = None, False

    def files(self, folder: str) -> dict[str, str]:
        rules = self.system.paths
        key = rules.key(folder)
        if key not in self._listings:
            self._listings[key] = self._list(folder)
        return self._listings[key] or {}

    def _list(self, folder: str) -> Optional[dict[str, str]]:
        rules = self.system.paths
        real = self._real(folder)
        if real is not None and real in self._by_real:
            return _rebased(self._by_real[real], folder)
        entries = self.system.list_dir(folder, sizes=False)
        sep = rules.sep
        # listing paths are folder + sep + name already: slicing is enough, and this runs for every file on PATH
        listing = (
            None
            if entries is None
            else {rules.name_key(e.path[e.path.rfind(sep) + 1 :]): e.path for e in entries if not e.is_dir}
        )
        if real is not None:
            self._by_real[real] = listing
        return listing

    def _real(self, folder: str) -> Optional[str]:
        """The folder's real path where one listing may serve every name of a folder: the live Linux machine, where
        merged /usr makes /lib/x86_64-linux-gnu and /usr/lib/x86_64-linux-gnu one folder of a thousand files."""
        if self.system.paths.windows or not getattr(self.system, "lists_with_scandir", False):
            return None
        return self.system.realpath(folder)

    def find(self, folder: str, name: str) -> Optional[str]:
        return self.files(folder).get(self.system.paths.name_key(name))

    @property
    def cache(self) -> dict[str, str]:
        """`ldconfig -p` (from PATH, else /sbin): name → path, first entry of this machine's ABI wins (as in ld.so)."""
        if self._reading is not None:
            self._reading.join()
            self._reading = None
        if self._cache is None:
            self._read_cache()
        return self._cache  # type: ignore[return-value]  # set by _read_cache

    def _read_cache(self) -> None:
        cache: dict[str, str] = {}
        known = False
        if not self.system.paths.windows:
            for program in _LDCONFIG:  # ordinary users' PATH often lacks /sbin (Debian)
                result = self.system.run([program, "-p"], timeout=10)
                if not result.not_found:
                    break
            known = result.ok
            abi = "x86-64" if self.system.arch == "x86_64" else "AArch64"
            for line in result.stdout.splitlines() if result.ok else []:
                match = _CACHE_LINE.match(line)
                if match and (abi in match.group(2) or "," not in match.group(2)):
                    cache.setdefault(match.group(1), match.group(3))
        self._cache, self._cache_known = cache, known

    @property
    def cache_known(self) -> bool:
        """`ldconfig -p` answered: a name missing from the cache is really not in it."""
        _ = self.cache
        return self._cache_known


def _rebased(listing: Optional[dict[str, str]], folder: str) -> Optional[dict[str, str]]:
    """A listing of the same folder under another name, each path spelt as os.scandir(folder) spells it
    (posixpath.join(folder, name))."""
    if listing is None:
        return None
    prefix = folder if folder.endswith("/") else folder + "/"
    return {name: prefix + path[path.rfind("/") + 1 :] for name, path in listing.items()}
