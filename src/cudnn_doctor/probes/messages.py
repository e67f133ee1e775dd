"""What a framework's own messages mean, read by `builds` with the wordings of the one catalogue
(knowledge/messages.py).

Two meanings (the cuDNN loaded is not the one the build needs; a GPU library could not be loaded though its
file is not named), with the versions they state parsed out. A message is evidence: a check trusts it before the
emulation and before any table.
Versions printed as integers (cuDNN's `CUDNN_VERSION`, 7101, 90300; PyTorch's tuples (8, 5, 0)) are
written as releases ("7.1.1", "9.3.0", "8.5.0").
"""

from __future__ import annotations

import re
from typing import Optional

from cudnn_doctor.facts import CudnnMismatch, LoadFailure, Unloadable
from cudnn_doctor.knowledge.messages import CUDNN_MISMATCH, DEPENDENCIES, DIRECT_LOADS, OTHER_LOADS, UNLOADABLE
from cudnn_doctor.lazyre import LazyPattern
from cudnn_doctor.versions import parse_cudnn_version


def cudnn_mismatch(text: str) -> Optional[CudnnMismatch]:
    """(loaded, compiled with, minimum) when the framework's own messages say the cuDNN it found is not one it can
    use."""
    for wording in CUDNN_MISMATCH:
        match = wording.pattern.search(text)
        if match:
            found = match.groupdict()
            minimum = found.get("minimum")
            return CudnnMismatch(
                loaded=_release(found["loaded"]),
                compiled=_release(found["compiled"]),
                message=line_at(text, match.start()),
                minimum=_release(minimum) if minimum else None,
            )
    return None


def unloadable(text: str) -> tuple[Unloadable, ...]:
    """Each GPU library part the messages say could not be loaded without naming its file, once, in the order
    printed."""
    found: dict[str, Unloadable] = {}
    for wording in UNLOADABLE:
        for match in wording.pattern.finditer(text):
            part = (match.groupdict().get("part") or "gpu").lower()
            found.setdefault(part, Unloadable(part, line_at(text, match.start())))
    return tuple(sorted(found.values(), key=lambda u: text.find(u.message)))


def _release(text: str) -> str:
    """A version as a release: "8, 5, 0" -> "8.5.0"; cuDNN's integer 7101 -> "7.1.1"; dotted text stays as written."""
    if "," in text:
        return ".".join(part.strip() for part in text.split(","))
    if text.isdigit() and len(text) >= 4:
        version = parse_cudnn_version(int(text))
        return str(version) if version else text
    return text


def load_failures(text: str) -> tuple[LoadFailure, ...]:
    """Every library the messages name as not loadable, once, with who needed it when they say."""
    found: dict[str, LoadFailure] = {}
    for pattern in DEPENDENCIES:
        for match in pattern.finditer(text):
            found.setdefault(match.group(2), LoadFailure(match.group(2), line_at(text, match.start()), match.group(1)))
    for pattern in DIRECT_LOADS:
        for match in pattern.finditer(text):
            for name in re.split(r"', '|;", match.group(1)):
                found[name.strip()] = LoadFailure(name.strip(), line_at(text, match.start()), None, direct=True)
    for pattern in OTHER_LOADS:
        for match in pattern.finditer(text):
            for name in match.group(1).split("', '"):
                found.setdefault(name, LoadFailure(name, line_at(text, match.start())))
    return tuple(found.values())


def line_matching(text: str, pattern: LazyPattern[str]) -> Optional[str]:
    match = pattern.search(text)
    return line_at(text, match.start()) if match else None


def line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return clipped(text[start : end if end >= 0 else None].strip())


def clipped(line: str, limit: int = 300) -> str:
    """A framework's line as a report quotes it: whole up to `limit` characters, else up to its last full sentence
    within them (torch's sm_120 warning ends in a guide URL), else cut with an ellipsis."""
    if len(line) <= limit:
        return line
    end = line.rfind(". ", 0, limit)
    return line[: end + 1] if end > 0 else line[: limit - 1] + "…"
