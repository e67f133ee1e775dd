"""Every cuDNN installation on the machine: where, which release, for which CUDA, complete or not.

Looked for in CUDA toolkits (and archive folders copied whole below them), standalone
installs, pip wheels (site-packages/nvidia/cudnn), conda environments, torch/lib, the
system folders, and every PATH / LD_LIBRARY_PATH / loader-cache folder. An installation's
version comes from its own evidence only, in this order: its own header, its wheel's dist-info
METADATA, the full-release names its front library asks for, the PE FileVersion or `.so.X.Y.Z`
name, and only then a live load (answered by whichever sub-library the loader picked). Another
installation's header is never borrowed: a wheel without one does not take the system's.
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple, Optional

from cudnn_doctor import knowledge
from cudnn_doctor.facts import (
    ASKED_NAMES,
    DIST_INFO,
    FILE_NAME,
    FILE_VERSION,
    HEADER,
    LOAD,
    CudnnInstall,
    CudnnLibrary,
    PythonEnv,
    ToolkitFacts,
)
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.system.interface import FileInfo, System
from cudnn_doctor.versions import cuda_major_of_dll_number, cudnn_header_version, parse_cudnn_version

_WINDOWS_NAME = re.compile(r"^cudnn(?:_([a-z_]+?))?64_(\d+)\.dll$", re.IGNORECASE)
_LINUX_NAME = re.compile(r"^libcudnn(?:_([a-z_]+))?\.so\.(\d+)((?:\.\d+)*)$")
_CUBLAS = re.compile(r"(?i)^(?:lib)?cublas(?:Lt)?(?:64_(\d+)\.dll|\.so\.(\d+))")
_ASKED = re.compile(r"^libcudnn_[a-z_]+\.so\.(\d+)\.(\d+)\.(\d+)$")  # libcudnn_graph.so.9.28.1
_DIST_INFO = re.compile(r"(?i)^nvidia_cudnn_cu(\d+)-([^-]+)\.dist-info$")
_CUDA_IN_PATH = re.compile(r"(?i)(?:[\\/](\d+)\.x(?:[\\/]|$)|_cuda(\d+)[-_]|cudnn-cu(\d+)|[\\/]cu(\d+)[\\/])")
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
SYSTEM_DIRS_LINUX = ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib64")


def probe_cudnn(system: System, toolkits: ToolkitFacts, pythons: tuple[PythonEnv, ...], index: FolderIndex) -> tuple[CudnnInstall, ...]:
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
            if entry.is_dir and name.lower() not in STANDARD_TOOLKIT_FOLDERS:
                for sub in ("bin", "lib64", "lib", rules.join("lib", "x64")):
                    add(rules.join(entry.path, sub), toolkit.root, entry.path)
    for folder in _other_folders(system, pythons, index):
        add(folder)

    owned = _LazyOwnership(system)
    installs = []
    for folder, toolkit, nested in folders.values():
        installs += _installs_in(system, folder, toolkit, nested, owned, index)
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
            for sub in (("nvidia", "cudnn", "bin"), ("nvidia", "cudnn", "lib"), ("torch", "lib")):
                yield rules.join(site, *sub)
        prefix = python_prefix(system, python.executable)
        yield rules.join(prefix, "Library", "bin") if rules.windows else rules.join(prefix, "lib")
    for variable in ("PATH",) if rules.windows else ("PATH", "LD_LIBRARY_PATH"):
        yield from (e for e in rules.split_list(env.get(variable, "")) if e)


def python_prefix(system: System, executable: str) -> str:
    rules = system.paths
    folder = rules.dirname(executable)
    return rules.dirname(folder) if rules.basename(folder).lower() in ("bin", "scripts") else folder


def site_packages(system: System, python: PythonEnv) -> list[str]:
    rules = system.paths
    prefix = python_prefix(system, python.executable)
    if rules.windows:
        return [rules.join(prefix, "Lib", "site-packages")]
    major_minor = ".".join(python.version.split(".")[:2])
    return [rules.join(prefix, "lib", f"python{major_minor}", name) for name in ("site-packages", "dist-packages")]


class _LazyOwnership:
    """The package manager's file lists, read only when a cuDNN is found in a system folder."""

    def __init__(self, system: System) -> None:
        self.system = system
        self._owned: Optional[dict[str, str]] = None

    def get(self, path: str) -> Optional[str]:
        if self._owned is None:
            self._owned = _package_owned(self.system)
        return self._owned.get(path)


