"""Load a machine-fixture/1 file and validate it strictly.

An unknown key, a wrong type or a missing required key is an `InputError` naming the exact
place ("files['C:\\x.dll'].size: expected an integer"), with a "did you mean" for typos, so
that a mistyped fixture can never pass silently. The schema below is the spec's tables
written as data.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Callable, Sequence, Union

import cudnn_doctor.system.untrusted as untrusted
from cudnn_doctor.errors import InputError
from cudnn_doctor.paths import PathRules

SCHEMA_ID = "machine-fixture/1"


def command_key(paths: PathRules, argv: Sequence[str]) -> str:
    """How a fixture's `commands` table names a command: the program's base name (no `.exe` on Windows), then its
    arguments."""
    program = paths.basename(argv[0])
    if paths.windows and program.lower().endswith(".exe"):
        program = program[:-4]
    return " ".join([program, *argv[1:]])


Spec = Union[type, tuple, dict, list, Callable[[Any, str], None]]

_STR_LIST = [str]
_STR_MAP = ("map", str)
_COUNT = ("count",)  # an integer >= 0: a size or a version number; -5 bytes is no file

LOAD = {"ok": bool, "error": str, "cudnn_version": _COUNT, "cudart_version": _COUNT}
FILE = {
    "size": _COUNT,
    "text": str,
    "imports": _STR_LIST,
    "loads": _STR_LIST,
    "soname": str,
    "rpath": _STR_LIST,
    "dt_rpath": _STR_LIST,
    "version": str,
    "machine": str,
    "link": str,
    "readable": bool,
    "exports": _STR_LIST,
    "load": LOAD,
    "source": str,
    # Beyond the spec (backward compatible, written by `snapshot`): what a live read of the file said, so a replay
    # takes the same branch. `loads_complete: false`: `loads` came from a string scan, so knowledge adds to it and a
    # missing unversioned `.so` is optional (default: true when `loads` is present). `binary_error`: no PE/ELF file.
    "loads_complete": bool,
    "binary_error": str,
}
COMMAND = {"returncode": int, "stdout": str, "stderr": str, "timeout": bool}
GPU = {"name": str, "compute_capability": str, "memory_total_mib": _COUNT, "uuid": str}
NVML = {"driver_version": str, "cuda_driver_version": _COUNT, "gpus": [GPU]}
FRAMEWORK = (
    "open",
    {
        "version": str,
        "cuda": str,
        "cudnn": (int, str),
        "cuda_available": bool,
        "device_count": int,
        "arch_list": _STR_LIST,
        "error": str,
        "import_error": str,
        "warning": str,
        "log": str,
        "built_with_cuda": bool,
        "build_info": ("map", (str, bool, int)),
        "gpus": _STR_LIST,
        "providers": _STR_LIST,
        "compiled_with_cuda": bool,
        "cudnn_version": (str, int),
        "gpu_count": int,
        "devices": _STR_LIST,
    },
)
MAPPED = {"path": str, "error": str}
PYTHON = {
    "executable": str,
    "version": str,
    "current": bool,
    "kind": ("enum", "conda", "venv", "system", "embedded"),
    "packages": _STR_MAP,
    "frameworks": ("map", FRAMEWORK),
    # Beyond the spec (written by `snapshot`): what loading each name for real in this interpreter mapped (`path`) or
    # the error.
    "mapped": ("map", MAPPED),
}
EXPECT = {"findings": _STR_LIST, "absent": _STR_LIST, "allow": _STR_LIST}
TOP = {
    "schema": str,
    "name": str,
    "description": str,
    "os": ("enum", "windows", "linux"),
    "arch": ("enum", "x86_64", "aarch64"),
    "wsl": bool,
    "env": _STR_MAP,
    "persistent_env": {"user": _STR_MAP, "system": _STR_MAP},
    "files": ("map", FILE),
    "commands": ("map", COMMAND),
    "nvml": NVML,
    "pythons": [PYTHON],
    "expect": EXPECT,
}
REQUIRED = {
    "": ("schema", "name", "os", "env", "files"),
    "python": ("executable", "version"),
}

_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", float: "a number"}


def _type_name(spec: Any) -> str:
    if isinstance(spec, tuple):
        return " or ".join(_type_name(s) for s in spec)
    return _TYPE_NAMES.get(spec, getattr(spec, "__name__", str(spec)))


def _show(value: Any) -> str:
    """A value in a message: its repr (one line, whatever it holds), cut short."""
    shown = repr(value)
    return shown if len(shown) <= 120 else shown[:117] + "..."


def _fail(where: str, message: str) -> None:
    raise InputError(f"{where or 'top level'}: {message}")


def _check(value: Any, spec: Any, where: str, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if isinstance(spec, type):
        ok = isinstance(value, spec) and not (spec is int and isinstance(value, bool))
        if not ok:
            _fail(where, f"expected {_type_name(spec)}, got {type(value).__name__} {_show(value)}")
    elif spec is _COUNT:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            _fail(where, f"expected an integer of 0 or more, got {type(value).__name__} {_show(value)}")
    elif isinstance(spec, tuple) and spec and spec[0] == "enum":
        if value not in spec[1:]:
            _fail(where, f"expected one of {', '.join(spec[1:])}, got {_show(value)}")
    elif isinstance(spec, tuple) and spec and spec[0] == "map":
        if not isinstance(value, dict):
            _fail(where, f"expected a mapping, got {type(value).__name__}")
        for key, item in value.items():
            _check(key, str, f"{where} key {key!r}")
            _check(item, spec[1], f"{where}[{key!r}]", nullable=spec[1] is not str)
    elif isinstance(spec, tuple) and spec and spec[0] == "open":
        _check_object(value, spec[1], where, open_keys=True, nullable_values=True)
    elif isinstance(spec, tuple):
        if not any(isinstance(value, s) and not (s is int and isinstance(value, bool)) for s in spec):
            _fail(where, f"expected {_type_name(spec)}, got {type(value).__name__} {_show(value)}")
    elif isinstance(spec, list):
        if not isinstance(value, list):
            _fail(where, f"expected a list, got {type(value).__name__}")
        for index, item in enumerate(value):
            _check(item, spec[0], f"{where}[{index}]")
    elif isinstance(spec, dict):
        _check_object(value, spec, where)


def _check_object(value: Any, spec: dict, where: str, open_keys: bool = False, nullable_values: bool = False) -> None:
    if value is None:
        value = {}
    if not isinstance(value, dict):
        _fail(where, f"expected a mapping, got {type(value).__name__}")
    for key, item in value.items():
        if key not in spec:
            if open_keys:
                continue
            hint = difflib.get_close_matches(str(key), list(spec), n=1)
            suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
            _fail(where, f"unknown key {key!r}{suggestion}")
        _check(item, spec[key], f"{where}.{key}" if where else key, nullable=nullable_values)
    required = REQUIRED[""] if spec is TOP else REQUIRED["python"] if spec is PYTHON else ()
    for key in required:
        if key not in value:
            _fail(where, f"missing required key {key!r}")


def validate(document: Any) -> dict[str, Any]:
    """Check a parsed fixture against the machine-fixture/1 schema and return it."""
    if not isinstance(document, dict):
        raise InputError("a machine fixture must be a mapping at the top level")
    _check_object(document, TOP, "")
    if document["schema"] != SCHEMA_ID:
        raise InputError(f"schema: expected {SCHEMA_ID!r}, got {_show(document['schema'])}")
    currents = [p for p in document.get("pythons") or [] if p.get("current")]
    if len(currents) > 1:
        raise InputError("pythons: more than one interpreter has current: true")
    return document


MAX_FIXTURE_BYTES = untrusted.MAX_BYTES


def load_fixture(path: Path) -> dict[str, Any]:
    """Read, parse and validate a fixture file through the hardened reader (`cudnn_doctor.system.untrusted`: a regular
    file
    of at most 64 MiB, aliases, nesting, integers bounded, keys strings given once); every failure is a one-line
    `InputError`."""
    document = untrusted.parse(
        untrusted.read_file(path, "fixture file", MAX_FIXTURE_BYTES),
        path.name,
        json_text=path.suffix.lower() == ".json",
    )
    try:
        return validate(document)
    except InputError as error:
        raise InputError(f"{path.name}: {error}") from None
    except RecursionError:
        raise InputError(f"{path.name} is nested too deeply to read") from None
