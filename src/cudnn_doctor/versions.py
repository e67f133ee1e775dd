"""Turning the many spellings of CUDA and cuDNN versions into `packaging` versions.

NVML says 12040, nvidia-smi says "12.4", TensorFlow's Windows build_info says "64_112",
torch says 8902 for cuDNN 8.9.2 and 90501 for cuDNN 9.5.1. Everything past this module
compares `Version` objects only.
"""

from __future__ import annotations

import re
from typing import Optional, Union

from packaging.version import InvalidVersion, Version

from cudnn_doctor.record import Record

_TF_WINDOWS_TAG = r"^64_(\d+)$"
_LEADING_VERSION = r"(\d+(?:\.\d+)*)"
_HEADER_DEFINE = r"#define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d+)"


def cudnn_header_version(text: str) -> Optional[str]:
    """ "MAJOR.MINOR.PATCHLEVEL" from the #defines of cudnn_version.h (or cudnn.h before 8), None without
    CUDNN_MAJOR."""
    values = dict(re.findall(_HEADER_DEFINE, text))
    if "MAJOR" not in values:
        return None
    return f"{values['MAJOR']}.{values.get('MINOR', '0')}.{values.get('PATCHLEVEL', '0')}"


def parse_version(value: object) -> Optional[Version]:
    """The leading dotted number of `value` ("2.0.0+cpu" → 2.0.0, "552.44" → 552.44)."""
    if value is None:
        return None
    match = re.search(_LEADING_VERSION, str(value))
    if not match:
        return None
    try:
        return Version(match.group(1))
    except InvalidVersion:
        return None


# --- CUDA build tags --------------------------------------------------------------------------------
#
# Package names, local versions and build strings write a CUDA release without its dot. The digits are
# always split the way NVIDIA, PyTorch, PaddlePaddle, CuPy, JAX and TensorFlow split them, never read as
# one number (a build tag is never CUDA 112):
#
# | digits                 | CUDA                                  | examples                                    |
# |------------------------|---------------------------------------|---------------------------------------------|
# | one digit 7-9          | that major alone                      | TensorFlow's Windows "64_9"                 |
# | two digits 10-19       | that major alone                      | cu12, cuda12, cuda13, 64_11 (a major)        |
# | two digits 70-99       | X.Y for CUDA 7-9                      | cu80 → 8.0, cu92 → 9.2, cuda90 → 9.0        |
# | three digits 100-199   | XX.Y                                  | 100 → 10.0, 101 → 10.1, 112 → 11.2, 118 → 11.8, 121
# → 12.1, 130 → 13.0 |
# | digits then "x"        | that major alone, any minor           | cupy-cuda11x, cupy-cuda12x, cuda12x          |
# | major "." minor        | that release (conda's build strings)   | cuda10.2_0 → 10.2, cuda11.3_0 → 11.3        |
# | anything else          | not a CUDA tag (None)                 | cu1180, cu20, cu5, cu012, +cpu, +rocm6.0    |
#
# Where each shape appears is `CUDA_TAG_SHAPES` (a name, a pattern with the group `digits` and an
# optional `x`, and the places it is read from); every probe that reads a CUDA release from a tag goes
# through `cuda_in_tag(text, shape)`, and every tag the planner writes comes from `cuda_tag`.


class CudaTagShape(Record):
    """One shape of a CUDA build tag and where it appears."""

    pattern: str  # a regular expression with the group "digits" (and "x" for a major-only wildcard)
    where: str  # who writes it, with an example


CUDA_TAG_SHAPES: dict[str, CudaTagShape] = {
    "torch-local": CudaTagShape(
        r"\+cu(?P<digits>\d+)$",
        "PyTorch's local version: torch 2.1.0+cu121, 1.7.1+cu110, 1.4.0+cu92, torchvision 0.15.2+cu118",
    ),
    "paddle-post": CudaTagShape(
        r"\.post(?P<digits>\d+)$", "paddlepaddle-gpu's release suffix: 2.2.0.post112, 2.6.1.post120, 2.3.2.post101"
    ),
    "jaxlib-local": CudaTagShape(
        r"\+cuda(?P<digits>\d+)(?P<x>x)?(?:\.cudnn\d+)?$",
        "jaxlib's local version: 0.4.23+cuda12.cudnn89, 0.3.25+cuda11.cudnn82, 0.1.69+cuda111",
    ),
    "jax-plugin": CudaTagShape(
        r"^jax-cuda(?P<digits>\d+)-(?:plugin|pjrt)$",
        "JAX's CUDA plugin distributions: jax-cuda12-plugin, jax-cuda13-pjrt",
    ),
    "cupy-wheel": CudaTagShape(
        r"^cupy-cuda(?P<digits>\d+)(?P<x>x)?$",
        "CuPy's wheel names: cupy-cuda12x, cupy-cuda11x, cupy-cuda113, cupy-cuda102, cupy-cuda80",
    ),
    "nvidia-wheel": CudaTagShape(
        r"-cu(?P<digits>\d+)$",
        "NVIDIA's pip wheels: nvidia-cudnn-cu12, nvidia-cublas-cu11, nvidia-cuda-runtime-cu117, nvidia-cudnn-cu116",
    ),
    "index": CudaTagShape(
        r"(?:^|/)cu(?P<digits>\d+)/?$",
        "pip indexes and build names: https://download.pytorch.org/whl/cu121, the planner's torch build cu118",
    ),
    "tf-windows": CudaTagShape(
        r"^64_(?P<digits>\d+)$", 'TensorFlow\'s Windows build_info cuda_version: "64_112", "64_110", "64_101"'
    ),
    "conda-build": CudaTagShape(
        r"(?i)cuda(?P<digits>\d+)(?:\.(?P<minor>\d+))?",
        "a conda package's build string: cudnn 7.6.5 cuda10.2_0, cudnn 8.2.1 cuda11.3_0, cuda112_0, cuda11_0",
    ),
    "bare": CudaTagShape(r"^(?P<digits>\d{1,3})(?P<x>x)?$", 'a CUDA written as its tag alone: "112", "12", "12x"'),
}


