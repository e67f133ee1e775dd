"""Applying a plan so that it happens completely or not at all, and undoing it later.

The journal is a JSON-lines file: a header listing every planned step, then one short record
per event, appended and fsynced before the change it announces ("dest is about to change; its
old content is X, backed up at B; folders F are new", "the new file Y is staged", "done"), so
its cost is linear in the number of files. Every file's old and new identity (SHA-256, or a
link's target) is kept, so an undo touches only what the install wrote and still holds what it
wrote: a file changed since is skipped and named, never overwritten. A run killed half-way
leaves the journal "in-progress"; the next install or rollback, holding the state folder's
lock, finishes it (the history already has it) or undoes it. Persistent-environment changes
(Windows) are steps too, after the files: each journaled (existed, old value, registry type)
before it is written, and undone with them. A file another program holds (a loaded DLL, which
Windows will not replace or delete) is looked for before the first change of an install,
rollback or recovery, and recognised at a refused rename, so it is one line naming the file and
its programs, never "run as administrator" or a half-done undo. Every file operation goes
through the System, so a fixture machine is installed into, in memory, exactly as a live one.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import shutil
import time
import uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence

from cudnn_doctor import untrusted
from cudnn_doctor.errors import CudnnDoctorError, InputError
from cudnn_doctor.install.archive import Archive, library_problem
from cudnn_doctor.install.environment import undo_environment
from cudnn_doctor.install.plan import Action, EnvChange, Plan, sha256_of
from cudnn_doctor.record import Record
from cudnn_doctor.system.interface import System, registry_kind

TEMP_SUFFIX = ".cudnn-doctor-tmp"
SPOOL_PREFIX = ".cudnn-doctor-spool-"  # the folder an install reads the archive into, on the target's file system
UNFINISHED = "rollback-unfinished"  # a history entry whose rollback started and has not finished: `rollback` finishes it
BLOCK = 4 << 20
SPACE_MARGIN = 16 << 20  # the journal, the history and the file system's own rounding


class InstallFailed(CudnnDoctorError):
    """The install failed and what it did was undone."""

    exit_code = 1


class FileInUse(CudnnDoctorError):
    """Files another program holds (a DLL loaded by Jupyter or an IDE): Windows will not replace or delete them."""

    exit_code = 2

    def __init__(self, held: Sequence[tuple[str, Sequence[str]]], doing: str, again: str) -> None:
        self.held = [(path, list(programs)) for path, programs in held]
        super().__init__(in_use_message(self.held, doing, again))


def in_use_message(held: Sequence[tuple[str, Sequence[str]]], doing: str, again: str) -> str:
    """One line: which files, which programs hold them (or that Windows did not say), and what to do."""
    files = ", ".join(path for path, _ in held[:5]) + (f" (and {len(held) - 5} more)" if len(held) > 5 else "")
    programs = list(dict.fromkeys(p for _, found in held for p in found))
    verb = "is" if len(held) == 1 else "are"
    if programs:
        who = f"{verb} in use by {', '.join(programs[:5])}: close {'it' if len(programs) == 1 else 'them'} (or restart the Jupyter kernel)"
    else:
        who = f"{verb} in use by a running program (Windows did not say which): close the Python, Jupyter and IDE processes using {'it' if len(held) == 1 else 'them'}"
    return f"cannot {doing}: {files} {who}, then {again}"


def held_files(system: System, paths: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The files among `paths` that another program holds, each with the programs Windows names."""
    found = []
    for path in paths:
        programs = system.in_use(path)
        if programs is not None:
            found.append((path, programs))
    return found


def _held_by(system: System, path: str, error: BaseException) -> Optional[list[str]]:
    """The programs holding `path`, when `error` (a refused rename onto it, or its delete) is Windows refusing a
    file in use, not a missing right; None otherwise. The staged file was written in the same folder, so the
    folder is writable; what tells a held file from a read-only or locked-down one is that it cannot be
    opened for writing even sharing everything (ERROR_SHARING_VIOLATION), which `System.in_use` asks."""
    if system.os != "windows" or not isinstance(error, OSError):
        return None
    winerror = getattr(error, "winerror", None)
    if not isinstance(error, PermissionError) and winerror not in (5, 32, 33):
        return None
    programs = system.in_use(path)
    if programs is None and winerror in (32, 33):  # the rename itself said "sharing violation"
        return []
    return programs


