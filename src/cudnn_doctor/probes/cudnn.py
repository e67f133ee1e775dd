"""Every cuDNN installation on the machine: where, which release, for which CUDA, complete or not.

Looked for in CUDA toolkits (and archive folders copied whole below them), standalone
installs, pip wheels (site-packages/nvidia/cudnn), conda environments, torch/lib, the
system folders, and every PATH / LD_LIBRARY_PATH / loader-cache folder. An installation's
version comes from its own evidence only (`cudnn_versions`), and only then from a live load,
which is answered by whichever sub-library the loader picked.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from cudnn_doctor import knowledge
from cudnn_doctor.facts import (
    LOAD,
    CudnnInstall,
    CudnnLibrary,
    PythonEnv,
    ToolkitFacts,
)
from cudnn_doctor.knowledge.records import LegacyCudnnName
from cudnn_doctor.lazyre import regex
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.paths import site_packages_of
from cudnn_doctor.probes.cudnn_versions import (
    LINUX_NAME,
    Distribution,
    distribution,
    install_version,
    library_version,
    own_header,
)
from cudnn_doctor.probes.ownership import PackageOwnership
from cudnn_doctor.system.interface import FileInfo, Files, System
from cudnn_doctor.versions import cuda_major_of_dll_number, cuda_of_digits, parse_cudnn_version

_WINDOWS_NAME = regex(r"^cudnn(?:_([a-z_]+?))?64_(\d+)\.dll$", re.IGNORECASE)
_CUBLAS = regex(r"(?i)^(?:lib)?cublas(?:Lt)?(?:64_(\d+)\.dll|\.so\.(\d+))")
_CUDA_IN_PATH = regex(r"(?i)(?:[\\/](\d+)\.x(?:[\\/]|$)|_cuda(\d+)[-_]|cudnn-cu(\d+)|[\\/]cu(\d+)[\\/])")
STANDARD_TOOLKIT_FOLDERS = {
    "bin",
    "include",
    "lib",
    "lib64",
    "libnvvp",
    "nvvm",
    "extras",
    "doc",
    "share",
    "src",
    "tools",
    "nsight",
    "compute-sanitizer",
    "targets",
    "nvml",
    "dist-info",
    "pkgconfig",
    "gds",
    "libdevice",
    "crt",
    "cmake",
    "stubs",
}
SYSTEM_DIRS_LINUX = (
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib64",
)


def probe_cudnn(
    system: System, toolkits: ToolkitFacts, pythons: tuple[PythonEnv, ...], index: FolderIndex
) -> tuple[CudnnInstall, ...]:
    rules = system.paths
    folders: dict[str, tuple[str, Optional[str], Optional[str]]] = {}  # key → (folder, toolkit root, nested top)

    def add(folder: str, toolkit: Optional[str] = None, nested: Optional[str] = None) -> None:
        if not folder or not system.is_dir(folder):
            return
        key = rules.key(system.realpath(folder))
        if key not in folders or (toolkit and not folders[key][1]):
            folders[key] = (rules.norm(folder), toolkit, nested)

    for toolkit in toolkits.toolkits:
        for sub in ("bin", "lib64", "lib", rules.join("lib", "x64")):
            add(rules.join(toolkit.root, sub), toolkit.root)
        for entry in system.list_dir(toolkit.root) or []:
            name = rules.basename(entry.path)
            # a link (`cuda/cudnn -> /opt/cudnn-9`) is a shared installation referenced from the toolkit, not a copy
            # nested in it: judged where it lies, if a search path reaches it
            if entry.is_dir and name.lower() not in STANDARD_TOOLKIT_FOLDERS and system.link_target(entry.path) is None:
                for sub in ("bin", "lib64", "lib", rules.join("lib", "x64")):
                    add(rules.join(entry.path, sub), toolkit.root, entry.path)
    for folder in _other_folders(system, pythons, index):
        add(folder)

    owned = PackageOwnership(system, wanted=lambda package: "cudnn" in package)  # only cuDNN's lists are worth reading
    installs = []
    for folder, root, nested in folders.values():
        installs += _installs_in(system, folder, root, nested, owned, index)
    return tuple(installs)


def _other_folders(system: System, pythons: tuple[PythonEnv, ...], index: FolderIndex) -> Iterable[str]:
    rules, env = system.paths, system.env()
    if rules.windows:
        root = env.get("SystemRoot", "C:\\Windows")
        yield rules.join(root, "System32")
        yield rules.join(root, "SysWOW64")
        standalone = rules.join(env.get("ProgramFiles", "C:\\Program Files"), "NVIDIA", "CUDNN")
        for version in system.list_dir(standalone) or []:
            for sub in system.list_dir(rules.join(version.path, "bin")) or []:
                if sub.is_dir:
                    yield sub.path
            yield rules.join(version.path, "bin")
    else:
        yield from SYSTEM_DIRS_LINUX
        yield from {rules.dirname(path) for name, path in index.cache.items() if name.startswith("libcudnn")}
    for python in pythons:
        for site in site_packages(system, python):
            for parts in (("nvidia", "cudnn", "bin"), ("nvidia", "cudnn", "lib"), ("torch", "lib")):
                yield rules.join(site, *parts)
        prefix = python_prefix(system, python.executable)
        yield rules.join(prefix, "Library", "bin") if rules.windows else rules.join(prefix, "lib")
    for variable in ("PATH",) if rules.windows else ("PATH", "LD_LIBRARY_PATH"):
        yield from (e for e in rules.split_list(env.get(variable, "")) if e)


def python_prefix(system: Files, executable: str) -> str:
    rules = system.paths
    folder = rules.dirname(executable)
    return rules.dirname(folder) if rules.basename(folder).lower() in ("bin", "scripts") else folder


def site_packages(system: Files, python: PythonEnv) -> list[str]:
    return site_packages_of(system.paths, python.executable, python.version)


def _installs_in(
    system: System,
    folder: str,
    toolkit: Optional[str],
    nested: Optional[str],
    owned: PackageOwnership,
    index: FolderIndex,
) -> list[CudnnInstall]:
    rules = system.paths
    by_major: dict[int, dict[str, CudnnLibrary]] = {}
    named_for_cuda: dict[int, LegacyCudnnName] = {}  # cuDNN 1-3: the CUDA release their names carry
    pattern = _WINDOWS_NAME if rules.windows else LINUX_NAME
    for name, path in sorted(index.files(folder).items()):
        if "cudnn" not in name.lower():
            continue
        legacy = knowledge.legacy_cudnn_name(rules.basename(path), system.os)
        match = pattern.match(rules.basename(path))
        if legacy is None and (
            not match or (not rules.windows and match.group(3))
        ):  # Linux: one entry per library, under its SONAME
            continue
        if legacy:
            part, major = "", legacy.major
            named_for_cuda[major] = legacy
        elif match:
            part, major = (match.group(1) or "").lower(), int(match.group(2))
        else:  # never: a name that is not legacy matched (above)
            continue
        info: Optional[FileInfo] = system.stat(path)
        if info is None:
            continue
        binary = system.binary(path) if info.readable and info.size > 0 else None
        version, how = library_version(system, path, binary, major)
        real = system.realpath(path)
        real_path = None if rules.same(real, path) else real
        by_major.setdefault(major, {})[part] = CudnnLibrary(
            path=path,
            part=part,
            size=info.size,
            readable=info.readable,
            version=version,
            machine=binary.machine if binary else None,
            version_source=how,
            real_path=real_path,
        )
    installs = []
    for major, libraries in by_major.items():
        release = knowledge.cudnn_release(major)
        expected = ["", *release.parts] if release else [""]
        missing = tuple(p for p in expected if p not in libraries)
        front = libraries.get("")
        system_dir = _is_system_dir(system, folder)
        header, header_version = own_header(system, folder, toolkit, nested, system_dir, major)
        dist = distribution(system, folder, major)
        version, source = install_version(libraries, header_version, dist)
        cuda_major, cuda_source = _cuda_major(system, libraries, dist)
        if (version is None or cuda_major is None) and front and front.readable and front.size > 0:
            load = system.load_report(
                front.path
            )  # last: the live answer comes from whichever sub-library the loader picked
            if version is None and load and load.get("ok") and load.get("cudnn_version"):
                version, source = str(parse_cudnn_version(int(load["cudnn_version"]))), LOAD
            if cuda_major is None and load and load.get("cudart_version"):
                cuda_major, cuda_source = int(load["cudart_version"]) // 1000, "cudnnGetCudartVersion()"
        if cuda_major is None and major in named_for_cuda:
            cuda_major, cuda_source = _cuda_of_legacy_name(named_for_cuda[major], folder)
        elif cuda_major is None:
            cuda_major, cuda_source = _cuda_in_path(folder)
        owner = next((o for o in (owned.owner(p.path) for p in libraries.values()) if o), None) if system_dir else None
        import_libs, headers = _toolkit_dev_files(system, toolkit) if toolkit else ((), ())
        installs.append(
            CudnnInstall(
                folder=folder,
                major=major,
                libraries=tuple(libraries[p] for p in sorted(libraries)),
                missing_parts=missing,
                version=version,
                version_source=source,
                cuda_major=cuda_major,
                cuda_source=cuda_source,
                header=header,
                toolkit=toolkit,
                nested_in=nested,
                system_dir=system_dir,
                package=owner.package if owner else None,
                import_libraries=import_libs,
                headers_in_toolkit=headers,
            )
        )
    return installs


def _cuda_major(
    system: Files, libraries: dict[str, CudnnLibrary], dist: Optional[Distribution]
) -> tuple[Optional[int], Optional[str]]:
    for library in libraries.values():
        binary = system.binary(library.path) if library.readable and library.size > 0 else None
        for name in (*(binary.imports if binary else ()), *(binary.loads if binary else ())):
            match = _CUBLAS.match(name)
            if match:
                major = cuda_major_of_dll_number(match.group(1)) if match.group(1) else int(match.group(2))
                return major, f"{system.paths.basename(library.path)} needs {name}"
    if dist and dist.cuda_major:
        return dist.cuda_major, f"{dist.name} {dist.version}"
    return None, None


def _cuda_of_legacy_name(legacy: LegacyCudnnName, folder: str) -> tuple[Optional[int], Optional[str]]:
    """cuDNN 1-3 carry a CUDA release in their name, yet a build ran with every toolkit of its row's range (cuDNN v2
    "for CUDA 6.5" with CUDA 7.x): the name gives a CUDA major only where that range holds one, else the folder may."""
    majors = legacy.cuda_majors()
    if len(majors) == 1:
        return majors[0], f"its name (cuDNN {legacy.major} and older were named after CUDA {legacy.cuda})"
    cuda_major, source = _cuda_in_path(folder)
    return (cuda_major, source) if cuda_major in majors else (None, None)


def _cuda_in_path(folder: str) -> tuple[Optional[int], Optional[str]]:
    """The weakest evidence: a CUDA major in the folder's name (cuda12 archive, cudnn-cu12 wheel, bin\\12.x)."""
    match = _CUDA_IN_PATH.search(folder)
    cuda = cuda_of_digits(next(g for g in match.groups() if g)) if match else None  # cu118 is CUDA 11.8, never 118
    if cuda is not None:
        return cuda.release[0], "folder name"
    return None, None


def _is_system_dir(system: System, folder: str) -> bool:
    rules = system.paths
    if rules.windows:
        root = system.env().get("SystemRoot", "C:\\Windows")
        return any(rules.same(folder, rules.join(root, sub)) for sub in ("System32", "SysWOW64"))
    return any(rules.same(system.realpath(folder), system.realpath(d)) for d in SYSTEM_DIRS_LINUX)


def _toolkit_dev_files(system: Files, toolkit: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    rules = system.paths
    libs = tuple(
        e.path
        for e in system.list_dir(rules.join(toolkit, "lib", "x64")) or []
        if rules.basename(e.path).lower().startswith("cudnn") and e.path.lower().endswith(".lib")
    )
    headers = tuple(
        e.path
        for e in system.list_dir(rules.join(toolkit, "include")) or []
        if rules.basename(e.path).lower().startswith("cudnn")
    )
    return libs, headers
