"""The programs of system/scripts, imported here as a child imports them: that folder first on `sys.path`."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from cudnn_doctor.system.interface import CHILD_SCRIPTS


def child_module(name: str) -> ModuleType:
    """`name` (map_probe, cudnn_doctor_verify.common, ...) from system/scripts."""
    if str(CHILD_SCRIPTS) not in sys.path:
        sys.path.insert(0, str(CHILD_SCRIPTS))
    return importlib.import_module(name)


def worker_module(name: str = "common") -> ModuleType:
    """`cudnn_doctor_verify.<name>` (common: the plan, timing and records every backend shares)."""
    return child_module(f"cudnn_doctor_verify.{name}")
