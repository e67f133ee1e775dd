"""LiveSystem: this computer, behind the System interface.

The only module that calls the OS: files, environment, the Windows registry, external
commands, NVML (its ctypes binding in nvml.py) and child interpreters. Windows-only imports are guarded so the module loads
everywhere; every command runs with a timeout; nothing here raises for a missing tool.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any, BinaryIO, Callable, Collection, ContextManager, Iterator, Mapping, Optional, Sequence

from cudnn_doctor.binaries import BinaryInfo, read_binary
from cudnn_doctor.system import lockfile, nvml, pyenv
from cudnn_doctor.system.child import ChildResult, run_child
from cudnn_doctor.system.interface import (
    NATIVE_DEPTH,
    REG_EXPAND_SZ,
    CommandResult,
    Env,
    FileInfo,
    PassThrough,
    PythonInfo,
    System,
    is_native_name,
    registry_kind,
    skipped_folder,
)
from cudnn_doctor.system.regular import open_regular, read_regular

_ARCH_NAMES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}


def _machine() -> str:
    """platform.machine() without importing platform where os.uname() says the same (every POSIX system)."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform

    return platform.machine()


def _python_version() -> str:
    """platform.python_version(), which is the first word of sys.version ("3.11.7", "3.13.0rc1"), without importing platform."""
    return sys.version.split()[0]


_KIND_NAMES = {1: "REG_SZ", 2: "REG_EXPAND_SZ"}  # winreg.REG_SZ, winreg.REG_EXPAND_SZ (winreg exists only on Windows)
_REGISTRY_KEYS = {
    "user": ("HKEY_CURRENT_USER", r"Environment"),
    "system": ("HKEY_LOCAL_MACHINE", r"SYSTEM\CurrentControlSet\Control\Session Manager\Environment"),
}
_MARKER = "@@cudnn-doctor-report@@"
_MAPPED = "_mapped"  # framework_probe.MAPPED: the loader check its fork answered


def _winreg() -> Any:
    """The winreg module (Windows only; the tests' stand-in on other hosts). Any: mypy checks the code as Linux's
    (pyproject.toml), whose winreg stubs have none of these names."""
    import winreg

    return winreg


