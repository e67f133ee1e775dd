"""Applying a plan so that it either happens completely or not at all.

Before a file is touched the journal (JSON, replaced atomically) says so; every file that
would be overwritten is first copied into a backup folder; each new file is written under a
temporary name beside its destination, checked (size and SHA-256 against the archive member)
and renamed into place; links are created as links. Any failure rolls back every step the
journal lists, in reverse. A run killed half-way (crash, `kill -9`) leaves a journal in state
"in-progress", and the next run of install, rollback or history rolls it back first.

Every file operation goes through the System, so a fixture machine can be installed into
(in memory) exactly as a live one.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from typing import Any, Callable, Optional

from cudnn_doctor.errors import CudnnDoctorError, InputError
from cudnn_doctor.install.archive import Archive
from cudnn_doctor.install.plan import Action, Plan
from cudnn_doctor.system.interface import System

TEMP_SUFFIX = ".cudnn-doctor-tmp"
BLOCK = 4 << 20


class InstallFailed(CudnnDoctorError):
    """The install failed and everything it did was rolled back."""

    exit_code = 1


def state_dir() -> str:
    """Where journals, backups and the history live (the user's state folder, per platformdirs)."""
    override = os.environ.get("CUDNN_DOCTOR_STATE_DIR")
    if override:
        return override
    import platformdirs

    return platformdirs.user_state_dir("cudnn-doctor", appauthor=False)


class Store:
    """The journal of the install in progress, the backups, and the history of installs."""

    def __init__(self, system: System, root: Optional[str] = None) -> None:
        self.system = system
        self.root = system.paths.norm(root or state_dir())
        self.journal_path = system.paths.join(self.root, "journal.json")
        self.history_path = system.paths.join(self.root, "history.json")

    def backup_path(self, txid: str, index: int, name: str) -> str:
        return self.system.paths.join(self.root, "backups", txid, f"{index:05d}-{name}")

    def _write(self, path: str, document: Any) -> None:
        self.system.make_dirs(self.root)
        temp = path + TEMP_SUFFIX
        with self.system.open_write(temp) as handle:
            handle.write(json.dumps(document, indent=1).encode("utf-8"))
        self.system.replace(temp, path)

    def _read(self, path: str) -> Any:
        try:
            with self.system.open_read(path) as handle:
                return json.loads(handle.read().decode("utf-8"))
        except (FileNotFoundError, ValueError):
            return None

    def journal(self) -> Optional[dict[str, Any]]:
        return self._read(self.journal_path)

    def save_journal(self, journal: dict[str, Any]) -> None:
        self._write(self.journal_path, journal)

    def history(self) -> list[dict[str, Any]]:
        return self._read(self.history_path) or []

    def save_history(self, history: list[dict[str, Any]]) -> None:
        self._write(self.history_path, history)


def recover(store: Store) -> Optional[str]:
    """Roll back an install that a crash interrupted; returns a sentence when it did."""
    journal = store.journal()
    if journal is None or journal.get("state") != "in-progress":
        return None
    undo(store.system, journal["steps"])
    journal["state"] = "rolled-back"
    store.save_journal(journal)
    return f"rolled back an interrupted install of {journal['archive']} into {journal['target']} ({sum(1 for s in journal['steps'] if s['started'])} files restored)"


def apply(plan: Plan, archive: Archive, store: Store, progress: Optional[Callable[[int], None]] = None,
          after_file: Optional[Callable[[int], None]] = None) -> dict[str, Any]:
    """Apply the plan; on any failure undo everything and raise InstallFailed (or the input error)."""
    system = store.system
    txid = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    steps = [{"dest": a.dest, "kind": a.kind, "backup": None, "started": False, "done": False} for a in plan.writes]
    journal = {"id": txid, "state": "in-progress", "archive": str(plan.archive.path), "target": plan.target, "version": plan.archive.version,
               "started": time.time(), "steps": steps}
    store.save_journal(journal)
    try:
        for index, (action, step) in enumerate(zip(plan.writes, steps)):
            step["started"] = True
            if _present(system, action.dest):
                step["backup"] = store.backup_path(txid, index, system.paths.basename(action.dest))
            store.save_journal(journal)
            if step["backup"]:
                system.make_dirs(system.paths.dirname(step["backup"]))
                _copy_exact(system, action.dest, step["backup"] + TEMP_SUFFIX)
                system.replace(step["backup"] + TEMP_SUFFIX, step["backup"])  # a backup exists only once complete
            _write_one(system, archive, action, progress)
            step["done"] = True
            store.save_journal(journal)
            if after_file is not None:
                after_file(index)
    except BaseException as error:
        undo(system, steps)
        journal["state"] = "rolled-back"
        store.save_journal(journal)
        if isinstance(error, PermissionError):
            raise InputError(_permission_message(error)) from None
        if isinstance(error, CudnnDoctorError):
            raise
        if isinstance(error, KeyboardInterrupt):
            raise InstallFailed("interrupted; every file was restored") from None
        raise InstallFailed(f"{type(error).__name__}: {error}; every file was restored") from None
    journal["state"] = "committed"
    journal["finished"] = time.time()
    store.save_journal(journal)
    history = store.history()
    history.append({**{k: journal[k] for k in ("id", "archive", "target", "version", "started", "finished", "steps")}, "state": "installed"})
    store.save_history(history)
    return journal


def _write_one(system: System, archive: Archive, action: Action, progress: Optional[Callable[[int], None]]) -> None:
    dest = action.dest
    system.make_dirs(system.paths.dirname(dest))
    temp = dest + TEMP_SUFFIX
    _discard(system, temp)
    if action.kind == "link":
        system.symlink(action.member.link or "", temp)
        system.replace(temp, dest)
        return
    digest = hashlib.sha256()
    written = 0
    with archive.open(action.member) as source, system.open_write(temp) as target:
        for block in iter(lambda: source.read(BLOCK), b""):
            digest.update(block)
            target.write(block)
            written += len(block)
            if progress:
                progress(len(block))
    check = hashlib.sha256()
    with system.open_read(temp) as handle:  # what is on disk, not what we meant to write (antivirus, full disks)
        for block in iter(lambda: handle.read(BLOCK), b""):
            check.update(block)
    on_disk = system.stat(temp)
    if written != action.member.size or on_disk is None or on_disk.size != action.member.size or check.hexdigest() != digest.hexdigest():
        _discard(system, temp)
        raise InstallFailed(f"{system.paths.basename(dest)} did not verify after writing ({on_disk.size if on_disk else 0} of {action.member.size} bytes)")
    system.replace(temp, dest)


def _copy_exact(system: System, source: str, target: str) -> None:
    """A byte-for-byte copy, or the same link."""
    _discard(system, target)
    link = system.link_target(source)
    if link is not None:
        system.symlink(link, target)
        return
    with system.open_read(source) as reader, system.open_write(target) as writer:
        for block in iter(lambda: reader.read(BLOCK), b""):
            writer.write(block)


def _present(system: System, path: str) -> bool:
    """A file or a link (even one that dangles) is at path."""
    return system.stat(path) is not None or system.link_target(path) is not None


def _discard(system: System, path: str) -> None:
    if _present(system, path):
        system.remove(path)


def undo(system: System, steps: list[dict[str, Any]]) -> None:
    """Restore every started step, newest first: backups back in place, new files removed, temp files gone."""
    for step in reversed(steps):
        if not step.get("started"):
            continue
        dest = step["dest"]
        _discard(system, dest + TEMP_SUFFIX)
        backup = step.get("backup")
        if backup is not None and _present(system, backup):
            _copy_exact(system, backup, dest + TEMP_SUFFIX)
            system.replace(dest + TEMP_SUFFIX, dest)
        elif backup is None and step.get("kind") in ("add", "link"):
            _discard(system, dest)


def rollback_last(store: Store) -> dict[str, Any]:
    """Undo the most recent install that is still in place."""
    history = store.history()
    entry = next((h for h in reversed(history) if h.get("state") == "installed"), None)
    if entry is None:
        raise InputError("nothing to roll back: no install is recorded")
    undo(store.system, [dict(s, started=True) for s in entry["steps"]])
    entry["state"] = "rolled-back"
    entry["rolled_back"] = time.time()
    store.save_history(history)
    return entry


def _permission_message(error: PermissionError) -> str:
    path = error.filename or "a file"
    if getattr(error, "winerror", None) == 32:
        return f"{path} is in use by a running program: close Python, Jupyter and the IDE, then run the install again (nothing was changed)"
    if os.name == "nt":
        return f"permission denied writing {path}: run the install again from an elevated terminal (Run as administrator); nothing was changed"
    return f"permission denied writing {path}: run the install again with sudo; nothing was changed"
