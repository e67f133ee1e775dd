"""The typed rows of the knowledge tables: one `Record` per kind of row, one per table.

Field names are the data files' keys, so `row["cuda"]` in the YAML reads `row.cuda` in code.
Version numbers stay the strings the vendor wrote ("450.80.02", not `Version`'s "450.80.2");
version ranges are `VersionRange`s (PEP 440 specifiers). Lists become tuples: rows are shared.

Every row carries its provenance in the same three fields:

- `source`: an https:// URL of the vendor's own page, release notes or published artifact
  (a wheel on PyPI, the vendor's wheel index), with a note in parentheses saying where on it.
- `copy`: where the vendor's text was read when the vendor page itself could not be (an
  archive or mirror of that page); never a substitute for `source`.
- `observed`: what this project read itself from the vendor artifact named in `source` (the
  import tables of NVIDIA's wheels recorded in shared/design/nvidia-binaries.md, a machine
  fixture); free text, because it is not a web page.
"""

from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from cudnn_doctor.record import Record


class VersionRange(SpecifierSet):
    """A PEP 440 specifier set that prints as the data wrote it (">=3.8,<3.12", not the sorted "<3.12,>=3.8")."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"VersionRange({self.text!r})"

    def __reduce__(self) -> tuple[type, tuple[str]]:
        """Pickled as its text (knowledge/prebuilt.py): stable bytes, and free of packaging's private attributes."""
        return (VersionRange, (self.text,))

    def newest_minor(self) -> Optional[str]:
        """The newest X.Y the range allows among the minors it names ("3.11" for ">=3.8,<3.12"), for `python=3.11` advice."""
        named: dict[int, int] = {}
        for specifier in self:
            try:
                version = Version(specifier.version.rstrip(".*"))
            except InvalidVersion:
                continue
            named[version.major] = max(named.get(version.major, 0), version.minor)
        for major in sorted(named, reverse=True):
            for minor in range(named[major], -1, -1):
                if Version(f"{major}.{minor}") in self:
                    return f"{major}.{minor}"
        return None


# cuda_driver.yaml


class ToolkitDriver(Record):
    """The oldest driver one CUDA toolkit release (a GA or an update, by its full version) runs on, without compatibility help."""

    cuda: str  # the full version: "12.4.1"
    release: str  # NVIDIA's name of the release: "GA", "Update 1"
    linux: Optional[str]  # None: NVIDIA gives a driver branch for the release (13.4 on), not a minimum read here
    windows: Optional[str]  # None: NVIDIA lists N/A (every 13.x: the Windows driver is not tied to the toolkit)
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class MinorVersionCompatibility(Record):
    """From CUDA 11 on: the driver that runs anything built with CUDA `major`.x (limited features)."""

    major: int
    linux: str
    windows: str
    upper: Optional[str]  # the driver branch from which NVIDIA lists the next major instead ("525" for 11.x); None: open
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class CudaDriverTable(Record):
    reviewed: str
    toolkits: tuple[ToolkitDriver, ...]
    minor_version_compatibility: tuple[MinorVersionCompatibility, ...]


# cuda_libraries.yaml


class LibraryName(Record):
    """The file a build against CUDA `cuda` (a major, or major.minor before CUDA 11) loads a library by."""

    cuda: str
    windows: str
    linux: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class CudaLibrariesTable(Record):
    reviewed: str
    cudart: tuple[LibraryName, ...]
    cublas: tuple[LibraryName, ...]


# cudnn.yaml


class CudnnRelease(Record):
    """The libraries one cuDNN major release ships (`parts`), and those only later releases of it ship (`optional`)."""

    major: int
    parts: tuple[str, ...]
    optional: tuple[str, ...]
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class RuntimeLoads(Record):
    """Libraries one NVIDIA library loads by name at run time (not in its import table)."""

    library: str
    loads: tuple[str, ...]
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class OptionalLoad(Record):
    """A run-time load a library survives without (the algorithms or operators that need it fail instead); `name` may be a pattern (`cufft64_%d.dll`)."""

    name: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class Zlibwapi(Record):
    """The cuDNN releases that need zlibwapi.dll on Windows; `end_indirect`: the range's end rests on indirect evidence."""

    versions: VersionRange
    source: str
    end_indirect: bool = False
    copy: Optional[str] = None
    observed: Optional[str] = None