class LiveSystem(System):
    """The machine the doctor runs on."""

    live = True

    runs_concurrently = True  # `run` may be called from two threads at once (FolderIndex.prefetch)
    lists_with_scandir = True  # list_dir's paths are os.path.join(folder, name), realpath the OS's (FolderIndex shares listings)

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
        # one bounded pool for the framework and loader-check children of every interpreter: imports at once sum their memory
        self._slots = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))
        self._confirm: dict[tuple[str, str], tuple[str, ...]] = {}  # (interpreter, framework) → names its framework child also loads
        self._mapped: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}  # (interpreter, names) → what its framework child mapped

    def _deadline(self, own: float) -> float:
        return min(own, self.limit) if self.limit is not None else own

    def _child(self, argv: Sequence[str], own_timeout: float, **options: Any) -> ChildResult:
        """Run one child under the run's deadline; remember a program that missed it, and do not start it again."""
        key = os.path.abspath(argv[0])
        if key in self._hung:
            return ChildResult(None, timed_out=True)
        timeout = self._deadline(own_timeout)
        result = run_child(argv, timeout, **options)
        if result.timed_out:
            self._hung[key] = timeout
        return result

    def env(self) -> Env:
        return Env(os.environ, case_insensitive=self.os == "windows")

    def persistent_env(self) -> Optional[dict[str, dict[str, str]]]:
        if self.os != "windows":
            return None
        winreg = _winreg()

        result: dict[str, dict[str, str]] = {}
        for scope, (hive, subkey) in _REGISTRY_KEYS.items():
            values: dict[str, str] = {}
            try:
                with winreg.OpenKey(getattr(winreg, hive), subkey) as key:
                    index = 0
                    while True:
                        try:
                            name, value, _kind = winreg.EnumValue(key, index)
                        except OSError:
                            break
                        if isinstance(value, str):
                            values[name] = value
                        index += 1
            except OSError:
                pass
            result[scope] = values
        return result

    def stat(self, path: str) -> Optional[FileInfo]:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            return None  # a FIFO, socket or device is no library, header or program: the doctor never opens one
        link = None
        if os.path.islink(path):
            try:
                link = os.readlink(path)
            except OSError:
                link = None
        is_dir = os.path.isdir(path)
        readable = os.access(path, os.R_OK)
        return FileInfo(path, is_dir, 0 if is_dir else st.st_size, link, readable)

    def list_dir(self, path: str, sizes: bool = True) -> Optional[list[FileInfo]]:
        try:
            entries = list(os.scandir(path))
        except (OSError, ValueError):
            return None
        listing = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                if not is_dir and not entry.is_file():
                    continue  # FIFOs, sockets, devices, dangling links: nothing the doctor reads
                size = entry.stat().st_size if sizes and not is_dir else 0
            except OSError:
                continue
            link = os.readlink(entry.path) if sizes and entry.is_symlink() else None
            listing.append(FileInfo(entry.path, is_dir, size, link))
        return sorted(listing, key=lambda info: info.path)

    def read_text(self, path: str, limit: int = 1 << 20) -> Optional[str]:
        try:  # `limit` counts characters: read up to 4 bytes each, then cut
            return read_regular(path, 4 * limit).decode("utf-8", errors="replace")[:limit]
        except (OSError, ValueError):
            return None

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def run(self, argv: Sequence[str], timeout: float = 10.0) -> CommandResult:
        program = shutil.which(argv[0])
        if program is None:
            return CommandResult(None, not_found=True)
        try:
            done = self._child([program, *argv[1:]], timeout)
        except OSError:
            return CommandResult(None, not_found=True)
        if done.timed_out:
            return CommandResult(None, timed_out=True)
        return CommandResult(done.returncode, done.stdout, done.stderr)

    def nvml(self) -> Optional[dict[str, Any]]:
        if self._nvml_cache is None:
            self._nvml_cache = (nvml.query(),)  # ctypes: pynvml is a heavy import (docs/speed.md)
        return self._nvml_cache[0]

    def binary(self, path: str) -> Optional[BinaryInfo]:
        if not os.path.isfile(path):
            return None
        real = os.path.realpath(path)
        if real not in self._binaries:
            self._binaries[real] = read_binary(real)
        return self._binaries[real]

    def native_files(self, folder: str, skip: Collection[str] = ()) -> list[str]:
        """As System.native_files, with os.scandir: no FileInfo, no stat of files that are not native."""
        windows = self.os == "windows"
        found: list[str] = []
        pending = [(folder, 0)]
        while pending:
            current, depth = pending.pop()
            try:
                entries = list(os.scandir(current))
            except (OSError, ValueError):
                continue
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if depth < NATIVE_DEPTH and not skipped_folder(entry.name) and not (depth == 0 and entry.name in skip):
                            pending.append((entry.path, depth + 1))
                    elif is_native_name(entry.name, windows) and entry.is_file():
                        found.append(entry.path)
                except OSError:
                    continue
        return sorted(found)

    def cuda_names(self, path: str) -> tuple[str, ...]:
        from cudnn_doctor.system.native_cache import NATIVE_NAMES

        return NATIVE_NAMES.names(path, super().cuda_names)

    def persistent_env_kind(self, scope: str, name: str) -> Optional[str]:
        if self.os != "windows":
            return None
        winreg = _winreg()

        hive, subkey = _REGISTRY_KEYS[scope]
        try:
            with winreg.OpenKey(getattr(winreg, hive), subkey) as key:
                _, kind = winreg.QueryValueEx(key, name)
        except OSError:
            return None
        return _KIND_NAMES.get(kind, str(kind))

    def set_persistent_env(self, scope: str, name: str, value: Optional[str], kind: Optional[str] = None) -> None:
        if self.os != "windows":
            raise NotImplementedError("the persistent environment is a Windows registry feature")
        winreg = _winreg()

        hive, subkey = _REGISTRY_KEYS[scope]
        with winreg.OpenKey(getattr(winreg, hive), subkey, 0, winreg.KEY_READ | winreg.KEY_SET_VALUE) as key:
            if value is None:
                try:
                    winreg.DeleteValue(key, name)
                except FileNotFoundError:
                    pass
                return
            if kind is None:
                try:
                    _, existing = winreg.QueryValueEx(key, name)
                except OSError:
                    existing = None
                kind = registry_kind(name, value, _KIND_NAMES.get(existing) if existing is not None else None)
            winreg.SetValueEx(key, name, 0, winreg.REG_EXPAND_SZ if kind == REG_EXPAND_SZ else winreg.REG_SZ, value)

    def broadcast_environment_change(self) -> None:
        if self.os != "windows" or sys.platform != "win32":  # one question; mypy reads the second (its Windows-only ctypes)
            return
        import ctypes

        result = ctypes.c_size_t()
        HWND_BROADCAST, WM_SETTINGCHANGE, SMTO_ABORTIFHUNG = 0xFFFF, 0x001A, 0x0002
        ctypes.windll.user32.SendMessageTimeoutW(HWND_BROADCAST, WM_SETTINGCHANGE, 0, "Environment", SMTO_ABORTIFHUNG, 5000, ctypes.byref(result))

    def load_report(self, path: str) -> Optional[dict[str, Any]]:
        """Load a cuDNN library in a child process (so a crash cannot take the doctor down) and ask its versions."""

        script = (
            "import ctypes, json, sys\n"
            "try:\n"
            "    lib = ctypes.CDLL(sys.argv[1])\n"
            "    out = {'ok': True, 'cudnn_version': int(lib.cudnnGetVersion())}\n"
            "    try:\n"
            "        out['cudart_version'] = int(lib.cudnnGetCudartVersion())\n"
            "    except AttributeError:\n"
            "        pass\n"
            "except Exception as error:\n"
            "    out = {'ok': False, 'error': '%s: %s' % (type(error).__name__, error)}\n"
            "print(json.dumps(out))\n"
        )
        try:  # a library whose load hangs says nothing about the interpreter: not remembered as hung
            done = run_child([sys.executable, "-c", script, path], self._deadline(60), encoding="utf-8")
            if done.timed_out:
                return {"ok": False, "error": f"loading it took longer than {self._deadline(60):g} s"}
            return _last_line_json(done.stdout) or {"ok": False, "error": "the loading process said nothing usable"}
        except OSError:
            return {"ok": False, "error": "the loading process failed"}

    def mapped_libraries(self, executable: str, names: Sequence[str]) -> Optional[dict[str, Any]]:
        """Ask the real loader: dlopen/LoadLibrary each name in a child of `executable`, then read
        /proc/self/maps (Linux) or the module list (Windows) for the file each name came from."""

        known = self._mapped.get((os.path.abspath(executable), tuple(names)))
        if known is not None:  # the framework child of this interpreter already loaded exactly these names
            return {"loaded": dict(known.get("loaded") or {}), "errors": dict(known.get("errors") or {})}
        source = _script("map_probe.py")
        try:
            with _Place(self._slots) as place:
                done = self._child([executable, "-c", source, *names], 60, encoding="utf-8", ended=place.give_back)
        except OSError:
            return None
        return _last_line_json(done.stdout) if not done.timed_out else None

    def expect_mapped_libraries(self, executable: str, guess: Callable[[System], Mapping[str, Sequence[str]]]) -> None:
        if not hasattr(os, "fork"):  # Windows: the loader check keeps its own child
            return
        try:
            expected = guess(self)
        except Exception:  # a guess only: without it the loader check asks in a child of its own
            return
        for framework, names in expected.items():
            if names:
                self._confirm[(os.path.abspath(executable), framework)] = tuple(names)

    def in_use(self, path: str) -> Optional[list[str]]:
        if self.os != "windows" or not os.path.isfile(path):
            return None
        from cudnn_doctor.system import winfiles

        if not winfiles.sharing_violation(path):
            return None
        return winfiles.holders([path])

    def open_read(self, path: str) -> BinaryIO:
        return open_regular(path)

    def open_write(self, path: str) -> BinaryIO:
        return _DurableFile(path)  # type: ignore[return-value]

    def make_dirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def replace(self, source: str, target: str) -> None:
        os.replace(source, target)

    def remove(self, path: str) -> None:
        os.unlink(path)

    def symlink(self, target: str, path: str) -> None:
        os.symlink(target, path)

    def link_target(self, path: str) -> Optional[str]:
        return os.readlink(path) if os.path.islink(path) else None

    def append(self, path: str, data: bytes) -> None:
        with open(path, "ab") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    def remove_dir(self, path: str) -> bool:
        try:
            os.rmdir(path)
        except OSError:
            return False
        return True

    def free_bytes(self, path: str) -> Optional[int]:
        folder = os.path.abspath(path)
        while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
            folder = os.path.dirname(folder)
        try:
            return shutil.disk_usage(folder).free
        except OSError:
            return None

    def lock(self, path: str) -> ContextManager[None]:
        return lockfile.hold(path)

    def current_python(self) -> Optional[str]:
        return sys.executable or None

    def known_pythons(self) -> list[str]:
        return []

    def python_info(self, executable: str) -> Optional[PythonInfo]:
        exe = Path(executable)
        if not exe.is_file():
            return None
        prefix = pyenv.prefix_of(exe)
        if _same_file(str(prefix), sys.prefix):  # venvs share the interpreter binary: compare environments
            version = _python_version()
            # where it finds distributions: its site folders; under a ._pth file, every folder that file (and `site`) named
            every = pyenv.pth_file(exe) is not None
            folders = [Path(p) for p in sys.path if (every or pyenv.is_site_folder(p)) and os.path.isdir(p)]
        else:
            found = pyenv.version_of(exe, prefix, self._ask)
            if found is None:
                return None
            version = found
            folders = pyenv.search_folders(exe, prefix, version)
        return PythonInfo(executable, version, pyenv.kind_of(prefix, exe), pyenv.distributions(folders))

    def framework_reports(self, executable: str, frameworks: Sequence[str], timeout: float) -> dict[str, dict[str, Any]]:
        if not frameworks:
            return {}
        key = os.path.abspath(executable)
        if key in self._hung:  # it missed a deadline already: every import would too
            return {name: {"error": f"TimeoutError: {executable} did not answer within {self._hung[key]:g} s"} for name in frameworks}
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=len(frameworks)) as pool:
            results = pool.map(lambda name: self._probe_framework(executable, name, self._deadline(timeout)), frameworks)
            return dict(zip(frameworks, results))

    def _ask(self, argv: Sequence[str], timeout: float) -> str:
        """What a child printed; "" when it could not start or missed its deadline."""
        try:
            done = self._child(argv, timeout)
        except OSError:
            return ""
        return "" if done.timed_out else done.stdout

    def _probe_framework(self, executable: str, name: str, timeout: float) -> dict[str, Any]:
        """Import one framework in a child of `executable` and parse its report."""

        source = _script("framework_probe.py")
        key = os.path.abspath(executable)
        names = self._confirm.get((key, name), ())
        confirm = [_script("map_probe.py"), *names] if names else []
        sandbox = tempfile.mkdtemp(prefix="cudnn-doctor-probe-")
        try:
            environment = no_trace_environment(sandbox)
            with _Place(self._slots) as place:
                if key in self._hung:  # it missed a deadline while this import waited for a place in the pool
                    return {"error": f"TimeoutError: {executable} did not answer within {self._hung[key]:g} s"}
                done = self._child([executable, "-c", source, name, *confirm], timeout, cwd=sandbox, env=environment, encoding="utf-8", ended=place.give_back)
        except OSError as error:
            return {"import_error": f"{type(error).__name__}: {error}"}
        finally:  # outside the pool: removing the sandbox delays no other import
            shutil.rmtree(sandbox, ignore_errors=True)
        if done.timed_out:
            return {"error": f"TimeoutError: importing {name} took longer than {timeout:g} s"}
        report = done.report_after(_MARKER, parse=_python_literal)
        mapped = _literal_dict(report.pop(_MAPPED, None)) if report is not None else None
        if names and mapped is not None:
            self._mapped[(key, names)] = mapped
        if report is None:
            message = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            return {"import_error": f"probe failed: {message}", "log": done.stderr[-4000:]}
        if done.stderr.strip():
            report["log"] = done.stderr[-8000:]
        return report

    def run_script(self, executable: str, source: str, args: Sequence[str], timeout: float, progress: Optional[Callable[[str], None]] = None) -> ChildResult:
        sandbox = tempfile.mkdtemp(prefix="cudnn-doctor-run-")
        progress_file = os.path.join(sandbox, "progress.txt")
        environment = {**no_trace_environment(sandbox), "CUDNN_DOCTOR_PROGRESS": progress_file}
        stop = threading.Event()
        watcher = threading.Thread(target=_follow, args=(progress_file, progress, stop), daemon=True) if progress else None
        if watcher:
            watcher.start()
        script = os.path.join(sandbox, "cudnn_doctor_script.py")  # a file, not -c: Windows caps a command line at 32,767 characters
        try:
            with open(script, "w", encoding="utf-8") as handle:
                handle.write(source)
            return self._child([executable, script, *args], timeout, cwd=sandbox, env=environment, encoding="utf-8")
        finally:
            stop.set()
            if watcher:
                watcher.join()
            shutil.rmtree(sandbox, ignore_errors=True)

    def gpu_state(self) -> Optional[list[dict[str, Any]]]:
        return _query_nvml_state() if _nvml_library_loads() else None

    def device_files(self, paths: Sequence[str]) -> tuple[str, ...]:
        found = []
        for path in paths:
            try:
                mode = os.stat(path).st_mode
            except (OSError, ValueError):
                continue
            if stat.S_ISCHR(mode) or stat.S_ISREG(mode):  # only looked at, never opened
                found.append(path)
        return tuple(found)

    def run_shown(self, argv: Sequence[str]) -> CommandResult:
        import subprocess

        try:
            return CommandResult(subprocess.run(list(argv), check=False).returncode)
        except OSError as error:
            return CommandResult(None, stderr=error.strerror or str(error), not_found=True)

    def state_dir(self) -> str:
        from cudnn_doctor.paths import state_dir

        return state_dir()

    def xz_reader(self, path: Path) -> ContextManager[Optional[IO[bytes]]]:
        from cudnn_doctor.system.xz import xz_stream

        return xz_stream(path)

    def run_passthrough(self, argv: Sequence[str], trace_loader: bool, keep: int = 1 << 20) -> PassThrough:
        from cudnn_doctor.system.passthrough import run_passthrough

        return run_passthrough(argv, trace_loader and self.os == "linux", keep)


