"""NVML through ctypes: the driver and GPU facts `check` reads, without importing pynvml (a heavy import:
docs/speed.md).

Only the calls the doctor needs (the facts `check` reads; the clocks, power and throttle reasons `verify` reads),
under the entry points, buffer sizes and library paths nvidia-ml-py (pynvml) uses, so both read the same answers
(tests/live/test_nvml.py compares them call for call). ctypes is imported inside the functions: a run on a fixture never
loads it.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional, TypeVar

SUCCESS = 0  # NVML_SUCCESS
DRIVER_VERSION_BUFFER_SIZE = 80  # NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
DEVICE_NAME_BUFFER_SIZE = 96  # NVML_DEVICE_NAME_V2_BUFFER_SIZE
DEVICE_UUID_BUFFER_SIZE = 96  # NVML_DEVICE_UUID_V2_BUFFER_SIZE
_MIB = 1024 * 1024

_LOADED: list[Any] = []  # [the CDLL, or None] once load() has looked


class NvmlError(Exception):
    """An NVML call answered something other than NVML_SUCCESS."""


def library_paths() -> tuple[str, ...]:
    """Where pynvml looks: nvml.dll in System32 (DCH drivers), then beside nvidia-smi; libnvidia-ml.so.1 elsewhere."""
    if sys.platform == "win32":
        return (
            os.path.join(os.getenv("WINDIR", "C:/Windows"), "System32/nvml.dll"),
            os.path.join(os.getenv("ProgramFiles", "C:/Program Files"), "NVIDIA Corporation/NVSMI/nvml.dll"),
        )
    return ("libnvidia-ml.so.1",)


def open_library(paths: tuple[str, ...]) -> Optional[Any]:
    """The first of `paths` that loads, as a ctypes CDLL (cdecl, as pynvml loads it); None when none does."""
    import ctypes

    for path in paths:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def load() -> Optional[Any]:
    """The NVML library of this machine, opened once per process; None without a driver."""
    if not _LOADED:
        _LOADED.append(open_library(library_paths()))
    return _LOADED[0]


def query(library: Optional[Any] = None) -> Optional[dict[str, Any]]:
    """Driver version, CUDA driver version (left out where the driver lacks the call) and each GPU's name,
    compute capability, memory and UUID; None whenever NVML cannot start or any of these calls fails.
    Every session that started is shut down, whatever happened inside it."""
    return _in_session(_facts, library)


def gpu_state(library: Optional[Any] = None) -> Optional[list[dict[str, Any]]]:
    """Each GPU's clocks (MHz), power (W) and active clock-event (throttle) reasons, what `verify` reads beside its
    figures; a reading NVML refuses (power on many boards) is None; None when NVML cannot start or count the GPUs."""
    return _in_session(_states, library)


_T = TypeVar("_T")


def _in_session(read: Callable[[Any], _T], library: Optional[Any]) -> Optional[_T]:
    """`read(library)` inside an NVML session, shut down whatever happened; None when it cannot start or `read`
    fails."""
    library = load() if library is None else library
    if library is None:
        return None
    try:
        started = library.nvmlInit_v2() == SUCCESS
    except Exception:  # AttributeError: not an NVML library
        return None
    if not started:
        return None
    try:
        return read(library)
    except Exception:  # NvmlError, a missing entry point, a name that is not UTF-8
        return None
    finally:
        try:
            library.nvmlShutdown()
        except Exception:
            pass


def _call(library: Any, name: str, *args: Any) -> None:
    if getattr(library, name)(*args) != SUCCESS:
        raise NvmlError(name)


def _facts(library: Any) -> dict[str, Any]:
    import ctypes

    class Memory(ctypes.Structure):  # nvmlMemory_t (v1)
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]

    driver = ctypes.create_string_buffer(DRIVER_VERSION_BUFFER_SIZE)
    _call(library, "nvmlSystemGetDriverVersion", driver, ctypes.c_uint(DRIVER_VERSION_BUFFER_SIZE))
    report: dict[str, Any] = {"driver_version": driver.value.decode(), "gpus": []}
    cuda = ctypes.c_int()
    try:
        _call(library, "nvmlSystemGetCudaDriverVersion_v2", ctypes.byref(cuda))
        report["cuda_driver_version"] = int(cuda.value)
    except (AttributeError, NvmlError):  # drivers before it came (or refusing it): the key is left out
        pass
    count = ctypes.c_uint()
    _call(library, "nvmlDeviceGetCount_v2", ctypes.byref(count))
    for index in range(count.value):
        handle = ctypes.c_void_p()  # nvmlDevice_t, an opaque pointer
        _call(library, "nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(handle))
        name = ctypes.create_string_buffer(DEVICE_NAME_BUFFER_SIZE)
        _call(library, "nvmlDeviceGetName", handle, name, ctypes.c_uint(DEVICE_NAME_BUFFER_SIZE))
        major, minor = ctypes.c_int(), ctypes.c_int()
        _call(library, "nvmlDeviceGetCudaComputeCapability", handle, ctypes.byref(major), ctypes.byref(minor))
        memory = Memory()
        _call(library, "nvmlDeviceGetMemoryInfo", handle, ctypes.byref(memory))
        uuid = ctypes.create_string_buffer(DEVICE_UUID_BUFFER_SIZE)
        _call(library, "nvmlDeviceGetUUID", handle, uuid, ctypes.c_uint(DEVICE_UUID_BUFFER_SIZE))
        report["gpus"].append(
            {
                "name": name.value.decode(),
                "compute_capability": f"{major.value}.{minor.value}",
                "memory_total_mib": int(memory.total // _MIB),
                "uuid": uuid.value.decode(),
            }
        )
    return report


CLOCK_SM, CLOCK_MEM = 1, 2  # nvmlClockType_t: NVML_CLOCK_SM, NVML_CLOCK_MEM
# nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*), nvml.h: the bits `verify` names.
THROTTLE_BITS = {
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


def _states(library: Any) -> list[dict[str, Any]]:
    import ctypes

    count = ctypes.c_uint()
    _call(library, "nvmlDeviceGetCount_v2", ctypes.byref(count))
    states = []
    for index in range(count.value):
        handle = ctypes.c_void_p()
        _call(library, "nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(handle))
        name = ctypes.create_string_buffer(DEVICE_NAME_BUFFER_SIZE)
        _call(library, "nvmlDeviceGetName", handle, name, ctypes.c_uint(DEVICE_NAME_BUFFER_SIZE))
        draw, limit = (
            _number(library, "nvmlDeviceGetPowerUsage", handle),
            _number(library, "nvmlDeviceGetEnforcedPowerLimit", handle),
        )
        reasons = _number(library, "nvmlDeviceGetCurrentClocksThrottleReasons", handle, wide=True)
        states.append(
            {
                "name": name.value.decode(),
                "clocks_mhz": {
                    "sm": _number(library, "nvmlDeviceGetClockInfo", handle, CLOCK_SM),
                    "sm_max": _number(library, "nvmlDeviceGetMaxClockInfo", handle, CLOCK_SM),
                    "memory": _number(library, "nvmlDeviceGetClockInfo", handle, CLOCK_MEM),
                },
                "power_w": {
                    "draw": draw / 1000.0 if draw is not None else None,
                    "limit": limit / 1000.0 if limit is not None else None,
                },
                "throttle_reasons": [reason for bit, reason in THROTTLE_BITS.items() if reasons and reasons & bit],
            }
        )
    return states


def _number(library: Any, name: str, handle: Any, *args: int, wide: bool = False) -> Optional[int]:
    """One unsigned answer (milliwatts, MHz, a bit mask), None where the call is missing or refused (not supported)."""
    import ctypes

    value = ctypes.c_ulonglong() if wide else ctypes.c_uint()
    try:
        _call(library, name, handle, *(ctypes.c_int(a) for a in args), ctypes.byref(value))
    except (AttributeError, NvmlError):
        return None
    return int(value.value)
