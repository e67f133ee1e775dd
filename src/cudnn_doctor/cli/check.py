"""`cudnn-doctor check`: diagnose, render, and exit 0 (no errors found) or 1 (errors found)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cudnn_doctor.cli.options import add_system_options, finding_ids
from cudnn_doctor.system.console import no_color

if TYPE_CHECKING:
    from cudnn_doctor.diagnosis import Diagnosis


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("check", help="find problems and say how to fix them")
    add_system_options(parser)
    parser.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        default="text",
        help="report format (default text); markdown: a summary to paste into an issue, redacted unless --no-redact",
    )
    parser.add_argument(
        "--no-redact", action="store_true", help="markdown: keep the user name, home folder and host name"
    )
    parser.add_argument(
        "--redact", action="store_true", help="HTML: replace the user name, home folder and host name, as markdown does"
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="ID",
        help="do not report this finding id (repeatable, or comma-separated)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show every fact, not only those that matter")
    parser.add_argument("--no-color", action="store_true", help="plain text even on a terminal")
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write a self-contained HTML report (findings, search order, fix steps) to FILE",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor import knowledge
    from cudnn_doctor.diagnose import diagnose
    from cudnn_doctor.system import open_system

    ignore = finding_ids(args.ignore)
    if args.html is not None:
        from cudnn_doctor.system.output_files import check_report_target, write_report

        check_report_target(args.html)  # a bad path is said before the machine is probed
    with knowledge.overlay(args.kb):  # read and checked before the machine is
        system = open_system(args.fixture, limit=args.framework_timeout)
        diagnosis = diagnose(
            system, with_frameworks=not args.no_frameworks, framework_timeout=args.framework_timeout, ignore=ignore
        )
    if args.html is not None:
        write_report(args.html, lambda stream: _html(diagnosis, stream, args))
    if args.format == "json":
        from cudnn_doctor.reports import json_report

        json_report.render(diagnosis, sys.stdout)
    elif args.format == "markdown":
        from cudnn_doctor.reports import markdown_report

        host = None if args.fixture else _host_name()
        markdown_report.render(diagnosis, sys.stdout, redact=not args.no_redact, host=host)
    else:
        from cudnn_doctor.reports import terminal

        terminal.render(diagnosis, sys.stdout, verbose=args.verbose, color=not (args.no_color or no_color()))
    if args.html is not None:
        from cudnn_doctor.reports import messages

        messages.note(f"HTML report written to {args.html}", sys.stderr)
    return diagnosis.exit_code


def _host_name() -> str:
    import platform

    return platform.node()


def _html(diagnosis: Diagnosis, stream: TextIO, args: argparse.Namespace) -> None:
    """The HTML report, dated, with this machine's name unless it is a replayed fixture or `--redact` is given."""
    import datetime
    import io

    from cudnn_doctor.reports import html

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    host = None if args.fixture or args.redact else _host_name()
    if not args.redact:
        html.render_check(diagnosis, stream, when, host)
        return
    from cudnn_doctor.privacy import redact_text

    page = io.StringIO()
    html.render_check(diagnosis, page, when)
    stream.write(
        redact_text(page.getvalue(), diagnosis.facts.environment.variables, None if args.fixture else _host_name())
    )
