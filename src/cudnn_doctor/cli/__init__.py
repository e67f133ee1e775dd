"""Command line: parsing and dispatch only. Every user-facing failure is one line and exit code 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn, Optional, Sequence

from cudnn_doctor.errors import CudnnDoctorError, UsageError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage block) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    from cudnn_doctor import __version__
    from cudnn_doctor.cli import check, explain, install, snapshot, which

    parser = _Parser(prog="cudnn-doctor", description="Find and fix problems in the NVIDIA driver → CUDA → cuDNN → framework stack.")
    parser.add_argument("--version", action="version", version=f"cudnn-doctor {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    check.configure_parser(commands)
    snapshot.configure_parser(commands)
    which.configure_parser(commands)
    install.configure_parser(commands)
    explain.configure_parser(commands)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code (0 no errors found, 1 errors found, 2 usage or input error)."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            raise UsageError("missing COMMAND, e.g. `cudnn-doctor check` (see `cudnn-doctor --help`)")
        return args.run(args)
    except CudnnDoctorError as error:
        print(f"cudnn-doctor: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("cudnn-doctor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `cudnn-doctor check | head`: the reader left, which is fine
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def entrypoint() -> None:
    sys.exit(main())
