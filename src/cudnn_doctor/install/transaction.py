"""Applying a plan so that it either happens completely or not at all.

Before a file is touched the journal (JSON, replaced atomically) says so; every file that
would be overwritten is first copied into a backup folder; each new file is written under a
temporary name beside its destination, checked (size and SHA-256 against the archive member)
and renamed into place; links are created as links. Any failure rolls back every step the
journal lists, in reverse. A run killed half-way (crash, `kill -9`) leaves a journal in state
"in-progress", and the next run of install, rollback or history rolls it back first.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Optional

from cudnn_doctor.errors import CudnnDoctorError, InputError
from cudnn_doctor.install.archive import Archive
from cudnn_doctor.install.plan import Action, Plan

TEMP_SUFFIX = ".cudnn-doctor-tmp"
BLOCK = 4 << 20


class InstallFailed(CudnnDoctorError):
    """The install failed and everything it did was rolled back."""

    exit_code = 1


def state_dir() -> Path:
    """Where journals, backups and the history live (the user's state folder, per platformdirs)."""
    override = os.environ.get("CUDNN_DOCTOR_STATE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_state_dir("cudnn-doctor", appauthor=False))


class Store:
    """The journal of the install in progress, the backups, and the history of installs."""

    def __init__(self, root: Optional[Path] = None) -> None:
        self.root = root or state_dir()
        self.journal_path = self.root / "journal.json"
        self.history_path = self.root / "history.json"

    def _write(self, path: Path, document: Any) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(".tmp")
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)

    def journal(self) -> Optional[dict[str, Any]]:
        try:
            return json.loads(self.journal_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None

    def save_journal(self, journal: dict[str, Any]) -> None:
        self._write(self.journal_path, journal)

    def history(self) -> list[dict[str, Any]]:
        try:
            return json.loads(self.history_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return []

    def save_history(self, history: list[dict[str, Any]]) -> None:
        self._write(self.history_path, history)


def recover(store: Store) -> Optional[str]:
    """Roll back an install that a crash interrupted; returns a sentence when it did."""
    journal = store.journal()
    if journal is None or journal.get("state") != "in-progress":
        return None
    undo(journal["steps"])
    journal["state"] = "rolled-back"
    store.save_journal(journal)
    return f"rolled back an interrupted install of {journal['archive']} into {journal['target']} ({sum(1 for s in journal['steps'] if s['started'])} files restored)"


def apply(plan: Plan, archive: Archive, store: Store, progress: Optional[Callable[[int], None]] = None,
          after_file: Optional[Callable[[int], None]] = None) -> dict[str, Any]:
    """Apply the plan; on any failure undo everything and raise InstallFailed (or the input error)."""
    txid = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    backups = store.root / "backups" / txid
    steps = [{"dest": str(a.dest), "kind": a.kind, "backup": None, "started": False, "done": False} for a in plan.writes]
    journal = {"id": txid, "state": "in-progress", "archive": str(plan.archive.path), "target": str(plan.target), "version": plan.archive.version,
               "started": time.time(), "steps": steps}
    store.save_journal(journal)
    try:
        for index, (action, step) in enumerate(zip(plan.writes, steps)):
            step["started"] = True
            if action.dest.exists() or action.dest.is_symlink():
                step["backup"] = str(backups / f"{index:05d}-{action.dest.name}")
            store.save_journal(journal)
            if step["backup"]:
                backup = Path(step["backup"])
                backup.parent.mkdir(parents=True, exist_ok=True)
                _copy_exact(action.dest, backup.with_name(backup.name + TEMP_SUFFIX))
                os.replace(backup.with_name(backup.name + TEMP_SUFFIX), backup)  # a backup exists only once complete
            _write_one(archive, action, progress)
            step["done"] = True
            store.save_journal(journal)
            if after_file is not None:
                after_file(index)
    except BaseException as error:
        undo(steps)
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
    history.append({k: journal[k] for k in ("id", "archive", "target", "version", "started", "finished", "steps")} | {"state": "installed"})
    store.save_history(history)
    return journal


def _write_one(archive: Archive, action: Action, progress: Optional[Callable[[int], None]]) -> None:
    dest = action.dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    temp = dest.with_name(dest.name + TEMP_SUFFIX)
    if action.kind == "link":
        if temp.is_symlink() or temp.exists():
            temp.unlink()
        os.symlink(action.member.link, temp)
        os.replace(temp, dest)
        return
    digest = hashlib.sha256()
    written = 0
    with archive.open(action.member) as source, open(temp, "wb") as target:
        while True:
            block = source.read(BLOCK)
            if not block:
                break
            digest.update(block)
            target.write(block)
            written += len(block)
            if progress:
                progress(len(block))
        target.flush()
        os.fsync(target.fileno())
    check = hashlib.sha256()
    with open(temp, "rb") as handle:  # what is on disk, not what we meant to write (antivirus, full disks)
        for block in iter(lambda: handle.read(BLOCK), b""):
            check.update(block)
    if written != action.member.size or os.path.getsize(temp) != action.member.size or check.hexdigest() != digest.hexdigest():
        temp.unlink(missing_ok=True)
        raise InstallFailed(f"{dest.name} did not verify after writing (size {os.path.getsize(temp) if temp.exists() else 0} of {action.member.size})")
    os.replace(temp, dest)


def _copy_exact(source: Path, backup: Path) -> None:
    if source.is_symlink():
        os.symlink(os.readlink(source), backup)
    else:
        shutil.copy2(source, backup)


def undo(steps: list[dict[str, Any]]) -> None:
    """Restore every started step, newest first: backups back in place, new files removed, temp files gone."""
    for step in reversed(steps):
        if not step.get("started"):
            continue
        dest = Path(step["dest"])
        temp = dest.with_name(dest.name + TEMP_SUFFIX)
        if temp.exists() or temp.is_symlink():
            temp.unlink()
        backup = Path(step["backup"]) if step.get("backup") else None
        if backup is not None and (backup.exists() or backup.is_symlink()):
            restore = dest.with_name(dest.name + TEMP_SUFFIX)
            _copy_exact(backup, restore)
            os.replace(restore, dest)
        elif backup is None and (dest.exists() or dest.is_symlink()) and step.get("kind") in ("add", "link"):
            dest.unlink()


def rollback_last(store: Store) -> dict[str, Any]:
    """Undo the most recent install that is still in place."""
    history = store.history()
    entry = next((h for h in reversed(history) if h.get("state") == "installed"), None)
    if entry is None:
        raise InputError("nothing to roll back: no install is recorded")
    undo([dict(s, started=True) for s in entry["steps"]])
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