def identity(system: System, path: str) -> Optional[str]:
    """What is at `path`: "sha256:…" for a file, "link:…" for a symbolic link, "folder", or None."""
    link = system.link_target(path)
    if link is not None:
        return f"link:{link}"
    info = system.stat(path)
    if info is None:
        return None
    if info.is_dir:
        return "folder"
    return f"sha256:{sha256_of(system.open_read(path))}"


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
            raise InputError(f"the state folder {self.root} is not a folder: move that file away, or set CUDNN_DOCTOR_STATE_DIR to another folder") from None
        except OSError as error:
            why = "the disk is full" if error.errno == errno.ENOSPC else error.strerror or str(error)
            raise InputError(
                f"cannot write {path} ({why}): make the state folder {self.root} writable and free, or set CUDNN_DOCTOR_STATE_DIR to another folder"
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
                    _discard(self.system, temp)
                except OSError:
                    pass  # the next recovery removes it
                raise

    def remove_leftovers(self) -> None:
        """Temporary files of the journal and the history, and the spool folder, that a killed run left."""
        for path in (self.journal_path, self.history_path):
            with self._writing(path):
                _discard(self.system, path + TEMP_SUFFIX)
        data = self._read(self.spool_note)
        if data:  # one folder, its name's own bytes (a newline or a byte that is not UTF-8 may be part of it)
            _remove_spool(os.fsdecode(data[:-1] if data.endswith(b"\n") else data))
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
        folder = os.path.join(root, f"{SPOOL_PREFIX}{uuid.uuid4().hex[:12]}")
        self._replace_file(self.spool_note, os.fsencode(folder) + b"\n")
        try:
            os.mkdir(folder, 0o700)
        except OSError:
            self.system.remove(self.spool_note)
            yield None
            return
        try:
            yield folder
        finally:
            _remove_spool(folder)
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
            raise InputError(f"cannot read {path} ({error.strerror or error}): make the state folder {self.root} readable") from None

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
                f"{self.journal_path}: skipped {torn} torn record(s) (a write cut short by a full disk or a kill; the change each announced was never made)"
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
        if not isinstance(history, list) or not all(_valid_entry(e) and isinstance(e.get("state"), str) for e in history):
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
        and all(isinstance(s, dict) and isinstance(s.get("dest"), str) and isinstance(s.get("kind"), str) for s in entry["steps"])
    )


# The one containment rule ------------------------------------------------------------------


class OutsideTarget(InputError):
    """A write whose folder leads, through a link, out of the folder its step may change."""


def check_inside(system: System, path: str, root: Optional[str], doing: str = "write") -> None:
    """The rule every write of install, fix, rollback and recovery follows: the real path of `path`'s folder,
    resolved now (immediately before the write), lies inside `root`, itself a real path resolved when the
    transaction began. None: no root was recorded (a history written before the rule), nothing to check."""
    if root is None:
        return
    folder = system.realpath(system.paths.dirname(path))
    if not system.paths.inside(folder, root):
        raise OutsideTarget(f"refusing to {doing} {path}: its folder leads to {folder}, outside {root}")


def _on_the_way(system: System, folder: str, root: Optional[str]) -> bool:
    """A folder the transaction made on the way to its writes: still inside `root`, or one of the folders above it
    (an --into target or a quarantine made whole), never one a link now leads elsewhere."""
    if root is None:
        return True
    real, rules = system.realpath(folder), system.paths
    return rules.inside(real, root) or rules.inside(root, real)


# Installing ------------------------------------------------------------------------------


def apply(
    plan: Plan,
    archive: Archive,
    store: Store,
    progress: Optional[Callable[[int], None]] = None,
    after_file: Optional[Callable[[int], None]] = None,
    env_changes: Sequence[EnvChange] = (),
    ldconfig: bool = False,
) -> dict[str, Any]:
    """Apply the plan (the caller holds `store.locked()`); on any failure undo it and raise a one-line error."""
    system = store.system
    _check_space(system, plan, store.root)
    held = held_files(system, [a.dest for a in plan.writes if _present(system, a.dest)])
    if held:
        raise FileInUse(held, "install", "run the install again; nothing was changed")
    txid = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    real_target = system.realpath(plan.target)
    header = {
        "journal": 1,
        "id": txid,
        "archive": str(plan.archive.path),
        "archive_size": _size_of(plan.archive.path),  # `fix` takes files back from it only while it is the same size
        "target": plan.target,
        "real_target": real_target,  # every write of the install and of its undo stays inside it
        "version": plan.archive.version,
        "started": time.time(),
        "steps": [{"dest": a.dest, "kind": a.kind} for a in plan.writes],
        "env": [dataclasses.asdict(change) for change in env_changes],
        "ldconfig": ldconfig,
    }
    store.begin(header)
    steps: list[dict[str, Any]] = [dict(s, started=False, done=False) for s in header["steps"]]
    env: list[dict[str, Any]] = [dict(c, started=False) for c in header["env"]]
    entry: Optional[dict[str, Any]] = None
    try:
        for index, (action, step) in enumerate(zip(plan.writes, steps)):
            _apply_one(store, archive, plan, action, step, index, txid, real_target, progress)
            if after_file is not None:
                after_file(index)
        for index, change in enumerate(env):
            _apply_env(store, change, index)
        if env:
            system.broadcast_environment_change()
        entry = {**{k: v for k, v in header.items() if k != "journal"}, "steps": steps, "env": env, "state": "installed", "finished": time.time()}
        history = store.history()
        store.save_history([*history, entry])  # before the journal commits: a kill in between leaves an install that rollback knows
        store.record({"state": "committed"})
    except BaseException as error:
        report = undo(system, steps, env=env, root=real_target)
        _after_failed_apply(store, txid, steps, report, entry)
        raise _failure(error, report, system.os) from None
    return {**header, "steps": steps, "env": env, "state": "committed"}


