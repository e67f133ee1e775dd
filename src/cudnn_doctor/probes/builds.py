"""What each framework build is, read once: its live report, its distribution version, the tables.

This is the only place that knows the shape of each framework's report and the wording of
its log messages, in every era; checks get a typed `FrameworkBuild` and never parse text.
Each version it states says how it is known (live report, a file of the wheel, the imports of
its GPU library, its distribution metadata, its version tag, a knowledge row with its vendor
source), because a report must tell evidence from a table's guess. The machine's own files come
first; a table only fills what they do not say (`wheel_files` reads them, without importing).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Optional

from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.facts import (
    BUNDLED,
    DIST_METADATA,
    DIST_VERSION,
    FRAMEWORK_LOG,
    KNOWLEDGE,
    LIBRARY_IMPORTS,
    LIVE,
    NVIDIA_WHEELS,
    SYSTEM,
    WHEEL_METADATA,
    FrameworkBuild,
    Known,
    LoadFailure,
    PythonEnv,
    SystemLibraries,
)
from cudnn_doctor.kinds import KnownFrom
from cudnn_doctor.knowledge.messages import CUDNN_LOADED, DRIVER_TOO_OLD, NO_KERNEL
from cudnn_doctor.lazyre import regex
from cudnn_doctor.probes.messages import clipped, cudnn_mismatch, line_matching, load_failures, unloadable
from cudnn_doctor.probes.wheel_files import Evidence, WheelFiles, library_majors, requirement_majors
from cudnn_doctor.record import Record
from cudnn_doctor.system.interface import System
from cudnn_doctor.versions import (
    canonical_name,
    cuda_in_tag,
    cuda_tag,
    cuda_text,
    parse_cuda_version,
    parse_cudnn_version,
    parse_version,
)

_JAXLIB_CUDNN = regex(
    r"\+cuda\w*\.cudnn(\d+)$"
)  # jaxlib 0.4.23+cuda12.cudnn89: cuDNN 8.9 (its CUDA: versions.cuda_in_tag)
_NVIDIA_WHEEL = regex(
    r"^nvidia-(cu|cuda|cudnn|nccl|nvjitlink|nvtx|cufft|curand|cusolver|cusparse|npp|nvrtc)"
)  # canonical names


class _Source(Record):
    """One framework in one interpreter, before interpretation."""

    name: str
    python: PythonEnv
    report: Mapping[str, Any]
    package: Optional[str]  # the installed distribution's version
    os: str
    distribution: Optional[str] = None  # the installed distribution's canonical name
    files: Optional[WheelFiles] = None  # the interpreter's site-packages, when the machine's files can be read

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

    @property
    def windows(self) -> bool:
        return self.os == "windows"

    def build_file(self, *parts: str) -> tuple[dict[str, Any], Optional[str], str]:
        """A generated module's literal constants ({} when absent), its path, and the path a report quotes."""
        found = self.files.constants(*parts) if self.files else None
        return (found[0], found[1], "/".join(parts)) if found else ({}, None, "/".join(parts))


def probe_builds(
    pythons: tuple[PythonEnv, ...], os_name: str, system: Optional[System] = None
) -> tuple[FrameworkBuild, ...]:
    """Every framework installed in every interpreter (by its distributions or its report); with
    `system`, what the framework's own files say comes before the tables."""
    return tuple(_build(source) for python in pythons for source in _sources(python, os_name, system))


def _sources(python: PythonEnv, os_name: str, system: Optional[System]) -> Iterator[_Source]:
    files = None
    for framework in knowledge.frameworks():
        dists = [canonical_name(d) for d in framework.distributions]
        distribution = next((d for d in dists if d in python.packages), None)
        report = python.frameworks.get(framework.name)
        if distribution is not None or report is not None:
            files = files or (WheelFiles(system, python) if system is not None else None)
            package = python.packages[distribution] if distribution else None
            yield _Source(framework.name, python, report or {}, package, os_name, distribution, files)


