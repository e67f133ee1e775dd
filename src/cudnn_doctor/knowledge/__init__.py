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
import re
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Optional, TypeVar, cast, overload

from packaging.version import Version

from cudnn_doctor.errors import InputError, KnowledgeError
from cudnn_doctor.knowledge import records
from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record
from cudnn_doctor.versions import canonical_name as canonicalize_name
from cudnn_doctor.versions import cuda_major_of_dll_number, cuda_tag

DATA = Path(__file__).with_name("data")
SHIPPED = DATA / "knowledge.json"
PREBUILT = DATA / "knowledge.pickle"  # the tables built from SHIPPED by the generator (knowledge/prebuilt.py)

__all__ = ["KnowledgeError", "overlay", "records", "table"]


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
        key = tuple(f"{type(a).__name__}:{a}" if isinstance(a, Version) else a for a in (*args, *sorted(kwargs.items())))
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

    with open(SHIPPED, encoding="utf-8") as handle:
        document: dict[str, Any] = json.load(handle)
    return document


@functools.cache
def _prebuilt() -> Optional[dict[str, bytes]]:
    from cudnn_doctor.knowledge import prebuilt

    return prebuilt.read(PREBUILT, SHIPPED)


def _shipped_table(name: str) -> Any:
    """The shipped table: unpickled when the prebuilt file matches knowledge.json, else built (and checked) from the JSON."""
    tables = _prebuilt()
    if tables is not None:
        from cudnn_doctor.knowledge import prebuilt

        found = prebuilt.table(tables, name)
        if found is not None:
            return found
    from cudnn_doctor.knowledge import schema

    return schema.build(name, shipped_document()[name], f"{name}.yaml")


@overload
def table(name: Literal["published"]) -> records.PublishedTable: ...
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
def table(name: Literal["frameworks"]) -> records.FrameworksTable: ...
@overload
def table(name: Literal["gpus"]) -> records.GpusTable: ...
@overload
def table(name: Literal["libraries"]) -> records.LibrariesTable: ...
@overload
def table(name: Literal["tensorflow"]) -> records.TensorflowTable: ...
@overload
def table(name: Literal["torch"]) -> records.TorchTable: ...
@overload
def table(name: str) -> Any: ...
def table(name: str) -> Any:
    """One table as its typed record (`records.TorchTable` for "torch"): the shipped rows, the user's `kb update` over
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


def update_path() -> Path:
    """Where `kb update` keeps what it read: the user's state folder."""
    from cudnn_doctor.paths import state_dir

    return Path(state_dir()) / UPDATE_NAME


def use_updates(on: bool = True) -> None:
    """Lay the user's `kb update` over the shipped tables from now on: the command line does for a run on this machine.
    A replayed fixture (`--fixture`, the tests) keeps the shipped data, so its diagnosis is the same on every host."""
    global _USE_UPDATES
    _USE_UPDATES = on
    forget_update()


_USE_UPDATES = False


def update_overlay(force: bool = False) -> Optional[_Overlay]:
    """The overlay `kb update` wrote in the state folder, read once; None when updates are not in use (`use_updates`;
    `force` reads it all the same, for `kb status`), when there is none, or when it cannot be used."""
    if not (_USE_UPDATES or force):
        return None
    if "overlay" not in _UPDATE:
        path = update_path()
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
    update_overlay(force=True)
    return _UPDATE.get("problem")


def forget_update() -> None:
    """After `kb update` wrote a new overlay: read it again, and every table and lookup with it."""
    _UPDATE.clear()
    _tables_changed()


def read_overlay(path: Path) -> _Overlay:
    """A `--kb` file, every row checked now (before any diagnosis) against the schema and merged once
    with the shipped tables; any problem is an InputError naming the file and the row."""
    from cudnn_doctor.knowledge import files, schema

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
                close = schema._close(str(name), list(schema.TABLES))
                raise KnowledgeError(
                    f"{where}: unknown table {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "") + f"; the tables are {', '.join(schema.TABLES)}"
                )
            tables[name] = schema.partial(name, sections, where)
            schema.overlay(name, _shipped_table(name), tables[name], f"{where}: {name}")
    except KnowledgeError as error:
        raise InputError(str(error)) from None
    return _Overlay(where, tables)


@contextlib.contextmanager
def overlay(path: Optional[Path]) -> Iterator[None]:
    """Within the block, the tables are the shipped ones with the rows of `path` over them (nothing changes for None)."""
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


class DriverRequirement(Record):
    """The oldest driver that runs code built with one CUDA version, and why."""

    cuda: Version
    driver: Version  # for comparing
    rule: str  # "minor-version compatibility" | "toolkit release"
    source: str
    driver_text: str = ""  # the driver as NVIDIA writes it ("450.80.02"; `Version` would print "450.80.2")


