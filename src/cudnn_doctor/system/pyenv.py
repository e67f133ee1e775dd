"""Reading an interpreter's version and installed distributions from files, without running it.

Used by LiveSystem. Distribution names and versions come from `*.dist-info` folder names
(`{name}-{version}.dist-info`, as the wheel spec writes them) with the METADATA headers as a
fallback, so reading an environment of 500 packages costs one directory listing.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Iterable, Optional

from cudnn_doctor.versions import canonical_name as canonicalize_name

_PYVENV_VERSION = re.compile(r"^\s*version(?:_info)?\s*=\s*(\d+\.\d+(?:\.\d+)?)", re.MULTILINE)
_CONDA_PYTHON = re.compile(r"^python-(\d+\.\d+\.\d+)-")


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


def version_of(executable: Path, prefix: Path) -> Optional[str]:
    """From pyvenv.cfg, conda-meta, or (last resort) by asking the interpreter."""
    cfg = prefix / "pyvenv.cfg"
    if cfg.is_file():
        match = _PYVENV_VERSION.search(cfg.read_text(encoding="utf-8", errors="replace"))
        if match:
            return match.group(1)
    meta = prefix / "conda-meta"
    if meta.is_dir():
        for entry in os.scandir(meta):
            match = _CONDA_PYTHON.match(entry.name)
            if match:
                return match.group(1)
    try:
        result = subprocess.run(
            [str(executable), "-c", "import platform; print(platform.python_version())"],
            capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() or None


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
        try:
            with open(folder / filename, encoding="utf-8", errors="replace") as handle:
                headers = {}
                for line in handle:
                    if not line.strip():
                        break
                    key, _, value = line.partition(":")
                    headers[key.strip().lower()] = value.strip()
        except OSError:
            continue
        if "name" in headers and "version" in headers:
            return canonicalize_name(headers["name"]), headers["version"]
    return None
