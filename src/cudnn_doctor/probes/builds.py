"""What each framework build is, read once: its live report, its distribution version, the tables.

This is the only place that knows the shape of each framework's report and the wording of
its log messages, in every era; checks get a typed `FrameworkBuild` and never parse text.
Each version it states says how it is known (live report, distribution version, knowledge
row with its vendor source), because a report must tell evidence from a table's guess.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Optional

from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.facts import (
    BUNDLED,
    DIST_VERSION,
    KNOWLEDGE,
    LIVE,
    NVIDIA_WHEELS,
    SYSTEM,
    CudnnMismatch,
    FrameworkBuild,
    Known,
    LoadFailure,
    PythonEnv,
    SystemLibraries,
)
from cudnn_doctor.versions import canonical_name, parse_cuda_version, parse_cudnn_version, parse_version

_LOCAL_CUDA = re.compile(r"\+cu(\d+)(\d)$")  # torch 2.1.0+cu121
_PADDLE_POST = re.compile(r"\.(post(\d+)(\d))$")  # paddlepaddle-gpu 2.2.0.post112

# Messages that name a library the framework could not load, across frameworks and eras.
# A framework's own request, by name: TensorFlow 2's dso_loader ("Could not load dynamic library"), TensorFlow 1's
# ("Could not dlopen library"), TensorFlow 1's Windows self-check ("Could not find 'cudnn64_7.dll'. TensorFlow
# requires"), PaddlePaddle's dynamic loader (its try-list, ';'-separated: "cufft64_120.dll;cufft64_12.dll").
_DIRECT_LOADS = (
    re.compile(r"Could not (?:load dynamic|dlopen) library '([^']+)'"),
    re.compile(r"Could not find '([^']+\.dll)'\. TensorFlow requires"),
    re.compile(r"The third-party dynamic library \(([^)]+)\) that Paddle depends on"),
)
_DEPENDENCIES = (  # ONNX Runtime's CUDA provider and what it could not find (Linux, then Windows since 1.19)
    re.compile(r"Failed to load library (\S+) with error: ([\w.+-]+): cannot open shared object file"),
    re.compile(r'Error loading "([^"]+)" which depends on "([^"]+)" which is missing'),
)
_OTHER_LOADS = (
    re.compile(r"([\w.+-]+\.so[.\d]*): cannot open shared object file"),  # dlopen / ImportError on Linux
    re.compile(r"Could not find the DLL\(s\) '([^']+)'"),  # Python's ctypes / TensorFlow's self-check on Windows
    re.compile(r"Could not locate ([\w.]+\.dll)"),  # cuDNN 8's own loader on Windows
)
_DRIVER_TOO_OLD = re.compile(r"driver on your system is too old|CUDA driver version is insufficient", re.IGNORECASE)
_NO_KERNEL = re.compile(r"no kernel image is available|is not compatible with the current PyTorch installation|CUDA_ERROR_NO_BINARY_FOR_GPU", re.IGNORECASE)
_TF_CUDNN = re.compile(r"Loaded runtime CuDNN library:\s*(\d+(?:\.\d+)*).*?source was compiled with:?\s*(\d+(?:\.\d+)*)", re.DOTALL)
_PADDLE_CUDNN = re.compile(r"compiled with CUDNN (\d+(?:\.\d+)*), but CUDNN version in your machine is (\d+(?:\.\d+)*)")
_JAX_CUDNN = re.compile(r"Found cuDNN version (\d+), but JAX was built against version (\d+)")
_TORCH_CUDNN = re.compile(r"PyTorch was compiled\s+against \((\d+), (\d+), (\d+)\) but found runtime version \((\d+), (\d+), (\d+)\)")
_NVIDIA_WHEEL = re.compile(r"^nvidia-(cu|cuda|cudnn|nccl|nvjitlink|nvtx|cufft|curand|cusolver|cusparse|npp|nvrtc)")  # canonical names
_CUPY_WHEEL = re.compile(r"^cupy-cuda(\d+?)(x|\d)$")  # cupy-cuda12x (a CUDA major), cupy-cuda113, cupy-cuda80
_CUDNN_LOADED = re.compile(r"Loaded cuDNN version|cuDNN Version: \d|works well on \d+ GPU")


class _Source(NamedTuple):
    """One framework in one interpreter, before interpretation."""

    name: str
    python: PythonEnv
    report: Mapping[str, Any]
    package: Optional[str]  # the installed distribution's version
    os: str

    @property
    def version_text(self) -> Optional[str]:
        return self.report.get("version") or self.package

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

    def has(self, distribution: str) -> bool:
        return canonical_name(distribution) in self.python.packages


def probe_builds(pythons: tuple[PythonEnv, ...], os_name: str) -> tuple[FrameworkBuild, ...]:
    """Every framework installed in every interpreter (by its distributions or its report)."""
    return tuple(_build(source) for python in pythons for source in _sources(python, os_name))


def _sources(python: PythonEnv, os_name: str) -> Iterator[_Source]:
    for framework in knowledge.frameworks():
        dists = [canonical_name(d) for d in framework.distributions]
        package = next((python.packages[d] for d in dists if d in python.packages), None)
        report = python.frameworks.get(framework.name)
        if package is not None or report is not None:
            yield _Source(framework.name, python, report or {}, package, os_name)


def _build(source: _Source) -> FrameworkBuild:
    report, text = source.report, source.text
    fields = _READERS.get(source.name, _nothing)(source)
    gpu_build = fields.get("gpu_build")
    cuda, cudnn = fields.get("cuda"), fields.get("cudnn")
    system = knowledge.loads_system_cuda(source.name, source.python.packages)
    wheels = tuple(sorted(d for d in source.python.packages if _NVIDIA_WHEEL.match(d)))
    warning = str(report.get("warning") or "").strip()
    return FrameworkBuild(
        name=source.name,
        executable=source.python.executable,
        version=source.version_text,
        imported=source.imported,
        import_error=report.get("import_error"),
        timed_out=str(report.get("error") or "").startswith("TimeoutError"),
        gpu_build=gpu_build,
        cuda=cuda,
        cudnn=cudnn,
        cudnn_loaded=fields.get("cudnn_loaded"),
        cuda_from=SYSTEM if system else NVIDIA_WHEELS if wheels else BUNDLED,
        cuda_wheels=wheels,
        system_libraries=_system_libraries(cuda, cudnn, source.os) if system and gpu_build is not False else None,
        cuda_available=report.get("cuda_available") if "cuda_available" in report else None,
        sees_gpu=_sees_gpu(report),
        arch_list=tuple(str(a) for a in report.get("arch_list") or ()),
        supported_python=fields.get("supported_python"),
        load_failures=load_failures(text),
        driver_complaint=_line_matching(text, _DRIVER_TOO_OLD),
        no_kernel_complaint=_line_matching(text, _NO_KERNEL),
        cudnn_mismatch=cudnn_mismatch(text),
        cudnn_works=fields.get("cudnn_works", bool(_CUDNN_LOADED.search(text)) and cudnn_mismatch(text) is None),
        warning=warning.splitlines()[0][:300] if warning else None,
    )


def _sees_gpu(report: Mapping[str, Any]) -> bool:
    return bool(
        report.get("cuda_available")
        or report.get("gpus")
        or (report.get("gpu_count") or 0) > 0
        or any("cuda" in str(d).lower() or "gpu" in str(d).lower() for d in report.get("devices") or [])
    )


def _system_libraries(cuda: Optional[Known], cudnn: Optional[Known], os_name: str) -> SystemLibraries:
    version = parse_cuda_version(cuda.value) if cuda else None
    major = cudnn_major(cudnn)
    return SystemLibraries(
        knowledge.cudart_name(version, os_name) if version else None,
        knowledge.cudart_name(version, os_name, "cublas") if version else None,
        knowledge.cudnn_file_name("", major, os_name) if major is not None else None,
    )


def cudnn_major(cudnn: Optional[Known]) -> Optional[int]:
    version = parse_cudnn_version(cudnn.value) if cudnn else None
    return version.release[0] if version else None


# --- what each framework's report and packages say -------------------------------------------

Fields = dict[str, Any]


def _torch(source: _Source) -> Fields:
    report, version_text = source.report, source.version_text or ""
    tag = _LOCAL_CUDA.search(version_text)
    fields: Fields = {}
    if "cuda" in report and source.imported:
        fields["gpu_build"] = report["cuda"] is not None
    elif "+cpu" in version_text or tag:
        fields["gpu_build"] = tag is not None
    if report.get("cuda"):
        fields["cuda"] = Known(str(report["cuda"]), LIVE)
    elif tag:
        fields["cuda"] = Known(f"{tag.group(1)}.{tag.group(2)}", DIST_VERSION)
    if report.get("cudnn"):
        fields["cudnn_loaded"] = str(parse_cudnn_version(report["cudnn"]) or report["cudnn"])
    fields["cudnn_works"] = bool(report.get("cuda_available")) and bool(report.get("cudnn"))
    row = knowledge.torch_release(source.version) if source.version else None
    if row:
        fields["supported_python"] = _python_range(row)
    return fields


def _tensorflow(source: _Source) -> Fields:
    report = source.report
    info = report.get("build_info") or {}
    fields: Fields = {}
    if "built_with_cuda" in report:
        fields["gpu_build"] = bool(report["built_with_cuda"])
    elif "is_cuda_build" in info:
        fields["gpu_build"] = bool(info["is_cuda_build"])
    elif source.has("tensorflow-cpu"):
        fields["gpu_build"] = False
    row = knowledge.tensorflow_build(source.version, source.os) if source.version else None
    if info.get("cuda_version"):
        fields["cuda"] = Known(str(info["cuda_version"]), LIVE)
    elif row:
        fields["cuda"] = Known(row.cuda, KNOWLEDGE, row.source)
    if row:  # the tested cuDNN release: that major, and at least that release
        fields["cudnn"] = Known(row.cudnn, KNOWLEDGE, row.source)
    elif info.get("cudnn_version") and parse_cudnn_version(info["cudnn_version"]):
        fields["cudnn"] = Known(str(parse_cudnn_version(info["cudnn_version"]).release[0]), LIVE)
    python_row = row or (knowledge.tensorflow_build(source.version, "linux") if source.version else None)
    if python_row:
        fields["supported_python"] = _python_range(python_row)
    return fields


def _paddle(source: _Source) -> Fields:
    report = source.report
    fields: Fields = {}
    if "compiled_with_cuda" in report:
        fields["gpu_build"] = bool(report["compiled_with_cuda"])
    elif source.has("paddlepaddle-gpu"):
        fields["gpu_build"] = True
    tag = _PADDLE_POST.search(source.python.packages.get("paddlepaddle-gpu", ""))
    if report.get("cuda"):
        fields["cuda"] = Known(str(report["cuda"]), LIVE)
    elif tag:
        fields["cuda"] = Known(f"{tag.group(2)}.{tag.group(3)}", DIST_VERSION)
    row = knowledge.paddle_build(tag.group(1), source.os) if tag else None
    reported = parse_cudnn_version(report.get("cudnn_version"))
    if row:
        fields["cudnn"] = Known(row.cudnn, KNOWLEDGE, row.source)
    elif reported:
        fields["cudnn"] = Known(str(reported), LIVE)
    return fields


def _onnxruntime(source: _Source) -> Fields:
    report = source.report
    fields: Fields = {}
    if "providers" in report:
        fields["gpu_build"] = "CUDAExecutionProvider" in report["providers"]
    elif source.has("onnxruntime-gpu"):
        fields["gpu_build"] = True
    row = knowledge.onnxruntime_build(source.version) if source.version else None
    if row:
        fields["cuda"] = Known(row.cuda, KNOWLEDGE, row.source)
        fields["cudnn"] = Known(str(row.cudnn), KNOWLEDGE, row.source)
    return fields


def _cupy(source: _Source) -> Fields:
    """CuPy names its CUDA in the wheel (cupy-cuda12x, cupy-cuda113) and reports the runtime it loaded;
    cuDNN is optional (CuPy <= 13) or gone (14), so it is never a requirement."""
    report = source.report
    fields: Fields = {"gpu_build": not report.get("is_hip", False)}
    reported = parse_cuda_version(report.get("cuda"))
    wheel = next((_CUPY_WHEEL.match(d) for d in source.python.packages if _CUPY_WHEEL.match(d)), None)
    if reported:
        fields["cuda"] = Known(f"{reported.major}.{reported.minor}", LIVE)
    elif wheel:
        major, minor = wheel.group(1), wheel.group(2)
        fields["cuda"] = Known(major if minor == "x" else f"{major}.{minor}", DIST_VERSION)
    elif source.has("cupy"):
        fields["gpu_build"] = None  # built from source: against whatever CUDA it found
    if report.get("cudnn"):
        fields["cudnn_loaded"] = str(parse_cudnn_version(report["cudnn"]) or report["cudnn"])
    fields["cudnn_works"] = bool(report.get("cuda_available")) and bool(report.get("cudnn"))
    return fields


def _nothing(source: _Source) -> Fields:
    return {}


_READERS: dict[str, Callable[[_Source], Fields]] = {"torch": _torch, "tensorflow": _tensorflow, "paddle": _paddle, "onnxruntime": _onnxruntime, "cupy": _cupy}


def _python_range(row: Any) -> Known:
    """A release row's Python range (a PEP 440 specifier, as the table wrote it)."""
    return Known(str(row.python), KNOWLEDGE, row.source)


