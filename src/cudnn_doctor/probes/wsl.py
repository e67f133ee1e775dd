"""Under WSL2, Linux NVIDIA driver libraries that would shadow the Windows driver's stubs."""

from __future__ import annotations

from cudnn_doctor.facts import PackageOwner
from cudnn_doctor.probes.ownership import PackageOwnership
from cudnn_doctor.system.interface import Files, System

WSL_DRIVER_DIR = "/usr/lib/wsl/lib"
LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib64",
)


def probe_linux_driver_in_wsl(system: Files) -> tuple[str, ...]:
    if not system.wsl:
        return ()
    found = []
    for folder in LIBRARY_DIRS:
        for entry in system.list_dir(folder) or []:
            name = system.paths.basename(entry.path)
            if name.startswith("libcuda.so") and not entry.is_dir:
                found.append(entry.path)
    return tuple(found)


def probe_linux_driver_packages(system: System, files: tuple[str, ...]) -> tuple[PackageOwner, ...]:
    """The packages that installed those files (a link, such as libcuda.so.1, counts through the file it points to)."""
    ownership = PackageOwnership(
        system, wanted=lambda package: "nvidia" in package or "cuda" in package
    )  # libnvidia-compute-*, Debian's libcuda1
    return tuple(dict.fromkeys(o for o in (ownership.owner(f) for f in files) if o))
