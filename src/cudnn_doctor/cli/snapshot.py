"""`cudnn-doctor snapshot`: record this machine as a machine-fixture/1 file that `check --fixture` replays."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any, Optional

from cudnn_doctor.errors import InputError


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("snapshot", help="write this machine as a fixture file for bug reports")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here (.yaml or .json) instead of standard output")
    parser.add_argument("--redact", action="store_true", help="replace the user name and home folder")
    parser.add_argument("--no-frameworks", action="store_true", help="do not import the GPU frameworks")
    parser.add_argument("--framework-timeout", type=float, default=60.0, metavar="S")
    parser.set_defaults(run=run)


def take_snapshot(with_frameworks: bool = True, framework_timeout: float = 60.0, redact: bool = False) -> dict[str, Any]:
    """Run the probes on the live machine through a recorder and return the recorded document."""
    from cudnn_doctor.probes import run_probes
    from cudnn_doctor.system.live import LiveSystem
    from cudnn_doctor.system.recorder import RecordingSystem

    recorder = RecordingSystem(LiveSystem())
    run_probes(recorder, with_frameworks, framework_timeout)
    document = recorder.document(f"snapshot-{platform.node() or 'machine'}", "Recorded by cudnn-doctor snapshot.")
    return redact_document(document, os.path.expanduser("~"), getpass.getuser()) if redact else document


def redact_document(document: Any, home: str, user: str) -> Any:
    """Replace the home folder and the user name everywhere, keys included."""
    placeholder_home = "C:\\Users\\user" if "\\" in home else "/home/user"

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            value = value.replace(home, placeholder_home)
            if user and len(user) > 1:
                for sep in ("/", "\\"):
                    value = value.replace(f"{sep}{user}{sep}", f"{sep}user{sep}")
                if value == user:
                    value = "user"
            return value
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return clean(document)


def run(args: argparse.Namespace) -> int:
    document = take_snapshot(not args.no_frameworks, args.framework_timeout, args.redact)
    text = _serialize(document, args.output)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot write {args.output}: {error.strerror or error}") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _serialize(document: dict[str, Any], output: Optional[Path]) -> str:
    if output is not None and output.suffix.lower() == ".json":
        return json.dumps(document, indent=2) + "\n"
    import yaml

    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=1000)