class LegacyCudnnName(Record):
    """A library name of cuDNN 1-3, named after the CUDA release it was built for."""

    name: str
    os: str
    major: int
    cuda: str
    toolkits: VersionRange  # the CUDA toolkits it ran with: cuDNN v2 "for CUDA 6.5" served 7.0 and 7.5 as well
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None

    def cuda_majors(self) -> list[int]:
        """The CUDA majors of the toolkits it ran with ([6, 7] for cuDNN v2)."""
        named = [Version(specifier.version).major for specifier in self.toolkits]
        return [m for m in range(min(named), max(named) + 1) if any(Version(f"{m}.{n}") in self.toolkits for n in range(10))]


class CudnnSupport(Record):
    """One build of a cuDNN release range in NVIDIA's support matrix ("cuDNN 8.9 for CUDA 12.x")."""

    versions: VersionRange  # the cuDNN releases the row covers
    full_versions: tuple[str, ...]  # the released full versions among them, oldest first
    cuda: str  # the CUDA the build is named after: "11.2" (per minor) or "12" (for CUDA 12.x)
    toolkits: VersionRange  # the CUDA toolkit releases the build serves
    tested: tuple[str, ...]  # the toolkit releases NVIDIA's matrix lists for it
    cc_min: Optional[str]  # the lowest compute capability it runs on
    cc: tuple[str, ...]  # the compute capabilities the matrix names
    driver_linux: Optional[str]
    driver_windows: Optional[str]
    os: tuple[str, ...]
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class CudnnArchive(Record):
    """NVIDIA's file name for a cuDNN archive of one era and OS: `pattern` with {version}, {cuda}, {cuda_major}, {arch}."""

    versions: VersionRange
    os: str
    pattern: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class CudnnTable(Record):
    reviewed: str
    releases: tuple[CudnnRelease, ...]
    legacy_names: tuple[LegacyCudnnName, ...]
    runtime_loads: tuple[RuntimeLoads, ...]
    optional_loads: tuple[OptionalLoad, ...]
    zlibwapi: Zlibwapi
    support: tuple[CudnnSupport, ...]
    archives: tuple[CudnnArchive, ...]


# environment.yaml


class IneffectiveVariable(Record):
    """A variable people set that nothing reads, and the knob that does what they wanted."""

    name: str
    instead: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class KnownVariables(Record):
    """The variables NVIDIA components and the frameworks do read (to spot near-miss typos)."""

    names: tuple[str, ...]
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class EnvironmentTable(Record):
    reviewed: str
    ineffective: tuple[IneffectiveVariable, ...]
    known: KnownVariables


# frameworks.yaml


class Framework(Record):
    """A GPU framework: its distributions, its module, and where it takes CUDA from."""

    name: str
    module: str
    distributions: tuple[str, ...]
    loads_cuda: str  # "system" | "bundled"
    source: str
    bundled_when: tuple[str, ...] = ()
    # import packages beside `module` that hold its GPU code (JAX's PJRT plugin in `jax_plugins`): where its loader binary is looked for
    native_packages: tuple[str, ...] = ()
    load_log: Optional[str] = None  # the variable setting that makes it log every library it tries to load, and why one failed
    aarch64_cpu_only: Optional[str] = None  # the vendor's word that its Linux aarch64 wheels have no GPU support (URL and quote)
    copy: Optional[str] = None
    observed: Optional[str] = None


class OnnxruntimeBuild(Record):
    """The CUDA and cuDNN major the onnxruntime-gpu releases in `versions` were built for, on one feed."""

    versions: VersionRange
    cuda: str
    cudnn: Optional[str]  # None: the feed's cuDNN major is not published
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None
    feed: str = "pypi"  # "pypi", or the name of the side feed (an Azure DevOps feed) that serves the build
    index_url: Optional[str] = None  # a side feed's pip index (`--extra-index-url`), where the vendor publishes it


class PaddleBuild(Record):
    """The CUDA and cuDNN a paddlepaddle-gpu build was made for: a `.postXYZ` wheel, the plain
    (PyPI) wheel (`tag` "pypi"), or a 3.x wheel from a per-CUDA index (`tag` "cu126")."""

    tag: str
    cuda: str
    cudnn: Optional[str]  # None: the install page names no cuDNN (3.x wheels bring it from pip)
    os: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None
    versions: Optional[VersionRange] = None  # the Paddle releases this holds for; None: any
    index_url: Optional[str] = None  # where pip finds the build (-f / -i)


