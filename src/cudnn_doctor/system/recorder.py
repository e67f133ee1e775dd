"""RecordingSystem: a System wrapper that remembers every answer, for `snapshot`.

Whatever the probes looked at (files, folders, commands, NVML, interpreters and their
framework reports) becomes a machine-fixture/1 document; replaying it with FixtureSystem
gives the probes the same answers, hence the same findings.
"""

from __future__ import annotations

from typing import Any, BinaryIO, Callable, Collection, ContextManager, Mapping, Optional, Sequence

from cudnn_doctor.binaries import BinaryInfo
from cudnn_doctor.privacy import kept_environment, kept_persistent
from cudnn_doctor.system.fixture_format import SCHEMA_ID, command_key
from cudnn_doctor.system.interface import CommandResult, Env, FileInfo, PythonInfo, System

_MAX_LINK_HOPS = 40


class RecordingSystem(System):
    """Delegates to `inner` and records what it answered."""

    def __init__(self, inner: System) -> None:
        self.inner = inner
        self.os, self.arch, self.wsl = inner.os, inner.arch, inner.wsl
        self._files: dict[str, dict[str, Any]] = {}
        self._commands: dict[str, dict[str, Any]] = {}
        self._pythons: dict[str, dict[str, Any]] = {}
        self._nvml: Optional[dict[str, Any]] = None
        self._current: Optional[str] = None
        self._resolved: dict[str, str] = {}  # path → path with its links resolved (those links recorded)

    # Recording helpers ------------------------------------------------------------------

    def _record_links_along(self, path: str) -> Optional[str]:
        """Record every symbolic link met on the way to `path`, those inside link targets too (`/usr/local/cuda` →
        `/etc/alternatives/cuda` → `cuda-13.0`), so the replay resolves it the same way; returns the resolved path,
        None for a loop (more than 40 links, the kernel's ELOOP)."""
        return self._resolve(self.paths.norm(path), [_MAX_LINK_HOPS])

    def _resolve(self, path: str, budget: list[int]) -> Optional[str]:
        rules = self.paths
        known = self._resolved.get(path)
        if known is not None:
            return known
        parent = rules.dirname(path)
        if not parent or rules.same(parent, path):
            return path
        folder = self._resolve(parent, budget)
        if folder is None:
            return None
        candidate = rules.join(folder, rules.basename(path))
        target = self.inner.link_target(candidate)  # the folder is resolved: only the last part can be a link
        if target is not None:
            if budget[0] <= 0:
                return None
            budget[0] -= 1
            self._files[candidate] = {"link": target}
            resolved = self._resolve(rules.norm(target if rules.is_abs(target) else rules.join(folder, target)), budget)
            if resolved is None:
                return None
            candidate = resolved
        self._resolved[path] = candidate
        return candidate

    def _record(self, info: FileInfo, text: Optional[str] = None) -> None:
        """Record a file or folder at its resolved path (`info.path`): size, readability, text."""
        rules = self.paths
        if info.is_dir:
            key = rules.norm(info.path).rstrip(rules.sep) + rules.sep
            self._files.setdefault(key, {})
            return
        entry = self._files.setdefault(rules.norm(info.path), {})
        entry["size"] = info.size
        if not info.readable:
            entry["readable"] = False
        if text is not None and len(text) >= len(
            entry.get("text", "")
        ):  # the longest read wins: a later short read must not cut it
            entry["text"] = text
        if "text" in entry and len(entry["text"].encode("utf-8")) == info.size:
            del entry["size"]  # implied by the text

    def _record_path(self, path: str, info: FileInfo, text: Optional[str] = None) -> None:
        """Record `path` as stat answered for it: its links, then what they lead to."""
        resolved = self._record_links_along(path)
        if resolved is not None:
            self._record(FileInfo(resolved, info.is_dir, info.size, None, info.readable), text)

    # System -----------------------------------------------------------------------------

    def env(self) -> Env:
        return self.inner.env()

    def persistent_env(self) -> Optional[dict[str, dict[str, str]]]:
        return self.inner.persistent_env()

    def stat(self, path: str) -> Optional[FileInfo]:
        info = self.inner.stat(path)
        if info is not None:
            self._record_path(path, info)
        return info

    def list_dir(self, path: str, sizes: bool = True) -> Optional[list[FileInfo]]:
        listing = self.inner.list_dir(path, sizes=True)
        if listing is not None:
            folder = self._record_links_along(path)
            if folder is not None:
                self._record(FileInfo(folder, True))
            for entry in listing:
                if entry.link is None:
                    if folder is not None:
                        self._record(
                            FileInfo(
                                self.paths.join(folder, self.paths.basename(entry.path)),
                                entry.is_dir,
                                entry.size,
                                None,
                                entry.readable,
                            )
                        )
                    continue
                target = self.inner.stat(entry.path)  # a link: record where it leads, or the replay drops the entry
                if target is not None:
                    self._record_path(entry.path, target)
        return listing

    def read_text(self, path: str, limit: int = 1 << 20) -> Optional[str]:
        text = self.inner.read_text(path, limit)
        info = self.inner.stat(path)
        if info is not None and not info.is_dir:
            self._record_path(path, info, text)
        return text

    def realpath(self, path: str) -> str:
        self._record_links_along(path)
        return self.inner.realpath(path)

    def run(self, argv: Sequence[str], timeout: float = 10.0) -> CommandResult:
        result = self.inner.run(argv, timeout)
        key = command_key(self.paths, argv)
        if result.timed_out:
            self._commands[key] = {"timeout": True}
        elif not result.not_found:
            self._commands[key] = {"returncode": result.returncode, "stdout": result.stdout, "stderr": result.stderr}
        return result

    def nvml(self) -> Optional[dict[str, Any]]:
        self._nvml = self.inner.nvml()
        return self._nvml

    def native_files(self, folder: str, skip: Collection[str] = ()) -> list[str]:
        """Not recorded: a native file matters to the replay only when it names a CUDA library (cuda_names records
        those); one the replay does not see is not a root there either, so a snapshot does not list every package's
        files."""
        return self.inner.native_files(folder, skip)

    def cuda_names(self, path: str) -> tuple[str, ...]:
        """A file that names a CUDA library is recorded with its binary facts (it is a root); the others as plain
        files."""
        names = self.inner.cuda_names(path)
        if names:
            self.binary(path)
        return names

    def binary(self, path: str) -> Optional[BinaryInfo]:
        info = self.inner.binary(path)
        file = self.inner.stat(path)
        if info is None or file is None or file.is_dir:
            return info
        self._record_path(path, file)
        resolved = self._record_links_along(path)
        if resolved is None:
            return info
        entry = self._files[self.paths.norm(resolved)]
        if info.format is None:
            entry["binary_error"] = info.error or "not a PE or ELF file"
            return info
        entry.update(imports=list(info.imports), loads=list(info.loads))
        if not info.loads_complete:
            # a scan's list: the replay adds knowledge loads and treats `.so` misses as optional, as live
            entry["loads_complete"] = False
        if info.machine:
            entry["machine"] = info.machine
        for key, value in (("soname", info.soname), ("version", info.version)):
            if value:
                entry[key] = value
        if info.runpath:
            entry["rpath"] = list(info.runpath)
        if info.rpath:
            entry["dt_rpath"] = list(info.rpath)
        return info

    def open_read(self, path: str) -> BinaryIO:
        return self.inner.open_read(path)

    def open_write(self, path: str) -> BinaryIO:
        return self.inner.open_write(path)

    def make_dirs(self, path: str) -> None:
        self.inner.make_dirs(path)

    def replace(self, source: str, target: str) -> None:
        self.inner.replace(source, target)

    def remove(self, path: str) -> None:
        self.inner.remove(path)

    def symlink(self, target: str, path: str) -> None:
        self.inner.symlink(target, path)

    def link_target(self, path: str) -> Optional[str]:
        return self.inner.link_target(path)

    def append(self, path: str, data: bytes) -> None:
        self.inner.append(path, data)

    def remove_dir(self, path: str) -> bool:
        return self.inner.remove_dir(path)

    def free_bytes(self, path: str) -> Optional[int]:
        return self.inner.free_bytes(path)

    def lock(self, path: str) -> ContextManager[None]:
        return self.inner.lock(path)

    def persistent_env_kind(self, scope: str, name: str) -> Optional[str]:
        return self.inner.persistent_env_kind(scope, name)

    def set_persistent_env(self, scope: str, name: str, value: Optional[str], kind: Optional[str] = None) -> None:
        self.inner.set_persistent_env(scope, name, value, kind)

    def broadcast_environment_change(self) -> None:
        self.inner.broadcast_environment_change()

    def load_report(self, path: str) -> Optional[dict[str, Any]]:
        report = self.inner.load_report(path)
        resolved = self._record_links_along(path)
        if report is not None and resolved is not None:
            self._files.setdefault(self.paths.norm(resolved), {})["load"] = report
        return report

    def expect_mapped_libraries(self, executable: str, guess: Callable[[System], Mapping[str, Sequence[str]]]) -> None:
        self.inner.expect_mapped_libraries(
            executable, guess
        )  # the guess reads the inner machine: nothing is recorded for it

    def mapped_libraries(self, executable: str, names: Sequence[str]) -> Optional[dict[str, Any]]:
        real = self.inner.mapped_libraries(executable, names)
        if real is not None:
            loaded, errors = real.get("loaded") or {}, real.get("errors") or {}
            mapped = self._pythons.setdefault(executable, {"executable": executable}).setdefault("mapped", {})
            for name in names:
                if name in errors:
                    mapped[name] = {"error": str(errors[name])}
                elif name in loaded:
                    mapped[name] = {"path": loaded[name]} if loaded[name] is not None else {}
        return real

    def device_files(self, paths: Sequence[str]) -> tuple[str, ...]:
        found = self.inner.device_files(paths)
        for path in found:  # replayed as a file of that name: a fixture lists its devices as files
            self._files.setdefault(self.paths.norm(path), {"size": 0})
        return found

    def current_python(self) -> Optional[str]:
        self._current = self.inner.current_python()
        return self._current

    def known_pythons(self) -> list[str]:
        return self.inner.known_pythons()

    def python_info(self, executable: str) -> Optional[PythonInfo]:
        info = self.inner.python_info(executable)
        if info is not None:
            self.stat(executable)
            entry = self._pythons.setdefault(executable, {"executable": executable})
            entry.update(version=info.version, kind=info.kind, packages=dict(info.packages))
        return info

    def framework_reports(
        self, executable: str, frameworks: Sequence[str], timeout: float
    ) -> dict[str, dict[str, Any]]:
        reports = self.inner.framework_reports(executable, frameworks, timeout)
        entry = self._pythons.setdefault(executable, {"executable": executable})
        entry.setdefault("frameworks", {}).update(reports)
        return reports

    # The document -----------------------------------------------------------------------

    def document(self, name: str, description: str = "") -> dict[str, Any]:
        """The recorded machine as a machine-fixture/1 document."""
        document: dict[str, Any] = {"schema": SCHEMA_ID, "name": name}
        if description:
            document["description"] = description
        document.update(os=self.os, arch=self.arch)
        if self.wsl:
            document["wsl"] = True
        document["env"] = kept_environment(self.inner.env())  # what the diagnosis reads, never a token
        persistent = kept_persistent(self.inner.persistent_env())
        if persistent is not None:
            document["persistent_env"] = persistent
        document["files"] = dict(sorted(self._files.items()))
        if self._commands:
            document["commands"] = self._commands
        if self._nvml is not None:
            document["nvml"] = self._nvml
        pythons = []
        for executable, entry in self._pythons.items():
            if "version" not in entry:
                continue
            if self._current is not None and self.paths.same(executable, self._current):
                entry["current"] = True
            pythons.append(entry)
        if pythons:  # interpreters are probed in parallel: a stable order, the current one first
            document["pythons"] = sorted(pythons, key=lambda p: (not p.get("current"), p["executable"]))
        return document
