"""The transitive closure of what a process loads: every name, where the loader finds it, what is missing.

Starting from root names or paths (what a framework asks for), each found library's static
imports and run-time loads are followed with the search order of the OS (`windows.py`,
`linux.py`). A module already loaded under the same name is reused, as both loaders do.
Run-time loads come from the binary (fixture `loads`, or a scan of the file) and, when that
list is not known to be complete, from the knowledge data.
"""

from __future__ import annotations

import re
from collections import deque
from typing import NamedTuple, Optional, Sequence

from cudnn_doctor import knowledge
from cudnn_doctor.binaries import BinaryInfo, machine_of_arch
from cudnn_doctor.facts import EMPTY, NOT_A_BINARY, UNREADABLE, WRONG_ARCHITECTURE, Candidate, LoadStep, Resolution, Unusable
from cudnn_doctor.loader import driver, linux, windows
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.system.interface import System

# ld.so passes over these and keeps searching ("skipping incompatible", EACCES); anything else it takes and fails on.
SKIPPED_BY_LD_SO = (WRONG_ARCHITECTURE, UNREADABLE)


class _Request(NamedTuple):
    name: str
    requester: str
    how: str
    chain: tuple[tuple[tuple[str, ...], str], ...]  # (DT_RPATH, origin) from the requester up to the executable
    runpath: tuple[str, ...]
    optional: bool = False


