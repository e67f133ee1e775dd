"""The System seam: everything the doctor may ask of a machine, and nothing more.

Two implementations stand behind it: `LiveSystem` (this computer) and `FixtureSystem` (a
machine-fixture/1 file). Probes and the loader only ever talk to this interface, so a
diagnosis replayed from a fixture takes exactly the code path it takes live.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from pathlib import Path
from typing import IO, Any, BinaryIO, Callable, Collection, ContextManager, Iterator, Mapping, Optional, Sequence

from cudnn_doctor.binaries import BinaryInfo
from cudnn_doctor.paths import PathRules
from cudnn_doctor.record import Record

CHILD_SCRIPTS = Path(__file__).with_name(
    "scripts"
)  # the programs run in a target interpreter: probes, loader check, verify worker


class FileInfo(Record):
    """What `stat` says about one path (after following links)."""

    path: str
    is_dir: bool
    size: int = 0
    link: Optional[str] = None  # the raw link target when `path` itself is a symbolic link
    readable: bool = True


NATIVE_DEPTH = 9  # folders below site-packages that System.native_files walks


def is_native_name(name: str, windows: bool) -> bool:
    """A file name native code goes by: `.pyd` / `.dll` on Windows, `.so` or `.so.N...` elsewhere."""
    lower = name.lower()
    if windows:
        return lower.endswith((".pyd", ".dll"))
    return lower.endswith(".so") or ".so." in lower


def skipped_folder(name: str) -> bool:
    """Folders that hold no code a process loads: bytecode caches and distribution metadata."""
    return name == "__pycache__" or name.endswith((".dist-info", ".egg-info"))


class CommandResult(Record):
    """The outcome of running one external command."""

    returncode: Optional[int]
    stdout: str = ""
    stderr: str = ""
    not_found: bool = False
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.not_found and not self.timed_out


class PythonInfo(Record):
    """An interpreter and the distributions installed in it (read from metadata, never imported)."""

    executable: str
    version: str
    kind: str  # conda | venv | system | embedded
    packages: Mapping[str, str] = {}


class PassThrough(Record):
    """How a user's program ended under `run`: its exit code, the end of its stderr, and the loader's trace per
    process."""

    returncode: int
    stderr_tail: str
    traces: tuple[str, ...] = ()


class Env(Mapping[str, str]):
    """A process environment; names are case-insensitive on Windows."""

    def __init__(self, values: Mapping[str, str], case_insensitive: bool) -> None:
        self._case_insensitive = case_insensitive
        self._values = {self._k(k): (k, v) for k, v in values.items()}

    def _k(self, name: str) -> str:
        return name.upper() if self._case_insensitive else name

    def __getitem__(self, name: str) -> str:
        return self._values[self._k(name)][1]

    def __iter__(self) -> Iterator[str]:
        return (original for original, _ in self._values.values())

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._k(name) in self._values


class Machine(ABC):
    """What every part of the system knows: the OS, the architecture, whether it is WSL, whether it is this computer."""

    os: str
    arch: str
    wsl: bool
    live = False  # this computer, not a machine described by a fixture: only it runs programs and installs for real

    @property
    def paths(self) -> PathRules:
        rules = self.__dict__.get("_path_rules")
        if rules is None or rules.os != self.os:
            rules = self.__dict__["_path_rules"] = PathRules(self.os)
        return rules


class Files(Machine):
    """The machine's files: read (stat, list, text, binaries' headers) and, for install and fix, changed (written whole,
    replaced, removed, locked); the state folder and the archive's decompression."""

    @abstractmethod
    def stat(self, path: str) -> Optional[FileInfo]:
        """The file or folder at `path` (links followed), or None when nothing is there."""

    @abstractmethod
    def list_dir(self, path: str, sizes: bool = True) -> Optional[list[FileInfo]]:
        """The entries of a folder, or None when it is not a folder; `sizes=False` may leave sizes at 0 (faster)."""

    @abstractmethod
    def read_text(self, path: str, limit: int = 1 << 20) -> Optional[str]:
        """The start of a text file, or None when missing or unreadable."""

    @abstractmethod
    def realpath(self, path: str) -> str:
        """`path` with every symbolic link resolved."""

    @abstractmethod
    def binary(self, path: str) -> Optional[BinaryInfo]:
        """The PE/ELF facts of the file at `path` (imports, run-time loads, SONAME, RUNPATH, version, machine)."""

    def native_files(self, folder: str, skip: Collection[str] = ()) -> list[str]:
        """The native code files below `folder` (`.so`, `.so.N`, `.pyd`, `.dll`), walked at most
        NATIVE_DEPTH folders deep, skipping `__pycache__`, distribution metadata folders and the
        folders directly in `folder` named in `skip`."""
        found: list[str] = []
        pending = [(folder, 0)]
        while pending:
            current, depth = pending.pop()
            for entry in self.list_dir(current, sizes=False) or []:
                name = self.paths.basename(entry.path)
                if entry.is_dir:
                    if depth < NATIVE_DEPTH and not skipped_folder(name) and not (depth == 0 and name in skip):
                        pending.append((entry.path, depth + 1))
                elif is_native_name(name, self.paths.windows):
                    found.append(entry.path)
        return sorted(found)

    def cuda_names(self, path: str) -> tuple[str, ...]:
        """The CUDA-family libraries (binaries.names.is_cuda_family) the binary at `path` imports or
        loads by name; () for a file that is no binary or names none. Live, cached by path, size and mtime."""
        info = self.binary(path)
        if info is None or info.format is None:
            return ()
        from cudnn_doctor.binaries.names import cuda_family_names

        return cuda_family_names(info.imports, info.loads)

    @abstractmethod
    def load_report(self, path: str) -> Optional[dict[str, Any]]:
        """Live: load a cuDNN library in a child process and ask its version; fixture: the recorded `load`."""

    @abstractmethod
    def open_read(self, path: str) -> BinaryIO:
        """The bytes of a file."""

    @abstractmethod
    def open_write(self, path: str) -> BinaryIO:
        """A new file (replacing any); its bytes are on disk (fsync) once the handle is closed."""

    @abstractmethod
    def make_dirs(self, path: str) -> None:
        """Create a folder and its parents."""

    @abstractmethod
    def replace(self, source: str, target: str) -> None:
        """Rename `source` over `target` in one step."""

    @abstractmethod
    def remove(self, path: str) -> None:
        """Delete a file or a symbolic link (not what it points to)."""

    @abstractmethod
    def symlink(self, target: str, path: str) -> None:
        """Create `path` as a symbolic link to `target`."""

    @abstractmethod
    def link_target(self, path: str) -> Optional[str]:
        """The raw target when `path` itself is a symbolic link (dangling or not), else None."""

    @abstractmethod
    def append(self, path: str, data: bytes) -> None:
        """Add bytes at the end of a file (creating it); they are on disk (fsync) when this returns. The journal's
        write."""

    @abstractmethod
    def remove_dir(self, path: str) -> bool:
        """Delete an empty folder; False, and nothing changed, when it is not empty or not there."""

    @abstractmethod
    def free_bytes(self, path: str) -> Optional[int]:
        """Free space on the file system that holds `path` (or its nearest existing parent); None when unknown."""

    @abstractmethod
    def lock(self, path: str) -> ContextManager[None]:
        """Hold the exclusive lock file `path` while the block runs; raises `errors.Busy` at once when another process
        holds it."""

    def in_use(self, path: str) -> Optional[list[str]]:
        """Windows: None when no other program holds `path` open or loaded (or nothing is there); else the
        programs that do, as "python.exe (pid 4242)" — an empty list when Windows cannot say which.

        A loaded DLL can be read and even renamed, but not replaced or deleted (Windows says "access
        denied", WinError 5, for a mapped image), so the install asks this before and after a refusal.
        Linux replaces a file in use by renaming over it, safely: None there."""
        return None

    def xz_reader(self, path: Path) -> ContextManager[Optional[IO[bytes]]]:
        """The decompressed bytes of the local .xz file `path`, read beside the hashing and writing (live: `xz -dc` in
        another process); None where no such reader is at hand, and Python's lzma decompresses instead."""
        return contextlib.nullcontext(None)

    def device_files(self, paths: Sequence[str]) -> tuple[str, ...]:
        """The device files among `paths` that exist (/dev/nvidiactl, /dev/nvidia0, /dev/dxg). `stat` answers for files
        and folders only (the doctor never opens a device); a described machine lists its devices as files."""
        return tuple(p for p in paths if self.exists(p))

    def exists(self, path: str) -> bool:
        return self.stat(path) is not None

    def is_file(self, path: str) -> bool:
        info = self.stat(path)
        return info is not None and not info.is_dir

    def is_dir(self, path: str) -> bool:
        info = self.stat(path)
        return info is not None and info.is_dir


