"""Installing a plan as one transaction: stage each file beside its target, journal, rename into place; on any
failure undo what was done, then raise one line."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import time
from typing import Any, Callable, Optional, Sequence

from cudnn_doctor.errors import CudnnDoctorError, InputError
from cudnn_doctor.install.archive_info import library_problem
from cudnn_doctor.install.files import (
    BLOCK,
    SPACE_MARGIN,
    TEMP_SUFFIX,
    FileInUse,
    InstallFailed,
    check_inside,
    copy_file,
    discard,
    held_by,
    held_files,
    identity,
    permission_message,
    present,
    size_of,
)
from cudnn_doctor.install.journal import Store, new_txid
from cudnn_doctor.install.plan import Action, ActionKind, EnvChange, Plan
from cudnn_doctor.install.undo import UndoReport, undo
from cudnn_doctor.system.archive import Archive
from cudnn_doctor.system.interface import System, registry_kind
from cudnn_doctor.system.spool import fsync

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
    held = held_files(system, [a.dest for a in plan.writes if present(system, a.dest)])
    if held:
        raise FileInUse(held, "install", "run the install again; nothing was changed")
    txid = new_txid()
    real_target = system.realpath(plan.target)
    header: dict[str, Any] = {
        "journal": 1,
        "id": txid,
        "archive": str(plan.archive.path),
        "archive_size": size_of(plan.archive.path),  # `fix` takes files back from it only while it is the same size
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
            apply_env(store, change, index)
        if env:
            system.broadcast_environment_change()
        entry = {
            **{k: v for k, v in header.items() if k != "journal"},
            "steps": steps,
            "env": env,
            "state": "installed",
            "finished": time.time(),
        }
        history = store.history()
        store.save_history(
            [*history, entry]
        )  # before the journal commits: a kill in between leaves an install that rollback knows
        store.record({"state": "committed"})
    except BaseException as error:
        report = undo(system, steps, env=env, root=real_target)
        after_failed_apply(store, txid, steps, report, entry)
        raise failure(error, report, system.os) from None
    return {**header, "steps": steps, "env": env, "state": "committed"}


def apply_env(store: Store, change: dict[str, Any], index: int) -> None:
    """Journal what the variable is now (whether it exists, its value and registry type), then write it."""
    system = store.system
    values = (system.persistent_env() or {}).get(change["scope"]) or {}
    name = next((k for k in values if k.upper() == change["name"].upper()), change["name"])
    old = values.get(name)
    old_kind = system.persistent_env_kind(change["scope"], name) if old is not None else None
    event: dict[str, Any] = {
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
        raise InputError(
            f"could not set {change['scope']} {name} in the registry ({error.strerror or error})"
        ) from None


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
    if present(system, dest):  # the backup is taken first: copying it also gives the old identity
        backup = store.backup_path(txid, index, rules.basename(dest))
        with store._writing(backup):
            system.make_dirs(rules.dirname(backup))
            old = copy_file(system, dest, backup + TEMP_SUFFIX)
            system.replace(backup + TEMP_SUFFIX, backup)  # a backup exists only once complete
    step.update(started=True, backup=backup, old=old, dirs=missing_dirs(system, folder))
    store.record(
        {"step": index, **{k: step[k] for k in ("started", "backup", "old", "dirs")}}
    )  # durable before dest is touched
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
        programs = held_by(system, dest, error)
        if programs is None:
            raise
        raise FileInUse([(dest, programs)], "install", "run the install again") from None
    step["done"] = True


def _stage(
    system: System, archive: Archive, plan: Plan, action: Action, temp: str, progress: Optional[Callable[[int], None]]
) -> str:
    """Put the member beside its destination, check what is on disk, and return its identity.

    A spooled member (read once, hashed and written while the archive was read) is renamed here and
    its size checked (on Windows, where antivirus software rewrites files, it is read back and hashed);
    otherwise its bytes are copied from the archive, and the staged file is read back and must hash
    as the member did."""
    discard(system, temp)
    if action.kind is ActionKind.LINK:
        system.symlink(action.member.link or "", temp)
        return f"link:{action.member.link}"
    if action.member.size:  # the bytes must be the library its name says, for this OS and machine
        problem = library_problem(
            action.member.name, archive.read_head(action.member), system.os, plan.archive.arch or system.arch
        )
        if problem is not None:
            raise InputError(f"{archive.path.name}: refusing {action.member.name!r}: {problem}")
    if _rename_spooled(system, archive, action, temp):
        expected, written = archive.digest(action.member), action.member.size
        if progress:
            progress(written)
        if (
            system.os != "windows"
        ):  # hashed as it was written and fsynced by this process: its size is checked, not its bytes again
            info = system.stat(temp)
            if info is None or info.size != written:
                raise InstallFailed(
                    f"{system.paths.basename(action.dest)} did not verify after writing "
                    f"({info.size if info else 0} of {written} bytes)"
                )
            return f"sha256:{expected}"
    else:
        expected, written = _copy_member(system, archive, action, temp, progress)
    on_disk = identity(system, temp)  # read back: what is on disk, not what we meant (antivirus, full disks)
    if written != action.member.size or on_disk != f"sha256:{expected}":
        info = system.stat(temp)
        raise InstallFailed(
            f"{system.paths.basename(action.dest)} did not verify after writing ({info.size if info else 0} of "
            f"{action.member.size} bytes)"
        )
    return on_disk


def _rename_spooled(system: System, archive: Archive, action: Action, temp: str) -> bool:
    """Move the member's spool file to `temp` when it is its only user and on the same file system."""
    spooled = archive.spooled(action.member)
    if spooled is None or archive.sharers(action.member) != 1:
        return False
    try:
        fsync(
            spooled
        )  # durable before the journal says it is staged (written back meanwhile, while the archive was read)
        system.replace(spooled, temp)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        return False
    return True


def _copy_member(
    system: System, archive: Archive, action: Action, temp: str, progress: Optional[Callable[[int], None]]
) -> tuple[str, int]:
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
    for folder, need, what in (
        (plan.target, plan.bytes_written, "the new files"),
        (state_root, plan.bytes_backed_up, "the backups"),
    ):
        free = system.free_bytes(folder)
        if need and free is not None and need + SPACE_MARGIN > free:
            raise InputError(
                f"{what} need {_mb(need + SPACE_MARGIN)} in {folder}, which has {_mb(free)} free: free some "
                f"space; nothing was changed"
            )


def _mb(size: int) -> str:
    return f"{size / 1024**2:,.0f} MB"


def missing_dirs(system: System, folder: str) -> list[str]:
    """The folders `make_dirs(folder)` will create, outermost first."""
    rules, missing = system.paths, []
    while not system.is_dir(folder) and rules.dirname(folder) != folder:
        missing.append(folder)
        folder = rules.dirname(folder)
    return missing[::-1]


def after_failed_apply(
    store: Store, txid: str, steps: list[dict[str, Any]], report: UndoReport, entry: Optional[dict[str, Any]]
) -> None:
    """Close the journal (and the history entry, if written) as rolled back; a still broken state folder is left for
    recovery."""
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


def failure(error: BaseException, report: UndoReport, os_name: str) -> CudnnDoctorError:
    """The one line the user sees: what went wrong, and whether everything was restored."""
    restored = "nothing was changed" if not report.restored else "every file was restored"
    if not report.complete:
        restored = report.summary()
    if isinstance(error, PermissionError) or (isinstance(error, OSError) and error.errno == errno.EROFS):
        return InputError(f"{permission_message(error, os_name)}; {restored}")
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
