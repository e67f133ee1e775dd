"""The checks of one value of a knowledge row (a version, a URL, a list of tags) and of a row or a section.

Each converter takes the raw YAML value and returns the typed one, or raises `Bad` saying what was
expected; `Section.convert` turns a raw row into its record and says which key is wrong. The tables
(tables.py) are declared with them; schema.py reads whole files.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Hashable, Optional

from packaging.specifiers import InvalidSpecifier
from packaging.version import VERSION_PATTERN

from cudnn_doctor.knowledge import records as r
from cudnn_doctor.record import Record


class Bad(ValueError):
    """A value of the wrong type or form; the message says what was expected."""


Convert = Callable[[Any], Any]


def close_matches(word: str, choices: list[str], n: int = 1) -> list[str]:
    """The nearest of `choices` to a misspelt key (difflib loads only when a file is wrong)."""
    import difflib

    return difflib.get_close_matches(word, choices, n=n)


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def text(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value
    raise Bad("expected a non-empty string")


@functools.cache
def _version_pattern() -> re.Pattern[str]:
    """What Version() accepts, without building one; compiled on first use (a run that loads the prebuilt tables never
    does)."""
    return re.compile(VERSION_PATTERN, re.VERBOSE | re.IGNORECASE)


def version(value: Any) -> str:
    if isinstance(value, str) and _version_pattern().fullmatch(value.strip()):
        return value
    raise Bad('expected a version in quotes, such as "11.8"')


def integer(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise Bad("expected a whole number")


def version_range(value: Any) -> r.VersionRange:
    if isinstance(value, str) and value.strip():
        try:
            return r.VersionRange(value)
        except InvalidSpecifier:
            pass
    raise Bad('expected a PEP 440 version range in quotes, such as ">=3.8,<3.12"')


def url(value: Any) -> str:
    if (
        isinstance(value, str)
        and value.startswith("https://")
        and len(value) > len("https://")
        and not value[8].isspace()
    ):
        return value
    raise Bad("expected an https:// URL of the vendor's own page (a note may follow it)")


def optional_url(value: Any) -> Optional[str]:
    return None if value is None else url(value)


def optional_text(value: Any) -> Optional[str]:
    return None if value is None else text(value)


def optional_version(value: Any) -> Optional[str]:
    return None if value is None else version(value)


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise Bad("expected true or false")


def pattern(value: Any) -> str:
    written = text(value)
    try:
        re.compile(written)
    except re.error as error:
        raise Bad(f"expected a regular expression ({error})") from None
    return written


def date(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return value
    raise Bad("expected a date such as 2026-12-03")


def list_of(item: Convert, what: str) -> Convert:
    def convert(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise Bad(f"expected a list of {what}")
        try:
            return tuple(item(v) for v in value)
        except Bad:
            raise Bad(f"expected a list of {what}") from None

    return convert


def one_of(*choices: str) -> Convert:
    def convert(value: Any) -> str:
        if isinstance(value, str) and value in choices:
            return value
        raise Bad("expected one of " + ", ".join(choices))

    return convert


def optional(convert: Convert) -> Convert:
    """`convert`, or None for a value the vendor does not publish (written `null`)."""

    def optional(value: Any) -> Any:
        return None if value is None else convert(value)

    return optional


OS = one_of("windows", "linux")
NAMES = list_of(text, "names")
PROVENANCE: dict[str, Convert] = {"source": url, "copy": optional_url, "observed": optional_text}


class Section(Record):
    """One section of a table: its row record, how each field is checked, and (for lists) the row key."""

    record: type[
        Any
    ]  # the row's record class (framework_records.TorchRelease): its _fields, _field_defaults and constructor
    fields: dict[str, Convert]
    key: Optional[Callable[[Any], Hashable]]  # None: a single row, not a list
    label: tuple[str, ...] = ()  # the fields that name a row in messages

    def convert(self, raw: Any) -> Any:
        """The record for one raw row; `Bad` says what is wrong with it (the caller says where)."""
        if not isinstance(raw, dict):
            raise Bad(f"expected a mapping of keys to values, got {shown(raw)}")
        fields = self.fields
        for key in raw:
            if key not in fields:
                close = close_matches(str(key), list(fields), n=1)
                raise Bad(f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        values = {}
        for name, convert in fields.items():
            if name not in raw:
                if name not in self.record._field_defaults:
                    raise Bad(f"missing key {name!r}")
                continue
            try:
                values[name] = convert(raw[name])
            except Bad as bad:
                raise Bad(f"{name!r}: {bad}, got {shown(raw[name])}") from None
        return self.record(**values)

    def name_of(self, raw: Any) -> str:
        """The row's name in messages, ` (version 2.10)`; empty when the row says nothing usable."""
        if not isinstance(raw, dict):
            return ""
        parts = [
            f"{k} {raw[k]}"
            for k in self.label
            if isinstance(raw.get(k), (str, int)) and not isinstance(raw.get(k), bool)
        ]
        return f" ({', '.join(parts)})" if parts else ""


def rows(record: type[Any], fields: dict[str, Convert], key: Callable[[Any], Hashable], *label: str) -> Section:
    return Section(record, {**fields, **PROVENANCE}, key, label)


def single(record: type[Any], fields: dict[str, Convert]) -> Section:
    return Section(record, {**fields, **PROVENANCE}, None)


class Table(Record):
    """A data file: its record and its sections in file order."""

    record: type[Any]  # the table's record class (framework_records.TorchTable)
    sections: dict[str, Section]
    check: Optional[Callable[[Any, str], None]] = None  # invariants across rows


def gpu_key(name: str) -> str:
    """A GPU name as compared: lower case, single spaces, without the brand NVML and NVIDIA's pages
    put in front of some names and not others ("NVIDIA T4" / "Tesla T4", "NVIDIA GeForce RTX 4090")."""
    key = " ".join(name.lower().split())
    for brand in ("nvidia ", "tesla "):
        if key.startswith(brand):
            key = key[len(brand) :]
    return key


def peak_name_key(name: str) -> str:
    """A peak row's name or model as `gpu_peak` compares it: `gpu_key`, also without "GeForce "."""
    key = gpu_key(name)
    return key[len("geforce ") :] if key.startswith("geforce ") else key
