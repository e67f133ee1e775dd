"""The doctor's state folder on this host ($CUDNN_DOCTOR_STATE_DIR, else platformdirs' user state folder) and its own
files there: the JSON caches (the scan's and the native roots' names), read once per process and written back
atomically, where a missing, damaged or unwritable file is no cache, never an error; and files written whole."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional, TextIO


def state_dir() -> str:
    """Where the doctor keeps its own state on this host (install journals, backups, verify history): the user's
    state folder per platformdirs, or $CUDNN_DOCTOR_STATE_DIR."""
    override = os.environ.get("CUDNN_DOCTOR_STATE_DIR")
    if override:
        return override
    import platformdirs

    return platformdirs.user_state_dir("cudnn-doctor", appauthor=False)


def state_path(name: str) -> str:
    return os.path.join(state_dir(), name)


def write_whole(path: str, text: str) -> None:
    """The file is the old one or the new one, never half of either (a temporary file renamed over it); the folder
    is made when missing. An OSError says why nothing was written."""
    from cudnn_doctor.system.output_files import replace_whole

    def fill(out: TextIO) -> None:
        out.write(text)

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    replace_whole(Path(path), fill)


def read_state_json(name: str, limit: int) -> Optional[Any]:
    """The document of the state folder's `name` (at most `limit` bytes read), None when there is none worth reading."""
    try:
        with open(state_path(name), "rb") as handle:
            return json.loads(handle.read(limit))
    except (OSError, ValueError, RecursionError, MemoryError):  # a damaged cache is no cache
        return None


def write_state_json(name: str, document: Any) -> bool:
    """Replace the state folder's `name` with `document` in one step (a temporary file renamed over it)."""
    try:
        write_whole(state_path(name), json.dumps(document))
    except OSError:
        return False
    return True