def _apply_env(store: Store, change: dict[str, Any], index: int) -> None:
    """Journal what the variable is now (whether it exists, its value and registry type), then write it."""
    system = store.system
    values = (system.persistent_env() or {}).get(change["scope"]) or {}
    name = next((k for k in values if k.upper() == change["name"].upper()), change["name"])
    old = values.get(name)
    old_kind = system.persistent_env_kind(change["scope"], name) if old is not None else None
    event = {
        "started": True,
        "name": name,
        "existed": old is not None,
        "old": old,
        "old_kind": old_kind,
        "kind": registry_kind(name, change["new"] or "", old_kind),
    }
    store.record({"env": index, **event})
    change.update(event)
    try:
        system.set_persistent_env(change["scope"], name, change["new"], event["kind"])
    except OSError as error:
        raise InputError(f"could not set {change['scope']} {name} in the registry ({error.strerror or error})") from None


def _apply_one(
    store: Store,
    archive: Archive,
    plan: Plan,
    action: Action,
    step: dict[str, Any],
    index: int,
    txid: str,
    real_target: str,
    progress: Optional[Callable[[int], None]],
) -> None:
    system, rules = store.system, store.system.paths
    dest, folder = action.dest, rules.dirname(action.dest)
    backup, old = None, None
    if _present(system, dest):  # the backup is taken first: copying it also gives the old identity
        backup = store.backup_path(txid, index, rules.basename(dest))
        with store._writing(backup):
            system.make_dirs(rules.dirname(backup))
            old = _copy(system, dest, backup + TEMP_SUFFIX)
            system.replace(backup + TEMP_SUFFIX, backup)  # a backup exists only once complete
    step.update(started=True, backup=backup, old=old, dirs=_missing_dirs(system, folder))
    store.record({"step": index, **{k: step[k] for k in ("started", "backup", "old", "dirs")}})  # durable before dest is touched
    if step["dirs"]:  # no folder is made through a link that leads out
        check_inside(system, dest, real_target)
    system.make_dirs(folder)
    check_inside(system, dest, real_target)  # again at each write: links may have changed since the plan
    temp = dest + TEMP_SUFFIX
    step["new"] = _stage(system, archive, plan, action, temp, progress)
    store.record({"step": index, "new": step["new"]})  # durable before the rename: undo must know what it wrote
    try:
        system.replace(temp, dest)
    except OSError as error:  # a program loaded dest since the check before the first write
        programs = _held_by(system, dest, error)
        if programs is None:
            raise
        raise FileInUse([(dest, programs)], "install", "run the install again") from None
    step["done"] = True


def _stage(system: System, archive: Archive, plan: Plan, action: Action, temp: str, progress: Optional[Callable[[int], None]]) -> str:
    """Put the member beside its destination, check what is on disk, and return its identity.

    A spooled member (read once, hashed and written while the archive was read) is renamed here and
    its size checked (on Windows, where antivirus software rewrites files, it is read back and hashed);
    otherwise its bytes are copied from the archive, and the staged file is read back and must hash
    as the member did."""
    _discard(system, temp)
    if action.kind == "link":
        system.symlink(action.member.link or "", temp)
        return f"link:{action.member.link}"
    if action.member.size:  # the bytes must be the library its name says, for this OS and machine
        problem = library_problem(action.member.name, archive.read_head(action.member), system.os, plan.archive.arch or system.arch)
        if problem is not None:
            raise InputError(f"{archive.path.name}: refusing {action.member.name!r}: {problem}")
    if _rename_spooled(system, archive, action, temp):
        expected, written = archive.digest(action.member), action.member.size
        if progress:
            progress(written)
        if system.os != "windows":  # hashed as it was written and fsynced by this process: its size is checked, not its bytes again
            info = system.stat(temp)
            if info is None or info.size != written:
                raise InstallFailed(f"{system.paths.basename(action.dest)} did not verify after writing ({info.size if info else 0} of {written} bytes)")
            return f"sha256:{expected}"
    else:
        expected, written = _copy_member(system, archive, action, temp, progress)
    on_disk = identity(system, temp)  # read back: what is on disk, not what we meant (antivirus, full disks)
    if written != action.member.size or on_disk != f"sha256:{expected}":
        info = system.stat(temp)
        raise InstallFailed(f"{system.paths.basename(action.dest)} did not verify after writing ({info.size if info else 0} of {action.member.size} bytes)")
    return on_disk


def _rename_spooled(system: System, archive: Archive, action: Action, temp: str) -> bool:
    """Move the member's spool file to `temp` when it is its only user and on the same file system."""
    spooled = archive.spooled(action.member)
    if spooled is None or archive.sharers(action.member) != 1:
        return False
    try:
        _fsync(spooled)  # durable before the journal says it is staged (written back meanwhile, while the archive was read)
        system.replace(spooled, temp)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        return False
    return True


def _copy_member(system: System, archive: Archive, action: Action, temp: str, progress: Optional[Callable[[int], None]]) -> tuple[str, int]:
    """Copy the member's bytes (from its spool file, or the archive) to `temp`: their SHA-256 and length."""
    digest = hashlib.sha256()
    written = 0
    with archive.open(action.member) as source, system.open_write(temp) as target:
        for block in iter(lambda: source.read(BLOCK), b""):
            digest.update(block)
            target.write(block)
            written += len(block)
            if progress:
                progress(len(block))
    return digest.hexdigest(), written


