"""The doctor's own JSON caches in its state folder (the scan's and the native roots' names): read once per process,
written back atomically; a missing, damaged or unwritable file is no cache, never an error."""

from __future__ import annotations

import json
import os
from typing import Any, Optional


def state_path(name: str) -> str:
    from cudnn_doctor.paths import state_dir

    return os.path.join(state_dir(), name)


def read_state_json(name: str, limit: int) -> Optional[Any]:
    """The document of the state folder's `name` (at most `limit` bytes read), None when there is none worth reading."""
    try:
        with open(state_path(name), "rb") as handle:
            return json.loads(handle.read(limit))
    except (OSError, ValueError, RecursionError, MemoryError):  # a damaged cache is no cache
        return None


def write_state_json(name: str, document: Any) -> bool:
    """Replace the state folder's `name` with `document` in one step (a temporary file renamed over it)."""
    path = state_path(name)
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump(document, handle)
        os.replace(temp, path)
        return True
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass
        return False
