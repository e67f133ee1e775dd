"""For each framework in each interpreter: the libraries it asks for, resolved as the OS loader would.

Roots by framework (from the knowledge data's loads_cuda):
- frameworks that load CUDA from the system (TensorFlow, PaddlePaddle, ONNX Runtime): the
  CUDA runtime, cuBLAS and cuDNN front library of the CUDA / cuDNN version the build was made for,
  plus ONNX Runtime's CUDA provider library when it is installed. On Windows ONNX Runtime loads
  the provider with LOAD_WITH_ALTERED_SEARCH_PATH (onnxruntime/core/platform/windows/env.cc), so
  the provider's folder is searched first for what it imports — the names above included, when
  its import table lists them; what it loads at run time is searched the standard way. Before the
  provider it loads onnxruntime_providers_shared.dll by full path from the same folder;
- PyTorch: `torch/lib/libtorch_cuda.so` on Linux (its RUNPATH reaches the nvidia-* wheels);
  on Windows every DLL in `torch\\lib`, which `torch/__init__.py` preloads with
  `LoadLibraryExW(dll, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)` after
  `os.add_dll_directory` of its DLL folders, falling back to PATH (windows.DEFAULT_DIRS_THEN_PATH).

Then the native code of every other package that names a CUDA-family library (`native.py`), and
every cuDNN installation that no load above uses is resolved as a program started
from here would load it (framework `process`): its front library by path, with its imports and
run-time loads, so a native program, an unknown package or a machine without Python gets the
same judgement of its cuDNN.
"""

from __future__ import annotations

import re
from typing import Optional

from cudnn_doctor import knowledge
from cudnn_doctor.facts import NVIDIA_WHEELS, CudnnInstall, FrameworkBuild, PythonEnv, ToolkitFacts
from cudnn_doctor.loader import windows
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.loader.resolve import Resolver, Root
from cudnn_doctor.loads import PROCESS, Resolution
from cudnn_doctor.probes.builds import wanted_libraries
from cudnn_doctor.probes.cudnn import python_prefix, site_packages
from cudnn_doctor.probes.native import file_names, probe_package_loads
from cudnn_doctor.system.interface import System


def probe_resolutions(
    system: System,
    pythons: tuple[PythonEnv, ...],
    builds: tuple[FrameworkBuild, ...],
    toolkits: ToolkitFacts,
    index: FolderIndex,
    cudnn: tuple[CudnnInstall, ...] = (),
    driver_files: Optional[tuple[str, ...]] = None,
) -> tuple[Resolution, ...]:
    resolver = Resolver(system, index, driver_files)
    rules = system.paths
    # where a root that is not found may still lie: the toolkits' library folders
    elsewhere = [t.bin_dir for t in toolkits.toolkits]
    if not rules.windows:
        elsewhere += [rules.join(t.root, sub) for t in toolkits.toolkits for sub in ("lib64", "lib")]
    resolutions = []
    by_executable = {p.executable: p for p in pythons}
    for build in builds:
        roots, dll_directories = _roots(system, build, by_executable[build.executable])
        # what the framework says it failed to load is resolved too, whether or not a table row knows it
        asked = {rules.name_key(rules.basename(r.name)) for r in roots}
        roots += [Root(f.library) for f in build.load_failures if f.direct and rules.name_key(f.library) not in asked]
        if roots:
            resolutions.append(resolver.resolve(build.name, build.executable, roots, dll_directories, elsewhere))
    packages = probe_package_loads(system, resolver, pythons, resolutions)
    return (
        tuple(resolutions)
        + packages
        + _unused_installations(system, resolver, pythons, cudnn, [*resolutions, *packages])
    )


