"""`cudnn-doctor which NAME`: how the loader resolves one library from an interpreter's process (a debugging view)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cudnn_doctor.cli.options import add_knowledge_option


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("which", help="show where the loader finds a library, and its whole import tree")
    parser.add_argument("name", help="a library name (cudnn64_8.dll, libcudnn.so.9) or a path")
    parser.add_argument("--python", metavar="EXE", help="the interpreter whose process loads it (default: the current one)")
    parser.add_argument("--fixture", type=Path, metavar="FILE", help="resolve on the machine a fixture describes")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    add_knowledge_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor import knowledge

    with knowledge.overlay(args.kb):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from cudnn_doctor.errors import UsageError
    from cudnn_doctor.loader.resolve import Resolver
    from cudnn_doctor.probes.confirm import probe_confirmations
    from cudnn_doctor.reports import which as report
    from cudnn_doctor.system import open_system

    system = open_system(args.fixture)
    executable = args.python or system.current_python()
    if not executable:
        raise UsageError("no interpreter to resolve from; pass --python EXE")
    if args.python and not (system.is_file(executable) or any(system.paths.same(executable, p) for p in system.known_pythons())):
        where = "in the fixture" if args.fixture else "on this machine"
        raise UsageError(f"--python {executable}: no such interpreter {where}" + (" (it is a folder)" if system.is_dir(executable) else ""))
    resolution = Resolver(system).resolve("which", executable, [args.name])
    confirmations = probe_confirmations(system, (resolution,))
    if args.format == "json":
        from cudnn_doctor.reports.json_report import _plain

        json.dump({"resolution": _plain(resolution), "confirmations": _plain(confirmations)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        report.render(resolution, confirmations, sys.stdout)
    root = resolution.steps[0] if resolution.steps else None
    return 0 if root is not None and root.winner and not any(s.failed and not s.optional for s in resolution.steps) else 1
