"""`cudnn-doctor explain ID` / `explain --all`: the page of a finding, headed by the rule that checks it."""

from __future__ import annotations

import argparse
import sys


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("explain", help="what a finding id means, why it happens and how to fix it")
    parser.add_argument("id", nargs="?", help="a finding id, e.g. cudnn-shadowed")
    parser.add_argument("--all", action="store_true", help="list every finding id with its severity and title")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor.cli.options import finding_ids
    from cudnn_doctor.errors import UsageError
    from cudnn_doctor.reports import explain_report

    if args.all == bool(args.id):
        raise UsageError("give one finding id, or --all")
    known = explain_report.rules()
    if args.all:
        ids = sorted(known)
    elif args.id in known:
        ids = [args.id]
    else:
        ids = sorted(finding_ids([args.id]))  # raises the one-line error, with a suggestion when one is close
    explain_report.render(ids, args.all, args.format == "json", sys.stdout)
    return 0
