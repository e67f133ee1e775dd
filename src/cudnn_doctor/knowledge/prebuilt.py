"""The typed tables as the generator built them from knowledge.json, pickled: what a run loads first.

Building a table from the JSON checks every row against the schema (regular expressions, version
parses), several times what unpickling them costs (docs/speed.md). The
JSON stays the reviewed artifact and the truth: the pickle is used only while it was built from
exactly this knowledge.json (size and CRC-32 match) with records of exactly these fields;
otherwise, or when it cannot be read, a run builds from the JSON as before (slower, never wrong).
Each table is pickled on its own, so a run unpickles only the tables it touches.
`python -m cudnn_doctor.knowledge.generate` writes it; a test checks it equals the JSON's tables.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any, Optional

from cudnn_doctor.knowledge import records

try:
    from _pickle import loads as _loads  # the C unpickler alone: the pickle module's own import is Python code to run
except ImportError:  # another implementation than CPython
    from pickle import loads as _loads

FORMAT = 1
PROTOCOL = 4  # Python 3.4+: the oldest the package supports reads it


def records_fingerprint() -> int:
    """The record classes and their fields: a pickle made with other records must not be read."""
    shapes = sorted(
        (name, value._fields)
        for name, value in vars(records).items()
        if isinstance(value, type) and hasattr(value, "_fields")
    )
    return zlib.crc32(repr(shapes).encode())


def json_fingerprint(data: bytes) -> tuple[int, int]:
    """Size and CRC-32 of the JSON, line ends as generated (a Windows checkout may have turned them into CRLF)."""
    data = data.replace(b"\r\n", b"\n")
    return len(data), zlib.crc32(data)


def render(tables: dict[str, Any], json_data: bytes) -> bytes:
    """The pickle of `tables` (name -> typed table, built from `json_data`)."""
    import pickle

    document = {
        "format": FORMAT,
        "json": json_fingerprint(json_data),
        "records": records_fingerprint(),
        "tables": {name: pickle.dumps(table, protocol=PROTOCOL) for name, table in tables.items()},
    }
    return pickle.dumps(document, protocol=PROTOCOL)


def read(path: Path, json_path: Path) -> Optional[dict[str, bytes]]:
    """Table name -> its pickle, when `path` was built from `json_path` as it is now with these records; else None."""
    try:
        document = _loads(path.read_bytes())
        current = json_fingerprint(json_path.read_bytes())
    except Exception:  # unreadable or not a pickle (any error a damaged pickle raises): the JSON is there
        return None
    if not isinstance(document, dict) or document.get("format") != FORMAT or document.get("json") != current:
        return None
    if document.get("records") != records_fingerprint():
        return None
    tables = document.get("tables")
    return tables if isinstance(tables, dict) else None


def table(tables: dict[str, bytes], name: str) -> Optional[Any]:
    """One table unpickled, or None when it is missing or cannot be read (the caller builds it from the JSON)."""
    data = tables.get(name)
    if data is None:
        return None
    try:
        return _loads(data)
    except Exception:  # a damaged table: build it from the JSON
        return None
