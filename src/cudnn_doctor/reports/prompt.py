"""The one question `install` and `fix` ask before they change anything."""

from __future__ import annotations

from typing import TextIO

from cudnn_doctor.errors import UsageError


def confirm(question: str, yes: bool, stdin: TextIO, out: TextIO, refusal: str) -> bool:
    """True when `--yes` was given or the user answers y; a non-interactive input is never read as an answer:
    `refusal` (what to pass instead) is then a one-line usage error."""
    if yes:
        return True
    if not stdin.isatty():
        raise UsageError(f"not asking on a non-interactive input: {refusal}")
    out.write(f"{question} [y/N] ")
    out.flush()
    return stdin.readline().strip().lower() in ("y", "yes")
