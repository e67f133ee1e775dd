"""The GPU-stack errors a program prints, recognised in its output: what failed and which library it names.

Each pattern is an error text the frameworks and NVIDIA's libraries really print (quoted in the tests);
`areas` are the parts of the stack it points at, matched with the areas of `check`'s findings, and `next_step`
what to do whatever `check` finds (the finding's own fix, when there is one, is exact).

The scan is linear in the output and bounded per error: each pattern has literal `anchors` (found by `str.find`,
which never backtracks), its expression is matched only at an anchor and within `_REACH` characters of it, and
a library named before its anchor (`libx.so.9: cannot open shared object file`) is read backwards from the anchor,
at most a file name's length. A program's stderr may be one line of 50 MB (a progress bar, a dump): no expression
is ever tried at every position of it.
"""

from __future__ import annotations

from typing import Optional

from cudnn_doctor.lazyre import LazyPattern, regex
from cudnn_doctor.record import Record

_LIBRARY = r"(?P<library>[\w.+-]*(?:\.so(?:\.\d+)*|\.dll))"
_REACH = 1024  # characters an error's text may run from its anchor (a library name, a DLL path)
# A library name just before an anchor, read backwards: the reversed `[\w.+-]*(?:\.so(?:\.\d+)*|\.dll)`.
_LIBRARY_BEFORE = regex(r"(?:(?:\d+\.)*os\.|lld\.)[\w.+-]*")
_NAME_MAX = 255  # a file name's longest: how far back a library name before its anchor is read


class Known(Record):
    kind: str
    areas: tuple[str, ...]  # the `check` areas it points at: driver, toolkit, cudnn, frameworks
    anchors: tuple[str, ...]  # literal texts; the pattern is tried only where one of them starts
    pattern: LazyPattern[str]  # matched at an anchor, within _REACH characters of it
    says: str  # one line for the user
    next_step: str  # what to do, said whatever `check` finds
    library_before: bool = False  # the library is the name that ends just before the anchor


_FIND = "`cudnn-doctor which NAME` shows where the loader looks for it and what it needs; `cudnn-doctor check` names the fix"
_PLAN = "`cudnn-doctor plan` gives a framework build, CUDA and cuDNN that work together on this machine, with the commands"

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
    Known("library-not-found", ("cudnn",), ("Could not locate ",), regex(rf"Could not locate {_LIBRARY}"), "a library could not be found", _FIND),
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
        "`cudnn-doctor which NAME.dll` shows the DLL it needs that is missing (zlibwapi.dll, a cuDNN sub-library, the VC++ runtime)",
    ),
    Known(
        "cudnn-status",
        ("cudnn",),
        ("CUDNN_STATUS_",),
        regex(r"CUDNN_STATUS_(?P<status>[A-Z_]+)"),
        "cuDNN returned an error status",
        "`cudnn-doctor check` compares the cuDNN loaded with the one the framework was built for; `cudnn-doctor verify` runs cuDNN alone",
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
        ("CUDA driver version is insufficient for CUDA runtime version", "cudaErrorInsufficientDriver", "The NVIDIA driver on your system is too old"),
        regex(r"CUDA driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver|The NVIDIA driver on your system is too old"),
        "the driver is older than the CUDA runtime needs",
        "update the NVIDIA driver, or install a build for an older CUDA: " + _PLAN,
    ),
    Known(
        "library-not-found",
        ("frameworks",),
        ("LoadLibrary failed with error 126",),
        regex(r'LoadLibrary failed with error 126 "[^"\n]*" when trying to load "(?:[^"\n]*[\\/])?(?P<library>[^"\n\\/]*\.dll)"'),
        "a framework's GPU library (or a DLL it needs) could not be loaded",
        "`cudnn-doctor which NAME.dll` shows the DLL it needs that is missing",
    ),
    Known(
        "cudnn-not-loaded",
        ("cudnn",),
        ("Unable to load cuDNN", "Cannot load cudnn shared library"),
        regex(r"Unable to load cuDNN|Cannot load cudnn shared library"),
        "cuDNN could not be loaded",
        "`cudnn-doctor check` finds the cuDNN installs and which one the loader reaches first",
    ),
    Known(
        "gpu-libraries-not-loaded",
        ("cudnn", "toolkit"),
        ("Cannot dlopen some GPU libraries",),
        regex(r"Cannot dlopen some GPU libraries"),
        "TensorFlow could not load some of its GPU libraries (TF_CPP_MAX_VLOG_LEVEL=3 makes it name them)",
        "`pip install tensorflow[and-cuda]` brings the CUDA and cuDNN libraries it was built with; `cudnn-doctor check` names what is missing",
    ),
    Known(
        "cudnn-version",
        ("cudnn", "frameworks"),
        ("Loaded runtime CuDNN library: ", "Found cuDNN version ", "cuDNN version incompatibility"),
        regex(r"Loaded runtime CuDNN library: [\d.]+ but source was compiled with: [\d.]+|Found cuDNN version \d+, but|cuDNN version incompatibility"),
        "the cuDNN loaded is older than, or another major than, the one the framework was built with",
        "`cudnn-doctor check` names the copy loaded first; put the framework's own cuDNN first, or " + _PLAN,
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
        "install a CUDA build of PyTorch: `cudnn-doctor plan --framework torch` prints the pip command for this machine",
    ),
    Known(
        "nvml",
        ("driver",),
        ("Failed to initialize NVML", "NVML: Driver/library version mismatch", "Driver/library version mismatch"),
        regex(r"Failed to initialize NVML[^\n]*|(?:NVML: )?Driver/library version mismatch"),
        "NVML (the driver's management library) failed: the driver's kernel module and libraries differ, or no driver runs",
        "after a driver update, reboot (the kernel module still loaded is the old one); `cudnn-doctor check` says which",
    ),
    Known(
        "no-driver",
        ("driver",),
        ("Found no NVIDIA driver on your system", "cudaErrorNoDevice", "no CUDA-capable device is detected"),
        regex(r"Found no NVIDIA driver on your system|cudaErrorNoDevice|no CUDA-capable device is detected"),
        "no usable NVIDIA driver or GPU",
        "install the NVIDIA driver (in a container: start it with the GPU); `cudnn-doctor check` says which",
    ),
)


