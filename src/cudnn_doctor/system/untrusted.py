"""The one reader of files a user hands the doctor: `--fixture`, `--kb`, `fleet --from` snapshots, state files.

Such a file may be anything: a FIFO that blocks `open()` for ever, `/dev/zero` that never ends, a
64 GiB log, a YAML "billion laughs" nine bytes of aliases deep, a list nested a million deep, an
integer of a million digits, a key given twice, a key that is a list. Each is refused here, in one
line (an `InputError`, exit 2), before it can cost more than a bounded read:

- only a regular file is opened (O_NONBLOCK, then fstat of what was opened, not of the path), and
  never read past `limit` bytes (its size is judged before a byte is read);
- YAML is PyYAML's safe loader with limits: the events are counted before anything is built (aliases
  may add at most MAX_ALIAS_NODES values when expanded, nesting at most MAX_DEPTH), a mapping key
  must be a string given once, an integer at most MAX_INT_DIGITS characters and below 2**64;
- JSON the same: a repeated key, a deep nesting or a huge integer is refused.

Every other layer that reads such a file calls `load` (or `read_file` and `parse`); none parses on its own.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any, BinaryIO, Iterable, Optional, Union

from cudnn_doctor.errors import InputError

MAX_BYTES = 64 << 20
# values that aliases may add when expanded (`yaml.safe_dump` writes a shared list as an alias)
MAX_ALIAS_NODES = 100_000
MAX_DEPTH = 64  # nested lists and mappings; a fixture needs 6, the knowledge 4
MAX_INT_DIGITS = 40  # characters of one integer as written (sign, base prefix, `_` included)
MAX_INT = 1 << 64  # |value| of any integer: a size, a count, a version number

_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


class NotRegularFile(OSError):
    """The path is a folder, FIFO, socket or device: nothing the doctor reads."""


def open_regular(path: str) -> BinaryIO:
    """The file at `path` opened for reading; NotRegularFile (an OSError) for anything but a regular file.

    Opened without blocking (a FIFO's writer never comes), and judged by what was opened, not by
    what the path looked like a moment earlier."""
    fd = os.open(path, _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", path)
        if getattr(os, "O_NONBLOCK", 0) and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int) -> bytes:
    """At most `limit` bytes from the start of a regular file."""
    with open_regular(path) as handle:
        return handle.read(limit)


def _size_text(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"


def read_file(path: Union[str, os.PathLike[str]], what: str = "file", limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; anything else is one-line InputError
    that names `what` ("fixture file", "knowledge file") and the path."""
    shown = os.fspath(path)
    try:
        with open_regular(shown) as handle:
            if os.fstat(handle.fileno()).st_size > limit:  # judged before a byte is read: a 100 GB file costs nothing
                raise InputError(f"cannot read {what} {shown}: larger than {_size_text(limit)}")
            data = handle.read(limit + 1)  # a file whose size lies (/proc) is still cut at the limit
    except FileNotFoundError:
        raise InputError(f"no such {what}: {shown}") from None
    except NotRegularFile:
        raise InputError(f"cannot read {what} {shown}: not a regular file (a folder, FIFO or device)") from None
    except (OSError, ValueError) as error:  # ValueError: a NUL byte in the name
        reason = getattr(error, "strerror", None) or str(error)
        raise InputError(f"cannot read {what} {shown}: {reason}") from None
    if len(data) > limit:
        raise InputError(f"cannot read {what} {shown}: larger than {_size_text(limit)}")
    return data


def load(
    path: Union[str, os.PathLike[str]], what: str = "file", name: Optional[str] = None, limit: int = MAX_BYTES
) -> Any:
    """The document in the file at `path`: JSON for a `.json` name, YAML (a superset) for any other.
    `name` is how parse errors call the file (default: its path as given)."""
    shown = os.fspath(path)
    return parse(read_file(shown, what, limit), name or shown, json_text=shown.lower().endswith(".json"))


def parse(data: Union[bytes, str], name: str, json_text: bool = False) -> Any:
    """The document in `data` (UTF-8 bytes or text) as JSON or YAML, with every limit above; each failure is one
    InputError line that starts with `name`."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(f"{name}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    else:
        text = data
    kind = "JSON" if json_text else "YAML"
    try:
        if json_text:
            document = _load_json(text)
        else:
            document = _load_yaml(text)
    except _Refused as refused:
        raise InputError(f"{name}: {refused}") from None
    except InputError:
        raise
    except RecursionError:
        raise InputError(f"{name}: nested deeper than {MAX_DEPTH} levels") from None
    except MemoryError:
        raise InputError(f"{name}: too large to read into memory") from None
    except Exception as error:  # yaml.YAMLError, json.JSONDecodeError, ValueError of a bad date: malformed input
        words = " ".join(str(error).split()) or type(error).__name__
        raise InputError(f"{name}: not valid {kind}: {words[:300]}") from None
    return document


class _Refused(ValueError):
    """A limit of this reader, said without the file's name (parse adds it)."""


def _int_text(text: str, line: Optional[int] = None) -> None:
    if len(text) > MAX_INT_DIGITS:
        where = f"line {line}: " if line is not None else ""
        raise _Refused(f"{where}the integer {text[:20]}... has more than {MAX_INT_DIGITS} digits")


def _int_value(value: int, text: str, line: Optional[int] = None) -> int:
    if abs(value) >= MAX_INT:
        where = f"line {line}: " if line is not None else ""
        raise _Refused(f"{where}the integer {text[:30]} does not fit in 64 bits")
    return value


# JSON ------------------------------------------------------------------------------------------


def _load_json(text: str) -> Any:
    import json

    def bounded_int(digits: str) -> int:
        _int_text(digits)
        return _int_value(int(digits), digits)

    def once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        mapping: dict[str, Any] = {}
        for key, value in pairs:
            if key in mapping:
                raise _Refused(f"key {key!r} given twice in one object")
            mapping[key] = value
        return mapping

    document = json.loads(text, object_pairs_hook=once, parse_int=bounded_int)
    _check_depth(document)
    return document


def _check_depth(document: Any) -> None:
    """Refuse nesting deeper than MAX_DEPTH, without recursion (json.loads itself stops near 1000 levels)."""
    todo: list[tuple[Any, int]] = [(document, 0)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
            todo.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))


