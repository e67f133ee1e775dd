"""`cudnn-doctor snapshot`: record this machine as a machine-fixture/1 file that `check --fixture` replays."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from cudnn_doctor.cli.options import add_timeout_option
from cudnn_doctor.errors import InputError, UsageError
from cudnn_doctor.privacy import redact_document, user_names


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("snapshot", help="write this machine as a fixture file for bug reports")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here (.yaml or .json) instead of standard output")
    parser.add_argument("--force", action="store_true", help="replace FILE when it exists (a symbolic link there is replaced itself, never followed)")
    parser.add_argument("--redact", action="store_true", help="replace the user name, home folder, host name and GPU UUIDs")
    parser.add_argument("--no-frameworks", action="store_true", help="do not import the GPU frameworks")
    add_timeout_option(parser)
    parser.set_defaults(run=run)


def take_snapshot(with_frameworks: bool = True, framework_timeout: float = 60.0, redact: bool = False) -> dict[str, Any]:
    """Run the probes on the live machine through a recorder and return the recorded document."""
    import platform

    from cudnn_doctor.probes import run_probes
    from cudnn_doctor.system.live import LiveSystem
    from cudnn_doctor.system.recorder import RecordingSystem

    recorder = RecordingSystem(LiveSystem(limit=framework_timeout))
    run_probes(recorder, with_frameworks, framework_timeout)
    document = recorder.document(f"snapshot-{platform.node() or 'machine'}", "Recorded by cudnn-doctor snapshot.")
    if not redact:
        return document
    home = os.path.expanduser("~")
    return redact_document(document, home, user_names(os.environ, home), platform.node())


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor.reports import messages, snapshot_report

    if args.output is not None:
        _check_output(args.output, args.force)  # before the probes run: a refusal costs nothing
    document = take_snapshot(not args.no_frameworks, args.framework_timeout, args.redact)
    if args.output is None:
        snapshot_report.render(document, sys.stdout)
        return 0
    _write_new(args.output, snapshot_report.serialize(document, json_format=args.output.suffix.lower() == ".json"), args.force)
    messages.note(f"wrote {args.output}", sys.stderr)
    return 0


def _check_output(output: Path, force: bool) -> None:
    if os.path.isdir(output) and not os.path.islink(output):
        raise UsageError(f"{output} is a folder; give a file name for the snapshot")
    if os.path.lexists(output) and not force:
        what = "a symbolic link" if os.path.islink(output) else "a file"
        raise UsageError(f"{output} is already there ({what}); pass --force to replace it")


def _write_new(output: Path, text: str, force: bool) -> None:
    """Write a temporary file beside `output`, then rename it over `output`: a link there is replaced, never written through."""
    import tempfile

    _check_output(output, force)
    folder = os.path.dirname(os.path.abspath(output))
    try:
        handle, temporary = tempfile.mkstemp(prefix=".snapshot-", suffix=".tmp", dir=folder)
    except OSError as error:
        raise InputError(f"cannot write {output}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # what a plain open() would have made, not mkstemp's 0600
        if not force and os.path.lexists(output):
            raise UsageError(f"{output} appeared while the snapshot was taken; pass --force to replace it")
        os.replace(temporary, output)
    except OSError as error:
        raise InputError(f"cannot write {output}: {error.strerror or error}") from None
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)
