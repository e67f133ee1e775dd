"""Turning the many spellings of CUDA and cuDNN versions into `packaging` versions.

NVML says 12040, nvidia-smi says "12.4", TensorFlow's Windows build_info says "64_112",
torch says 8902 for cuDNN 8.9.2 and 90501 for cuDNN 9.5.1. Everything past this module
compares `Version` objects only.
"""

from __future__ import annotations

import re
from typing import Optional, Union

from packaging.version import InvalidVersion, Version

_TF_WINDOWS_TAG = r"^64_(\d+)$"
_LEADING_VERSION = r"(\d+(?:\.\d+)*)"
_HEADER_DEFINE = r"#define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d+)"


def cudnn_header_version(text: str) -> Optional[str]:
    """ "MAJOR.MINOR.PATCHLEVEL" from the #defines of cudnn_version.h (or cudnn.h before 8), None without CUDNN_MAJOR."""
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


def parse_cuda_version(value: Union[str, int, None]) -> Optional[Version]:
    """A CUDA version from NVML's integer (12040), TF's Windows tag ("64_112") or text ("11.2")."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Version(f"{value // 1000}.{(value % 1000) // 10}") if value >= 0 else None
    text = str(value).strip()
    tag = re.match(_TF_WINDOWS_TAG, text)
    if tag:
        digits = tag.group(1)
        if len(digits) == 1:
            return Version(f"{digits}.0")
        return Version(f"{int(digits[:-1])}.{digits[-1]}")
    if text.isascii() and text.isdigit() and len(text) >= 4:
        return parse_cuda_version(int(text))
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
    cudart64_101 → 10, cublas64_80 → 8. A number of 20 or more is major and minor run together
    (the last digit is the minor); below 20 it is the major alone. None when it is not a number."""
    if not (number.isascii() and number.isdigit()):
        return None
    value = int(number)
    return value // 10 if value >= 20 else value


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
