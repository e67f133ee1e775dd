"""Version-compatibility knowledge, kept as data files with a source on every row.

This module only loads and looks up; the facts live in `data/*.yaml` (the source of truth,
reviewed by people), and a run reads `data/knowledge.json`, generated from them by
`python -m cudnn_doctor.knowledge.generate` (a test fails when the two disagree). Every table
is checked against `schema.py` and becomes typed records (`records.py`); the generator also
writes those records, built from the JSON, to `data/knowledge.pickle`, which a run unpickles
(per table, lazily: a check that never needs the TensorFlow table never loads it) while it
matches knowledge.json, and otherwise builds from the JSON as before (`prebuilt.py`).
`overlay(FILE)` (`--kb FILE`) puts a user's newer rows over the shipped ones for the length of a run.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Optional, TypeVar, Union, cast, overload

from packaging.version import Version

from cudnn_doctor.errors import InputError, KnowledgeError
from cudnn_doctor.knowledge import framework_records, records
from cudnn_doctor.record import Record

DATA = Path(__file__).with_name("data")
SHIPPED = DATA / "knowledge.json"
PREBUILT = DATA / "knowledge.pickle"  # the tables built from SHIPPED by the generator (knowledge/prebuilt.py)

__all__ = [
    "BINARY_COMPATIBILITY_SOURCE",
    "COMPILE",
    "MINOR_VERSION_COMPATIBILITY",
    "PTX_JIT",
    "PTX_JIT_SOURCE",
    "RUN",
    "TOOLKIT_RELEASE",
    "ArchiveName",
    "DriverRequirement",
    "DriverRule",
    "KnowledgeError",
    "cuda_architectures",
    "cuda_min_compute_capability",
    "cuda_of_runtime",
    "cuda_runs_on_compute_capability",
    "cuda_supports_compute_capability",
    "cuda_wheels",
    "cudart_name",
    "cudnn_archive_name",
    "cudnn_file_name",
    "cudnn_min_compute_capability",
    "cudnn_release",
    "cudnn_releases_for",
    "cudnn_series_known",
    "cudnn_support_rows",
    "driver_requirement",
    "driver_rule",
    "extras_recorded",
    "framework",
    "framework_releases",
    "frameworks",
    "gpu_compute_capability",
    "gpu_peak",
    "ineffective_variables",
    "jax_build",
    "jax_builds",
    "known_variables",
    "legacy_cudnn_name",
    "library_provider",
    "loads_system_cuda",
    "max_cuda_for_driver",
    "minor_version_floor",
    "onnxruntime_build",
    "onnxruntime_builds",
    "overlay",
    "paddle_build",
    "parse_cudnn_archive_name",
    "pip_brings_cuda",
    "published",
    "published_extra",
    "records",
    "reviewed_dates",
    "table",
    "tensorflow_and_cuda",
    "tensorflow_build",
    "tensorflow_package",
    "tensorflow_windows_conda",
    "tensorflow_windows_gpu_last",
    "toolkit_release",
    "toolkit_releases",
    "torch_index_url",
    "torch_release",
    "verify_threshold",
    "wheel_folder",
    "wheel_placeholders",
    "wheel_providing",
    "wheel_reach",
    "wheels_shipping",
    "zlibwapi_required",
]


class _Overlay(Record):
    where: str  # the user's file name, for messages
    tables: dict[str, dict[str, Any]]  # table -> section -> record or tuple of records


_overlay: Optional[_Overlay] = None
_LOOKUPS: list[Any] = []
_F = TypeVar("_F", bound=Callable[..., Any])


def _lookup(function: _F) -> _F:
    """A lookup whose answer depends only on its arguments and the tables: kept until the tables change
    (`overlay`), because the planner asks the same few questions hundreds of times per plan."""
    by_key = functools.lru_cache(maxsize=4096)(lambda key, args, kwargs: function(*args, **dict(kwargs)))

    @functools.wraps(function)
    def cached(*args: Any, **kwargs: Any) -> Any:
        # Keyed by the versions as written: Version("12") == Version("12.0") (trailing zeros), yet a major alone and
        # its X.0 release are different questions (driver_rule), so equal keys must not share an answer.
        key = tuple(
            f"{type(a).__name__}:{a}" if isinstance(a, Version) else a for a in (*args, *sorted(kwargs.items()))
        )
        return by_key(key, args, tuple(sorted(kwargs.items())))

    cached.cache_clear = by_key.cache_clear  # type: ignore[attr-defined]
    _LOOKUPS.append(cached)
    return cast(_F, cached)  # functools.wraps: the same function, answers kept


_parsed = functools.lru_cache(maxsize=None)(Version)  # a version string's parse, which never changes
lookup = _lookup  # for lookups outside this module (the planner's) that read only their arguments and the tables


def _tables_changed() -> None:
    _table.cache_clear()
    for cached in _LOOKUPS:
        cached.cache_clear()


def __getattr__(name: str) -> Any:
    """`knowledge.schema`, imported on first use: a run that loads the prebuilt tables never needs it."""
    if name == "schema":
        import importlib

        return importlib.import_module(f"{__name__}.schema")  # not `from . import schema`: that asks this hook again
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def shipped_document() -> dict[str, Any]:
    """knowledge.json as shipped, never a user's overlay: what the doctor itself chose to say."""
    import json

    document: dict[str, Any] = json.loads(SHIPPED.read_bytes())  # the package's own data file, not the machine's
    return document


