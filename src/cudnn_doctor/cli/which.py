"""`cudnn-doctor which NAME`: how the loader resolves one library from an interpreter's process (a debugging view)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from cudnn_doctor.loader.resolve import Root
    from cudnn_doctor.loads import LoadStep
    from cudnn_doctor.system.interface import System

from cudnn_doctor.cli.options import add_knowledge_option
from cudnn_doctor.reports import write_json


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("which", help="show where the loader finds a library, and its whole import tree")
    parser.add_argument("name", help="a library name (cudnn64_8.dll, libcudnn.so.9) or a path")
    parser.add_argument(
        "--python", metavar="EXE", help="the interpreter whose process loads it (default: the current one)"
    )
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

    if not args.name.strip() or "\0" in args.name:
        raise UsageError("which: give a library name (cudnn64_8.dll, libcudnn.so.9) or a path")
    system = open_system(args.fixture)
    executable = args.python or system.current_python()
    if not executable:
        raise UsageError("no interpreter to resolve from; pass --python EXE")
    if args.python and not (
        system.is_file(executable) or any(system.paths.same(executable, p) for p in system.known_pythons())
    ):
        where = "in the fixture" if args.fixture else "on this machine"
        raise UsageError(
            f"--python {executable}: no such interpreter {where}"
            + (" (it is a folder)" if system.is_dir(executable) else "")
        )
    resolution = Resolver(system).resolve("which", executable, _roots(system, args.name))
    resolution = resolution._replace(steps=tuple(s for s in resolution.steps if not _unneeded(system, s)))
    confirmations = probe_confirmations(system, (resolution,))
    if args.format == "json":
        from cudnn_doctor.reports.json_report import _plain

        write_json(sys.stdout, {"resolution": _plain(resolution), "confirmations": _plain(confirmations)}, indent=2)
    else:
        report.render(resolution, confirmations, sys.stdout)
    root = resolution.steps[0] if resolution.steps else None
    return (
        0 if root is not None and root.winner and not any(s.failed and not s.optional for s in resolution.steps) else 1
    )


def _roots(system: System, name: str) -> list[Union[str, Root]]:
    """What the process loads for NAME: a path to ONNX Runtime's CUDA provider is loaded as ONNX Runtime
    loads it (its shared library first, by full path); anything else as a plain load of that name."""
    from cudnn_doctor.probes.resolution import ORT_PROVIDER_DLL, onnxruntime_provider_roots

    rules = system.paths
    if (
        rules.windows
        and rules.is_abs(name)
        and rules.name_key(rules.basename(name)) == rules.name_key(ORT_PROVIDER_DLL)
    ):
        roots = onnxruntime_provider_roots(
            system, name
        )  # the asked-for library heads the report; roots load before any import
        return [roots[-1], *roots[:-1]]
    return [name]


def _unneeded(system: System, step: LoadStep) -> bool:
    """A missing zlibwapi.dll under a cuDNN release that no longer loads it (cuDNN 9): the same knowledge
    rule the dependency-missing check applies (knowledge.zlibwapi_required), read from the requester's version."""
    from cudnn_doctor import knowledge
    from cudnn_doctor.versions import parse_version

    if not step.failed or system.paths.name_key(system.paths.basename(step.name)) != system.paths.name_key(
        "zlibwapi.dll"
    ):
        return False
    binary = system.binary(step.requester) if system.exists(step.requester) else None
    version = parse_version(binary.version) if binary is not None and binary.version else None
    return version is not None and not knowledge.zlibwapi_required(version)
