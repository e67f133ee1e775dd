"""FixtureSystem: a machine-fixture/1 document behind the System interface.

It follows the spec's rules exactly: paths in the target OS's own style (case-insensitive
with `\\` on Windows, on any host), folders implied by file paths, symbolic links followed
component by component, commands keyed by bare program name plus arguments, and a missing
command behaving as "not installed".
"""

from __future__ import annotations

import errno
import io
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Optional, Sequence

from cudnn_doctor.binaries import BinaryInfo, machine_of_arch
from cudnn_doctor.errors import Busy, InputError
from cudnn_doctor.system.binaries import read_binary
from cudnn_doctor.system.fixture_format import command_key, load_fixture
from cudnn_doctor.system.interface import CommandResult, Env, FileInfo, PythonInfo, System, registry_kind

_MAX_LINK_HOPS = 40
DEFAULT_BINARY_SIZE = 1024


class FixtureSystem(System):
    """Replays one machine fixture; nothing here touches the host."""

    def __init__(self, document: dict[str, Any], origin: Optional[Path] = None) -> None:
        self.document = document
        self.origin = origin
        self.name: str = document["name"]
        self.os = document["os"]
        self.arch = document.get("arch", "x86_64")
        self.wsl = bool(document.get("wsl", False))
        rules = self.paths
        self._files: dict[str, tuple[str, dict[str, Any]]] = {}
        self._dirs: dict[str, str] = {}
        self._children: dict[str, dict[str, str]] = {}
        for raw_path, entry in document["files"].items():
            if raw_path.endswith(("\\", "/")) and not entry:
                self._add_dir(rules.norm(raw_path))
                continue
            path = rules.norm(raw_path)
            self._files[rules.key(path)] = (path, entry or {})
            self._add_parent_chain(path)
        self._pythons = {rules.key(p["executable"]): p for p in document.get("pythons") or []}
        self.env_writes: list[tuple[str, str, Optional[str]]] = []
        self._env_kinds: dict[tuple[str, str], str] = {}
        self._data: dict[str, bytes] = {}
        self._locks: set[str] = set()
        self.free_space: Optional[int] = None
        self._held: dict[str, list[str]] = {}  # key → programs holding the file (`hold`)
        self._sources: dict[str, Path] = {}  # `source` as written → the regular file inside the fixture's folder
        if origin is not None:
            self._check_sources()

    @classmethod
    def from_file(cls, path: Path) -> FixtureSystem:
        return cls(load_fixture(path), origin=path)

    def _check_sources(self) -> None:
        """Every `source` names a regular file inside the fixture's folder; anything else is the fixture's fault, said
        now in one line (a fixture is the user's input: it must never make the doctor read the host's files)."""
        assert self.origin is not None
        for name, entry in self.document["files"].items():
            if isinstance(entry, dict) and "source" in entry:
                self._sources[entry["source"]] = _confined(self.origin, name, entry["source"])

    def _source_file(self, entry: dict[str, Any]) -> Path:
        """The host file of an entry's `source`, checked when the fixture was loaded (never a path outside its
        folder)."""
        if self.origin is None:
            raise InputError(f"a file entry names source {entry['source']!r}, but the fixture was not read from a file")
        found = self._sources.get(entry["source"])
        if found is None:  # an entry written after loading (a test's document): judged like the loaded ones
            found = self._sources[entry["source"]] = _confined(self.origin, "?", entry["source"])
        return found

    # Index ------------------------------------------------------------------------------

    def _add_dir(self, path: str) -> None:
        self._dirs.setdefault(self.paths.key(path), path)
        self._add_parent_chain(path)

    def _add_parent_chain(self, path: str) -> None:
        rules = self.paths
        child = path
        parent = rules.dirname(child)
        while parent and not rules.same(parent, child):
            self._children.setdefault(rules.key(parent), {})[rules.key(child)] = child
            if rules.key(parent) in self._dirs:
                break
            self._dirs[rules.key(parent)] = parent
            child, parent = parent, rules.dirname(parent)

    def _entry(self, path: str) -> Optional[dict[str, Any]]:
        found = self._files.get(self.paths.key(path))
        return found[1] if found else None

    def _lookup(self, path: str) -> Optional[str]:
        """`path` with every link resolved; None when that takes more than 40 links in all: a loop (the kernel's
        ELOOP)."""
        return self._walk(self.paths.norm(path), [_MAX_LINK_HOPS])

    def _walk(self, path: str, budget: list[int]) -> Optional[str]:
        """Resolve component by component; every link followed, at any depth, spends the one shared `budget`."""
        rules = self.paths
        chain: list[str] = []
        while True:
            parent = rules.dirname(path)
            if not parent or rules.same(parent, path):
                break
            chain.append(rules.basename(path))
            path = parent
        resolved = path
        for part in reversed(chain):
            candidate = rules.join(resolved, part)
            entry = self._entry(candidate)
            while entry is not None and "link" in entry:
                if budget[0] <= 0:
                    return None
                budget[0] -= 1
                target = entry["link"]
                if not rules.is_abs(target):
                    target = rules.join(rules.dirname(candidate), target)
                found = self._walk(rules.norm(target), budget)
                if found is None:
                    return None
                candidate, entry = found, self._entry(found)
            resolved = candidate
        return resolved

    def _resolve(self, path: str) -> str:
        """`path` with every link resolved; a looping path is left as it is, as os.path.realpath leaves one."""
        resolved = self._lookup(path)
        return resolved if resolved is not None else self.paths.norm(path)

    # System -----------------------------------------------------------------------------

    def env(self) -> Env:
        return Env(self.document["env"], case_insensitive=self.paths.windows)

    def persistent_env(self) -> Optional[dict[str, dict[str, str]]]:
        persistent = self.document.get("persistent_env")
        if persistent is None:
            return None
        return {"user": dict(persistent.get("user") or {}), "system": dict(persistent.get("system") or {})}

    def stat(self, path: str) -> Optional[FileInfo]:
        rules = self.paths
        own = self._entry(path)
        link = own.get("link") if own else None
        resolved = self._lookup(path)
        if resolved is None:
            return None
        entry = self._entry(resolved)
        if entry is not None and "link" not in entry:
            return FileInfo(resolved, False, self._size(entry), link, entry.get("readable", True))
        if rules.key(resolved) in self._dirs:
            return FileInfo(self._dirs[rules.key(resolved)], True, 0, link)
        return None

    def _resolved_entry(self, path: str) -> Optional[dict[str, Any]]:
        """The file entry `path` leads to; None for nothing, a folder, a dangling link or a loop."""
        resolved = self._lookup(path)
        entry = self._entry(resolved) if resolved is not None else None
        return entry if entry is not None and "link" not in entry else None

    def _size(self, entry: dict[str, Any]) -> int:
        if "size" in entry:
            return entry["size"]
        if "source" in entry and self.origin is not None:
            return self._source_file(entry).stat().st_size
        if "text" in entry:
            return len(entry["text"].encode("utf-8"))
        return DEFAULT_BINARY_SIZE

    def list_dir(self, path: str, sizes: bool = True) -> Optional[list[FileInfo]]:
        info = self.stat(path)
        if info is None or not info.is_dir:
            return None
        children = self._children.get(self.paths.key(info.path), {})
        entries = (self.stat(child) for child in sorted(children.values()))
        folder = self.paths.norm(
            path
        )  # entries are named below the folder as asked, links not resolved: os.scandir's paths
        return [
            FileInfo(self.paths.join(folder, self.paths.basename(child)), e.is_dir, e.size, e.link, e.readable)
            for child, e in zip(sorted(children.values()), entries)
            if e is not None
        ]

    def read_text(self, path: str, limit: int = 1 << 20) -> Optional[str]:
        entry = self._resolved_entry(path)
        if entry is None or not entry.get("readable", True):
            return None
        text = entry.get("text")
        return text[:limit] if text is not None else None

    def realpath(self, path: str) -> str:
        return self._resolve(path)

    def run(self, argv: Sequence[str], timeout: float = 10.0) -> CommandResult:
        result = (self.document.get("commands") or {}).get(command_key(self.paths, argv))
        if result is None:
            return CommandResult(None, not_found=True)
        if result.get("timeout"):
            return CommandResult(None, timed_out=True)
        return CommandResult(result.get("returncode", 0), result.get("stdout", ""), result.get("stderr", ""))

    def nvml(self) -> Optional[dict[str, Any]]:
        return self.document.get("nvml")

    def binary(self, path: str) -> Optional[BinaryInfo]:
        """The entry's fields; with `source`, the real bytes parsed as live, explicit fields winning."""
        entry = self._resolved_entry(path)
        if entry is None:
            return None
        if "binary_error" in entry:  # a live read found no PE/ELF file here (a snapshot says so, in the live words)
            return BinaryInfo(None, error=entry["binary_error"])
        if not entry.get("readable", True):
            return BinaryInfo(None, error="permission denied")
        base = self._source_binary(entry) if "source" in entry else None
        if base is None and self._size(entry) == 0:
            return BinaryInfo(None, error="file too short (0 bytes)")
        fields: dict[str, Any] = (
            base._asdict()
            if base
            else {"format": "pe" if self.paths.windows else "elf", "machine": machine_of_arch(self.os, self.arch)}
        )
        for key, name in (("imports", "imports"), ("loads", "loads"), ("rpath", "runpath"), ("dt_rpath", "rpath")):
            if key in entry:
                fields[name] = tuple(entry[key])
        for key in ("soname", "version", "machine"):
            if key in entry:
                fields[key] = entry[key]
        fields["loads_complete"] = entry.get("loads_complete", "loads" in entry)
        return BinaryInfo(**fields)

    def _source_binary(self, entry: dict[str, Any]) -> BinaryInfo:
        return read_binary(str(self._source_file(entry)))

    # Writes live in memory: the document's file map is updated, the bytes kept beside it ------

    def open_read(self, path: str) -> BinaryIO:
        resolved = self._lookup(path)
        if resolved is None:
            raise OSError(errno.ELOOP, "Too many levels of symbolic links", path)
        key = self.paths.key(resolved)
        entry = self._entry(resolved)
        if entry is None:
            raise FileNotFoundError(path)
        if not entry.get("readable", True):
            raise PermissionError(13, "Permission denied", path)
        if key in self._data:
            return io.BytesIO(self._data[key])
        if "text" in entry:
            return io.BytesIO(entry["text"].encode("utf-8"))
        return io.BytesIO(bytes(self._size(entry)))  # a file the fixture describes only by its size

    # Files held by other programs (a DLL a Jupyter kernel has loaded), as Windows treats them --------

    def hold(self, path: str, programs: Sequence[str] = ()) -> None:
        """Simulate a program that has `path` loaded: on Windows it can be read and renamed, not replaced,
        deleted or opened for writing; `programs` are what Windows would name ([]: it cannot tell)."""
        self._held[self.paths.key(self.paths.norm(path))] = list(programs)

    def release(self, path: str) -> None:
        self._held.pop(self.paths.key(self.paths.norm(path)), None)

    def in_use(self, path: str) -> Optional[list[str]]:
        if self.os != "windows":
            return None
        held = self._held.get(self.paths.key(self.paths.norm(path)))
        return None if held is None or self._entry(path) is None else list(held)

    def _refuse_held(self, path: str, source: Optional[str] = None) -> None:
        """What Windows says when a held file is the target: a rename or delete, "access denied" (WinError 5)."""
        if self.in_use(path) is not None:
            error = PermissionError(errno.EACCES, "Access is denied", source or path, None, path if source else None)
            error.winerror = 5  # type: ignore[attr-defined]  # set on any host, as Windows sets it
            raise error

    def open_write(self, path: str) -> BinaryIO:
        if self.in_use(path) is not None:  # the C runtime's EACCES: a sharing violation loses its WinError 32 in open()
            raise PermissionError(errno.EACCES, "Permission denied", path)
        system = self

        class _Writer(io.BytesIO):
            def close(self) -> None:
                if not self.closed:
                    system._put(path, {"size": len(self.getvalue())}, self.getvalue())
                super().close()

        return _Writer()

    def make_dirs(self, path: str) -> None:
        self._add_dir(self.paths.norm(path))

    def replace(self, source: str, target: str) -> None:
        key = self.paths.key(source)
        if key not in self._files:
            raise FileNotFoundError(source)
        self._refuse_held(target, source)
        _, entry = self._files[key]
        data = self._data.get(key)
        held = self._held.pop(key, None)
        self._drop(source)
        self._put(target, entry, data)
        if held is not None:  # the program holds the file, whatever its name now
            self._held[self.paths.key(self.paths.norm(target))] = held

    def remove(self, path: str) -> None:
        if self.paths.key(path) not in self._files:
            raise FileNotFoundError(path)
        self._refuse_held(path)
        self._drop(path)

    def symlink(self, target: str, path: str) -> None:
        self._put(path, {"link": target})

    def link_target(self, path: str) -> Optional[str]:
        entry = self._entry(path)
        return entry.get("link") if entry else None

    def append(self, path: str, data: bytes) -> None:
        key = self.paths.key(self.paths.norm(path))
        old = self._data.get(key, b"") if key in self._files else b""
        self._put(path, {"size": len(old) + len(data)}, old + data)

    def remove_dir(self, path: str) -> bool:
        rules = self.paths
        key = rules.key(rules.norm(path))
        if key not in self._dirs or self._children.get(key):
            return False
        del self._dirs[key]
        self._children.pop(key, None)
        self._children.get(rules.key(rules.dirname(rules.norm(path))), {}).pop(key, None)
        return True

    def free_bytes(self, path: str) -> Optional[int]:
        """What a test set in `free_space` (None: unknown, as the fixture format does not record it)."""
        return self.free_space

    @contextmanager
    def lock(self, path: str) -> Iterator[None]:
        key = self.paths.key(self.paths.norm(path))
        if key in self._locks:
            raise Busy(f"another cudnn-doctor install or rollback is running (it holds {path}); wait for it to finish")
        self._locks.add(key)
        try:
            yield
        finally:
            self._locks.discard(key)

    def _put(self, path: str, entry: dict[str, Any], data: Optional[bytes] = None) -> None:
        rules = self.paths
        path = rules.norm(path)
        key = rules.key(path)
        self._files[key] = (path, entry)
        self._data.pop(key, None)
        if data is not None:
            self._data[key] = data
        self._add_parent_chain(path)

    def _drop(self, path: str) -> None:
        rules = self.paths
        key = rules.key(path)
        self._files.pop(key, None)
        self._data.pop(key, None)
        self._children.get(rules.key(rules.dirname(rules.norm(path))), {}).pop(key, None)

    def persistent_env_kind(self, scope: str, name: str) -> Optional[str]:
        """The type written last, else guessed from the value as a fixture holds values only."""
        values = (self.document.get("persistent_env") or {}).get(scope) or {}
        existing = next((k for k in values if k.lower() == name.lower()), None)
        if existing is None:
            return None
        return self._env_kinds.get((scope, existing.lower())) or registry_kind(existing, values[existing], None)

    def set_persistent_env(self, scope: str, name: str, value: Optional[str], kind: Optional[str] = None) -> None:
        """Recorded in the document, where tests read it back through persistent_env() and persistent_env_kind()."""
        old_kind = self.persistent_env_kind(scope, name)
        persistent = self.document.setdefault("persistent_env", {"user": {}, "system": {}})
        values = persistent.setdefault(scope, {})
        existing = next((k for k in values if k.lower() == name.lower()), name)
        if value is None:
            values.pop(existing, None)
            self._env_kinds.pop((scope, existing.lower()), None)
        else:
            values[existing] = value
            self._env_kinds[(scope, existing.lower())] = kind or registry_kind(existing, value, old_kind)
        self.env_writes.append((scope, existing, value))

    def broadcast_environment_change(self) -> None:
        self.env_writes.append(("broadcast", "WM_SETTINGCHANGE", "Environment"))

    def load_report(self, path: str) -> Optional[dict[str, Any]]:
        entry = self._resolved_entry(path)
        return dict(entry["load"]) if entry and "load" in entry else None

    def mapped_libraries(self, executable: str, names: Sequence[str]) -> Optional[dict[str, Any]]:
        """The recorded real loads (`mapped`) when every name was recorded; None (unknown) otherwise, as for a
        hand-written fixture."""
        python = self._pythons.get(self.paths.key(executable)) or {}
        mapped = python.get("mapped") or {}
        if not names or any(name not in mapped for name in names):
            return None
        loaded: dict[str, Optional[str]] = {}
        errors: dict[str, str] = {}
        for name in names:
            result = mapped[name] or {}
            if "error" in result:
                errors[name] = result["error"]
            else:
                loaded[name] = result.get("path")
        return {"loaded": loaded, "errors": errors}

    def current_python(self) -> Optional[str]:
        for python in self._pythons.values():
            if python.get("current"):
                return python["executable"]
        return None

    def known_pythons(self) -> list[str]:
        return [p["executable"] for p in self._pythons.values()]

    def python_info(self, executable: str) -> Optional[PythonInfo]:
        python = self._pythons.get(self.paths.key(executable))
        if python is None:
            return None
        return PythonInfo(
            python["executable"], python["version"], python.get("kind", "system"), dict(python.get("packages") or {})
        )

    def framework_reports(
        self, executable: str, frameworks: Sequence[str], timeout: float
    ) -> dict[str, dict[str, Any]]:
        python = self._pythons.get(self.paths.key(executable)) or {}
        reports = python.get("frameworks") or {}
        return {name: dict(report or {}) for name, report in reports.items()}


def _confined(origin: Path, name: str, source: str) -> Path:
    """The regular file `source` names, relative to the fixture's folder and inside it once every link is resolved;
    an InputError for an absolute path, a `..`, a link out of the folder, a missing file, a FIFO or a device."""
    where = f"{origin.name}: files[{name!r}].source: {source!r}"
    parts = source.replace("\\", "/").split("/")
    if not source or source.startswith(("/", "\\")) or (len(source) > 1 and source[1] == ":") or "\x00" in source:
        raise InputError(f"{where} must be a path relative to the fixture's folder")
    if ".." in parts:
        raise InputError(f"{where} must stay inside the fixture's folder (no '..')")
    try:
        folder = origin.parent.resolve()
        real = (folder / source).resolve()
        inside = real == folder or folder in real.parents
        regular = inside and real.is_file()
    except (OSError, ValueError, RuntimeError):  # a name too long, a link loop
        inside = regular = False
    if not inside:
        raise InputError(f"{where} leads outside the fixture's folder (through a link)")
    if not regular:
        raise InputError(f"{where} is not a regular file in the fixture's folder")
    return real
