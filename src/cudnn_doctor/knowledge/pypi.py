"""PyPI's own record of a distribution's releases, kept as a source of the knowledge (issue 30).

`record` reads the package index (PEP 691: the simple index as JSON) for each tracked distribution and, for those
whose extras decide what a plan installs (JAX's `cuda12` / `cuda13`), the METADATA of one wheel per release, read
through HTTP range requests (the central directory and one member, not the wheel). It writes
`sources/pypi.json.gz`, with the index URL and the date; `published_rows` turns that into the `published` table,
which the generator ships. Only `record` touches the network, and only when a maintainer runs it:

    python -m cudnn_doctor.knowledge.pypi record
"""

from __future__ import annotations

import datetime
import gzip
import io
import json
import sys
import urllib.request
import zipfile
from email.parser import HeaderParser
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

SOURCE = Path(__file__).with_name("sources") / "pypi.json.gz"
INDEX = "https://pypi.org/simple/"
# The distributions a plan pins, and those whose extras' Requires-Dist it must read (what `jax[cuda12]` installs).
TRACKED = ("jax", "jax-cuda12-plugin", "jax-cuda13-plugin", "onnxruntime-gpu", "paddlepaddle-gpu", "tensorflow")
# distribution -> the oldest release whose extras are read (TensorFlow's [and-cuda] began with 2.14)
WITH_EXTRAS = {"jax": "0", "tensorflow": "2.14"}
PLATFORM = "manylinux"  # the wheels whose Python tags count: Linux x86_64 (JAX's CUDA builds exist only there)
_TIMEOUT_S = 60.0
_LIMIT = 16 << 20  # the largest response read: an index page of every tracked distribution is far below it


def _get(url: str, headers: Optional[dict[str, str]] = None, timeout: float = _TIMEOUT_S) -> bytes:
    """One bounded request: HTTPS only (plain HTTP to this machine's loopback, where tests serve), at most _LIMIT bytes
    and `timeout` seconds of silence."""
    request = urllib.request.Request(url, headers=headers or {})
    if not url.startswith(("https://", "http://127.0.0.1:", "http://localhost:")):
        raise ValueError(f"not an HTTPS URL: {url}")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        data = response.read(_LIMIT + 1)
    if len(data) > _LIMIT:
        raise ValueError(f"{url}: more than {_LIMIT} bytes")
    return data


def index_files(name: str, get: Callable[..., bytes] = _get, index: str = INDEX) -> list[dict[str, Any]]:
    """The files the index lists for `name`, each checked for the fields used (filename, url, size, yanked, requires-python)."""
    document = json.loads(get(f"{index}{name}/", {"Accept": "application/vnd.pypi.simple.v1+json"}))
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, list):
        raise ValueError(f"{name}: the index answered no file list")
    return [f for f in files if isinstance(f, dict) and isinstance(f.get("filename"), str) and isinstance(f.get("url"), str)]


def releases(files: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """version -> {"linux": / "windows": the Python tags of its x86_64 wheels for that OS ("py3" for a pure wheel, which
    serves both), "sdist": whether it has one, "requires_python"}, for every release with a file that is not yanked."""
    found: dict[str, dict[str, Any]] = {}
    for file in files:
        if file.get("yanked") not in (False, None, ""):
            continue
        name = file["filename"]
        try:
            if name.endswith(".whl"):
                _, version, _, tags = parse_wheel_filename(name)
            else:
                _, version = parse_sdist_filename(name)
                tags = frozenset()
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        entry = found.setdefault(str(version), {"linux": set(), "windows": set(), "sdist": False, "requires_python": file.get("requires-python") or None})
        entry["sdist"] = entry["sdist"] or not name.endswith(".whl")
        for tag in tags:
            python = "py3" if tag.interpreter.startswith("py") else tag.interpreter
            for os_name, platform in (("linux", "manylinux"), ("windows", "win")):
                if tag.platform == "any" or (tag.platform.startswith(platform) and tag.platform.endswith(("x86_64", "amd64"))):
                    entry[os_name].add(python)
    return {v: {**e, "linux": sorted(e["linux"]), "windows": sorted(e["windows"])} for v, e in found.items()}


class _RangeFile(io.RawIOBase):
    """A read-only, seekable view of a URL: each read is one `Range` request."""

    def __init__(self, url: str, size: int, get: Callable[..., bytes] = _get) -> None:
        self.url, self.size, self.position, self.get = url, size, 0, get

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.position = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence] + offset
        return self.position

    def readinto(self, buffer: Any) -> int:
        end = min(self.position + len(buffer), self.size)
        if end <= self.position:
            return 0
        data = self.get(self.url, {"Range": f"bytes={self.position}-{end - 1}"})[: end - self.position]
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


