"""What each knowledge table may hold, checked row by row; and how a user's rows overlay the shipped ones.

A data file is a mapping of sections. A section is a list of rows (each with a key that says
which shipped row a user's row replaces) or one single row. Every row is a mapping whose keys
are exactly its record's fields: an unknown, missing or mistyped key is a `KnowledgeError`
naming the file, the section, the row's index and what identifies the row, e.g.
`torch.yaml: releases[3] (version 2.11): unknown key 'pyton' (did you mean 'python'?)`. The tables are declared
in tables.py with the field checks of fields.py.
"""

from __future__ import annotations

from typing import Any, Hashable

from cudnn_doctor.errors import KnowledgeError
from cudnn_doctor.knowledge.fields import Bad, Section, Table, close_matches, date, shown
from cudnn_doctor.knowledge.tables import TABLES


def _top_level(table: Table, document: Any, where: str, prefix: str, partial: bool) -> None:
    if not isinstance(document, dict):
        raise KnowledgeError(f"{where}: {prefix or 'the file'}: expected a mapping of sections, got {shown(document)}")
    allowed = ["reviewed", *table.sections]
    for key in document:
        if key not in allowed:
            close = close_matches(str(key), allowed, n=1)
            raise KnowledgeError(
                f"{where}: unknown key {prefix + str(key)!r}"
                + (f" (did you mean {prefix + close[0]!r}?)" if close else "")
            )
    if not partial:
        for key in allowed:
            if key not in document:
                raise KnowledgeError(f"{where}: missing key {prefix + key!r}")
    if "reviewed" in document:
        try:
            date(document["reviewed"])
        except Bad as bad:
            raise KnowledgeError(f"{where}: {prefix}reviewed: {bad}, got {shown(document['reviewed'])}") from None


def _section(section: Section, name: str, raw: Any, where: str) -> Any:
    """The record (single row) or tuple of records (list) of one section; duplicate keys are an error.
    `name` is how messages call the section: "releases", or "torch.releases" in a user's file."""
    if section.key is None:
        try:
            return section.convert(raw)
        except Bad as bad:
            raise KnowledgeError(f"{where}: {name}: {bad}") from None
    if not isinstance(raw, list):
        raise KnowledgeError(f"{where}: {name}: expected a list of rows, got {shown(raw)}")
    rows: list[Any] = []
    seen: dict[Hashable, int] = {}
    for index, item in enumerate(raw):
        try:
            row = section.convert(item)
            key = section.key(row)
            if key in seen:
                raise Bad(f"same key as {name}[{seen[key]}]; keep one of them")
        except Bad as bad:
            raise KnowledgeError(f"{where}: {name}[{index}]{section.name_of(item)}: {bad}") from None
        seen[key] = index
        rows.append(row)
    return tuple(rows)


def build(name: str, document: Any, where: str) -> Any:
    """The typed table of one shipped data file (every section present, every row valid, invariants kept)."""
    table = TABLES[name]
    _top_level(table, document, where, "", partial=False)
    record = table.record(
        **{
            key: document["reviewed"] if key == "reviewed" else _section(table.sections[key], key, document[key], where)
            for key in table.record._fields
        }
    )
    if table.check:
        table.check(record, where)
    return record


def partial(name: str, document: Any, where: str) -> dict[str, Any]:
    """A user's rows for table `name` in file `where`: only the sections given, each checked like the shipped ones."""
    table = TABLES[name]
    _top_level(table, document, where, f"{name}.", partial=True)
    return {
        key: _section(table.sections[key], f"{name}.{key}", value, where)
        for key, value in document.items()
        if key != "reviewed"
    }


def overlay(name: str, shipped: Any, sections: dict[str, Any], where: str) -> Any:
    """The shipped table with a user's rows on top: a row with the key of a shipped row replaces it,
    other rows are added; the user's rows come first, so a lookup that takes the first match sees them."""
    table = TABLES[name]
    changes = {}
    for key, value in sections.items():
        section = table.sections[key]
        if section.key is None:
            changes[key] = value
            continue
        theirs = {section.key(row) for row in value}
        changes[key] = value + tuple(row for row in getattr(shipped, key) if section.key(row) not in theirs)
    merged = shipped._replace(**changes)
    if table.check:
        table.check(merged, where)
    return merged


__all__ = ["TABLES", "build", "overlay", "partial"]
