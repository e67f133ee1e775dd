"""The only part of cudnn-doctor that touches a machine: live, or replayed from a fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from cudnn_doctor.system.interface import CommandResult, Env, FileInfo, PythonInfo, System


def open_system(fixture: Optional[Path] = None, limit: Optional[float] = None) -> System:
    """The live machine, or the machine a fixture file describes; `limit` bounds every child process of a live run (seconds)."""
    if fixture is not None:
        from cudnn_doctor.system.fixture import FixtureSystem

        return FixtureSystem.from_file(fixture)
    from cudnn_doctor.system.live import LiveSystem

    return LiveSystem(limit=limit)


__all__ = ["CommandResult", "Env", "FileInfo", "PythonInfo", "System", "open_system"]
