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
TRACKED = (
    "cupy-cuda11x",
    "cupy-cuda12x",
    "cupy-cuda13x",
    "jax",
    "jax-cuda12-plugin",
    "jax-cuda13-plugin",
    "onnxruntime-gpu",
    "paddlepaddle-gpu",
    "tensorflow",
    "torch",
)
# distribution -> the oldest release whose METADATA is read: what its extras add (TensorFlow's [and-cuda] began with
# 2.14) and what every install of it requires on Linux x86_64 (torch's nvidia-* pins began with 1.13)
WITH_EXTRAS = {
    "cupy-cuda12x": "13",
    "cupy-cuda13x": "13",
    "jax": "0",
    "jax-cuda12-plugin": "0.4.26",
    "jax-cuda13-plugin": "0.7.2",
    "onnxruntime-gpu": "1.19",
    "tensorflow": "2.14",
    "torch": "1.13",
}
# distribution -> the oldest release whose Linux aarch64 wheel's own requirements are read (torch's aarch64 wheels on
# PyPI became CUDA builds with 2.11; before, their nvidia-* requirements held for x86_64 only)
WITH_AARCH64 = {"torch": "2.0"}
_TIMEOUT_S = 60.0
_LIMIT = 16 << 20  # the largest response read: an index page of every tracked distribution is far below it


def _get(url: str, headers: Optional[dict[str, str]] = None, timeout: float = _TIMEOUT_S) -> bytes:
    """One bounded request: HTTPS only (plain HTTP to this machine's loopback, where tests serve), at most _LIMIT bytes
    and `timeout` seconds of silence."""
    request = urllib.request.Request(url, headers=headers or {})
    if not url.startswith(("https://", "http://127.0.0.1:", "http://localhost:")):
        raise ValueError(f"not an HTTPS URL: {url}")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        data: bytes = response.read(_LIMIT + 1)
    if len(data) > _LIMIT:
        raise ValueError(f"{url}: more than {_LIMIT} bytes")
    return data


def index_files(name: str, get: Callable[..., bytes] = _get, index: str = INDEX) -> list[dict[str, Any]]:
    """The files the index lists for `name`, each checked for the fields used (filename, url, size, yanked,
    requires-python)."""
    document = json.loads(get(f"{index}{name}/", {"Accept": "application/vnd.pypi.simple.v1+json"}))
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, list):
        raise ValueError(f"{name}: the index answered no file list")
    return [
        f for f in files if isinstance(f, dict) and isinstance(f.get("filename"), str) and isinstance(f.get("url"), str)
    ]