class PipCuda(Record):
    """Releases of a framework whose wheels on one OS bring CUDA and cuDNN as pip nvidia-* wheels
    (whatever `loads_cuda` says for the framework in general)."""

    framework: str
    os: str
    versions: VersionRange
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class JaxBuild(Record):
    """What one JAX pip extra installs for the releases in `versions`: its CUDA major, where CUDA
    and cuDNN come from, the oldest cuDNN and Linux driver it needs."""

    versions: VersionRange
    extra: str  # cuda12, cuda12-local, cuda11_pip, ...
    cuda: str  # the CUDA major the wheels are built for
    loads_cuda: str  # "system" | "bundled"
    distribution: str  # the distribution holding the CUDA code: jax-cuda12-plugin, jaxlib
    cudnn: Optional[str]  # the oldest cuDNN the build accepts; None: not published
    driver_linux: Optional[str]  # the oldest Linux driver JAX's guide names; None: not stated
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None
    cuda_min: Optional[str] = None  # the oldest CUDA toolkit of the major a system-CUDA build runs with ("12.2"); None: any


class FrameworkReleases(Record):
    """The final releases of one distribution on PyPI, so a plan can pin an exact version that exists."""

    distribution: str
    versions: tuple[str, ...]
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class FrameworksTable(Record):
    reviewed: str
    frameworks: tuple[Framework, ...]
    onnxruntime_builds: tuple[OnnxruntimeBuild, ...]
    paddle_builds: tuple[PaddleBuild, ...]
    pip_cuda: tuple[PipCuda, ...]
    jax_builds: tuple[JaxBuild, ...]
    releases: tuple[FrameworkReleases, ...] = ()


# published: generated from sources/pypi.json.gz (knowledge/pypi.py), never written by hand


class PublishedRelease(Record):
    """One release of a distribution as the package index lists it."""

    distribution: str
    version: str
    linux: tuple[str, ...]  # the Python tags of its Linux x86_64 wheels ("cp311"; "py3" for a pure wheel); () for none
    windows: tuple[str, ...]  # the same for Windows x86_64
    source: str
    aarch64: tuple[str, ...] = ()  # the same for Linux aarch64 (SBSA servers; Jetson boards take NVIDIA's own wheels)
    sdist: bool = False
    requires_python: Optional[VersionRange] = None
    requires: tuple[str, ...] = ()  # what every install requires on Linux x86_64, where recorded ("nvidia-cudnn-cu12==9.10.2.21")
    requires_aarch64: tuple[str, ...] = ()  # the same on Linux aarch64, where recorded (torch)
    copy: Optional[str] = None
    observed: Optional[str] = None


class PublishedExtra(Record):
    """What `distribution[extra]==version` adds, from that release's METADATA (`Requires-Dist: …; extra == "cuda12"`)."""

    distribution: str
    version: str
    extra: str
    requires: tuple[str, ...]  # PEP 508 requirements without markers: "jax-cuda13-plugin<=0.7.0,>=0.7.0"
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class PublishedTable(Record):
    reviewed: str  # the date the source was recorded
    releases: tuple[PublishedRelease, ...]
    extras: tuple[PublishedExtra, ...]


# gpus.yaml


