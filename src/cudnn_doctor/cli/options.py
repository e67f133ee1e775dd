"""Options shared by several subcommands."""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path

from cudnn_doctor.errors import UsageError


def add_system_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fixture", type=Path, metavar="FILE", help="diagnose the machine described by a machine-fixture/1 file instead of this one")
    parser.add_argument("--no-frameworks", action="store_true", help="do not import the GPU frameworks (faster; fewer facts)")
    parser.add_argument("--framework-timeout", type=float, default=60.0, metavar="S", help="seconds allowed for each framework import (default 60)")


def finding_ids(values: list[str]) -> set[str]:
    """`--ignore a,b --ignore c` → {a, b, c}, each checked against the registered ids."""
    from cudnn_doctor.checks import RULES

    ids = {part.strip() for value in values for part in value.split(",") if part.strip()}
    for finding_id in ids:
        if finding_id not in RULES:
            close = difflib.get_close_matches(finding_id, list(RULES), n=1)
            raise UsageError(f"unknown finding id {finding_id!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return ids