def releases(files: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """version -> {"linux": / "windows": the Python tags of its x86_64 wheels for that OS ("py3" for a pure wheel, which
    serves both), "aarch64": those of its Linux aarch64 wheels, "sdist": whether it has one, "requires_python"}, for
    every release with a file that is not yanked."""
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
        entry = found.setdefault(
            str(version),
            {
                "linux": set(),
                "windows": set(),
                "aarch64": set(),
                "sdist": False,
                "requires_python": file.get("requires-python") or None,
            },
        )
        entry["sdist"] = entry["sdist"] or not name.endswith(".whl")
        for tag in tags:
            python = "py3" if tag.interpreter.startswith("py") else tag.interpreter
            for os_name, platform, machines in _PLATFORMS:
                if tag.platform == "any" or (tag.platform.startswith(platform) and tag.platform.endswith(machines)):
                    entry[os_name].add(python)
    return {v: {**e, **{os_name: sorted(e[os_name]) for os_name, _, _ in _PLATFORMS}} for v, e in found.items()}


# release key -> the platform tags it collects: (prefix, machine suffixes)
_PLATFORMS = (
    ("linux", "manylinux", ("x86_64",)),
    ("windows", "win", ("amd64",)),
    ("aarch64", "manylinux", ("aarch64",)),
)


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


def extras(metadata: str, environment: Optional[dict[str, str]] = None) -> dict[str, list[str]]:
    """extra -> the requirements it adds, from a METADATA text (each as `name specifier`, markers dropped): those whose
    marker holds with that extra and not without one, on Linux x86_64. The key "" holds what every install requires
    there (torch's nvidia-* pins)."""
    headers = HeaderParser().parsestr(metadata)
    where = environment or _LINUX
    found: dict[str, list[str]] = {extra: [] for extra in ["", *(headers.get_all("Provides-Extra") or [])]}
    for line in headers.get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        marker = requirement.marker
        text = (
            f"{requirement.name}"
            f"{'[' + ','.join(sorted(requirement.extras)) + ']' if requirement.extras else ''}{requirement.specifier}"
        )
        if marker is None or marker.evaluate({**where, "extra": ""}):
            found[""].append(text)  # a requirement of every install, not of an extra
            continue
        for extra in found:
            if extra and marker.evaluate({**where, "extra": extra}):
                found[extra].append(text)
    return found


_LINUX = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix"}
_LINUX_AARCH64 = {**_LINUX, "platform_machine": "aarch64"}


def record(names: Iterable[str] = TRACKED, path: Path = SOURCE, get: Callable[..., bytes] = _get) -> dict[str, Any]:
    """Read the index (and the extras of WITH_EXTRAS) now and write the source file."""
    document = fetch(names, get)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(path, "wb", mtime=0) as out:
        out.write(json.dumps(document, indent=0, sort_keys=True).encode("utf-8"))
    return document


def fetch(
    names: Iterable[str] = TRACKED,
    get: Callable[..., bytes] = _get,
    index: str = INDEX,
    previous: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """The source document as the index answers now: {"index", "fetched", "distributions": {name: releases}}. A release
    whose METADATA a `previous` document already holds is not read again (a published release never changes)."""
    distributions: dict[str, Any] = {}
    for name in names:
        files = index_files(name, get, index)
        found = releases(files)
        wheels = {f["filename"]: f for f in files if f["filename"].endswith(".whl") and isinstance(f.get("size"), int)}
        known = ((previous or {}).get("distributions") or {}).get(name) or {}
        for version, entry in found.items():
            kept = {
                key: value for key, value in (known.get(version) or {}).items() if key in ("extras", "requires_aarch64")
            }
            if kept:
                entry.update(kept)
                continue
            if name in WITH_EXTRAS and Version(version) >= Version(WITH_EXTRAS[name]):
                metadata = _metadata(wheels, name, version, "x86_64", get)
                entry["extras"] = extras(metadata) if metadata is not None else {}
            if name in WITH_AARCH64 and Version(version) >= Version(WITH_AARCH64[name]) and entry["aarch64"]:
                metadata = _metadata(wheels, name, version, "aarch64", get)
                entry["requires_aarch64"] = extras(metadata, _LINUX_AARCH64)[""] if metadata is not None else []
        distributions[name] = found
    return {"index": index, "fetched": datetime.date.today().isoformat(), "distributions": distributions}


def _metadata(
    wheels: dict[str, dict[str, Any]], name: str, version: str, machine: str, get: Callable[..., bytes]
) -> Optional[str]:
    """The METADATA of one wheel of that release: a Linux wheel for `machine` (x86_64: else any wheel, for a pure
    one)."""
    prefix = f"{name.replace('-', '_')}-{version}-"
    mine = [n for n in wheels if n.startswith(prefix)]
    linux = sorted(n for n in mine if "manylinux" in n and n.endswith(f"{machine}.whl"))
    chosen = linux or (sorted(mine, key=lambda n: ("manylinux" not in n, n)) if machine == "x86_64" else [])
    if not chosen:
        return None
    wheel = wheels[chosen[0]]
    _, members = wheel_members(wheel["url"], wheel["size"], lambda n: n.endswith(".dist-info/METADATA"), get)
    return next(iter(members.values())).decode("utf-8", "replace") if members else None


def read(path: Path = SOURCE) -> dict[str, Any]:
    """The recorded source."""
    with gzip.open(path, "rb") as data:
        document: dict[str, Any] = json.loads(data.read())
    return document


def published_rows(document: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The `published` table's sections: a row per release of each recorded distribution, and a row per extra of those
    whose extras were read."""
    via = f" through {document['index']}" if document["index"] != INDEX else ""  # a mirror (a test's loopback index)
    source = f"{INDEX} recorded {document['fetched']}{via}"
    releases_rows, extras_rows = [], []
    for name, found in sorted(document["distributions"].items()):
        for version in sorted(found, key=Version, reverse=True):
            entry = found[version]
            row: dict[str, Any] = {
                "distribution": name,
                "version": version,
                "linux": entry["linux"],
                "windows": entry["windows"],
                "source": source,
            }
            row.update({"aarch64": entry["aarch64"]} if entry.get("aarch64") else {})
            row.update({"sdist": True} if entry.get("sdist") else {})
            row.update({"requires_python": entry["requires_python"]} if entry.get("requires_python") else {})
            row.update({"requires": (entry.get("extras") or {})[""]} if (entry.get("extras") or {}).get("") else {})
            row.update({"requires_aarch64": entry["requires_aarch64"]} if entry.get("requires_aarch64") else {})
            releases_rows.append(row)
            for extra, requires in sorted((entry.get("extras") or {}).items()):
                if not extra:
                    continue
                extras_rows.append(
                    {"distribution": name, "version": version, "extra": extra, "requires": requires, "source": source}
                )
    return {"reviewed": document["fetched"], "releases": releases_rows, "extras": extras_rows}


if __name__ == "__main__":
    if sys.argv[1:] != ["record"]:
        sys.exit("usage: python -m cudnn_doctor.knowledge.pypi record   (reads the package index: network)")
    record()