def _package_owned(system: System) -> dict[str, str]:
    """Linux: path → package, for the cuDNN files a package manager (dpkg) installed."""
    if system.paths.windows:
        return {}
    owned = {}
    for entry in system.list_dir("/var/lib/dpkg/info", sizes=False) or []:
        name = system.paths.basename(entry.path)
        if "cudnn" in name and name.endswith(".list"):
            for line in (system.read_text(entry.path) or "").splitlines():
                owned[line.strip()] = name[: -len(".list")]
    return owned


def _installs_in(system: System, folder: str, toolkit: Optional[str], nested: Optional[str], owned: _LazyOwnership, index: FolderIndex) -> list[CudnnInstall]:
    rules = system.paths
    by_major: dict[int, dict[str, CudnnLibrary]] = {}
    pattern = _WINDOWS_NAME if rules.windows else _LINUX_NAME
    for name, path in sorted(index.files(folder).items()):
        if "cudnn" not in name.lower():
            continue
        match = pattern.match(rules.basename(path))
        if not match or (not rules.windows and match.group(3)):  # Linux: one entry per library, under its SONAME
            continue
        part, major = (match.group(1) or "").lower(), int(match.group(2))
        info: Optional[FileInfo] = system.stat(path)
        if info is None:
            continue
        binary = system.binary(path) if info.readable and info.size > 0 else None
        version, how = _file_version(system, path, binary, major)
        by_major.setdefault(major, {})[part] = CudnnLibrary(path, part, info.size, info.readable, version, binary.machine if binary else None, how)
    installs = []
    for major, libraries in by_major.items():
        release = knowledge.cudnn_release(major)
        expected = ["", *release.parts] if release else [""]
        missing = tuple(p for p in expected if p not in libraries)
        front = libraries.get("")
        system_dir = _is_system_dir(system, folder)
        header, header_version = _header(system, folder, toolkit, nested, system_dir, major)
        wheel = _wheel(system, folder, major)
        version, source = _install_version(libraries, header_version, wheel)
        cuda_major, cuda_source = _cuda_major(system, libraries, wheel)
        if (version is None or cuda_major is None) and front and front.readable and front.size > 0:
            load = system.load_report(front.path)  # last: the live answer comes from whichever sub-library the loader picked
            if version is None and load and load.get("ok") and load.get("cudnn_version"):
                version, source = str(parse_cudnn_version(int(load["cudnn_version"]))), LOAD
            if cuda_major is None and load and load.get("cudart_version"):
                cuda_major, cuda_source = int(load["cudart_version"]) // 1000, "cudnnGetCudartVersion()"
        if cuda_major is None:
            cuda_major, cuda_source = _cuda_in_path(folder)
        package = next((owned.get(p.path) for p in libraries.values() if system_dir and owned.get(p.path)), None)
        import_libs, headers = _toolkit_dev_files(system, toolkit) if toolkit else ((), ())
        installs.append(
            CudnnInstall(
                folder,
                major,
                tuple(libraries[p] for p in sorted(libraries)),
                missing,
                version,
                source,
                cuda_major,
                cuda_source,
                header,
                toolkit,
                nested,
                system_dir,
                package,
                import_libs,
                headers,
            )
        )
    return installs


def _file_version(system: System, path: str, binary, major: int) -> tuple[Optional[str], Optional[str]]:
    """The library's own version and how it is known: the full-release names it asks its
    sub-libraries for (a cuDNN 9 front), its PE FileVersion (cuDNN <= 7 carries a CUDA-style one:
    ignored), or its real `.so.X.Y.Z` name."""
    asked = {m.groups() for m in (_ASKED.match(n) for n in (binary.loads if binary else ())) if m and int(m.group(1)) == major}
    if len(asked) == 1:
        return ".".join(asked.pop()), ASKED_NAMES
    if binary is not None and binary.version and not binary.version.startswith("6.14."):
        return binary.version, FILE_VERSION
    if not system.paths.windows:
        real = system.paths.basename(system.realpath(path))
        match = _LINUX_NAME.match(real)
        if match and match.group(3):
            return f"{match.group(2)}{match.group(3)}", FILE_NAME
    return None, None