MINOR_VERSION_COMPATIBILITY = "minor-version compatibility"
TOOLKIT_RELEASE = "toolkit release"
# What the driver is asked to do with CUDA code, which decides the rule (`driver_rule`):
RUN = "run"  # run code built with that CUDA that has native code (SASS, cubins) for the GPU
PTX_JIT = "ptx-jit"  # JIT-compile PTX that toolkit generated (no native code for the GPU)
COMPILE = "compile"  # compile with that toolkit's nvcc (building extensions)
PTX_JIT_SOURCE = (
    "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html ('applications compiled with a CUDA "
    "Toolkit release from within a CUDA major release family can run, with limited feature-set, on systems having at least "
    "the minimum required driver version'); https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
    "(cudaErrorUnsupportedPtxVersion: 'the PTX was generated by a compiler newer than what is supported by the CUDA driver "
    "and PTX JIT compiler')"
)


class DriverRule(Record):
    """The one driver rule `check` and `plan` share: a CUDA release's own minimum (NVIDIA's Table 3) and its major's
    minor-version compatibility floor side by side, which of the two the verdict uses, and why."""

    cuda: Version
    use: str  # RUN | PTX_JIT | COMPILE
    exact: Optional[DriverRequirement]  # the release's own minimum ("toolkit release"); None where NVIDIA lists none
    floor: Optional[DriverRequirement]  # the major's minor-version compatibility floor; None before CUDA 11
    rule: str  # MINOR_VERSION_COMPATIBILITY | TOOLKIT_RELEASE: the one that applies
    why: str

    @property
    def need(self) -> DriverRequirement:
        return self.floor if self.rule == MINOR_VERSION_COMPATIBILITY else self.exact  # type: ignore[return-value]

    def explain(self) -> str:
        """Both minimums and the rule used: "CUDA 12.4's own minimum is 550.54.14, the minor-version compatibility floor of
        CUDA 12.x is 525; the toolkit release minimum applies: minor-version compatibility does not cover compiling ..." """
        major = self.cuda.release[0]
        name = ".".join(str(p) for p in self.cuda.release[:2])
        parts = []
        parts.append(f"CUDA {name}'s own minimum is {self.exact.driver_text}" if self.exact else f"NVIDIA lists no minimum of CUDA {name}'s own")
        parts.append(f"the minor-version compatibility floor of CUDA {major}.x is {self.floor.driver_text}" if self.floor else "it has no minor-version floor")
        used = "the minor-version floor" if self.rule == MINOR_VERSION_COMPATIBILITY else "its own minimum"
        return f"{parts[0]}, {parts[1]}; {used} applies: {self.why}"


@_lookup
def driver_rule(cuda: Version, os_name: str, use: str = RUN) -> Optional[DriverRule]:
    """What the driver must be for CUDA `cuda` (a release, or a major alone: "12") on `os_name`, and which rule says so.

    Minor-version compatibility (CUDA 11 and later) lets code built with CUDA X.y run on any driver of the X family
    from the major's floor, as long as the GPU runs native code the toolkit built. It does not cover PTX JIT of code
    from a toolkit newer than the driver (a build whose only code for the GPU is PTX: the driver's JIT compiler must
    know that PTX), nor compiling with that toolkit's nvcc: there the release's own minimum from Table 3 applies.
    None when neither is known."""
    data: records.CudaDriverTable = table("cuda_driver")
    major = cuda.release[0]
    name = ".".join(str(p) for p in cuda.release[:2])
    compat = next((row for row in data.minor_version_compatibility if row.major == major), None)
    floor_text = getattr(compat, os_name) if compat is not None else None
    floor = DriverRequirement(cuda, Version(floor_text), MINOR_VERSION_COMPATIBILITY, compat.source, floor_text) if compat and floor_text else None
    release = _toolkit_row(cuda if len(cuda.release) > 1 else Version(f"{major}.0"))  # a major alone: its X.0, the least any X.y needs
    if release is not None and floor is not None and Version(release.cuda).major != major:
        release = None  # a minor NVIDIA lists no release of falls back to an older one of its own major only
    if release is not None and getattr(release, os_name) is None and os_name == "linux":
        release = _older_minimum(release, os_name)  # a branch NVIDIA names but the data lacks: at least its predecessor's
    exact_text = getattr(release, os_name) if release is not None else None
    exact = DriverRequirement(cuda, Version(exact_text), TOOLKIT_RELEASE, release.source, exact_text) if release and exact_text else None
    if exact is None and floor is None:
        return None
    if floor is None:
        why = f"CUDA {name} predates minor-version compatibility (CUDA 11 and later), so each release needs its own driver"
        return DriverRule(cuda, use, exact, None, TOOLKIT_RELEASE, why)
    if exact is None:
        why = f"NVIDIA lists no driver of CUDA {name}'s own on {os_name.capitalize()}; any driver from the {major}.x floor runs it"
        return DriverRule(cuda, use, None, floor, MINOR_VERSION_COMPATIBILITY, why)
    if use == PTX_JIT:
        why = (
            f"minor-version compatibility does not cover PTX JIT: the GPU has only PTX from CUDA {name} to run, "
            "which the driver's JIT compiler must know (else cudaErrorUnsupportedPtxVersion)"
        )
        return DriverRule(cuda, use, exact, floor, TOOLKIT_RELEASE, why)
    if use == COMPILE:
        why = f"minor-version compatibility does not cover compiling with CUDA {name}'s nvcc (what it builds as PTX is JIT-compiled by the driver)"
        return DriverRule(cuda, use, exact, floor, TOOLKIT_RELEASE, why)
    if len(cuda.release) > 1 and exact.driver < floor.driver:
        why = f"CUDA {name}'s own minimum is below the {major}.x floor, and a driver runs what its own CUDA release builds"
        return DriverRule(cuda, use, exact, floor, TOOLKIT_RELEASE, why)
    why = (
        f"code built with CUDA {name} that has native code for the GPU runs on any driver of the {major}.x family from its floor (minor-version compatibility)"
    )
    return DriverRule(cuda, use, exact, floor, MINOR_VERSION_COMPATIBILITY, why)