def _unused_installations(
    system: System,
    resolver: Resolver,
    pythons: tuple[PythonEnv, ...],
    cudnn: tuple[CudnnInstall, ...],
    resolutions: list[Resolution],
) -> tuple[Resolution, ...]:
    """Each cuDNN installation no framework loads but a program started here would: one whose front
    library (or, where it lacks one, any of its libraries) the loader's search finds by name (PATH,
    LD_LIBRARY_PATH, the loader cache), or one
    inside a Python package, which its package loads by path. An installation nothing reaches
    (a folder off every search path) is not loaded by anything and is not judged as a load."""
    rules = system.paths
    used = {rules.key(s.winner) for r in resolutions for s in r.steps if s.winner}
    current = next((p for p in pythons if p.current), pythons[0] if pythons else None)
    executable = current.executable if current else ""
    packages = [site for python in pythons for site in site_packages(system, python)]
    found = []
    for install in cudnn:
        if any(rules.key(library.path) in used for library in install.libraries):
            continue
        fronts = [library.path for library in install.libraries if not library.part]
        if any(rules.inside(install.folder, site) for site in packages):
            found.append(
                resolver.resolve(PROCESS, executable, fronts or [library.path for library in install.libraries])
            )
            continue
        # without its front library (a sub-library copied alone) a program that names one of the others loads that one
        for front in fronts or [library.path for library in install.libraries]:
            if rules.key(front) in used:
                continue
            by_name = resolver.resolve(PROCESS, executable, [rules.basename(front)])
            winner = by_name.steps[0].winner if by_name.steps else None
            if winner and rules.same(system.realpath(rules.dirname(winner)), system.realpath(install.folder)):
                found.append(by_name)
                used.update(rules.key(s.winner) for s in by_name.steps if s.winner)
    return tuple(found)


def _roots(system: System, build: FrameworkBuild, python: PythonEnv) -> tuple[list[Root], list[str]]:
    rules = system.paths
    sites = [s for s in site_packages(system, python) if system.is_dir(s)]
    if build.name == "torch":
        for site in sites:
            lib = rules.join(site, "torch", "lib")
            if rules.windows:
                dlls = [e.path for e in system.list_dir(lib) or [] if e.path.lower().endswith(".dll")]
                return [Root(dll, windows.DEFAULT_DIRS_THEN_PATH) for dll in sorted(dlls)], _torch_dll_paths(
                    system, python, lib
                )
            cuda = rules.join(lib, "libtorch_cuda.so")
            if system.is_file(cuda):
                return [Root(cuda)], []
        return [], []
    libraries = build.system_libraries
    if libraries is None:
        return (wheel_loader_roots(system, build, sites), []) if build.cuda_from == NVIDIA_WHEELS else ([], [])
    names = [name for name in (libraries.cudart, libraries.cublas) if name]
    cudnn = [libraries.cudnn] if libraries.cudnn else []
    if build.name != "onnxruntime":
        return [Root(name) for name in names + cudnn], []
    provider_name = ORT_PROVIDER_DLL if rules.windows else "libonnxruntime_providers_cuda.so"
    providers = [rules.join(site, "onnxruntime", "capi", provider_name) for site in sites]
    providers = [p for p in providers if system.is_file(p)]
    if not rules.windows or not providers:
        return [Root(name) for name in names] + [Root(p) for p in providers] + [Root(name) for name in cudnn], []
    provider = providers[0]
    binary = system.binary(provider)
    imported = {rules.name_key(name) for name in (binary.imports if binary else ())}
    asked = [
        Root(name, windows.ALTERED, rules.dirname(provider)) if rules.name_key(name) in imported else Root(name)
        for name in names + cudnn
    ]
    return [*asked[: len(names)], *onnxruntime_provider_roots(system, provider), *asked[len(names) :]], []


def wheel_loader_roots(system: System, build: FrameworkBuild, sites: list[str]) -> list[Root]:
    """How a framework that takes CUDA from pip nvidia-* wheels (TensorFlow's [and-cuda], JAX's plugin, CuPy's [ctk])
    reaches
    them, read from its own files: its loader binary (the native file of its packages that names a CUDA library and
    whose RUNPATH names an `nvidia` folder) loads the runtime, cuBLAS and cuDNN of its build by name, so that RUNPATH,
    LD_LIBRARY_PATH and the system folders are what is searched. TensorFlow 2.16.1's libtensorflow_framework.so.2
    reaches only nvidia/cuda_runtime/lib that way, 2.17.0's every wheel (tensorflow/tensorflow#63362).

    No roots (no judgement) where the files do not say how: no such loader binary, or package code that
    preloads the wheels itself (`ctypes` loads of an `nvidia` path in an `__init__.py`), which is not emulated."""
    rules = system.paths
    wanted = wanted_libraries(build.cuda, build.cudnn, "windows" if rules.windows else "linux")
    names = tuple(n for n in (wanted.cudart, wanted.cublas, wanted.cudnn) if n)
    framework = knowledge.framework(build.name)
    if not names or framework is None:
        return []
    packages = dict.fromkeys([framework.module.split(".", 1)[0], *framework.native_packages])
    for site in sites:
        folders = [rules.join(site, package) for package in packages if system.is_dir(rules.join(site, package))]
        if any(_preloads_wheels(system, folder) for folder in folders):
            return []
        candidates = [
            path for folder in folders for path in system.native_files(folder) if _reaches_wheels(system, path)
        ]
        if candidates:
            return [Root(_lowest(system, candidates), loads=names)]
    return []


