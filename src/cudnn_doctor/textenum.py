"""`TextEnum`: a closed set of names that is still its text, for the kinds facts and changes carry.

A member equals, hashes, serialises (JSON, YAML's safe dumper through `str`) and prints as its value,
on every Python this package supports (3.11's `enum.StrEnum` does the same, from 3.11 on).
"""

from __future__ import annotations

import enum


class TextEnum(str, enum.Enum):
    def __str__(self) -> str:
        return str(self.value)