class Resolver:
    """Resolves load trees on one System; folder listings are shared between trees."""

    def __init__(self, system: System, index: Optional[FolderIndex] = None) -> None:
        self.system = system
        self.index = index or FolderIndex(system)
        self.windows = system.paths.windows
        self.machine = machine_of_arch(system.os, system.arch)
        table = knowledge.table("libraries")
        self._os_provided = re.compile(table.os_provided.windows if self.windows else table.os_provided.linux)
        self._driver_provided = re.compile(table.driver_provided.pattern)
        self._driver_files: Optional[tuple[str, ...]] = None  # read when a driver name is first missed
        cudnn = knowledge.table("cudnn")
        self._optional = {row.name for row in cudnn.optional_loads}
        for release in cudnn.releases:  # parts only later releases ship
            self._optional |= {knowledge.cudnn_file_name(part, release.major, system.os) for part in release.optional}
        self._known_loads = {self.system.paths.name_key(row.library): row.loads for row in cudnn.runtime_loads}

    def resolve(self, framework: str, executable: str, roots: Sequence[str], dll_directories: Sequence[str] = (), elsewhere: Sequence[str] = ()) -> Resolution:
        """`elsewhere`: folders to look in for copies of a root that the search does not reach (evidence for the fix)."""
        rules = self.system.paths
        exe_binary = self.system.binary(executable) if self.system.exists(executable) else None
        exe_chain = ((tuple(exe_binary.rpath) if exe_binary else (), rules.dirname(executable)),)
        queue = deque(_Request(root, executable, "root", exe_chain, tuple(exe_binary.runpath) if exe_binary else ()) for root in roots)
        loaded: dict[str, str] = {}
        steps: list[LoadStep] = []
        while queue:
            request = queue.popleft()
            key = rules.name_key(rules.basename(request.name))
            if key in loaded:
                steps.append(LoadStep(request.requester, request.name, request.how, loaded[key], reused=True))
                continue
            step, binary = self._find(request, executable, tuple(dll_directories))
            if request.how == "root" and step.winner is None and elsewhere:
                copies = (self.index.find(folder, request.name) for folder in elsewhere)
                step = step._replace(elsewhere=tuple(dict.fromkeys(c for c in copies if c)))
            steps.append(step)
            if step.winner is None or binary is None:
                continue
            loaded[key] = step.winner
            if binary.soname:
                loaded.setdefault(rules.name_key(binary.soname), step.winner)
            chain = ((tuple(binary.rpath), rules.dirname(step.winner)), *request.chain)
            for name, how, optional in self._dependencies(step.winner, binary):
                queue.append(_Request(name, step.winner, how, chain, tuple(binary.runpath), optional))
        return Resolution(framework, executable, tuple(self._settle_runtime_loads(steps, loaded)))

    def _settle_runtime_loads(self, steps: list[LoadStep], loaded: dict[str, str]) -> list[LoadStep]:
        """A name loaded at run time is found if any part of the process loaded it: the order of
        run-time loads is not known statically, and a loaded module is reused by name."""
        rules = self.system.paths
        settled = []
        for step in steps:
            key = rules.name_key(rules.basename(step.name))
            if step.how == "load" and step.failed and not step.blocked_by and key in loaded:
                step = step._replace(winner=loaded[key], reused=True)
            settled.append(step)
        return settled

    def _dependencies(self, path: str, binary: BinaryInfo) -> list[tuple[str, str, bool]]:
        """(name, import | load, optional). Unversioned `.so` names found by a scan are fallback
        spellings (development links): a miss there is optional."""
        deps = [(name, "import", False) for name in binary.imports]
        loads = list(binary.loads)
        if not binary.loads_complete:
            name = self.system.paths.name_key(self.system.paths.basename(path))
            soname = self.system.paths.name_key(binary.soname) if binary.soname else None
            extra = self._known_loads.get(name) or (self._known_loads.get(soname) if soname else None) or []
            loads += [n for n in extra if n not in loads]
        deps += [(name, "load", not binary.loads_complete and name.endswith(".so")) for name in loads if name not in binary.imports]
        return deps

    def _places(self, request: _Request, executable: str, dll_directories: tuple[str, ...]) -> list[tuple[str, str]]:
        if self.windows:
            return windows.search_places(self.system, executable, dll_directories)
        origin = self.system.paths.dirname(request.requester)
        return linux.search_places(self.system, request.runpath, request.chain, origin)

    def _find(self, request: _Request, executable: str, dll_directories: tuple[str, ...]) -> tuple[LoadStep, Optional[BinaryInfo]]:
        rules = self.system.paths
        optional = request.optional or rules.basename(request.name) in self._optional
        if rules.is_abs(request.name):
            places = [("path", rules.dirname(request.name))]
            name = rules.basename(request.name)
        else:
            places = self._places(request, executable, dll_directories)
            name = request.name
        candidates: list[Candidate] = []
        winner: Optional[str] = None
        winner_binary: Optional[BinaryInfo] = None
        stopped: Optional[str] = None
        searched: list[str] = []
        seen: set[str] = set()
        for label, folder in places:
            key = label if label == "ld.so.cache" else rules.key(folder)
            if key in seen:
                continue  # a folder listed twice (PATH repeating System32) cannot find anything new
            seen.add(key)
            searched.append(label if label == "ld.so.cache" else folder)
            path = self.index.cache.get(name) if label == "ld.so.cache" else self.index.find(folder, name)
            if path is None or (label == "ld.so.cache" and not self.system.exists(path)):
                continue
            if any(self.system.paths.same(path, c.path) for c in candidates):
                continue  # the same file reached twice (cache and default folder)
            binary = self.system.binary(path)
            problem = self._problem(path, binary)
            candidates.append(Candidate(path, label, problem))
            if winner is None and not stopped:
                if problem is None:
                    winner, winner_binary = path, binary
                elif self.windows or problem.kind not in SKIPPED_BY_LD_SO:
                    stopped = path  # the first file of that name is taken, broken or not (ld.so: "file too short")
        provided, elsewhere = None, ()
        if winner is None and not candidates:
            if self._driver_provided.match(name):
                provided, elsewhere = self._driver_name(name, searched)
            elif self._os_provided.match(name):
                provided = "os"
        step = LoadStep(
            request.requester,
            request.name,
            request.how,
            winner,
            tuple(candidates),
            tuple(searched),
            optional=optional,
            provided_by=provided,
            blocked_by=stopped,
            elsewhere=elsewhere,
        )
        return step, winner_binary

    def _driver_name(self, name: str, searched: list[str]) -> tuple[Optional[str], tuple[str, ...]]:
        """(provided_by, copies the search does not reach) for a driver name the search did not find.

        Provided by the driver only while no driver is visible (then no-nvidia-gpu says it), or when
        the only copies lie in a driver folder that the loader cache may list but the cache is not
        known (no `ldconfig -p`): the emulation cannot tell. Otherwise it is missing for real."""
        if self._driver_files is None:
            self._driver_files = driver.driver_files(self.system, self.index)
        if not self._driver_files:
            return "driver", ()
        rules = self.system.paths
        reached = {rules.key(folder) for folder in searched if folder != "ld.so.cache"}
        copies = tuple(c for c in driver.copies(self.system, self.index, name) if rules.key(rules.dirname(c)) not in reached)
        if copies and not self.windows and not self.index.cache_known:
            return "driver", copies
        return None, copies

    def _problem(self, path: str, binary: Optional[BinaryInfo]) -> Optional[Unusable]:
        info = self.system.stat(path)
        if info is not None and not info.readable:
            return Unusable(UNREADABLE, "permission denied")
        if info is not None and info.size == 0:
            return Unusable(EMPTY)
        if binary is None or binary.format is None:
            return Unusable(NOT_A_BINARY, binary.error if binary and binary.error else "unknown")
        if binary.machine and binary.machine != self.machine:
            return Unusable(WRONG_ARCHITECTURE, f"{binary.machine}, the process is {self.machine}")
        return None
