"""Reports: the only part of cudnn-doctor that writes output."""

from __future__ import annotations

from typing import Any, Iterable, TextIO


def write_json(out: TextIO, value: Any, **options: Any) -> None:
    """`value` as JSON (`json.dumps` options) and a newline, in one write: `json.dump` writes every token on its
    own, 35,000 writes for a check of 50 environments."""
    import json

    out.write(json.dumps(value, **options) + "\n")


def write_lines(out: TextIO, lines: Iterable[str]) -> None:
    out.writelines(line + "\n" for line in lines)
