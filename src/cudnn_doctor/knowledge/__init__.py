"""Version-compatibility knowledge, kept as data files with a source on every row.

This module only loads, validates and looks up; the facts themselves live in `data/*.yaml`.
Tables load lazily (a check that never needs the TensorFlow table never parses it) and are
validated on load against their invariants, so a bad edit fails loudly in the tests.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from packaging.version import Version

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

from cudnn_doctor.errors import KnowledgeError
from cudnn_doctor.versions import canonical_name as canonicalize_name
from cudnn_doctor.versions import cuda_major_of_dll_number

DATA = Path(__file__).with_name("data")


@functools.cache
def table(name: str) -> dict[str, Any]:
    """One data file, parsed and checked for a `source` on every row."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(DATA / f"{name}.yaml", encoding="utf-8") as handle:
        document = yaml.load(handle, Loader=loader)
    if "reviewed" not in document:
        raise KnowledgeError(f"{name}.yaml: no 'reviewed' date")
    for key, rows in document.items():
        if isinstance(rows, list):
            for row in rows:
                if isinstance(row, dict) and not row.get("source"):
                    raise KnowledgeError(f"{name}.yaml: a row of {key!r} has no source: {row}")
    _VALIDATORS.get(name, lambda _doc: None)(document)
    return document


def _validate_cuda_driver(document: dict[str, Any]) -> None:
    """The minimum driver never decreases as the toolkit version rises."""
    rows = sorted(document["toolkits"], key=lambda r: Version(r["cuda"]))
    for os_name in ("linux", "windows"):
        for older, newer in zip(rows, rows[1:]):
            if Version(newer[os_name]) < Version(older[os_name]):
                raise KnowledgeError(f"cuda_driver.yaml: CUDA {newer['cuda']} needs an older {os_name} driver than CUDA {older['cuda']}")


_VALIDATORS = {"cuda_driver": _validate_cuda_driver}


class DriverRequirement(NamedTuple):
    """The oldest driver that runs code built with one CUDA version, and why."""

    cuda: Version
    driver: Version
    rule: str  # "minor-version compatibility" | "toolkit release"
    source: str


def driver_requirement(cuda: Version, os_name: str) -> Optional[DriverRequirement]:
    """What a CUDA runtime of version `cuda` needs from the driver (CUDA 11+ via minor-version compatibility)."""
    data = table("cuda_driver")
    major = cuda.release[0]
    for row in data["minor_version_compatibility"]:
        if row["major"] == major:
            return DriverRequirement(cuda, Version(row[os_name]), "minor-version compatibility", row["source"])
    release = _toolkit_row(cuda)
    if release is None:
        return None
    return DriverRequirement(cuda, Version(release[os_name]), "toolkit release", release["source"])


def _toolkit_row(cuda: Version) -> Optional[dict[str, Any]]:
    rows = [r for r in table("cuda_driver")["toolkits"] if Version(r["cuda"]) <= Version(f"{cuda.release[0]}.{(cuda.release + (0,))[1]}")]
    return max(rows, key=lambda r: Version(r["cuda"])) if rows else None


def max_cuda_for_driver(driver: Version, os_name: str) -> Optional[tuple[Version, str]]:
    """The newest CUDA release a driver runs, for drivers too old to say so themselves."""
    rows = [r for r in table("cuda_driver")["toolkits"] if Version(r[os_name]) <= driver]
    if not rows:
        return None
    best = max(rows, key=lambda r: Version(r["cuda"]))
    return Version(best["cuda"]), best["source"]


def cudart_name(cuda: Version, os_name: str, library: str = "cudart") -> Optional[str]:
    """The file a build against `cuda` loads for a CUDA library (`cudart64_110.dll`, `libcudart.so.12`, `cublas64_11.dll`)."""
    for row in table("cuda_libraries")[library]:
        key = Version(row["cuda"])
        if (len(key.release) == 1 and key.release[0] == cuda.release[0]) or key.release[:2] == cuda.release[:2]:
            return row["windows" if os_name == "windows" else "linux"]
    return None


def tensorflow_build(version: Version, os_name: str) -> Optional[dict[str, Any]]:
    """TensorFlow's tested build configuration for a release (matched on major.minor)."""
    rows = [r for r in table("tensorflow")["tested_builds"] if r["os"] == os_name]
    for row in rows:
        if Version(row["version"]).release[:2] == version.release[:2]:
            return row
    return None


