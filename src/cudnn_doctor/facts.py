"""What the probes found, as frozen values; checks read these and nothing else.

They are `Record`s (tuples with named fields, as `typing.NamedTuple` makes) rather than
dataclasses: a diagnosis creates these classes on every run, and a Record class costs a
twentieth of a NamedTuple class, and far less than a frozen dataclass, to create.

A probe that could not find something says so with a field that is None plus, where it
helps the reader, the reason (`source`, `error`), never by raising.

The three fields that name a class defined further down are quoted.
"""

from typing import Any, Mapping, Optional

from packaging.version import Version

from cudnn_doctor.kinds import CudaFrom, CudnnVersionFrom, KnownFrom, ToolkitVersionFrom
from cudnn_doctor.loads import Resolution
from cudnn_doctor.record import Record
from cudnn_doctor.versions import parse_cuda_version, parse_cudnn_version, parse_version


class Gpu(Record):
    name: str
    compute_capability: Optional[str]
    memory_mib: Optional[int] = None
    capability_source: Optional[str] = None  # nvml | nvidia-smi | name-table


# smi_error when nvidia-smi exits 0 but names no driver version
SMI_NOT_UNDERSTOOD = "nvidia-smi: output not understood"


class DriverFacts(Record):
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


class Toolkit(Record):
    """One CUDA toolkit installation (symbolic-link aliases folded into one)."""

    root: str
    version: Optional[str]
    version_source: Optional[ToolkitVersionFrom]
    bin_dir: str
    has_nvcc: bool
    aliases: tuple[str, ...] = ()
    on_path: bool = False

    @property
    def parsed_version(self) -> Optional[Version]:
        return parse_version(self.version)


class VariableTarget(Record):
    """What a toolkit variable's literal value names, read as one path (never split into pieces)."""

    name: str
    value: str
    kind: str  # toolkit | folder | file | missing: a folder that is no toolkit is what an uninstall leaves


class ToolkitFacts(Record):
    toolkits: tuple[Toolkit, ...] = ()
    nvcc_on_path: Optional[str] = None  # the first nvcc on PATH, as found there
    nvcc_real: Optional[str] = None  # the real binary behind it (links and wrapper scripts followed)
    nvcc_version: Optional[str] = None
    path_toolkit: Optional[str] = None  # root of the toolkit that nvcc belongs to
    variables: tuple[tuple[str, str], ...] = ()  # CUDA_PATH, CUDA_HOME, CUDA_PATH_Vx_y as set
    targets: tuple[VariableTarget, ...] = ()  # what each of those values names on disk, taken literally
    # the dpkg package that owns the nvcc on PATH (nvidia-cuda-toolkit, cuda-nvcc-12-4)
    nvcc_package: Optional[str] = None

    def by_root(self, root: Optional[str]) -> Optional[Toolkit]:
        return next((t for t in self.toolkits if t.root == root), None)


class PythonEnv(Record):
    """One interpreter, its distributions, and what each GPU framework reported in it."""

    executable: str
    version: str
    kind: str
    current: bool
    packages: Mapping[str, str] = {}
    frameworks: Mapping[str, Mapping[str, Any]] = {}

    @property
    def parsed_version(self) -> Optional[Version]:
        return parse_version(self.version)


class PathEntry(Record):
    variable: str
    # a field named like tuple.index, which it hides on purpose (as typing.NamedTuple allows)
    index: int  # type: ignore[assignment]
    value: str
    exists: bool


class EnvironmentFacts(Record):
    variables: Mapping[str, str] = {}
    path: tuple[PathEntry, ...] = ()
    ld_library_path: tuple[PathEntry, ...] = ()
    persistent: Optional[Mapping[str, Mapping[str, str]]] = None
    persistent_path: tuple[str, ...] = ()  # what a new terminal gets: system PATH then user PATH, expanded
    distribution: tuple[
        str, ...
    ] = ()  # Linux: /etc/os-release's ID then its ID_LIKE words ("manjaro", "arch"), lowercased


