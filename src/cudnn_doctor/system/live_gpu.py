"""The live system's GPU: NVML through its ctypes binding (system/nvml.py), the facts `check` reads and the clocks,
power and throttle reasons `verify` reads."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

from cudnn_doctor.system import nvml
from cudnn_doctor.system.interface import (
    System,
)

_THROTTLE_BITS = {  # nvmlClocksEventReason* / nvmlClocksThrottleReason* (NVML's nvml.h)
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


class LiveGpu(System):
    """Mixed into LiveSystem, which sets these in its __init__."""

    _nvml_cache: Optional[tuple[Optional[dict[str, Any]]]]

    def nvml(self) -> Optional[dict[str, Any]]:
        if self._nvml_cache is None:
            self._nvml_cache = (nvml.query(),)  # ctypes: pynvml is a heavy import (docs/speed.md)
        return self._nvml_cache[0]

    def gpu_state(self) -> Optional[list[dict[str, Any]]]:
        return _query_nvml_state() if _nvml_library_loads() else None


def _query_nvml_state() -> Optional[list[dict[str, Any]]]:
    """Clocks (MHz), power (W) and the active clock-event (throttle) reasons of each GPU; what NVML refuses is left out."""
    with _nvml_session() as pynvml:
        if pynvml is None:
            return None
        try:
            return [_gpu_state(pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)) for index in range(pynvml.nvmlDeviceGetCount())]
        except Exception:
            return None


def _gpu_state(pynvml: Any, handle: Any) -> dict[str, Any]:
    name = pynvml.nvmlDeviceGetName(handle)
    clock, top = pynvml.nvmlDeviceGetClockInfo, pynvml.nvmlDeviceGetMaxClockInfo
    draw, limit = _nvml_number(pynvml.nvmlDeviceGetPowerUsage, handle), _nvml_number(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle)
    bits = _nvml_number(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons, handle)
    return {
        "name": name.decode() if isinstance(name, bytes) else name,
        "clocks_mhz": {
            "sm": _nvml_number(clock, handle, pynvml.NVML_CLOCK_SM),
            "sm_max": _nvml_number(top, handle, pynvml.NVML_CLOCK_SM),
            "memory": _nvml_number(clock, handle, pynvml.NVML_CLOCK_MEM),
        },
        "power_w": {"draw": draw / 1000.0 if draw is not None else None, "limit": limit / 1000.0 if limit is not None else None},
        "throttle_reasons": [reason for bit, reason in _THROTTLE_BITS.items() if bits and int(bits) & bit],
    }


def _nvml_number(call: Callable[..., Any], *args: Any) -> Optional[float]:
    try:
        return call(*args)
    except Exception:  # NVMLError_NotSupported on many boards for power or clocks
        return None


@contextlib.contextmanager
def _nvml_session() -> Iterator[Any]:
    """pynvml, initialised for the block and shut down after it; None when NVML cannot start (no driver, no GPU)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # ImportError, pynvml.NVMLError and friends
        yield None
        return
    try:
        yield pynvml
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _nvml_library_loads() -> bool:
    """A cheap look before importing pynvml: can the NVML library itself be opened (where pynvml looks)?"""
    return nvml.load() is not None