def _older_minimum(release: records.ToolkitDriver, os_name: str) -> Optional[records.ToolkitDriver]:
    """For a release whose own minimum the data lacks (13.4 on Linux: NVIDIA gives a driver branch), the newest older
    release of its major that has one, restated as a lower bound: a toolkit never needs an older driver than the one
    before it (the schema checks that order)."""
    version = Version(release.cuda)
    older = [
        row
        for row in table("cuda_driver").toolkits
        if getattr(row, os_name) is not None and Version(row.cuda).major == version.major and Version(row.cuda) < version
    ]
    if not older:
        return None
    row = max(older, key=lambda row: Version(row.cuda))
    source = f"{row.source}; CUDA {release.cuda}'s own minimum is not in the data, and it needs at least CUDA {row.cuda}'s"
    return row._replace(cuda=release.cuda, release=release.release, source=source)


@_lookup
def driver_requirement(cuda: Version, os_name: str) -> Optional[DriverRequirement]:
    """What running code built with CUDA `cuda` needs from the driver (`driver_rule` with RUN: CUDA 11+ via
    minor-version compatibility)."""
    rule = driver_rule(cuda, os_name, RUN)
    return rule.need if rule is not None else None


@_lookup
def toolkit_releases(cuda: Version) -> tuple[str, ...]:
    """The toolkit releases NVIDIA's driver table lists that `cuda` names, newest first: "12" every 12.x, "12.9" every
    12.9 update, "12.9.0" that one."""
    wanted = cuda.release
    found = [row.cuda for row in table("cuda_driver").toolkits if Version(row.cuda).release[: len(wanted)] == wanted]
    if len(wanted) < 3 or found:
        return tuple(sorted(found, key=Version, reverse=True))
    row = toolkit_release(cuda)  # an update without a row of its own (10.1.243): its minor's row at or below it
    return (str(cuda),) if row is not None else ()


def toolkit_release(cuda: Version) -> Optional[records.ToolkitDriver]:
    """NVIDIA's row for one toolkit release: "12.4.1" is that update; "12.4" (no third part) is the GA of 12.4;
    an update NVIDIA gives no row of its own (10.1.243, 12.3.2) takes the newest row of its minor at or below it.
    None for a minor NVIDIA lists no driver for (12.7, 13.3+)."""
    minor = cuda.release[:2]
    rows = sorted((row for row in table("cuda_driver").toolkits if Version(row.cuda).release[:2] == minor), key=lambda row: Version(row.cuda))
    if not rows:
        return None
    if len(cuda.release) < 3:
        return rows[0]
    at_or_below = [row for row in rows if Version(row.cuda) <= cuda]
    return at_or_below[-1] if at_or_below else rows[0]


@_lookup
def _toolkit_row(cuda: Version) -> Optional[records.ToolkitDriver]:
    """The row of `cuda`'s release, or else of the newest release before its minor (what it needs at least)."""
    row = toolkit_release(cuda)
    if row is not None:
        return row
    older = [row for row in table("cuda_driver").toolkits if Version(row.cuda).release[:2] < cuda.release[:2]]
    return max(older, key=lambda row: Version(row.cuda)) if older else None


@_lookup
def minor_version_floor(major: int) -> Optional[records.MinorVersionCompatibility]:
    """The minor-version compatibility row of a CUDA major (11 and later), with its `upper` branch."""
    return next((row for row in table("cuda_driver").minor_version_compatibility if row.major == major), None)


@_lookup
def max_cuda_for_driver(driver: Version, os_name: str) -> Optional[tuple[Version, str]]:
    """The newest CUDA release a driver runs, for drivers too old to say so themselves: the newest toolkit
    whose listed minimum it meets; for a major whose releases NVIDIA lists no driver for on this OS (13.x
    on Windows), its minor-version floor, which makes it run at least that major's X.0."""
    data: records.CudaDriverTable = table("cuda_driver")
    found = [(Version(row.cuda), row.source) for row in data.toolkits if getattr(row, os_name) is not None and Version(getattr(row, os_name)) <= driver]
    listed = {Version(row.cuda).major for row in data.toolkits if getattr(row, os_name) is not None}
    for row in data.minor_version_compatibility:
        if row.major not in listed and Version(getattr(row, os_name)) <= driver:
            found.append((Version(f"{row.major}.0"), row.source))
    return max(found, key=lambda item: item[0]) if found else None