def _check_space(system: System, plan: Plan, state_root: str) -> None:
    """Both the new files and the backups must fit before the first byte is written."""
    for folder, need, what in ((plan.target, plan.bytes_written, "the new files"), (state_root, plan.bytes_backed_up, "the backups")):
        free = system.free_bytes(folder)
        if need and free is not None and need + SPACE_MARGIN > free:
            raise InputError(f"{what} need {_mb(need + SPACE_MARGIN)} in {folder}, which has {_mb(free)} free: free some space; nothing was changed")


def _mb(size: int) -> str:
    return f"{size / 1024**2:,.0f} MB"


def _missing_dirs(system: System, folder: str) -> list[str]:
    """The folders `make_dirs(folder)` will create, outermost first."""
    rules, missing = system.paths, []
    while not system.is_dir(folder) and rules.dirname(folder) != folder:
        missing.append(folder)
        folder = rules.dirname(folder)
    return missing[::-1]


def _after_failed_apply(store: Store, txid: str, steps: list[dict[str, Any]], report: UndoReport, entry: Optional[dict[str, Any]]) -> None:
    """Close the journal (and the history entry, if written) as rolled back; a still broken state folder is left for recovery."""
    if not report.complete:
        return  # the journal stays in progress: the next install or rollback tries again
    try:
        store.remove_backups(txid)
        if entry is not None:
            history = store.history()
            for item in history:
                if item.get("id") == txid:
                    item["state"] = "rolled-back"
            store.save_history(history)
        store.record({"state": "rolled-back"})
    except (OSError, CudnnDoctorError):
        pass  # the target is restored; recovery finds nothing left to undo


def _failure(error: BaseException, report: UndoReport, os_name: str) -> CudnnDoctorError:
    """The one line the user sees: what went wrong, and whether everything was restored."""
    restored = "nothing was changed" if not report.restored else "every file was restored"
    if not report.complete:
        restored = report.summary()
    if isinstance(error, PermissionError) or (isinstance(error, OSError) and error.errno == errno.EROFS):
        return InputError(f"{_permission_message(error, os_name)}; {restored}")
    if isinstance(error, FileInUse):  # found at the rename: what was written before it is undone, or said not to be
        error.args = (f"{error}; {restored}",)
        return error
    if isinstance(error, CudnnDoctorError):
        error.args = (f"{error}; {restored}" if report.restored or not report.complete else str(error),)
        return error
    if isinstance(error, KeyboardInterrupt):
        return InstallFailed(f"interrupted; {restored}")
    if isinstance(error, OSError):
        return InstallFailed(f"{error.strerror or error} ({error.filename or 'a file'}); {restored}")
    return InstallFailed(f"{type(error).__name__}: {error}; {restored}")


# Undoing ---------------------------------------------------------------------------------


IN_USE = "in use by"


class NothingToUndo(CudnnDoctorError):
    """`rollback` with no install or fix left in place: a state to report, not an error (exit 0)."""


class UndoReport(Record):
    """What an undo did: files put back, files changed since (left alone), files it could not restore, and the files
    the install or fix had added, which the undo deleted."""

    restored: list[str]
    changed: list[str]
    failed: list[tuple[str, str]]
    removed: list[str]

    @property
    def complete(self) -> bool:
        return not self.changed and not self.failed

    def summary(self) -> str:
        parts = []
        if self.changed:
            parts.append(f"{len(self.changed)} file(s) changed since the install were left as they are: {', '.join(self.changed[:5])}")
        if self.failed:
            parts.append(f"{len(self.failed)} file(s) could not be restored: " + ", ".join(f"{p} ({why})" for p, why in self.failed[:5]))
        if self.in_use:
            parts.append("close the programs that have them loaded (Python, Jupyter, the IDE)")
        return "; ".join(parts) or self.done()

    def done(self) -> str:
        """`12 file(s) removed, 3 restored`: deleted what was added, put back what was replaced."""
        said = [f"{len(self.removed)} file(s) removed"] if self.removed else []
        said += [f"{len(self.restored)} {'restored' if said else 'file(s) restored'}"] if self.restored or not said else []
        return ", ".join(said)

    @property
    def in_use(self) -> bool:
        """Some file could not be restored because another program holds it."""
        return any(why.startswith(IN_USE) for _, why in self.failed)


def _undo_action(system: System, step: dict[str, Any]) -> str:
    """keep (already as before) | changed (not what the install wrote) | remove | restore | legacy."""
    if not step.get("started"):
        return "keep"
    if "old" not in step:  # history written before identities were recorded
        return "legacy"
    if step.get("kind") == "move" and step.get("source") and step.get("new"):
        return _move_action(system, step)
    current = identity(system, step["dest"])
    if current == step["old"]:
        return "keep"
    if current != step.get("new"):
        return "changed"
    return "remove" if step["old"] is None else "restore"


def _move_action(system: System, step: dict[str, Any]) -> str:
    """A fix's move, judged by where its bytes are: keep when the file is home and the destination holds what it
    held; restore when the file is to go home or the destination to get its old content back; changed otherwise."""
    moved, old = step["new"], step.get("old")
    at_source, at_dest = identity(system, step["source"]), identity(system, step["dest"])
    if at_source is None:
        return "restore" if at_dest == moved else "changed"
    if at_source != moved:
        return "changed"
    if at_dest == old:
        return "keep"
    return "restore" if at_dest in (moved, None) else "changed"


