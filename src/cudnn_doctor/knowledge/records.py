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
        """The newest X.Y the range allows among the minors it names ("3.11" for ">=3.8,<3.12"), for `python=3.11`
        advice."""
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
    """The oldest driver one CUDA toolkit release (a GA or an update, by its full version) runs on, without
    compatibility help."""

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
    upper: Optional[
        str
    ]  # the driver branch from which NVIDIA lists the next major instead ("525" for 11.x); None: open
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
    """A run-time load a library survives without (the algorithms or operators that need it fail instead); `name` may
    be a pattern (`cufft64_%d.dll`)."""

    name: str
    source: str
    copy: Optional[str] = None
    observed: Optional[str] = None


class Zlibwapi(Record):
    """The cuDNN releases that need zlibwapi.dll on Windows; `end_indirect`: the range's end rests on indirect
    evidence."""

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
        return [
            m for m in range(min(named), max(named) + 1) if any(Version(f"{m}.{n}") in self.toolkits for n in range(10))
        ]


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
    """NVIDIA's file name for a cuDNN archive of one era and OS: `pattern` with {version}, {cuda}, {cuda_major},
    {arch}."""

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
    """Library names the NVIDIA driver provides, and the files whose presence shows a driver is installed (regular
    expressions)."""

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