class GpuCapability(Record):
    """A GPU name and its compute capability."""

    name: str
    cc: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class CudaArchitectures(Record):
    """The compute capabilities one CUDA toolkit minor release can compile native code (SASS, `sm_XY`) for.

    `complete`: the list is everything the release's compiler accepts (read from its ptxas); False: a
    lower bound (what NVIDIA's samples for that release build), so a capability missing from it is unknown.
    """

    cuda: str  # major.minor
    cc: tuple[str, ...]
    complete: bool
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class GpuPeak(Record):
    """A GPU model's datasheet peak rates, the denominators `verify` divides its measured rates by.

    Tensor rates are DENSE (NVIDIA often prints the 2:4-sparsity figure, twice as high); fp16/bf16 are
    the FP32-accumulate rates (what frameworks use; GeForce parts run FP16-accumulate twice as fast).
    None: the vendor publishes no such figure (no bf16 before Ampere), or no copy of it was read.
    """

    model: str  # "H100 SXM5": the datasheet's product and form factor
    names: tuple[str, ...]  # what NVML / nvidia-smi report for it ("NVIDIA H100 80GB HBM3")
    fp32: Optional[float]  # TFLOP/s, non-tensor FP32
    tf32: Optional[float]  # TFLOP/s, dense tensor
    fp16: Optional[float]  # TFLOP/s, dense tensor, FP32 accumulate
    bf16: Optional[float]  # TFLOP/s, dense tensor, FP32 accumulate
    memory_gbs: Optional[float]  # GB/s (1e9 bytes)
    memory_gb: Optional[float]
    host_link: Optional[str]  # "PCIe Gen5 x16", "NVLink-C2C"
    host_link_gbs: Optional[float]  # GB/s in one direction
    source: str
    note: Optional[str] = None
    copy: Optional[str] = None
    observed: Optional[str] = None


class VerifyThreshold(Record):
    """When a `verify` check warns or fails: a measured figure below `warn_below` warns, below `fail_below`
    fails. `unit` "percent": percent of the GPU's datasheet peak; "ratio": a speedup (1.0 = not faster)."""

    check: str
    warn_below: float
    fail_below: float
    unit: str
    source: str
    note: Optional[str] = None
    copy: Optional[str] = None
    observed: Optional[str] = None


class GpusTable(Record):
    reviewed: str
    gpus: tuple[GpuCapability, ...]
    cuda_architectures: tuple[CudaArchitectures, ...]
    peaks: tuple[GpuPeak, ...] = ()
    verify_thresholds: tuple[VerifyThreshold, ...] = ()


# cuda_wheels.yaml


class CudaWheel(Record):
    """Which pip wheel ships a CUDA library family for one CUDA major, and where in site-packages its files lie."""

    cuda: int
    library: str  # cudart, cublas, cudnn, ... (a family: cublas also ships cublasLt)
    distribution: str  # the name to `pip install`
    linux: str  # regular expression of the file names on Linux
    windows: str  # regular expression of the DLL names on Windows (matched without case)
    linux_folder: str  # folder of the files, relative to site-packages, "/"-separated
    windows_folder: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class WheelPlaceholder(Record):
    """A PyPI name that only holds a deprecation notice: installing it fails."""

    name: str
    instead: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class WheelReach(Record):
    """How a framework makes installed nvidia-* wheels visible to its process on one OS."""

    framework: str
    os: str
    how: str  # runpath | preload | preload_dlls (only when the user calls it) | none
    versions: VersionRange  # the framework releases this holds for
    source: str
    extras: Optional[str] = None  # the pip extras that install the wheels ("cuda,cudnn"), when the release has them
    copy: Optional[str] = None
    observed: Optional[str] = None


class CudaWheelsTable(Record):
    reviewed: str
    wheels: tuple[CudaWheel, ...]
    placeholders: tuple[WheelPlaceholder, ...]
    reach: tuple[WheelReach, ...]


# libraries.yaml


class LibraryProvider(Record):
    """What provides a library name (a regular expression), and the fix; `{major}` is filled from the match."""

    pattern: str
    provider: str
    fix: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class OsProvided(Record):
    """Library names every Windows installation or glibc provides (regular expressions)."""

    windows: str
    linux: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class DriverProvided(Record):
    """Library names the NVIDIA driver provides, and the files whose presence shows a driver is installed (regular expressions)."""

    pattern: str
    files: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class LibrariesTable(Record):
    reviewed: str
    providers: tuple[LibraryProvider, ...]
    os_provided: OsProvided
    driver_provided: DriverProvided


# tensorflow.yaml


class WindowsGpuLast(Record):
    """The last TensorFlow release with GPU support on native Windows."""

    version: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class TensorflowBuild(Record):
    """A TensorFlow release's tested build configuration on one OS."""

    version: str
    os: str
    python: VersionRange
    cudnn: str
    cuda: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None
    patch: Optional[str] = None  # the newest patch release of the minor on PyPI for this OS (e.g. "2.10.1")


