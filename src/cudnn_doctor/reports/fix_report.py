"""What `fix` says, on a terminal and as JSON: the plan before the question, then what changed and what the re-check
found of each finding the fix was for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from cudnn_doctor.findings import Severity
from cudnn_doctor.fixes.changes import ManagedExport
from cudnn_doctor.reports.encoding import visible
from cudnn_doctor.reports.install_report import env_changes_json

if TYPE_CHECKING:
    from cudnn_doctor.diagnosis import Diagnosis
    from cudnn_doctor.fixes.applying import Fixed, FixProposal
    from cudnn_doctor.fixes.changes import RunCommand


def show_fix_plan(proposal: FixProposal, out: TextIO) -> None:
    """The plan the user confirms: every path and value with its control, bidi and separator characters escaped."""
    plan, expanded = proposal.plan, proposal.expanded
    for fix in plan.fixes:
        out.write(f"fix {fix.finding.id} ({fix.kind}): {fix.finding.title}\n")
    for step in expanded.steps:
        what = {
            "move": f"move   {step.source} → {step.dest}",
            "write": f"write  {step.dest}",
            "rmdir": f"rmdir  {step.dest}",
        }[step.kind]
        out.write(visible(f"  {what}") + "\n")
    for change in expanded.env:
        old = change.old if change.old is not None else "(unset)"
        new = change.new if change.new is not None else "(unset)"
        out.write(visible(f"  env    {change.scope} {change.name}: {old} → {new}") + "\n")
    for command in expanded.commands:
        out.write(visible(f"  {command.describe()}") + "\n")
    for managed in plan.changes:
        if isinstance(managed, ManagedExport):
            out.write(visible(f"    {managed.describe()}") + "\n")
    for line in expanded.shell_lines:
        out.write(visible(f"  {line}   (by hand: cudnn-doctor never edits rc files)") + "\n")
    for skipped in plan.skipped:
        out.write(f"not fixed: {skipped.finding.id}: {skipped.why}\n")
    for note in expanded.notes:
        out.write(f"left as it is: {note}\n")
    if proposal.nothing_to_do:
        out.write("Nothing to fix automatically.\n")
    out.flush()


def say_running(command: RunCommand, out: TextIO) -> None:
    """Said before a package command runs (its own output follows)."""
    out.write(f"Running: {' '.join(command.argv)}\n")
    out.flush()


def render_fixed(result: Fixed, out: TextIO, err: TextIO) -> None:
    """After the plan: what was applied, the counts before and after, and each finding's outcome."""
    for warning in result.warnings:
        err.write(f"cudnn-doctor: warning: {warning}\n")
    if result.recovered:
        err.write(f"cudnn-doctor: {result.recovered}\n")
    if not result.applied:
        if not result.dry_run and not result.proposal.nothing_to_do:
            out.write("Nothing changed.\n")
        return
    expanded = result.proposal.expanded
    where = "" if result.live else " to the fixture machine, in memory only"
    out.write(f"Applied {result.changes_made} change(s){where} (undo: `cudnn-doctor rollback`).\n")
    if expanded.env:
        out.write("The persistent environment changed: close and reopen terminals, IDEs and Jupyter so they see it.\n")
    assert result.after is not None
    out.write(f"Before: {_counts(result.proposal.before)}. After: {_counts(result.after)}.\n")
    for outcome in result.outcomes:
        out.write(f"  {outcome.id}: {outcome.verdict} ({outcome.before} before, {outcome.after} after)\n")
    if result.other_errors:
        out.write(
            f"  not part of this fix, still found: {', '.join(result.other_errors)} (`cudnn-doctor check` says "
            f"how to fix them)\n"
        )
    if (
        expanded.shell_files
    ):  # a fix written to env.sh changes no running shell, this one included: the re-check cannot see it
        for fix in result.proposal.plan.fixes:
            if any(isinstance(c, ManagedExport) for c in fix.changes):
                out.write(
                    f"{fix.finding.id}: takes effect in shells that source env.sh (the re-check above ran with "
                    f"this shell's values)\n"
                )
        for line in expanded.shell_lines:
            out.write(visible(f"To finish: {line}, then open a new terminal.") + "\n")


def _counts(diagnosis: Diagnosis) -> str:
    errors = sum(f.severity is Severity.ERROR for f in diagnosis.findings)
    warnings = sum(f.severity is Severity.WARNING for f in diagnosis.findings)
    return f"{errors} error(s), {warnings} warning(s), {len(diagnosis.findings)} finding(s)"


def fix_json(result: Fixed) -> dict[str, Any]:
    """`--format json` (schema `cudnn-doctor-fix/1` in reports/changes.schema.json)."""
    proposal, expanded = result.proposal, result.proposal.expanded
    return {
        "schema": "cudnn-doctor-fix/1",
        "exit_code": result.exit_code,
        "dry_run": result.dry_run,
        "applied": result.applied,
        "live": result.live,
        "fixes": [{"id": f.finding.id, "kind": f.kind, "title": f.finding.title} for f in proposal.plan.fixes],
        "skipped": [{"id": s.finding.id, "why": s.why} for s in proposal.plan.skipped],
        "steps": [{"kind": s.kind, "source": s.source, "dest": s.dest} for s in expanded.steps],
        "env_changes": env_changes_json(expanded.env),
        "commands": [{"argv": list(c.argv), "undo": c.undo} for c in expanded.commands],
        "shell_lines": list(expanded.shell_lines),
        "notes": list(expanded.notes),
        "warnings": list(result.warnings),
        "recovered": result.recovered,
        "outcomes": [{"id": o.id, "before": o.before, "after": o.after, "verdict": o.verdict} for o in result.outcomes],
        "other_errors": list(result.other_errors),
    }