def undo_actions(system: System, steps: Sequence[dict[str, Any]]) -> list[str]:
    """What undo would do to each step; computed once, as it reads every installed file."""
    return [_undo_action(system, step) for step in steps]


def missing_backups(system: System, steps: Sequence[dict[str, Any]], actions: Sequence[str]) -> list[str]:
    """Backups an undo would need that are gone or altered, found before anything is touched."""
    problems = []
    for step, action in zip(steps, actions):
        if _moved_away(system, step):
            problems.append(f"{step['source']}, moved to {step['dest']}, is no longer there")
            continue
        if action == "restore" and step.get("kind") != "rmdir":  # a removed folder is made again, from nothing
            found = identity(system, step["backup"]) if step.get("backup") else None
            if found != step["old"]:
                problems.append(f"the backup of {step['dest']} ({step.get('backup')}) is {'missing' if found is None else 'altered'}")
    return problems


def _moved_away(system: System, step: dict[str, Any]) -> bool:
    """A fix's moved file is neither where it was moved (the quarantine) nor back home: rollback cannot restore it."""
    if step.get("kind") != "move" or not step.get("started") or not step.get("new") or not step.get("source"):
        return False
    return identity(system, step["dest"]) != step["new"] and identity(system, step["source"]) != step["new"]


def undo(
    system: System,
    steps: Sequence[dict[str, Any]],
    actions: Optional[Sequence[str]] = None,
    env: Sequence[dict[str, Any]] = (),
    said: Optional[list[str]] = None,
    root: Optional[str] = None,
) -> UndoReport:
    """Put back what the install changed, newest first (the environment, written last, first); skip what
    changed since; then remove the folders it created.

    Never raises for a file: what cannot be restored is in the report (`actions`, when given, are
    `undo_actions(steps)`); `said` collects a sentence per environment change. Every write stays inside the
    real path its step recorded (`within`, `home`; an install's steps: `root`, the target's real path).
    """
    report = UndoReport([], [], [], [])
    sentences = undo_environment(system, env, report.failed)
    if said is not None:
        said.extend(sentences)
    for index in reversed(range(len(steps))):
        step = steps[index]
        if not step.get("started"):
            continue
        dest = step["dest"]
        within = step.get("within", root)
        try:
            check_inside(system, dest, within, "restore")
            _discard(system, dest + TEMP_SUFFIX)
            if step.get("kind") == "move" and step.get("source"):  # a move home across file systems stages its copy there
                check_inside(system, step["source"], step.get("home"), "move back")
                _discard(system, step["source"] + TEMP_SUFFIX)
            action = actions[index] if actions is not None else _undo_action(system, step)
            if step.get("kind") in ("move", "rmdir"):  # a fix's steps: a file moved (its source is where it goes back), a folder removed
                if action != "keep":
                    _undo_fix_step(system, step, report)
                continue
            if action == "changed":
                report.changed.append(dest)
            elif action == "remove" or (action == "legacy" and not step.get("backup") and step.get("kind") in ("add", "link")):
                _discard(system, dest)
                report.removed.append(dest)
            elif action in ("restore", "legacy") and step.get("backup"):
                expected = step["old"] if action == "restore" else identity(system, step["backup"])
                if _copy(system, step["backup"], dest + TEMP_SUFFIX) != expected:
                    _discard(system, dest + TEMP_SUFFIX)
                    report.failed.append((dest, f"its backup {step['backup']} is altered"))
                    continue
                system.replace(dest + TEMP_SUFFIX, dest)
                report.restored.append(dest)
        except (OSError, CudnnDoctorError) as error:
            try:
                _discard(system, dest + TEMP_SUFFIX)  # the staged copy of a restore that was refused
            except OSError:
                pass  # the next undo removes it first
            programs = _held_by(system, dest, error)
            if programs is not None:
                report.failed.append((dest, f"{IN_USE} {', '.join(programs) or 'a running program'}"))
            else:
                report.failed.append((dest, getattr(error, "strerror", None) or str(error)))
    for step in reversed(steps):
        for folder in reversed(step.get("dirs") or []):
            try:
                if _on_the_way(system, folder, step.get("within", root)):
                    system.remove_dir(folder)  # False, and kept, when something was put in it since
            except OSError as error:  # not removed, and not known why: the next rollback tries again
                report.failed.append((folder, error.strerror or str(error)))
    return report


@contextmanager
def _one_line(what: str) -> Iterator[None]:
    """A file that cannot be read or written while undoing is one line naming it, never a traceback."""
    try:
        yield
    except OSError as error:
        raise InputError(f"{what}: {error.strerror or error} ({error.filename or 'a file'}); run it again once that is fixed") from None


def recover(store: Store) -> Optional[str]:
    """Finish or undo an install that a crash interrupted (the caller holds the lock); a sentence when it did."""
    with _one_line("could not finish or undo an interrupted install"):
        return _recover(store)


