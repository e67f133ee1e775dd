"""Native code outside the known frameworks (issue 29): every extension module and library of every
package in every environment that names a CUDA-family library is a root of the process model.

A package's native files (`.so`, `.pyd`, `.dll` below site-packages) are roots when their imports
or run-time loads (fixture `imports` / `loads`; live the headers and the string scan, through
`System.cuda_names`, cached by path, size and mtime) name cuBLAS, cuDNN, the CUDA runtime, NVRTC,
NCCL, TensorRT and the like. Excluded: the packages of frameworks already resolved (their load is
modelled by `resolution._roots`), the CUDA libraries themselves (providers, not consumers: the
nvidia-* wheels, a bundled `libcudart-….so.12`), and files a framework's load already takes.

Each package's roots are resolved as one load by that environment's interpreter
(`Resolution(PROCESS, executable, package=...)`): by path, so on Linux each file's own RUNPATH
($ORIGIN) finds what it imports; on Windows an extension module (`.pyd`) and the DLLs beside it
are loaded as CPython 3.8+ loads extensions (LOAD_LIBRARY_SEARCH_DEFAULT_DIRS |
LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR: their own folder, the application folder, System32 and the
`os.add_dll_directory` folders, never PATH). The folders a package adds with
`os.add_dll_directory` itself are not known yet: its code is not read.
"""

from __future__ import annotations

from typing import Callable, Collection

from cudnn_doctor import knowledge
from cudnn_doctor.binaries.names import is_cuda_family
from cudnn_doctor.facts import PROCESS, PythonEnv, Resolution
from cudnn_doctor.loader import windows
from cudnn_doctor.loader.resolve import Resolver, Root
from cudnn_doctor.probes.cudnn import site_packages
from cudnn_doctor.system.interface import System

# top-level folders that hold the CUDA libraries themselves (the nvidia-* wheels): never roots
_PROVIDER_FOLDERS = frozenset({"nvidia", "tensorrt_libs", "tensorrt_bindings"})


def package_roots(
    system: System, pythons: tuple[PythonEnv, ...], skip: Callable[[PythonEnv], Collection[str]] = lambda python: ()
) -> list[tuple[PythonEnv, str, list[str]]]:
    """(interpreter, package, root files) for every package whose native files name a CUDA-family library,
    each site-packages folder walked once (for the first interpreter that lists it); the top-level
    folders `skip` names for an interpreter are not walked."""
    rules = system.paths
    seen: set[str] = set()
    found = []
    for python in pythons:
        for site in site_packages(system, python):
            key = rules.key(site)
            if key in seen:
                continue
            seen.add(key)
            by_package: dict[str, list[str]] = {}
            for path in system.native_files(site, _PROVIDER_FOLDERS | set(skip(python))):
                if not is_cuda_family(rules.basename(path)) and system.cuda_names(path):
                    top = path[len(site.rstrip("/\\")) :].replace("\\", "/").lstrip("/").split("/", 1)[0]
                    by_package.setdefault(_package_of(top), []).append(path)
            found += [(python, package, paths) for package, paths in sorted(by_package.items())]
    return found


def _package_of(entry: str) -> str:
    """The import name a site-packages entry belongs to: `ctranslate2` for `ctranslate2/`,
    `ctranslate2.libs/` (auditwheel / delvewheel) and `_foo.cpython-311-x86_64-linux-gnu.so` → `_foo`."""
    if entry.endswith(".libs"):
        return entry[: -len(".libs")]
    return entry.split(".", 1)[0] if "." in entry else entry


def probe_package_loads(system: System, resolver: Resolver, pythons: tuple[PythonEnv, ...], resolutions: list[Resolution]) -> tuple[Resolution, ...]:
    """One Resolution per package with native code that names a CUDA-family library, outside the frameworks already resolved."""
    rules = system.paths
    used = {rules.key(s.winner) for r in resolutions for s in r.steps if s.winner}
    rooted = {(r.executable, r.framework) for r in resolutions}
    modules = {framework.name: framework.module.split(".", 1)[0] for framework in knowledge.frameworks()}
    skipped: dict[str, set[str]] = {}
    for executable, name in rooted:
        if name in modules:
            skipped.setdefault(executable, set()).update((modules[name], f"{modules[name]}.libs"))
    found = []
    for python, package, paths in package_roots(system, pythons, lambda python: skipped.get(python.executable, ())):
        paths = [p for p in paths if rules.key(p) not in used]
        if not paths:
            continue
        roots = [Root(p, windows.DEFAULT_DIRS) for p in paths] if rules.windows else [Root(p) for p in paths]
        resolution = resolver.resolve(PROCESS, python.executable, roots)
        found.append(resolution._replace(package=package))
    return tuple(found)