@functools.cache
def _prebuilt() -> Optional[dict[str, bytes]]:
    from cudnn_doctor.knowledge import prebuilt

    return prebuilt.read(PREBUILT, SHIPPED)


def _shipped_table(name: str) -> Any:
    """The shipped table: unpickled when the prebuilt file matches knowledge.json, else built (and checked) from the
    JSON."""
    tables = _prebuilt()
    if tables is not None:
        from cudnn_doctor.knowledge import prebuilt

        found = prebuilt.table(tables, name)
        if found is not None:
            return found
    from cudnn_doctor.knowledge import schema

    return schema.build(name, shipped_document()[name], f"{name}.yaml")


@overload
def table(name: Literal["published"]) -> framework_records.PublishedTable: ...
@overload
def table(name: Literal["cuda_driver"]) -> records.CudaDriverTable: ...
@overload
def table(name: Literal["cuda_libraries"]) -> records.CudaLibrariesTable: ...
@overload
def table(name: Literal["cudnn"]) -> records.CudnnTable: ...
@overload
def table(name: Literal["cuda_wheels"]) -> records.CudaWheelsTable: ...
@overload
def table(name: Literal["environment"]) -> records.EnvironmentTable: ...
@overload
def table(name: Literal["frameworks"]) -> framework_records.FrameworksTable: ...
@overload
def table(name: Literal["gpus"]) -> records.GpusTable: ...
@overload
def table(name: Literal["libraries"]) -> records.LibrariesTable: ...
@overload
def table(name: Literal["tensorflow"]) -> framework_records.TensorflowTable: ...
@overload
def table(name: Literal["torch"]) -> framework_records.TorchTable: ...
@overload
def table(name: str) -> Any: ...
def table(name: str) -> Any:
    """One table as its typed record (`framework_records.TorchTable` for "torch"): the shipped rows, the user's `kb
    update` over
    them, and the rows of a `--kb` file over both under `overlay`."""
    return _table(name)


@functools.cache
def _table(name: str) -> Any:
    shipped = _updated(name, _shipped_table(name))
    if _overlay is None or name not in _overlay.tables:
        return shipped
    from cudnn_doctor.knowledge import schema

    return schema.overlay(name, shipped, _overlay.tables[name], f"{_overlay.where}: {name}")


def _updated(name: str, shipped: Any) -> Any:
    """The shipped table with the rows `cudnn-doctor kb update` wrote over it; an update that cannot be used is ignored
    (`kb status` says why): it never stops a diagnosis."""
    found = update_overlay()
    if found is None or name not in found.tables:
        return shipped
    from cudnn_doctor.knowledge import schema

    try:
        return schema.overlay(name, shipped, found.tables[name], f"{found.where}: {name}")
    except KnowledgeError:
        return shipped


_UPDATE: dict[str, Any] = {}  # "overlay" / "problem": the user's update file as read once
UPDATE_NAME = "knowledge-update.json"


def update_path() -> Optional[Path]:
    """Where `kb update` keeps what it read (the user's state folder, as `use_updates` was told); None when not told."""
    return None if _UPDATE_FOLDER is None else Path(_UPDATE_FOLDER) / UPDATE_NAME


def use_updates(state_folder: Optional[Union[str, Path]]) -> None:
    """Lay the user's `kb update` in `state_folder` over the shipped tables from now on (None: the shipped data only).
    The command line does for a run on this machine; a replayed fixture (`--fixture`, the tests) keeps the shipped
    data, so its diagnosis is the same on every host."""
    global _UPDATE_FOLDER
    _UPDATE_FOLDER = state_folder
    forget_update()


_UPDATE_FOLDER: Optional[Union[str, Path]] = None