def tensorflow_windows_gpu_last() -> tuple[Version, str]:
    row = table("tensorflow")["windows_native_gpu_last"]
    return Version(row["version"]), row["source"]


def torch_release(version: Version) -> Optional[dict[str, Any]]:
    for row in table("torch")["releases"]:
        if Version(row["version"]).release[:2] == version.release[:2]:
            return row
    return None


def torch_index_url(cuda: Version) -> str:
    tag = f"{cuda.release[0]}{(cuda.release + (0,))[1]}"
    return table("torch")["index_url"]["template"].format(tag=tag)


def python_range(text: str) -> SpecifierSet:
    """"3.8-3.11" → >=3.8, <3.12 (every patch release of the last minor included)."""
    from packaging.specifiers import SpecifierSet

    low, _, high = text.partition("-")
    high_v = Version(high or low)
    return SpecifierSet(f">={low},<{high_v.release[0]}.{high_v.release[1] + 1}")


def gpu_compute_capability(name: str) -> Optional[str]:
    wanted = _gpu_key(name)
    for row in table("gpus")["gpus"]:
        if _gpu_key(row["name"]) == wanted:
            return row["cc"]
    return None


def _gpu_key(name: str) -> str:
    key = " ".join(name.lower().split())
    return key[len("nvidia "):] if key.startswith("nvidia ") else key


def cuda_min_compute_capability(cuda_major: int) -> Optional[tuple[Version, str]]:
    for row in table("gpus")["cuda_releases"]:
        if row["cuda_major"] == cuda_major:
            return Version(row["min_cc"]), row["source"]
    return None


def frameworks() -> list[dict[str, Any]]:
    return table("frameworks")["frameworks"]


def framework(name: str) -> dict[str, Any]:
    return next(f for f in frameworks() if f["name"] == name)


def onnxruntime_build(version: Version) -> Optional[dict[str, Any]]:
    from packaging.specifiers import SpecifierSet

    for row in table("frameworks")["onnxruntime_builds"]:
        if version in SpecifierSet(row["versions"]):
            return row
    return None


def paddle_build(tag: str, os_name: str) -> Optional[dict[str, Any]]:
    for row in table("frameworks")["paddle_builds"]:
        if row["tag"] == tag and row["os"] == os_name:
            return row
    return None


def ineffective_variables() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in table("environment")["ineffective"]}


def known_variables() -> frozenset[str]:
    return frozenset(table("environment")["known"]["names"])


def reviewed_dates() -> dict[str, str]:
    return {path.stem: str(table(path.stem)["reviewed"]) for path in sorted(DATA.glob("*.yaml"))}


def loads_system_cuda(framework_name: str, packages: Any) -> bool:
    """Whether a framework, given the distributions installed beside it, loads CUDA from the system."""
    entry = framework(framework_name)
    if entry["loads_cuda"] != "system":
        return False
    bundled = {canonicalize_name(d) for d in entry.get("bundled_when", [])}
    return not (bundled & set(packages))


def cudnn_release(major: int) -> Optional[dict[str, Any]]:
    return next((r for r in table("cudnn")["releases"] if r["major"] == major), None)


def cudnn_file_name(part: str, major: int, os_name: str) -> str:
    """cudnn64_8.dll / cudnn_ops_infer64_8.dll on Windows, libcudnn.so.8 / libcudnn_ops_infer.so.8 on Linux."""
    if os_name == "windows":
        return f"cudnn_{part}64_{major}.dll" if part else f"cudnn64_{major}.dll"
    return f"libcudnn_{part}.so.{major}" if part else f"libcudnn.so.{major}"


def zlibwapi_required(cudnn_version: Version) -> bool:
    row = table("cudnn")["zlibwapi"]
    return Version(row["required_from"]) <= cudnn_version < Version(row["required_until"])


def library_provider(name: str) -> Optional[dict[str, str]]:
    """What provides a library file name, with the fix text's `{major}` filled in."""
    import re

    for row in table("libraries")["providers"]:
        match = re.match(row["pattern"], name)
        if match:
            groups = match.groupdict()
            major = groups.get("major") or str(cuda_major_of_dll_number(groups.get("digits") or "") or "")
            return {"provider": row["provider"].replace("{major}", major), "fix": row["fix"].replace("{major}", major), "source": row["source"]}
    return None