def cuda_of_digits(digits: str, major_only: bool = False) -> Optional[Version]:
    """The CUDA release a tag's digits name, as the table above splits them ("112" → 11.2, "80" → 8.0,
    "12" → 12, with `major_only` (a trailing "x") "12" → 12); None for digits no CUDA release is written as."""
    if not (digits.isascii() and digits.isdigit()) or digits.startswith("0"):
        return None
    number = int(digits)
    if major_only:
        return Version(str(number)) if 7 <= number <= 19 else None
    if len(digits) == 1:
        return Version(digits) if number >= 7 else None
    if len(digits) == 2:
        if 10 <= number <= 19:
            return Version(digits)
        return Version(f"{digits[0]}.{digits[1]}") if number >= 70 else None
    if len(digits) == 3 and digits[0] == "1":
        return Version(f"{digits[:2]}.{digits[2]}")
    return None


def cuda_in_tag(text: object, shape: str) -> Optional[Version]:
    """The CUDA release in `text` written in one of `CUDA_TAG_SHAPES` (searched, so a tag may end a longer
    text: "2.1.0+cu121"); a major alone is a one-part `Version` ("12"). None when the shape is absent or
    its digits name no CUDA release ("+cu1180")."""
    if text is None:
        return None
    match = re.search(CUDA_TAG_SHAPES[shape].pattern, str(text).strip())
    if not match:
        return None
    groups = match.groupdict()
    if groups.get("minor") is not None:  # dotted (cuda11.3): the digits before the dot are a major
        major = cuda_of_digits(match.group("digits"), major_only=True)
        return Version(f"{major}.{int(groups['minor'])}") if major is not None else None
    return cuda_of_digits(match.group("digits"), major_only=bool(groups.get("x")))


def cuda_text(version: Version) -> str:
    """ "11.2" for 11.2, "12" for a major alone: how a report and a `Known` value write a tag's CUDA."""
    return ".".join(str(part) for part in version.release[:2])


def cuda_tag(cuda: Union[str, Version]) -> str:
    """The digits a tag writes for a CUDA release: 12.1 → "121", 8.0 → "80", 10.0 → "100" (the inverse of
    `cuda_of_digits`; index URLs and build names are made with it)."""
    version = cuda if isinstance(cuda, Version) else Version(str(cuda))
    release = version.release + (0,)
    return f"{release[0]}{release[1]}"


def parse_cuda_version(value: Union[str, int, None]) -> Optional[Version]:
    """A CUDA version from NVML's integer (12040), a tag ("64_112", "112": 11.2) or text ("11.2")."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Version(f"{value // 1000}.{(value % 1000) // 10}") if value >= 0 else None
    text = str(value).strip()
    if re.match(_TF_WINDOWS_TAG, text):
        return cuda_in_tag(text, "tf-windows")
    if text.isascii() and text.isdigit():
        return parse_cuda_version(int(text)) if len(text) >= 4 else cuda_in_tag(text, "bare")
    return parse_version(text)


def parse_cudnn_version(value: Union[str, int, None]) -> Optional[Version]:
    """A cuDNN version from its integer (8500 → 8.5.0, 90501 → 9.5.1) or text ("8.2", "64_8").

    The integer changed encoding with cuDNN 9: MAJOR*1000+MINOR*100+PATCH up to 8,
    MAJOR*10000+MINOR*100+PATCH from 9 on.
    """
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, str) and value.isascii() and value.isdigit() and len(value) >= 4):
        number = int(value)
        if number < 0:
            return None
        major, rest = (number // 10000, number % 10000) if number >= 10000 else (number // 1000, number % 1000)
        return Version(f"{major}.{rest // 100}.{rest % 100}")
    text = str(value).strip()
    tag = re.match(_TF_WINDOWS_TAG, text)
    if tag:
        return Version(tag.group(1))
    return parse_version(text)


def cuda_major_of_dll_number(number: str) -> Optional[int]:
    """The CUDA major in the number of a Windows CUDA DLL's name: cublas64_12 → 12, cudart64_110 → 11,
    cudart64_101 → 10, cublas64_80 → 8: the digits of a CUDA build tag (`cuda_of_digits`), so 10-19 is a
    major alone and 70-99 or 100-199 a major and minor run together. None when they name no CUDA release."""
    version = cuda_of_digits(number)
    return version.release[0] if version is not None else None


def major_minor(version: Version) -> str:
    """ "12.4" for 12.4.1; used in messages and table keys."""
    release = version.release + (0,)
    return f"{release[0]}.{release[1]}"


_SEPARATORS = r"[-_.]+"


def canonical_name(name: str) -> str:
    """A distribution name normalized as PEP 503 defines it ("Paddle_GPU" → "paddle-gpu").

    The same rule as packaging.utils.canonicalize_name, written out because importing
    packaging.utils pulls in packaging.tags (logging, sysconfig, platform): a third of the
    time budget of `check --no-frameworks`.
    """
    return re.sub(_SEPARATORS, "-", name).lower()