def _build(source: _Source) -> FrameworkBuild:
    report, text = source.report, source.text
    said = bool(text) and not text.isspace()  # a framework not asked (--no-frameworks) said nothing: no pattern to run
    mismatch = cudnn_mismatch(text) if said else None
    gone = unloadable(text) if said else ()
    fields = _READERS.get(source.name, _nothing)(source)
    failures = load_failures(text) if said else ()
    runtime = _runtime_tried(failures, source.os)
    gpu_build = True if runtime is not None else fields.get("gpu_build")  # a CPU build never asks for the CUDA runtime
    cuda, cudnn = fields.get("cuda") or runtime, fields.get("cudnn")
    system = knowledge.loads_system_cuda(source.name, source.python.packages, source.version, source.os)
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
        gpu_library=fields.get("gpu_library"),
        needs=fields.get("needs", ()),
        nvidia_requirements=fields.get("nvidia_requirements", ()),
        system_libraries=wanted_libraries(cuda, cudnn, source.os) if system and gpu_build is not False else None,
        cuda_available=report.get("cuda_available") if "cuda_available" in report else None,
        sees_gpu=_sees_gpu(report),
        arch_list=tuple(str(a) for a in report.get("arch_list") or ()),
        supported_python=fields.get("supported_python"),
        load_failures=failures,
        unloadable=gone,
        driver_complaint=line_matching(text, DRIVER_TOO_OLD) if said else None,
        no_kernel_complaint=line_matching(text, NO_KERNEL) if said else None,
        cudnn_mismatch=mismatch,
        cudnn_works=fields.get(
            "cudnn_works",
            said and bool(CUDNN_LOADED.search(text)) and mismatch is None and all(u.part != "cudnn" for u in gone),
        ),
        warning=clipped(warning.splitlines()[0]) if warning else None,
    )


def _runtime_tried(failures: tuple[LoadFailure, ...], os_name: str) -> Optional[Known]:
    """The CUDA release of the runtime the framework says it asked for itself ("Could not load dynamic library
    'libcudart.so.10.2'"): where nothing else states the build's CUDA (a jaxlib wheel whose version carries no tag), its
    own request does, and only a CUDA build makes one."""
    for failure in failures:
        cuda = (
            knowledge.cuda_of_runtime(failure.library.replace("\\", "/").rsplit("/", 1)[-1], os_name)
            if failure.direct
            else None
        )
        if cuda is not None:
            return Known(value=cuda, how=FRAMEWORK_LOG, source=None, evidence=f"its log asks for {failure.library}")
    return None


def _sees_gpu(report: Mapping[str, Any]) -> bool:
    return bool(
        report.get("cuda_available")
        or report.get("gpus")
        or (report.get("gpu_count") or 0) > 0
        or any("cuda" in str(d).lower() or "gpu" in str(d).lower() for d in report.get("devices") or [])
    )


def wanted_libraries(cuda: Optional[Known], cudnn: Optional[Known], os_name: str) -> SystemLibraries:
    """The CUDA runtime, cuBLAS and cuDNN file names a build of that CUDA and cuDNN asks the loader for by name."""
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
    tag = cuda_in_tag(version_text, "torch-local")  # +cu121: CUDA 12.1
    stated, path, short = source.build_file("torch", "version.py")
    library = ("torch", "lib", "torch_cuda.dll") if source.windows else ("torch", "lib", "libtorch_cuda.so")
    fields = _files_say(source, library)
    if "cuda" in report and source.imported:
        fields["gpu_build"] = report["cuda"] is not None
    elif "cuda" in stated:  # torch/version.py: cuda = None in CPU and ROCm builds
        fields["gpu_build"] = stated["cuda"] is not None
    elif "+cpu" in version_text or tag is not None:
        fields["gpu_build"] = tag is not None
    elif "gpu_library" in fields:
        fields["gpu_build"] = True
    fields["cuda"] = _first(
        Known(str(report["cuda"]), LIVE) if report.get("cuda") else None,
        _stated(stated.get("cuda"), path, short),
        Known(cuda_text(tag), DIST_VERSION) if tag is not None else None,
        *fields.pop("cuda_said"),
    )
    fields["cudnn"] = _first(*fields.pop("cudnn_said"))
    if report.get("cudnn"):
        fields["cudnn_loaded"] = str(parse_cudnn_version(report["cudnn"]) or report["cudnn"])
    fields["cudnn_works"] = bool(report.get("cuda_available")) and bool(report.get("cudnn"))
    row = knowledge.torch_release(source.version) if source.version else None
    if row:
        fields["supported_python"] = Known(
            str(row.python_on(source.os)), KNOWLEDGE, row.source
        )  # 1.13 has cp311 on Linux only
    return fields


