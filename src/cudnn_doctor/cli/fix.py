"""`cudnn-doctor fix [ID...]`: repair what `check` found, as one transaction that `rollback` undoes.

Runs check, plans the fix of every finding that has one (or of the ids given), prints the plan,
asks unless --yes, applies it through the install journal (backups, lock, recovery), then checks
again and prints the finding counts before and after. Exit 0 when the re-check finds no error.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from typing import TYPE_CHECKING, Optional

from cudnn_doctor.cli.options import add_system_options, finding_ids

if TYPE_CHECKING:
    from cudnn_doctor.diagnosis import Diagnosis
    from cudnn_doctor.fixes import FixPlan
    from cudnn_doctor.install.fix import Expanded
    from cudnn_doctor.system.interface import System


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("fix", help="apply the automatic fixes of check's findings (undo with `rollback`)")
    parser.add_argument("ids", nargs="*", metavar="ID", help="fix only these finding ids (default: every finding with an automatic fix)")
    parser.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes that change packages (pip / conda; may need the network)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask before changing anything")
    add_system_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor import knowledge
    from cudnn_doctor.fixes import plan_fixes
    from cudnn_doctor.install import transaction
    from cudnn_doctor.install.fix import expand, recorded_releases
    from cudnn_doctor.system import open_system

    ids = finding_ids(args.ids)  # an unknown id is a one-line error (exit 2) before the machine is probed
    with knowledge.overlay(args.kb):
        system = open_system(args.fixture, limit=args.framework_timeout)
        before = _diagnose(system, args)
        store = transaction.Store(system, _fixture_state(system) if args.fixture else None)
        plan = plan_fixes(before.findings, before.facts, ids, unsafe=args.unsafe_fixes, releases=recorded_releases(store))
        txid = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        expanded = expand(system, plan.changes, store.quarantine_path(txid))
        _print_plan(plan, expanded)
        if not expanded.steps and not expanded.env and not expanded.commands:
            print("Nothing to fix automatically.")
            return 0 if args.dry_run else before.exit_code
        if args.dry_run:
            return 0
        if not _confirmed(args.yes):
            print("Nothing changed.")
            return 0
        with store.locked():
            recovered = transaction.recover(store)
            for warning in store.warnings:
                print(f"cudnn-doctor: warning: {warning}", file=sys.stderr)
            if recovered:
                print(f"cudnn-doctor: {recovered}", file=sys.stderr)
            label = "fix: " + ", ".join(dict.fromkeys(f.finding.id for f in plan.fixes))
            commands = [{"argv": list(c.argv), "undo": c.undo} for c in expanded.commands]
            transaction.apply_fix(expanded.steps, store, txid, label, _target(system, expanded), env_changes=expanded.env, commands=commands)
        _run_commands(system, expanded, live=_is_live(system))
        where = " to the fixture machine, in memory only" if args.fixture else ""
        print(f"Applied {len(expanded.steps) + len(expanded.env)} change(s){where} (undo: `cudnn-doctor rollback`).")
        if expanded.env:
            print("The persistent environment changed: close and reopen terminals, IDEs and Jupyter so they see it.")
        after = _diagnose(system if args.fixture else open_system(limit=args.framework_timeout), args)
    print(f"Before: {_counts(before)}. After: {_counts(after)}.")
    for line in _outcomes(plan, before, after):
        print(line)
    _say_shell_files(plan, expanded)
    return after.exit_code


def _diagnose(system: System, args: argparse.Namespace) -> Diagnosis:
    from cudnn_doctor.diagnose import diagnose

    return diagnose(system, with_frameworks=not args.no_frameworks, framework_timeout=args.framework_timeout)


def _fixture_state(system: System) -> str:
    """A fixture machine keeps the doctor's state folder inside itself (in memory), where the user's would be."""
    env, rules = system.env(), system.paths
    if rules.windows:
        local = env.get("LOCALAPPDATA") or rules.join(env.get("USERPROFILE") or "C:\\Users\\user", "AppData", "Local")
        return rules.join(local, "cudnn-doctor")
    return rules.join(env.get("HOME") or "/root", ".local", "state", "cudnn-doctor")


def _print_plan(plan: FixPlan, expanded: Expanded) -> None:
    """The plan the user confirms: every path and value with its control, bidi and separator characters escaped."""
    from cudnn_doctor.fixes import ManagedExport
    from cudnn_doctor.reports.encoding import visible

    for fix in plan.fixes:
        print(f"fix {fix.finding.id} ({fix.kind}): {fix.finding.title}")
    for step in expanded.steps:
        what = {"move": f"move   {step.source} → {step.dest}", "write": f"write  {step.dest}", "rmdir": f"rmdir  {step.dest}"}[step.kind]
        print(visible(f"  {what}"))
    for change in expanded.env:
        print(
            visible(
                f"  env    {change.scope} {change.name}: {change.old if change.old is not None else '(unset)'} → {change.new if change.new is not None else '(unset)'}"
            )
        )
    for command in expanded.commands:
        print(visible(f"  {command.describe()}"))
    for change in plan.changes:
        if isinstance(change, ManagedExport):
            print(visible(f"    {change.describe()}"))
    for line in expanded.shell_lines:
        print(visible(f"  {line}   (by hand: cudnn-doctor never edits rc files)"))
    for skipped in plan.skipped:
        print(f"not fixed: {skipped.finding.id}: {skipped.why}")
    for note in expanded.notes:
        print(f"left as it is: {note}")


def _say_shell_files(plan: FixPlan, expanded: Expanded) -> None:
    """A fix written to env.sh changes no running shell, this one included: the re-check cannot see it, and says so."""
    from cudnn_doctor.fixes import ManagedExport

    if not expanded.shell_files:
        return
    for fix in plan.fixes:
        if any(isinstance(c, ManagedExport) for c in fix.changes):
            print(f"{fix.finding.id}: takes effect in shells that source env.sh (the re-check above ran with this shell's values)")
    from cudnn_doctor.reports.encoding import visible

    for line in expanded.shell_lines:
        print(visible(f"To finish: {line}, then open a new terminal."))


def _confirmed(yes: bool) -> bool:
    from cudnn_doctor.errors import UsageError

    if yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError("not asking on a non-interactive input: pass --yes to apply the fixes, or --dry-run to see the plan")
    return input("Apply? [y/N] ").strip().lower() in ("y", "yes")


def _target(system: System, expanded: Expanded) -> str:
    """The folder the fix touched, for history: the first moved file's folder (or the registry)."""
    first = next((s for s in expanded.steps if s.kind != "rmdir"), None)
    if first is not None:
        return system.paths.dirname(first.source if first.kind == "move" and first.source else first.dest)
    return "the persistent environment (registry)" if expanded.env else ""