def _lowest(system: System, candidates: list[str]) -> str:
    """The binary the others are built on: the platform layer that makes a framework's dlopen calls sits at the bottom.
    TensorFlow 2.16.1's libtensorflow_cc.so.2 reaches every nvidia wheel through its RUNPATH, but it imports
    libtensorflow_framework.so.2, whose dso_loader makes the calls (and prints "Cannot dlopen some GPU libraries")."""
    rules = system.paths
    every = {path: file_names(system, path) for path in candidates}
    others = {path: set().union(*(n for p, n in every.items() if p != path)) for path in candidates}

    def imports_another(path: str) -> bool:
        binary = system.binary(path)
        return binary is not None and any(rules.name_key(name) in others[path] for name in binary.imports)

    return next((path for path in candidates if not imports_another(path)), candidates[0])


def _reaches_wheels(system: System, path: str) -> bool:
    """A framework binary that names a CUDA library or the driver (TensorFlow's names only libcuda.so.1: it builds the
    other names at run time) and searches an `nvidia/…` folder through its RUNPATH (or RPATH)."""
    binary = system.binary(path)
    if binary is None or not any(
        "/nvidia/" in f"/{entry}/".replace("\\", "/") for entry in (*binary.runpath, *binary.rpath)
    ):
        return False
    driver = re.compile(knowledge.table("libraries").driver_provided.pattern)
    return bool(system.cuda_names(path)) or any(driver.match(name) for name in (*binary.imports, *binary.loads))


_PRELOAD_CALLS = ("CDLL(", "cdll.LoadLibrary", "LoadLibrary(", "dlopen(")


def _preloads_wheels(system: System, folder: str) -> bool:
    """The package's own `__init__.py` files (its folder and one level down, where plugins live) load libraries from an
    `nvidia` folder with ctypes: the process then has them whatever the binaries' search paths say."""
    rules = system.paths
    inits = [rules.join(folder, "__init__.py")]
    inits += [rules.join(entry.path, "__init__.py") for entry in system.list_dir(folder) or [] if entry.is_dir]
    for init in inits:
        text = system.read_text(init, 256 * 1024) if system.is_file(init) else None
        if text and "nvidia" in text and any(call in text for call in _PRELOAD_CALLS):
            return True
    return False


ORT_PROVIDER_DLL = "onnxruntime_providers_cuda.dll"
ORT_SHARED_DLL = "onnxruntime_providers_shared.dll"


def onnxruntime_provider_roots(system: System, provider: str) -> list[Root]:
    """How ONNX Runtime loads its CUDA provider on Windows: first onnxruntime_providers_shared.dll by
    full path from the same folder (ProviderSharedLibrary::Ensure, onnxruntime/core/session/provider_bridge_ort.cc),
    then the provider, both with LOAD_WITH_ALTERED_SEARCH_PATH; the provider's import of the shared
    library then reuses the module already loaded."""
    rules = system.paths
    shared = rules.join(rules.dirname(provider), ORT_SHARED_DLL)
    preload = [Root(shared, windows.ALTERED)] if system.is_file(shared) else []
    return [*preload, Root(provider, windows.ALTERED)]


def _torch_dll_paths(system: System, python: PythonEnv, lib: str) -> list[str]:
    """The folders torch/__init__.py adds with os.add_dll_directory: torch\\lib, and the
    environment's Library\\bin (conda) and bin when they exist."""
    rules = system.paths
    prefix = python_prefix(system, python.executable)
    return [lib] + [
        folder for folder in (rules.join(prefix, "Library", "bin"), rules.join(prefix, "bin")) if system.is_dir(folder)
    ]
