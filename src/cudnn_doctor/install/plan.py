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
from typing import IO, Optional

from cudnn_doctor.errors import UsageError
from cudnn_doctor.facts import ToolkitFacts
from cudnn_doctor.install.archive_info import first_names, is_wheel_payload, named_info
from cudnn_doctor.lazyre import regex
from cudnn_doctor.system.archive import Archive, ArchiveInfo, Member, link_problem
from cudnn_doctor.system.interface import System
from cudnn_doctor.textenum import TextEnum
from cudnn_doctor.versions import cudnn_header_version

_INSTALLER_SUB = regex(r"^(?P<kind>bin|include|lib)/(?P<cuda>\d+)\.x/(?P<rest>.+)$")
SYSTEM_FOLDERS = ("windows/system32", "windows/syswow64")


class ActionKind(TextEnum):
    """What installing one member does at its destination."""

    ADD = "add"  # nothing is there
    REPLACE = "replace"  # another file is there: backed up, then replaced
    SAME = "same"  # the same bytes (or link) are there: nothing to do
    LINK = "link"  # a symbolic link is made


@dataclass(frozen=True)
class Action:
    member: Member
    dest: str
    kind: ActionKind
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
    target: str
    actions: tuple[Action, ...]
    env_changes: tuple[EnvChange, ...] = ()
    notes: tuple[str, ...] = field(default=())
    replaced_version: Optional[str] = None  # the cuDNN release already in the target, from its header

    @property
    def writes(self) -> list[Action]:
        return [a for a in self.actions if a.kind is not ActionKind.SAME]

    @property
    def bytes_written(self) -> int:
        return sum(a.member.size for a in self.writes if a.kind is not ActionKind.LINK)

    @property
    def bytes_backed_up(self) -> int:
        return sum(a.replaced_size or 0 for a in self.writes)


def choose_target(system: System, info: ArchiveInfo, toolkits: ToolkitFacts, into: Optional[str], force: bool) -> str:
    """The toolkit folder to install into, or a one-line refusal."""
    rules = system.paths
    if info.os and info.os != system.os:
        raise UsageError(f"{info.path.name} is a {info.os} archive; this machine runs {system.os}")
    if info.arch and info.arch != system.arch:
        raise UsageError(f"{info.path.name} holds {info.arch} libraries; this machine is {system.arch}")
    if into is not None:
        target = rules.norm(into)
        if _is_system_folder(target):
            raise UsageError(
                f"refusing to install into the system folder {target}: keep cuDNN in the CUDA toolkit folder"
            )
        toolkit = next((t for t in toolkits.toolkits if rules.same(t.root, target)), None)
        if not force and not _looks_like_toolkit(system, target):
            raise UsageError(
                f"{target} is not a CUDA toolkit folder (no bin/nvcc, include/cuda.h or version.json); use "
                f"--force to install there anyway"
            )
        if (
            toolkit is not None
            and info.cuda_major
            and toolkit.parsed_version
            and toolkit.parsed_version.release[0] != info.cuda_major
            and not force
        ):
            raise UsageError(
                f"{info.path.name} is built for CUDA {info.cuda_major}, but {target} is CUDA {toolkit.version}"
            )
        return target
    matching = [
        t
        for t in toolkits.toolkits
        if info.cuda_major is None or (t.parsed_version and t.parsed_version.release[0] == info.cuda_major)
    ]
    if not matching:
        installed = ", ".join(f"CUDA {t.version} at {t.root}" for t in toolkits.toolkits) or "no CUDA toolkit"
        built = f"is built for CUDA {info.cuda_major}" if info.cuda_major is not None else "needs a CUDA toolkit"
        raise UsageError(
            f"{info.path.name} {built}, and this machine has {installed}; install that toolkit first or pass --into DIR"
        )
    preferred = (
        [t for t in matching if t.root == toolkits.path_toolkit]
        or [t for t in matching if any(rules.same(v, t.root) for _, v in toolkits.variables)]
        or matching
    )
    return preferred[0].root


