"""`cudnn-doctor fix [ID...]`: parse, call the library (`fixes.applying.fix`), render (`reports.fix_report`).

Runs check, plans the fix of every finding that has one (or of the ids given), shows the plan, asks unless --yes,
applies it through the install journal (backups, lock, recovery), then checks again and says, per finding, what the
re-check found. Exit 0 when the re-check finds no error.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from cudnn_doctor.cli.options import add_format_option, add_system_options, answer_without_asking, finding_ids

if TYPE_CHECKING:
    from cudnn_doctor.diagnosis import Diagnosis
    from cudnn_doctor.system.interface import System


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("fix", help="apply the automatic fixes of check's findings (undo with `rollback`)")
    parser.add_argument(
        "ids", nargs="*", metavar="ID", help="fix only these finding ids (default: every finding with an automatic fix)"
    )
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="also apply fixes that change packages (pip / conda; may need the network)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask before changing anything")
    add_format_option(parser)
    add_system_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor import knowledge
    from cudnn_doctor.fixes.applying import fix
    from cudnn_doctor.reports import fix_report, write_json
    from cudnn_doctor.reports.prompt import confirm
    from cudnn_doctor.system import open_system

    ids = finding_ids(args.ids)  # an unknown id is a one-line error (exit 2) before the machine is probed
    how = "pass --yes to apply the fixes, or --dry-run to see the plan"
    answer_without_asking(args, how)
    text = args.format == "text"
    with knowledge.overlay(args.kb):
        system = open_system(args.fixture, limit=args.framework_timeout)
        result = fix(
            system,
            sorted(ids),
            unsafe=args.unsafe_fixes,
            dry_run=args.dry_run,
            diagnose=lambda machine: _diagnose(machine, args),
            show=(lambda proposal: fix_report.show_fix_plan(proposal, sys.stdout)) if text else (lambda proposal: None),
            confirm=lambda: confirm("Apply?", args.yes, sys.stdin, sys.stderr, how),
            announce=lambda command: fix_report.say_running(command, sys.stdout if text else sys.stderr),
            recheck=(lambda: open_system(limit=args.framework_timeout)) if system.live else None,
        )
    if text:
        fix_report.render_fixed(result, sys.stdout, sys.stderr)
    else:
        write_json(sys.stdout, fix_report.fix_json(result), indent=2)
    return result.exit_code


def _diagnose(system: System, args: argparse.Namespace) -> Diagnosis:
    from cudnn_doctor.diagnose import diagnose

    return diagnose(system, with_frameworks=not args.no_frameworks, framework_timeout=args.framework_timeout)