def _recover(store: Store) -> Optional[str]:
    store.remove_leftovers()
    journal = store.journal()
    if journal is None or journal.get("state") != "in-progress":
        return None
    history = store.history()
    entry = next((h for h in history if h.get("id") == journal["id"]), None)
    steps = journal["steps"]
    actions = undo_actions(store.system, steps)
    whole = all(s.get("started") for s in steps) and all(a in ("remove", "restore") for a in actions)  # every file is what the install wrote
    if entry is not None and entry.get("state") == "installed" and whole:  # killed after the history was written: the install is whole
        store.record({"state": "committed"})
        return f"an interrupted {_what(journal)} had finished; it is kept (undo it with `cudnn-doctor rollback`)"
    held = held_files(store.system, _touched(steps, actions))
    if held:
        raise FileInUse(held, f"undo the interrupted install into {journal['target']}", "run `cudnn-doctor rollback` again; nothing was changed")
    report = undo(store.system, steps, actions, env=journal.get("env") or [], root=_install_root(store.system, journal))
    if report.failed:
        fix = "" if report.in_use else "fix that (run as administrator / with sudo?) and "
        raise InputError(f"could not undo the interrupted install into {journal['target']}: {report.summary()}; {fix}run `cudnn-doctor rollback` again")
    store.remove_backups(journal["id"])  # first: a crash after it finds every file already restored
    if entry is not None:
        entry["state"] = "rolled-back"
        store.save_history(history)
    store.record({"state": "rolled-back"})
    said = f"rolled back an interrupted {_what(journal)} ({len(report.restored)} files restored)"
    return said + (f"; {report.summary()}" if report.changed else "")


def _install_root(system: System, entry: dict[str, Any]) -> Optional[str]:
    """The real path an install's undo stays inside: the one recorded when it began (a journal from before the
    rule: the target's, resolved now). A fix's steps each carry their own."""
    if entry.get("kind") == "fix":
        return None
    recorded = entry.get("real_target")
    return recorded if isinstance(recorded, str) else system.realpath(entry["target"])


def _what(journal: dict[str, Any]) -> str:
    """How recovery names the interrupted transaction: an install of an archive, or a fix."""
    if journal.get("kind") == "fix":
        return f"{journal['archive']} in {journal['target']}"
    return f"install of {journal['archive']} into {journal['target']}"


def rollback_last(store: Store) -> tuple[dict[str, Any], UndoReport]:
    """Undo the most recent install still in place (the caller holds the lock).

    A missing or altered backup is found before anything is touched (exit 2, naming it); files
    changed since the install are left alone and named; the entry is closed only when nothing failed.
    """
    with _one_line("could not roll back"):
        return _rollback_last(store)


def _rollback_last(store: Store) -> tuple[dict[str, Any], UndoReport]:
    system = store.system
    history = store.history()
    entry = next((h for h in reversed(history) if h.get("state") in ("installed", UNFINISHED)), None)
    if entry is None:
        raise NothingToUndo(
            f"Nothing left to undo: the {len(history)} recorded install(s) and fix(es) are rolled back (`cudnn-doctor history` lists them)."
            if history
            else "Nothing to undo: no install or fix is recorded."
        )
    steps = [dict(s, started=True) for s in entry["steps"] if s.get("started", True)]
    actions = undo_actions(system, steps)
    problems = missing_backups(system, steps, actions)
    if problems:
        raise InputError(
            f"cannot roll back install {entry['id']}: {'; '.join(problems[:5])}"
            f"{f' (and {len(problems) - 5} more)' if len(problems) > 5 else ''}; nothing was changed"
        )
    held = held_files(system, _touched(steps, actions))  # Windows: a loaded DLL would stop the undo half-way
    if held:
        raise FileInUse(held, f"roll back install {entry['id']}", "run `cudnn-doctor rollback` again; nothing was changed")
    entry["state"] = UNFINISHED  # said before the first change: a failure or a kill half-way leaves a truthful history
    store.save_history(history)
    said: list[str] = []
    report = undo(system, steps, actions, env=entry.get("env") or [], said=said, root=_install_root(system, entry))
    entry["env_restored"] = said + refresh_loader_cache(system, entry)
    if report.complete:
        store.remove_backups(entry["id"])  # first: a crash after it finds every file already restored
    if not report.failed:  # files changed since stay as they are, and so do their backups
        entry["state"] = "rolled-back"
        entry["rolled_back"] = time.time()
        entry["left_as_changed"] = report.changed
    store.save_history(history)
    return entry, report


def _touched(steps: Sequence[dict[str, Any]], actions: Sequence[str]) -> list[str]:
    """The files an undo would delete or put back."""
    return [step["dest"] for step, action in zip(steps, actions) if action in ("remove", "restore", "legacy") and step.get("kind") != "rmdir"]


def refresh_loader_cache(system: System, entry: dict[str, Any]) -> list[str]:
    """Refresh the loader cache the install refreshed; a sentence when it did."""
    if entry.get("ldconfig") and system.os == "linux":
        system.run(["ldconfig"], timeout=60)
        return ["refreshed the loader cache (ldconfig)"]
    return []


# File helpers ----------------------------------------------------------------------------


def _copy(system: System, source: str, target: str) -> Optional[str]:
    """A byte-for-byte copy, or the same link; returns the identity of what was copied."""
    _discard(system, target)
    link = system.link_target(source)
    if link is not None:
        system.symlink(link, target)
        return f"link:{link}"
    digest = hashlib.sha256()
    with system.open_read(source) as reader, system.open_write(target) as writer:
        for block in iter(lambda: reader.read(BLOCK), b""):
            digest.update(block)
            writer.write(block)
    return f"sha256:{digest.hexdigest()}"


