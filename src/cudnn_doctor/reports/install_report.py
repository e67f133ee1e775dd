"""What `install`, `rollback` and `history` say, on a terminal and as JSON: the commands compute, this module speaks."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional, TextIO

from cudnn_doctor.paths import PathRules

if TYPE_CHECKING:
    from cudnn_doctor.install.installing import Installed, Proposal
    from cudnn_doctor.install.undoing import History, Rollback


def render_rollback(result: Rollback, out: TextIO, err: TextIO) -> None:
    for warning in result.warnings:
        err.write(f"cudnn-doctor: warning: {warning}\n")
    if result.recovered:
        out.write(f"cudnn-doctor: {result.recovered}\n")
        return
    if result.nothing:
        out.write(result.nothing + "\n")
        return
    entry, report = result.entry or {}, result.report
    if report is None:
        return
    if entry.get("kind") == "fix":
        out.write(f"Rolled back {entry['archive']} ({entry['id']}, {entry['target']}): {report.done()}.\n")
    else:
        out.write(f"Rolled back install {entry['id']} of {entry['archive']} into {entry['target']}: {report.done()}.\n")
    for sentence in entry.get("env_restored") or []:
        out.write(f"  {sentence}\n")
    for command in entry.get("commands") or []:
        if isinstance(command, dict) and command.get("undo"):
            out.write(f"  the package change is not undone by rollback; to undo it, run: {command['undo']}\n")
    if not report.complete:
        err.write(
            f"cudnn-doctor: {report.summary()}"
            + ("; run `cudnn-doctor rollback` again once that is fixed" if report.failed else "")
            + "\n"
        )


def render_history(result: History, paths: PathRules, out: TextIO, err: TextIO) -> None:
    from cudnn_doctor.install.environment import describe
    from cudnn_doctor.install.transaction import UNFINISHED

    for warning in result.warnings:
        err.write(f"cudnn-doctor: warning: {warning}\n")
    if result.in_progress is not None:
        journal = result.in_progress
        out.write(
            f"An install of {journal['archive']} into {journal['target']} is running or was interrupted; "
            "the next `cudnn-doctor install` or `rollback` finishes or undoes it.\n"
        )
    if not result.entries:
        out.write("Nothing recorded: no install or fix yet.\n")
    for entry in result.entries:
        started = entry.get("started")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if isinstance(started, (int, float)) else "?"
        if entry.get("kind") == "fix":
            out.write(
                f"{entry['id']}  {when}  {entry['state']:11}  {entry['archive']}  {len(entry['steps'])} file "
                f"step(s)  in {entry['target']}\n"
            )
        else:
            out.write(
                f"{entry['id']}  {when}  {entry['state']:11}  cuDNN {entry.get('version') or '?'}  "
                f"{len(entry['steps'])} files  {entry['archive']} → {entry['target']}\n"
            )
        for change in entry.get("env") or []:
            if isinstance(change, dict) and change.get("started", True):
                out.write(f"    env {describe(paths, change)}\n")
        if entry["state"] == UNFINISHED:
            out.write(
                "    its rollback did not finish (a file was in use, or it was stopped): `cudnn-doctor rollback` "
                "finishes it\n"
            )


def show_install_plan(proposal: Proposal, out: TextIO, err: TextIO) -> None:
    """The plan the user confirms: names from the archive with their control and bidi characters escaped (`visible`)."""
    from cudnn_doctor.reports.encoding import visible

    for warning in proposal.warnings:
        err.write(f"cudnn-doctor: warning: {warning}\n")
    if proposal.recovered:
        err.write(f"cudnn-doctor: {proposal.recovered}\n")
    if proposal.interrupted:
        err.write(
            f"cudnn-doctor: an install into {proposal.interrupted} is running or was interrupted; the next "
            f"install or rollback finishes or undoes it\n"
        )
    plan, info = proposal.plan, proposal.plan.archive
    out.write(
        visible(
            f"cuDNN {info.version or '?'} for CUDA {info.cuda_major or '?'} ({info.os or '?'} {info.arch or '?'}, "
            f"layout {info.layout}) → {plan.target}"
        )
        + "\n"
    )
    from cudnn_doctor.install.plan import ActionKind

    for action in plan.actions:
        label = f"{action.kind:7}"
        extra = f" → {action.member.link}" if action.kind is ActionKind.LINK else f" ({action.member.size:,} bytes)"
        if action.kind is ActionKind.REPLACE:
            replaced = f"{action.replaced_size:,} bytes" if action.replaced_size is not None else "a link"
            extra += f", replacing {replaced} of cuDNN {plan.replaced_version or '(unknown release)'} (backed up)"
        out.write(visible(f"  {label} {action.dest}{extra}") + "\n")
    for change in proposal.env_changes:
        out.write(visible(f"  env     {change.scope} {change.name}: {change.old or '(unset)'} → {change.new}") + "\n")
    out.write(install_totals(proposal) + "\n")
    if proposal.nothing_to_do:
        out.write("Nothing to do: every file is already installed.\n")
    out.flush()


def install_totals(proposal: Proposal) -> str:
    """`Total: 7 to add, 2 to replace (backed up), 1 already there; 812.3 MB to write; 2 environment change(s).`"""
    from cudnn_doctor.install.plan import ActionKind

    plan = proposal.plan
    kinds = [action.kind for action in plan.actions]
    parts = [
        f"{kinds.count(kind)} {said}"
        for kind, said in (
            (ActionKind.ADD, "to add"),
            (ActionKind.LINK, "link(s) to make"),
            (ActionKind.REPLACE, "to replace (backed up)"),
            (ActionKind.SAME, "already there"),
        )
        if kinds.count(kind)
    ]
    size = f"; {plan.bytes_written / 1e6:,.1f} MB to write" if plan.bytes_written else ""
    env = f"; {len(proposal.env_changes)} environment change(s)" if proposal.env_changes else ""
    return f"Total: {', '.join(parts) or 'no file'}{size}{env}."


def render_installed(result: Installed, out: TextIO) -> None:
    """After the plan (shown before the question): what was done, then what the re-check found in the toolkit."""
    if result.declined:
        out.write("Nothing changed.\n")
    if not result.applied:
        return
    plan = result.proposal.plan
    where = "" if result.live else ", on the fixture machine in memory only"
    out.write(
        f"Installed {len(plan.writes)} files into {plan.target}{where} in {result.seconds:.1f} s (rollback: "
        f"`cudnn-doctor rollback`).\n"
    )
    if (
        result.proposal.env_changes
    ):  # written in the transaction, after the files, journaled: rollback and recovery undo them too
        out.write("The persistent environment changed: close and reopen terminals, IDEs and Jupyter so they see it.\n")
    for note in result.notes:
        out.write(note + "\n")
    if not result.findings:
        out.write("Verified: the cuDNN checks find nothing wrong in the toolkit.\n")
    for found in result.findings:
        out.write(f"{found.severity.value}: {found.id}: {found.detail}\n")


@contextmanager
def progress_bar(total: int) -> Iterator[Optional[Callable[[int], None]]]:
    """A transient progress bar of the bytes copied, on a terminal (rich); nothing otherwise."""
    import sys

    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress(
        "[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(), transient=True
    ) as bar:
        task = bar.add_task("copying", total=total)
        yield lambda n: bar.update(task, advance=n)


# --format json: one object per command, each with its schema name (reports/changes.schema.json) -----------------


def env_changes_json(changes: Iterable[Any]) -> list[dict[str, Any]]:
    """A persistent-environment change as install's and fix's JSON say it (reports/changes.schema.json's env_change)."""
    return [{"scope": c.scope, "name": c.name, "old": c.old, "new": c.new} for c in changes]


def install_json(result: Installed) -> dict[str, Any]:
    plan, info = result.proposal.plan, result.proposal.plan.archive
    return {
        "schema": "cudnn-doctor-install/1",
        "exit_code": result.exit_code,
        "archive": {
            "path": str(info.path),
            "version": info.version,
            "cuda_major": info.cuda_major,
            "os": info.os,
            "arch": info.arch,
            "layout": info.layout,
        },
        "target": plan.target,
        "replaced_version": plan.replaced_version,
        "actions": [
            {
                "kind": a.kind,
                "dest": a.dest,
                "size": a.member.size,
                "link": a.member.link,
                "replaced_size": a.replaced_size,
            }
            for a in plan.actions
        ],
        "env_changes": env_changes_json(result.proposal.env_changes),
        "bytes_to_write": plan.bytes_written,
        "dry_run": result.dry_run,
        "applied": result.applied,
        "live": result.live,
        "seconds": round(result.seconds, 3),
        "notes": list(result.notes),
        "warnings": list(result.proposal.warnings),
        "recovered": result.proposal.recovered,
        "findings": [f.to_json() for f in result.findings],
    }


def rollback_json(result: Rollback) -> dict[str, Any]:
    entry, report = result.entry or {}, result.report
    return {
        "schema": "cudnn-doctor-rollback/1",
        "exit_code": result.exit_code,
        "warnings": list(result.warnings),
        "recovered": result.recovered,
        "nothing_to_undo": result.nothing,
        "undone": None
        if report is None
        else {"id": entry.get("id"), "kind": entry.get("kind") or "install", "target": entry.get("target")},
        "removed": [] if report is None else list(report.removed),
        "restored": [] if report is None else list(report.restored),
        "changed_since": [] if report is None else list(report.changed),
        "failed": [] if report is None else [list(f) for f in report.failed],
        "complete": True if report is None else report.complete,
    }


def history_json(result: History) -> dict[str, Any]:
    return {
        "schema": "cudnn-doctor-history/1",
        "exit_code": 0,
        "warnings": list(result.warnings),
        "in_progress": None
        if result.in_progress is None
        else {"archive": result.in_progress.get("archive"), "target": result.in_progress.get("target")},
        "entries": [
            {
                "id": e.get("id"),
                "kind": e.get("kind") or "install",
                "state": e.get("state"),
                "started": e.get("started"),
                "what": e.get("archive"),
                "version": e.get("version"),
                "target": e.get("target"),
                "files": len(e.get("steps") or []),
            }
            for e in result.entries
        ],
    }
