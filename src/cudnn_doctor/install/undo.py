"""Undoing an install or a fix from its journal or its history entry, recovering an interrupted one, and `rollback`."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Sequence

from cudnn_doctor.errors import CudnnDoctorError, InputError
from cudnn_doctor.install.environment import undo_environment
from cudnn_doctor.install.files import (
    TEMP_SUFFIX,
    UNFINISHED,
    FileInUse,
    check_inside,
    copy_file,
    discard,
    held_by,
    held_files,
    identity,
    move_file,
    on_the_way,
)
from cudnn_doctor.install.journal import Store
from cudnn_doctor.record import Record
from cudnn_doctor.system.interface import System

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
            parts.append(
                f"{len(self.changed)} file(s) changed since the install were left as they are: "
                f"{', '.join(self.changed[:5])}"
            )
        if self.failed:
            parts.append(
                f"{len(self.failed)} file(s) could not be restored: "
                + ", ".join(f"{p} ({why})" for p, why in self.failed[:5])
            )
        if self.in_use:
            parts.append("close the programs that have them loaded (Python, Jupyter, the IDE)")
        return "; ".join(parts) or self.done()

    def done(self) -> str:
        """`12 file(s) removed, 3 restored`: deleted what was added, put back what was replaced."""
        said = [f"{len(self.removed)} file(s) removed"] if self.removed else []
        said += (
            [f"{len(self.restored)} {'restored' if said else 'file(s) restored'}"] if self.restored or not said else []
        )
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
                problems.append(
                    f"the backup of {step['dest']} ({step.get('backup')}) is "
                    f"{'missing' if found is None else 'altered'}"
                )
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
            discard(system, dest + TEMP_SUFFIX)
            if step.get("kind") == "move" and step.get(
                "source"
            ):  # a move home across file systems stages its copy there
                check_inside(system, step["source"], step.get("home"), "move back")
                discard(system, step["source"] + TEMP_SUFFIX)
            action = actions[index] if actions is not None else _undo_action(system, step)
            if step.get("kind") in (
                "move",
                "rmdir",
            ):  # a fix's steps: a file moved (its source is where it goes back), a folder removed
                if action != "keep":
                    _undo_fix_step(system, step, report)
                continue
            if action == "changed":
                report.changed.append(dest)
            elif action == "remove" or (
                action == "legacy" and not step.get("backup") and step.get("kind") in ("add", "link")
            ):
                discard(system, dest)
                report.removed.append(dest)
            elif action in ("restore", "legacy") and step.get("backup"):
                expected = step["old"] if action == "restore" else identity(system, step["backup"])
                if copy_file(system, step["backup"], dest + TEMP_SUFFIX) != expected:
                    discard(system, dest + TEMP_SUFFIX)
                    report.failed.append((dest, f"its backup {step['backup']} is altered"))
                    continue
                system.replace(dest + TEMP_SUFFIX, dest)
                report.restored.append(dest)
        except (OSError, CudnnDoctorError) as error:
            try:
                discard(system, dest + TEMP_SUFFIX)  # the staged copy of a restore that was refused
            except OSError:
                pass  # the next undo removes it first
            programs = held_by(system, dest, error)
            if programs is not None:
                report.failed.append((dest, f"{IN_USE} {', '.join(programs) or 'a running program'}"))
            else:
                report.failed.append((dest, getattr(error, "strerror", None) or str(error)))
    for step in reversed(steps):
        for folder in reversed(step.get("dirs") or []):
            try:
                if on_the_way(system, folder, step.get("within", root)):
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
        raise InputError(
            f"{what}: {error.strerror or error} ({error.filename or 'a file'}); run it again once that is fixed"
        ) from None


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
    whole = all(s.get("started") for s in steps) and all(
        a in ("remove", "restore") for a in actions
    )  # every file is what the install wrote
    if (
        entry is not None and entry.get("state") == "installed" and whole
    ):  # killed after the history was written: the install is whole
        store.record({"state": "committed"})
        return f"an interrupted {_what(journal)} had finished; it is kept (undo it with `cudnn-doctor rollback`)"
    held = held_files(store.system, _touched(steps, actions))
    if held:
        raise FileInUse(
            held,
            f"undo the interrupted install into {journal['target']}",
            "run `cudnn-doctor rollback` again; nothing was changed",
        )
    report = undo(store.system, steps, actions, env=journal.get("env") or [], root=_install_root(store.system, journal))
    if report.failed:
        fix = "" if report.in_use else "fix that (run as administrator / with sudo?) and "
        raise InputError(
            f"could not undo the interrupted install into {journal['target']}: {report.summary()}; {fix}run "
            f"`cudnn-doctor rollback` again"
        )
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
            f"Nothing left to undo: the {len(history)} recorded install(s) and fix(es) are rolled back "
            f"(`cudnn-doctor history` lists them)."
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
        raise FileInUse(
            held, f"roll back install {entry['id']}", "run `cudnn-doctor rollback` again; nothing was changed"
        )
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
    return [
        step["dest"]
        for step, action in zip(steps, actions)
        if action in ("remove", "restore", "legacy") and step.get("kind") != "rmdir"
    ]


def refresh_loader_cache(system: System, entry: dict[str, Any]) -> list[str]:
    """Refresh the loader cache the install refreshed; a sentence when it did."""
    if entry.get("ldconfig") and system.os == "linux":
        system.run(["ldconfig"], timeout=60)
        return ["refreshed the loader cache (ldconfig)"]
    return []


def _undo_fix_step(system: System, step: dict[str, Any], report: UndoReport) -> None:
    """Undo one started step of a fix: make a removed folder again, or move a file home and restore what its
    destination held."""
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
        move_file(system, dest, source, moved)
        at_dest, done = None, True
    if at_dest != old:
        if at_dest not in (moved, None):
            report.changed.append(dest)
            return
        check_inside(system, dest, within, "restore")
        if old is None:
            discard(system, dest)
        else:
            backup = step.get("backup")
            if not backup or copy_file(system, backup, dest + TEMP_SUFFIX) != old:
                discard(system, dest + TEMP_SUFFIX)
                report.failed.append((dest, f"its backup {backup} is altered"))
                return
            system.replace(dest + TEMP_SUFFIX, dest)
        done = True
    if done:
        report.restored.append(source)