_SCRIPTS: dict[str, str] = {}


def _script(name: str) -> str:
    """The source of a stand-alone script beside this module, read once per run (one per environment otherwise)."""
    if name not in _SCRIPTS:
        _SCRIPTS[name] = Path(__file__).with_name(name).read_text(encoding="utf-8")
    return _SCRIPTS[name]


def _follow(path: str, callback: Optional[Callable[[str], None]], stop: threading.Event) -> None:
    """Call `callback` with each whole line added to `path` until `stop` is set (then once more, for the last ones)."""
    offset, pending = 0, ""
    while True:
        finished = stop.wait(0.1)
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                handle.seek(offset)
                chunk = handle.read()
                offset = handle.tell()
        except OSError:
            chunk = ""
        pending += chunk
        *lines, pending = pending.split("\n")
        for line in lines:
            if line.strip() and callback is not None:
                callback(line.strip())
        if finished:
            return


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


class _DurableFile:
    """A file opened for writing whose close() also flushes it to the disk (fsync)."""

    def __init__(self, path: str) -> None:
        self._handle = open(path, "wb")  # noqa: SIM115 - closed by close()

    def write(self, data: bytes) -> int:
        return self._handle.write(data)

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()

    def __enter__(self) -> _DurableFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Place:
    """A place in the pool of framework and loader-check children, given back as soon as the child has exited
    (`give_back`, once), not after its leftovers are looked for in /proc and its output is read; after a
    deadline, on leaving the block, once `_child` has noted the hang."""

    def __init__(self, pool: threading.BoundedSemaphore) -> None:
        self._pool, self._held = pool, False

    def __enter__(self) -> _Place:
        self._pool.acquire()
        self._held = True
        return self

    def give_back(self) -> None:
        if self._held:
            self._held = False
            self._pool.release()

    def __exit__(self, *_: object) -> None:
        self.give_back()