class Environment(Machine):
    """This process's environment."""

    @abstractmethod
    def env(self) -> Env:
        """This process's environment."""


class Registry(Machine):
    """The persistent environment new sessions get (on Windows the registry's user and system values)."""

    @abstractmethod
    def persistent_env(self) -> Optional[dict[str, dict[str, str]]]:
        """Windows: `{user: {...}, system: {...}}` from the registry, raw values; else None."""

    def persistent_env_kind(self, scope: str, name: str) -> Optional[str]:
        """Windows: the registry type of a persistent value ("REG_SZ", "REG_EXPAND_SZ"), None when it is absent.

        This default guesses from the value; the live and fixture machines know it."""
        values = (self.persistent_env() or {}).get(scope) or {}
        value = next((v for k, v in values.items() if k.upper() == name.upper()), None)
        return None if value is None else registry_kind(name, value, None)

    @abstractmethod
    def set_persistent_env(self, scope: str, name: str, value: Optional[str], kind: Optional[str] = None) -> None:
        """Windows: write a user or system environment value to the registry as `kind`
        (None: `registry_kind`, so an existing value keeps its type); a value None deletes it."""

    @abstractmethod
    def broadcast_environment_change(self) -> None:
        """Windows: tell running programs (Explorer) that the environment changed (WM_SETTINGCHANGE)."""


