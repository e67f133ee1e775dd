"""What a framework build is, from its live report when there is one, else from its package metadata.

Shared by the probes (which libraries a build will ask for) and the checks: which CUDA and cuDNN a build was made for, whether it is a GPU build,
whether it saw a GPU, and the text it logged.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping, NamedTuple, Optional

from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.facts import Facts, PythonEnv
from cudnn_doctor.versions import canonical_name as canonicalize_name
from cudnn_doctor.versions import parse_cuda_version, parse_cudnn_version, parse_version

_LOCAL_CUDA = re.compile(r"\+cu(\d+)(\d)$")
_PADDLE_POST = re.compile(r"\.post(\d+)(\d)$")


class Build(NamedTuple):
    """One framework installed in one interpreter."""

    name: str
    python: PythonEnv
    report: Mapping[str, Any]
    package_version: Optional[str]

    @property
    def version_text(self) -> Optional[str]:
        return self.report.get("version") or self.package_version

    @property
    def version(self) -> Optional[Version]:
        return parse_version(self.version_text)

    @property
    def imported(self) -> bool:
        return "version" in self.report and not self.report.get("import_error")

    @property
    def text(self) -> str:
        """Everything the framework said: log, warnings, errors."""
        return "\n".join(str(self.report.get(k) or "") for k in ("log", "warning", "error", "import_error"))


def builds(facts: Facts, name: Optional[str] = None) -> Iterator[Build]:
    for python in facts.pythons:
        yield from (b for b in builds_of(python) if name is None or b.name == name)


def builds_of(python: PythonEnv) -> Iterator[Build]:
    """Every framework installed in one interpreter (by its distributions or its report)."""
    for framework in knowledge.frameworks():
        dists = [canonicalize_name(d) for d in framework.distributions]
        package = next((python.packages[d] for d in dists if d in python.packages), None)
        report = python.frameworks.get(framework.name)
        if package is None and report is None:
            continue
        yield Build(framework.name, python, report or {}, package)


def is_gpu_build(build: Build, os_name: str) -> Optional[bool]:
    """True / False when known, None when neither the report nor the version tells."""
    report = build.report
    if build.name == "torch":
        if "cuda" in report and build.imported:
            return report["cuda"] is not None
        text = build.version_text or ""
        return False if "+cpu" in text else True if "+cu" in text else None
    if build.name == "tensorflow":
        if "built_with_cuda" in report:
            return bool(report["built_with_cuda"])
        info = report.get("build_info") or {}
        if "is_cuda_build" in info:
            return bool(info["is_cuda_build"])
        if canonicalize_name("tensorflow-cpu") in build.python.packages:
            return False
        return None
    if build.name == "paddle":
        if "compiled_with_cuda" in report:
            return bool(report["compiled_with_cuda"])
        return "paddlepaddle-gpu" in build.python.packages or None
    if build.name == "onnxruntime":
        if "providers" in report:
            return "CUDAExecutionProvider" in report["providers"]
        return "onnxruntime-gpu" in build.python.packages or None
    if build.name == "jax":
        return None
    return None


def sees_gpu(build: Build) -> bool:
    """The framework's own live report says it can use a GPU."""
    report = build.report
    return bool(
        report.get("cuda_available") or report.get("gpus") or (report.get("gpu_count") or 0) > 0
        or any("cuda" in str(d).lower() or "gpu" in str(d).lower() for d in report.get("devices") or [])
    )


def build_cuda(build: Build, os_name: str) -> Optional[Version]:
    """The CUDA version the build was made for."""
    report, version = build.report, build.version
    if build.name == "torch":
        if report.get("cuda"):
            return parse_cuda_version(report["cuda"])
        tag = _LOCAL_CUDA.search(build.version_text or "")
        return Version(f"{tag.group(1)}.{tag.group(2)}") if tag else None
    if build.name == "tensorflow":
        info = report.get("build_info") or {}
        if info.get("cuda_version"):
            return parse_cuda_version(info["cuda_version"])
        row = knowledge.tensorflow_build(version, os_name) if version else None
        return Version(row.cuda) if row else None
    if build.name == "paddle":
        if report.get("cuda"):
            return parse_cuda_version(report["cuda"])
        tag = _PADDLE_POST.search(build.python.packages.get("paddlepaddle-gpu", ""))
        return Version(f"{tag.group(1)}.{tag.group(2)}") if tag else None
    if build.name == "onnxruntime":
        row = knowledge.onnxruntime_build(version) if version else None
        return Version(row.cuda) if row else None
    return None


def build_cudnn_major(build: Build, os_name: str) -> Optional[int]:
    """The cuDNN major version the build loads."""
    report, version = build.report, build.version
    if build.name == "tensorflow":
        info = report.get("build_info") or {}
        found = parse_cudnn_version(info.get("cudnn_version")) if info.get("cudnn_version") else None
        if found is None and version is not None:
            row = knowledge.tensorflow_build(version, os_name)
            found = Version(row.cudnn) if row else None
        return found.release[0] if found else None
    if build.name == "paddle":
        found = parse_cudnn_version(report.get("cudnn_version"))
        return found.release[0] if found else None
    if build.name == "onnxruntime":
        row = knowledge.onnxruntime_build(version) if version else None
        return int(row.cudnn) if row else None
    return None


class SystemLibraries(NamedTuple):
    """The CUDA runtime, cuBLAS and cuDNN file names a build loads from the system, and its CUDA version."""

    cuda: Optional[Version]
    cudart: Optional[str]
    cublas: Optional[str]
    cudnn: Optional[str]


def system_libraries(build: Build, os_name: str) -> Optional[SystemLibraries]:
    """What a GPU build that takes CUDA from the system will ask the loader for; None for builds that bundle it."""
    if not knowledge.loads_system_cuda(build.name, build.python.packages) or is_gpu_build(build, os_name) is False:
        return None
    cuda = build_cuda(build, os_name)
    cudart = knowledge.cudart_name(cuda, os_name) if cuda else None
    cublas = knowledge.cudart_name(cuda, os_name, "cublas") if cuda else None
    major = build_cudnn_major(build, os_name)
    cudnn = knowledge.cudnn_file_name("", major, os_name) if major is not None else None
    return SystemLibraries(cuda, cudart, cublas, cudnn)
