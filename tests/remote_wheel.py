"""Files out of a wheel on the package registry, without downloading the wheel, for tests on real binaries.

TensorFlow's wheels are 600 MB; the one library a test reads is 80 MB of them. The doctor's own reader of remote
wheels (`knowledge.pypi`: the index as JSON, then HTTP range requests through `zipfile`) fetches only the central
directory and the members asked for. They are kept in the test cache; without the registry the test skips.
"""

from __future__ import annotations

import urllib.error
import zipfile
from pathlib import Path
from typing import Callable

import pytest

from cudnn_doctor.knowledge import pypi
from tests.conftest import TEST_CACHE, keep


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
        prefix = f"{project.replace('-', '_')}-{version}-"
        files = pypi.index_files(project)
        wheel = next(
            (
                f
                for f in files
                if f["filename"].startswith(prefix)
                and f["filename"].endswith(".whl")
                and filename_part in f["filename"]
            ),
            None,
        )
        if wheel is None:
            pytest.skip(f"no wheel of {project} {version} matching {filename_part} on the registry")
        every, members = pypi.wheel_members(wheel["url"], int(wheel["size"]), wanted, buffer=8 << 20)
    except (OSError, urllib.error.URLError, ValueError, KeyError, zipfile.BadZipFile) as error:
        pytest.skip(f"cannot read {project} {version} from the package registry: {error}")
    if not members:
        pytest.skip(f"the wheel of {project} {version} has no such member")
    for name, data in members.items():
        keep(folder / name, data)
    keep(listing, "\n".join(every).encode("utf-8"))
    return [folder / n for n in members]
