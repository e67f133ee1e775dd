"""`cudnn-doctor snapshot`: record this machine as a machine-fixture/1 file that `check --fixture` replays."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cudnn_doctor.cli.options import add_timeout_option
from cudnn_doctor.privacy import redact_document, user_names
from cudnn_doctor.system.host import home_folder
from cudnn_doctor.system.output_files import check_new_file, write_new_file


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("snapshot", help="write this machine as a fixture file for bug reports")
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write here (.yaml or .json) instead of standard output"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace FILE when it exists (a symbolic link there is replaced itself, never followed)",
    )
    parser.add_argument(
        "--redact", action="store_true", help="replace the user name, home folder, host name and GPU UUIDs"
    )
    parser.add_argument("--no-frameworks", action="store_true", help="do not import the GPU frameworks")
    add_timeout_option(parser)
    parser.set_defaults(run=run)


def take_snapshot(
    with_frameworks: bool = True, framework_timeout: float = 60.0, redact: bool = False
) -> dict[str, Any]:
    """Run the probes on the live machine through a recorder and return the recorded document."""
    import platform

    from cudnn_doctor.probes import run_probes
    from cudnn_doctor.system.live import LiveSystem
    from cudnn_doctor.system.recorder import RecordingSystem

    live = LiveSystem(limit=framework_timeout)
    recorder = RecordingSystem(live)
    run_probes(recorder, with_frameworks, framework_timeout)
    document = recorder.document(f"snapshot-{platform.node() or 'machine'}", "Recorded by cudnn-doctor snapshot.")
    if not redact:
        return document
    home = home_folder()
    return redact_document(document, home, user_names(live.env(), home), platform.node())


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor.reports import messages, snapshot_report

    if args.output is not None:
        check_new_file(args.output, args.force)  # before the probes run: a refusal costs nothing
    document = take_snapshot(not args.no_frameworks, args.framework_timeout, args.redact)
    if args.output is None:
        snapshot_report.render(document, sys.stdout)
        return 0
    write_new_file(
        args.output, snapshot_report.serialize(document, json_format=args.output.suffix.lower() == ".json"), args.force
    )
    messages.note(f"wrote {args.output}", sys.stderr)
    return 0
