"""For each framework in each interpreter: the libraries it asks for, resolved as the OS loader would.

Roots by framework (from the knowledge data's loads_cuda):
- frameworks that load CUDA from the system (TensorFlow, PaddlePaddle, ONNX Runtime): the
  CUDA runtime, cuBLAS and cuDNN front library of the CUDA / cuDNN version the build was made for,
  plus ONNX Runtime's CUDA provider library when it is installed. On Windows ONNX Runtime loads
  the provider with LOAD_WITH_ALTERED_SEARCH_PATH (onnxruntime/core/platform/windows/env.cc), so
  the provider's folder is searched first for what it imports — the names above included, when
  its import table lists them; what it loads at run time is searched the standard way;
- PyTorch: `torch/lib/libtorch_cuda.so` on Linux (its RUNPATH reaches the nvidia-* wheels);
  on Windows every DLL in `torch\\lib`, which `torch/__init__.py` preloads with
  `LoadLibraryExW(dll, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)` after
  `os.add_dll_directory` of its DLL folders, falling back to PATH (windows.DEFAULT_DIRS_THEN_PATH).
"""

from __future__ import annotations

from cudnn_doctor.facts import FrameworkBuild, PythonEnv, Resolution, ToolkitFacts
from cudnn_doctor.loader import windows
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.loader.resolve import Resolver, Root
from cudnn_doctor.probes.cudnn import python_prefix, site_packages
from cudnn_doctor.system.interface import System


def probe_resolutions(
    system: System, pythons: tuple[PythonEnv, ...], builds: tuple[FrameworkBuild, ...], toolkits: ToolkitFacts, index: FolderIndex
) -> tuple[Resolution, ...]:
    resolver = None
    rules = system.paths
    # where a root that is not found may still lie: the toolkits' library folders
    elsewhere = [t.bin_dir for t in toolkits.toolkits]
    if not rules.windows:
        elsewhere += [rules.join(t.root, sub) for t in toolkits.toolkits for sub in ("lib64", "lib")]
    resolutions = []
    by_executable = {p.executable: p for p in pythons}
    for build in builds:
        roots, dll_directories = _roots(system, build, by_executable[build.executable])
        if roots:
            resolver = resolver or Resolver(system, index)
            resolutions.append(resolver.resolve(build.name, build.executable, roots, dll_directories, elsewhere))
    return tuple(resolutions)


def _roots(system: System, build: FrameworkBuild, python: PythonEnv) -> tuple[list[Root], list[str]]:
    rules = system.paths
    sites = [s for s in site_packages(system, python) if system.is_dir(s)]
    if build.name == "torch":
        for site in sites:
            lib = rules.join(site, "torch", "lib")
            if rules.windows:
                dlls = [e.path for e in system.list_dir(lib) or [] if e.path.lower().endswith(".dll")]
                return [Root(dll, windows.DEFAULT_DIRS_THEN_PATH) for dll in sorted(dlls)], _torch_dll_paths(system, python, lib)
            cuda = rules.join(lib, "libtorch_cuda.so")
            if system.is_file(cuda):
                return [Root(cuda)], []
        return [], []
    libraries = build.system_libraries
    if libraries is None:
        return [], []
    names = [name for name in (libraries.cudart, libraries.cublas) if name]
    cudnn = [libraries.cudnn] if libraries.cudnn else []
    if build.name != "onnxruntime":
        return [Root(name) for name in names + cudnn], []
    provider_name = "onnxruntime_providers_cuda.dll" if rules.windows else "libonnxruntime_providers_cuda.so"
    providers = [rules.join(site, "onnxruntime", "capi", provider_name) for site in sites]
    providers = [p for p in providers if system.is_file(p)]
    if not rules.windows or not providers:
        return [Root(name) for name in names] + [Root(p) for p in providers] + [Root(name) for name in cudnn], []
    provider = providers[0]
    binary = system.binary(provider)
    imported = {rules.name_key(name) for name in (binary.imports if binary else ())}
    asked = [Root(name, windows.ALTERED, rules.dirname(provider)) if rules.name_key(name) in imported else Root(name) for name in names + cudnn]
    return [*asked[: len(names)], *(Root(p, windows.ALTERED) for p in providers), *asked[len(names) :]], []


def _torch_dll_paths(system: System, python: PythonEnv, lib: str) -> list[str]:
    """The folders torch/__init__.py adds with os.add_dll_directory: torch\\lib, and the
    environment's Library\\bin (conda) and bin when they exist."""
    rules = system.paths
    prefix = python_prefix(system, python.executable)
    return [lib] + [folder for folder in (rules.join(prefix, "Library", "bin"), rules.join(prefix, "bin")) if system.is_dir(folder)]