def cudart_name(cuda: Version, os_name: str, library: str = "cudart") -> Optional[str]:
    """The file a build against `cuda` loads for a CUDA library (`cudart64_110.dll`, `libcudart.so.12`, `cublas64_11.dll`)."""
    row: records.LibraryName
    for row in getattr(table("cuda_libraries"), library):
        key = Version(row.cuda)
        if (len(key.release) == 1 and key.release[0] == cuda.release[0]) or key.release[:2] == cuda.release[:2]:
            return row.windows if os_name == "windows" else row.linux
    return None


def cuda_of_runtime(name: str, os_name: str) -> Optional[str]:
    """The CUDA release a runtime file name belongs to ("10.2" for libcudart.so.10.2, "11" for cudart64_110.dll), or None."""
    for row in table("cuda_libraries").cudart:
        if (row.windows if os_name == "windows" else row.linux).lower() == name.lower():
            return row.cuda
    return None


@_lookup
def tensorflow_build(version: Version, os_name: str) -> Optional[records.TensorflowBuild]:
    """TensorFlow's tested build configuration for a release (matched on major.minor)."""
    for row in table("tensorflow").tested_builds:
        if row.os == os_name and Version(row.version).release[:2] == version.release[:2]:
            return row
    return None


def tensorflow_windows_gpu_last() -> tuple[Version, str]:
    row: records.WindowsGpuLast = table("tensorflow").windows_native_gpu_last
    return Version(row.version), row.source


@_lookup
def torch_release(version: Version) -> Optional[records.TorchRelease]:
    """The row of a PyTorch minor release (matched on major.minor)."""
    for row in table("torch").releases:
        if Version(row.version).release[:2] == version.release[:2]:
            return row
    return None


def torch_index_url(cuda: Version) -> str:
    return table("torch").index_url.template.format(tag=cuda_tag(cuda))


@_lookup
def gpu_compute_capability(name: str) -> Optional[str]:
    """The compute capability of a GPU by the name its driver reports: the row of that name, else the
    longest row name that starts it up to a word boundary ("NVIDIA H100 80GB HBM3" -> "NVIDIA H100",
    not "NVIDIA A10" for "NVIDIA A100"); "GeForce" is optional on both sides ("GTX 780"). None when no
    row fits, or when the best-fitting rows disagree ("GeForce GT 640": NVIDIA lists a GDDR5 3.5 and a
    GDDR3 2.1 part), because a wrong capability is worse than none."""
    wanted = _gpu_name_key(name)
    best: tuple[bool, int] = (False, -1)
    found: set[str] = set()
    for row in table("gpus").gpus:
        for key in _gpu_row_keys(row.name):
            exact = wanted == key
            if not exact and not (wanted.startswith(key) and not wanted[len(key)].isalnum()):
                continue
            score = (exact, len(key))
            if score > best:
                best, found = score, {row.cc}
            elif score == best:
                found.add(row.cc)
    return next(iter(found)) if len(found) == 1 else None


def _gpu_name_key(name: str) -> str:
    """A name as compared, also without "GeForce ", which NVML and NVIDIA's pages print and users often omit."""
    from cudnn_doctor.knowledge import schema

    key = schema._gpu_key(name)
    return key[len("geforce ") :] if key.startswith("geforce ") else key


def _gpu_row_keys(name: str) -> tuple[str, ...]:
    """A row's name as compared, and without a trailing note in parentheses ("NVIDIA GB10 (DGX Spark)");
    a name listing models with "/" stands for each ("Tesla C2050/C2070": "c2050" and "c2070")."""
    key = _gpu_name_key(name)
    bare = key.split(" (", 1)[0] if key.endswith(")") else key
    keys = [key, bare] if bare != key else [key]
    if "/" in bare:
        first, *others = bare.split("/")
        stem = first.rsplit(" ", 1)[0] + " " if " " in first else ""
        keys += [first] + [stem + other for other in others]
    return tuple(keys)


@_lookup
def gpu_peak(name: str) -> Optional[records.GpuPeak]:
    """The datasheet peak rates of a GPU by the name NVML reports ("NVIDIA H100 80GB HBM3", "Tesla T4"),
    else by the table's model name ("H100 SXM5"); compared like `gpu_compute_capability` (case, spaces and
    the "NVIDIA "/"Tesla "/"GeForce " brand do not matter), but only whole names: "NVIDIA GeForce RTX 4090 D"
    is not an RTX 4090. None when no row or several rows fit, because a wrong peak makes a wrong verdict."""
    from cudnn_doctor.knowledge import schema

    wanted = schema._peak_name_key(name)
    rows = table("gpus").peaks
    for keys_of in (lambda row: row.names, lambda row: (row.model,)):
        found = [row for row in rows if wanted in {schema._peak_name_key(key) for key in keys_of(row)}]
        if found:
            return found[0] if len(found) == 1 else None
    return None


