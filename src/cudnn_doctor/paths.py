"""Path rules of the *target* machine, independent of the host the doctor runs on.

A Windows fixture replayed on Linux must still treat `C:\\Windows\\system32` and
`c:/WINDOWS/System32/` as the same folder, so every path operation goes through one of
these two rule sets, built on `ntpath` and `posixpath` (which work on any host).
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from types import ModuleType
from typing import Mapping, Optional, Sequence

from cudnn_doctor.record import Record


class PathRules(Record):
    """How paths behave on one OS: separators, case, the PATH list separator."""

    os: str

    @property
    def _mod(self) -> ModuleType:
        return ntpath if self.windows else posixpath

    @property
    def windows(self) -> bool:
        return self.os == "windows"

    @property
    def sep(self) -> str:
        return "\\" if self.windows else "/"

    @property
    def list_sep(self) -> str:
        """The separator of PATH-like variables."""
        return ";" if self.windows else ":"

    def norm(self, path: str) -> str:
        """Canonical spelling: one separator style, no `..`, no trailing separator."""
        if not path:
            return path
        normed = self._mod.normpath(path)
        if self.windows and len(normed) == 2 and normed[1] == ":":
            normed += "\\"
        return normed

    def key(self, path: str) -> str:
        """A dictionary key: equal for paths the target OS considers the same."""
        normed = self.norm(path)
        return normed.casefold() if self.windows else normed

    def same(self, a: str, b: str) -> bool:
        return self.key(a) == self.key(b)

    def join(self, *parts: str) -> str:
        return self.norm(self._mod.join(*parts))

    def inside(self, path: str, root: str) -> bool:
        """`path` is `root` or lies below it (compared as the target OS compares names)."""
        child, parent = self.key(path), self.key(root)
        return child == parent or child.startswith(parent.rstrip(self.sep) + self.sep)

    def dirname(self, path: str) -> str:
        return self._mod.dirname(self.norm(path))

    def basename(self, path: str) -> str:
        return self._mod.basename(self.norm(path))

    def is_abs(self, path: str) -> bool:
        if self.windows:
            drive, rest = ntpath.splitdrive(path)
            return bool(drive) and rest[:1] in ("\\", "/")
        return path.startswith("/")

    def split_list(self, value: str) -> list[str]:
        """The entries of a PATH-like value, in order, empty entries kept as ''."""
        if not value:
            return []
        return [entry.strip().strip('"') if self.windows else entry for entry in value.split(self.list_sep)]

    def name_key(self, name: str) -> str:
        """Compare file names: case-insensitive on Windows."""
        return name.casefold() if self.windows else name


_PERCENT_VAR = r"%([^%]+)%"


def prepend_ld_library_path(folders: Sequence[str]) -> str:
    """The shell line that puts `folders` first on LD_LIBRARY_PATH and keeps the old value after them only when it is
    set:
    `FOLDER:$LD_LIBRARY_PATH` with the variable unset leaves an empty entry, which the loader reads as the current
    folder."""
    return f"export LD_LIBRARY_PATH={':'.join(folders)}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"


def expand_percent(value: str, scope: dict[str, str]) -> str:
    """Expand Windows `%NAME%` references the way a REG_EXPAND_SZ value is expanded."""
    return re.sub(_PERCENT_VAR, lambda m: scope.get(m.group(1).upper(), m.group(0)), value)


def site_packages_of(rules: PathRules, executable: str, version: str) -> list[str]:
    """Where an interpreter's distributions live (`Lib\\site-packages` on Windows, `lib/pythonX.Y/site-packages` and
    `dist-packages` elsewhere), from its path and version alone: checks name folders a pip install will create."""
    folder = rules.dirname(executable)
    prefix = rules.dirname(folder) if rules.basename(folder).lower() in ("bin", "scripts") else folder
    if rules.windows:
        return [rules.join(prefix, "Lib", "site-packages")]
    major_minor = ".".join(version.split(".")[:2])
    return [rules.join(prefix, "lib", f"python{major_minor}", name) for name in ("site-packages", "dist-packages")]


MANAGED_ENV_MARKER = "# Managed by cudnn-doctor"  # the first line of a file the doctor owns and rewrites whole


def managed_env_file(env: Mapping[str, str]) -> Optional[str]:
    """Linux: the shell file `fix` writes the cleaned PATH-like variables to, `$XDG_CONFIG_HOME/cudnn-doctor/env.sh`
    (an absolute XDG_CONFIG_HOME only, as the XDG spec says) else `~/.config/cudnn-doctor/env.sh`; None without a
    HOME."""
    config = env.get("XDG_CONFIG_HOME") or ""
    if not config.startswith("/"):
        home = env.get("HOME") or ""
        if not home.startswith("/"):
            return None
        config = posixpath.join(home, ".config")
    return posixpath.normpath(posixpath.join(config, "cudnn-doctor", "env.sh"))


def tilde(path: str, env: Mapping[str, str]) -> str:
    """`/home/u/.config/x` → `~/.config/x`, as a user types it in a shell file."""
    home = (env.get("HOME") or "").rstrip("/")
    return "~" + path[len(home) :] if home and (path == home or path.startswith(home + "/")) else path
