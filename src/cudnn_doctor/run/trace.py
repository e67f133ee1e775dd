"""The dynamic loader's own account of a run: glibc's `LD_DEBUG=libs,files` output, one file per process.

Each library request becomes a `Search`: the name, who asked (`needed by` a DT_NEEDED entry or
`dynamically loaded by` dlopen), the places searched in order with where each list came from
(LD_LIBRARY_PATH, RUNPATH of a file, the ld.so cache, the system path) and the files tried, and the
file that was loaded, or none: the failure the program then reports. Pure text in, records out.
"""

from __future__ import annotations

from typing import Iterable, Optional

from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record

_LINE = regex(r"^\s*(\d+):\s?(.*)$")
_FILE = regex(r"^file=(\S+) \[\d+\];\s+(needed by|dynamically loaded by) (\S+)")
_FIND = regex(r"^find library=(\S+) \[\d+\]; searching")
_SEARCH_PATH = regex(r"^\s*search path=(.*?)\s+\((.+)\)\s*$")
_SEARCH_CACHE = regex(r"^\s*search cache=(\S+)")
_TRYING = regex(r"^\s*trying file=(.+)$")
_LINKED = regex(r"^file=(\S+) \[\d+\];\s+generating link map")


class Place(Record):
    """One list the loader searched: its folders (or the cache file) and what put it there."""

    source: str  # "LD_LIBRARY_PATH", "RUNPATH from file /x/python3", "system search path", "ld.so cache"
    folders: tuple[str, ...]


class Search(Record):
    pid: int
    name: str  # as asked: "libcudnn_graph.so.9" or an absolute path
    requester: Optional[str]  # the file whose DT_NEEDED or dlopen asked for it
    how: str  # "needed" | "dlopen"
    places: tuple[Place, ...]
    tried: tuple[str, ...]
    loaded: Optional[str]  # the file mapped; None: the search failed

    @property
    def failed(self) -> bool:
        return self.loaded is None


class _Open:
    """A request being read: what the loader has said of it so far."""

    def __init__(self, pid: int, name: str, requester: Optional[str], how: str) -> None:
        self.pid, self.name, self.requester, self.how = pid, name, requester, how
        self.places: list[Place] = []
        self.tried: list[str] = []

    def close(self, loaded: Optional[str]) -> Search:
        return Search(self.pid, self.name, self.requester, self.how, tuple(self.places), tuple(self.tried), loaded)


def parse(text: str) -> list[Search]:
    """Every library request in one process's trace, in the order the loader made them."""
    searches: list[Search] = []
    current: Optional[_Open] = None
    for raw in text.splitlines():
        match = _LINE.match(raw)
        if not match:
            continue
        pid, line = int(match.group(1)), match.group(2)
        opened = _FILE.match(line)
        if opened:
            if current is not None:
                searches.append(current.close(None))
            how = "needed" if opened.group(2) == "needed by" else "dlopen"
            current = _Open(pid, opened.group(1), opened.group(3), how)
            continue
        if current is None:
            continue
        if _FIND.match(line):
            continue
        place = _SEARCH_PATH.match(line)
        if place:
            current.places.append(Place(place.group(2), tuple(f for f in place.group(1).split(":") if f)))
            continue
        cache = _SEARCH_CACHE.match(line)
        if cache:
            current.places.append(Place("ld.so cache", (cache.group(1),)))
            continue
        trying = _TRYING.match(line)
        if trying:
            current.tried.append(trying.group(1).strip())
            continue
        linked = _LINKED.match(line)
        if linked and (
            linked.group(1) == current.name or linked.group(1).rsplit("/", 1)[-1] == current.name.rsplit("/", 1)[-1]
        ):
            loaded = (
                current.tried[-1]
                if current.tried
                else (current.name if current.name.startswith("/") else linked.group(1))
            )
            searches.append(current.close(loaded))
            current = None
    if current is not None:
        searches.append(current.close(None))
    return searches


def failures(searches: Iterable[Search]) -> list[Search]:
    """The requests that found no file, each name once (the last attempt: the one the program saw fail)."""
    last: dict[str, Search] = {}
    for search in searches:
        if search.failed:
            last[search.name] = search
        else:
            last.pop(search.name, None)  # a later request found it after all
    return list(last.values())
