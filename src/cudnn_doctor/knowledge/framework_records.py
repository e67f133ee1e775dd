"""The typed rows of the frameworks' knowledge tables (frameworks, published, tensorflow, torch): one `Record` per
kind of row, one per table, as in records.py, whose docstring says how fields and provenance are written."""

from typing import Optional

from cudnn_doctor.knowledge.records import VersionRange
from cudnn_doctor.record import Record

# frameworks.yaml


class Framework(Record):
    """A GPU framework: its distributions, its module, and where it takes CUDA from."""

    name: str
    module: str
    distributions: tuple[str, ...]
    loads_cuda: str  # "system" | "bundled"
    source: str
    bundled_when: tuple[str, ...] = ()
    # import packages beside `module` that hold its GPU code (JAX's PJRT plugin in `jax_plugins`): where its loader
    # binary is looked for
    native_packages: tuple[str, ...] = ()
    # the variable setting that makes it log every library it tries to load, and why one failed
    load_log: Optional[str] = None
    # the vendor's word that its Linux aarch64 wheels have no GPU support (URL and quote)
    aarch64_cpu_only: Optional[str] = None
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
    # the oldest CUDA toolkit of the major a system-CUDA build runs with ("12.2"); None: any
    cuda_min: Optional[str] = None


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
    requires: tuple[
        str, ...
    ] = ()  # what every install requires on Linux x86_64, where recorded ("nvidia-cudnn-cu12==9.10.2.21")
    requires_aarch64: tuple[str, ...] = ()  # the same on Linux aarch64, where recorded (torch)
    copy: Optional[str] = None
    observed: Optional[str] = None


class PublishedExtra(Record):
    """What `distribution[extra]==version` adds, from that release's METADATA (`Requires-Dist: …; extra ==
    "cuda12"`)."""

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
