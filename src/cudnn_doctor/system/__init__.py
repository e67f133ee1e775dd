"""The only part of cudnn-doctor that touches a machine: live, or replayed from a fixture.

Names are loaded on first use, so that `run` can start a user's program through `system.passthrough`
without importing the rest of this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from pathlib import Path

    from cudnn_doctor.system.interface import CommandResult, Env, FileInfo, PythonInfo, System


def open_system(fixture: Optional[Path] = None, limit: Optional[float] = None) -> System:
    """The live machine, or the machine a fixture file describes; `limit` bounds every child process of a live run
    (seconds)."""
    if fixture is not None:
        from cudnn_doctor.system.fixture import FixtureSystem

        return FixtureSystem.from_file(fixture)
    from cudnn_doctor.system.live import LiveSystem

    return LiveSystem(limit=limit)


def __getattr__(name: str) -> Any:
    if name in ("CommandResult", "Env", "FileInfo", "PythonInfo", "System"):
        from cudnn_doctor.system import interface

        return getattr(interface, name)
    raise AttributeError(f"module 'cudnn_doctor.system' has no attribute {name!r}")


__all__ = ["CommandResult", "Env", "FileInfo", "PythonInfo", "System", "open_system"]
