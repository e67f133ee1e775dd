"""Python interpreters on the machine, their distributions, and what each GPU framework reports.

Interpreters are found cheaply (the current one, conda's `envs` folders, CONDA_PREFIX,
VIRTUAL_ENV, the project's `.venv`); distributions come from metadata on disk. Frameworks are
imported only in child processes of each interpreter, all of them at once, each with a timeout.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, TypeVar

from cudnn_doctor import knowledge
from cudnn_doctor.facts import PythonEnv
from cudnn_doctor.system.interface import Files, System
from cudnn_doctor.versions import canonical_name as canonicalize_name

T = TypeVar("T")


def probe_pythons(system: System) -> tuple[PythonEnv, ...]:
    """The interpreters and their distributions (fast: no framework is imported here)."""
    rules = system.paths
    current = system.current_python()
    seen: dict[str, str] = {}
    for candidate in [current, *_discover(system), *system.known_pythons()]:
        if candidate and _environment_key(system, candidate) not in seen:
            seen[_environment_key(system, candidate)] = candidate
    infos = [info for info in _in_parallel(system.python_info, list(seen.values())) if info is not None]
    return tuple(
        PythonEnv(
            executable=info.executable,
            version=info.version,
            kind=info.kind,
            current=current is not None and rules.same(info.executable, current),
            packages={canonicalize_name(k): v for k, v in info.packages.items()},
        )
        for info in infos
    )


def _in_parallel(ask: Callable[[str], T], executables: list[str]) -> list[T]:
    """One answer per interpreter, all asked at once: one that hangs costs one deadline, not one each."""
    if len(executables) < 2:
        return [ask(exe) for exe in executables]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(len(executables), 16)) as pool:
        return list(pool.map(ask, executables))


def probe_frameworks(
    system: System, pythons: tuple[PythonEnv, ...], timeout: float = 60.0, confirm: bool = False
) -> tuple[PythonEnv, ...]:
    """The same interpreters with what each installed GPU framework reports when imported.

    Every interpreter is asked at once; the System runs their children in one pool bounded by the
    CPU count (live), so N environments cost about N / cores imports, and their memory adds up
    for at most that many at a time. With `confirm`, the System is first told which libraries the
    loader check will ask each interpreter to load, so the framework child can answer that too.
    """
    if not pythons:
        return pythons
    from cudnn_doctor.probes.confirm import expected_confirmations, in_pool

    wanted = [_installed_frameworks(python) for python in pythons]

    def ask(index: int) -> dict[str, dict[str, Any]]:
        python = pythons[index]
        if confirm and wanted[index]:
            system.expect_mapped_libraries(python.executable, lambda machine: expected_confirmations(machine, python))
        return system.framework_reports(python.executable, wanted[index], timeout)

    order = slowest_first(wanted)
    reports = dict(zip(order, in_pool(ask, order)))
    return tuple(python._replace(frameworks=reports[index] or {}) for index, python in enumerate(pythons))


# Frameworks whose import loads a compiled core of their own: seconds (torch 2.13, CPU build: 1.5 s on the
# development machine), against a tenth of one for the others (onnxruntime 1.32: 0.14 s; CuPy and ONNX Runtime
# load CUDA when first used, not at import). Only the order of the imports depends on this list, never an answer.
SLOW_IMPORTS = frozenset({"torch", "tensorflow", "paddle", "jax"})


def slowest_first(wanted: list[list[str]]) -> list[int]:
    """The environments' indexes in the order their imports should start: the pool runs CPU-count imports at
    once, and a slow one started last ends the run alone after the others (longest job first). Stable."""
    return sorted(
        range(len(wanted)),
        key=lambda index: (-sum(name in SLOW_IMPORTS for name in wanted[index]), -len(wanted[index])),
    )


def _installed_frameworks(python: PythonEnv) -> list[str]:
    """The GPU frameworks installed in `python`, in the knowledge table's order (its slow imports come first)."""
    return [
        f.name for f in knowledge.frameworks() if set(python.packages) & {canonicalize_name(d) for d in f.distributions}
    ]


def _environment_key(system: Files, executable: str) -> str:
    """One key per environment: `bin/python` and `bin/python3` of a venv are one interpreter."""
    rules = system.paths
    folder = rules.dirname(executable)
    if rules.basename(folder).lower() in ("bin", "scripts"):
        folder = rules.dirname(folder)
    return rules.key(folder)


def _discover(system: System) -> list[str]:
    """Interpreters of conda environments and venvs reachable from the environment variables."""
    rules, env = system.paths, system.env()
    prefixes: list[str] = []
    conda_prefix = env.get("CONDA_PREFIX")
    if conda_prefix:
        prefixes.append(conda_prefix)
        base = conda_prefix
        if rules.basename(rules.dirname(conda_prefix)).lower() == "envs":
            base = rules.dirname(rules.dirname(conda_prefix))
        prefixes.append(base)
        prefixes.extend(e.path for e in system.list_dir(rules.join(base, "envs")) or [] if e.is_dir)
    conda_exe = env.get("CONDA_EXE")
    if conda_exe:
        base = rules.dirname(rules.dirname(conda_exe))
        prefixes.append(base)
        prefixes.extend(e.path for e in system.list_dir(rules.join(base, "envs")) or [] if e.is_dir)
    for variable in ("VIRTUAL_ENV",):
        if env.get(variable):
            prefixes.append(env[variable])
    if env.get("PWD"):
        prefixes.append(rules.join(env["PWD"], ".venv"))
    found = []
    for prefix in prefixes:
        exe = _interpreter_in(system, prefix)
        if exe:
            found.append(exe)
    return found


def _interpreter_in(system: Files, prefix: str) -> Optional[str]:
    rules = system.paths
    names = (("python.exe",), ("Scripts", "python.exe")) if rules.windows else (("bin", "python"), ("bin", "python3"))
    for parts in names:
        candidate = rules.join(prefix, *parts)
        if system.is_file(candidate):
            return candidate
    return None
