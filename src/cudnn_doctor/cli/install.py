"""`cudnn-doctor install ARCHIVE`, `rollback` and `history`: parse, call the library, render."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Optional

from cudnn_doctor.cli.options import add_fixture_option, add_format_option, answer_without_asking


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "install", help="install a cuDNN archive into the matching CUDA toolkit, with rollback"
    )
    parser.add_argument(
        "archive", type=Path, help="a cuDNN .zip, .tar.xz, .tar.gz, an NVIDIA cuDNN wheel, or an extracted folder"
    )
    parser.add_argument(
        "--into", type=Path, metavar="DIR", help="install into this folder instead of the matching toolkit"
    )
    parser.add_argument(
        "--force", action="store_true", help="allow a target that is not a CUDA toolkit, or of another CUDA major"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask before changing anything")
    parser.add_argument(
        "--set-cudnn-home", action="store_true", help="Windows: also set CUDNN_HOME to the toolkit folder"
    )
    add_format_option(parser)
    add_fixture_option(
        parser, "install into the machine described by a machine-fixture/1 file (in memory) instead of this one"
    )
    parser.set_defaults(run=run_install)
    rollback = commands.add_parser(
        "rollback", help="undo the last install or fix, restoring every replaced or moved file"
    )
    add_format_option(rollback)
    add_fixture_option(
        rollback, "undo on the machine described by a machine-fixture/1 file (in memory) instead of this one"
    )
    rollback.set_defaults(run=run_rollback)
    history = commands.add_parser("history", help="list the installs and fixes made with cudnn-doctor")
    add_format_option(history)
    add_fixture_option(history, "list those of the machine described by a machine-fixture/1 file instead of this one")
    history.set_defaults(run=run_history)


def run_install(args: argparse.Namespace) -> int:
    import time

    from cudnn_doctor.install.installing import install
    from cudnn_doctor.reports import install_report, write_json
    from cudnn_doctor.reports.prompt import confirm
    from cudnn_doctor.system import open_system

    started = time.perf_counter()  # the time said at the end is the command's: reading the archive included
    how = "pass --yes to install, or --dry-run to see the plan"
    answer_without_asking(args, how)
    text = args.format == "text"
    system = open_system(args.fixture)
    result = install(
        system,
        args.archive,
        into=_into(args.into, system.live),
        force=args.force,
        dry_run=args.dry_run,
        set_cudnn_home=args.set_cudnn_home,
        show=(lambda proposal: install_report.show_install_plan(proposal, sys.stdout, sys.stderr))
        if text
        else (lambda proposal: None),
        confirm=lambda: confirm("Install?", args.yes, sys.stdin, sys.stderr, how),
        progress=install_report.progress_bar if text else None,
        recheck=open_system if system.live else None,
        after_file=_test_delay(),
        started=started,
    )
    if text:
        install_report.render_installed(result, sys.stdout)
    else:
        write_json(sys.stdout, install_report.install_json(result), indent=2)
    return result.exit_code


def _into(folder: Optional[Path], live: bool) -> Optional[str]:
    """`--into` as the machine spells it: resolved here, as given on a fixture machine (its own path rules)."""
    if folder is None:
        return None
    return str(folder.resolve()) if live else str(folder)


def _test_delay() -> Optional[Callable[[int], None]]:
    """Tests slow the copy down (to kill it half-way) with CUDNN_DOCTOR_TEST_DELAY seconds per file."""
    import time

    from cudnn_doctor.system.host import variable

    delay = float(variable("CUDNN_DOCTOR_TEST_DELAY") or 0)
    return (lambda index: time.sleep(delay)) if delay else None


def run_rollback(args: argparse.Namespace) -> int:
    from cudnn_doctor.install.undoing import rollback
    from cudnn_doctor.reports import install_report, write_json
    from cudnn_doctor.system import open_system

    result = rollback(open_system(args.fixture))
    if args.format == "json":
        write_json(sys.stdout, install_report.rollback_json(result), indent=2)
    else:
        install_report.render_rollback(result, sys.stdout, sys.stderr)
    return result.exit_code


def run_history(args: argparse.Namespace) -> int:
    """List the installs and fixes; reads only."""
    from cudnn_doctor.install.undoing import history
    from cudnn_doctor.reports import install_report, write_json
    from cudnn_doctor.system import open_system

    system = open_system(args.fixture)
    result = history(system)
    if args.format == "json":
        write_json(sys.stdout, install_report.history_json(result), indent=2)
    else:
        install_report.render_history(result, system.paths, sys.stdout, sys.stderr)
    return 0