def _is_live(system: System) -> bool:
    from cudnn_doctor.system.live import LiveSystem

    return isinstance(system, LiveSystem)


def _run_commands(system: System, expanded: Expanded, live: bool) -> None:
    """Unsafe fixes' package commands, after the file changes are committed; live, pip's own output shows and no time limit
    cuts a download short (the run's child-process limit is for probes)."""
    import subprocess

    from cudnn_doctor.errors import InputError

    for command in expanded.commands:
        print(f"Running: {' '.join(command.argv)}", flush=True)
        if live:
            code: Optional[int] = subprocess.run(list(command.argv), check=False).returncode
            said = ""
        else:
            result = system.run(list(command.argv), timeout=3600)
            code, said = result.returncode, (result.stderr or result.stdout or "").strip()[-300:]
        if code != 0:
            applied = " (the file and registry changes before it are applied: `cudnn-doctor rollback` undoes them)" if expanded.steps or expanded.env else ""
            raise InputError(f"{' '.join(command.argv)} failed (exit {code}){': ' + said if said else ''}{applied}; to undo what it did: {command.undo}")


def _outcomes(plan: FixPlan, before: Diagnosis, after: Diagnosis) -> list[str]:
    """Per finding fixed, what the re-check found of it, and apart from them the errors that were never this fix's: a
    fix that worked says so even when another, unrelated error remains."""
    from collections import Counter

    count_before, count_after = Counter(f.id for f in before.findings), Counter(f.id for f in after.findings)
    fixed = list(dict.fromkeys(f.finding.id for f in plan.fixes))
    lines = []
    for finding_id in fixed:
        was, now = count_before[finding_id], count_after[finding_id]
        verdict = "fixed" if now == 0 else "fixed in part" if now < was else "still found"
        lines.append(f"  {finding_id}: {verdict} ({was} before, {now} after)")
    others = sorted({f.id for f in after.findings if f.id not in fixed and f.severity.value == "error"})
    if others:
        lines.append(f"  not part of this fix, still found: {', '.join(others)} (`cudnn-doctor check` says how to fix them)")
    return lines


def _counts(diagnosis: Diagnosis) -> str:
    from cudnn_doctor.findings import Severity

    errors = sum(f.severity is Severity.ERROR for f in diagnosis.findings)
    warnings = sum(f.severity is Severity.WARNING for f in diagnosis.findings)
    return f"{errors} error(s), {warnings} warning(s), {len(diagnosis.findings)} finding(s)"