def preflight(system: System, path: Path, into: Optional[str], force: bool, toolkits: ToolkitFacts) -> None:
    """The refusals that need only the archive's name and its first members, made before it is read (a 2 GB .tar.xz
    takes minutes): not a cuDNN archive, another OS or architecture, a target that is not a toolkit, a CUDA major that
    no toolkit here (or not the one named) has."""
    if system.is_dir(str(path)):
        return  # an extracted folder: read whole, which is quick
    info = named_info(path)
    if info is None:
        names = first_names(path)
        if names is not None and not any("cudnn" in name.lower() for name in names):
            raise UsageError(
                f"{path.name} holds no cuDNN file among its first {len(names)} members: it is not a cuDNN archive"
            )
        info = ArchiveInfo(path, "", "unnamed", None, None, None, None, ())
    if info.cuda_major is None and into is None:
        return  # which toolkit fits is known once the archive is read (its libraries name their CUDA)
    choose_target(system, info, toolkits, into, force)


def _is_system_folder(path: str) -> bool:
    text = path.replace("\\", "/").lower()
    return any(part in text for part in SYSTEM_FOLDERS)


def _looks_like_toolkit(system: System, path: str) -> bool:
    rules = system.paths
    return any(
        system.exists(rules.join(path, *p.split("/")))
        for p in ("bin/nvcc", "bin/nvcc.exe", "include/cuda.h", "version.json", "version.txt", "include/cuda_runtime.h")
    )


def destination(
    system: System, info: ArchiveInfo, member: Member, target: str, cuda_major: Optional[int]
) -> Optional[str]:
    """The path a member belongs at in the toolkit, or None for files that stay out (LICENSE, other CUDA majors)."""
    rules = system.paths
    if info.layout == "wheel" and not is_wheel_payload(member.name):
        return None  # the wheel's metadata and Python files stay out of the toolkit
    if info.top and not member.name.startswith(info.top + "/"):
        return None
    rel = member.name[len(info.top) + 1 :] if info.top else member.name
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
        folder = {"bin": ("bin",), "include": ("include",), "lib": ("lib", "x64")}.get(head)
        return rules.join(target, *folder, name) if folder else None
    if head == "include":
        return rules.join(target, "include", *rest.split("/"))
    if head in ("lib", "lib64"):
        lib = "lib64" if system.is_dir(rules.join(target, "lib64")) else "lib"
        return rules.join(target, lib, *rest.split("/"))
    return None


def make_plan(system: System, archive: Archive, info: ArchiveInfo, target: str, toolkit_major: Optional[int]) -> Plan:
    """What each member does to the target; every refusal (a one-line UsageError) comes before anything is written."""
    rules = system.paths
    real_target = system.realpath(target)
    actions: list[Action] = []
    by_key: dict[str, Member] = {}
    for member in info.members:
        if member.is_dir:
            continue
        dest = destination(system, info, member, target, info.cuda_major or toolkit_major)
        if dest is None:
            continue
        key = rules.key(dest)
        if key in by_key:
            raise UsageError(
                f"{info.path.name}: {by_key[key].name!r} and {member.name!r} would both be installed as {dest}"
            )
        by_key[key] = member
        _check_destination(system, info, member, dest, target, real_target)
        link = system.link_target(dest)
        existing = system.stat(dest)
        if existing is not None and existing.is_dir and link is None:
            raise UsageError(
                f"{info.path.name}: {member.name!r} would replace the folder {dest} with a file; nothing was changed"
            )
        if existing is not None and not existing.readable and link is None:
            raise UsageError(
                f"cannot read {dest} to back it up (permission denied): run the install again with sudo / as "
                f"administrator; nothing was changed"
            )
        if member.link is not None:
            actions.append(
                Action(
                    member,
                    dest,
                    ActionKind.SAME if link == member.link else ActionKind.LINK,
                    existing.size if existing and not existing.is_dir else None,
                )
            )
        elif existing is not None or link is not None:
            same = (
                link is None
                and existing is not None
                and existing.size == member.size
                and _same_bytes(system, archive, member, dest)
            )
            actions.append(
                Action(
                    member,
                    dest,
                    ActionKind.SAME if same else ActionKind.REPLACE,
                    existing.size if existing and not existing.is_dir else None,
                )
            )
        else:
            actions.append(Action(member, dest, ActionKind.ADD))
    if not actions:
        raise UsageError(f"{info.path.name} holds no cuDNN files for this target (layout {info.layout})")
    link_dests = {rules.key(a.dest) for a in actions if a.member.link is not None}
    for action in actions:
        parent = rules.dirname(action.dest)
        while rules.inside(parent, target) and not rules.same(parent, target):
            if rules.key(parent) in link_dests:
                raise UsageError(
                    f"{info.path.name}: {action.member.name!r} would be written through the link {parent} that "
                    f"the same archive creates"
                )
            parent = rules.dirname(parent)
    return Plan(info, target, tuple(actions), replaced_version=_installed_version(system, target))


