"""For each framework in each interpreter: the libraries it asks for, resolved as the OS loader would.

Roots by framework (from the knowledge data's loads_cuda):
- frameworks that load CUDA from the system (TensorFlow, PaddlePaddle, ONNX Runtime): the
  CUDA runtime, cuBLAS and cuDNN front library of the CUDA / cuDNN version the build was made for,
  plus ONNX Runtime's CUDA provider library when it is installed;
- PyTorch: `torch/lib/libtorch_cuda.so` on Linux (its RUNPATH reaches the nvidia-* wheels);
  on Windows every DLL in `torch\\lib`, which `torch/__init__.py` preloads with
  `os.add_dll_directory` in effect.
"""

from __future__ import annotations

from cudnn_doctor.facts import FrameworkBuild, PythonEnv, Resolution, ToolkitFacts
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.loader.resolve import Resolver
from cudnn_doctor.probes.cudnn import site_packages
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


def _roots(system: System, build: FrameworkBuild, python: PythonEnv) -> tuple[list[str], list[str]]:
    rules = system.paths
    sites = [s for s in site_packages(system, python) if system.is_dir(s)]
    if build.name == "torch":
        for site in sites:
            lib = rules.join(site, "torch", "lib")
            if rules.windows:
                dlls = [e.path for e in system.list_dir(lib) or [] if e.path.lower().endswith(".dll")]
                return sorted(dlls), [lib]
            cuda = rules.join(lib, "libtorch_cuda.so")
            if system.is_file(cuda):
                return [cuda], []
        return [], []
    libraries = build.system_libraries
    if libraries is None:
        return [], []
    roots = [name for name in (libraries.cudart, libraries.cublas) if name]
    if build.name == "onnxruntime":
        provider = "onnxruntime_providers_cuda.dll" if rules.windows else "libonnxruntime_providers_cuda.so"
        roots += [rules.join(site, "onnxruntime", "capi", provider) for site in sites if system.is_file(rules.join(site, "onnxruntime", "capi", provider))]
    return roots + ([libraries.cudnn] if libraries.cudnn else []), []
