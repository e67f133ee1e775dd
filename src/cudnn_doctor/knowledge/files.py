"""Reading knowledge files as people write them (YAML, or JSON), strictly: a repeated key is an error, not a silent
overwrite.

Only the generator, the tests and `--kb` read YAML; a normal run reads the generated JSON.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Optional

import cudnn_doctor.system.untrusted as untrusted
from cudnn_doctor.errors import InputError, KnowledgeError

MAX_BYTES = 16 << 20  # a knowledge file (the shipped ones are 200 kB at most; a `--kb` overlay is a few rows)


def read(path: Path, name: Optional[str] = None) -> Any:
    """The document in a .json file, or in a YAML file (any other name); dates become "YYYY-MM-DD".
    `name` is how messages call the file (default: its file name). Read by the hardened reader
    (`cudnn_doctor.system.untrusted`): a `--kb` file is the user's, and may be a FIFO, /dev/zero or an alias bomb."""
    name = name or path.name
    try:
        document = untrusted.parse(
            untrusted.read_file(path, "knowledge file", MAX_BYTES), name, json_text=path.suffix.lower() == ".json"
        )
    except InputError as error:
        raise KnowledgeError(str(error)) from None
    return _plain(document)


def parse_yaml(text: str, name: str) -> Any:
    """YAML text as a knowledge document: strict (a key given twice, a non-string key, an alias bomb, deep nesting or a
    huge integer is a KnowledgeError naming the line), dates as ISO text."""
    try:
        document = untrusted.parse(text, name)
    except InputError as error:
        raise KnowledgeError(str(error)) from None
    return _plain(document)


def _plain(value: Any) -> Any:
    """YAML's dates as the ISO text JSON holds, so both formats give the same document."""
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