@_lookup
def verify_threshold(check: str) -> Optional[records.VerifyThreshold]:
    """The warn and fail thresholds of one `verify` check ("matmul-peak", "memory-bandwidth", ...)."""
    return next((row for row in table("gpus").verify_thresholds if row.check == check), None)


@_lookup
def cuda_architectures(cuda: Version) -> Optional[records.CudaArchitectures]:
    """The row of the compute capabilities a CUDA toolkit minor release builds for (None: no row for that minor)."""
    return next((row for row in table("gpus").cuda_architectures if Version(row.cuda).release[:2] == cuda.release[:2]), None)


@_lookup
def cuda_supports_compute_capability(cuda: Version, cc: str) -> Optional[bool]:
    """Whether CUDA `cuda` can build native code (sm_XY) for compute capability `cc`: True or False from a
    complete row, True from a lower-bound row that lists it; False too when `cc` is newer than every capability
    a lower-bound row lists and first appears in a later release's row (sm_80 first in 11.0: CUDA 10.2 cannot),
    and for a release older than every row when `cc` is newer than all the oldest row lists (CUDA 9.2: no sm_80).
    None when the data cannot tell. Code built as PTX may still JIT-compile for newer GPUs."""
    wanted = Version(cc)
    row = cuda_architectures(cuda)
    if row is None:
        # Older than every row: the oldest row's capabilities bound what an older compiler could know.
        oldest = min(table("gpus").cuda_architectures, key=lambda r: Version(r.cuda))
        if cuda.release[:2] < Version(oldest.cuda).release[:2]:
            return _first_listed_later(cuda, wanted, oldest)
        return None
    if any(Version(value) == wanted for value in row.cc):
        return True
    if row.complete:
        return False
    return _first_listed_later(cuda, wanted, row)


def _first_listed_later(cuda: Version, wanted: Version, bound: records.CudaArchitectures) -> Optional[bool]:
    """False when `wanted` is newer than all `bound` lists and a release after `cuda` is the first to list it."""
    if wanted > max(Version(value) for value in bound.cc):
        first = _first_cuda_listing(str(wanted))
        if first is not None and first.release[:2] > cuda.release[:2]:
            return False
    return None


@_lookup
def _first_cuda_listing(cc: str) -> Optional[Version]:
    """The oldest CUDA release whose architecture row lists `cc`."""
    wanted = Version(cc)
    return min((Version(r.cuda) for r in table("gpus").cuda_architectures if any(Version(v) == wanted for v in r.cc)), default=None)


BINARY_COMPATIBILITY_SOURCE = (
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility "
    "(a cubin generated for compute capability X.y runs only on devices of compute capability X.z, z >= y)"
)


@_lookup
def _known_compute_capabilities() -> tuple[Version, ...]:
    """Every capability an architecture row lists, newest first (computed once per table load)."""
    values = {Version(value) for row in table("gpus").cuda_architectures for value in row.cc}
    return tuple(sorted(values, reverse=True))


@_lookup
def cuda_runs_on_compute_capability(cuda: Version, cc: str) -> Optional[bool]:
    """Whether some native code CUDA `cuda` builds runs on a GPU of `cc`: its own sm_XY, or an older minor of
    the same major (an RTX 4090, 8.9, runs sm_86 code from CUDA 11.7). None when the data cannot tell."""
    wanted = Version(cc)
    same_major = [v for v in _known_compute_capabilities() if v.major == wanted.major and v < wanted]
    answers = [cuda_supports_compute_capability(cuda, cc)]
    answers += [cuda_supports_compute_capability(cuda, f"{v.major}.{v.minor}") for v in same_major]
    if True in answers:
        return True
    return False if all(answer is False for answer in answers) else None


@_lookup
def cuda_min_compute_capability(cuda_major: int) -> Optional[tuple[Version, str]]:
    """The oldest compute capability every release of a CUDA major builds for, from its complete rows (None without one)."""
    rows = [row for row in table("gpus").cuda_architectures if row.complete and Version(row.cuda).major == cuda_major]
    if not rows:
        return None
    floors = [(min(Version(value) for value in row.cc), row.source) for row in rows]
    return max(floors, key=lambda floor: floor[0])


def frameworks() -> tuple[records.Framework, ...]:
    return table("frameworks").frameworks


def framework(name: str) -> records.Framework:
    return next(f for f in frameworks() if f.name == name)


@_lookup
def onnxruntime_build(version: Version, feed: str = "pypi") -> Optional[records.OnnxruntimeBuild]:
    """The onnxruntime-gpu build of a release on one feed, PyPI unless named (the first row whose range holds it)."""
    for row in table("frameworks").onnxruntime_builds:
        if row.feed == feed and version in row.versions:
            return row
    return None


