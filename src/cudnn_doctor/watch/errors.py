"""The GPU-stack errors a program prints, recognised in its output: what failed and which library it names.

Each pattern is an error text the frameworks and NVIDIA's libraries really print (quoted in the tests);
`area` is the part of the stack it points at, matched with the areas of `check`'s findings.
"""

from __future__ import annotations

from typing import Optional

from cudnn_doctor.lazyre import LazyPattern, regex
from cudnn_doctor.record import Record

_LIBRARY = r"(?P<library>[\w.+-]*(?:\.so(?:\.\d+)*|\.dll))"


class Known(Record):
    kind: str
    area: str  # the `check` area it points at: driver, toolkit, cudnn, frameworks
    pattern: LazyPattern[str]
    says: str  # one line for the user


PATTERNS = (
    Known("library-not-found", "cudnn", regex(rf"{_LIBRARY}: cannot open shared object file"), "a library could not be found"),
    Known("library-not-found", "cudnn", regex(rf"Could not load (?:library|dynamic library) '?{_LIBRARY}'?"), "a library could not be loaded"),
    Known("library-not-found", "cudnn", regex(rf"Could not locate {_LIBRARY}"), "a library could not be found"),
    Known("library-not-found", "cudnn", regex(rf"Unable to load any of \{{?{_LIBRARY}"), "a library could not be loaded"),
    Known(
        "dll-load-failed",
        "cudnn",
        regex(r"(?:DLL load failed while importing \w+|\[WinError 126\][^\n]*?)(?:: )?(?P<library>[^\n'\"]*\.dll)?"),
        "a DLL (or one it needs) could not be loaded",
    ),
    Known("cudnn-status", "cudnn", regex(r"CUDNN_STATUS_(?P<status>[A-Z_]+)"), "cuDNN returned an error status"),
    Known(
        "no-kernel-image",
        "frameworks",
        regex(r"no kernel image is available for execution on the device|cudaErrorNoKernelImageForDevice"),
        "the build has no code for this GPU",
    ),
    Known(
        "driver-too-old",
        "driver",
        regex(r"CUDA driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver|The NVIDIA driver on your system is too old"),
        "the driver is older than the CUDA runtime needs",
    ),
    Known(
        "no-driver",
        "driver",
        regex(r"Found no NVIDIA driver on your system|cudaErrorNoDevice|no CUDA-capable device is detected"),
        "no usable NVIDIA driver or GPU",
    ),
)


class Match(Record):
    kind: str
    area: str
    says: str
    text: str  # the line of the output
    library: Optional[str]


def scan(output: str) -> list[Match]:
    """Every known error in the output, each (kind, library) once, in the order printed."""
    found: list[Match] = []
    seen: set[tuple[str, Optional[str]]] = set()
    for line in output.splitlines():
        for known in PATTERNS:
            hit = known.pattern.search(line)
            if not hit:
                continue
            library = hit.groupdict().get("library") or None
            if (known.kind, library) in seen:
                continue
            seen.add((known.kind, library))
            found.append(Match(known.kind, known.area, known.says, line.strip()[:300], library))
    return found
