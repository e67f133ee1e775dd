"""NVML through ctypes: the driver and GPU facts `check` reads, without importing pynvml (a heavy import: docs/speed.md).

Only the calls LiveSystem.nvml needs, under the entry points, buffer sizes and library paths nvidia-ml-py
(pynvml) uses, so both read the same answers; `verify`'s clocks and power keep pynvml. ctypes is imported
inside the functions: a run on a fixture never loads it.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

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
        return _facts(library)
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