@_lookup
def onnxruntime_builds(version: Version) -> tuple[records.OnnxruntimeBuild, ...]:
    """Every build of a release, one per feed (PyPI first when it has one), so a planner can say where each comes from."""
    feeds = dict.fromkeys(row.feed for row in table("frameworks").onnxruntime_builds)
    found = (onnxruntime_build(version, feed) for feed in sorted(feeds, key=lambda f: f != "pypi"))
    return tuple(row for row in found if row is not None)


@_lookup
def paddle_build(tag: str, os_name: str, version: Optional[Version] = None) -> Optional[records.PaddleBuild]:
    """The row of a paddlepaddle-gpu build (`post112`, `pypi`, `cu126`) on one OS for release `version`
    (the same tag was paired with different cuDNN releases over time); without a version, the newest era's row."""
    rows = [row for row in table("frameworks").paddle_builds if row.tag == tag and row.os == os_name]
    if version is None:
        return max(rows, key=_era, default=None)
    return next((row for row in rows if row.versions is None or row.versions.contains(version, prereleases=True)), None)


def _era(row: records.PaddleBuild) -> Version:
    """The oldest release a row's range admits, to rank rows by era."""
    floors = [Version(spec.version) for spec in row.versions or () if spec.operator in (">=", "==", "~=")]
    return max(floors) if floors else Version("0")


def ineffective_variables() -> dict[str, records.IneffectiveVariable]:
    return {row.name: row for row in table("environment").ineffective}


def known_variables() -> frozenset[str]:
    return frozenset(table("environment").known.names)


def reviewed_dates() -> dict[str, str]:
    from cudnn_doctor.knowledge import schema

    return {name: table(name).reviewed for name in schema.TABLES}


def loads_system_cuda(framework_name: str, packages: Any, version: Optional[Version] = None, os_name: Optional[str] = None) -> bool:
    """Whether a framework, given the distributions installed beside it (and, when known, its release
    and OS: Paddle 3.x wheels on Linux bring CUDA from pip), loads CUDA from the system."""
    entry = framework(framework_name)
    if entry.loads_cuda != "system":
        return False
    if version is not None and os_name is not None and pip_brings_cuda(framework_name, version, os_name):
        return False
    bundled = {canonicalize_name(d) for d in entry.bundled_when}
    return not (bundled & set(packages))


def legacy_cudnn_name(name: str, os_name: str) -> Optional[records.LegacyCudnnName]:
    """The row of a cuDNN 1-3 library name (cudnn64_70.dll, libcudnn.so.7.0), or None."""
    return next((row for row in table("cudnn").legacy_names if row.os == os_name and row.name.lower() == name.lower()), None)


def cudnn_release(major: int) -> Optional[records.CudnnRelease]:
    return next((row for row in table("cudnn").releases if row.major == major), None)


def cudnn_file_name(part: str, major: int, os_name: str) -> str:
    """cudnn64_8.dll / cudnn_ops_infer64_8.dll on Windows, libcudnn.so.8 / libcudnn_ops_infer.so.8 on Linux."""
    if os_name == "windows":
        return f"cudnn_{part}64_{major}.dll" if part else f"cudnn64_{major}.dll"
    return f"libcudnn_{part}.so.{major}" if part else f"libcudnn.so.{major}"


def zlibwapi_required(cudnn_version: Version) -> bool:
    return cudnn_version in table("cudnn").zlibwapi.versions


def cudnn_support_rows() -> tuple[records.CudnnSupport, ...]:
    return table("cudnn").support


def _serves(row: records.CudnnSupport, cuda: Version) -> bool:
    """The build serves that toolkit release (X.Y), or for a bare major ("12") is a build of that major."""
    if len(cuda.release) == 1:
        return row.cuda.split(".")[0] == str(cuda.major)
    return row.toolkits.contains(cuda, prereleases=True)


@_lookup
def cudnn_releases_for(cuda: Version, os_name: str) -> tuple[tuple[str, records.CudnnSupport], ...]:
    """Every released full cuDNN version whose build serves CUDA `cuda` (X.Y, or a bare major) on `os_name`
    ("wsl" is Linux), newest first, each with the first support row that says so."""
    os_name = "linux" if os_name == "wsl" else os_name
    found: dict[str, records.CudnnSupport] = {}
    for row in table("cudnn").support:
        if os_name in row.os and _serves(row, cuda):
            for full in row.full_versions:
                found.setdefault(full, row)
    return tuple(sorted(found.items(), key=lambda item: _parsed(item[0]), reverse=True))


def _first_release(row: records.CudnnSupport) -> Version:
    return min(Version(s.version) for s in row.versions if s.operator in (">=", "==", "~="))


@_lookup
def cudnn_min_compute_capability(row: records.CudnnSupport) -> Optional[tuple[str, str]]:
    """The lowest compute capability a build runs on, with the row that says so: its own, else the highest floor of
    an older release's build for the same CUDA major (NVIDIA raises a floor, never lowers it: Kepler went at 8.8)."""
    if row.cc_min is not None:
        return row.cc_min, row.source
    major, first = Version(row.cuda).major, _first_release(row)
    older = [(r.cc_min, r.source) for r in table("cudnn").support if r.cc_min is not None and Version(r.cuda).major == major and _first_release(r) < first]
    return max(older, key=lambda floor: Version(floor[0]), default=None)