def wheel_members(
    url: str, size: int, wanted: Callable[[str], bool], get: Callable[..., bytes] = _get, buffer: int = 1 << 20
) -> tuple[list[str], dict[str, bytes]]:
    """Every member name of the remote wheel, and the bytes of those `wanted` accepts, read through range requests
    (`buffer` bytes at a time: a large member is read in few requests)."""
    with zipfile.ZipFile(io.BufferedReader(_RangeFile(url, size, get), buffer_size=buffer)) as archive:
        names = archive.namelist()
        return names, {name: archive.read(name) for name in names if wanted(name)}


def extras(metadata: str) -> dict[str, list[str]]:
    """extra -> the requirements it adds, from a METADATA text (each as `name specifier`, markers dropped): those whose
    marker holds with that extra and not without one, on Linux."""
    headers = HeaderParser().parsestr(metadata)
    found: dict[str, list[str]] = {extra: [] for extra in headers.get_all("Provides-Extra") or []}
    for line in headers.get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        marker = requirement.marker
        if marker is None or marker.evaluate({**_LINUX, "extra": ""}):
            continue  # a requirement of every install, not of an extra
        for extra in found:
            if marker.evaluate({**_LINUX, "extra": extra}):
                found[extra].append(f"{requirement.name}{requirement.specifier}")
    return found


_LINUX = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix"}


def record(names: Iterable[str] = TRACKED, path: Path = SOURCE, get: Callable[..., bytes] = _get) -> dict[str, Any]:
    """Read the index (and the extras of WITH_EXTRAS) now and write the source file."""
    document = fetch(names, get)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(path, "wb", mtime=0) as out:
        out.write(json.dumps(document, indent=0, sort_keys=True).encode("utf-8"))
    return document


def fetch(names: Iterable[str] = TRACKED, get: Callable[..., bytes] = _get, index: str = INDEX) -> dict[str, Any]:
    """The source document as the index answers now: {"index", "fetched", "distributions": {name: releases}}."""
    distributions: dict[str, Any] = {}
    for name in names:
        files = index_files(name, get, index)
        found = releases(files)
        if name in WITH_EXTRAS:
            wheels = {f["filename"]: f for f in files if f["filename"].endswith(".whl")}
            for version, entry in found.items():
                if Version(version) < Version(WITH_EXTRAS[name]):
                    continue
                prefix = f"{name.replace('-', '_')}-{version}-"
                mine = sorted((n for n in wheels if n.startswith(prefix)), key=lambda n: ("manylinux" not in n, n))  # Linux's extras
                wheel = wheels[mine[0]] if mine else None
                if wheel is None or not isinstance(wheel.get("size"), int):
                    continue
                _, members = wheel_members(wheel["url"], wheel["size"], lambda n: n.endswith(".dist-info/METADATA"), get)
                entry["extras"] = extras(next(iter(members.values())).decode("utf-8", "replace")) if members else {}
        distributions[name] = found
    return {"index": index, "fetched": datetime.date.today().isoformat(), "distributions": distributions}


def read(path: Path = SOURCE) -> dict[str, Any]:
    """The recorded source."""
    with gzip.open(path, "rb") as data:
        return json.loads(data.read())


def published_rows(document: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The `published` table's sections: a row per release of each recorded distribution, and a row per extra of those
    whose extras were read."""
    via = f" through {document['index']}" if document["index"] != INDEX else ""  # a mirror (a test's loopback index)
    source = f"{INDEX} recorded {document['fetched']}{via}"
    releases_rows, extras_rows = [], []
    for name, found in sorted(document["distributions"].items()):
        for version in sorted(found, key=Version, reverse=True):
            entry = found[version]
            row: dict[str, Any] = {"distribution": name, "version": version, "linux": entry["linux"], "windows": entry["windows"], "source": source}
            row.update({"sdist": True} if entry.get("sdist") else {})
            row.update({"requires_python": entry["requires_python"]} if entry.get("requires_python") else {})
            releases_rows.append(row)
            for extra, requires in sorted((entry.get("extras") or {}).items()):
                extras_rows.append({"distribution": name, "version": version, "extra": extra, "requires": requires, "source": source})
    return {"reviewed": document["fetched"], "releases": releases_rows, "extras": extras_rows}


if __name__ == "__main__":
    if sys.argv[1:] != ["record"]:
        sys.exit("usage: python -m cudnn_doctor.knowledge.pypi record   (reads the package index: network)")
    record()
