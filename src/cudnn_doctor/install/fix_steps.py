"""A fix as a transaction of the same journal, backups, lock and recovery as an install."""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Optional, Sequence

from cudnn_doctor.install.apply import after_failed_apply, apply_env, failure, missing_dirs
from cudnn_doctor.install.files import (
    TEMP_SUFFIX,
    FileInUse,
    InstallFailed,
    check_inside,
    copy_file,
    discard,
    held_files,
    identity,
    move_file,
    present,
)
from cudnn_doctor.install.journal import Store
from cudnn_doctor.install.plan import EnvChange
from cudnn_doctor.install.undo import undo
from cudnn_doctor.record import Record
from cudnn_doctor.system.interface import System

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
    # move: the folder the source must stay inside, where rollback puts it back; None: its folder
    home: Optional[str] = None


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
    held = held_files(
        system,
        [
            p
            for s in steps
            for p in (s.dest, s.source if s.kind == "move" else None)
            if p and s.kind != "rmdir" and present(system, p)
        ],
    )
    if held:
        raise FileInUse(held, "fix", "run the fix again; nothing was changed")
    header: dict[str, Any] = {
        "journal": 1,
        "id": txid,
        "kind": "fix",
        "archive": label,
        "target": target,
        "version": None,
        "started": time.time(),
        "steps": [
            {
                "dest": s.dest,
                "kind": s.kind,
                **({"source": s.source} if s.kind == "move" and s.source else {}),
                **fix_roots(system, s),
            }
            for s in steps
        ],
        "env": [dataclasses.asdict(change) for change in env_changes],
        "ldconfig": False,
        "commands": [
            dict(c) for c in commands
        ],  # package commands the caller runs after the commit, each with how it is undone
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
            apply_env(store, change, index)
        if env:
            system.broadcast_environment_change()
        entry = {
            **{k: v for k, v in header.items() if k != "journal"},
            "steps": journaled,
            "env": env,
            "state": "installed",
            "finished": time.time(),
        }
        store.save_history([*store.history(), entry])
        store.record({"state": "committed"})
    except BaseException as error:
        report = undo(system, journaled, env=env)
        after_failed_apply(store, txid, journaled, report, entry)
        raise failure(error, report, system.os) from None
    return {**header, "steps": journaled, "env": env, "state": "committed"}


def _apply_fix_step(store: Store, step: FixStep, record: dict[str, Any], index: int, txid: str) -> None:
    system, rules = store.system, store.system.paths
    within, home = record.get("within"), record.get("home")
    if step.kind == "rmdir":
        check_inside(system, step.dest, within, "remove the folder")
        if (
            (system.list_dir(step.dest, sizes=False) or [])
            or not system.is_dir(step.dest)
            or system.link_target(step.dest) is not None
        ):
            raise InstallFailed(
                f"{step.dest} is not the empty folder the fix planned to remove (it changed since); nothing was changed"
            )
        record.update(started=True, old="folder", new=None)
        store.record({"step": index, "started": True, "old": "folder", "new": None})
        if not system.remove_dir(step.dest):
            raise InstallFailed(f"could not remove the empty folder {step.dest}")
        record["done"] = True
        return
    if step.kind == "move":
        check_inside(
            system, step.source or "", home, "move"
        )  # the file leaves the folder it was planned from, not one a link leads to
    check_inside(system, step.dest, within)
    moved = identity(system, step.source) if step.kind == "move" and step.source else None
    if step.kind == "move" and moved is None:
        raise InstallFailed(f"{step.source} is gone since the fix was planned")
    dest, folder = step.dest, rules.dirname(step.dest)
    backup, old = None, None
    if present(system, dest):
        backup = store.backup_path(txid, index, rules.basename(dest))
        with store._writing(backup):
            system.make_dirs(rules.dirname(backup))
            old = copy_file(system, dest, backup + TEMP_SUFFIX)
            system.replace(backup + TEMP_SUFFIX, backup)
    record.update(started=True, backup=backup, old=old, dirs=missing_dirs(system, folder))
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
        move_file(system, step.source or "", dest, moved)
    else:
        temp = dest + TEMP_SUFFIX
        discard(system, temp)
        if step.text is not None or step.data is not None:
            with system.open_write(temp) as handle:
                handle.write(step.data if step.data is not None else (step.text or "").encode("utf-8"))
        else:
            copy_file(system, step.source or "", temp)
        record["new"] = identity(system, temp)
        store.record({"step": index, "new": record["new"]})
        system.replace(temp, dest)
    record["done"] = True
