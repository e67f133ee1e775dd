"""One file out of a wheel on the package registry, without downloading the wheel.

TensorFlow's wheels are 600 MB; the one library a test reads is 80 MB of them. `zipfile` reads the
archive through a file object whose reads are HTTP range requests, so only the central directory
and that member travel. The member is kept in the test cache; without the registry the test skips.
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Callable

import pytest

from .conftest import TEST_CACHE

_INDEX = "https://pypi.org/simple/{project}/"  # the simple index in its JSON form (PEP 691), sizes included (PEP 700)
_TIMEOUT = 60


class _RangeFile(io.RawIOBase):
    """A read-only, seekable view of a URL: each read is one `Range` request."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.position = url, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.position = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence] + offset
        return self.position

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        end = min(self.position + len(buffer), self.size)
        if end <= self.position:
            return 0
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.position}-{end - 1}"})
        with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:
            data = response.read()
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


def wheel_member(project: str, version: str, filename_part: str, member: str) -> Path:
    """`member` of the wheel of `project` `version` whose file name contains `filename_part`, cached."""
    return wheel_members(project, version, filename_part, lambda name: name == member)[0]


def wheel_members(project: str, version: str, filename_part: str, wanted: Callable[[str], bool]) -> list[Path]:
    """The members of that wheel whose names `wanted` accepts (at least one, else the test skips), cached with the list
    of names the wheel has (`.members`)."""
    folder = TEST_CACHE / "wheel-members" / f"{project}-{version}-{filename_part}"
    listing = folder / ".members"
    if listing.is_file():
        names = [n for n in listing.read_text(encoding="utf-8").splitlines() if wanted(n)]
        if names and all((folder / n).is_file() for n in names):
            return [folder / n for n in names]
    try:
        request = urllib.request.Request(_INDEX.format(project=project), headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:
            files = json.load(response)["files"]
        prefix = f"{project.replace('-', '_')}-{version}-"
        wheel = next((f for f in files if f["filename"].startswith(prefix) and f["filename"].endswith(".whl") and filename_part in f["filename"]), None)
        if wheel is None:
            pytest.skip(f"no wheel of {project} {version} matching {filename_part} on the registry")
        remote = io.BufferedReader(_RangeFile(wheel["url"], int(wheel["size"])), buffer_size=8 << 20)
        with zipfile.ZipFile(remote) as archive:
            every = archive.namelist()
            names = [n for n in every if wanted(n)]
            if not names:
                pytest.skip(f"the wheel of {project} {version} has no such member")
            for name in names:
                _keep(folder / name, archive.read(name))
    except (OSError, urllib.error.URLError, ValueError, KeyError) as error:
        pytest.skip(f"cannot read {project} {version} from the package registry: {error}")
    _keep(listing, "\n".join(every).encode("utf-8"))
    return [folder / n for n in names]


def _keep(target: Path, data: bytes) -> None:
    """Write a cached file whole or not at all (a run killed half-way leaves no truncated library behind)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(data)
    partial.replace(target)
