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

The parts, each a module of its own: `files` (identities, copies, containment, files in use), `journal` (the
state folder: journal, backups, history, lock), `apply` (an install), `undo` (undo, recovery, rollback) and
`fix_steps` (a fix's moves, writes and removed folders). This module is their one public face.
"""

from __future__ import annotations

from cudnn_doctor.install.apply import apply
from cudnn_doctor.install.files import (
    TEMP_SUFFIX,
    UNFINISHED,
    FileInUse,
    InstallFailed,
    OutsideTarget,
    check_inside,
    held_files,
    identity,
    in_use_message,
)
from cudnn_doctor.install.fix_steps import FixStep, apply_fix, fix_roots
from cudnn_doctor.install.journal import Store
from cudnn_doctor.install.undo import (
    NothingToUndo,
    UndoReport,
    recover,
    refresh_loader_cache,
    rollback_last,
    undo,
    undo_actions,
)
from cudnn_doctor.system.spool import SPOOL_PREFIX

__all__ = [
    "SPOOL_PREFIX",
    "TEMP_SUFFIX",
    "UNFINISHED",
    "FileInUse",
    "FixStep",
    "InstallFailed",
    "NothingToUndo",
    "OutsideTarget",
    "Store",
    "UndoReport",
    "apply",
    "apply_fix",
    "check_inside",
    "fix_roots",
    "held_files",
    "identity",
    "in_use_message",
    "recover",
    "refresh_loader_cache",
    "rollback_last",
    "undo",
    "undo_actions",
]
