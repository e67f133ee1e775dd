"""Whether the pip packages of one plan can be installed together (issue 30).

Each planned pip requirement is followed through the recorded package index: a release's own Requires-Dist on Linux
x86_64 (torch's `nvidia-cudnn-cu12==9.10.2.21`) and what its extras add (`tensorflow[and-cuda]`), then the same for
every requirement pinned to one release that the index recorded (`jax[cuda12]` -> `jax-cuda12-plugin[with-cuda]` ->
its nvidia-* ranges). Two builds clash where one pins a distribution to a release the other's requirement excludes:
pip would install one of them broken, or refuse. Ranges against ranges are not judged (the index holds no nvidia-*
release lists), so a clash found is real and none found is not a proof.
"""

from __future__ import annotations

from functools import cache
from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from cudnn_doctor import knowledge
from cudnn_doctor.record import Record
from cudnn_doctor.versions import canonical_name

_DEPTH = 3  # framework -> plugin -> nvidia-* wheel: deeper chains add nothing a plan pins


class Pin(Record):
    """One requirement on a distribution, and the chain of requirements that brought it."""

    distribution: str  # canonical name
    specifier: SpecifierSet
    text: str  # as its METADATA writes it: "nvidia-cudnn-cu12==9.10.2.21"
    # the planned requirement it comes from, and the steps: "jax[cuda12]==0.7.0 -> jax-cuda12-plugin[with-cuda]"
    via: str


def pins(requirement: str, pip_options: tuple[str, ...] = ()) -> tuple[Pin, ...]:
    """What pip installing `requirement` requires, as far as the recorded index says. A build from another index
    (torch's cu126 wheels, a feed) is not PyPI's release of that version: its requirements are not known here."""
    if pip_options:
        return ()
    return _follow(requirement, requirement, 0)


@cache
def _follow(text: str, via: str, depth: int) -> tuple[Pin, ...]:
    # packaging.requirements (markers, `platform`) only when a plan reads pins: `check` on a fixture never imports it
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return ()
    version = exact(requirement.specifier)
    if version is None or depth >= _DEPTH:
        return ()
    row = next((r for r in knowledge.published(requirement.name) if Version(r.version) == version), None)
    if row is None:
        return ()
    needed = list(row.requires)
    for extra in sorted(requirement.extras):
        added = knowledge.published_extra(requirement.name, row.version, extra)
        needed += list(added.requires) if added is not None else []
    found: list[Pin] = []
    for line in needed:
        try:
            child = Requirement(line)
        except InvalidRequirement:
            continue
        found.append(Pin(canonical_name(child.name), child.specifier, line, via))
        found += _follow(
            line,
            f"{via} -> {child.name}{'[' + ','.join(sorted(child.extras)) + ']' if child.extras else ''}",
            depth + 1,
        )
    return tuple(found)


def exact(specifier: SpecifierSet) -> Optional[Version]:
    """The one release a specifier admits, where it says so: `==9.1.0.70`, or `<=0.7.0,>=0.7.0` (JAX's pins)."""
    equal = [s.version for s in specifier if s.operator in ("==", "===") and not s.version.endswith(".*")]
    lower = {s.version for s in specifier if s.operator == ">="}
    upper = {s.version for s in specifier if s.operator == "<="}
    for text in [*equal, *(lower & upper)]:
        try:
            return Version(text)
        except InvalidVersion:
            continue
    return None


def clash(mine: tuple[Pin, ...], theirs: tuple[Pin, ...]) -> Optional[str]:
    """Why two builds' requirements cannot be met at once: one pins a release the other excludes (None: no clash
    known)."""
    by_name: dict[str, list[Pin]] = {}
    for pin in theirs:
        by_name.setdefault(pin.distribution, []).append(pin)
    for pin in mine:
        for other in by_name.get(pin.distribution, ()):
            for a, b in ((pin, other), (other, pin)):
                version = exact(a.specifier)
                if version is not None and not b.specifier.contains(version, prereleases=True):
                    return f"{pin.via} requires {pin.text}, {other.via} {other.text}: pip cannot install both"
    return None