def _check_destination(
    system: System, info: ArchiveInfo, member: Member, dest: str, target: str, real_target: str
) -> None:
    """A member may land only inside the target, seen through every link already there, and a link
    it creates must point inside the target from where it lands, not from where it stood in the archive."""
    rules = system.paths
    folder = system.realpath(rules.dirname(dest))
    if not rules.inside(folder, real_target):
        raise UsageError(
            f"{info.path.name}: {member.name!r} would be written to {folder}, outside {target} (a link on the way "
            f"leads out)"
        )
    name = rules.basename(dest).lower()
    if info.os is not None and (name.endswith(".dll") if info.os == "linux" else re.search(r"\.so(\.\d+)*$", name)):
        raise UsageError(f"{info.path.name}: {member.name!r} is no {info.os} library")
    if member.link is None:
        return
    problem = link_problem(member.link)
    if problem is None:
        lands = rules.norm(rules.join(folder, *member.link.replace("\\", "/").split("/")))
        if not rules.inside(lands, real_target):
            problem = f"once installed it points to {lands}, outside {target}"
        elif (
            system.os == "windows"
        ):  # os.symlink needs a privilege most users lack, and fails half-way through the copy
            problem = (
                "a Windows install makes no links: NVIDIA's Windows archives have none, and creating one "
                "needs a privilege"
            )
    if problem is not None:
        raise UsageError(f"{info.path.name}: refusing link {member.name!r} → {member.link!r} ({problem})")


def _same_bytes(system: System, archive: Archive, member: Member, dest: str) -> bool:
    """The installed file already holds the member's bytes (its hash from the one pass over the archive);
    a file that cannot be read is a one-line refusal."""
    try:
        return sha256_of(system.open_read(dest)) == archive.digest(member)
    except PermissionError:
        raise UsageError(
            f"cannot read {dest} to back it up (permission denied): run the install again with sudo / as "
            f"administrator; nothing was changed"
        ) from None
    except IsADirectoryError:
        raise UsageError(f"{dest} is a folder; the archive has a file of that name. Nothing was changed") from None
    except OSError as error:
        raise UsageError(f"cannot read {dest} ({error.strerror or error}); nothing was changed") from None


def _installed_version(system: System, target: str) -> Optional[str]:
    for name in ("cudnn_version.h", "cudnn.h"):
        text = system.read_text(system.paths.join(target, "include", name), limit=256 * 1024)
        version = cudnn_header_version(text or "")
        if version is not None:
            return version
    return None


def sha256_of(stream: IO[bytes]) -> str:
    """The hex SHA-256 of a stream, read in blocks and then closed: the one hash of install's plan, backups and
    checks."""
    digest = hashlib.sha256()
    with stream:
        for block in iter(lambda: stream.read(4 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