def _size_of(path: Any) -> Optional[int]:
    """The size of an archive file on this host (None for an extracted folder)."""
    try:
        return int(path.stat().st_size) if path.is_file() else None
    except OSError:
        return None


def _fsync(path: str) -> None:
    descriptor = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove_spool(folder: str) -> None:
    """Remove a spool folder and the numbered files in it; only a folder of that name, never anything else."""
    if os.path.basename(folder.rstrip("/\\")).startswith(SPOOL_PREFIX) and os.path.isdir(folder) and not os.path.islink(folder):
        shutil.rmtree(folder, ignore_errors=True)


def _present(system: System, path: str) -> bool:
    """A file or a link (even one that dangles) is at path."""
    return system.link_target(path) is not None or system.stat(path) is not None


def _discard(system: System, path: str) -> None:
    if _present(system, path):
        system.remove(path)


def _permission_message(error: OSError, os_name: str) -> str:
    path = str(error.filename2 or error.filename or "a file")  # a rename names its target second
    if path.endswith(TEMP_SUFFIX):
        path = path[: -len(TEMP_SUFFIX)]
    if getattr(error, "winerror", None) == 32:
        return f"{path} is in use by a running program: close Python, Jupyter and the IDE, then run the install again"
    if error.errno == errno.EROFS:
        return f"{path} is on a read-only file system"
    if os_name == "windows":
        return f"permission denied writing {path}: run the install again from an elevated terminal (Run as administrator)"
    return f"permission denied writing {path}: run the install again with sudo"


# Fixes -----------------------------------------------------------------------------------
#
# A fix is a transaction of the same journal, backups, lock and recovery as an install. Its steps:
# "move" (dest ← source: a rename, or a verified copy and a delete across file systems; undone by
# moving it back, and restoring what dest held from its backup), "write" (dest ← text or another
# file's bytes, like an install's file) and "rmdir" (a folder the moves emptied; undone by making
# it again). Its history entry says `"kind": "fix"`, `archive` = "fix: <ids>", `target` = the folder touched.


class FixStep(Record):
    kind: str  # move | write | rmdir
    dest: str
    source: Optional[str] = None  # move: the file moved; write: the file whose bytes are written
    text: Optional[str] = None  # write: the text written
    data: Optional[bytes] = None  # write: the bytes written (a member taken again from an installed archive)
    within: Optional[str] = None  # the folder dest must stay inside (the toolkit, the quarantine); None: dest's folder
    home: Optional[str] = None  # move: the folder the source must stay inside, where rollback puts it back; None: its folder


def fix_roots(system: System, step: FixStep) -> dict[str, str]:
    """The real paths, resolved now, that the step's writes (and their undo) must stay inside."""
    rules = system.paths
    roots = {"within": system.realpath(step.within or rules.dirname(step.dest))}
    if step.kind == "move" and step.source:
        roots["home"] = system.realpath(step.home or rules.dirname(step.source))
    return roots