class Processes(Machine):
    """Programs on the machine: commands with time limits, interpreters and their frameworks, the scripts run in them,
    a user's program passed through."""

    @abstractmethod
    def run(self, argv: Sequence[str], timeout: float = 10.0) -> CommandResult:
        """Run a program found on PATH; a missing program gives `not_found`, never an exception."""

    @abstractmethod
    def current_python(self) -> Optional[str]:
        """The interpreter the doctor runs in (or was pointed at)."""

    @abstractmethod
    def known_pythons(self) -> list[str]:
        """Interpreters the machine description names beyond those found by searching."""

    @abstractmethod
    def python_info(self, executable: str) -> Optional[PythonInfo]:
        """Version, kind and installed distributions of one interpreter."""

    @abstractmethod
    def framework_reports(
        self, executable: str, frameworks: Sequence[str], timeout: float
    ) -> dict[str, dict[str, Any]]:
        """What each framework reports when imported in `executable` (a subprocess live)."""

    def mapped_libraries(self, executable: str, names: Sequence[str]) -> Optional[dict[str, Any]]:
        """Live: load `names` in a child of `executable` and report the files really mapped; None when unknown
        (fixtures)."""
        return None

    def expect_mapped_libraries(self, executable: str, guess: Callable[[System], Mapping[str, Sequence[str]]]) -> None:
        """Say, before `framework_reports`, which names `mapped_libraries` will likely be asked for `executable`:
        `guess(system)` gives them per framework, read from that system's files. Live, where processes fork, the
        framework child answers them too (one child per interpreter and framework, not two), with the same answer.
        Only a system that uses the guess calls it: a described machine, which runs nothing, does not."""
        return None

    def run_script(
        self,
        executable: str,
        source: str,
        args: Sequence[str],
        timeout: float,
        progress: Optional[Callable[[str], None]] = None,
    ) -> Any:
        """Live: run Python `source` in a child of `executable` (a fresh sandbox folder as its working folder),
        calling `progress` with each line the child appends to the file named by $CUDNN_DOCTOR_PROGRESS;
        returns the child's `ChildResult`. A machine that is only described (a fixture) runs nothing."""
        raise NotImplementedError("a described machine runs no programs: verify needs the live machine")

    def run_worker(
        self,
        executable: str,
        module: str,
        args: Sequence[str],
        timeout: float,
        progress: Optional[Callable[[str], None]] = None,
    ) -> Any:
        """`run_script` of `module`'s `main(sys.argv)`, a module of a package in system/scripts (the verify worker's
        `cudnn_doctor_verify.main`), with that folder first on the child's `sys.path`: the package runs from its
        files."""
        source = f"import sys; sys.path.insert(0, {str(CHILD_SCRIPTS)!r}); from {module} import main; main(sys.argv)"
        return self.run_script(executable, source, args, timeout, progress)

    def run_passthrough(self, argv: Sequence[str], trace_loader: bool, keep: int = 1 << 20) -> PassThrough:
        """Live: run a user's program with this process's stdin and stdout; its stderr is copied through byte for byte
        as it comes, and its last `keep` bytes kept. With `trace_loader` on Linux the dynamic loader's own trace
        (LD_DEBUG=libs,files) goes to private files, returned one per process. Raises OSError when it cannot start."""
        raise NotImplementedError("a described machine runs no programs: run needs the live machine")

    def run_shown(self, argv: Sequence[str]) -> CommandResult:
        """A command the user asked for (an unsafe fix's pip or conda): live, its output shows as it runs and no time
        limit cuts a download short; a described machine answers it as `run` does."""
        return self.run(argv, timeout=3600)

    def is_superuser(self) -> bool:
        """Whether this process may change what only root may (run ldconfig); a described machine says no."""
        return False


