"""A fix's changes made concrete on the machine: which files a folder move takes, where quarantined files go.

The planners (fixes layer) never touch the machine; this reads it (listing folders, no writes) to
turn their changes into the steps `transaction.apply_fix` journals, so the printed plan names
every file before anything is changed. Refusals are one-line errors raised here, before any write.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

from cudnn_doctor.errors import UsageError
from cudnn_doctor.fixes.changes import Change, CopyFile, MoveFile, MoveTree, RunCommand, SetPersistentEnv, WriteFile
from cudnn_doctor.install.plan import EnvChange
from cudnn_doctor.install.transaction import FixStep
from cudnn_doctor.system.interface import System


class Expanded(NamedTuple):
    steps: list[FixStep]
    env: list[EnvChange]
    commands: list[RunCommand]


def quarantine_dest(system: System, quarantine: str, path: str) -> str:
    """`C:\\Windows\\System32\\x.dll` → `<quarantine>\\C\\Windows\\System32\\x.dll`: the whole path kept, so it is clear where it came from."""
    rules = system.paths
    parts = [p.rstrip(":") for p in rules.norm(path).replace("\\", "/").split("/") if p and p.rstrip(":")]
    return rules.join(quarantine, *parts)


def expand(system: System, changes: Sequence[Change], quarantine: str) -> Expanded:
    """The steps, environment changes and commands of `changes`, in order; each file moved at most once."""
    rules = system.paths
    steps: list[FixStep] = []
    moved: set[str] = set()
    env: list[EnvChange] = []
    commands: list[RunCommand] = []

    def move(source: str, dest: Optional[str]) -> None:
        if rules.key(source) in moved or (system.stat(source) is None and system.link_target(source) is None):
            return  # said twice (two findings about one file), or gone since the check
        target = dest or quarantine_dest(system, quarantine, source)
        info = system.stat(target)
        if info is not None and info.is_dir and system.link_target(target) is None:
            raise UsageError(f"cannot move {source} to {target}: a folder of that name is there; nothing was changed")
        moved.add(rules.key(source))
        steps.append(FixStep("move", target, source))

    for change in changes:
        if isinstance(change, MoveFile):
            move(change.src, change.dest)
        elif isinstance(change, MoveTree):
            if not system.is_dir(change.src) or system.link_target(change.src) is not None:
                continue
            for path in _files_below(system, change.src):
                if rules.key(path) in moved:
                    continue
                rel = path[len(rules.norm(change.src)) :].lstrip("\\/")
                move(path, rules.join(change.dest, *rel.replace("\\", "/").split("/")) if change.dest else None)
            steps.extend(FixStep("rmdir", folder) for folder in _emptied(system, change.src, moved))
        elif isinstance(change, CopyFile):
            steps.append(FixStep("write", change.dest, change.src))
        elif isinstance(change, WriteFile):
            steps.append(FixStep("write", change.dest, text=change.text))
        elif isinstance(change, SetPersistentEnv):
            env.append(EnvChange(change.scope, change.name, change.old, change.value))  # type: ignore[arg-type]  # None removes it
        elif isinstance(change, RunCommand):
            commands.append(change)
    return Expanded(_rmdirs_last(steps), env, commands)


def _files_below(system: System, folder: str) -> list[str]:
    """Every file and link below `folder` (links are moved as links, never followed)."""
    found = []
    for entry in system.list_dir(folder, sizes=False) or []:
        if entry.is_dir and system.link_target(entry.path) is None:
            found.extend(_files_below(system, entry.path))
        else:
            found.append(entry.path)
    return found


def _emptied(system: System, folder: str, moved: set[str]) -> list[str]:
    """The folders (innermost first, `folder` last) that hold nothing once the moved files are gone."""
    rules = system.paths
    emptied: list[str] = []
    keeps = False
    for entry in system.list_dir(folder, sizes=False) or []:
        if entry.is_dir and system.link_target(entry.path) is None:
            inner = _emptied(system, entry.path, moved)
            emptied.extend(inner)
            keeps = keeps or not inner or not rules.same(inner[-1], entry.path)
        elif rules.key(entry.path) not in moved:
            keeps = True
    return emptied if keeps else [*emptied, rules.norm(folder)]


def _rmdirs_last(steps: list[FixStep]) -> list[FixStep]:
    """Folders are removed after every move (a later change may take files out of an earlier one's folder), deepest first."""
    files = [s for s in steps if s.kind != "rmdir"]
    folders = list(dict.fromkeys(s.dest for s in steps if s.kind == "rmdir"))
    return files + [FixStep("rmdir", f) for f in sorted(folders, key=lambda f: -len(f))]
