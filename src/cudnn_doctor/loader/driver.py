"""Is the NVIDIA driver visible at all? Its own files, where the loader or a driver install puts them.

The driver's libraries (libcuda.so.1, nvcuda.dll) never come with a framework: when no driver is
visible their absence is "no driver" (no-nvidia-gpu), not a broken dependency. When the driver's
files are seen, a driver name the search cannot find is a real gap (a missing soname link, a
folder the loader cache does not list, a partial driver install). Seen means: a versioned
driver library (never the toolkit's unversioned `stubs/libcuda.so`, nor cuda-compat's copy) in a folder the loader
searches
(default folders, LD_LIBRARY_PATH, the loader cache), in a folder drivers install into, or
/proc/driver/nvidia/version (the kernel module); on Windows nvcuda.dll / nvml.dll in System32.
"""

from __future__ import annotations

import re
from typing import Callable, Iterator

from cudnn_doctor import knowledge
from cudnn_doctor.lazyre import regex
from cudnn_doctor.loader import linux
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.system.interface import System

KERNEL_MODULE = "/proc/driver/nvidia/version"
# Folders drivers put their libraries in besides the default ones, reached through ld.so.conf.d
# (so only when the loader cache lists them): WSL2's Windows-driver libraries, distribution
# driver packages (Debian's nvidia/current, Fedora/RPM Fusion's nvidia), the NVIDIA Container
# Toolkit's and the GPU Operator's mounts.
DRIVER_FOLDERS = (
    "/usr/lib/wsl/lib",
    "/usr/lib/x86_64-linux-gnu/nvidia/current",
    "/usr/lib/aarch64-linux-gnu/nvidia/current",
    "/usr/lib/nvidia",
    "/usr/lib64/nvidia",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/run/nvidia/driver/usr/lib/x86_64-linux-gnu",
    "/run/nvidia/driver/usr/lib64",
)
# The CUDA forward-compatibility package (cuda-compat: /usr/local/cuda-X.Y/compat) ships a newer
# libcuda that works only on top of an installed driver: it is no evidence of one.
_NOT_THE_DRIVER = regex(r"[\\/]compat[\\/][^\\/]+$")


def driver_folders(system: System) -> list[str]:
    """Every folder the driver's libraries may be in: those the loader searches, then the drivers' own."""
    rules = system.paths
    if rules.windows:
        root = system.env().get("SystemRoot") or system.env().get("windir") or "C:\\Windows"
        return [rules.join(root, "System32")]
    folders = [e for e in rules.split_list(system.env().get("LD_LIBRARY_PATH", "")) if e]
    folders += linux.default_dirs(system.arch) + list(DRIVER_FOLDERS)
    return list(dict.fromkeys(rules.norm(f) for f in folders))


def driver_files(system: System, index: FolderIndex) -> tuple[str, ...]:
    """The driver's own files seen on this machine; empty when no driver is visible."""
    files = knowledge.table("libraries").driver_provided.files
    pattern = re.compile(files)
    rules = system.paths
    found: list[str] = []
    name_of = _name_of(rules.windows)
    for folder in driver_folders(system):  # a default folder holds thousands of files: no basename() per file
        found += sorted(
            p for p in index.files(folder).values() if pattern.match(name_of(p)) and not _NOT_THE_DRIVER.search(p)
        )
    for name, path in index.cache.items():
        if pattern.match(name) and not _NOT_THE_DRIVER.search(path) and system.exists(path):
            found.append(path)
    if not rules.windows and system.exists(KERNEL_MODULE):
        found.append(KERNEL_MODULE)
    return tuple(dict.fromkeys(found))


def _name_of(windows: bool) -> Callable[[str], str]:
    """The file name of a path a folder listing gave (folder, separator, name: nothing to normalize), as
    `PathRules.basename` gives it, by slicing."""
    if windows:
        return lambda path: path[max(path.rfind("/"), path.rfind("\\")) + 1 :]
    return lambda path: path[path.rfind("/") + 1 :]


def copies(system: System, index: FolderIndex, name: str) -> Iterator[str]:
    """Files of exactly this name in the driver folders (found or not by the search)."""
    for folder in driver_folders(system):
        path = index.find(folder, name)
        if path is not None:
            yield path