class Known(Record):
    """A value and how it is known, so a report can say whether the machine or a table said it."""

    value: str
    how: KnownFrom
    source: Optional[str] = None  # the knowledge row's vendor URL (KNOWLEDGE), or the path of the file that says it
    evidence: Optional[str] = (
        # what a report quotes: "onnxruntime/capi/build_and_package_info.py", "libtorch_cuda.so imports libcudnn.so.9"
        None
    )

    @property
    def version(self) -> Optional[Version]:
        return parse_version(self.value)

    @property
    def said(self) -> str:
        """How a message cites it: the file and what it says when a file said it, else how it is known."""
        return self.evidence or self.how


LIVE, WHEEL_METADATA, LIBRARY_IMPORTS = KnownFrom.LIVE, KnownFrom.WHEEL_METADATA, KnownFrom.LIBRARY_IMPORTS
DIST_METADATA, DIST_VERSION, KNOWLEDGE, FRAMEWORK_LOG = (
    KnownFrom.DIST_METADATA,
    KnownFrom.DIST_VERSION,
    KnownFrom.KNOWLEDGE,
    KnownFrom.FRAMEWORK_LOG,
)


class WheelRequirement(Record):
    """One `Requires-Dist` of a framework's distribution that holds on this machine, and the extra that asks for it."""

    name: str  # canonical distribution name: nvidia-cudnn-cu13
    specifier: str  # "~=9.0"
    extra: Optional[str] = None  # "cudnn" for `extra == "cudnn"`; None when always required

    @property
    def text(self) -> str:
        return f"{self.name}{self.specifier}" + (f" [{self.extra}]" if self.extra else "")


class LoadFailure(Record):
    """A library the framework's own output says it could not load, whatever the framework's log format."""

    library: str  # the file name, as the message names it
    message: str  # the line that says so
    needed_by: Optional[str] = None  # the library whose dependency it is, when the message says
    direct: bool = False  # the framework asked for it itself (TensorFlow's "Could not load dynamic library")


class CudnnMismatch(Record):
    """The framework says the cuDNN it loaded is not the one it was compiled with."""

    loaded: str
    compiled: str
    message: str
    # the oldest it accepts, where the message states one (JAX's "Minimum supported: 9100")
    minimum: Optional[str] = None


class Unloadable(Record):
    """A GPU library the framework says it could not load, by what it is, without naming its file
    (TensorFlow's "Cannot dlopen some GPU libraries", PaddlePaddle's "Cannot load cudnn shared library")."""

    part: str  # "cudnn", "cusolver", "cuda"; "gpu" when the message names none
    message: str  # the line that says so


class SystemLibraries(Record):
    """The file names a build that takes CUDA from the system asks the loader for."""

    cudart: Optional[str]
    cublas: Optional[str]
    cudnn: Optional[str]


