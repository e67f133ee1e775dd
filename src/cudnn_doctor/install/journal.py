"""The state folder (the `Store`): the journal of the transaction in progress, the backups, the history and the lock.
Each record is appended and fsynced before the change it announces; a torn last record is skipped on reading."""

from __future__ import annotations

import errno
import json
import time
import uuid
from contextlib import contextmanager
from typing import Any, Iterator, Optional

import cudnn_doctor.system.untrusted as untrusted
from cudnn_doctor.errors import InputError
from cudnn_doctor.install.files import TEMP_SUFFIX, discard
from cudnn_doctor.system.interface import System
from cudnn_doctor.system.spool import make_spool, new_spool, remove_spool, spool_of_note


def new_txid() -> str:
    """A transaction's id, as the history and the backup and quarantine folders name it: when, then a random suffix."""
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


class Store:
    """The state folder: the journal of the install in progress, the backups, the history, the lock."""

    def __init__(self, system: System, root: Optional[str] = None) -> None:
        self.system = system
        self.root = system.paths.norm(root or system.state_dir())
        self.journal_path = system.paths.join(self.root, "journal.jsonl")
        self.history_path = system.paths.join(self.root, "history.json")
        self.lock_path = system.paths.join(self.root, "lock")
        self.warnings: list[str] = []  # said once by the command (a torn journal record skipped)
        self._torn = False  # the journal may end in a torn record: the next append starts on a new line

    def take_warnings(self) -> tuple[str, ...]:
        """What reading the state folder skipped so far, handed over once (the command says it, one line each)."""
        found = tuple(self.warnings)
        self.warnings.clear()
        return found

    def quarantine_path(self, txid: str) -> str:
        """Where a fix moves the files it takes away: kept until the fix is rolled back (which moves them home)."""
        return self.system.paths.join(self.root, "quarantine", txid)

    def backup_path(self, txid: str, index: int, name: str) -> str:
        return self.system.paths.join(self.root, "backups", txid, f"{index:05d}-{name}")

    @contextmanager
    def _writing(self, path: str) -> Iterator[None]:
        """Any failure to write in the state folder becomes one line that names the file and what to do."""
        try:
            yield
        except (NotADirectoryError, FileExistsError):
            raise InputError(
                f"the state folder {self.root} is not a folder: move that file away, or set "
                f"CUDNN_DOCTOR_STATE_DIR to another folder"
            ) from None
        except OSError as error:
            why = "the disk is full" if error.errno == errno.ENOSPC else error.strerror or str(error)
            raise InputError(
                f"cannot write {path} ({why}): make the state folder {self.root} writable and free, or set "
                f"CUDNN_DOCTOR_STATE_DIR to another folder"
            ) from None

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One install, rollback or recovery at a time, on this machine."""
        with self._writing(self.lock_path):
            self.system.make_dirs(self.root)
            lock = self.system.lock(self.lock_path)
            lock.__enter__()
        try:
            yield
        finally:
            lock.__exit__(None, None, None)

    def _replace_file(self, path: str, data: bytes) -> None:
        temp = path + TEMP_SUFFIX
        with self._writing(path):
            try:
                self.system.make_dirs(self.root)
                with self.system.open_write(temp) as handle:
                    handle.write(data)
                self.system.replace(temp, path)
            except BaseException:
                try:
                    discard(self.system, temp)
                except OSError:
                    pass  # the next recovery removes it
                raise

    def remove_leftovers(self) -> None:
        """Temporary files of the journal and the history, and the spool folder, that a killed run left."""
        for path in (self.journal_path, self.history_path):
            with self._writing(path):
                discard(self.system, path + TEMP_SUFFIX)
        data = self._read(self.spool_note)
        if data:  # one folder, its name's own bytes (a newline or a byte that is not UTF-8 may be part of it)
            remove_spool(spool_of_note(data))
        if data is not None:
            with self._writing(self.spool_note):
                self.system.remove(self.spool_note)

    @property
    def spool_note(self) -> str:
        return self.system.paths.join(self.root, "spool.txt")

    @contextmanager
    def spooling(self, root: Optional[str]) -> Iterator[Optional[str]]:
        """A fresh folder in `root` for the archive's bytes (the caller holds the lock), noted in the state
        folder first so that a killed run's is removed by the next install or rollback; removed after.
        None when `root` is None or cannot be written (not yours without sudo): the bytes then come from
        the archive itself."""
        if root is None:
            yield None
            return
        folder, note = new_spool(root)
        self._replace_file(self.spool_note, note)
        if not make_spool(folder):
            self.system.remove(self.spool_note)
            yield None
            return
        try:
            yield folder
        finally:
            remove_spool(folder)
            try:
                self.system.remove(self.spool_note)
            except OSError:
                pass  # the next install or rollback finds the folder gone

    def _read(self, path: str) -> Optional[bytes]:
        try:
            with self.system.open_read(path) as handle:
                return handle.read(256 << 20)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise InputError(
                f"cannot read {path} ({error.strerror or error}): make the state folder {self.root} readable"
            ) from None

    def _damaged(self, path: str, why: str) -> InputError:
        return InputError(
            f"{path} is damaged ({why}): rename it (to {self.system.paths.basename(path)}.bad, say) and run again; "
            f"what it lists can then be undone only by hand, from {self.system.paths.join(self.root, 'backups')}"
        )

    # The journal -------------------------------------------------------------------------

    def begin(self, header: dict[str, Any]) -> None:
        self._replace_file(self.journal_path, (json.dumps(header) + "\n").encode("utf-8"))
        self._torn = False

    def record(self, event: dict[str, Any]) -> None:
        """Append one record. An append that failed (a full disk) may have left part of its record: the next one
        starts on a line of its own (a leading newline), so the torn part is one line that reading skips."""
        line = (json.dumps(event) + "\n").encode("utf-8")
        with self._writing(self.journal_path):
            try:
                self.system.append(self.journal_path, b"\n" + line if self._torn else line)
            except BaseException:
                self._torn = True
                raise
            self._torn = False

    def journal(self) -> Optional[dict[str, Any]]:
        """The last install's header with every recorded event applied to its steps, and its state."""
        data = self._read(self.journal_path)
        if data is None:
            return None
        self._torn = not data.endswith(b"\n")  # a kill or a full disk cut the last record: the next append repairs it
        lines = [line for line in data.split(b"\n") if line.strip()]
        records = []
        torn = 0
        for number, line in enumerate(lines):
            try:
                records.append(_record(line))
            except ValueError:
                if number == 0:
                    raise self._damaged(self.journal_path, "line 1 is not JSON") from None
                glued = _after_torn(line)  # a record appended after a torn one, before this repair existed
                if glued is None and not _torn_record(line):
                    raise self._damaged(self.journal_path, f"line {number + 1} is not JSON") from None
                torn += 1
                records.extend(glued or [])
        if torn:
            self.warnings.append(
                f"{self.journal_path}: skipped {torn} torn record(s) (a write cut short by a full disk or a kill; "
                f"the change each announced was never made)"
            )
        if not records:
            return None
        header = records[0]
        if not _valid_entry(header):
            raise self._damaged(self.journal_path, "its first line is not an install header")
        steps = [dict(s, started=False, done=False) for s in header["steps"]]
        env = [dict(c, started=False) for c in header.get("env") or [] if isinstance(c, dict)]
        journal = {**header, "steps": steps, "env": env, "state": "in-progress"}
        for event in records[1:]:
            if not isinstance(event, dict):
                raise self._damaged(self.journal_path, "a line is not an object")
            if isinstance(event.get("state"), str):
                journal["state"] = event["state"]
                continue
            if "env" in event:
                index = event["env"]
                if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(env):
                    raise self._damaged(self.journal_path, f"an event names environment change {index!r}")
                env[index].update({k: v for k, v in event.items() if k in _ENV_FIELDS})
                continue
            index = event.get("step")
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(steps):
                raise self._damaged(self.journal_path, f"an event names step {index!r}")
            steps[index].update({k: v for k, v in event.items() if k in _STEP_FIELDS})
        return journal

    # The history -------------------------------------------------------------------------

    def history(self) -> list[dict[str, Any]]:
        data = self._read(self.history_path)
        if data is None:
            return []
        try:
            history = _record(data)
        except ValueError:
            raise self._damaged(self.history_path, "it is not JSON") from None
        if not isinstance(history, list) or not all(
            _valid_entry(e) and isinstance(e.get("state"), str) for e in history
        ):
            raise self._damaged(self.history_path, "it is not a list of installs")
        return history

    def save_history(self, history: list[dict[str, Any]]) -> None:
        self._replace_file(self.history_path, json.dumps(history, indent=1).encode("utf-8"))

    def remove_backups(self, txid: str) -> None:
        """Backups of an install that is fully undone are not needed any more (they can be gigabytes)."""
        system = self.system
        folder = system.paths.join(self.root, "backups", txid)
        for entry in system.list_dir(folder, sizes=False) or []:
            if not entry.is_dir or system.link_target(entry.path) is not None:
                system.remove(entry.path)
        system.remove_dir(folder)
        system.remove_dir(system.paths.dirname(folder))


