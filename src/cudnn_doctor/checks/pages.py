"""Rule pages: one markdown file per finding id, shipped as package data in checks/pages/<id>.md.

Read through importlib.resources so the pages are found the same way in a checkout, an
installed wheel or a zip. A page has the five sections of SECTIONS, in that order; severity and
title are not in it: they live with the rule, and `explain` prints them as the page's header.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import TYPE_CHECKING

from cudnn_doctor.lazyre import regex

if TYPE_CHECKING:
    from importlib.abc import Traversable

SECTIONS = ("What it means", "Why it happens", "Example", "How to fix", "Related")
_SUFFIX = ".md"
_HEADING = regex(r"^## (.+?)\s*$", re.MULTILINE)
_RELATED_ITEM = regex(r"^- `([a-z0-9-]+)`", re.MULTILINE)


def _folder() -> Traversable:
    return resources.files(__package__).joinpath("pages")


def page_ids() -> list[str]:
    """Every id that has a page, sorted."""
    return sorted(
        entry.name[: -len(_SUFFIX)] for entry in _folder().iterdir() if entry.name.endswith(_SUFFIX) and entry.is_file()
    )


def page(finding_id: str) -> str:
    """The markdown page of `finding_id`; KeyError when it has none."""
    entry = _folder().joinpath(finding_id + _SUFFIX)
    if not re.fullmatch(r"[a-z0-9-]+", finding_id) or not entry.is_file():
        raise KeyError(finding_id)
    return entry.read_text(encoding="utf-8")


def sections(text: str) -> list[str]:
    """The `## ` headings of a page, in order."""
    return _HEADING.findall(text)


def related(text: str) -> list[str]:
    """The ids listed under `## Related` (each item starts with the id in backticks)."""
    _, found, rest = text.partition("\n## Related\n")
    if not found:
        return []
    return _RELATED_ITEM.findall(rest.split("\n## ", 1)[0])
