"""cudnn-doctor: diagnose and fix a machine's NVIDIA driver → CUDA → cuDNN → framework stack.

The public API is re-exported lazily, so that `cudnn-doctor --help` does not pay for it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Diagnosis", "Finding", "Severity", "diagnose", "open_system"]
__version__ = "0.1.0"

_EXPORTS = {
    "Diagnosis": "cudnn_doctor.diagnosis",
    "diagnose": "cudnn_doctor.diagnose",
    "Finding": "cudnn_doctor.findings",
    "Severity": "cudnn_doctor.findings",
    "open_system": "cudnn_doctor.system",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'cudnn_doctor' has no attribute {name!r}")
