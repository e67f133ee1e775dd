"""The GPU-stack errors a program prints, recognised in its output: what failed and which library it names.

The patterns are the one catalogue of the GPU stack's error messages (knowledge/messages.py): `areas` are the
parts of the stack each points at, matched with the areas of `check`'s findings, and `next_step` what to do
whatever `check` finds (the finding's own fix, when there is one, is exact).

The scan is linear in the output and bounded per error: each pattern has literal `anchors` (found by `str.find`,
which never backtracks), its expression is matched only at an anchor and within `_REACH` characters of it, and
a library named before its anchor (`libx.so.9: cannot open shared object file`) is read backwards from the anchor,
at most a file name's length. A program's stderr may be one line of 50 MB (a progress bar, a dump): no expression
is ever tried at every position of it.
"""

from __future__ import annotations

from typing import Optional

from cudnn_doctor.knowledge.messages import PATTERNS, Known
from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record

_REACH = 1024  # characters an error's text may run from its anchor (a library name, a DLL path)
# A library name just before an anchor, read backwards: the reversed `[\w.+-]*(?:\.so(?:\.\d+)*|\.dll)`.
_LIBRARY_BEFORE = regex(r"(?:(?:\d+\.)*os\.|lld\.)[\w.+-]*")
_NAME_MAX = 255  # a file name's longest: how far back a library name before its anchor is read


class Match(Record):
    kind: str
    areas: tuple[str, ...]
    says: str
    next_step: str
    text: str  # the line of the output
    library: Optional[str]


def scan(output: str) -> list[Match]:
    """Every known error in the output, each (kind, library) once, in the order printed (by line, then pattern)."""
    text = output.replace("\r", "\n") if "\r" in output else output  # a progress bar's carriage returns end lines too
    first: dict[tuple[str, Optional[str]], tuple[int, int, Match]] = {}
    firsts: dict[str, int] = {}  # each anchor's first place, looked for once however many patterns share it
    for index, known in enumerate(PATTERNS):
        for anchor in known.anchors:
            if anchor not in firsts:
                firsts[anchor] = text.find(anchor)
        if all(firsts[anchor] < 0 for anchor in known.anchors):
            continue
        for line_start, hit in _hits(text, known, firsts):
            key = (hit.kind, hit.library)
            if key not in first or (line_start, index) < first[key][:2]:
                first[key] = (line_start, index, hit)
    return [hit for _, _, hit in sorted(first.values(), key=lambda entry: entry[:2])]


def _hits(text: str, known: Known, firsts: dict[str, int]) -> list[tuple[int, Match]]:
    """The first match of `known` on each line that has one, with the line's start, each library once (its first
    line). Each anchor is looked for from left to right; after a match the search goes on from the end of its line."""
    found: list[tuple[int, Match]] = []
    libraries: set[Optional[str]] = set()
    named = known.library_before or "library" in known.pattern.groupindex
    following = {anchor: firsts[anchor] for anchor in known.anchors}
    while True:
        anchor, at = min(following.items(), key=lambda item: item[1] if item[1] >= 0 else len(text) + 1)
        if at < 0:
            return found
        hit = _match_at(text, known, at)
        if hit is None:
            following[anchor] = text.find(anchor, at + 1)
            continue
        start, library = hit
        line_end = text.find("\n", at)
        line_end = len(text) if line_end < 0 else line_end
        if library not in libraries:
            libraries.add(library)
            line_start = text.rfind("\n", 0, at) + 1
            found.append(
                (
                    line_start,
                    Match(
                        known.kind,
                        known.areas,
                        known.says,
                        _next_step(known, library),
                        _shown(text, line_start, line_end, start),
                        library,
                    ),
                )
            )
            if not named:
                return found  # it names no library: every later match is the same error again
        following = {
            anchor: text.find(anchor, line_end) if position < line_end else position
            for anchor, position in following.items()
        }


def _next_step(known: Known, library: Optional[str]) -> str:
    """The next step with the library's file name in place of NAME (`cudnn-doctor which libcudnn_cnn_infer.so.8`)."""
    if not library:
        return known.next_step
    name = library.replace("\\", "/").rsplit("/", 1)[-1].rsplit(" ", 1)[-1]
    return known.next_step.replace("NAME.dll", name).replace("NAME", name)


def _match_at(text: str, known: Known, at: int) -> Optional[tuple[int, Optional[str]]]:
    """Where the error starts and the library it names, for the anchor at `at`; None if the pattern fails there."""
    reach = -1 if known.spans_lines else text.find("\n", at, at + _REACH)
    matched = known.pattern.match(text, at, reach if reach >= 0 else at + _REACH)
    if not matched:
        return None
    if known.library_before:
        behind = text[max(0, at - _NAME_MAX) : at][::-1]
        name = _LIBRARY_BEFORE.match(behind)
        if not name:
            return None
        return at - name.end(), name.group()[::-1]
    return at, matched.groupdict().get("library") or None


def _shown(text: str, line_start: int, line_end: int, start: int) -> str:
    """The line of an error, at most 300 characters: a long line from where the error starts."""
    if line_end - line_start <= 4096:
        return text[line_start:line_end].strip()[:300]
    return text[start : start + 300].strip()
