"""`cudnn-doctor fix` as a library call: diagnose, plan the fixes, let the caller show the plan and answer, apply it as
one transaction that `rollback` undoes, run the package commands, and diagnose again.

Like `install`, it runs on a fixture machine exactly as live (the changes then stay in memory); nothing here prints."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from cudnn_doctor.errors import InputError
from cudnn_doctor.findings import Severity
from cudnn_doctor.fixes import FixPlan, plan_fixes
from cudnn_doctor.fixes.changes import RunCommand
from cudnn_doctor.install import transaction
from cudnn_doctor.install.fix import Expanded, expand, recorded_releases
from cudnn_doctor.install.journal import new_txid
from cudnn_doctor.record import Record

if TYPE_CHECKING:
    from cudnn_doctor.diagnosis import Diagnosis
    from cudnn_doctor.system.interface import System


class Outcome(Record):
    """What the re-check found of one finding the fix was for."""

    id: str
    before: int
    after: int

    @property
    def verdict(self) -> str:
        return "fixed" if self.after == 0 else "fixed in part" if self.after < self.before else "still found"


class FixProposal(Record):
    """What the user is shown before anything changes."""

    before: Diagnosis
    plan: FixPlan
    expanded: Expanded

    @property
    def nothing_to_do(self) -> bool:
        return not self.expanded.steps and not self.expanded.env and not self.expanded.commands


class Fixed(Record):
    """What `fix` did: the proposal; applied or not; the diagnosis after; per finding fixed, before and after counts."""

    proposal: FixProposal
    dry_run: bool
    applied: bool
    live: bool  # False: a fixture machine, changed in memory only
    warnings: tuple[str, ...] = ()
    recovered: Optional[str] = None
    after: Optional[Diagnosis] = None

    @property
    def outcomes(self) -> tuple[Outcome, ...]:
        """A fix that worked says so even when another, unrelated error remains."""
        if self.after is None:
            return ()
        before = Counter(f.id for f in self.proposal.before.findings)
        after = Counter(f.id for f in self.after.findings)
        return tuple(
            Outcome(i, before[i], after[i]) for i in dict.fromkeys(f.finding.id for f in self.proposal.plan.fixes)
        )

    @property
    def other_errors(self) -> tuple[str, ...]:
        """The errors still found that this fix was not for."""
        if self.after is None:
            return ()
        fixed = {f.finding.id for f in self.proposal.plan.fixes}
        return tuple(sorted({f.id for f in self.after.findings if f.id not in fixed and f.severity is Severity.ERROR}))

    @property
    def changes_made(self) -> int:
        return len(self.proposal.expanded.steps) + len(self.proposal.expanded.env) if self.applied else 0

    @property
    def exit_code(self) -> int:
        if self.after is not None:
            return self.after.exit_code
        return 0 if self.dry_run or not self.proposal.nothing_to_do else self.proposal.before.exit_code


def fix(
    system: System,
    ids: Sequence[str] = (),
    *,
    unsafe: bool = False,
    dry_run: bool = False,
    diagnose: Callable[[System], Diagnosis],
    show: Callable[[FixProposal], None] = lambda proposal: None,
    confirm: Callable[[], bool] = lambda: True,
    announce: Callable[[RunCommand], None] = lambda command: None,
    recheck: Optional[Callable[[], System]] = None,
) -> Fixed:
    """Fix what `diagnose(system)` finds (only `ids` when given). `show` gets the plan; `confirm` is asked only when
    there is something to do and this is no dry run; `announce` is told of each package command before it runs;
    `recheck` gives the machine to diagnose afterwards (live: a fresh look; by default this same system)."""
    before = diagnose(system)
    store = transaction.Store(system)
    plan = plan_fixes(before.findings, before.facts, ids, unsafe=unsafe, releases=recorded_releases(store))
    txid = new_txid()
    proposal = FixProposal(before, plan, expand(system, plan.changes, store.quarantine_path(txid)))
    show(proposal)
    if proposal.nothing_to_do or dry_run or not confirm():
        return Fixed(proposal, dry_run=dry_run, applied=False, live=system.live)
    expanded = proposal.expanded
    with store.locked():
        recovered = transaction.recover(store)
        warnings = store.take_warnings()
        label = "fix: " + ", ".join(dict.fromkeys(f.finding.id for f in plan.fixes))
        commands = [{"argv": list(c.argv), "undo": c.undo} for c in expanded.commands]
        transaction.apply_fix(
            expanded.steps, store, txid, label, _target(system, expanded), env_changes=expanded.env, commands=commands
        )
    _run_commands(system, expanded, announce)
    after = diagnose((recheck or (lambda: system))())
    return Fixed(
        proposal, dry_run=False, applied=True, live=system.live, warnings=warnings, recovered=recovered, after=after
    )


def _target(system: System, expanded: Expanded) -> str:
    """The folder the fix touched, for history: the first moved file's folder (or the registry)."""
    first = next((s for s in expanded.steps if s.kind != "rmdir"), None)
    if first is not None:
        return system.paths.dirname(first.source if first.kind == "move" and first.source else first.dest)
    return "the persistent environment (registry)" if expanded.env else ""


def _run_commands(system: System, expanded: Expanded, announce: Callable[[RunCommand], None]) -> None:
    """Unsafe fixes' package commands, after the file changes are committed; a failure is one line that says how to
    undo what came before it and what the command itself did."""
    for command in expanded.commands:
        announce(command)
        result = system.run_shown(list(command.argv))
        if result.returncode != 0:
            said = (result.stderr or result.stdout or "").strip()[-300:]
            applied = (
                " (the file and registry changes before it are applied: `cudnn-doctor rollback` undoes them)"
                if expanded.steps or expanded.env
                else ""
            )
            raise InputError(
                f"{' '.join(command.argv)} failed (exit "
                f"{result.returncode}){': ' + said if said else ''}{applied}; to undo what it did: {command.undo}"
            )
