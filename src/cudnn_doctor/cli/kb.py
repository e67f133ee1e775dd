"""`cudnn-doctor kb update` / `kb status`: keep the knowledge current; say how old it is."""

from __future__ import annotations

import argparse
import sys


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "kb",
        help="the knowledge data: its dates and sources (status), or read the package index now (update, network)",
        description="`kb status` prints the data's dates and sources; `kb update` reads the package index now "
        "(the only "
        "command that uses the network) and lays what is new over the shipped data, in your state folder.",
    )
    parser.add_argument("action", choices=("status", "update"))
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor.knowledge import update
    from cudnn_doctor.reports import kb_report, write_json, write_lines

    if args.action == "update":
        from cudnn_doctor.system.state_files import write_whole

        result = update.update(write_whole)
        if args.format == "json":
            write_json(sys.stdout, kb_report.update_json(result), indent=2)
        else:
            write_lines(sys.stdout, kb_report.update_lines(result))
        return 1 if result.error else 0
    state = update.status()
    if args.format == "json":
        write_json(sys.stdout, kb_report.status_json(state), indent=2)
    else:
        write_lines(sys.stdout, kb_report.status_lines(state))
    return 0
