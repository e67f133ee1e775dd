"""What a run-time load name asks for: one file, one of several versions, or any version.

A binary that loads a library by name may carry several versions of it (`libcudart.so.12`
beside `libcudart.so.13`, `nvrtc64_120_0.dll` beside `nvrtc64_130_0.dll`): it tries them in
turn, so any one of them satisfies it (a try-list). It may also carry only the start of the
name and add the version at run time (`libnvrtc.so.%d`, `libnvrtc.so.`, `cudnn64_%d.dll`): a
pattern, satisfied by any file of that shape. Pure functions of the names; no file is read.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record

_PLACEHOLDER = r"%[0-9]*[dui]"
_PART = rf"(?:[0-9]+|{_PLACEHOLDER})+"  # "12", "%d", "%d%d"
_ELF = regex(rf"^(?P<stem>.+?\.so)(?:\.(?P<version>{_PART}(?:\.{_PART})*\.?|))?$")
_PE = regex(rf"^(?P<stem>.+?)(?P<version>(?:64)?_{_PART}(?:_{_PART})*)?\.dll$", re.IGNORECASE)


class Spelling(Record):
    """A library name split into its family (`libnvrtc.so`, `nvrtc`) and its version part."""

    stem: str  # case-folded on Windows
    version: Optional[str]  # "12", "64_120_0", "%d", "" (a trailing dot: the version follows); None when unversioned


def spelling(name: str) -> Optional[Spelling]:
    """The family and version of a library name; None for a name of no known shape."""
    if name.lower().endswith(".dll"):
        match = _PE.match(name)
        return Spelling(match.group("stem").lower(), match.group("version")) if match else None
    match = _ELF.match(name)
    return Spelling(match.group("stem"), match.group("version")) if match else None


def family(name: str) -> str:
    """What names of one library share across versions (`libcudart.so`, `cudart`); the name itself when of no known
    shape."""
    found = spelling(name)
    return found.stem if found else name


def is_pattern(name: str) -> bool:
    """A name the library completes at run time: a printf placeholder, or a trailing dot after `.so`."""
    return re.search(_PLACEHOLDER, name) is not None or (name.endswith(".") and ".so." in name)


def pattern_regex(name: str, windows: bool) -> re.Pattern[str]:
    """The file names a pattern stands for: each placeholder a number, a trailing dot any version."""
    parts = re.split(f"({_PLACEHOLDER})", name)
    body = "".join(r"[0-9]+" if re.fullmatch(_PLACEHOLDER, p) else re.escape(p) for p in parts)
    if name.endswith("."):
        body += r"[0-9]+(?:\.[0-9]+)*"
    return re.compile(f"^{body}$", re.IGNORECASE if windows else 0)


def _order(name: str) -> tuple[int, tuple[int, ...]]:
    """Plain names newest first, a fuller name before the one it extends (cuDNN 9's front tries
    `libcudnn_graph.so.9.28.1` before `libcudnn_graph.so.9`), then unversioned, then patterns (the widest)."""
    if is_pattern(name):
        return (2, ())
    found = spelling(name)
    version = re.sub(r"^64(?=_)", "", found.version or "") if found else ""  # cudart64_12: "64" is the word size
    numbers = tuple(-int(n) for n in re.findall(r"[0-9]+", version))
    return (0 if found and found.version else 1, (*numbers, 1))  # the closing 1 sorts a prefix after its extensions


def group_loads(names: Sequence[str]) -> list[tuple[str, ...]]:
    """The names of one binary as try-lists: names of one family that differ only in version form
    one group (any member satisfies it); every other name is a group of its own. First-seen order."""
    groups: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        groups.setdefault(family(name), []).append(name)
    return [tuple(sorted(members, key=_order)) for members in groups.values()]


# The CUDA libraries native code runs GPU work through (issue 29): the runtime and the math, compiler,
# DNN, communication and inference libraries, not the driver (libcuda / nvcuda). A name may carry a
# bundler's hash (`libcublas-3b81d170.so.12`, delvewheel's `cublas64_12-1a2b.dll`) or none at all.
_CUDA_FAMILY = regex(
    r"(?i)^(?:lib)?(?:cudart|cublas|cublaslt|cufft|cufftw|curand|cusolver|cusolvermg|cusparse|nvrtc|nvjitlink"
    r"|cudnn|nccl|nvinfer|cudss)"
    r"(?:64)?(?:[_.\-]|$)"
)


def is_cuda_family(name: str) -> bool:
    """libcublas.so.12, cublas64_12.dll, cudnn_ops64_9.dll, libnccl.so.2, nvinfer_10.dll: a CUDA-family library name."""
    return bool(_CUDA_FAMILY.match(name.replace("\\", "/").rsplit("/", 1)[-1]))


def cuda_family_names(imports: Sequence[str], loads: Sequence[str]) -> tuple[str, ...]:
    """The CUDA-family names among a binary's imports and run-time loads, imports first, each once."""
    return tuple(dict.fromkeys(n for n in (*imports, *loads) if is_cuda_family(n)))
