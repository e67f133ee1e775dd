"""Reading an interpreter's version and installed distributions from files, without running it.

Used by LiveSystem. Distribution names and versions come from `*.dist-info` folder names
(`{name}-{version}.dist-info`, as the wheel spec writes them) with the METADATA headers as a
fallback, so reading an environment of 500 packages costs one directory listing.

An interpreter with a `._pth` file (python.org's embeddable Windows CPython, as ComfyUI's portable
build and many Stable Diffusion bundles ship it) sees only the folders that file names, and its
`Lib\\site-packages` only when the file says `import site`: its distributions are read from those.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, Iterable, Optional

from cudnn_doctor.lazyre import regex
from cudnn_doctor.system.regular import read_regular
from cudnn_doctor.versions import canonical_name as canonicalize_name

_PYVENV_VERSION = regex(r"^\s*version(?:_info)?\s*=\s*(\d+\.\d+(?:\.\d+)?)", re.MULTILINE)
_CONDA_PYTHON = regex(r"^python-(\d+\.\d+\.\d+)-")
_LIB_PYTHON = regex(r"^python(\d+\.\d+)t?$")
_ANSWER = regex(r"^\d+\.\d+(?:\.\d+)?[a-z0-9+]*$")
# The interpreter's own DLL (python311.dll, python313t.dll), not python3.dll (the stable-ABI forwarder).
_PYTHON_DLL = regex(r"^(python(\d)(\d+)t?(?:_d)?)\.dll$", re.IGNORECASE)


def prefix_of(executable: Path) -> Path:
    """The environment folder: `prefix/bin/python` on POSIX, `prefix\\python.exe` or `prefix\\Scripts\\python.exe` on
    Windows."""
    parent = executable.parent
    if parent.name.lower() in ("bin", "scripts"):
        return parent.parent
    return parent


def kind_of(prefix: Path, executable: Optional[Path] = None) -> str:
    """conda | venv | embedded (a `._pth` file fixes its sys.path) | system."""
    if (prefix / "conda-meta").is_dir():
        return "conda"
    if (prefix / "pyvenv.cfg").is_file():
        return "venv"
    if executable is not None and pth_file(executable) is not None:
        return "embedded"
    return "system"


def pth_file(executable: Path) -> Optional[Path]:
    """The `._pth` file that replaces the interpreter's sys.path, where CPython looks for it: beside its
    DLL (`python311._pth`), then beside the executable (`python._pth`; on POSIX, from 3.11, `python3.11._pth`)."""
    folder = executable.parent
    dlls = sorted(m.group(1) for m in map(_PYTHON_DLL.match, _names(folder)) if m)
    name = executable.name
    own = name[: -len(".exe")] if name.lower().endswith(".exe") else name
    for stem in [*dlls, own]:
        candidate = folder / f"{stem}._pth"
        if candidate.is_file():
            return candidate
    return None


def read_pth(pth: Path) -> tuple[list[Path], bool]:
    """The folders a `._pth` file puts on sys.path, in order (relative lines are relative to its own
    folder), and whether it imports `site` (which adds the prefix's site-packages and reads .pth files)."""
    folders: list[Path] = []
    import_site = False
    for raw in _read(pth).lstrip("\ufeff").splitlines():
        line = raw.partition("#")[0].strip()
        if line == "import site":
            import_site = True
        elif line and not line.startswith("import "):  # CPython warns about any other import line and skips it
            folders.append(pth.parent / line)
    return folders, import_site


def search_folders(executable: Path, prefix: Path, version: str) -> list[Path]:
    """The folders whose distributions the interpreter sees: the ones its `._pth` file names (then the
    site-packages that `import site` adds), or else its prefix's site-packages."""
    pth = pth_file(executable)
    if pth is None:
        return site_packages(prefix, version)
    named, import_site = read_pth(pth)
    folders = named + (_site_added(pth.parent, version) if import_site else [])
    unique: dict[str, Path] = {}
    for folder in folders:
        if folder.is_dir():
            unique.setdefault(os.path.normcase(os.path.abspath(folder)), folder)
    return list(unique.values())


def version_of(executable: Path, prefix: Path, ask: Callable[[list[str], float], str]) -> Optional[str]:
    """From pyvenv.cfg or conda-meta; else by asking the interpreter (`ask(argv, timeout)` → its stdout), else from its
    `lib/pythonX.Y` folder."""
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
    lib = [
        m.group(1)
        for m in map(_LIB_PYTHON.match, _names(prefix / "lib"))
        if m and (prefix / "lib" / m.group(0) / "site-packages").is_dir()
    ]
    if len(lib) == 1:
        return lib[0]
    # a Windows interpreter's own DLL beside it names its version: python311.dll is 3.11
    dlls = {f"{m.group(2)}.{m.group(3)}" for m in map(_PYTHON_DLL.match, _names(executable.parent)) if m}
    return dlls.pop() if len(dlls) == 1 else None


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


def _site_added(prefix: Path, version: str) -> list[Path]:
    """What `import site` puts on sys.path for a prefix (site.getsitepackages; a `._pth` file's folder is the prefix):
    the prefix and its Lib\\site-packages on Windows, lib/pythonX.Y/site-packages elsewhere."""
    if os.name == "nt":
        return [prefix, prefix / "Lib" / "site-packages"]
    major_minor = ".".join(version.split(".")[:2])
    return [prefix / lib / f"python{major_minor}{t}" / "site-packages" for lib in ("lib", "lib64") for t in ("", "t")]


def is_site_folder(path: str) -> bool:
    """A site-packages (or Debian's dist-packages) folder, however the path ends (3.9 keeps a `._pth` line's trailing
    slash)."""
    return re.split(r"[\\/]", path.rstrip("\\/"))[-1].lower() in ("site-packages", "dist-packages")


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
