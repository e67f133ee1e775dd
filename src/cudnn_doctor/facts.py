"""What the probes found, as frozen values; checks read these and nothing else.

A probe that could not find something says so with a field that is None plus, where it
helps the reader, the reason (`source`, `error`), never by raising.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from packaging.version import Version

from cudnn_doctor.versions import parse_cuda_version, parse_version


@dataclass(frozen=True)
class Gpu:
    name: str
    compute_capability: Optional[str]
    memory_mib: Optional[int] = None
    capability_source: Optional[str] = None  # nvml | nvidia-smi | name-table


@dataclass(frozen=True)
class DriverFacts:
    """The NVIDIA driver and GPUs, from NVML when it loads, else from nvidia-smi."""

    source: Optional[str]  # nvml | nvidia-smi | None (no driver found)
    version: Optional[str] = None
    cuda: Optional[str] = None  # highest CUDA version the driver supports, "12.4"
    cuda_source: Optional[str] = None  # nvml | nvidia-smi | driver-table
    gpus: tuple[Gpu, ...] = ()
    smi_error: Optional[str] = None

    @property
    def present(self) -> bool:
        return self.source is not None

    @property
    def cuda_version(self) -> Optional[Version]:
        return parse_cuda_version(self.cuda)


@dataclass(frozen=True)
class Toolkit:
    """One CUDA toolkit installation (symbolic-link aliases folded into one)."""

    root: str
    version: Optional[str]
    version_source: Optional[str]  # nvcc | version.json | version.txt | cuda.h | folder-name
    bin_dir: str
    has_nvcc: bool
    aliases: tuple[str, ...] = ()
    on_path: bool = False

    @property
    def parsed_version(self) -> Optional[Version]:
        return parse_version(self.version)


@dataclass(frozen=True)
class ToolkitFacts:
    toolkits: tuple[Toolkit, ...] = ()
    nvcc_on_path: Optional[str] = None  # the first nvcc on PATH, as found there
    nvcc_real: Optional[str] = None  # the real binary behind it (links and wrapper scripts followed)
    nvcc_version: Optional[str] = None
    path_toolkit: Optional[str] = None  # root of the toolkit that nvcc belongs to
    variables: tuple[tuple[str, str], ...] = ()  # CUDA_PATH, CUDA_HOME, CUDA_PATH_Vx_y as set

    def by_root(self, root: Optional[str]) -> Optional[Toolkit]:
        return next((t for t in self.toolkits if t.root == root), None)


@dataclass(frozen=True)
class PythonEnv:
    """One interpreter, its distributions, and what each GPU framework reported in it."""

    executable: str
    version: str
    kind: str
    current: bool
    packages: Mapping[str, str] = field(default_factory=dict)
    frameworks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def parsed_version(self) -> Optional[Version]:
        return parse_version(self.version)


@dataclass(frozen=True)
class PathEntry:
    variable: str
    index: int
    value: str
    exists: bool


@dataclass(frozen=True)
class EnvironmentFacts:
    variables: Mapping[str, str] = field(default_factory=dict)
    path: tuple[PathEntry, ...] = ()
    ld_library_path: tuple[PathEntry, ...] = ()
    persistent: Optional[Mapping[str, Mapping[str, str]]] = None
    persistent_path: tuple[str, ...] = ()  # what a new terminal gets: system PATH then user PATH, expanded


@dataclass(frozen=True)
class LibraryLookup:
    """Where the loader would find one library name for the current interpreter (or nowhere)."""

    name: str
    found: Optional[str]
    searched: tuple[str, ...] = ()
    elsewhere: tuple[str, ...] = ()  # copies on the machine that the search does not reach


@dataclass(frozen=True)
class ProbeFailure:
    probe: str
    error: str


@dataclass(frozen=True)
class Facts:
    os: str
    arch: str
    wsl: bool
    driver: DriverFacts
    toolkits: ToolkitFacts
    pythons: tuple[PythonEnv, ...]
    environment: EnvironmentFacts
    libraries: Mapping[str, LibraryLookup] = field(default_factory=dict)
    linux_driver_in_wsl: tuple[str, ...] = ()  # libcuda.so files outside /usr/lib/wsl/lib
    failures: tuple[ProbeFailure, ...] = ()

    @property
    def current_python(self) -> Optional[PythonEnv]:
        return next((p for p in self.pythons if p.current), None)

    @property
    def has_gpu(self) -> bool:
        return self.driver.present


def lookup_key(executable: str, name: str) -> str:
    """The key of `Facts.libraries`: one library name as seen from one interpreter's process."""
    return f"{executable}|{name}"