class TensorflowAndCuda(Record):
    """The nvidia-* wheels `pip install tensorflow[and-cuda]` installs for the releases in `versions` (Linux)."""

    versions: VersionRange
    wheels: tuple[str, ...]  # distribution names, without the pinned versions
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class TensorflowPackage(Record):
    """The pip package that holds TensorFlow's GPU build for the releases in `versions`
    (`tensorflow-gpu` up to 2.0, `tensorflow` from 2.1)."""

    name: str
    versions: VersionRange
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class TensorflowConda(Record):
    """The conda line TensorFlow's native-Windows install guide gives for CUDA and cuDNN (releases in `versions`)."""

    command: str
    versions: VersionRange
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class TensorflowTable(Record):
    reviewed: str
    windows_native_gpu_last: WindowsGpuLast
    tested_builds: tuple[TensorflowBuild, ...]
    and_cuda: tuple[TensorflowAndCuda, ...]
    packages: tuple[TensorflowPackage, ...] = ()
    windows_conda: Optional[TensorflowConda] = None


# torch.yaml


class IndexUrl(Record):
    """The wheel index of one CUDA variant; `{tag}` is "118" for CUDA 11.8."""

    template: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class TorchRelease(Record):
    """A PyTorch minor release: the Python versions it has wheels for and its CUDA variants
    (on Linux; the `windows_*` fields say where Windows differs), the CUDA of the plain PyPI
    Linux wheel and the cuDNN that wheel pins."""

    version: str
    python: VersionRange
    cuda: tuple[str, ...]  # empty: the release's CUDA variants are not known yet
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None
    windows_python: Optional[VersionRange] = None  # None: as on Linux
    windows_cuda: Optional[tuple[str, ...]] = None  # None: as on Linux
    pypi_cuda: Optional[str] = None  # `pip install torch` on Linux (PyPI's Windows wheels are CPU-only)
    pypi_cudnn: Optional[str] = None  # the nvidia-cudnn pin of that wheel
    cudnn_major: Optional[str] = None  # the cuDNN major every CUDA variant bundles, where published
    cudnn_builds: tuple[str, ...] = ()  # "12.6:9.10.2.21": the cuDNN each CUDA variant bundles (RELEASE.md's matrix)
    patch: Optional[str] = None  # the newest patch release of the minor on PyPI ("2.1.2"), to pin `torch==`
    conda: Optional[str] = None  # the previous-versions page's conda line (its own pinned version), `{cuda}` to fill in
    conda_cuda: Optional[tuple[str, ...]] = None  # the CUDA versions that page gives a conda line for
    conda_forge_cuda: tuple[str, ...] = ()  # those whose line also adds `-c conda-forge`

    def python_on(self, os_name: str) -> VersionRange:
        """The Pythons with wheels on one OS."""
        return self.windows_python if os_name == "windows" and self.windows_python is not None else self.python

    def cuda_on(self, os_name: str) -> tuple[str, ...]:
        """The CUDA variants published for one OS. PyPI's own Linux wheel is one of them, known from its METADATA even
        where the release's build matrix is not sourced yet (torch 2.15: CUDA 13.2)."""
        if os_name == "windows" and self.windows_cuda is not None:
            return self.windows_cuda
        if os_name == "linux" and self.pypi_cuda and self.pypi_cuda not in self.cuda:
            return (*self.cuda, self.pypi_cuda)
        return self.cuda

    def cudnn_of(self, cuda: str) -> Optional[str]:
        """The cuDNN a variant bundles: its wheel's own pin for PyPI's Linux wheel, else the release matrix's, else the
        major every variant bundles."""
        if self.pypi_cudnn and self.pypi_cuda == cuda:
            return self.pypi_cudnn
        matrix = dict(item.split(":", 1) for item in self.cudnn_builds)
        return matrix.get(cuda) or self.cudnn_major

    def conda_command(self, cuda: str) -> Optional[str]:
        """The page's conda line for one CUDA version; None where the page gives none for it."""
        if self.conda is None or cuda not in (self.conda_cuda or ()):
            return None
        line = self.conda.format(cuda=cuda)
        return line + " -c conda-forge" if cuda in self.conda_forge_cuda else line


class TorchTable(Record):
    reviewed: str
    index_url: IndexUrl
    releases: tuple[TorchRelease, ...]