def _tensorflow(source: _Source) -> Fields:
    report = source.report
    info = report.get("build_info") or {}
    stated, path, short = source.build_file("tensorflow", "python", "platform", "build_info.py")
    stated_info = stated.get("build_info")
    built: dict[str, Any] = stated_info if isinstance(stated_info, dict) else {}
    fields = _files_say(source, None)
    if "built_with_cuda" in report:
        fields["gpu_build"] = bool(report["built_with_cuda"])
    elif "is_cuda_build" in info:
        fields["gpu_build"] = bool(info["is_cuda_build"])
    elif "is_cuda_build" in built:
        fields["gpu_build"] = bool(built["is_cuda_build"])
    elif source.has("tensorflow-cpu"):
        fields["gpu_build"] = False
    row = knowledge.tensorflow_build(source.version, source.os) if source.version else None
    fields["cuda"] = _first(
        Known(str(info["cuda_version"]), LIVE) if info.get("cuda_version") else None,
        _stated(built.get("cuda_version"), path, short),
        *fields.pop("cuda_said"),
        Known(row.cuda, KNOWLEDGE, row.source) if row else None,
    )
    live_cudnn = parse_cudnn_version(info.get("cudnn_version"))
    # the tested cuDNN release of the table row: that major, and at least that release
    fields["cudnn"] = _refined(
        _first(
            Known(str(live_cudnn.release[0]), LIVE) if live_cudnn else None,
            _stated_major(built.get("cudnn_version"), path, short),
            *fields.pop("cudnn_said"),
        ),
        Known(row.cudnn, KNOWLEDGE, row.source) if row else None,
    )
    python_row = row or (knowledge.tensorflow_build(source.version, "linux") if source.version else None)
    if python_row:
        fields["supported_python"] = _python_range(python_row)
    return fields


def _paddle(source: _Source) -> Fields:
    report = source.report
    stated, path, short = source.build_file("paddle", "version", "__init__.py")
    fields = _files_say(source, None)
    built_cuda = stated.get("cuda_version")
    if "compiled_with_cuda" in report:
        fields["gpu_build"] = bool(report["compiled_with_cuda"])
    elif isinstance(built_cuda, str) and built_cuda:
        fields["gpu_build"] = built_cuda != "False"  # paddle/version/__init__.py of a CPU build: cuda_version = 'False'
    elif source.has("paddlepaddle-gpu"):
        fields["gpu_build"] = True
    tag = cuda_in_tag(source.python.packages.get("paddlepaddle-gpu", ""), "paddle-post")  # .post112: CUDA 11.2
    fields["cuda"] = _first(
        Known(str(report["cuda"]), LIVE) if report.get("cuda") else None,
        _stated(built_cuda, path, short),
        Known(cuda_text(tag), DIST_VERSION) if tag is not None else None,
        *fields.pop("cuda_said"),
    )
    # a .postXYZ wheel: its cuDNN depends on the release as well as the tag (post112: 8.1.1 for Linux 2.1-2.3, 8.2.1
    # later);
    # a wheel without the tag may come from any per-CUDA index, so the "pypi" rows are not assumed for it
    row = knowledge.paddle_build(f"post{cuda_tag(tag)}", source.os, source.version) if tag is not None else None
    reported = parse_cudnn_version(report.get("cudnn_version"))
    fields["cudnn"] = _refined(
        _first(
            Known(str(reported), LIVE) if reported else None,
            _stated_major(stated.get("cudnn_version"), path, short),
            *fields.pop("cudnn_said"),
        ),
        Known(row.cudnn, KNOWLEDGE, row.source) if row and row.cudnn else None,
    )
    return fields


