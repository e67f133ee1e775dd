"""`rollback` and `history` as library calls (issue 31): each returns what it found or did, and `reports/install_report`
says it; the command line only parses and dispatches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from cudnn_doctor.install import transaction
from cudnn_doctor.record import Record

if TYPE_CHECKING:
    from cudnn_doctor.system.interface import System


class Rollback(Record):
    """What `rollback` did: a crash's leftover finished or undone (`recovered`), nothing to undo (`nothing`), or the
    entry it undid and how that went."""

    warnings: tuple[str, ...]  # what reading the state folder skipped
    recovered: Optional[str] = None
    nothing: Optional[str] = None
    entry: Optional[dict[str, Any]] = None
    report: Optional[transaction.UndoReport] = None

    @property
    def exit_code(self) -> int:
        return 1 if self.report is not None and not self.report.complete else 0


class History(Record):
    """The installs and fixes recorded, oldest first, and an install the journal says is running or was interrupted."""

    entries: tuple[dict[str, Any], ...]
    in_progress: Optional[dict[str, Any]]
    warnings: tuple[str, ...]


def rollback(system: System) -> Rollback:
    """Undo the last install or fix still in place (finishing or undoing an interrupted one first), under the lock."""
    store = transaction.Store(system)
    with store.locked():
        recovered = transaction.recover(store)
        warnings = store.take_warnings()
        if recovered:
            return Rollback(warnings, recovered=recovered)
        try:
            entry, report = transaction.rollback_last(store)
        except transaction.NothingToUndo as nothing:
            return Rollback(warnings, nothing=str(nothing))
    return Rollback(warnings, entry=entry, report=report)


def history(system: System) -> History:
    """The recorded installs and fixes; reads only (recovery is for install and rollback, which hold the lock)."""
    store = transaction.Store(system)
    journal = store.journal()
    in_progress = journal if journal is not None and journal.get("state") == "in-progress" else None
    entries = tuple(store.history())
    return History(entries, in_progress, store.take_warnings())