# --- what the framework's messages say ---------------------------------------------------------


def load_failures(text: str) -> tuple[LoadFailure, ...]:
    """Every library the messages name as not loadable, once, with who needed it when they say."""
    found: dict[str, LoadFailure] = {}
    for pattern in _DEPENDENCIES:
        for match in pattern.finditer(text):
            found.setdefault(match.group(2), LoadFailure(match.group(2), _line_at(text, match.start()), match.group(1)))
    for pattern in _DIRECT_LOADS:
        for match in pattern.finditer(text):
            for name in re.split(r"', '|;", match.group(1)):
                found[name.strip()] = LoadFailure(name.strip(), _line_at(text, match.start()), None, direct=True)
    for pattern in _OTHER_LOADS:
        for match in pattern.finditer(text):
            for name in match.group(1).split("', '"):
                found.setdefault(name, LoadFailure(name, _line_at(text, match.start())))
    return tuple(found.values())


def cudnn_mismatch(text: str) -> Optional[CudnnMismatch]:
    """(loaded, compiled with) when the framework's own messages say the cuDNN versions differ
    (TensorFlow, PaddlePaddle, JAX, and PyTorch when a system cuDNN shadows its own)."""
    match = _TF_CUDNN.search(text)
    if match:
        return CudnnMismatch(match.group(1), match.group(2), _line_at(text, match.start()))
    match = _PADDLE_CUDNN.search(text)
    if match:
        return CudnnMismatch(match.group(2), match.group(1), _line_at(text, match.start()))
    match = _JAX_CUDNN.search(text)
    if match:
        loaded, compiled = (parse_cudnn_version(int(match.group(i))) for i in (1, 2))
        return CudnnMismatch(str(loaded), str(compiled), _line_at(text, match.start()))
    match = _TORCH_CUDNN.search(text)
    if match:
        return CudnnMismatch(".".join(match.group(4, 5, 6)), ".".join(match.group(1, 2, 3)), _line_at(text, match.start()))
    return None


def _line_matching(text: str, pattern: re.Pattern) -> Optional[str]:
    match = pattern.search(text)
    return _line_at(text, match.start()) if match else None


def _line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return text[start : end if end >= 0 else None].strip()[:300]