def apply_fix(
    steps: Sequence[FixStep],
    store: Store,
    txid: str,
    label: str,
    target: str,
    env_changes: Sequence[EnvChange] = (),
    after_step: Optional[Callable[[int], None]] = None,
    commands: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Apply a fix's steps (the caller holds `store.locked()`); on any failure undo them and raise a one-line error."""
    system = store.system
    held = held_files(system, [p for s in steps for p in (s.dest, s.source if s.kind == "move" else None) if p and s.kind != "rmdir" and _present(system, p)])
    if held:
        raise FileInUse(held, "fix", "run the fix again; nothing was changed")
    header = {
        "journal": 1,
        "id": txid,
        "kind": "fix",
        "archive": label,
        "target": target,
        "version": None,
        "started": time.time(),
        "steps": [{"dest": s.dest, "kind": s.kind, **({"source": s.source} if s.kind == "move" and s.source else {}), **fix_roots(system, s)} for s in steps],
        "env": [dataclasses.asdict(change) for change in env_changes],
        "ldconfig": False,
        "commands": [dict(c) for c in commands],  # package commands the caller runs after the commit, each with how it is undone
    }
    store.begin(header)
    journaled: list[dict[str, Any]] = [dict(s, started=False, done=False) for s in header["steps"]]
    env: list[dict[str, Any]] = [dict(c, started=False) for c in header["env"]]
    entry: Optional[dict[str, Any]] = None
    try:
        for index, (step, record) in enumerate(zip(steps, journaled)):
            _apply_fix_step(store, step, record, index, txid)
            if after_step is not None:
                after_step(index)
        for index, change in enumerate(env):
            _apply_env(store, change, index)
        if env:
            system.broadcast_environment_change()
        entry = {**{k: v for k, v in header.items() if k != "journal"}, "steps": journaled, "env": env, "state": "installed", "finished": time.time()}
        store.save_history([*store.history(), entry])
        store.record({"state": "committed"})
    except BaseException as error:
        report = undo(system, journaled, env=env)
        _after_failed_apply(store, txid, journaled, report, entry)
        raise _failure(error, report, system.os) from None
    return {**header, "steps": journaled, "env": env, "state": "committed"}


def _apply_fix_step(store: Store, step: FixStep, record: dict[str, Any], index: int, txid: str) -> None:
    system, rules = store.system, store.system.paths
    within, home = record.get("within"), record.get("home")
    if step.kind == "rmdir":
        check_inside(system, step.dest, within, "remove the folder")
        if (system.list_dir(step.dest, sizes=False) or []) or not system.is_dir(step.dest) or system.link_target(step.dest) is not None:
            raise InstallFailed(f"{step.dest} is not the empty folder the fix planned to remove (it changed since); nothing was changed")
        record.update(started=True, old="folder", new=None)
        store.record({"step": index, "started": True, "old": "folder", "new": None})
        if not system.remove_dir(step.dest):
            raise InstallFailed(f"could not remove the empty folder {step.dest}")
        record["done"] = True
        return
    if step.kind == "move":
        check_inside(system, step.source or "", home, "move")  # the file leaves the folder it was planned from, not one a link leads to
    check_inside(system, step.dest, within)
    moved = identity(system, step.source) if step.kind == "move" and step.source else None
    if step.kind == "move" and moved is None:
        raise InstallFailed(f"{step.source} is gone since the fix was planned")
    dest, folder = step.dest, rules.dirname(step.dest)
    backup, old = None, None
    if _present(system, dest):
        backup = store.backup_path(txid, index, rules.basename(dest))
        with store._writing(backup):
            system.make_dirs(rules.dirname(backup))
            old = _copy(system, dest, backup + TEMP_SUFFIX)
            system.replace(backup + TEMP_SUFFIX, backup)
    record.update(started=True, backup=backup, old=old, dirs=_missing_dirs(system, folder))
    event = {k: record[k] for k in ("started", "backup", "old", "dirs")}
    if step.kind == "move":
        record["new"] = event["new"] = moved  # known before the rename: undo must know what it moved
    store.record({"step": index, **event})
    if record["dirs"]:  # no folder is made through a link that leads out
        check_inside(system, dest, within)
    system.make_dirs(folder)
    check_inside(system, dest, within)  # immediately before the write: links may have changed since the plan
    if step.kind == "move":
        check_inside(system, step.source or "", home, "move")
        _move(system, step.source or "", dest, moved)
    else:
        temp = dest + TEMP_SUFFIX
        _discard(system, temp)
        if step.text is not None or step.data is not None:
            with system.open_write(temp) as handle:
                handle.write(step.data if step.data is not None else (step.text or "").encode("utf-8"))
        else:
            _copy(system, step.source or "", temp)
        record["new"] = identity(system, temp)
        store.record({"step": index, "new": record["new"]})
        system.replace(temp, dest)
    record["done"] = True


def _move(system: System, source: str, dest: str, expected: Optional[str]) -> None:
    """A rename; across file systems (EXDEV), a copy checked against `expected`, put in place, then the source deleted."""
    try:
        system.replace(source, dest)
        return
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
    temp = dest + TEMP_SUFFIX
    if _copy(system, source, temp) != expected:
        _discard(system, temp)
        raise InstallFailed(f"{source} changed while it was being moved to {dest}")
    system.replace(temp, dest)
    system.remove(source)


def _undo_fix_step(system: System, step: dict[str, Any], report: UndoReport) -> None:
    """Undo one started step of a fix: make a removed folder again, or move a file home and restore what its destination held."""
    dest = step["dest"]
    if step.get("kind") == "rmdir":
        if not system.is_dir(dest):
            check_inside(system, dest, step.get("within"), "make the folder")
            system.make_dirs(dest)
            report.restored.append(dest)
        return
    _undo_move(system, step, report)


def _undo_move(system: System, step: dict[str, Any], report: UndoReport) -> None:
    """Undo a move from where its bytes are now, never from identities alone: the moved file goes home when it is
    not there yet (from the destination), then the destination gets back what it held (from the backup), or loses
    the file when it held nothing. Each state in between is one this function finishes when run again: the file
    home and the destination still the moved file or empty (a rollback killed after the move home), the file at
    both places (a copy across file systems killed before its delete)."""
    dest, source, moved, old = step["dest"], step.get("source"), step.get("new"), step.get("old")
    if not source or moved is None:
        if identity(system, dest) != old:
            report.changed.append(dest)
        return
    within, home = step.get("within"), step.get("home")
    at_source, at_dest = identity(system, source), identity(system, dest)
    if at_source not in (moved, None):
        report.changed.append(source)  # something else is at home now: the user's; the moved file stays where it is
        return
    done = False
    if at_source is None:
        if at_dest != moved:
            report.failed.append((source, f"it is neither there nor at {dest}"))
            return
        check_inside(system, source, home, "move back")
        system.make_dirs(system.paths.dirname(source))
        check_inside(system, source, home, "move back")
        _move(system, dest, source, moved)
        at_dest, done = None, True
    if at_dest != old:
        if at_dest not in (moved, None):
            report.changed.append(dest)
            return
        check_inside(system, dest, within, "restore")
        if old is None:
            _discard(system, dest)
        else:
            backup = step.get("backup")
            if not backup or _copy(system, backup, dest + TEMP_SUFFIX) != old:
                _discard(system, dest + TEMP_SUFFIX)
                report.failed.append((dest, f"its backup {backup} is altered"))
                return
            system.replace(dest + TEMP_SUFFIX, dest)
        done = True
    if done:
        report.restored.append(source)