def update_overlay() -> Optional[_Overlay]:
    """The overlay `kb update` wrote in the state folder, read once; None when updates are not in use (`use_updates`),
    when there is none, or when it cannot be used."""
    path = update_path()
    if path is None:
        return None
    if "overlay" not in _UPDATE:
        _UPDATE["overlay"], _UPDATE["problem"] = None, None
        if path.is_file():
            try:
                _UPDATE["overlay"] = read_overlay(path)
            except InputError as error:
                _UPDATE["problem"] = str(error)
    found: Optional[_Overlay] = _UPDATE["overlay"]
    return found


def update_problem() -> Optional[str]:
    """Why the update file is not used, when it is not."""
    update_overlay()
    return _UPDATE.get("problem")


def forget_update() -> None:
    """After `kb update` wrote a new overlay: read it again, and every table and lookup with it."""
    _UPDATE.clear()
    _tables_changed()


def read_overlay(path: Path) -> _Overlay:
    """A `--kb` file, every row checked now (before any diagnosis) against the schema and merged once
    with the shipped tables; any problem is an InputError naming the file and the row."""
    from cudnn_doctor.knowledge import fields, files, schema

    try:
        document = files.read(path, str(path))
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None
    except KnowledgeError as error:
        raise InputError(str(error)) from None
    where = str(path)
    if not isinstance(document, dict) or not document:
        raise InputError(f"{where}: expected a mapping of table names ({', '.join(schema.TABLES)}) to their sections")
    tables = {}
    try:
        for name, sections in document.items():
            if name not in schema.TABLES:
                close = fields.close_matches(str(name), list(schema.TABLES))
                raise KnowledgeError(
                    f"{where}: unknown table {name!r}"
                    + (f" (did you mean {close[0]!r}?)" if close else "")
                    + f"; the tables are {', '.join(schema.TABLES)}"
                )
            tables[name] = schema.partial(name, sections, where)
            schema.overlay(name, _shipped_table(name), tables[name], f"{where}: {name}")
    except KnowledgeError as error:
        raise InputError(str(error)) from None
    return _Overlay(where, tables)


@contextlib.contextmanager
def overlay(path: Optional[Path]) -> Iterator[None]:
    """Within the block, the tables are the shipped ones with the rows of `path` over them (nothing changes for
    None)."""
    global _overlay
    if path is None:
        yield
        return
    previous, _overlay = _overlay, read_overlay(path)
    _tables_changed()
    try:
        yield
    finally:
        _overlay = previous
        _tables_changed()


# The lookups, by subject (each module reads the tables above). Imported last: each imports this module's loading.
from cudnn_doctor.knowledge.builds import (  # noqa: E402
    framework,
    frameworks,
    ineffective_variables,
    known_variables,
    loads_system_cuda,
    onnxruntime_build,
    onnxruntime_builds,
    paddle_build,
    reviewed_dates,
    tensorflow_build,
    tensorflow_windows_gpu_last,
    torch_index_url,
    torch_release,
)
from cudnn_doctor.knowledge.cuda import (  # noqa: E402
    COMPILE,
    MINOR_VERSION_COMPATIBILITY,
    PTX_JIT,
    PTX_JIT_SOURCE,
    RUN,
    TOOLKIT_RELEASE,
    DriverRequirement,
    DriverRule,
    cuda_of_runtime,
    cudart_name,
    driver_requirement,
    driver_rule,
    max_cuda_for_driver,
    minor_version_floor,
    toolkit_release,
    toolkit_releases,
)
from cudnn_doctor.knowledge.cudnn_lookup import (  # noqa: E402
    ArchiveName,
    cudnn_archive_name,
    cudnn_file_name,
    cudnn_min_compute_capability,
    cudnn_release,
    cudnn_releases_for,
    cudnn_series_known,
    cudnn_support_rows,
    legacy_cudnn_name,
    parse_cudnn_archive_name,
    zlibwapi_required,
)
from cudnn_doctor.knowledge.gpus import (  # noqa: E402
    BINARY_COMPATIBILITY_SOURCE,
    cuda_architectures,
    cuda_min_compute_capability,
    cuda_runs_on_compute_capability,
    cuda_supports_compute_capability,
    gpu_compute_capability,
    gpu_peak,
    verify_threshold,
)
from cudnn_doctor.knowledge.libraries import (  # noqa: E402
    cuda_wheels,
    extras_recorded,
    framework_releases,
    jax_build,
    jax_builds,
    library_provider,
    pip_brings_cuda,
    published,
    published_extra,
    tensorflow_and_cuda,
    tensorflow_package,
    tensorflow_windows_conda,
    wheel_folder,
    wheel_placeholders,
    wheel_providing,
    wheel_reach,
    wheels_shipping,
)
