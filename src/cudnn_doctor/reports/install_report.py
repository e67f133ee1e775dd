"""What `rollback` and `history` say (issue 31: every command's output is rendered here, not in the command line)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TextIO

from cudnn_doctor.paths import PathRules

if TYPE_CHECKING:
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
        err.write(f"cudnn-doctor: {report.summary()}" + ("; run `cudnn-doctor rollback` again once that is fixed" if report.failed else "") + "\n")


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
            out.write(f"{entry['id']}  {when}  {entry['state']:11}  {entry['archive']}  {len(entry['steps'])} file step(s)  in {entry['target']}\n")
        else:
            out.write(
                f"{entry['id']}  {when}  {entry['state']:11}  cuDNN {entry.get('version') or '?'}  {len(entry['steps'])} files  {entry['archive']} → {entry['target']}\n"
            )
        for change in entry.get("env") or []:
            if isinstance(change, dict) and change.get("started", True):
                out.write(f"    env {describe(paths, change)}\n")
        if entry["state"] == UNFINISHED:
            out.write("    its rollback did not finish (a file was in use, or it was stopped): `cudnn-doctor rollback` finishes it\n")