def _python_literal(text: str) -> Any:
    """What a framework child printed with repr(): read with ast.literal_eval (never eval); ValueError when it is not one."""
    import ast

    try:
        return ast.literal_eval(text)
    except (SyntaxError, TypeError, MemoryError, RecursionError) as error:
        raise ValueError(f"not a Python literal: {error}") from None


def _literal_dict(text: Any) -> Optional[dict[str, Any]]:
    """The fork's loader-check answer, which the framework child passes on as text; None when it is not a dict."""
    try:
        answer = _python_literal(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def _last_line_json(stdout: str) -> Optional[dict[str, Any]]:
    """The JSON object a probe child prints on its last line; None when it printed anything else."""
    import json

    try:
        report = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return report if isinstance(report, dict) else None


def _is_wsl() -> bool:
    try:
        with open("/proc/sys/kernel/osrelease", encoding="utf-8") as handle:
            return "microsoft" in handle.read().lower()
    except OSError:
        return False


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


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


def no_trace_environment(sandbox: str) -> dict[str, str]:
    """The environment for a framework probe: the user's, with every home and cache folder
    pointed into `sandbox`, so that importing TensorFlow (~/.keras) or ONNX Runtime (~/.cache)
    leaves nothing behind. User site-packages stay visible through PYTHONUSERBASE."""
    env = dict(os.environ)
    if "PYTHONUSERBASE" not in env:
        if sys.platform == "win32":
            env["PYTHONUSERBASE"] = os.path.join(os.environ.get("APPDATA", ""), "Python")
        else:
            env["PYTHONUSERBASE"] = os.path.join(os.path.expanduser("~"), ".local")
    for name, sub in (
        ("HOME", ""),
        ("USERPROFILE", ""),
        ("APPDATA", "AppData/Roaming"),
        ("LOCALAPPDATA", "AppData/Local"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("KERAS_HOME", ".keras"),
        ("MPLCONFIGDIR", ".config/matplotlib"),
        ("TMPDIR", "tmp"),
        ("TEMP", "tmp"),
        ("TMP", "tmp"),
    ):
        env[name] = os.path.join(sandbox, sub) if sub else sandbox
    os.makedirs(os.path.join(sandbox, "tmp"), exist_ok=True)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return env
