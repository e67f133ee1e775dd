"""`cudnn-doctor explain ID` / `explain --all`: the page of a finding, from the rule that checks it."""

from __future__ import annotations

import argparse
import json
import sys


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("explain", help="what a finding id means and why it matters")
    parser.add_argument("id", nargs="?", help="a finding id, e.g. cudnn-shadowed")
    parser.add_argument("--all", action="store_true", help="every finding id")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor.checks import RULES
    from cudnn_doctor.cli.options import finding_ids
    from cudnn_doctor.errors import UsageError

    if args.all == bool(args.id):
        raise UsageError("give one finding id, or --all")
    ids = sorted(RULES) if args.all else sorted(finding_ids([args.id]))
    pages = [{"id": i, "severity": RULES[i].severity.value, "title": RULES[i].title, "why": RULES[i].doc,
              "explained_by": list(RULES[i].explained_by)} for i in ids]
    if args.format == "json":
        json.dump(pages if args.all else pages[0], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    for page in pages:
        sys.stdout.write(f"{page['id']} ({page['severity']}): {page['title']}\n    {page['why']}\n")
        if page["explained_by"]:
            sys.stdout.write(f"    Usually explained by: {', '.join(page['explained_by'])}\n")
    return 0