class Gpu(Machine):
    """The driver's view of the GPUs (NVML)."""

    @abstractmethod
    def nvml(self) -> Optional[dict[str, Any]]:
        """What NVML reports (driver, CUDA driver version, GPUs), or None when it cannot load."""

    def gpu_state(self) -> Optional[list[dict[str, Any]]]:
        """Live: each GPU's clocks, power and throttle reasons now (NVML), None where they cannot be read."""
        return None


class System(Files, Environment, Registry, Processes, Gpu):
    """A machine as the probes see it: each part of the doctor takes the narrow protocol it needs (the loader `Files`,
    verify's history `Files`, NVML's readers `Gpu`), and the live, fixture and recording systems are all of them."""

    def state_dir(self) -> str:
        """Where the doctor keeps its journal, backups and history on this machine. A described machine keeps them
        inside itself (in memory), where the user's state folder would be."""
        env, rules = self.env(), self.paths
        if rules.windows:
            local = env.get("LOCALAPPDATA") or rules.join(
                env.get("USERPROFILE") or "C:\\Users\\user", "AppData", "Local"
            )
            return rules.join(local, "cudnn-doctor")
        return rules.join(env.get("HOME") or "/root", ".local", "state", "cudnn-doctor")


REG_SZ, REG_EXPAND_SZ = "REG_SZ", "REG_EXPAND_SZ"


def registry_kind(name: str, value: str, existing: Optional[str]) -> str:
    """The type to write: an existing value keeps its own (a REG_SZ Path stays literal); a new `Path`
    is REG_EXPAND_SZ, as Windows' own is, so %VAR% entries added later expand; another new value
    only when it holds a %VAR%."""
    if existing is not None:
        return existing
    return REG_EXPAND_SZ if name.upper() == "PATH" or "%" in value else REG_SZ