def _onnxruntime(source: _Source) -> Fields:
    report = source.report
    stated, path, short = source.build_file("onnxruntime", "capi", "build_and_package_info.py")
    provider = "onnxruntime_providers_cuda.dll" if source.windows else "libonnxruntime_providers_cuda.so"
    fields = _files_say(source, ("onnxruntime", "capi", provider))
    if "providers" in report:
        fields["gpu_build"] = "CUDAExecutionProvider" in report["providers"]
    elif source.has("onnxruntime-gpu") or "gpu_library" in fields:
        fields["gpu_build"] = True
    row = knowledge.onnxruntime_build(source.version) if source.version and source.has("onnxruntime-gpu") else None
    fields["cuda"] = _first(
        _stated(stated.get("cuda_version"), path, short),
        *fields.pop("cuda_said"),
        Known(row.cuda, KNOWLEDGE, row.source) if row else None,
    )
    fields["cudnn"] = _first(
        _stated_major(stated.get("cudnn_version"), path, short),
        *fields.pop("cudnn_said"),
        Known(str(row.cudnn), KNOWLEDGE, row.source) if row and row.cudnn else None,
    )
    return fields


def _jax(source: _Source) -> Fields:
    """JAX's CUDA build is a plugin distribution named for its CUDA major (jax-cuda12-plugin), or
    before the plugins a jaxlib tagged with it (0.4.23+cuda12.cudnn89)."""
    plugin = next(
        (
            d
            for d in sorted(source.python.packages, key=lambda d: (not d.endswith("-plugin"), d))
            if cuda_in_tag(d, "jax-plugin")
        ),
        None,
    )
    jaxlib = source.python.packages.get("jaxlib", "")
    tag = cuda_in_tag(jaxlib, "jaxlib-local")  # +cuda12: CUDA 12; +cuda111: CUDA 11.1
    fields: Fields = {"cuda_said": [], "cudnn_said": []}
    if plugin is not None:
        fields = _files_say(source._replace(distribution=plugin, package=source.python.packages[plugin]), None)
        plugin_cuda = cuda_in_tag(plugin, "jax-plugin")  # never None: the plugin was chosen for it
        if plugin_cuda is not None:
            fields["cuda_said"].insert(
                0,
                Known(
                    value=cuda_text(plugin_cuda),
                    how=DIST_METADATA,
                    source=None,
                    evidence=f"{plugin} {source.python.packages[plugin]} is installed",
                ),
            )
    if "devices" in source.report and source.imported:
        fields["gpu_build"] = plugin is not None or tag is not None or _sees_gpu(source.report)
    elif plugin is not None or tag is not None:
        fields["gpu_build"] = True
    fields["cuda"] = _first(*fields.pop("cuda_said"), Known(cuda_text(tag), DIST_VERSION) if tag is not None else None)
    cudnn_tag = _JAXLIB_CUDNN.search(jaxlib) if tag is not None else None
    digits = cudnn_tag.group(1) if cudnn_tag else None  # cudnn89: 8.9, cudnn91: 9.1
    fields["cudnn"] = _first(
        *fields.pop("cudnn_said"),
        Known(f"{digits[0]}.{digits[1:]}" if len(digits) > 1 else digits, DIST_VERSION) if digits else None,
    )
    return fields


def _cupy(source: _Source) -> Fields:
    """CuPy names its CUDA in the wheel (cupy-cuda12x, cupy-cuda113) and reports the runtime it loaded;
    cuDNN is optional (CuPy <= 13) or gone (14), so it is never a requirement."""
    report = source.report
    fields = _files_say(source, None)  # its Requires-Dist: the [ctk] extra names the nvidia-* wheels of its CUDA
    fields["gpu_build"] = not report.get("is_hip", False)
    reported = parse_cuda_version(report.get("cuda"))
    wheel = next(
        (cuda_in_tag(d, "cupy-wheel") for d in sorted(source.python.packages) if cuda_in_tag(d, "cupy-wheel")), None
    )
    said = fields.pop("cuda_said")
    fields.pop("cudnn_said")  # cuDNN is never a requirement of CuPy
    if reported:
        fields["cuda"] = Known(f"{reported.major}.{reported.minor}", LIVE)
    elif wheel is not None:  # cupy-cuda12x: CUDA 12 (any minor); cupy-cuda113: CUDA 11.3
        fields["cuda"] = Known(cuda_text(wheel), DIST_VERSION)
    elif said:
        fields["cuda"] = said[0]
    elif source.has("cupy"):
        fields["gpu_build"] = None  # built from source: against whatever CUDA it found
    if report.get("cudnn"):
        fields["cudnn_loaded"] = str(parse_cudnn_version(report["cudnn"]) or report["cudnn"])
    fields["cudnn_works"] = bool(report.get("cuda_available")) and bool(report.get("cudnn"))
    return fields


