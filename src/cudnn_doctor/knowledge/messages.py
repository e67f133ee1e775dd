"""The one catalogue of what the GPU stack prints when it fails, in every era's wording, and what each means.

`run` and the Python hook scan a failing program's output for every entry (`PATTERNS`: the kind of failure, the
parts of the stack it points at, a line for the user and a next step); the probes read a framework's own log for
two meanings (`CUDNN_MISMATCH`: the cuDNN loaded is not one the build can use, with the versions it states;
`UNLOADABLE`: a GPU library could not be loaded, said by what it is rather than by its file). Those two are entries
of the run catalogue as well, so one wording is written once. Each text is one the frameworks and NVIDIA's
libraries really print (quoted in the tests). Every pattern starts with its literal `anchor`: the run scan looks for
anchors with `str.find` and tries a pattern only there (a program's stderr may be one line of 50 MB).
"""

from __future__ import annotations

import re

from cudnn_doctor.lazyre import LazyPattern, regex
from cudnn_doctor.record import Record

_V = r"\d+(?:\.\d+)*"
_LIBRARY = r"(?P<library>[\w.+-]*(?:\.so(?:\.\d+)*|\.dll))"


class Wording(Record):
    """One wording of a meaning: the literal text it starts with and the pattern that reads it from there."""

    anchor: str
    pattern: LazyPattern[str]
    spans_lines: bool = False  # the message runs over several lines (JAX's version report)


class Known(Record):
    kind: str
    areas: tuple[str, ...]  # the `check` areas it points at: driver, toolkit, cudnn, frameworks
    anchors: tuple[str, ...]  # literal texts; the pattern is tried only where one of them starts
    pattern: LazyPattern[str]  # matched at an anchor, within _REACH characters of it
    says: str  # one line for the user
    next_step: str  # what to do, said whatever `check` finds
    library_before: bool = False  # the library is the name that ends just before the anchor
    spans_lines: bool = False  # matched across lines (within _REACH characters), not to the end of its line


# The cuDNN loaded is not the one the build needs: named groups `loaded`, `compiled` and, where stated, `minimum`.
CUDNN_MISMATCH: tuple[Wording, ...] = (
    # TensorFlow 1.x (integers: "Loaded runtime CuDNN library: 7101 (compatibility version 7100) but source was compiled
    # with 7003 (compatibility version 7000)"), TensorFlow 2.x and XLA under JAX ("... 8.1.0 but source was compiled
    # with: 8.6.0")
    Wording(
        "Loaded runtime CuDNN library:",
        regex(
            rf"Loaded runtime CuDNN library:\s*(?P<loaded>{_V}).*?source was compiled with:?\s*(?P<compiled>{_V})",
            re.DOTALL,
        ),
        spans_lines=True,
    ),
    # PaddlePaddle's device check
    Wording(
        "compiled with CUDNN ",
        regex(rf"compiled with CUDNN (?P<compiled>{_V}), but CUDNN version in your machine is (?P<loaded>{_V})"),
    ),
    # JAX 0.4.x (before 0.4.26): "Found cuDNN version 8600, but JAX was built against version 8906, which is newer."
    Wording(
        "Found cuDNN version ",
        regex(
            r"Found cuDNN version (?P<loaded>\d+), but JAX was built against version (?P<compiled>\d+)", re.IGNORECASE
        ),
    ),
    # JAX 0.4.26+ (_check_cuda_versions): "Outdated cuDNN installation found.\nVersion JAX was built against: 8907\n
    # Minimum supported: 9100\nInstalled version: 8907" (the installed one may equal the build's yet be under the
    # minimum)
    Wording(
        "Outdated cuDNN installation found",
        regex(
            r"Outdated cuDNN installation found\.?\s*Version JAX was built against:\s*(?P<compiled>\d+)\s*"
            r"Minimum supported:\s*(?P<minimum>\d+)\s*Installed version:\s*(?P<loaded>\d+)",
            re.IGNORECASE,
        ),
        spans_lines=True,
    ),
    # PyTorch 1.12+ as tuples: "compiled  against (8, 5, 0) but found runtime version (8, 3, 3)"; 1.12.0 "but linked
    # against (8, 0, 3)"
    Wording(
        "PyTorch was compiled",
        regex(
            r"PyTorch was compiled\s+against \((?P<compiled>\d+,\s*\d+,\s*\d+)\) but (?:found runtime "
            r"version|linked against) \((?P<loaded>\d+,\s*\d+,\s*\d+)\)"
        ),
    ),
    # PyTorch before 1.12 as integers: "cuDNN version mismatch: PyTorch was compiled against 7102 but linked against
    # 7600"
    Wording(
        "PyTorch was compiled",
        regex(r"PyTorch was compiled\s+against (?P<compiled>\d+) but linked against (?P<loaded>\d+)"),
    ),
)

