"""This process and its host, for the parts above the system: an environment variable, the environment, a path made
absolute, whether a name is there (a link included), the user's home folder."""

from __future__ import annotations

import os
from typing import Optional


def variable(name: str) -> Optional[str]:
    """The value of one environment variable of this process (None when unset)."""
    return os.environ.get(name)


def environment() -> dict[str, str]:
    """A copy of this process's environment."""
    return dict(os.environ)


def absolute(path: str) -> str:
    """`path` from the current folder, made absolute (links not resolved)."""
    return os.path.abspath(path)


def lexists(path: object) -> bool:
    """Whether anything is at `path`: a file, a folder, a link (even a dangling one), a FIFO."""
    return os.path.lexists(path)  # type: ignore[arg-type]


def home_folder() -> str:
    """The user's home folder."""
    return os.path.expanduser("~")
