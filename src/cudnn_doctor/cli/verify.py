"""`cudnn-doctor verify`: prove that the GPU and cuDNN accelerate: exit 0 when they do, 1 when they do not
(no GPU included), 2 on bad input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cudnn_doctor.errors import UsageError
from cudnn_doctor.system.host import absolute

CHOICES = ("torch", "tensorflow", "paddle", "jax", "onnxruntime", "all")


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "verify",
        help="time the GPU and cuDNN against the CPU and the GPU's datasheet peak",
        description="Run correctness checks and benchmarks for each framework in the target interpreter (a child "
        "process): "
        "GPU against CPU, cuDNN on against off, matrix products per precision against the datasheet peak, copy "
        "bandwidths.",
    )
    parser.add_argument("--python", metavar="EXE", help="the interpreter to verify (default: the current one)")
    parser.add_argument(
        "--framework",
        action="append",
        choices=CHOICES,
        metavar="NAME",
        help=f"{', '.join(CHOICES)} (repeatable; default all installed)",
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer runs: under 20 s on a recent GPU")
    parser.add_argument("--cpu-only", action="store_true", help="time the CPU baseline only, whatever GPU there is")
    parser.add_argument(
        "--compare", action="store_true", help="show each figure against the last run on the same GPU model"
    )
    parser.add_argument("--no-history", action="store_true", help="do not add this run to the local history")
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="report format (default text; json: only JSON on stdout)",
    )
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write a self-contained HTML report (charts, verdicts, and check's findings)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor.reports import messages, verify_report
    from cudnn_doctor.system.live import LiveSystem
    from cudnn_doctor.verify import history
    from cudnn_doctor.verify import run as verifying

    if args.html is not None:
        from cudnn_doctor.reports import html
        from cudnn_doctor.system.output_files import check_report_target, write_report

        check_report_target(args.html)  # a bad path fails now, not after minutes of benchmarks
    system = LiveSystem()
    executable = args.python or system.current_python()
    if not executable or not system.is_file(executable):
        raise UsageError(
            f"--python {executable}: no such interpreter"
            + (" (it is a folder)" if executable and system.is_dir(executable) else "")
        )
    # The worker runs in a sandbox folder: `--python venv/bin/python` (found here, from the current folder) is made
    # absolute now, or the child would look for it in the sandbox and fail after the check above passed.
    executable = absolute(executable)
    wanted = args.framework or ["all"]
    installed = verifying.installed(system, executable)
    frameworks = installed if "all" in wanted else list(dict.fromkeys(wanted))
    if not frameworks:
        raise UsageError(
            f"no GPU framework is installed in {executable}: install one, or name another interpreter with --python"
        )
    missing = [name for name in frameworks if name not in installed]
    if missing:
        raise UsageError(
            f"--framework {missing[0]}: not installed in {executable} (installed: "
            f"{', '.join(installed) or 'no GPU framework'})"
        )
    with verify_report.Progress(sys.stderr) as progress:
        result = verifying.run(system, executable, frameworks, args.quick, progress.start, cpu_only=args.cpu_only)
    if args.compare:
        result["compare"] = history.compare(result, history.last(system, (result["gpu"] or {}).get("name")))
    if not args.no_history and result["frameworks"]:
        try:
            history.append(system, result)
        except OSError as error:  # the figures are still shown; only the record is lost
            messages.warning(f"verify history not written: {error}", sys.stderr)
    if args.html is not None:
        from cudnn_doctor.diagnose import diagnose

        diagnosis = diagnose(system)  # as `check` diagnoses this machine, its frameworks' own reports included
        write_report(args.html, lambda stream: html.render_verify(result, stream, diagnosis))
        messages.note(f"HTML report written to {args.html}", sys.stderr)
    if args.format == "json":
        verify_report.render_json(result, sys.stdout)
    else:
        verify_report.render_text(result, sys.stdout)
    return result["exit_code"]