class FrameworkBuild(Record):
    """One GPU framework installed in one interpreter: what it was built with and what it said, typed once.

    The probes read the framework's live report, its distribution version and the knowledge
    tables; checks compare these fields and never read the report or the log text themselves.
    """

    name: str  # torch | tensorflow | paddle | jax | onnxruntime
    executable: str
    version: Optional[str]
    imported: bool = False  # the live import succeeded
    import_error: Optional[str] = None
    timed_out: bool = False
    gpu_build: Optional[bool] = None  # built with CUDA; None when nothing says
    cuda: Optional[Known] = None  # the CUDA version it was built with
    cudnn: Optional[Known] = None  # the cuDNN it needs ("8.1": that major, this release or newer; "9": the major only)
    cudnn_loaded: Optional[str] = None  # the cuDNN version the running framework reported
    cuda_from: Optional[CudaFrom] = None  # where its CUDA and cuDNN libraries come from
    cuda_wheels: tuple[str, ...] = ()  # the pip nvidia-* distributions installed beside it
    # the framework's own CUDA library whose imports were read (libonnxruntime_providers_cuda.so)
    gpu_library: Optional[str] = None
    needs: tuple[str, ...] = ()  # the CUDA / cuDNN libraries that library imports or loads by name
    nvidia_requirements: tuple[
        WheelRequirement, ...
    ] = ()  # its Requires-Dist on nvidia-* / CUDA wheels, with their extras ([cuda], [cudnn])
    system_libraries: Optional[SystemLibraries] = None  # when cuda_from == SYSTEM: the names it asks the loader for
    cuda_available: Optional[bool] = None  # its own "can I use a GPU" answer (torch.cuda.is_available())
    sees_gpu: bool = False  # its live report lists a GPU device
    arch_list: tuple[str, ...] = ()  # the GPU architectures it has kernels for (sm_86, compute_90)
    supported_python: Optional[Known] = None  # a PEP 440 specifier of the Pythons the release supports
    load_failures: tuple[LoadFailure, ...] = ()
    unloadable: tuple[
        Unloadable, ...
    ] = ()  # what its messages say could not be loaded, by meaning, where they name no file
    driver_complaint: Optional[str] = None  # its message saying the driver is too old
    no_kernel_complaint: Optional[str] = None  # its message saying it has no kernel for this GPU
    cudnn_mismatch: Optional[CudnnMismatch] = None
    cudnn_works: bool = False  # its own output says cuDNN loaded: that outranks the emulation
    warning: Optional[str] = None  # the first line of what it warned when imported

    @property
    def parsed_version(self) -> Optional[Version]:
        return parse_version(self.version)

    @property
    def cuda_version(self) -> Optional[Version]:
        return parse_cuda_version(self.cuda.value) if self.cuda else None

    @property
    def cuda_major(self) -> Optional[int]:
        version = self.cuda_version
        return version.release[0] if version else None

    @property
    def cudnn_major(self) -> Optional[int]:
        """The cuDNN major it needs (from `cudnn`)."""
        version = parse_cudnn_version(self.cudnn.value) if self.cudnn else None
        return version.release[0] if version else None

    def extra(self, name: str) -> tuple[WheelRequirement, ...]:
        """What `pip install framework[name]` adds: ONNX Runtime's [cuda] and [cudnn] name the nvidia-* wheels of its
        build."""
        return tuple(r for r in self.nvidia_requirements if r.extra == name)

    @property
    def uses_gpu(self) -> bool:
        """A GPU build, or one whose own report shows a GPU."""
        return bool(self.gpu_build) or self.sees_gpu


SYSTEM, BUNDLED, NVIDIA_WHEELS = CudaFrom.SYSTEM, CudaFrom.BUNDLED, CudaFrom.NVIDIA_WHEELS


class PackageOwner(Record):
    """The package manager's package that installed a file."""

    package: (
        str  # as the manager names it: libnvidia-compute-565:amd64 (dpkg), libcudnn8-8.9.7.29-1.cuda12.2.x86_64 (rpm)
    )
    manager: str  # dpkg | rpm


class InstalledWheel(Record):
    """One pip nvidia-* wheel in one interpreter's environment and the folder its libraries lie in."""

    executable: str
    distribution: str  # canonical name, nvidia-cudnn-cu13
    version: str
    folder: str  # absolute folder of its libraries (site-packages/nvidia/cu13/lib)
    libraries: tuple[str, ...] = ()  # the library file names of its kind in that folder


class ProbeFailure(Record):
    probe: str
    error: str


class DriverLibrary(Record):
    """One of the driver's user-space libraries in use and the release its real file name says
    (libcuda.so.535.183.01)."""

    path: str  # the real file: the soname link (libcuda.so.1) followed
    version: str  # "535.183.01"


class DriverState(Record):
    """Which driver the kernel runs, which the libraries belong to, and whether this is a container given the GPU.

    Read from /proc/driver/nvidia/version, the real names of libcuda.so.1 / libnvidia-ml.so.1, what
    nvidia-smi said when NVML failed, the container's markers and the /dev/nvidia* device files."""

    kernel_module: Optional[str] = None  # the loaded nvidia module's release, from /proc/driver/nvidia/version
    libraries: tuple[DriverLibrary, ...] = ()  # libcuda / libnvidia-ml in use, by their real file names
    # NVML's own words "Driver/library version mismatch", as nvidia-smi printed them
    nvml_mismatch: Optional[str] = None
    nvml_library: Optional[str] = None  # "NVML library version: 550.144", when nvidia-smi said it
    # what says this is a container: /.dockerenv, /run/.containerenv, container=podman, ...
    container: Optional[str] = None
    devices: tuple[
        str, ...
    ] = ()  # the GPU device files present (/dev/nvidiactl, /dev/nvidia0, /dev/dxg); read in containers only


