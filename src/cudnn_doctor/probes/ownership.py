"""Which package manager package owns a library file (Linux: dpkg's file lists, rpm where present).

A library is found under its soname (`libcudnn.so.8`), which is usually a link to the real file
(`libcudnn.so.8.9.7`); a package may list either one, and the link itself may come from
`ldconfig` or `update-alternatives` rather than from the package. So the path found, every link
along its chain, and the file the chain ends at are all looked up: any one listed makes the
library the package's. Folder links count too: on a merged /usr a package lists
/lib/x86_64-linux-gnu/libz.so.1 and the loader finds /usr/lib/x86_64-linux-gnu/libz.so.1, so
both sides are compared in their folders' real locations. The lists are read lazily, only when a
question is asked.
"""

from __future__ import annotations

from typing import Callable, Optional

from cudnn_doctor.facts import PackageOwner
from cudnn_doctor.system.interface import Files, System

DPKG_INFO = "/var/lib/dpkg/info"
_MAX_HOPS = 40  # the kernel's limit on links followed (ELOOP)


class PackageOwnership:
    """path → owning package; `wanted` picks the dpkg lists worth reading by package name (a system has tens of
    thousands of listed files)."""

    def __init__(self, system: System, wanted: Callable[[str], bool]) -> None:
        self.system = system
        self._wanted = wanted
        self._dpkg: Optional[dict[str, str]] = None
        self._rpm_missing = False
        self._rpm: dict[str, Optional[str]] = {}
        self._folders: dict[str, str] = {}  # folder → its real path, each resolved once

    def owner(self, path: str) -> Optional[PackageOwner]:
        """The package that lists `path`, a link on its way, or the file it resolves to; None when none does."""
        if self.system.paths.windows:
            return None
        chain = link_chain(self.system, path)
        dpkg = self._dpkg_lists()
        for candidate in chain:
            package = dpkg.get(candidate) or dpkg.get(self._canonical(candidate))
            if package:
                return PackageOwner(package, "dpkg")
        for candidate in chain:
            package = self._rpm_owner(candidate)
            if package:
                return PackageOwner(package, "rpm")
        return None

    def _dpkg_lists(self) -> dict[str, str]:
        if self._dpkg is None:
            self._dpkg = {}
            for entry in self.system.list_dir(DPKG_INFO, sizes=False) or []:
                name = self.system.paths.basename(entry.path)
                package = name[: -len(".list")]
                if not name.endswith(".list") or not self._wanted(package):
                    continue
                for line in (self.system.read_text(entry.path) or "").splitlines():
                    if line.strip():
                        self._dpkg.setdefault(line.strip(), package)
            for listed, package in list(
                self._dpkg.items()
            ):  # /lib/x86_64-linux-gnu/x as listed, /usr/lib/... where found (merged /usr)
                self._dpkg.setdefault(self._canonical(listed), package)
        return self._dpkg

    def _canonical(self, path: str) -> str:
        """`path` in its folder's real location (folder links such as /lib -> usr/lib resolved, the name itself
        kept)."""
        rules = self.system.paths
        folder = rules.dirname(path)
        if folder not in self._folders:
            self._folders[folder] = self.system.realpath(folder)
        return rules.join(self._folders[folder], rules.basename(path))

    def _rpm_owner(self, path: str) -> Optional[str]:
        """`rpm -qf PATH`: the owning package's name-version-release, when rpm is installed and knows the file."""
        if self._rpm_missing:
            return None
        if path not in self._rpm:
            result = self.system.run(["rpm", "-qf", path], timeout=10)
            if result.not_found:
                self._rpm_missing = True  # no rpm on this machine: ask nothing more
                return None
            lines = result.stdout.strip().splitlines() if result.ok else []
            self._rpm[path] = lines[0].strip() if lines and " " not in lines[0].strip() else None
        return self._rpm[path]


def link_chain(system: Files, path: str) -> list[str]:
    """`path`, each link it passes through (as absolute paths), then the real file; no repeats."""
    rules = system.paths
    chain = [rules.norm(path)]
    current = chain[0]
    for _ in range(_MAX_HOPS):
        target = system.link_target(current)
        if target is None:
            break
        current = rules.norm(target if rules.is_abs(target) else rules.join(rules.dirname(current), target))
        if current in chain:
            break  # a loop
        chain.append(current)
    real = system.realpath(path)
    if real not in chain:
        chain.append(real)
    return chain
