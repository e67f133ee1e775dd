"""The live system's processes: commands under the run's deadline, the interpreters and their frameworks (one
bounded pool of children), the scripts run in a target interpreter, and the loader check."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from cudnn_doctor.system import pyenv
from cudnn_doctor.system.child import ChildResult, run_child
from cudnn_doctor.system.interface import (
    CHILD_SCRIPTS,
    CommandResult,
    PassThrough,
    PythonInfo,
    System,
)

_MARKER = "@@cudnn-doctor-report@@"

_MAPPED = "_mapped"  # framework_probe.MAPPED: the loader check its fork answered

_SCRIPTS: dict[str, str] = {}


class LiveProcesses(System):
    """Mixed into LiveSystem, which sets these in its __init__."""

    limit: Optional[float]
    _hung: dict[str, float]
    _slots: threading.BoundedSemaphore
    _confirm: dict[tuple[str, str], tuple[str, ...]]
    _mapped: dict[tuple[str, tuple[str, ...]], dict[str, Any]]

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
            # where it finds distributions: its site folders; under a ._pth file, every folder that file (and `site`)
            # named
            every = pyenv.pth_file(exe) is not None
            folders = [Path(p) for p in sys.path if (every or pyenv.is_site_folder(p)) and os.path.isdir(p)]
        else:
            found = pyenv.version_of(exe, prefix, self._ask)
            if found is None:
                return None
            version = found
            folders = pyenv.search_folders(exe, prefix, version)
        return PythonInfo(executable, version, pyenv.kind_of(prefix, exe), pyenv.distributions(folders))

    def framework_reports(
        self, executable: str, frameworks: Sequence[str], timeout: float
    ) -> dict[str, dict[str, Any]]:
        if not frameworks:
            return {}
        key = os.path.abspath(executable)
        if key in self._hung:  # it missed a deadline already: every import would too
            return {
                name: {"error": f"TimeoutError: {executable} did not answer within {self._hung[key]:g} s"}
                for name in frameworks
            }
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=len(frameworks)) as pool:
            results = pool.map(
                lambda name: self._probe_framework(executable, name, self._deadline(timeout)), frameworks
            )
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
                done = self._child(
                    [executable, "-c", source, name, *confirm],
                    timeout,
                    cwd=sandbox,
                    env=environment,
                    encoding="utf-8",
                    ended=place.give_back,
                )
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

    def run_script(
        self,
        executable: str,
        source: str,
        args: Sequence[str],
        timeout: float,
        progress: Optional[Callable[[str], None]] = None,
    ) -> ChildResult:
        sandbox = tempfile.mkdtemp(prefix="cudnn-doctor-run-")
        progress_file = os.path.join(sandbox, "progress.txt")
        environment = {**no_trace_environment(sandbox), "CUDNN_DOCTOR_PROGRESS": progress_file}
        stop = threading.Event()
        watcher = (
            threading.Thread(target=_follow, args=(progress_file, progress, stop), daemon=True) if progress else None
        )
        if watcher:
            watcher.start()
        script = os.path.join(
            sandbox, "cudnn_doctor_script.py"
        )  # a file, not -c: Windows caps a command line at 32,767 characters
        try:
            with open(script, "w", encoding="utf-8") as handle:
                handle.write(source)
            return self._child([executable, script, *args], timeout, cwd=sandbox, env=environment, encoding="utf-8")
        finally:
            stop.set()
            if watcher:
                watcher.join()
            shutil.rmtree(sandbox, ignore_errors=True)

    def run_shown(self, argv: Sequence[str]) -> CommandResult:
        import subprocess

        try:
            return CommandResult(subprocess.run(list(argv), check=False).returncode)
        except OSError as error:
            return CommandResult(None, stderr=error.strerror or str(error), not_found=True)

    def run_passthrough(self, argv: Sequence[str], trace_loader: bool, keep: int = 1 << 20) -> PassThrough:
        from cudnn_doctor.system.passthrough import run_passthrough

        return run_passthrough(argv, trace_loader and self.os == "linux", keep)


def _python_version() -> str:
    """platform.python_version(), which is the first word of sys.version ("3.11.7", "3.13.0rc1"), without importing
    platform."""
    return sys.version.split()[0]


def _script(name: str) -> str:
    """The source of a stand-alone script of system/scripts, read once per run (one per environment otherwise)."""
    if name not in _SCRIPTS:
        _SCRIPTS[name] = (CHILD_SCRIPTS / name).read_text(encoding="utf-8")
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
    """What a framework child printed with repr(): read with ast.literal_eval (never eval); ValueError when it is not
    one."""
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


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


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