# A GPU library the framework could not load, said by what it is rather than by its file name: group `part`
# (lowercased: "cudnn", "cusolver"); an entry without the group names no library ("gpu").
UNLOADABLE: tuple[Wording, ...] = (
    # TensorFlow 2.x: the summary after its dso_loader lines, and the only line left when those are VLOG-only (2.16+)
    Wording("Cannot dlopen some GPU libraries", regex(r"Cannot dlopen some GPU libraries")),
    # PaddlePaddle 1.x-2.x dynload: "Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion."
    Wording("Cannot load ", regex(r"Cannot load (?P<part>cu\w+) shared library", re.IGNORECASE)),
    # JAX (jaxlib's version checks): "Unable to load cuDNN. Is it installed?", "Unable to load cuSOLVER.", "Unable to
    # load CUDA."
    Wording("Unable to load ", regex(r"Unable to load (?P<part>(?i:cu)[A-Za-z]+)\b(?!\s*\w*\.(?:so|dll))")),
)


# Messages that name a library the framework could not load, across frameworks and eras.
# A framework's own request, by name: TensorFlow 2's dso_loader ("Could not load dynamic library"), TensorFlow 1's
# ("Could not dlopen library"), TensorFlow 1's Windows self-check ("Could not find 'cudnn64_7.dll'. TensorFlow
# requires"), PaddlePaddle's dynamic loader (its try-list, ';'-separated: "cufft64_120.dll;cufft64_12.dll").
DIRECT_LOADS = (
    regex(r"Could not (?:load dynamic|dlopen) library '([^']+)'"),
    regex(r"Could not find '([^']+\.dll)'\. TensorFlow requires"),
    regex(r"The third-party dynamic library \(([^)]+)\) that Paddle depends on"),
)
DEPENDENCIES = (  # ONNX Runtime's CUDA provider and what it could not find (Linux, then Windows since 1.19)
    regex(r"Failed to load library (\S+) with error: ([\w.+-]+): cannot open shared object file"),
    regex(r'Error loading "([^"]+)" which depends on "([^"]+)" which is missing'),
)
OTHER_LOADS = (
    regex(r"([\w.+-]+\.so[.\d]*): cannot open shared object file"),  # dlopen / ImportError on Linux
    regex(r"Could not find the DLL\(s\) '([^']+)'"),  # Python's ctypes / TensorFlow's self-check on Windows
    regex(r"Could not locate ([\w.]+\.dll)"),  # cuDNN 8's own loader on Windows
)
DRIVER_TOO_OLD = regex(r"driver on your system is too old|CUDA driver version is insufficient", re.IGNORECASE)
NO_KERNEL = regex(
    r"no kernel image is available|is not compatible with the current PyTorch "
    r"installation|CUDA_ERROR_NO_BINARY_FOR_GPU",
    re.IGNORECASE,
)
# A framework's words that cuDNN loaded and works (its own output outranks the emulation)
CUDNN_LOADED = regex(r"Loaded cuDNN version|cuDNN Version: \d|works well on \d+ GPU")

_FIND = (
    "`cudnn-doctor which NAME` shows where the loader looks for it and what it needs; `cudnn-doctor check` "
    "names the fix"
)
_PLAN = (
    "`cudnn-doctor plan` gives a framework build, CUDA and cuDNN that work together on this machine, with the commands"
)
# What run says for the two meanings the probes read: (kind, areas, says, next step)
CUDNN_VERSION = (
    "cudnn-version",
    ("cudnn", "frameworks"),
    "the cuDNN loaded is older than, or another major than, the one the framework was built with",
    "`cudnn-doctor check` names the copy loaded first; put the framework's own cuDNN first, or " + _PLAN,
)
NOT_LOADED = (
    "gpu-library-not-loaded",
    ("cudnn", "toolkit", "frameworks"),
    "a GPU library the framework names (cuDNN, cuSOLVER, ...) could not be loaded; TensorFlow names them with "
    "TF_CPP_MAX_VLOG_LEVEL=3",
    "`cudnn-doctor check` finds each library's installs and the one the loader reaches first; `pip install "
    "tensorflow[and-cuda]` "
    "or `jax[cuda12]` brings the CUDA and cuDNN wheels the build was made with",
)


def _said_as(meaning: tuple[str, tuple[str, ...], str, str], wording: Wording) -> Known:
    kind, areas, says, next_step = meaning
    return Known(kind, areas, (wording.anchor,), wording.pattern, says, next_step, spans_lines=wording.spans_lines)