class Facts(Record):
    os: str
    arch: str
    wsl: bool
    driver: DriverFacts
    toolkits: ToolkitFacts
    pythons: tuple[PythonEnv, ...]
    environment: EnvironmentFacts
    linux_driver_in_wsl: tuple[str, ...] = ()  # libcuda.so files outside /usr/lib/wsl/lib
    failures: tuple[ProbeFailure, ...] = ()
    cudnn: "tuple[CudnnInstall, ...]" = ()
    resolutions: "tuple[Resolution, ...]" = ()
    confirmations: "tuple[Confirmation, ...]" = ()
    builds: tuple[FrameworkBuild, ...] = ()
    linux_driver_packages: tuple[PackageOwner, ...] = ()  # the packages that installed linux_driver_in_wsl, where known
    # the NVIDIA driver's own files seen (libcuda.so.N, nvcuda.dll, /proc/driver/nvidia/version): none means no driver
    # is visible
    driver_files: tuple[str, ...] = ()
    wheels: tuple[InstalledWheel, ...] = ()
    driver_state: DriverState = DriverState()

    def python(self, executable: str) -> Optional[PythonEnv]:
        return next((p for p in self.pythons if p.executable == executable), None)

    def cudnn_owner(self, path: Optional[str]) -> "tuple[Optional[CudnnInstall], Optional[CudnnLibrary]]":
        """The cuDNN installation and library of a file, by its soname path or the file behind it (a front asking
        for `libcudnn_graph.so.9.1.0` loads the link's target by that name); (None, None) for another file."""
        if path is None:
            return None, None
        from cudnn_doctor.paths import PathRules

        rules = PathRules(self.os)
        for install in self.cudnn:
            for library in install.libraries:
                if rules.same(library.path, path) or (
                    library.real_path is not None and rules.same(library.real_path, path)
                ):
                    return install, library
        return None, None

    def builds_of(self, name: str) -> tuple[FrameworkBuild, ...]:
        return tuple(b for b in self.builds if b.name == name)

    @property
    def current_python(self) -> Optional[PythonEnv]:
        return next((p for p in self.pythons if p.current), None)

    @property
    def has_gpu(self) -> bool:
        return self.driver.present


# How a cuDNN version is known, most trusted first (issue 9): the installation's own header, its
# distribution's metadata, the full-release names the front library asks for, the file itself,
# and last a live cudnnGetVersion(), which answers from whichever sub-library the loader picked.


HEADER, DIST_INFO, CONDA_META, ASKED_NAMES, FILE_VERSION, FILE_NAME, LOAD = CudnnVersionFrom
DISTRIBUTION_METADATA = (DIST_INFO, CONDA_META)  # the package manager wrote every file it lists


class CudnnLibrary(Record):
    path: str
    part: str  # "" for the front library (cudnn64_8.dll / libcudnn.so.8), else "ops_infer", "graph", ...
    size: int
    readable: bool
    version: Optional[str] = None  # from the file itself: ASKED_NAMES, FILE_VERSION or FILE_NAME
    machine: Optional[str] = None
    version_source: Optional[CudnnVersionFrom] = None  # how `version` is known
    real_path: Optional[str] = None  # the file behind the soname link (libcudnn_graph.so.9.1.0), when it differs


class CudnnInstall(Record):
    """The cuDNN libraries of one major release in one folder."""

    folder: str
    major: int
    libraries: tuple[CudnnLibrary, ...]
    missing_parts: tuple[str, ...] = ()
    version: Optional[str] = None
    version_source: Optional[CudnnVersionFrom] = None
    cuda_major: Optional[int] = None
    cuda_source: Optional[str] = None
    header: Optional[str] = None
    toolkit: Optional[str] = None  # root of the CUDA toolkit it was copied into
    nested_in: Optional[str] = None  # the extra top folder when an archive was copied whole
    system_dir: bool = False
    package: Optional[str] = None  # the package manager's package that owns it, when known
    import_libraries: tuple[str, ...] = ()
    headers_in_toolkit: tuple[str, ...] = ()


class Confirmation(Record):
    """The real loader's answer for one name, next to the emulation's (live machines only)."""

    executable: str
    name: str
    emulated: Optional[str]
    real: Optional[str]
    error: Optional[str] = None

    @property
    def agrees(self) -> bool:
        return (self.emulated is None) == (self.real is None) and (self.emulated is None or self.emulated == self.real)
