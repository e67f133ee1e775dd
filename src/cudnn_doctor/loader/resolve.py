"""The transitive closure of what a process loads: every name, where the loader finds it, what is missing.

Starting from root names or paths (what a framework asks for), each found library's static
imports and run-time loads are followed with the search order of the OS (`windows.py`,
`linux.py`). A module already loaded under the same name is reused, as both loaders do.
On Windows a root carries the search mode of the call that loads it (`Root`, `windows.py`):
its imports, and theirs, are searched the way that call asked for; a run-time load starts a
new, standard search.
Run-time loads come from the binary (fixture `loads`, or a scan of the file) and, when that
list is not known to be complete, from the knowledge data. Names of one library that differ
only in version are one try-list (any member satisfies it), and a name the library completes at
run time (`libnvrtc.so.%d`) is satisfied by any file of that shape (`binaries/names.py`).
"""

from __future__ import annotations

import re
from collections import deque
from typing import Optional, Sequence, Union

from cudnn_doctor import knowledge
from cudnn_doctor.binaries import BinaryInfo, machine_of_arch
from cudnn_doctor.binaries.names import family, group_loads, is_pattern, pattern_regex
from cudnn_doctor.kinds import LoadHow
from cudnn_doctor.loader import driver, linux, windows
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.loads import (
    EMPTY,
    NOT_A_BINARY,
    UNREADABLE,
    WRONG_ARCHITECTURE,
    Candidate,
    LoadStep,
    Resolution,
    Unusable,
)
from cudnn_doctor.record import Record
from cudnn_doctor.system.interface import System

# ld.so passes over these and keeps searching ("skipping incompatible", EACCES); anything else it takes and fails on.
SKIPPED_BY_LD_SO = (WRONG_ARCHITECTURE, UNREADABLE)


class Root(Record):
    """A library a framework asks for, and how (Windows): `mode` is one of windows.MODES;
    `load_dir` the folder of the DLL whose load it is part of (by default its own, for a path)."""

    name: str
    mode: str = windows.STANDARD
    load_dir: Optional[str] = None
    # names it loads at run time that its file does not spell (TensorFlow's dso_loader builds `libcudnn.so.9` from
    # parts):
    # searched from it as its own dlopen calls are, through its RUNPATH
    loads: tuple[str, ...] = ()


class _Request(Record):
    name: str
    requester: str
    how: LoadHow
    chain: tuple[tuple[tuple[str, ...], str], ...]  # (DT_RPATH, origin) from the requester up to the executable
    runpath: tuple[str, ...]
    optional: bool = False
    mode: str = windows.STANDARD  # Windows: the search mode of the load this request is part of
    load_dir: Optional[str] = None
    one_of: tuple[str, ...] = ()  # a try-list: `name` is its first member
    loads: tuple[str, ...] = ()  # a root's run-time loads its file does not spell (Root.loads)