def _header(system: System, folder: str, toolkit: Optional[str], nested: Optional[str], system_dir: bool, major: int) -> tuple[Optional[str], Optional[str]]:
    """The installation's own header: beside its libraries, in the toolkit it was copied into
    (not for an archive left nested below it), or the system include folders for a system-folder
    install. Never another installation's: a wheel without a header does not take the system one's."""
    rules = system.paths
    parent = rules.dirname(folder)
    if rules.basename(folder).lower() == "x64":
        parent = rules.dirname(parent)
    includes = [rules.join(parent, "include")]
    if rules.basename(rules.dirname(folder)).lower() == "bin":  # standalone cuDNN 9: bin\12.x
        includes.append(rules.join(rules.dirname(parent), "include", rules.basename(folder)))
    if toolkit and not nested:
        includes.append(rules.join(toolkit, "include"))
    if system_dir and not rules.windows:
        includes += ["/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu", "/usr/include"]
    for include in includes:
        for name in (f"cudnn_version_v{major}.h", "cudnn_version.h", f"cudnn_v{major}.h", "cudnn.h"):
            path = rules.join(include, name)
            text = system.read_text(path, limit=64 * 1024)
            if not text:
                continue
            version = cudnn_header_version(text)
            if version is not None and int(version.split(".")[0]) == major:
                return path, version
    return None, None


class _Wheel(NamedTuple):
    """The nvidia-cudnn-cuXX distribution whose files a site-packages/nvidia/cudnn folder holds."""

    name: str
    version: str
    cuda_major: int


def _wheel(system: System, folder: str, major: int) -> Optional[_Wheel]:
    """The dist-info of nvidia-cudnn-cu11/12/13 in the same site-packages, when exactly one release of this major is there."""
    rules = system.paths
    package = rules.dirname(folder)
    if rules.basename(package).lower() != "cudnn" or rules.basename(rules.dirname(package)).lower() != "nvidia":
        return None
    site = rules.dirname(rules.dirname(package))
    found = set()
    for entry in system.list_dir(site, sizes=False) or []:
        match = _DIST_INFO.match(rules.basename(entry.path))
        if not match or not entry.is_dir:
            continue
        text = system.read_text(rules.join(entry.path, "METADATA"), limit=16 * 1024) or ""
        version = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.lower().startswith("version:")), None)
        parsed = parse_cudnn_version(version) if version else None
        if parsed is not None and parsed.release[0] == major:
            found.add(_Wheel(f"nvidia-cudnn-cu{match.group(1)}", version, int(match.group(1))))
    return found.pop() if len(found) == 1 else None  # two releases over one folder: the files say which won


def _install_version(libraries: dict[str, CudnnLibrary], header: Optional[str], wheel: Optional[_Wheel]) -> tuple[Optional[str], Optional[str]]:
    """The installation's version from its own evidence, most trusted first; the live load is the caller's last resort."""
    if header:
        return header, HEADER
    if wheel:
        return wheel.version, DIST_INFO
    front = libraries.get("")
    if front and front.version:
        return front.version, front.version_source
    versions = {(lib.version, lib.version_source) for lib in libraries.values() if lib.version}
    if len({v for v, _ in versions}) == 1:
        return versions.pop()
    return None, None


def _cuda_major(system: System, libraries: dict[str, CudnnLibrary], wheel: Optional[_Wheel]) -> tuple[Optional[int], Optional[str]]:
    for library in libraries.values():
        binary = system.binary(library.path) if library.readable and library.size > 0 else None
        for name in (*(binary.imports if binary else ()), *(binary.loads if binary else ())):
            match = _CUBLAS.match(name)
            if match:
                major = cuda_major_of_dll_number(match.group(1)) if match.group(1) else int(match.group(2))
                return major, f"{system.paths.basename(library.path)} needs {name}"
    if wheel:
        return wheel.cuda_major, f"{wheel.name} {wheel.version}"
    return None, None


def _cuda_in_path(folder: str) -> tuple[Optional[int], Optional[str]]:
    """The weakest evidence: a CUDA major in the folder's name (cuda12 archive, cudnn-cu12 wheel, bin\\12.x)."""
    match = _CUDA_IN_PATH.search(folder)
    if match:
        return int(next(g for g in match.groups() if g)), "folder name"
    return None, None


def _is_system_dir(system: System, folder: str) -> bool:
    rules = system.paths
    if rules.windows:
        root = system.env().get("SystemRoot", "C:\\Windows")
        return any(rules.same(folder, rules.join(root, sub)) for sub in ("System32", "SysWOW64"))
    return any(rules.same(system.realpath(folder), system.realpath(d)) for d in SYSTEM_DIRS_LINUX)


def _toolkit_dev_files(system: System, toolkit: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    rules = system.paths
    libs = tuple(
        e.path
        for e in system.list_dir(rules.join(toolkit, "lib", "x64")) or []
        if rules.basename(e.path).lower().startswith("cudnn") and e.path.lower().endswith(".lib")
    )
    headers = tuple(e.path for e in system.list_dir(rules.join(toolkit, "include")) or [] if rules.basename(e.path).lower().startswith("cudnn"))
    return libs, headers