PATTERNS = (
    Known(
        "library-not-found",
        ("cudnn",),
        (": cannot open shared object file",),
        regex(r": cannot open shared object file"),
        "a library could not be found",
        _FIND,
        library_before=True,
    ),
    Known(
        "library-not-found",
        ("cudnn",),
        ("Could not load ",),
        regex(rf"Could not load (?:library|dynamic library) '?{_LIBRARY}'?"),
        "a library could not be loaded",
        _FIND,
    ),
    Known(
        "library-not-found",
        ("cudnn",),
        ("Could not locate ",),
        regex(rf"Could not locate {_LIBRARY}"),
        "a library could not be found",
        _FIND,
    ),
    Known(
        "library-not-found",
        ("cudnn",),
        ("Unable to load any of ",),
        regex(rf"Unable to load any of \{{?{_LIBRARY}"),
        "a library could not be loaded",
        _FIND,
    ),
    Known(
        "dll-load-failed",
        ("cudnn",),
        ("DLL load failed while importing ", "[WinError 126]"),
        regex(r"(?:DLL load failed while importing \w+|\[WinError 126\][^\n]*?)(?:: )?(?P<library>[^\n'\"]*\.dll)?"),
        "a DLL (or one it needs) could not be loaded",
        "`cudnn-doctor which NAME.dll` shows the DLL it needs that is missing (zlibwapi.dll, a cuDNN sub-library, "
        "the VC++ runtime)",
    ),
    Known(
        "cudnn-status",
        ("cudnn",),
        ("CUDNN_STATUS_",),
        regex(r"CUDNN_STATUS_(?P<status>[A-Z_]+)"),
        "cuDNN returned an error status",
        "`cudnn-doctor check` compares the cuDNN loaded with the one the framework was built for; `cudnn-doctor "
        "verify` runs cuDNN alone",
    ),
    Known(
        "no-kernel-image",
        ("frameworks", "driver"),
        ("no kernel image is available for execution on the device", "cudaErrorNoKernelImageForDevice"),
        regex(r"no kernel image is available for execution on the device|cudaErrorNoKernelImageForDevice"),
        "the build has no code for this GPU",
        "install a build compiled for this GPU's compute capability: " + _PLAN,
    ),
    Known(
        "insufficient-driver",
        ("driver", "frameworks"),
        (
            "CUDA driver version is insufficient for CUDA runtime version",
            "cudaErrorInsufficientDriver",
            "The NVIDIA driver on your system is too old",
        ),
        regex(
            r"CUDA driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver|The NVIDIA "
            r"driver on your system is too old"
        ),
        "the driver is older than the CUDA runtime needs",
        "update the NVIDIA driver, or install a build for an older CUDA: " + _PLAN,
    ),
    Known(
        "library-not-found",
        ("frameworks",),
        ("LoadLibrary failed with error 126",),
        regex(
            r'LoadLibrary failed with error 126 "[^"\n]*" when trying to load '
            r'"(?:[^"\n]*[\\/])?(?P<library>[^"\n\\/]*\.dll)"'
        ),
        "a framework's GPU library (or a DLL it needs) could not be loaded",
        "`cudnn-doctor which NAME.dll` shows the DLL it needs that is missing",
    ),
    Known(
        "backend-failed",
        ("frameworks", "driver", "cudnn"),
        ("CUDA backend failed to initialize",),
        regex(r"CUDA backend failed to initialize"),
        "JAX could not start its CUDA backend (it runs on the CPU)",
        '`pip install -U "jax[cuda12]"` (or `jax[cuda13]`) brings matching CUDA and cuDNN wheels; ' + _PLAN,
    ),
    Known(
        "cpu-build",
        ("frameworks", "driver"),
        ("Torch not compiled with CUDA enabled",),
        regex(r"Torch not compiled with CUDA enabled"),
        "this PyTorch is a CPU-only build",
        "install a CUDA build of PyTorch: `cudnn-doctor plan --framework torch` prints the pip command for this "
        "machine",
    ),
    Known(
        "nvml",
        ("driver",),
        ("Failed to initialize NVML", "NVML: Driver/library version mismatch", "Driver/library version mismatch"),
        regex(r"Failed to initialize NVML[^\n]*|(?:NVML: )?Driver/library version mismatch"),
        "NVML (the driver's management library) failed: the driver's kernel module and libraries differ, or no "
        "driver runs",
        "after a driver update, reboot (the kernel module still loaded is the old one); `cudnn-doctor check` says "
        "which",
    ),
    Known(
        "no-driver",
        ("driver",),
        ("Found no NVIDIA driver on your system", "cudaErrorNoDevice", "no CUDA-capable device is detected"),
        regex(r"Found no NVIDIA driver on your system|cudaErrorNoDevice|no CUDA-capable device is detected"),
        "no usable NVIDIA driver or GPU",
        "install the NVIDIA driver (in a container: start it with the GPU); `cudnn-doctor check` says which",
    ),
    *(_said_as(CUDNN_VERSION, wording) for wording in CUDNN_MISMATCH),
    *(_said_as(NOT_LOADED, wording) for wording in UNLOADABLE),
)
