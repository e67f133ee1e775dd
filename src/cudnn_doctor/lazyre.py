"""Regular expressions compiled the first time they are used (issue 15).

A module-level `re.compile` runs at import, on every run, whether or not the pattern is ever used: `check
--no-frameworks` compiled ~70 of them before it did any work. `regex(pattern, flags)` keeps the pattern and its
flags and compiles on first use. The compiled pattern's methods are then stored on the object itself, so a later
`PATTERN.search(text, pos)` is the compiled pattern's own bound method: the same arguments, the same results and
no extra cost per call, which `re.search(PATTERN, ...)` (a cache lookup per call, no `pos`) would not give.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any, AnyStr, Callable, Generic, Iterator, Mapping, Optional, Union, overload

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

# What a compiled pattern offers that callers use; anything else is an error, as it would be on re.Pattern.
_DELEGATED = frozenset(
    (
        "search",
        "match",
        "fullmatch",
        "finditer",
        "findall",
        "sub",
        "subn",
        "split",
        "scanner",
        "pattern",
        "flags",
        "groups",
        "groupindex",
    )
)


class LazyPattern(Generic[AnyStr]):
    """A pattern and its flags, compiled by `re.compile` when one of the compiled pattern's attributes is first asked
    for."""

    def __init__(self, pattern: AnyStr, flags: int = 0) -> None:
        self.source: AnyStr = pattern
        self.source_flags = flags

    def compiled(self) -> re.Pattern[AnyStr]:
        """The compiled pattern; from now on its methods and attributes are found on this object directly."""
        pattern = self.__dict__.get("_compiled")
        if pattern is None:
            pattern = re.compile(self.source, self.source_flags)
            self.__dict__.update({name: getattr(pattern, name) for name in _DELEGATED}, _compiled=pattern)
        return pattern

    def __getattr__(self, name: str) -> Any:  # only called for what is not yet in __dict__
        if name not in _DELEGATED:
            raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")
        self.compiled()
        return self.__dict__[name]

    if (
        TYPE_CHECKING
    ):  # the compiled pattern's attributes, as re.Pattern types them (at run time __getattr__ finds them)
        pattern: AnyStr
        flags: int
        groups: int
        groupindex: Mapping[str, int]

        @overload
        def search(
            self: LazyPattern[str], string: str, pos: int = 0, endpos: int = sys.maxsize
        ) -> Optional[re.Match[str]]: ...
        @overload
        def search(
            self: LazyPattern[bytes], string: ReadableBuffer, pos: int = 0, endpos: int = sys.maxsize
        ) -> Optional[re.Match[bytes]]: ...
        def search(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Any: ...

        @overload
        def match(
            self: LazyPattern[str], string: str, pos: int = 0, endpos: int = sys.maxsize
        ) -> Optional[re.Match[str]]: ...
        @overload
        def match(
            self: LazyPattern[bytes], string: ReadableBuffer, pos: int = 0, endpos: int = sys.maxsize
        ) -> Optional[re.Match[bytes]]: ...
        def match(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Any: ...

        @overload
        def fullmatch(
            self: LazyPattern[str], string: str, pos: int = 0, endpos: int = sys.maxsize
        ) -> Optional[re.Match[str]]: ...
        @overload
        def fullmatch(
            self: LazyPattern[bytes], string: ReadableBuffer, pos: int = 0, endpos: int = sys.maxsize
        ) -> Optional[re.Match[bytes]]: ...
        def fullmatch(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Any: ...

        @overload
        def finditer(
            self: LazyPattern[str], string: str, pos: int = 0, endpos: int = sys.maxsize
        ) -> Iterator[re.Match[str]]: ...
        @overload
        def finditer(
            self: LazyPattern[bytes], string: ReadableBuffer, pos: int = 0, endpos: int = sys.maxsize
        ) -> Iterator[re.Match[bytes]]: ...
        def finditer(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Any: ...

        @overload
        def findall(self: LazyPattern[str], string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]: ...
        @overload
        def findall(
            self: LazyPattern[bytes], string: ReadableBuffer, pos: int = 0, endpos: int = sys.maxsize
        ) -> list[Any]: ...
        def findall(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Any: ...

        @overload
        def split(self: LazyPattern[str], string: str, maxsplit: int = 0) -> list[Any]: ...
        @overload
        def split(self: LazyPattern[bytes], string: ReadableBuffer, maxsplit: int = 0) -> list[Any]: ...
        def split(self, string: Any, maxsplit: int = 0) -> Any: ...

        @overload
        def sub(
            self: LazyPattern[str], repl: Union[str, Callable[[re.Match[str]], str]], string: str, count: int = 0
        ) -> str: ...
        @overload
        def sub(
            self: LazyPattern[bytes],
            repl: Union[ReadableBuffer, Callable[[re.Match[bytes]], ReadableBuffer]],
            string: ReadableBuffer,
            count: int = 0,
        ) -> bytes: ...
        def sub(self, repl: Any, string: Any, count: int = 0) -> Any: ...

        @overload
        def subn(
            self: LazyPattern[str], repl: Union[str, Callable[[re.Match[str]], str]], string: str, count: int = 0
        ) -> tuple[str, int]: ...
        @overload
        def subn(
            self: LazyPattern[bytes],
            repl: Union[ReadableBuffer, Callable[[re.Match[bytes]], ReadableBuffer]],
            string: ReadableBuffer,
            count: int = 0,
        ) -> tuple[bytes, int]: ...
        def subn(self, repl: Any, string: Any, count: int = 0) -> Any: ...

        def scanner(self, string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Any: ...

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyPattern, (self.source, self.source_flags))

    def __repr__(self) -> str:
        return f"regex({self.source!r}, {self.source_flags!r})"


def regex(pattern: AnyStr, flags: int = 0) -> LazyPattern[AnyStr]:
    """`re.compile(pattern, flags)`, done on first use rather than now."""
    return LazyPattern(pattern, flags)