def _nothing(source: _Source) -> Fields:
    return {}


_READERS: dict[str, Callable[[_Source], Fields]] = {
    "torch": _torch,
    "tensorflow": _tensorflow,
    "paddle": _paddle,
    "onnxruntime": _onnxruntime,
    "jax": _jax,
    "cupy": _cupy,
}


# --- what the framework's own files say (read by wheel_files, never imported) ------------------


def _files_say(source: _Source, library: Optional[tuple[str, ...]]) -> Fields:
    """The GPU library's imports and the distribution's NVIDIA requirements, as `cuda_said` /
    `cudnn_said` candidates (library first, metadata second) plus `gpu_library`, `needs` and
    `nvidia_requirements`; empty lists when the files cannot be read (no System, not installed)."""
    fields: Fields = {"cuda_said": [], "cudnn_said": []}
    if source.files is None:
        return fields
    found = source.files.binary(*library) if library else None
    if found is not None:
        info, path = found
        cuda, cudnn, fields["needs"] = library_majors(info, path, "/".join(library or ()))
        fields["gpu_library"] = path
        fields["cuda_said"] += [_known(cuda, LIBRARY_IMPORTS)] if cuda else []
        fields["cudnn_said"] += [_known(cudnn, LIBRARY_IMPORTS)] if cudnn else []
    if source.distribution:
        requirements, metadata = source.files.requirements(source.distribution, _nvidia_or_toolkit)
        nvidia = tuple(r for r in requirements if _nvidia_or_toolkit(r.name))
        fields["nvidia_requirements"] = nvidia
        cuda, cudnn = requirement_majors(nvidia, metadata or "", f"{source.distribution} {source.package}")
        fields["cuda_said"] += [_known(cuda, DIST_METADATA)] if cuda else []
        fields["cudnn_said"] += [_known(cudnn, DIST_METADATA)] if cudnn else []
    return fields


def _nvidia_or_toolkit(name: str) -> bool:
    """A requirement the build's CUDA and cuDNN can be read from (by canonical name)."""
    return bool(_NVIDIA_WHEEL.match(name)) or name == "cuda-toolkit"


def _known(evidence: Evidence, how: KnownFrom) -> Known:
    return Known(value=evidence.value, how=how, source=evidence.path, evidence=evidence.detail)


def _stated(value: Any, path: Optional[str], short: str) -> Optional[Known]:
    """A CUDA version a generated module states ("13.0", "64_112"); None for None, "False", "" and non-versions."""
    if (
        path is None
        or not isinstance(value, (str, int))
        or isinstance(value, bool)
        or parse_cuda_version(str(value)) is None
    ):
        return None
    return Known(value=str(value), how=WHEEL_METADATA, source=path, evidence=short)


def _stated_major(value: Any, path: Optional[str], short: str) -> Optional[Known]:
    """The cuDNN major a generated module states ("9.1", "64_8", "8"): the major is what the build's library names
    carry."""
    version = (
        parse_cudnn_version(str(value))
        if path is not None and isinstance(value, (str, int)) and not isinstance(value, bool)
        else None
    )
    return Known(value=str(version.release[0]), how=WHEEL_METADATA, source=path, evidence=short) if version else None


def _first(*candidates: Optional[Known]) -> Optional[Known]:
    """The first that is known: callers list evidence before tables."""
    return next((c for c in candidates if c is not None), None)


def _refined(stated: Optional[Known], row: Optional[Known]) -> Optional[Known]:
    """A table row that names a cuDNN release ("8.1") of the major the build states says more (its
    minimum) and is kept; a row that contradicts the build, or names only a major, is not."""
    if row is None or stated is None:
        return stated or row
    same_major = cudnn_major(row) == cudnn_major(stated)
    return row if same_major and "." in row.value else stated


def _python_range(row: Any) -> Known:
    """A release row's Python range (a PEP 440 specifier, as the table wrote it)."""
    return Known(str(row.python), KNOWLEDGE, row.source)
