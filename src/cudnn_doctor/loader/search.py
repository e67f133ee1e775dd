"""The loader's search order for a library loaded by name, and the first file it finds.

Windows, `LoadLibrary("x.dll")` without flags (standard search order, SafeDllSearchMode):
  1. the folder of the executable (the Python interpreter),
  2. the system folder (`%SystemRoot%\\System32`),
  3. the 16-bit system folder (`%SystemRoot%\\System`),
  4. the Windows folder (`%SystemRoot%`),
  5. the current folder (unknown to a diagnosis; skipped),
  6. the folders of `PATH`, in order.
Linux, `dlopen("libx.so.N")` of a library without RPATH/RUNPATH:
  1. `LD_LIBRARY_PATH` folders, in order,
  2. the loader cache (`ldconfig -p`),
  3. the default folders `/lib`, `/usr/lib`, `/lib64`, `/usr/lib64`.
(RPATH/RUNPATH of the loading object come with the full import-tree resolution.)

Each folder is listed once and indexed by file name, so resolving many names over a long
PATH costs one listing per folder, not one stat per name and folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from cudnn_doctor.system.interface import System

LINUX_DEFAULT_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")
_CACHE_LINE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")


@dataclass
class SearchPath:
    """An ordered list of places, each `(label, folder)`, plus the Linux loader cache."""

    system: System
    places: list[tuple[str, str]]
    cache: dict[str, str] = field(default_factory=dict)
    _index: dict[str, Optional[dict[str, str]]] = field(default_factory=dict)

    def _listing(self, folder: str) -> dict[str, str]:
        rules = self.system.paths
        key = rules.key(folder)
        if key not in self._index:
            entries = self.system.list_dir(folder)
            self._index[key] = None if entries is None else {
                rules.name_key(rules.basename(e.path)): e.path for e in entries if not e.is_dir
            }
        return self._index[key] or {}

    def find(self, name: str) -> tuple[Optional[str], tuple[str, ...]]:
        """The path the loader would open for `name`, and every place it looked, in order."""
        rules = self.system.paths
        wanted = rules.name_key(name)
        searched = []
        for label, folder in self.places:
            if label == "ld.so.cache":
                searched.append("ld.so.cache")
                if name in self.cache and self.system.exists(self.cache[name]):
                    return self.cache[name], tuple(searched)
                continue
            searched.append(folder)
            hit = self._listing(folder).get(wanted)
            if hit is not None:
                return hit, tuple(searched)
        return None, tuple(searched)

    def copies(self, name: str, folders: list[str]) -> tuple[str, ...]:
        """Files called `name` in the given folders (places the search may not reach)."""
        wanted = self.system.paths.name_key(name)
        return tuple(hit for hit in (self._listing(f).get(wanted) for f in folders) if hit)


def process_search_path(system: System, executable: Optional[str]) -> SearchPath:
    """The search order for libraries a process started from `executable` loads by name."""
    rules, env = system.paths, system.env()
    places: list[tuple[str, str]] = []
    if rules.windows:
        root = env.get("SystemRoot", "C:\\Windows")
        if executable:
            places.append(("executable folder", rules.dirname(executable)))
        places += [("system folder", rules.join(root, "System32")), ("16-bit system folder", rules.join(root, "System")),
                   ("Windows folder", root)]
        places += [("PATH", entry) for entry in rules.split_list(env.get("PATH", "")) if entry]
        return SearchPath(system, _dedupe(system, places))
    places += [("LD_LIBRARY_PATH", entry) for entry in rules.split_list(env.get("LD_LIBRARY_PATH", "")) if entry]
    places.append(("ld.so.cache", ""))
    places += [("default", folder) for folder in LINUX_DEFAULT_DIRS]
    return SearchPath(system, _dedupe(system, places), cache=loader_cache(system))


def loader_cache(system: System) -> dict[str, str]:
    """`ldconfig -p`: library name → path, first entry for a name wins (as in ld.so), this arch only."""
    result = system.run(["ldconfig", "-p"], timeout=10)
    if not result.ok:
        return {}
    wanted_abi = "x86-64" if system.arch == "x86_64" else "AArch64"
    cache: dict[str, str] = {}
    for line in result.stdout.splitlines():
        match = _CACHE_LINE.match(line)
        if match and (wanted_abi in match.group(2) or "," not in match.group(2)):
            cache.setdefault(match.group(1), match.group(3))
    return cache


def _dedupe(system: System, places: list[tuple[str, str]]) -> list[tuple[str, str]]:
    seen, result = set(), []
    for label, folder in places:
        key = (label, system.paths.key(folder)) if label == "ld.so.cache" else system.paths.key(folder)
        if key not in seen:
            seen.add(key)
            result.append((label, folder))
    return result
