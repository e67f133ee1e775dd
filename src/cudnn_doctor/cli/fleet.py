"""`cudnn-doctor fleet`: every node of a cluster checked, nodes grouped by stack, drift shown (issue 14).

Snapshots come from files (`--from`: whatever gathered them, `srun`, a DaemonSet, ssh) or from a
Ray cluster (`--ray`: one task pinned to each alive node). The checks run here on each snapshot,
replayed through a FixtureSystem. Exit 0 when every node is healthy and shares one stack, 1
otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cudnn_doctor.cli.options import add_knowledge_option, add_timeout_option, finding_ids, seconds


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("fleet", help="check every node of a cluster and show where their stacks differ")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from",
        dest="sources",
        nargs="+",
        type=Path,
        metavar="DIR|FILE",
        help="snapshots written by `snapshot -o` (.json, .yaml), or folders of them",
    )
    source.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="a Ray cluster (an address, or `auto`): one task on each alive node takes its snapshot",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=300.0,
        metavar="S",
        help="with --ray: seconds a node may take before it counts as timed out (default 300)",
    )
    parser.add_argument(
        "--python",
        metavar="EXE",
        help="with --ray: the interpreter on each node to take the snapshot in (default: the Ray worker's)",
    )
    parser.add_argument(
        "--no-frameworks", action="store_true", help="with --ray: do not import the GPU frameworks on the nodes"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format (default text)")
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write a self-contained HTML report (grouped, searchable) to FILE",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="ID",
        help="do not report this finding id (repeatable, or comma-separated)",
    )
    add_timeout_option(parser)
    add_knowledge_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor import knowledge
    from cudnn_doctor.errors import UsageError
    from cudnn_doctor.fleet.model import aggregate
    from cudnn_doctor.fleet.nodes import Checker, snapshot_files

    if args.sources is None and args.ray is None:
        raise UsageError("give --from DIR|FILE... or --ray ADDRESS")
    if args.sources is not None and (args.python or args.no_frameworks):
        raise UsageError("--python and --no-frameworks apply to --ray only: a snapshot file was taken already")
    ignore = finding_ids(args.ignore)
    if args.html is not None:
        from cudnn_doctor.system.output_files import check_report_target, write_report

        check_report_target(args.html)
    checker = Checker(ignore, args.framework_timeout)
    with knowledge.overlay(args.kb):
        if args.ray is not None:
            from cudnn_doctor.fleet import ray_engine

            ray_engine.require_ray()  # before anything else: the one line naming the extra
            results = ray_engine.collect(
                args.ray, args.timeout, checker, args.python, not args.no_frameworks, args.framework_timeout
            )
        else:
            results = list(checker.from_files(snapshot_files(args.sources)))
    report = aggregate(results)
    if args.html is not None:
        from cudnn_doctor.reports import fleet_html

        write_report(args.html, lambda stream: fleet_html.render(report, stream))
    from cudnn_doctor.reports import fleet

    if args.format == "json":
        fleet.render_json(report, sys.stdout)
    else:
        fleet.render_text(report, sys.stdout)
    if args.html is not None:
        from cudnn_doctor.reports import messages

        messages.note(f"HTML report written to {args.html}", sys.stderr)
    return report.exit_code
