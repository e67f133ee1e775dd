"""The live system's GPU: NVML through its one ctypes binding (system/nvml.py), for the facts `check` reads and the
clocks, power and throttle reasons `verify` reads."""

from __future__ import annotations

from typing import Any, Optional

from cudnn_doctor.system import nvml
from cudnn_doctor.system.interface import System


class LiveGpu(System):
    """Mixed into LiveSystem, which sets these in its __init__."""

    _nvml_cache: Optional[tuple[Optional[dict[str, Any]]]]

    def nvml(self) -> Optional[dict[str, Any]]:
        if self._nvml_cache is None:
            self._nvml_cache = (nvml.query(),)
        return self._nvml_cache[0]

    def gpu_state(self) -> Optional[list[dict[str, Any]]]:
        return nvml.gpu_state()