@_lookup
def cudnn_series_known(wanted: str) -> bool:
    """Some release of cuDNN `wanted` ("8.1", "7") is in the support matrix: for an older one the data says nothing."""
    prefix = Version(wanted).release
    return any(Version(full).release[: len(prefix)] == prefix for row in table("cudnn").support for full in row.full_versions)


class ArchiveName(Record):
    """What NVIDIA's file name of a cuDNN archive says."""

    version: str  # the full cuDNN version
    cuda_major: int
    cuda: Optional[str]  # major.minor where the name has one
    os: str
    arch: str


_PLACEHOLDERS = {
    "version": r"(?P<version>\d+(?:\.\d+)+)",
    "cuda": r"(?P<cuda>\d+\.\d+)",
    "cuda_major": r"(?P<cuda_major>\d+)",
    "arch": r"(?P<arch>[a-z0-9_]+)",
}
_EXTENSION = regex(r"\.(?:tar\.xz|tar\.gz|tgz|zip)$")


@_lookup
def _archive_patterns() -> tuple[tuple[re.Pattern[str], records.CudnnArchive], ...]:
    """Each `archives` pattern as a regex that finds the name in a path, with or without its extension and
    with a browser's " (1)" before it."""
    compiled = []
    for row in table("cudnn").archives:
        extension = _EXTENSION.search(row.pattern)
        body = row.pattern[: extension.start()] if extension else row.pattern
        parts = re.split(r"{(\w+)}", body)
        name_regex = "".join(_PLACEHOLDERS[part] if i % 2 else re.escape(part) for i, part in enumerate(parts))
        tail = rf"(?: ?\(\d+\))?(?:{re.escape(extension.group())})?$" if extension else "$"
        compiled.append((re.compile(rf"(?:^|[\\/]){name_regex}{tail}", re.IGNORECASE), row))
    return tuple(compiled)


def parse_cudnn_archive_name(name: str) -> Optional[ArchiveName]:
    """The cuDNN version, CUDA and platform NVIDIA's archive name (or its top folder's name) says, None for another name."""
    for pattern, row in _archive_patterns():
        found = pattern.search(name)
        if found is None:
            continue
        fields = found.groupdict()
        cuda = fields.get("cuda")
        major = int(fields.get("cuda_major") or Version(cuda or "0").major)
        return ArchiveName(fields["version"], major, cuda, row.os, (fields.get("arch") or "x86_64").lower())
    return None


@_lookup
def cudnn_archive_name(full_version: str, cuda: Version, os_name: str, arch: str = "x86_64") -> Optional[str]:
    """NVIDIA's file name of cuDNN `full_version` built for `cuda` ("cudnn-11.2-windows-x64-v8.1.1.33.zip"), None
    when the data has no such build."""
    os_name = "linux" if os_name == "wsl" else os_name
    era = next((row for row in table("cudnn").archives if row.os == os_name and row.versions.contains(full_version, prereleases=True)), None)
    if era is None:
        return None
    build = next((row for row in table("cudnn").support if full_version in row.full_versions and os_name in row.os and _serves(row, cuda)), None)
    if build is None and "{cuda}" in era.pattern:
        return None
    named = build.cuda if build is not None else str(cuda.major)
    if "{cuda}" in era.pattern and "." not in named:
        return None
    return era.pattern.format(version=full_version, cuda=named, cuda_major=Version(named).major, arch=arch)


def library_provider(name: str) -> Optional[records.LibraryProvider]:
    """What provides a library file name: its row, with `{major}` in the provider and fix texts filled in."""
    import re

    for row in table("libraries").providers:
        match = re.match(row.pattern, name)
        if match:
            groups = match.groupdict()
            major = groups.get("major") or str(cuda_major_of_dll_number(groups.get("digits") or "") or "")
            return row._replace(provider=row.provider.replace("{major}", major), fix=row.fix.replace("{major}", major))
    return None


def cuda_wheels() -> tuple[records.CudaWheel, ...]:
    return table("cuda_wheels").wheels


@_lookup
def wheels_shipping(name: str, os_name: str) -> tuple[records.CudaWheel, ...]:
    """The nvidia-* wheel rows whose files include the library `name`, one per CUDA major that ships it: every
    environment asks this of the same few names."""
    import re

    flags = re.IGNORECASE if os_name == "windows" else 0
    return tuple(row for row in cuda_wheels() if re.match(row.windows if os_name == "windows" else row.linux, name, flags))


def wheel_providing(name: str, os_name: str, cuda_major: Optional[int] = None) -> Optional[records.CudaWheel]:
    """The nvidia-* wheel that ships a library file name (`libcublasLt.so.13`, `nvrtc64_120_0.dll`);
    for names every CUDA major shares (`libcudnn.so.9`, `curand64_10.dll`) the row of `cuda_major`
    when given (None when no wheel exists for that CUDA: CUDA 10 had none), else the newest."""
    rows = wheels_shipping(name, os_name)
    if cuda_major is not None:
        rows = tuple(row for row in rows if row.cuda == cuda_major)
    return max(rows, key=lambda row: row.cuda) if rows else None