class Match(Record):
    kind: str
    areas: tuple[str, ...]
    says: str
    next_step: str
    text: str  # the line of the output
    library: Optional[str]


def scan(output: str) -> list[Match]:
    """Every known error in the output, each (kind, library) once, in the order printed (by line, then pattern)."""
    text = output.replace("\r", "\n") if "\r" in output else output  # a progress bar's carriage returns end lines too
    first: dict[tuple[str, Optional[str]], tuple[int, int, Match]] = {}
    for index, known in enumerate(PATTERNS):
        for line_start, hit in _hits(text, known):
            key = (hit.kind, hit.library)
            if key not in first or (line_start, index) < first[key][:2]:
                first[key] = (line_start, index, hit)
    return [hit for _, _, hit in sorted(first.values(), key=lambda entry: entry[:2])]


def _hits(text: str, known: Known) -> list[tuple[int, Match]]:
    """The first match of `known` on each line that has one, with the line's start, each library once (its first
    line). Each anchor is looked for from left to right; after a match the search goes on from the end of its line."""
    found: list[tuple[int, Match]] = []
    libraries: set[Optional[str]] = set()
    named = known.library_before or "library" in known.pattern.groupindex
    following = {anchor: text.find(anchor) for anchor in known.anchors}
    while True:
        anchor, at = min(following.items(), key=lambda item: item[1] if item[1] >= 0 else len(text) + 1)
        if at < 0:
            return found
        hit = _match_at(text, known, at)
        if hit is None:
            following[anchor] = text.find(anchor, at + 1)
            continue
        start, library = hit
        line_end = text.find("\n", at)
        line_end = len(text) if line_end < 0 else line_end
        if library not in libraries:
            libraries.add(library)
            line_start = text.rfind("\n", 0, at) + 1
            found.append(
                (line_start, Match(known.kind, known.areas, known.says, _next_step(known, library), _shown(text, line_start, line_end, start), library))
            )
            if not named:
                return found  # it names no library: every later match is the same error again
        following = {anchor: text.find(anchor, line_end) if position < line_end else position for anchor, position in following.items()}


def _next_step(known: Known, library: Optional[str]) -> str:
    """The next step with the library's file name in place of NAME (`cudnn-doctor which libcudnn_cnn_infer.so.8`)."""
    if not library:
        return known.next_step
    name = library.replace("\\", "/").rsplit("/", 1)[-1].rsplit(" ", 1)[-1]
    return known.next_step.replace("NAME.dll", name).replace("NAME", name)


def _match_at(text: str, known: Known, at: int) -> Optional[tuple[int, Optional[str]]]:
    """Where the error starts and the library it names, for the anchor at `at`; None if the pattern fails there."""
    reach = text.find("\n", at, at + _REACH)
    matched = known.pattern.match(text, at, reach if reach >= 0 else at + _REACH)
    if not matched:
        return None
    if known.library_before:
        behind = text[max(0, at - _NAME_MAX) : at][::-1]
        name = _LIBRARY_BEFORE.match(behind)
        if not name:
            return None
        return at - name.end(), name.group()[::-1]
    return at, matched.groupdict().get("library") or None


def _shown(text: str, line_start: int, line_end: int, start: int) -> str:
    """The line of an error, at most 300 characters: a long line from where the error starts."""
    if line_end - line_start <= 4096:
        return text[line_start:line_end].strip()[:300]
    return text[start : start + 300].strip()
