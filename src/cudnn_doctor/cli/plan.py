"""`cudnn-doctor plan`: the newest working stack for the wanted frameworks, and the commands; exit 0 with
a stack, 1 without one, 2 on bad input."""

from __future__ import annotations

import argparse
import sys

from cudnn_doctor.cli.options import add_knowledge_option


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "plan",
        help="find a driver/CUDA/cuDNN/framework stack that works, and the commands",
        description="Plan a stack from the knowledge tables. Inputs default to this machine (or --fixture); "
        "each option overrides one. Planning for another OS (--os) reads nothing from this machine.",
    )
    parser.add_argument(
        "--framework",
        action="append",
        default=[],
        metavar="REQ",
        help="a framework and PEP 440 specifier: torch, torch==2.1, 'tensorflow>=2.15' (repeatable: one environment)",
    )
    parser.add_argument(
        "--os", choices=("windows", "linux", "wsl"), help="the OS to plan for (default: this machine's)"
    )
    parser.add_argument(
        "--python", metavar="X.Y", help="the Python version (default: the current one; a new environment may change it)"
    )
    parser.add_argument("--gpu", metavar="NAME", help='the GPU, by name ("RTX 3060") or compute capability ("8.6")')
    parser.add_argument("--driver", metavar="VERSION", help="the NVIDIA driver version (528.49, 535.104.05)")
    parser.add_argument("--cuda", metavar="X.Y", help="fix the CUDA toolkit; alone, plan that toolkit and its cuDNN")
    parser.add_argument(
        "--arch",
        choices=("x86_64", "aarch64"),
        help="the CPU architecture (default: this machine's); aarch64: Linux SBSA or Jetson",
    )
    parser.add_argument("--fixture", metavar="FILE", help="plan for the machine a machine-fixture/1 file describes")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format (default text)")
    add_knowledge_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from cudnn_doctor import knowledge
    from cudnn_doctor.planner import solve
    from cudnn_doctor.planner.inputs import build_request

    with knowledge.overlay(args.kb):
        request = build_request(
            frameworks=args.framework,
            os_name=args.os,
            python=args.python,
            gpu=args.gpu,
            driver=args.driver,
            cuda=args.cuda,
            arch=args.arch,
            fixture=Path(args.fixture) if args.fixture else None,
        )
        plan = solve(request)
        if args.format == "json":
            from cudnn_doctor.reports import plan_report

            plan_report.render_json(plan, sys.stdout)
        else:
            from cudnn_doctor.reports import plan_report

            plan_report.render_text(plan, sys.stdout)
    return plan.exit_code
