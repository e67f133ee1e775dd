"""Regular expressions compiled the first time they are used (issue 15).

A module-level `re.compile` runs at import, on every run, whether or not the pattern is ever used: `check
--no-frameworks` compiled ~70 of them before it did any work. `regex(pattern, flags)` keeps the pattern and its
flags and compiles on first use. The compiled pattern's methods are then stored on the object itself, so a later
`PATTERN.search(text, pos)` is the compiled pattern's own bound method: the same arguments, the same results and
no extra cost per call, which `re.search(PATTERN, ...)` (a cache lookup per call, no `pos`) would not give.
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, Generic

# What a compiled pattern offers that callers use; anything else is an error, as it would be on re.Pattern.
_DELEGATED = frozenset(("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner", "pattern", "flags", "groups", "groupindex"))


class LazyPattern(Generic[AnyStr]):
    """A pattern and its flags, compiled by `re.compile` when one of the compiled pattern's attributes is first asked for."""

    def __init__(self, pattern: AnyStr, flags: int = 0) -> None:
        self.source = pattern
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

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyPattern, (self.source, self.source_flags))

    def __repr__(self) -> str:
        return f"regex({self.source!r}, {self.source_flags!r})"


def regex(pattern: AnyStr, flags: int = 0) -> LazyPattern[AnyStr]:
    """`re.compile(pattern, flags)`, done on first use rather than now."""
    return LazyPattern(pattern, flags)
