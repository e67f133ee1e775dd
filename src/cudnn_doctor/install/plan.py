"""Where each file of a cuDNN archive belongs, and whether installing it there is allowed.

The target is the installed CUDA toolkit whose major matches the archive, preferring the one
whose nvcc is first on PATH and then CUDA_PATH / CUDA_HOME; `--into` overrides. Refusals are
one-line errors (exit 2) and happen before anything is written.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from cudnn_doctor.errors import UsageError
from cudnn_doctor.facts import ToolkitFacts
from cudnn_doctor.install.archive import Archive, ArchiveInfo, Member

_INSTALLER_SUB = re.compile(r"^(?P<kind>bin|include|lib)/(?P<cuda>\d+)\.x/(?P<rest>.+)$")
SYSTEM_FOLDERS = ("windows/system32", "windows/syswow64")


@dataclass(frozen=True)
class Action:
    member: Member
    dest: Path
    kind: str  # add | replace | same | link
    replaced_size: Optional[int] = None


@dataclass(frozen=True)
class EnvChange:
    scope: str  # user | system
    name: str
    old: Optional[str]
    new: str


@dataclass(frozen=True)
class Plan:
    archive: ArchiveInfo
    target: Path
    actions: tuple[Action, ...]
    env_changes: tuple[EnvChange, ...] = ()
    notes: tuple[str, ...] = field(default=())
    replaced_version: Optional[str] = None  # the cuDNN release already in the target, from its header

    @property
    def writes(self) -> list[Action]:
        return [a for a in self.actions if a.kind != "same"]


def choose_target(info: ArchiveInfo, toolkits: ToolkitFacts, into: Optional[Path], force: bool, os_name: str, arch: str) -> Path:
    if info.os and info.os != os_name:
        raise UsageError(f"{info.path.name} is a {info.os} archive; this machine runs {os_name}")
    if info.arch and info.arch != arch:
        raise UsageError(f"{info.path.name} holds {info.arch} libraries; this machine is {arch}")
    if into is not None:
        target = into
        if _is_system_folder(target):
            raise UsageError(f"refusing to install into the system folder {target}: keep cuDNN in the CUDA toolkit folder")
        toolkit = next((t for t in toolkits.toolkits if Path(t.root) == Path(target)), None)
        if not force and not _looks_like_toolkit(target):
            raise UsageError(f"{target} is not a CUDA toolkit folder (no bin/nvcc, include/cuda.h or version.json); use --force to install there anyway")
        if toolkit is not None and info.cuda_major and toolkit.parsed_version and toolkit.parsed_version.release[0] != info.cuda_major and not force:
            raise UsageError(f"{info.path.name} is built for CUDA {info.cuda_major}, but {target} is CUDA {toolkit.version}")
        return target
    matching = [t for t in toolkits.toolkits if info.cuda_major is None or (t.parsed_version and t.parsed_version.release[0] == info.cuda_major)]
    if not matching:
        installed = ", ".join(f"CUDA {t.version} at {t.root}" for t in toolkits.toolkits) or "no CUDA toolkit"
        raise UsageError(f"{info.path.name} is built for CUDA {info.cuda_major}, and this machine has {installed}; install that toolkit first or pass --into DIR")
    preferred = [t for t in matching if t.root == toolkits.path_toolkit] or [t for t in matching if any(Path(v) == Path(t.root) for _, v in toolkits.variables)] or matching
    return Path(preferred[0].root)


def _is_system_folder(path: Path) -> bool:
    text = str(path).replace("\\", "/").lower()
    return any(part in text for part in SYSTEM_FOLDERS)


def _looks_like_toolkit(path: Path) -> bool:
    return any((path / p).exists() for p in ("bin/nvcc", "bin/nvcc.exe", "include/cuda.h", "version.json", "version.txt", "include/cuda_runtime.h"))


def destination(info: ArchiveInfo, member: Member, target: Path, cuda_major: Optional[int]) -> Optional[Path]:
    """The path a member belongs at in the toolkit, or None for files that stay out (LICENSE, other CUDA majors)."""
    rel = member.name[len(info.top) + 1:] if info.top else member.name
    installer = _INSTALLER_SUB.match(rel)
    if installer:
        if cuda_major is not None and int(installer.group("cuda")) != cuda_major:
            return None
        rel = f"{installer.group('kind')}/{installer.group('rest')}"
    head, _, rest = rel.partition("/")
    if not rest:
        return None
    if info.os == "windows":
        name = rest.rsplit("/", 1)[-1]
        if head == "bin":
            return target / "bin" / name
        if head == "include":
            return target / "include" / name
        if head == "lib":
            return target / "lib" / "x64" / name
        return None
    if head == "include":
        return target / "include" / rest
    if head in ("lib", "lib64"):
        lib = "lib64" if (target / "lib64").exists() else "lib"
        return target / lib / rest
    return None


def make_plan(archive: Archive, info: ArchiveInfo, target: Path, toolkit_major: Optional[int]) -> Plan:
    actions = []
    for member in info.members:
        if member.is_dir:
            continue
        dest = destination(info, member, target, info.cuda_major or toolkit_major)
        if dest is None:
            continue
        if member.link is not None:
            same = dest.is_symlink() and _readlink(dest) == member.link
            actions.append(Action(member, dest, "same" if same else "link"))
        elif dest.exists() or dest.is_symlink():
            same = dest.is_file() and not dest.is_symlink() and dest.stat().st_size == member.size and _sha256_file(dest) == _sha256_member(archive, member)
            actions.append(Action(member, dest, "same" if same else "replace", dest.stat().st_size if dest.exists() else None))
        else:
            actions.append(Action(member, dest, "add"))
    if not actions:
        raise UsageError(f"{info.path.name} holds no cuDNN files for this target (layout {info.layout})")
    return Plan(info, target, tuple(actions), replaced_version=_installed_version(target))


def _installed_version(target: Path) -> Optional[str]:
    for name in ("cudnn_version.h", "cudnn.h"):
        header = target / "include" / name
        if header.is_file():
            values = dict(re.findall(r"#define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d+)", header.read_text(encoding="utf-8", errors="replace")[:256 * 1024]))
            if "MAJOR" in values:
                return f"{values['MAJOR']}.{values.get('MINOR', '0')}.{values.get('PATCHLEVEL', '0')}"
    return None


def _readlink(path: Path) -> str:
    import os

    return os.readlink(path)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sha256_member(archive: Archive, member: Member) -> str:
    digest = hashlib.sha256()
    with archive.open(member) as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
