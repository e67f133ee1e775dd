"""What each knowledge table may hold, checked row by row; and how a user's rows overlay the shipped ones.

A data file is a mapping of sections. A section is a list of rows (each with a key that says
which shipped row a user's row replaces) or one single row. Every row is a mapping whose keys
are exactly its record's fields: an unknown, missing or mistyped key is a `KnowledgeError`
naming the file, the section, the row's index and what identifies the row, e.g.
`torch.yaml: releases[3] (version 2.11): unknown key 'pyton' (did you mean 'python'?)`.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Hashable, Optional

from packaging.specifiers import InvalidSpecifier
from packaging.version import VERSION_PATTERN, Version

from cudnn_doctor.errors import KnowledgeError
from cudnn_doctor.knowledge import records as r
from cudnn_doctor.record import Record


class _Bad(ValueError):
    """A value of the wrong type or form; the message says what was expected."""


Convert = Callable[[Any], Any]


def _close(word: str, choices: list[str], n: int = 1) -> list[str]:
    """The nearest of `choices` to a misspelt key (difflib loads only when a file is wrong)."""
    import difflib

    return difflib.get_close_matches(word, choices, n=n)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value
    raise _Bad("expected a non-empty string")


@functools.cache
def _version_pattern() -> re.Pattern[str]:
    """What Version() accepts, without building one; compiled on first use (a run that loads the prebuilt tables never does)."""
    return re.compile(VERSION_PATTERN, re.VERBOSE | re.IGNORECASE)


def _version(value: Any) -> str:
    if isinstance(value, str) and _version_pattern().fullmatch(value.strip()):
        return value
    raise _Bad('expected a version in quotes, such as "11.8"')


def _integer(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _Bad("expected a whole number")


def _range(value: Any) -> r.VersionRange:
    if isinstance(value, str) and value.strip():
        try:
            return r.VersionRange(value)
        except InvalidSpecifier:
            pass
    raise _Bad('expected a PEP 440 version range in quotes, such as ">=3.8,<3.12"')


def _url(value: Any) -> str:
    if isinstance(value, str) and value.startswith("https://") and len(value) > len("https://") and not value[8].isspace():
        return value
    raise _Bad("expected an https:// URL of the vendor's own page (a note may follow it)")


def _optional_url(value: Any) -> Optional[str]:
    return None if value is None else _url(value)


def _optional_text(value: Any) -> Optional[str]:
    return None if value is None else _text(value)


def _optional_version(value: Any) -> Optional[str]:
    return None if value is None else _version(value)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _Bad("expected true or false")


def _regex(value: Any) -> str:
    text = _text(value)
    try:
        re.compile(text)
    except re.error as error:
        raise _Bad(f"expected a regular expression ({error})") from None
    return text


def _date(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return value
    raise _Bad("expected a date such as 2026-12-03")


def _list_of(item: Convert, what: str) -> Convert:
    def convert(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise _Bad(f"expected a list of {what}")
        try:
            return tuple(item(v) for v in value)
        except _Bad:
            raise _Bad(f"expected a list of {what}") from None

    return convert


def _one_of(*choices: str) -> Convert:
    def convert(value: Any) -> str:
        if isinstance(value, str) and value in choices:
            return value
        raise _Bad("expected one of " + ", ".join(choices))

    return convert


def _optional(convert: Convert) -> Convert:
    """`convert`, or None for a value the vendor does not publish (written `null`)."""

    def optional(value: Any) -> Any:
        return None if value is None else convert(value)

    return optional


_OS = _one_of("windows", "linux")
_NAMES = _list_of(_text, "names")
_PROVENANCE: dict[str, Convert] = {"source": _url, "copy": _optional_url, "observed": _optional_text}


def _gpu_key(name: str) -> str:
    """A GPU name as compared: lower case, single spaces, without the brand NVML and NVIDIA's pages
    put in front of some names and not others ("NVIDIA T4" / "Tesla T4", "NVIDIA GeForce RTX 4090")."""
    key = " ".join(name.lower().split())
    for brand in ("nvidia ", "tesla "):
        if key.startswith(brand):
            key = key[len(brand) :]
    return key


def _rate(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    raise _Bad("expected a positive number (null where the vendor gives none)")


def _peak_name_key(name: str) -> str:
    """A peak row's name or model as `gpu_peak` compares it: `_gpu_key`, also without "GeForce "."""
    key = _gpu_key(name)
    return key[len("geforce ") :] if key.startswith("geforce ") else key


