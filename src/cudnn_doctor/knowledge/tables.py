"""Every knowledge table's declaration: its record, its sections with the check of each field, and the
invariants across its rows (the minimum driver never decreases with the toolkit, …)."""

from __future__ import annotations

import re
from typing import Any, Optional

from packaging.version import Version

from cudnn_doctor.errors import KnowledgeError
from cudnn_doctor.knowledge import fields as f
from cudnn_doctor.knowledge import framework_records as fr
from cudnn_doctor.knowledge import records as r


def _rate(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    raise f.Bad("expected a positive number (null where the vendor gives none)")


def _check_gpus(table: r.GpusTable, where: str) -> None:
    """A name (or model) picks one peak row; thresholds fail below where they warn, or lower."""
    owner: dict[str, str] = {}
    for row in table.peaks:
        for name in {f.peak_name_key(row.model), *map(f.peak_name_key, row.names)}:
            if owner.setdefault(name, row.model) != row.model:
                raise KnowledgeError(f"{where}: peaks ({row.model}): name {name!r} also names {owner[name]}")
    for threshold in table.verify_thresholds:
        if threshold.fail_below > threshold.warn_below:
            raise KnowledgeError(f"{where}: verify_thresholds ({threshold.check}): fail_below is above warn_below")


def _release(text: str) -> tuple[int, ...]:
    return Version(text).release[:2]


def _check_cuda_driver(table: r.CudaDriverTable, where: str) -> None:
    """The minimum driver never decreases as the toolkit version rises (rows where NVIDIA lists none are skipped)."""
    for os_name in ("linux", "windows"):
        rows = sorted(
            (row for row in table.toolkits if getattr(row, os_name) is not None), key=lambda row: Version(row.cuda)
        )
        for older, newer in zip(rows, rows[1:]):
            if Version(getattr(newer, os_name)) < Version(getattr(older, os_name)):
                raise KnowledgeError(
                    f"{where}: CUDA {newer.cuda} needs an older {os_name} driver than CUDA {older.cuda}"
                )


_CUDA_LIST = f.list_of(f.version, 'versions in quotes, such as "12.6"')


def _check_patch(patch: Optional[str], version: str, where: str, what: str) -> None:
    """A `patch` pin must be a release of the row's own minor, or a plan would install another minor."""
    if patch is not None and _release(patch) != _release(version):
        raise KnowledgeError(
            f"{where}: {what} {version}: patch {patch} is not a {'.'.join(map(str, _release(version)))} release"
        )


def _check_torch(table: fr.TorchTable, where: str) -> None:
    """Patches within their minor; a conda line that can take a CUDA version, for CUDA versions it lists."""
    for row in table.releases:
        _check_patch(row.patch, row.version, where, "torch")
        if row.conda is not None and ("{cuda}" not in row.conda or not row.conda_cuda):
            raise KnowledgeError(f"{where}: torch {row.version}: conda needs a {{cuda}} placeholder and conda_cuda")
        if not set(row.conda_forge_cuda) <= set(row.conda_cuda or ()):
            raise KnowledgeError(
                f"{where}: torch {row.version}: conda_forge_cuda lists a CUDA that conda_cuda does not"
            )


def _check_tensorflow(table: fr.TensorflowTable, where: str) -> None:
    for row in table.tested_builds:
        _check_patch(row.patch, row.version, where, f"tensorflow ({row.os})")


def _check_framework_releases(table: fr.FrameworksTable, where: str) -> None:
    """Release lists are newest first with no repeats, so `framework_releases()[0]` is the newest."""
    for row in table.releases:
        ordered = sorted(row.versions, key=Version, reverse=True)
        if list(row.versions) != ordered or len(set(map(Version, row.versions))) != len(row.versions):
            raise KnowledgeError(
                f"{where}: releases ({row.distribution}): versions must be newest first, without repeats"
            )


def _archive_pattern(value: Any) -> str:
    text = f.text(value)
    unknown = set(re.findall(r"{(\w*)}", text)) - {"version", "cuda", "cuda_major", "arch"}
    if "{version}" not in text or unknown:
        raise f.Bad("expected a file name with {version} and only {cuda}, {cuda_major}, {arch} besides")
    return text


def _check_cudnn(table: r.CudnnTable, where: str) -> None:
    """A support row's full versions are releases of its range, and its CUDA names a release its toolkits serve."""
    for row in table.support:
        outside = [full for full in row.full_versions if not row.versions.contains(full, prereleases=True)]
        if outside:
            raise KnowledgeError(
                f"{where}: support ({row.versions}, cuda {row.cuda}): {', '.join(outside)} is not in {row.versions}"
            )
        named = Version(row.cuda)
        if not any(row.toolkits.contains(f"{named.major}.{minor}") for minor in range(10)) or (
            len(named.release) > 1 and not row.toolkits.contains(row.cuda)
        ):
            raise KnowledgeError(
                f"{where}: support ({row.versions}, cuda {row.cuda}): toolkits {row.toolkits} does not serve CUDA "
                f"{row.cuda}"
            )


_LIBRARY_NAME: dict[str, f.Convert] = {"cuda": f.version, "windows": f.text, "linux": f.text}

_TAGS = f.list_of(f.text, "Python tags such as cp311")

TABLES: dict[str, f.Table] = {
    "published": f.Table(
        fr.PublishedTable,
        {
            "releases": f.rows(
                fr.PublishedRelease,
                {
                    "distribution": f.text,
                    "version": f.text,
                    "linux": _TAGS,
                    "windows": _TAGS,
                    "aarch64": f.optional(_TAGS),
                    "sdist": f.boolean,
                    "requires_python": f.optional(f.version_range),
                    "requires": f.optional(f.list_of(f.text, "requirements")),
                    "requires_aarch64": f.optional(f.list_of(f.text, "requirements")),
                },
                lambda row: (row.distribution, row.version),
                "distribution",
                "version",
            ),
            "extras": f.rows(
                fr.PublishedExtra,
                {
                    "distribution": f.text,
                    "version": f.text,
                    "extra": f.text,
                    "requires": f.list_of(f.text, "requirements"),
                },
                lambda row: (row.distribution, row.version, row.extra),
                "distribution",
                "version",
                "extra",
            ),
        },
    ),
    "cuda_driver": f.Table(
        r.CudaDriverTable,
        {
            "toolkits": f.rows(
                r.ToolkitDriver,
                {"cuda": f.version, "release": f.text, "linux": f.optional_version, "windows": f.optional_version},
                lambda row: Version(row.cuda),
                "cuda",
            ),
            "minor_version_compatibility": f.rows(
                r.MinorVersionCompatibility,
                {"major": f.integer, "linux": f.version, "windows": f.version, "upper": f.optional_version},
                lambda row: row.major,
                "major",
            ),
        },
        _check_cuda_driver,
    ),
    "cuda_libraries": f.Table(
        r.CudaLibrariesTable,
        {
            "cudart": f.rows(r.LibraryName, _LIBRARY_NAME, lambda row: Version(row.cuda), "cuda"),
            "cublas": f.rows(r.LibraryName, _LIBRARY_NAME, lambda row: Version(row.cuda), "cuda"),
        },
    ),
    "cudnn": f.Table(
        r.CudnnTable,
        {
            "releases": f.rows(
                r.CudnnRelease,
                {"major": f.integer, "parts": f.NAMES, "optional": f.NAMES},
                lambda row: row.major,
                "major",
            ),
            "legacy_names": f.rows(
                r.LegacyCudnnName,
                {"name": f.text, "os": f.OS, "major": f.integer, "cuda": f.version, "toolkits": f.version_range},
                lambda row: row.name.lower(),
                "name",
            ),
            "runtime_loads": f.rows(
                r.RuntimeLoads, {"library": f.text, "loads": f.NAMES}, lambda row: row.library.lower(), "library"
            ),
            "optional_loads": f.rows(r.OptionalLoad, {"name": f.text}, lambda row: row.name, "name"),
            "zlibwapi": f.single(r.Zlibwapi, {"versions": f.version_range, "end_indirect": f.boolean}),
            "support": f.rows(
                r.CudnnSupport,
                {
                    "versions": f.version_range,
                    "full_versions": _CUDA_LIST,
                    "cuda": f.version,
                    "toolkits": f.version_range,
                    "tested": _CUDA_LIST,
                    "cc_min": f.optional_version,
                    "cc": _CUDA_LIST,
                    "driver_linux": f.optional_version,
                    "driver_windows": f.optional_version,
                    "os": f.list_of(f.OS, "operating systems (windows, linux)"),
                },
                lambda row: (str(row.versions), row.cuda, str(row.toolkits)),
                "versions",
                "cuda",
            ),
            "archives": f.rows(
                r.CudnnArchive,
                {"versions": f.version_range, "os": f.OS, "pattern": _archive_pattern},
                lambda row: (str(row.versions), row.os),
                "versions",
                "os",
            ),
        },
        _check_cudnn,
    ),
    "cuda_wheels": f.Table(
        r.CudaWheelsTable,
        {
            "wheels": f.rows(
                r.CudaWheel,
                {
                    "cuda": f.integer,
                    "library": f.text,
                    "distribution": f.text,
                    "linux": f.pattern,
                    "windows": f.pattern,
                    "linux_folder": f.text,
                    "windows_folder": f.text,
                },
                lambda row: (row.cuda, row.library),
                "cuda",
                "library",
            ),
            "placeholders": f.rows(
                r.WheelPlaceholder, {"name": f.text, "instead": f.text}, lambda row: row.name.lower(), "name"
            ),
            "reach": f.rows(
                r.WheelReach,
                {
                    "framework": f.text,
                    "os": f.OS,
                    "how": f.one_of("runpath", "preload", "preload_dlls", "none"),
                    "versions": f.version_range,
                    "extras": f.optional_text,
                },
                lambda row: (row.framework, row.os, str(row.versions)),
                "framework",
                "os",
            ),
        },
    ),
    "environment": f.Table(
        r.EnvironmentTable,
        {
            "ineffective": f.rows(
                r.IneffectiveVariable, {"name": f.text, "instead": f.text}, lambda row: row.name.upper(), "name"
            ),
            "known": f.single(r.KnownVariables, {"names": f.NAMES}),
        },
    ),
    "frameworks": f.Table(
        fr.FrameworksTable,
        {
            "frameworks": f.rows(
                fr.Framework,
                {
                    "name": f.text,
                    "module": f.text,
                    "distributions": f.NAMES,
                    "loads_cuda": f.one_of("system", "bundled"),
                    "bundled_when": f.NAMES,
                    "native_packages": f.NAMES,
                    "load_log": f.optional(f.text),
                    "aarch64_cpu_only": f.optional(f.text),
                },
                lambda row: row.name,
                "name",
            ),
            "onnxruntime_builds": f.rows(
                fr.OnnxruntimeBuild,
                {
                    "versions": f.version_range,
                    "cuda": f.version,
                    "cudnn": f.optional(f.version),
                    "feed": f.text,
                    "index_url": f.optional_url,
                },
                lambda row: (str(row.versions), row.feed),
                "versions",
                "feed",
            ),
            "paddle_builds": f.rows(
                fr.PaddleBuild,
                {
                    "tag": f.text,
                    "cuda": f.version,
                    "cudnn": f.optional(f.version),
                    "os": f.OS,
                    "versions": f.optional(f.version_range),
                    "index_url": f.optional_url,
                },
                lambda row: (row.tag, row.os, str(row.versions), row.cuda),
                "tag",
                "os",
                "versions",
            ),
            "pip_cuda": f.rows(
                fr.PipCuda,
                {"framework": f.text, "os": f.OS, "versions": f.version_range},
                lambda row: (row.framework, row.os, str(row.versions)),
                "framework",
                "os",
                "versions",
            ),
            "jax_builds": f.rows(
                fr.JaxBuild,
                {
                    "versions": f.version_range,
                    "extra": f.text,
                    "cuda": f.version,
                    "loads_cuda": f.one_of("system", "bundled"),
                    "distribution": f.text,
                    "cudnn": f.optional(f.version),
                    "driver_linux": f.optional(f.version),
                    "cuda_min": f.optional(f.version),
                },
                lambda row: (str(row.versions), row.extra),
                "versions",
                "extra",
            ),
            "releases": f.rows(
                fr.FrameworkReleases,
                {"distribution": f.text, "versions": f.list_of(f.version, 'versions in quotes, such as "1.19.0"')},
                lambda row: row.distribution.lower(),
                "distribution",
            ),
        },
        _check_framework_releases,
    ),
    "gpus": f.Table(
        r.GpusTable,
        {
            "gpus": f.rows(r.GpuCapability, {"name": f.text, "cc": f.version}, lambda row: f.gpu_key(row.name), "name"),
            "cuda_architectures": f.rows(
                r.CudaArchitectures,
                {
                    "cuda": f.version,
                    "cc": f.list_of(f.version, 'compute capabilities in quotes, such as "8.6"'),
                    "complete": f.boolean,
                },
                lambda row: _release(row.cuda),
                "cuda",
            ),
            "peaks": f.rows(
                r.GpuPeak,
                {
                    "model": f.text,
                    "names": f.NAMES,
                    "fp32": f.optional(_rate),
                    "tf32": f.optional(_rate),
                    "fp16": f.optional(_rate),
                    "bf16": f.optional(_rate),
                    "memory_gbs": f.optional(_rate),
                    "memory_gb": f.optional(_rate),
                    "host_link": f.optional_text,
                    "host_link_gbs": f.optional(_rate),
                    "note": f.optional_text,
                },
                lambda row: f.peak_name_key(row.model),
                "model",
            ),
            "verify_thresholds": f.rows(
                r.VerifyThreshold,
                {
                    "check": f.text,
                    "warn_below": _rate,
                    "fail_below": _rate,
                    "unit": f.one_of("percent", "ratio"),
                    "note": f.optional_text,
                },
                lambda row: row.check,
                "check",
            ),
        },
        _check_gpus,
    ),
    "libraries": f.Table(
        r.LibrariesTable,
        {
            "providers": f.rows(
                r.LibraryProvider,
                {"pattern": f.pattern, "provider": f.text, "fix": f.text},
                lambda row: row.pattern,
                "pattern",
            ),
            "os_provided": f.single(r.OsProvided, {"windows": f.pattern, "linux": f.pattern}),
            "driver_provided": f.single(r.DriverProvided, {"pattern": f.pattern, "files": f.pattern}),
        },
    ),
    "tensorflow": f.Table(
        fr.TensorflowTable,
        {
            "windows_native_gpu_last": f.single(fr.WindowsGpuLast, {"version": f.version}),
            "tested_builds": f.rows(
                fr.TensorflowBuild,
                {
                    "version": f.version,
                    "os": f.OS,
                    "python": f.version_range,
                    "cudnn": f.version,
                    "cuda": f.version,
                    "patch": f.optional(f.version),
                },
                lambda row: (_release(row.version), row.os),
                "version",
                "os",
            ),
            "and_cuda": f.rows(
                fr.TensorflowAndCuda,
                {"versions": f.version_range, "wheels": f.NAMES},
                lambda row: str(row.versions),
                "versions",
            ),
            "packages": f.rows(
                fr.TensorflowPackage,
                {"name": f.text, "versions": f.version_range},
                lambda row: str(row.versions),
                "name",
                "versions",
            ),
            "windows_conda": f.single(fr.TensorflowConda, {"command": f.text, "versions": f.version_range}),
        },
        _check_tensorflow,
    ),
    "torch": f.Table(
        fr.TorchTable,
        {
            "index_url": f.single(fr.IndexUrl, {"template": f.text}),
            "releases": f.rows(
                fr.TorchRelease,
                {
                    "version": f.version,
                    "python": f.version_range,
                    "cuda": _CUDA_LIST,
                    "windows_python": f.optional(f.version_range),
                    "windows_cuda": f.optional(_CUDA_LIST),
                    "pypi_cuda": f.optional(f.version),
                    "pypi_cudnn": f.optional(f.version),
                    "cudnn_major": f.optional(f.version),
                    "cudnn_builds": f.list_of(f.text, '"CUDA:cuDNN" pairs such as "12.6:9.10.2.21"'),
                    "patch": f.optional(f.version),
                    "conda": f.optional(f.text),
                    "conda_cuda": f.optional(_CUDA_LIST),
                    "conda_forge_cuda": _CUDA_LIST,
                },
                lambda row: _release(row.version),
                "version",
            ),
        },
        _check_torch,
    ),
}
