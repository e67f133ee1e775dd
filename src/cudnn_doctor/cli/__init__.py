"""Command line: parsing and dispatch only. Every user-facing failure is one line and exit code 2."""

from __future__ import annotations

import argparse
import contextlib
import errno
import sys
from typing import NoReturn, Optional, Sequence

from cudnn_doctor.errors import CudnnDoctorError, UsageError
from cudnn_doctor.reports.encoding import FittedStream
from cudnn_doctor.system.console import discard, null_stream, reopen_closed_descriptors


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage block) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


# Subcommand → the module that configures it, in `--help` order.
_MODULES = {
    "check": "check",
    "plan": "plan",
    "verify": "verify",
    "run": "run",
    "snapshot": "snapshot",
    "fleet": "fleet",
    "which": "which",
    "fix": "fix",
    "install": "install",
    "rollback": "install",
    "history": "install",
    "explain": "explain",
    "kb": "kb",
}


class _ExamplesFormatter(argparse.HelpFormatter):
    """argparse's own formatter, except that the examples block keeps its lines (one command each)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return text if text.startswith("examples:\n") else super()._fill_text(text, width, indent)


# The examples each command's `--help` ends with: what people type most, the first one the plainest.
EXAMPLES = {
    "check": (
        "cudnn-doctor check",
        "cudnn-doctor check --format markdown > report.md",
        "cudnn-doctor check --html report.html --ignore path-duplicate-entries",
    ),
    "plan": (
        "cudnn-doctor plan --framework torch",
        "cudnn-doctor plan --framework 'tensorflow>=2.15' --framework torch --os linux --driver 535.104.05",
        "cudnn-doctor plan --cuda 12.4 --os windows",
        "cudnn-doctor plan --framework jax --arch aarch64 --gpu 9.0",
    ),
    "verify": (
        "cudnn-doctor verify",
        "cudnn-doctor verify --framework torch --quick",
        "cudnn-doctor verify --cpu-only --format json",
    ),
    "run": (
        "cudnn-doctor run -- python train.py",
        "cudnn-doctor run -- python -c 'import torch; print(torch.cuda.is_available())'",
    ),
    "snapshot": ("cudnn-doctor snapshot -o machine.yaml --redact", "cudnn-doctor check --fixture machine.yaml"),
    "fleet": ("cudnn-doctor fleet --from snapshots/", "cudnn-doctor fleet --ray auto --html fleet.html"),
    "which": ("cudnn-doctor which libcudnn.so.9", "cudnn-doctor which cudnn64_8.dll --python C:\\envs\\tf\\python.exe"),
    "fix": ("cudnn-doctor fix --dry-run", "cudnn-doctor fix cudnn-shadowed --yes", "cudnn-doctor fix --unsafe-fixes"),
    "install": (
        "cudnn-doctor install cudnn-linux-x86_64-9.5.1.17_cuda12-archive.tar.xz --dry-run",
        "cudnn-doctor install cudnn-windows-x86_64-8.9.7.29_cuda11-archive.zip --into 'C:\\Program Files\\NVIDIA "
        "GPU Computing Toolkit\\CUDA\\v11.8'",
    ),
    "rollback": ("cudnn-doctor history", "cudnn-doctor rollback"),
    "history": ("cudnn-doctor history",),
    "explain": ("cudnn-doctor explain cudnn-shadowed", "cudnn-doctor explain --all"),
    "kb": ("cudnn-doctor kb status", "cudnn-doctor kb update"),
}


def build_parser(argv: Optional[Sequence[str]] = None) -> argparse.ArgumentParser:
    """The parser; given `argv` naming a command, only that command's module is imported (a quicker start)."""
    import importlib

    from cudnn_doctor import __version__

    parser = _Parser(
        prog="cudnn-doctor", description="Find and fix problems in the NVIDIA driver → CUDA → cuDNN → framework stack."
    )
    parser.add_argument("--version", action="version", version=f"cudnn-doctor {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    named = next((arg for arg in argv or () if not arg.startswith("-")), None)
    wanted = [_MODULES[named]] if named in _MODULES else list(dict.fromkeys(_MODULES.values()))
    for module in wanted:
        importlib.import_module(f"cudnn_doctor.cli.{module}").configure_parser(commands)
    for name, command in commands.choices.items():
        command.formatter_class = _ExamplesFormatter
        command.epilog = "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES.get(name, ()))
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code (0 no errors found, 1 errors found, 2 usage or input error).

    Whatever the standard streams are: a closed one (`>&-`, a service or scheduler) or a missing one (`pythonw`)
    is the null device, so the command runs and its exit code is its own; a broken stderr is left silent and the
    command goes on; a stdout whose reader left (`| head`) ends the command with 0 and without a traceback."""
    reopen_closed_descriptors()
    saved = (sys.stdin, sys.stdout, sys.stderr)
    stand_ins = contextlib.ExitStack()
    try:
        for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
            if getattr(sys, name) is None:  # closed or absent: read nothing, write nowhere, the exit code unchanged
                setattr(sys, name, stand_ins.enter_context(null_stream(mode)))
        _tolerate_unencodable(sys.stdout)
        sys.stdout = _Output(sys.stdout)
        sys.stderr = _Errors(sys.stderr)  # warnings and errors may carry → or a path the code page lacks
        arguments = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(arguments)
        args = parser.parse_args(arguments)  # --help and --version print here: fitted too
        if args.command is None:
            raise UsageError("missing COMMAND, e.g. `cudnn-doctor check` (see `cudnn-doctor --help`)")
        if not getattr(
            args, "fixture", None
        ):  # this machine: its `kb update` counts; a replayed fixture keeps the shipped data
            from cudnn_doctor import knowledge
            from cudnn_doctor.system.state_files import state_dir

            knowledge.use_updates(state_dir())
        code = args.run(args)
        sys.stdout.flush()  # a closed pipe or a full disk shows here, not in a traceback at interpreter exit
        return code
    except CudnnDoctorError as error:
        from cudnn_doctor.reports import messages

        messages.error(str(error), sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        from cudnn_doctor.system.child import kill_all

        kill_all()  # children lead their own process groups: the terminal's Ctrl-C did not reach them
        from cudnn_doctor.reports import messages

        messages.note("interrupted", sys.stderr)
        return 130
    except BrokenPipeError:  # `cudnn-doctor check | head`: the reader left, which is fine
        discard(sys.stdout)
        return 0
    except _OutputFailed as failed:
        discard(sys.stdout)
        from cudnn_doctor.reports import messages

        messages.error(f"cannot write to standard output: {failed.error.strerror or failed.error}", sys.stderr)
        return 2
    finally:
        _flush_ordiscard(sys.stdout)  # what an error left unwritten: never a traceback at interpreter exit
        sys.stdin, sys.stdout, sys.stderr = saved
        stand_ins.close()


class _OutputFailed(Exception):
    """Writing to stdout failed (a full disk, an I/O error): the user's problem to hear of in one line, not a bug."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _Output(FittedStream):
    """sys.stdout while a command runs: text fitted to its encoding, and a failed write or flush told apart from any
    other OSError."""

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _failure(error) from error

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _failure(error) from error


def _failure(error: OSError) -> Exception:
    """Windows' C runtime says EINVAL for a pipe whose reader has left: that is a BrokenPipeError, as on POSIX."""
    if sys.platform == "win32" and error.errno == errno.EINVAL:
        return BrokenPipeError(errno.EPIPE, "the reader of standard output has left")
    return _OutputFailed(error)


class _Errors(FittedStream):
    """sys.stderr while a command runs: text fitted to its encoding; once a write fails (closed, a reader that left)
    everything after goes to the null device, and the command goes on to its own exit code."""

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except (OSError, ValueError):
            discard(self.stream)
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            discard(self.stream)


def _tolerate_unencodable(stream: object) -> None:
    """The real stdout writes "?" for a character its encoding lacks (cp1252 has no →) instead of raising."""
    if (
        stream is sys.__stdout__
        and stream is not None
        and getattr(stream, "errors", None) == "strict"
        and hasattr(stream, "reconfigure")
    ):
        stream.reconfigure(errors="replace")


def _flush_ordiscard(stream: object) -> None:
    try:
        stream.flush()  # type: ignore[attr-defined]
    except (OSError, ValueError, _OutputFailed):
        discard(stream)
        try:
            stream.flush()  # type: ignore[attr-defined]
        except (OSError, ValueError, _OutputFailed):
            pass


def entrypoint() -> None:
    sys.exit(main())
