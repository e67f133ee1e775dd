"""The verify worker's package, imported here as the child imports it: its folder first on `sys.path`."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from cudnn_doctor.verify.run import WORKER_FOLDER


def worker_module(name: str = "common") -> ModuleType:
    """`cudnn_doctor_verify.<name>` (common: the plan, timing and records every backend shares)."""
    if str(WORKER_FOLDER) not in sys.path:
        sys.path.insert(0, str(WORKER_FOLDER))
    return importlib.import_module(f"cudnn_doctor_verify.{name}")
