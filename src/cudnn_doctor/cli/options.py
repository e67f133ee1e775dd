"""Options shared by several subcommands."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from cudnn_doctor.errors import UsageError


def add_fixture_option(parser: argparse.ArgumentParser, help: str) -> None:
    """`--fixture FILE`: the command runs on the machine a fixture describes, exactly as on this one."""
    parser.add_argument("--fixture", type=Path, metavar="FILE", help=help)


def add_format_option(parser: argparse.ArgumentParser) -> None:
    """`--format text|json` of the commands that change the machine or list what changed it."""
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")


def answer_without_asking(args: argparse.Namespace, how: str) -> None:
    """`--format json` never asks a question (its output is the JSON alone): it needs `--yes` or `--dry-run`."""
    if args.format == "json" and not (args.yes or args.dry_run):
        raise UsageError(f"--format json does not ask: {how}")


def add_system_options(parser: argparse.ArgumentParser) -> None:
    add_fixture_option(parser, "diagnose the machine described by a machine-fixture/1 file instead of this one")
    parser.add_argument(
        "--no-frameworks", action="store_true", help="do not import the GPU frameworks (faster; fewer facts)"
    )
    add_timeout_option(parser)
    add_knowledge_option(parser)


def add_knowledge_option(parser: argparse.ArgumentParser) -> None:
    """`--kb FILE`: a user's newer knowledge rows over the shipped ones (checked like them; a bad row is one line, exit
    2)."""
    parser.add_argument(
        "--kb",
        type=Path,
        metavar="FILE",
        help="newer knowledge rows (YAML or JSON: table -> section -> rows, as in knowledge/data) over the "
        "shipped ones; "
        "a row with the key of a shipped row replaces it, others are added",
    )


MAX_TIMEOUT = 24 * 3600.0


def seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse turns the ValueError into a one-line usage error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds above 0 and at most {MAX_TIMEOUT:.0f}, got {text!r}"
        )
    return value


def add_timeout_option(parser: argparse.ArgumentParser) -> None:
    """`--framework-timeout S`: the longest any child process of the run may take, framework imports included."""
    parser.add_argument(
        "--framework-timeout",
        type=seconds,
        default=60.0,
        metavar="S",
        help="seconds allowed for each framework import, and for any other program the run starts (default 60)",
    )


def finding_ids(values: list[str]) -> set[str]:
    """`--ignore a,b --ignore c` → {a, b, c}, each checked against the registered ids."""
    from cudnn_doctor.checks import RULES

    ids = {part.strip() for value in values for part in value.split(",") if part.strip()}
    for finding_id in ids:
        if finding_id not in RULES:
            import difflib  # only for a mistyped id

            close = difflib.get_close_matches(finding_id, list(RULES), n=1)
            raise UsageError(f"unknown finding id {finding_id!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return ids
