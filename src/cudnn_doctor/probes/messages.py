"""What a framework's own messages mean, in every era's wording: one catalogue, read by `builds`.

Each entry is a meaning (the cuDNN loaded is not the one the build needs; a GPU library could not be
loaded though its file is not named) and the wordings that say it, oldest first, with the versions they
state parsed out. A message is evidence: a check trusts it before the emulation and before any table.
Versions printed as integers (cuDNN's `CUDNN_VERSION`, 7101, 90300; PyTorch's tuples (8, 5, 0)) are
written as releases ("7.1.1", "9.3.0", "8.5.0").
"""

from __future__ import annotations

import re
from typing import Optional

from cudnn_doctor.facts import CudnnMismatch, Unloadable
from cudnn_doctor.lazyre import LazyPattern, regex
from cudnn_doctor.versions import parse_cudnn_version

_V = r"\d+(?:\.\d+)*"
# The cuDNN loaded is not the one the build needs: named groups `loaded`, `compiled` and, where stated, `minimum`.
CUDNN_MISMATCH: tuple[LazyPattern[str], ...] = (
    # TensorFlow 1.x (integers: "Loaded runtime CuDNN library: 7101 (compatibility version 7100) but source was compiled
    # with 7003 (compatibility version 7000)"), TensorFlow 2.x and XLA under JAX ("... 8.1.0 but source was compiled with: 8.6.0")
    regex(rf"Loaded runtime CuDNN library:\s*(?P<loaded>{_V}).*?source was compiled with:?\s*(?P<compiled>{_V})", re.DOTALL),
    # PaddlePaddle's device check
    regex(rf"compiled with CUDNN (?P<compiled>{_V}), but CUDNN version in your machine is (?P<loaded>{_V})"),
    # JAX 0.4.x (before 0.4.26): "Found cuDNN version 8600, but JAX was built against version 8906, which is newer."
    regex(r"Found cuDNN version (?P<loaded>\d+), but JAX was built against version (?P<compiled>\d+)", re.IGNORECASE),
    # JAX 0.4.26+ (_check_cuda_versions): "Outdated cuDNN installation found.\nVersion JAX was built against: 8907\n
    # Minimum supported: 9100\nInstalled version: 8907" (the installed one may equal the build's yet be under the minimum)
    regex(
        r"Outdated cuDNN installation found\.?\s*Version JAX was built against:\s*(?P<compiled>\d+)\s*"
        r"Minimum supported:\s*(?P<minimum>\d+)\s*Installed version:\s*(?P<loaded>\d+)",
        re.IGNORECASE,
    ),
    # PyTorch 1.12+ as tuples: "compiled  against (8, 5, 0) but found runtime version (8, 3, 3)"; 1.12.0 "but linked against (8, 0, 3)"
    regex(r"PyTorch was compiled\s+against \((?P<compiled>\d+,\s*\d+,\s*\d+)\) but (?:found runtime version|linked against) \((?P<loaded>\d+,\s*\d+,\s*\d+)\)"),
    # PyTorch before 1.12 as integers: "cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600"
    regex(r"PyTorch was compiled\s+against (?P<compiled>\d+) but linked against (?P<loaded>\d+)"),
)

# A GPU library the framework could not load, said by what it is rather than by its file name: group `part`
# (lowercased: "cudnn", "cusolver"); an entry without the group names no library ("gpu").
UNLOADABLE: tuple[LazyPattern[str], ...] = (
    # TensorFlow 2.x: the summary after its dso_loader lines, and the only line left when those are VLOG-only (2.16+)
    regex(r"Cannot dlopen some GPU libraries"),
    # PaddlePaddle 1.x-2.x dynload: "Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion."
    regex(r"Cannot load (?P<part>cu\w+) shared library", re.IGNORECASE),
    # JAX (jaxlib's version checks): "Unable to load cuDNN. Is it installed?", "Unable to load cuSOLVER.", "Unable to load CUDA."
    regex(r"Unable to load (?P<part>(?i:cu)[A-Za-z]+)\b(?!\s*\w*\.(?:so|dll))"),
)


def cudnn_mismatch(text: str) -> Optional[CudnnMismatch]:
    """(loaded, compiled with, minimum) when the framework's own messages say the cuDNN it found is not one it can use."""
    for pattern in CUDNN_MISMATCH:
        match = pattern.search(text)
        if match:
            found = match.groupdict()
            minimum = found.get("minimum")
            return CudnnMismatch(
                loaded=_release(found["loaded"]),
                compiled=_release(found["compiled"]),
                message=_line_at(text, match.start()),
                minimum=_release(minimum) if minimum else None,
            )
    return None


def unloadable(text: str) -> tuple[Unloadable, ...]:
    """Each GPU library part the messages say could not be loaded without naming its file, once, in the order printed."""
    found: dict[str, Unloadable] = {}
    for pattern in UNLOADABLE:
        for match in pattern.finditer(text):
            part = (match.groupdict().get("part") or "gpu").lower()
            found.setdefault(part, Unloadable(part, _line_at(text, match.start())))
    return tuple(sorted(found.values(), key=lambda u: text.find(u.message)))


def _release(text: str) -> str:
    """A version as a release: "8, 5, 0" -> "8.5.0"; cuDNN's integer 7101 -> "7.1.1"; dotted text stays as written."""
    if "," in text:
        return ".".join(part.strip() for part in text.split(","))
    if text.isdigit() and len(text) >= 4:
        version = parse_cudnn_version(int(text))
        return str(version) if version else text
    return text


def _line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return text[start : end if end >= 0 else None].strip()[:300]
