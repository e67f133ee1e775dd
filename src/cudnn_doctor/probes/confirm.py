"""Live only: load each framework's root libraries for real and compare with the emulation.

Only roots loaded by name (the CUDA runtime and cuDNN that TensorFlow, PaddlePaddle and ONNX
Runtime ask for) are loaded: they are small front libraries, and loading them in a child of
the framework's interpreter shows exactly which file that process gets. On Windows only names
searched the standard way can be loaded alike; a name ONNX Runtime's provider imports is
searched from the provider's folder (LOAD_WITH_ALTERED_SEARCH_PATH), which a load by name
cannot repeat.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, TypeVar

from cudnn_doctor.facts import Confirmation, PythonEnv
from cudnn_doctor.loader import windows
from cudnn_doctor.loads import LoadStep, Resolution
from cudnn_doctor.system.interface import System

T = TypeVar("T")
WAITERS = 32  # threads waiting on the System's children; the System's own pool bounds how many run at once


def probe_confirmations(system: System, resolutions: tuple[Resolution, ...]) -> tuple[Confirmation, ...]:
    asked = [(resolution, _confirmed_roots(system, resolution)) for resolution in resolutions]
    asked = [(resolution, roots) for resolution, roots in asked if roots]
    answers = in_pool(lambda pair: system.mapped_libraries(pair[0].executable, [s.name for s in pair[1]]), asked)
    confirmations = []
    for (resolution, roots), real in zip(asked, answers):
        if real is None:
            continue
        for step in roots:
            emulated = system.realpath(step.winner) if step.winner else None
            mapped = real.get("loaded", {}).get(step.name)
            confirmations.append(
                Confirmation(
                    executable=resolution.executable,
                    name=step.name,
                    emulated=emulated,
                    real=mapped,
                    error=real.get("errors", {}).get(step.name),
                )
            )
    return tuple(confirmations)


def _confirmed_roots(system: System, resolution: Resolution) -> list[LoadStep]:
    """The roots a load by name can repeat: not a path, searched the standard way."""
    return [
        s
        for s in resolution.steps
        if s.how == "root" and not system.paths.is_abs(s.name) and s.search in (None, windows.STANDARD)
    ]


def expected_confirmations(system: System, python: PythonEnv) -> dict[str, list[str]]:
    """Before its frameworks are imported, the names the loader check will likely ask of `python`, per framework:
    the roots each framework's build would load by name as its files and the tables say (the live report can still
    change them). A wrong guess costs a second child later, never a different answer."""
    from cudnn_doctor.probes.builds import probe_builds
    from cudnn_doctor.probes.resolution import _roots

    rules = system.paths
    expected = {}
    for build in probe_builds((python._replace(frameworks={}),), system.os, system):
        names = [
            root.name
            for root in _roots(system, build, python)[0]
            if not rules.is_abs(root.name) and root.mode in (None, windows.STANDARD)
        ]
        if names:
            expected[build.name] = names
    return expected


def in_pool(ask: Callable[[Any], T], items: Sequence[Any], waiters: int = WAITERS) -> list[Optional[T]]:
    """`ask` of each item, in order, from a few threads at once (each usually waits on a child process)."""
    if len(items) < 2:
        return [ask(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(len(items), waiters)) as pool:
        return list(pool.map(ask, items))
