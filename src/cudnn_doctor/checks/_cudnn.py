"""cuDNN facts seen from a check: which installation a loaded file belongs to, its release, what a build wants."""

from __future__ import annotations

from typing import Iterator, Optional

from packaging.version import Version

from cudnn_doctor.checks._libraries import is_cudnn
from cudnn_doctor.facts import DISTRIBUTION_METADATA, CudnnInstall, CudnnLibrary, Facts, FrameworkBuild
from cudnn_doctor.loads import LoadStep, Resolution
from cudnn_doctor.record import Record
from cudnn_doctor.versions import parse_cudnn_version, parse_version


def release(version: Optional[str]) -> Optional[Version]:
    """major.minor.patch of a cuDNN version string (8.5.0.96 and 8.5.0 are one release)."""
    parsed = parse_version(version)
    if parsed is None:
        return None
    return Version(".".join(str(p) for p in (*parsed.release, 0, 0)[:3]))


def library_release(facts: Facts, path: Optional[str]) -> Optional[Version]:
    return library_release_known(facts, path)[0]


def library_release_known(facts: Facts, path: Optional[str]) -> tuple[Optional[Version], Optional[str]]:
    """The release of the library at `path` and how it is known: from the file itself, else its installation's
    version."""
    install, library = facts.cudnn_owner(path)
    if library is not None and library.version:
        return release(library.version), library.version_source
    if install is None or install.version is None:
        return None, None
    return release(install.version), install.version_source


def own_version(install: CudnnInstall, library: CudnnLibrary) -> Optional[str]:
    """A library's version from its own file, else from its package's metadata (pip or conda wrote
    every file it lists); a header says nothing about which files were copied beside it."""
    return library.version or (install.version if install.version_source in DISTRIBUTION_METADATA else None)


class Wanted(Record):
    """What cuDNN a build needs: the same major, and at least this version (when known)."""

    major: int
    minimum: Optional[Version]
    source: str


def wanted_cudnn(build: FrameworkBuild) -> Optional[Wanted]:
    """The cuDNN the build was made for: a release ("8.1": that major, 8.1 or newer) or just a major ("9")."""
    if build.cudnn is None:
        return None
    version = parse_cudnn_version(build.cudnn.value)
    if version is None:
        return None
    minimum = version if len(build.cudnn.value.split(".")) > 1 else None
    return Wanted(version.release[0], minimum, build.cudnn.source or build.cudnn.how)


def resolutions_with_builds(facts: Facts) -> Iterator[tuple[Resolution, FrameworkBuild]]:
    by_key = {(b.executable, b.name): b for b in facts.builds}
    for resolution in facts.resolutions:
        build = by_key.get((resolution.executable, resolution.framework))
        if build is not None:
            yield resolution, build


def every_resolution(facts: Facts) -> Iterator[tuple[Resolution, Optional[FrameworkBuild]]]:
    """Every load tree with its framework build; None for a cuDNN installation no framework loads."""
    by_key = {(b.executable, b.name): b for b in facts.builds}
    for resolution in facts.resolutions:
        yield resolution, by_key.get((resolution.executable, resolution.framework))


def cudnn_steps(resolution: Resolution) -> list[LoadStep]:
    return [s for s in resolution.steps if is_cudnn(s.name) and not s.reused]
