"""The driver's state on Linux: the kernel module's release against the libraries', and a container's GPU access.

A driver upgrade replaces the user-space libraries (libcuda.so.X.Y.Z, libnvidia-ml.so.X.Y.Z) at once, but
the running kernel keeps the old module until a reboot: NVML then refuses to start ("Driver/library
version mismatch"). The module's release is in /proc/driver/nvidia/version; the libraries' in the real
names their soname links lead to. A container sees the host's /proc, but the driver's libraries and the
/dev/nvidia* devices only when it was started with the GPU (the NVIDIA Container Toolkit mounts them).
"""

from __future__ import annotations

from typing import Optional, Sequence

from cudnn_doctor.facts import DriverFacts, DriverLibrary, DriverState
from cudnn_doctor.lazyre import regex
from cudnn_doctor.loader.driver import KERNEL_MODULE
from cudnn_doctor.system.interface import Files, System

# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Release Build ..." and the open modules'
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build ...".
_MODULE = regex(r"Kernel Module\b.*?\s(\d{2,4}\.\d+(?:\.\d+)?)\s")
# The libraries whose release must be the module's: a driver's files are named after its release.
_VERSIONED = regex(r"^lib(?:cuda|nvidia-ml)\.so\.(\d{3,4}\.\d+(?:\.\d+)?)$")
_SONAMES = ("libcuda.so.1", "libnvidia-ml.so.1")
_MISMATCH = regex(r"(?i)driver/library version mismatch")
_NVML_LIBRARY = regex(r"NVML library version:\s*(\d+(?:\.\d+)+)")
# Where container engines say so: Docker, Podman (and Buildah, CRI-O), the variable systemd-nspawn, LXC and Podman set.
CONTAINER_FILES = ("/.dockerenv", "/run/.containerenv")
CGROUP = "/proc/1/cgroup"
_CGROUP_ENGINE = regex(r"(?m)(/docker[/-]|/kubepods|/containerd|/libpod|/lxc/|/crio-)")
# The device files a container given the GPU has: the control device, the first GPU, unified memory; WSL2's /dev/dxg.
DEVICES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm", "/dev/dxg")


def probe_driver_state(system: System, driver: DriverFacts, driver_files: Sequence[str]) -> DriverState:
    if system.paths.windows:
        return DriverState()
    module = _module_release(system.read_text(KERNEL_MODULE, 4096)) if KERNEL_MODULE in driver_files else None
    said, nvml_library = _nvml_words(driver.smi_error)
    container = _container(system)
    devices = system.device_files(DEVICES) if container else ()
    return DriverState(
        kernel_module=module,
        libraries=_libraries(system, driver_files),
        nvml_mismatch=said,
        nvml_library=nvml_library,
        container=container,
        devices=devices,
    )


def _module_release(text: Optional[str]) -> Optional[str]:
    found = _MODULE.search(text or "")
    return found.group(1) if found else None


def _libraries(system: Files, driver_files: Sequence[str]) -> tuple[DriverLibrary, ...]:
    """libcuda / libnvidia-ml as the loader takes them: each soname link followed to its real, versioned file;
    a versioned file without a link is taken as it is (no link: the loader takes none of them, yet they are the
    install's)."""
    rules = system.paths
    found: dict[str, DriverLibrary] = {}
    linked = [f for f in driver_files if rules.basename(f) in _SONAMES]
    for path in linked or [f for f in driver_files if _VERSIONED.match(rules.basename(f))]:
        real = system.realpath(path)
        version = _VERSIONED.match(rules.basename(real))
        if version:
            found.setdefault(real, DriverLibrary(real, version.group(1)))
    return tuple(found.values())


def _nvml_words(smi_error: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """NVML's "Driver/library version mismatch" as nvidia-smi printed it, and the NVML library version it names."""
    if not smi_error or not _MISMATCH.search(smi_error):
        return None, None
    line = next(line.strip() for line in smi_error.splitlines() if _MISMATCH.search(line))
    library = _NVML_LIBRARY.search(smi_error)
    return line.removeprefix("nvidia-smi: "), library.group(1) if library else None


def _container(system: System) -> Optional[str]:
    for path in CONTAINER_FILES:
        if system.exists(path):
            return path
    engine = system.env().get("container")
    if engine:
        return f"container={engine}"
    if system.env().get("KUBERNETES_SERVICE_HOST"):
        return "KUBERNETES_SERVICE_HOST"
    found = _CGROUP_ENGINE.search(system.read_text(CGROUP, 8192) or "")
    return f"{CGROUP} ({found.group(1).strip('/-')})" if found else None