# YAML ------------------------------------------------------------------------------------------


def _load_yaml(text: str) -> Any:
    """Safe YAML within the limits. libyaml reads fast; the pure-Python reader reads what libyaml refuses, such
    as the `\\udcXX` escapes a snapshot writes for undecodable bytes, and words its errors better."""
    import yaml

    fast, slow = _loaders()
    if fast is not None:
        try:
            _check_events(yaml.parse(text, Loader=fast))
            return yaml.load(text, Loader=fast)  # a SafeLoader subclass
        except yaml.YAMLError:
            pass
    _check_events(yaml.parse(text, Loader=slow))
    return yaml.load(text, Loader=slow)  # a SafeLoader subclass


_LOADERS: Optional[tuple[Any, Any]] = None


def _loaders() -> tuple[Any, Any]:
    """The strict loaders (libyaml's, or None without it; the pure-Python one), made once."""
    global _LOADERS
    if _LOADERS is None:
        import yaml

        class Limits:
            """A mapping's keys are strings, each given once; an integer is bounded. The constructor is Python in both
            loaders."""

            def construct_mapping(self, node: Any, deep: bool = False) -> Any:
                if isinstance(node, yaml.MappingNode):
                    seen: set[str] = set()
                    for key_node, _ in node.value:
                        if key_node.tag == "tag:yaml.org,2002:merge":
                            continue  # `<<: *base` then a key of base again is an override, not a repeat
                        key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
                        _string_key(key, key_node)
                        if key in seen:
                            raise _Refused(
                                f"line {key_node.start_mark.line + 1}: key {key!r} given twice in one mapping"
                            )
                        seen.add(key)
                mapping = super().construct_mapping(node, deep=deep)  # type: ignore[misc]
                for key in mapping:  # keys a merge (`<<`) brought in
                    _string_key(key, node)
                return mapping

            def construct_yaml_int(self, node: Any) -> int:
                line = node.start_mark.line + 1
                _int_text(str(node.value), line)
                return _int_value(super().construct_yaml_int(node), str(node.value), line)  # type: ignore[misc]

        def strict(base: Any) -> Any:
            loader: Any = type(f"Strict{base.__name__}", (Limits, base), {})  # a yaml loader class, made here
            loader.add_constructor("tag:yaml.org,2002:int", Limits.construct_yaml_int)
            return loader

        fast = getattr(yaml, "CSafeLoader", None)
        _LOADERS = (strict(fast) if fast is not None else None, strict(yaml.SafeLoader))
    return _LOADERS


def _string_key(key: Any, node: Any) -> None:
    if not isinstance(key, str):
        shown = repr(key)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise _Refused(
            f"line {node.start_mark.line + 1}: the key {shown} is {type(key).__name__}, not a string (quote it)"
        )


def _check_events(events: Iterable[Any]) -> None:
    """Refuse, before anything is built, nesting deeper than MAX_DEPTH and aliases that would add more than
    MAX_ALIAS_NODES values when expanded or that name a value containing them."""
    import yaml

    sizes: dict[str, int] = {}  # anchor → values in the anchored node, its own aliases expanded
    stack: list[list[Any]] = [[None, 0]]  # [anchor, values so far] of each open collection
    added = 0
    for event in events:
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in sizes:
                raise _Refused(f"the YAML alias *{event.anchor} refers to a value that contains it (or to no value)")
            stack[-1][1] += sizes[event.anchor]
            added += sizes[event.anchor]
            if added > MAX_ALIAS_NODES:
                raise _Refused(
                    f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} values (an alias bomb?); write the "
                    f"values out"
                )
        elif isinstance(event, yaml.ScalarEvent):
            stack[-1][1] += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            stack.append([event.anchor, 1])
            if len(stack) - 1 > MAX_DEPTH:
                raise _Refused(f"line {event.start_mark.line + 1}: nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)) and len(stack) > 1:
            anchor, size = stack.pop()
            stack[-1][1] += size
            if anchor is not None:
                sizes[anchor] = size