class Resolver:
    """Resolves load trees on one System; folder listings are shared between trees."""

    def __init__(
        self, system: System, index: Optional[FolderIndex] = None, driver_files: Optional[tuple[str, ...]] = None
    ) -> None:
        """`driver_files`: the driver's own files when the caller has them (the probes do); else read when a driver
        name is first missed."""
        self.system = system
        self.index = index or FolderIndex(system)
        self.windows = system.paths.windows
        self.machine = machine_of_arch(system.os, system.arch)
        table = knowledge.table("libraries")
        self._os_provided = re.compile(table.os_provided.windows if self.windows else table.os_provided.linux)
        self._driver_provided = re.compile(table.driver_provided.pattern)
        self._driver_files = driver_files
        cudnn = knowledge.table("cudnn")
        self._optional = {row.name for row in cudnn.optional_loads if not is_pattern(row.name)}
        # rows spelt as patterns (`cufft64_%d.dll`): every file of that shape is an optional run-time load
        self._optional_shapes = [
            pattern_regex(row.name, self.windows) for row in cudnn.optional_loads if is_pattern(row.name)
        ]
        for release in cudnn.releases:  # parts only later releases ship
            self._optional |= {knowledge.cudnn_file_name(part, release.major, system.os) for part in release.optional}
        self._known_loads = {self.system.paths.name_key(row.library): row.loads for row in cudnn.runtime_loads}

    def resolve(
        self,
        framework: str,
        executable: str,
        roots: Sequence[Union[str, Root]],
        dll_directories: Sequence[str] = (),
        elsewhere: Sequence[str] = (),
    ) -> Resolution:
        """`dll_directories`: folders added with os.add_dll_directory (Windows);
        `elsewhere`: folders to look in for copies of a root that the search does not reach (evidence for the fix)."""
        rules = self.system.paths
        exe_binary = self.system.binary(executable) if self.system.exists(executable) else None
        exe_chain = ((tuple(exe_binary.rpath) if exe_binary else (), rules.dirname(executable)),)
        runpath = tuple(exe_binary.runpath) if exe_binary else ()
        queue = deque(
            _Request(
                root.name,
                executable,
                LoadHow.ROOT,
                exe_chain,
                runpath,
                mode=root.mode,
                load_dir=root.load_dir,
                loads=root.loads,
            )
            for root in map(self._root, roots)
        )
        loaded: dict[str, str] = {}
        steps: list[LoadStep] = []
        while queue:
            request = queue.popleft()
            reused = self._loaded_as(request.one_of or (request.name,), loaded)
            if reused is not None:
                steps.append(
                    LoadStep(
                        requester=request.requester,
                        name=reused[0],
                        how=request.how,
                        winner=reused[1],
                        reused=True,
                        one_of=request.one_of,
                    )
                )
                continue
            step, binary = self._find_any(request, executable, tuple(dll_directories))
            if request.how is LoadHow.ROOT and step.winner is None and elsewhere:
                copies = (self.index.find(folder, request.name) for folder in elsewhere)
                step = step._replace(elsewhere=tuple(dict.fromkeys(c for c in copies if c)))
            steps.append(step)
            if step.winner is None or binary is None:
                continue
            if is_pattern(step.name):
                loaded.setdefault(
                    rules.name_key(rules.basename(step.winner)), step.winner
                )  # what a pattern found goes by its file name
            else:
                loaded[rules.name_key(rules.basename(step.name))] = step.winner
            if binary.soname:
                loaded.setdefault(rules.name_key(binary.soname), step.winner)
            chain = ((tuple(binary.rpath), rules.dirname(step.winner)), *request.chain)
            told = [((name,), LoadHow.LOAD, False) for name in request.loads]
            for names, how, optional in [*self._dependencies(step.winner, binary), *told]:
                # an import is part of the same load; a run-time load is a new LoadLibrary call by name
                mode, load_dir = (request.mode, request.load_dir) if how is LoadHow.IMPORT else (windows.STANDARD, None)
                one_of = names if len(names) > 1 else ()
                queue.append(
                    _Request(names[0], step.winner, how, chain, tuple(binary.runpath), optional, mode, load_dir, one_of)
                )
        return Resolution(framework, executable, tuple(self._settle_runtime_loads(steps, loaded)))

    def _root(self, root: Union[str, Root]) -> Root:
        """A root with its search mode settled: a Python extension module (`.pyd`) by path is
        loaded as CPython does (DEFAULT_DIRS); a mode that searches the DLL's own folder gets it."""
        rules = self.system.paths
        if isinstance(root, str):
            pyd = self.windows and rules.is_abs(root) and root.lower().endswith(".pyd")
            root = Root(root, windows.DEFAULT_DIRS if pyd else windows.STANDARD)
        if root.mode not in windows.MODES:
            raise ValueError(f"unknown Windows search mode {root.mode!r}")
        if root.load_dir is None and root.mode in windows.WITH_LOAD_DIR and rules.is_abs(root.name):
            root = root._replace(load_dir=rules.dirname(root.name))
        return root

    def _settle_runtime_loads(self, steps: list[LoadStep], loaded: dict[str, str]) -> list[LoadStep]:
        """A name loaded at run time is found if any part of the process loaded it: the order of
        run-time loads is not known statically, and a loaded module is reused by name."""
        settled = []
        for step in steps:
            found = (
                self._loaded_as(step.one_of or (step.name,), loaded)
                if step.how is LoadHow.LOAD and step.failed and not step.blocked_by
                else None
            )
            if found is not None:
                step = step._replace(name=found[0], winner=found[1], reused=True)
            settled.append(step)
        return settled

    def _loaded_as(self, names: Sequence[str], loaded: dict[str, str]) -> Optional[tuple[str, str]]:
        """(name, path) of the first of `names` a module already loaded goes by; a pattern matches any such name."""
        rules = self.system.paths
        for name in names:
            if is_pattern(name):
                regex = pattern_regex(rules.basename(name), self.windows)
                hit = next((path for key, path in loaded.items() if regex.match(key)), None)
            else:
                hit = loaded.get(rules.name_key(rules.basename(name)))
            if hit is not None:
                return name, hit
        return None

    def _dependencies(self, path: str, binary: BinaryInfo) -> list[tuple[tuple[str, ...], LoadHow, bool]]:
        """(names, import | load, optional): one name, or a try-list of one library's versions.
        Unversioned `.so` names found by a scan are fallback spellings (development links): a
        miss there is optional. A try-list is optional when all its members are; one with an
        imported member is that import's business."""
        deps: list[tuple[tuple[str, ...], LoadHow, bool]] = [
            ((name,), LoadHow.IMPORT, False) for name in binary.imports
        ]
        loads = list(binary.loads)
        if not binary.loads_complete:
            name = self.system.paths.name_key(self.system.paths.basename(path))
            soname = self.system.paths.name_key(binary.soname) if binary.soname else None
            extra: Sequence[str] = (
                self._known_loads.get(name) or (self._known_loads.get(soname) if soname else None) or []
            )
            loads += [n for n in extra if n not in loads]
        imported = {family(self.system.paths.name_key(n)) for n in binary.imports}
        for names in group_loads(loads):
            if not any(family(self.system.paths.name_key(n)) in imported for n in names):
                deps.append((names, LoadHow.LOAD, all(self._optional_load(n, binary.loads_complete) for n in names)))
        return deps

    def _optional_load(self, name: str, complete: bool) -> bool:
        """A load the library survives without: a knowledge row says so (for a pattern, of its unversioned
        name: `libnvrtc.so.%d` as `libnvrtc.so`; a row spelt as a pattern, of every name of its shape:
        a feature-specific lazy load such as cuFFT for FFT operators), or a scan found an unversioned `.so` name."""
        base = self.system.paths.basename(name)
        if base in self._optional or (is_pattern(base) and family(base) in self._optional):
            return True
        return any(shape.match(base) for shape in self._optional_shapes) or (not complete and base.endswith(".so"))

    def _places(self, request: _Request, executable: str, dll_directories: tuple[str, ...]) -> list[tuple[str, str]]:
        if self.windows:
            return windows.search_places(self.system, executable, request.mode, request.load_dir, dll_directories)
        origin = self.system.paths.dirname(request.requester)
        return linux.search_places(self.system, request.runpath, request.chain, origin)

    def _find_any(
        self, request: _Request, executable: str, dll_directories: tuple[str, ...]
    ) -> tuple[LoadStep, Optional[BinaryInfo]]:
        """The first member of a try-list the loader can load; when none, the first member's search
        (or the first that met a broken file), naming the whole list."""
        if not request.one_of:
            return self._find(request, executable, dll_directories)
        tries = []
        for name in request.one_of:
            step, binary = self._find(request._replace(name=name), executable, dll_directories)
            if not step.failed:
                return step._replace(one_of=request.one_of), binary
            tries.append((step, binary))
        step, binary = next((t for t in tries if t[0].blocked_by or t[0].candidates), tries[0])
        return step._replace(one_of=request.one_of), binary

    def _find(
        self, request: _Request, executable: str, dll_directories: tuple[str, ...]
    ) -> tuple[LoadStep, Optional[BinaryInfo]]:
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
            for path in self._files_named(name, label, folder):
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
        provided: Optional[str] = None
        elsewhere: tuple[str, ...] = ()
        if winner is None and not candidates:
            if self._driver_provided.match(name):
                provided, elsewhere = self._driver_name(name, searched)
            elif self._os_provided.match(name):
                provided = "os"
        step = LoadStep(
            requester=request.requester,
            name=request.name,
            how=request.how,
            winner=winner,
            candidates=tuple(candidates),
            searched=tuple(searched),
            optional=optional,
            provided_by=provided,
            blocked_by=stopped,
            search=request.mode if self.windows else None,
            elsewhere=elsewhere,
        )
        return step, winner_binary

    def _files_named(self, name: str, label: str, folder: str) -> list[str]:
        """The files in one place of the search that answer `name`: the file of that name, or for a
        pattern every file of its shape, newest version first."""
        if not is_pattern(name):
            path = self.index.cache.get(name) if label == "ld.so.cache" else self.index.find(folder, name)
            return [] if path is None or (label == "ld.so.cache" and not self.system.exists(path)) else [path]
        regex = pattern_regex(name, self.windows)
        if label == "ld.so.cache":
            found = [
                (key, path) for key, path in self.index.cache.items() if regex.match(key) and self.system.exists(path)
            ]
        else:
            found = [(key, path) for key, path in self.index.files(folder).items() if regex.match(key)]
        return [path for _, path in sorted(found, key=lambda item: _version_key(item[0]), reverse=True)]

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
        copies = tuple(
            c for c in driver.copies(self.system, self.index, name) if rules.key(rules.dirname(c)) not in reached
        )
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


def _version_key(name: str) -> tuple[int, ...]:
    """libnvrtc.so.13 after libnvrtc.so.12, whatever the string order says."""
    return tuple(int(n) for n in re.findall(r"[0-9]+", name))