def wheel_folder(row: records.CudaWheel, os_name: str) -> tuple[str, ...]:
    """The in-wheel folder of a row's files, as parts below site-packages."""
    return tuple((row.windows_folder if os_name == "windows" else row.linux_folder).split("/"))


@_lookup
def wheel_reach(framework_name: str, os_name: str, version: Optional[Version]) -> Optional[records.WheelReach]:
    """How a framework release reaches installed nvidia-* wheels on an OS (the first row whose range holds it)."""
    for row in table("cuda_wheels").reach:
        if row.framework == framework_name and row.os == os_name and (version is None or version in row.versions):
            return row
    return None


def wheel_placeholders() -> dict[str, str]:
    """Deprecated PyPI names that fail to install → the name to install instead."""
    return {canonicalize_name(row.name): row.instead for row in table("cuda_wheels").placeholders}


@_lookup
def pip_brings_cuda(framework_name: str, version: Version, os_name: str) -> Optional[records.PipCuda]:
    """The row saying a release's wheels on `os_name` bring CUDA and cuDNN from pip, or None."""
    return next(
        (
            row
            for row in table("frameworks").pip_cuda
            if row.framework == framework_name and row.os == os_name and row.versions.contains(version, prereleases=True)
        ),
        None,
    )


@_lookup
def jax_builds(version: Version) -> tuple[records.JaxBuild, ...]:
    """What each pip extra of a JAX release installs (one row per extra)."""
    return tuple(row for row in table("frameworks").jax_builds if row.versions.contains(version, prereleases=True))


@_lookup
def jax_build(version: Version, extra: str) -> Optional[records.JaxBuild]:
    """One extra of a JAX release (`cuda12`, `cuda12-local`; `_` and `-` alike, as pip treats them)."""
    wanted = canonicalize_name(extra)
    return next((row for row in jax_builds(version) if canonicalize_name(row.extra) == wanted), None)


@_lookup
def tensorflow_and_cuda(version: Version) -> Optional[records.TensorflowAndCuda]:
    """The nvidia-* wheels `tensorflow[and-cuda]` installs for a release (None before 2.14, or not yet read)."""
    return next((row for row in table("tensorflow").and_cuda if version in row.versions), None)


# --- release pins for the planner: exact versions that exist, packages and conda lines per era ---


@_lookup
def framework_releases(distribution: str) -> tuple[str, ...]:
    """The releases of a distribution a plan may pin (`onnxruntime-gpu`, `paddlepaddle-gpu`, `jax`), newest first: those
    the package index lists (the recorded `published` source) and those a hand-kept row adds from another index;
    empty when neither lists any."""
    wanted = canonicalize_name(distribution)
    row = next((row for row in table("frameworks").releases if canonicalize_name(row.distribution) == wanted), None)
    found = {*(r.version for r in published(distribution)), *(row.versions if row else ())}
    return tuple(sorted(found, key=Version, reverse=True))


@_lookup
def published(distribution: str) -> tuple[records.PublishedRelease, ...]:
    """The releases of `distribution` the package index listed when its source was recorded, newest first; () when the
    distribution is not recorded."""
    wanted = canonicalize_name(distribution)
    return tuple(row for row in table("published").releases if canonicalize_name(row.distribution) == wanted)


def published_extra(distribution: str, version: str, extra: str) -> Optional[records.PublishedExtra]:
    """What `distribution[extra]==version` requires, per that release's METADATA; None when the release does not provide
    the extra (or its extras were not recorded)."""
    wanted = (canonicalize_name(distribution), canonicalize_name(extra))
    return next(
        (row for row in _extras_of(version) if (canonicalize_name(row.distribution), canonicalize_name(row.extra)) == wanted),
        None,
    )


def extras_recorded(distribution: str, version: str) -> bool:
    """Whether the extras of that release were read (its METADATA is in the source)."""
    wanted = canonicalize_name(distribution)
    return any(canonicalize_name(row.distribution) == wanted for row in _extras_of(version))


@_lookup
def _extras_of(version: str) -> tuple[records.PublishedExtra, ...]:
    return tuple(row for row in table("published").extras if row.version == version)


@_lookup
def tensorflow_package(version: Version) -> Optional[records.TensorflowPackage]:
    """The pip package holding TensorFlow's GPU build for a release (`tensorflow-gpu` before 2.1)."""
    return next((row for row in table("tensorflow").packages if row.versions.contains(version, prereleases=True)), None)


def tensorflow_windows_conda(version: Version) -> Optional[records.TensorflowConda]:
    """The native-Windows guide's conda line for CUDA and cuDNN, for the releases it applies to."""
    row: Optional[records.TensorflowConda] = table("tensorflow").windows_conda
    return row if row is not None and row.versions.contains(version, prereleases=True) else None