def _record(data: bytes) -> Any:
    """A journal record or the history, read as every file a user could have changed is (untrusted.py: nesting,
    integer size, repeated keys); ValueError for anything that is not such JSON."""
    try:
        return untrusted.parse(data, "record", json_text=True)
    except InputError as error:
        raise ValueError(str(error)) from None


def _torn_record(line: bytes) -> bool:
    """A line that is the start of one of the journal's records cut short, as little as its `{` (every record is a
    JSON object; json.dumps escapes quotes in strings, so `{"` only ever opens a record)."""
    return line.lstrip().startswith(b"{")


def _after_torn(line: bytes) -> Optional[list[Any]]:
    """The whole record appended after a torn one on the same line (the torn part never got its newline); None
    when the line holds no whole record after its start."""
    if not _torn_record(line):
        return None
    start = line.find(b'{"', 1)  # the earliest whole record after the torn part's own start
    while start > 0:
        try:
            found = _record(line[start:])
        except ValueError:
            start = line.find(b'{"', start + 1)
            continue
        return [found] if isinstance(found, dict) else None
    return None


_STEP_FIELDS = ("started", "backup", "old", "dirs", "new")
_ENV_FIELDS = ("started", "name", "existed", "old", "old_kind", "kind")


def _valid_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and all(isinstance(entry.get(k), str) for k in ("id", "archive", "target"))
        and isinstance(entry.get("steps"), list)
        and all(
            isinstance(s, dict) and isinstance(s.get("dest"), str) and isinstance(s.get("kind"), str)
            for s in entry["steps"]
        )
    )