def _check_gpus(table: r.GpusTable, where: str) -> None:
    """A name (or model) picks one peak row; thresholds fail below where they warn, or lower."""
    owner: dict[str, str] = {}
    for row in table.peaks:
        for name in {_peak_name_key(row.model), *map(_peak_name_key, row.names)}:
            if owner.setdefault(name, row.model) != row.model:
                raise KnowledgeError(f"{where}: peaks ({row.model}): name {name!r} also names {owner[name]}")
    for threshold in table.verify_thresholds:
        if threshold.fail_below > threshold.warn_below:
            raise KnowledgeError(f"{where}: verify_thresholds ({threshold.check}): fail_below is above warn_below")


def _release(text: str) -> tuple[int, ...]:
    return Version(text).release[:2]


class Section(Record):
    """One section of a table: its row record, how each field is checked, and (for lists) the row key."""

    record: type[Any]  # the row's record class (records.TorchRelease): its _fields, _field_defaults and constructor
    fields: dict[str, Convert]
    key: Optional[Callable[[Any], Hashable]]  # None: a single row, not a list
    label: tuple[str, ...] = ()  # the fields that name a row in messages

    def convert(self, raw: Any) -> Any:
        """The record for one raw row; `_Bad` says what is wrong with it (the caller says where)."""
        if not isinstance(raw, dict):
            raise _Bad(f"expected a mapping of keys to values, got {_shown(raw)}")
        fields = self.fields
        for key in raw:
            if key not in fields:
                close = _close(str(key), list(fields), n=1)
                raise _Bad(f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        values = {}
        for name, convert in fields.items():
            if name not in raw:
                if name not in self.record._field_defaults:
                    raise _Bad(f"missing key {name!r}")
                continue
            try:
                values[name] = convert(raw[name])
            except _Bad as bad:
                raise _Bad(f"{name!r}: {bad}, got {_shown(raw[name])}") from None
        return self.record(**values)

    def name_of(self, raw: Any) -> str:
        """The row's name in messages, ` (version 2.10)`; empty when the row says nothing usable."""
        if not isinstance(raw, dict):
            return ""
        parts = [f"{k} {raw[k]}" for k in self.label if isinstance(raw.get(k), (str, int)) and not isinstance(raw.get(k), bool)]
        return f" ({', '.join(parts)})" if parts else ""


def _rows(record: type[Any], fields: dict[str, Convert], key: Callable[[Any], Hashable], *label: str) -> Section:
    return Section(record, {**fields, **_PROVENANCE}, key, label)


def _single(record: type[Any], fields: dict[str, Convert]) -> Section:
    return Section(record, {**fields, **_PROVENANCE}, None)


class Table(Record):
    """A data file: its record and its sections in file order."""

    record: type[Any]  # the table's record class (records.TorchTable)
    sections: dict[str, Section]
    check: Optional[Callable[[Any, str], None]] = None  # invariants across rows


def _check_cuda_driver(table: r.CudaDriverTable, where: str) -> None:
    """The minimum driver never decreases as the toolkit version rises (rows where NVIDIA lists none are skipped)."""
    for os_name in ("linux", "windows"):
        rows = sorted((row for row in table.toolkits if getattr(row, os_name) is not None), key=lambda row: Version(row.cuda))
        for older, newer in zip(rows, rows[1:]):
            if Version(getattr(newer, os_name)) < Version(getattr(older, os_name)):
                raise KnowledgeError(f"{where}: CUDA {newer.cuda} needs an older {os_name} driver than CUDA {older.cuda}")


_CUDA_LIST = _list_of(_version, 'versions in quotes, such as "12.6"')


def _check_patch(patch: Optional[str], version: str, where: str, what: str) -> None:
    """A `patch` pin must be a release of the row's own minor, or a plan would install another minor."""
    if patch is not None and _release(patch) != _release(version):
        raise KnowledgeError(f"{where}: {what} {version}: patch {patch} is not a {'.'.join(map(str, _release(version)))} release")


def _check_torch(table: r.TorchTable, where: str) -> None:
    """Patches within their minor; a conda line that can take a CUDA version, for CUDA versions it lists."""
    for row in table.releases:
        _check_patch(row.patch, row.version, where, "torch")
        if row.conda is not None and ("{cuda}" not in row.conda or not row.conda_cuda):
            raise KnowledgeError(f"{where}: torch {row.version}: conda needs a {{cuda}} placeholder and conda_cuda")
        if not set(row.conda_forge_cuda) <= set(row.conda_cuda or ()):
            raise KnowledgeError(f"{where}: torch {row.version}: conda_forge_cuda lists a CUDA that conda_cuda does not")


def _check_tensorflow(table: r.TensorflowTable, where: str) -> None:
    for row in table.tested_builds:
        _check_patch(row.patch, row.version, where, f"tensorflow ({row.os})")


def _check_framework_releases(table: r.FrameworksTable, where: str) -> None:
    """Release lists are newest first with no repeats, so `framework_releases()[0]` is the newest."""
    for row in table.releases:
        ordered = sorted(row.versions, key=Version, reverse=True)
        if list(row.versions) != ordered or len(set(map(Version, row.versions))) != len(row.versions):
            raise KnowledgeError(f"{where}: releases ({row.distribution}): versions must be newest first, without repeats")


def _archive_pattern(value: Any) -> str:
    text = _text(value)
    unknown = set(re.findall(r"{(\w*)}", text)) - {"version", "cuda", "cuda_major", "arch"}
    if "{version}" not in text or unknown:
        raise _Bad("expected a file name with {version} and only {cuda}, {cuda_major}, {arch} besides")
    return text


def _check_cudnn(table: r.CudnnTable, where: str) -> None:
    """A support row's full versions are releases of its range, and its CUDA names a release its toolkits serve."""
    for row in table.support:
        outside = [full for full in row.full_versions if not row.versions.contains(full, prereleases=True)]
        if outside:
            raise KnowledgeError(f"{where}: support ({row.versions}, cuda {row.cuda}): {', '.join(outside)} is not in {row.versions}")
        named = Version(row.cuda)
        if not any(row.toolkits.contains(f"{named.major}.{minor}") for minor in range(10)) or (len(named.release) > 1 and not row.toolkits.contains(row.cuda)):
            raise KnowledgeError(f"{where}: support ({row.versions}, cuda {row.cuda}): toolkits {row.toolkits} does not serve CUDA {row.cuda}")


_LIBRARY_NAME: dict[str, Convert] = {"cuda": _version, "windows": _text, "linux": _text}

_TAGS = _list_of(_text, "Python tags such as cp311")

TABLES: dict[str, Table] = {
    "published": Table(
        r.PublishedTable,
        {
            "releases": _rows(
                r.PublishedRelease,
                {
                    "distribution": _text,
                    "version": _text,
                    "linux": _TAGS,
                    "windows": _TAGS,
                    "aarch64": _optional(_TAGS),
                    "sdist": _boolean,
                    "requires_python": _optional(_range),
                    "requires": _optional(_list_of(_text, "requirements")),
                    "requires_aarch64": _optional(_list_of(_text, "requirements")),
                },
                lambda row: (row.distribution, row.version),
                "distribution",
                "version",
            ),
            "extras": _rows(
                r.PublishedExtra,
                {"distribution": _text, "version": _text, "extra": _text, "requires": _list_of(_text, "requirements")},
                lambda row: (row.distribution, row.version, row.extra),
                "distribution",
                "version",
                "extra",
            ),
        },
    ),
    "cuda_driver": Table(
        r.CudaDriverTable,
        {
            "toolkits": _rows(
                r.ToolkitDriver,
                {"cuda": _version, "release": _text, "linux": _optional_version, "windows": _optional_version},
                lambda row: Version(row.cuda),
                "cuda",
            ),
            "minor_version_compatibility": _rows(
                r.MinorVersionCompatibility,
                {"major": _integer, "linux": _version, "windows": _version, "upper": _optional_version},
                lambda row: row.major,
                "major",
            ),
        },
        _check_cuda_driver,
    ),
    "cuda_libraries": Table(
        r.CudaLibrariesTable,
        {
            "cudart": _rows(r.LibraryName, _LIBRARY_NAME, lambda row: Version(row.cuda), "cuda"),
            "cublas": _rows(r.LibraryName, _LIBRARY_NAME, lambda row: Version(row.cuda), "cuda"),
        },
    ),
    "cudnn": Table(
        r.CudnnTable,
        {
            "releases": _rows(r.CudnnRelease, {"major": _integer, "parts": _NAMES, "optional": _NAMES}, lambda row: row.major, "major"),
            "legacy_names": _rows(
                r.LegacyCudnnName, {"name": _text, "os": _OS, "major": _integer, "cuda": _version, "toolkits": _range}, lambda row: row.name.lower(), "name"
            ),
            "runtime_loads": _rows(r.RuntimeLoads, {"library": _text, "loads": _NAMES}, lambda row: row.library.lower(), "library"),
            "optional_loads": _rows(r.OptionalLoad, {"name": _text}, lambda row: row.name, "name"),
            "zlibwapi": _single(r.Zlibwapi, {"versions": _range, "end_indirect": _boolean}),
            "support": _rows(
                r.CudnnSupport,
                {
                    "versions": _range,
                    "full_versions": _CUDA_LIST,
                    "cuda": _version,
                    "toolkits": _range,
                    "tested": _CUDA_LIST,
                    "cc_min": _optional_version,
                    "cc": _CUDA_LIST,
                    "driver_linux": _optional_version,
                    "driver_windows": _optional_version,
                    "os": _list_of(_OS, "operating systems (windows, linux)"),
                },
                lambda row: (str(row.versions), row.cuda, str(row.toolkits)),
                "versions",
                "cuda",
            ),
            "archives": _rows(
                r.CudnnArchive,
                {"versions": _range, "os": _OS, "pattern": _archive_pattern},
                lambda row: (str(row.versions), row.os),
                "versions",
                "os",
            ),
        },
        _check_cudnn,
    ),
    "cuda_wheels": Table(
        r.CudaWheelsTable,
        {
            "wheels": _rows(
                r.CudaWheel,
                {
                    "cuda": _integer,
                    "library": _text,
                    "distribution": _text,
                    "linux": _regex,
                    "windows": _regex,
                    "linux_folder": _text,
                    "windows_folder": _text,
                },
                lambda row: (row.cuda, row.library),
                "cuda",
                "library",
            ),
            "placeholders": _rows(r.WheelPlaceholder, {"name": _text, "instead": _text}, lambda row: row.name.lower(), "name"),
            "reach": _rows(
                r.WheelReach,
                {"framework": _text, "os": _OS, "how": _one_of("runpath", "preload", "preload_dlls", "none"), "versions": _range, "extras": _optional_text},
                lambda row: (row.framework, row.os, str(row.versions)),
                "framework",
                "os",
            ),
        },
    ),
    "environment": Table(
        r.EnvironmentTable,
        {
            "ineffective": _rows(r.IneffectiveVariable, {"name": _text, "instead": _text}, lambda row: row.name.upper(), "name"),
            "known": _single(r.KnownVariables, {"names": _NAMES}),
        },
    ),
    "frameworks": Table(
        r.FrameworksTable,
        {
            "frameworks": _rows(
                r.Framework,
                {
                    "name": _text,
                    "module": _text,
                    "distributions": _NAMES,
                    "loads_cuda": _one_of("system", "bundled"),
                    "bundled_when": _NAMES,
                    "native_packages": _NAMES,
                    "load_log": _optional(_text),
                    "aarch64_cpu_only": _optional(_text),
                },
                lambda row: row.name,
                "name",
            ),
            "onnxruntime_builds": _rows(
                r.OnnxruntimeBuild,
                {"versions": _range, "cuda": _version, "cudnn": _optional(_version), "feed": _text, "index_url": _optional_url},
                lambda row: (str(row.versions), row.feed),
                "versions",
                "feed",
            ),
            "paddle_builds": _rows(
                r.PaddleBuild,
                {"tag": _text, "cuda": _version, "cudnn": _optional(_version), "os": _OS, "versions": _optional(_range), "index_url": _optional_url},
                lambda row: (row.tag, row.os, str(row.versions), row.cuda),
                "tag",
                "os",
                "versions",
            ),
            "pip_cuda": _rows(
                r.PipCuda,
                {"framework": _text, "os": _OS, "versions": _range},
                lambda row: (row.framework, row.os, str(row.versions)),
                "framework",
                "os",
                "versions",
            ),
            "jax_builds": _rows(
                r.JaxBuild,
                {
                    "versions": _range,
                    "extra": _text,
                    "cuda": _version,
                    "loads_cuda": _one_of("system", "bundled"),
                    "distribution": _text,
                    "cudnn": _optional(_version),
                    "driver_linux": _optional(_version),
                    "cuda_min": _optional(_version),
                },
                lambda row: (str(row.versions), row.extra),
                "versions",
                "extra",
            ),
            "releases": _rows(
                r.FrameworkReleases,
                {"distribution": _text, "versions": _list_of(_version, 'versions in quotes, such as "1.19.0"')},
                lambda row: row.distribution.lower(),
                "distribution",
            ),
        },
        _check_framework_releases,
    ),
    "gpus": Table(
        r.GpusTable,
        {
            "gpus": _rows(r.GpuCapability, {"name": _text, "cc": _version}, lambda row: _gpu_key(row.name), "name"),
            "cuda_architectures": _rows(
                r.CudaArchitectures,
                {"cuda": _version, "cc": _list_of(_version, 'compute capabilities in quotes, such as "8.6"'), "complete": _boolean},
                lambda row: _release(row.cuda),
                "cuda",
            ),
            "peaks": _rows(
                r.GpuPeak,
                {
                    "model": _text,
                    "names": _NAMES,
                    "fp32": _optional(_rate),
                    "tf32": _optional(_rate),
                    "fp16": _optional(_rate),
                    "bf16": _optional(_rate),
                    "memory_gbs": _optional(_rate),
                    "memory_gb": _optional(_rate),
                    "host_link": _optional_text,
                    "host_link_gbs": _optional(_rate),
                    "note": _optional_text,
                },
                lambda row: _peak_name_key(row.model),
                "model",
            ),
            "verify_thresholds": _rows(
                r.VerifyThreshold,
                {"check": _text, "warn_below": _rate, "fail_below": _rate, "unit": _one_of("percent", "ratio"), "note": _optional_text},
                lambda row: row.check,
                "check",
            ),
        },
        _check_gpus,
    ),
    "libraries": Table(
        r.LibrariesTable,
        {
            "providers": _rows(r.LibraryProvider, {"pattern": _regex, "provider": _text, "fix": _text}, lambda row: row.pattern, "pattern"),
            "os_provided": _single(r.OsProvided, {"windows": _regex, "linux": _regex}),
            "driver_provided": _single(r.DriverProvided, {"pattern": _regex, "files": _regex}),
        },
    ),
    "tensorflow": Table(
        r.TensorflowTable,
        {
            "windows_native_gpu_last": _single(r.WindowsGpuLast, {"version": _version}),
            "tested_builds": _rows(
                r.TensorflowBuild,
                {"version": _version, "os": _OS, "python": _range, "cudnn": _version, "cuda": _version, "patch": _optional(_version)},
                lambda row: (_release(row.version), row.os),
                "version",
                "os",
            ),
            "and_cuda": _rows(r.TensorflowAndCuda, {"versions": _range, "wheels": _NAMES}, lambda row: str(row.versions), "versions"),
            "packages": _rows(r.TensorflowPackage, {"name": _text, "versions": _range}, lambda row: str(row.versions), "name", "versions"),
            "windows_conda": _single(r.TensorflowConda, {"command": _text, "versions": _range}),
        },
        _check_tensorflow,
    ),
    "torch": Table(
        r.TorchTable,
        {
            "index_url": _single(r.IndexUrl, {"template": _text}),
            "releases": _rows(
                r.TorchRelease,
                {
                    "version": _version,
                    "python": _range,
                    "cuda": _CUDA_LIST,
                    "windows_python": _optional(_range),
                    "windows_cuda": _optional(_CUDA_LIST),
                    "pypi_cuda": _optional(_version),
                    "pypi_cudnn": _optional(_version),
                    "cudnn_major": _optional(_version),
                    "cudnn_builds": _list_of(_text, '"CUDA:cuDNN" pairs such as "12.6:9.10.2.21"'),
                    "patch": _optional(_version),
                    "conda": _optional(_text),
                    "conda_cuda": _optional(_CUDA_LIST),
                    "conda_forge_cuda": _CUDA_LIST,
                },
                lambda row: _release(row.version),
                "version",
            ),
        },
        _check_torch,
    ),
}


def _top_level(table: Table, document: Any, where: str, prefix: str, partial: bool) -> None:
    if not isinstance(document, dict):
        raise KnowledgeError(f"{where}: {prefix or 'the file'}: expected a mapping of sections, got {_shown(document)}")
    allowed = ["reviewed", *table.sections]
    for key in document:
        if key not in allowed:
            close = _close(str(key), allowed, n=1)
            raise KnowledgeError(f"{where}: unknown key {prefix + str(key)!r}" + (f" (did you mean {prefix + close[0]!r}?)" if close else ""))
    if not partial:
        for key in allowed:
            if key not in document:
                raise KnowledgeError(f"{where}: missing key {prefix + key!r}")
    if "reviewed" in document:
        try:
            _date(document["reviewed"])
        except _Bad as bad:
            raise KnowledgeError(f"{where}: {prefix}reviewed: {bad}, got {_shown(document['reviewed'])}") from None


def _section(section: Section, name: str, raw: Any, where: str) -> Any:
    """The record (single row) or tuple of records (list) of one section; duplicate keys are an error.
    `name` is how messages call the section: "releases", or "torch.releases" in a user's file."""
    if section.key is None:
        try:
            return section.convert(raw)
        except _Bad as bad:
            raise KnowledgeError(f"{where}: {name}: {bad}") from None
    if not isinstance(raw, list):
        raise KnowledgeError(f"{where}: {name}: expected a list of rows, got {_shown(raw)}")
    rows: list[Any] = []
    seen: dict[Hashable, int] = {}
    for index, item in enumerate(raw):
        try:
            row = section.convert(item)
            key = section.key(row)
            if key in seen:
                raise _Bad(f"same key as {name}[{seen[key]}]; keep one of them")
        except _Bad as bad:
            raise KnowledgeError(f"{where}: {name}[{index}]{section.name_of(item)}: {bad}") from None
        seen[key] = index
        rows.append(row)
    return tuple(rows)


def build(name: str, document: Any, where: str) -> Any:
    """The typed table of one shipped data file (every section present, every row valid, invariants kept)."""
    table = TABLES[name]
    _top_level(table, document, where, "", partial=False)
    record = table.record(
        **{key: document["reviewed"] if key == "reviewed" else _section(table.sections[key], key, document[key], where) for key in table.record._fields}
    )
    if table.check:
        table.check(record, where)
    return record


def partial(name: str, document: Any, where: str) -> dict[str, Any]:
    """A user's rows for table `name` in file `where`: only the sections given, each checked like the shipped ones."""
    table = TABLES[name]
    _top_level(table, document, where, f"{name}.", partial=True)
    return {key: _section(table.sections[key], f"{name}.{key}", value, where) for key, value in document.items() if key != "reviewed"}


def overlay(name: str, shipped: Any, sections: dict[str, Any], where: str) -> Any:
    """The shipped table with a user's rows on top: a row with the key of a shipped row replaces it,
    other rows are added; the user's rows come first, so a lookup that takes the first match sees them."""
    table = TABLES[name]
    changes = {}
    for key, value in sections.items():
        section = table.sections[key]
        if section.key is None:
            changes[key] = value
            continue
        theirs = {section.key(row) for row in value}
        changes[key] = value + tuple(row for row in getattr(shipped, key) if section.key(row) not in theirs)
    merged = shipped._replace(**changes)
    if table.check:
        table.check(merged, where)
    return merged
