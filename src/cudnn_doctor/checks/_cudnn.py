"""cuDNN facts seen from a check: which installation a loaded file belongs to, its release, what a build wants."""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple, Optional

from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.builds import Build, build_cuda, build_cudnn_major, builds
from cudnn_doctor.facts import CudnnInstall, CudnnLibrary, Facts, LoadStep, Resolution
from cudnn_doctor.paths import PathRules
from cudnn_doctor.versions import parse_cudnn_version, parse_version

CUDNN_NAME = re.compile(r"(?i)^(lib)?cudnn")
_TF_LOADED = re.compile(r"Loaded runtime CuDNN library:\s*([\d.]+).*?source was compiled with:?\s*([\d.]+)", re.DOTALL)
_PADDLE = re.compile(r"compiled with CUDNN ([\d.]+), but CUDNN version in your machine is ([\d.]+)")
_JAX = re.compile(r"Found cuDNN version (\d+), but JAX was built against version (\d+)")
_TORCH = re.compile(r"PyTorch was compiled\s+against \((\d+), (\d+), (\d+)\) but found runtime version \((\d+), (\d+), (\d+)\)")
_FINE = re.compile(r"Loaded cuDNN version|cuDNN Version: \d|works well on \d+ GPU")


def release(version: Optional[str]) -> Optional[Version]:
    """major.minor.patch of a cuDNN version string (8.5.0.96 and 8.5.0 are one release)."""
    parsed = parse_version(version)
    if parsed is None:
        return None
    return Version(".".join(str(p) for p in (*parsed.release, 0, 0)[:3]))


def owner(facts: Facts, path: Optional[str]) -> tuple[Optional[CudnnInstall], Optional[CudnnLibrary]]:
    if path is None:
        return None, None
    rules = PathRules(facts.os)
    for install in facts.cudnn:
        for library in install.libraries:
            if rules.same(library.path, path):
                return install, library
    return None, None


def library_release(facts: Facts, path: Optional[str]) -> Optional[Version]:
    install, library = owner(facts, path)
    if library is not None and library.version:
        return release(library.version)
    return release(install.version) if install else None


class Wanted(NamedTuple):
    """What cuDNN a build needs: the same major, and at least this version (when known)."""

    major: int
    minimum: Optional[Version]
    source: str


def wanted_cudnn(build: Build, os_name: str) -> Optional[Wanted]:
    version = build.version
    if build.name == "tensorflow" and version is not None:
        row = knowledge.tensorflow_build(version, os_name)
        if row:
            tested = Version(row.cudnn)
            return Wanted(tested.release[0], tested, row.source)
    if build.name == "paddle":
        tag = re.search(r"\.(post\d+)$", build.python.packages.get("paddlepaddle-gpu", ""))
        row = knowledge.paddle_build(tag.group(1), os_name) if tag else None
        if row:
            return Wanted(Version(row.cudnn).release[0], Version(row.cudnn), row.source)
        reported = parse_cudnn_version(build.report.get("cudnn_version"))
        if reported:
            return Wanted(reported.release[0], reported, "paddle.version.cudnn()")
    major = build_cudnn_major(build, os_name)
    return Wanted(major, None, "the build's cuDNN major") if major else None


def logged_mismatch(build: Build) -> Optional[tuple[str, str]]:
    """(loaded, compiled with) when the framework's own messages say the cuDNN versions do not match
    (TensorFlow, PaddlePaddle, JAX, and PyTorch when a system cuDNN shadows its own)."""
    text = build.text
    for pattern, order in ((_TF_LOADED, (1, 2)), (_PADDLE, (2, 1))):
        match = pattern.search(text)
        if match:
            return match.group(order[0]), match.group(order[1])
    match = _JAX.search(text)
    if match:
        return str(parse_cudnn_version(int(match.group(1)))), str(parse_cudnn_version(int(match.group(2))))
    match = _TORCH.search(text)
    if match:
        return ".".join(match.group(4, 5, 6)), ".".join(match.group(1, 2, 3))
    return None


def reports_cudnn_loaded(build: Build) -> bool:
    """The framework's own report says cuDNN loaded: that outranks emulation."""
    report = build.report
    if build.name == "torch":
        return bool(report.get("cuda_available")) and bool(report.get("cudnn"))
    return bool(_FINE.search(build.text)) and not logged_mismatch(build)


def resolutions_with_builds(facts: Facts) -> Iterator[tuple[Resolution, Build]]:
    by_key = {(b.python.executable, b.name): b for b in builds(facts)}
    for resolution in facts.resolutions:
        build = by_key.get((resolution.executable, resolution.framework))
        if build is not None:
            yield resolution, build


def cudnn_steps(resolution: Resolution) -> list[LoadStep]:
    return [s for s in resolution.steps if CUDNN_NAME.match(s.name.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]) and not s.reused]


def front_step(resolution: Resolution) -> Optional[LoadStep]:
    return next((s for s in cudnn_steps(resolution) if s.how == "root" and re.match(r"(?i)^(cudnn64_\d+\.dll|libcudnn\.so\.\d+)$", s.name)), None) or next(
        (s for s in cudnn_steps(resolution) if re.search(r"(?i)(cudnn64_\d+\.dll|libcudnn\.so\.\d+)$", s.name)), None)


def build_cuda_major(build: Build, os_name: str) -> Optional[int]:
    cuda = build_cuda(build, os_name)
    return cuda.release[0] if cuda else None
