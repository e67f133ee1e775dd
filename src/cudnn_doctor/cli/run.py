"""`cudnn-doctor run -- COMMAND [ARGS...]`: run a program with the loader traced; when it fails or prints a known
GPU-stack error, say which library and search failed and what `check` knows. Its output and exit code pass through."""

from __future__ import annotations

import argparse
import sys

from cudnn_doctor.errors import InputError, UsageError


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "run",
        help="run a program and diagnose the GPU stack when it fails",
        description="Run COMMAND with the dynamic loader traced (Linux: LD_DEBUG to a private file). Its output "
        "and exit "
        "code are its own; after a failure or a known GPU-stack error, the failed library searches and the "
        "matching findings "
        "of `check` follow on stderr.",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Only what starting the program needs is imported before it runs: a program that succeeds pays for nothing else.
    from cudnn_doctor.system.passthrough import exit_status, run_passthrough

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError("missing COMMAND, e.g. `cudnn-doctor run -- python train.py`")
    try:
        done = run_passthrough(command, trace_loader=sys.platform.startswith("linux"), wanted=_needs_traces)
    except OSError as error:
        raise InputError(f"cannot run {command[0]}: {error.strerror or error}") from None
    if not _needs_traces(done.returncode, done.stderr_tail):
        return exit_status(done.returncode)
    from cudnn_doctor.run.explain import explain

    explanation = explain(done.returncode, done.stderr_tail, done.traces, ())
    if explanation.worth_telling:
        from cudnn_doctor.diagnose import diagnose
        from cudnn_doctor.reports import run_report
        from cudnn_doctor.system.live import LiveSystem

        findings = diagnose(
            LiveSystem(), with_frameworks=explanation.about_frameworks
        ).findings  # a build's error: its report too
        run_report.render(explain(done.returncode, done.stderr_tail, done.traces, findings), command, sys.stderr)
    return exit_status(done.returncode)  # a death by signal N is 128+N, as a shell gives it (not 256-N)


def _needs_traces(returncode: int, stderr: str) -> bool:
    """A failure, or a known GPU-stack error in what the program printed."""
    from cudnn_doctor.run.errors import scan

    return returncode != 0 or bool(scan(stderr))
