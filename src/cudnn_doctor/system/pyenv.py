"""Reading an interpreter's version and installed distributions from files, without running it.

Used by LiveSystem. Distribution names and versions come from `*.dist-info` folder names
(`{name}-{version}.dist-info`, as the wheel spec writes them) with the METADATA headers as a
fallback, so reading an environment of 500 packages costs one directory listing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, Iterable, Optional

from cudnn_doctor.system.regular import read_regular
from cudnn_doctor.versions import canonical_name as canonicalize_name

_PYVENV_VERSION = re.compile(r"^\s*version(?:_info)?\s*=\s*(\d+\.\d+(?:\.\d+)?)", re.MULTILINE)
_CONDA_PYTHON = re.compile(r"^python-(\d+\.\d+\.\d+)-")
_LIB_PYTHON = re.compile(r"^python(\d+\.\d+)t?$")
_ANSWER = re.compile(r"^\d+\.\d+(?:\.\d+)?[a-z0-9+]*$")


def prefix_of(executable: Path) -> Path:
    """The environment folder: `prefix/bin/python` on POSIX, `prefix\\python.exe` or `prefix\\Scripts\\python.exe` on Windows."""
    parent = executable.parent
    if parent.name.lower() in ("bin", "scripts"):
        return parent.parent
    return parent


def kind_of(prefix: Path) -> str:
    if (prefix / "conda-meta").is_dir():
        return "conda"
    if (prefix / "pyvenv.cfg").is_file():
        return "venv"
    return "system"


def version_of(executable: Path, prefix: Path, ask: Callable[[list[str], float], str]) -> Optional[str]:
    """From pyvenv.cfg or conda-meta; else by asking the interpreter (`ask(argv, timeout)` → its stdout), else from its `lib/pythonX.Y` folder."""
    cfg = prefix / "pyvenv.cfg"
    if cfg.is_file():
        match = _PYVENV_VERSION.search(_read(cfg))
        if match:
            return match.group(1)
    meta = prefix / "conda-meta"
    if meta.is_dir():
        for entry in os.scandir(meta):
            match = _CONDA_PYTHON.match(entry.name)
            if match:
                return match.group(1)
    answer = ask([str(executable), "-c", "import platform; print(platform.python_version())"], 10).strip()
    if _ANSWER.match(answer):
        return answer
    # no answer (it hung, or printed something else): one `lib/python3.11/site-packages` still tells the version
    lib = [m.group(1) for m in map(_LIB_PYTHON.match, _names(prefix / "lib")) if m and (prefix / "lib" / m.group(0) / "site-packages").is_dir()]
    return lib[0] if len(lib) == 1 else None


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _read(path: Path, limit: int = 64 * 1024) -> str:
    """The start of a small text file; "" when it is missing, unreadable or not a regular file."""
    try:
        return read_regular(str(path), limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def site_packages(prefix: Path, version: str) -> list[Path]:
    """The site-packages folders of an environment."""
    major_minor = ".".join(version.split(".")[:2])
    candidates = [
        prefix / "Lib" / "site-packages",
        prefix / "lib" / f"python{major_minor}" / "site-packages",
        prefix / "lib" / f"python{major_minor}" / "dist-packages",
        prefix / "lib" / f"python{major_minor}t" / "site-packages",
    ]
    return [c for c in candidates if c.is_dir()]


def distributions(folders: Iterable[Path]) -> dict[str, str]:
    """Canonical distribution name → version, first folder wins (as on sys.path)."""
    found: dict[str, str] = {}
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            parsed = _parse_dist_folder(entry)
            if parsed and parsed[0] not in found:
                found[parsed[0]] = parsed[1]
    return found


def _parse_dist_folder(entry: os.DirEntry) -> Optional[tuple[str, str]]:
    name = entry.name
    for suffix in (".dist-info", ".egg-info"):
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            parts = stem.split("-")
            if len(parts) >= 2 and parts[1]:
                return canonicalize_name(parts[0]), parts[1]
            return _from_metadata(Path(entry.path))
    return None


def _from_metadata(folder: Path) -> Optional[tuple[str, str]]:
    for filename in ("METADATA", "PKG-INFO"):
        headers = {}
        for line in _read(folder / filename).splitlines():
            if not line.strip():
                break
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        if "name" in headers and "version" in headers:
            return canonicalize_name(headers["name"]), headers["version"]
    return None
