"""LiveSystem: this computer, behind the System interface.

The only code that calls the OS, with its parts each in a module: files (live_files), the Windows registry
(live_registry), commands, interpreters and their frameworks (live_processes), NVML (live_gpu, through its ctypes
binding in nvml.py); this class adds the environment and where the doctor keeps its state. Windows-only imports are
guarded so every part loads everywhere; every command runs with a timeout; nothing here raises for a missing tool.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import IO, Any, ContextManager, Optional

from cudnn_doctor.binaries import BinaryInfo
from cudnn_doctor.system.interface import Env
from cudnn_doctor.system.live_files import LiveFiles
from cudnn_doctor.system.live_gpu import LiveGpu
from cudnn_doctor.system.live_processes import LiveProcesses
from cudnn_doctor.system.live_registry import LiveRegistry

_ARCH_NAMES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}


def _machine() -> str:
    """platform.machine() without importing platform where os.uname() says the same (every POSIX system)."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform

    return platform.machine()


def _is_wsl() -> bool:
    try:
        with open("/proc/sys/kernel/osrelease", encoding="utf-8") as handle:
            return "microsoft" in handle.read().lower()
    except OSError:
        return False


class LiveSystem(LiveFiles, LiveRegistry, LiveProcesses, LiveGpu):
    """The machine the doctor runs on."""

    live = True

    runs_concurrently = True  # `run` may be called from two threads at once (FolderIndex.prefetch)
    # list_dir's paths are os.path.join(folder, name), realpath the OS's (FolderIndex shares listings)
    lists_with_scandir = True

    def __init__(self, limit: Optional[float] = None) -> None:
        """`limit`: seconds any one child process may take (`--framework-timeout`), below each call's own timeout."""
        self.os = "windows" if sys.platform == "win32" else "linux"
        machine = _machine().lower()
        self.arch = _ARCH_NAMES.get(machine, machine)
        self.wsl = self.os == "linux" and _is_wsl()
        self._nvml_cache: Optional[tuple[Optional[dict[str, Any]]]] = None
        self._binaries: dict[str, BinaryInfo] = {}
        self.limit = limit
        self._hung: dict[str, float] = {}  # program or interpreter → the deadline it missed: never asked again this run
        # one bounded pool for the framework and loader-check children of every interpreter: imports at once sum their
        # memory
        self._slots = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))
        self._confirm: dict[
            tuple[str, str], tuple[str, ...]
        ] = {}  # (interpreter, framework) → names its framework child also loads
        self._mapped: dict[
            tuple[str, tuple[str, ...]], dict[str, Any]
        ] = {}  # (interpreter, names) → what its framework child mapped

    def env(self) -> Env:
        return Env(os.environ, case_insensitive=self.os == "windows")

    def is_superuser(self) -> bool:
        return hasattr(os, "geteuid") and os.geteuid() == 0

    def state_dir(self) -> str:
        from cudnn_doctor.system.state_files import state_dir

        return state_dir()

    def xz_reader(self, path: Path) -> ContextManager[Optional[IO[bytes]]]:
        from cudnn_doctor.system.xz import xz_stream

        return xz_stream(path)
