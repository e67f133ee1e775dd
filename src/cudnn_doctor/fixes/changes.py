"""What a fix does, as data: the planners return these; the install layer carries them out in one transaction.

A change never touches the machine by itself. `MoveFile` with no `dest` moves the file into the
doctor's quarantine folder of the transaction (`<state>/quarantine/<txid>/…`), where `rollback`
finds it; `MoveTree` moves every file below a folder (and removes the folders it empties).
"""

from __future__ import annotations

from typing import Any, Optional, Union

from cudnn_doctor.record import Record


class MoveFile(Record):
    src: str
    dest: Optional[str] = None  # None: the transaction's quarantine folder

    def describe(self) -> str:
        return f"move     {self.src} → {self.dest or 'quarantine'}"


class MoveTree(Record):
    src: str
    dest: Optional[str] = None  # None: the transaction's quarantine folder

    def describe(self) -> str:
        return f"move     {self.src}{'/' if '/' in self.src else chr(92)}* → {self.dest or 'quarantine'}"


class CopyFile(Record):
    src: str
    dest: str

    def describe(self) -> str:
        return f"copy     {self.src} → {self.dest}"


class SetPersistentEnv(Record):
    scope: str  # user | system (the Windows registry)
    name: str
    value: Optional[str]  # None removes the variable
    old: Optional[str] = None  # what the planner saw, for the printed plan

    def describe(self) -> str:
        return (
            f"env      {self.scope} {self.name}: {self.old if self.old is not None else '(unset)'} → "
            f"{self.value if self.value is not None else '(unset)'}"
        )


class WriteFile(Record):
    dest: str  # a file the doctor manages (~/.config/cudnn-doctor/env.sh), never a user's rc file
    text: str

    def describe(self) -> str:
        return f"write    {self.dest} ({len(self.text.encode('utf-8'))} bytes)"


class RunCommand(Record):
    argv: tuple[str, ...]
    undo: str = ""  # how it is undone (pip: reinstall the recorded versions), said in the plan
    network: bool = True

    def describe(self) -> str:
        extra = " (needs the network)" if self.network else ""
        shown = " ".join(f'"{a}"' if " " in a else a for a in self.argv)
        return f"run      {shown}{extra}" + (f"; undo: {self.undo}" if self.undo else "")


class ExtractFile(Record):
    """A file an install wrote, taken again from the archive it came from (which the install history names)."""

    archive: str  # the archive on this host, as the history records it
    dest: str
    identity: str  # "sha256:…" of what the install wrote there: the member must have exactly these bytes

    def describe(self) -> str:
        return f"extract  {self.dest} from {self.archive}"


class InstalledRelease(Record):
    """One `cudnn-doctor install` the history records, still in place: what the planners know of the history
    (the install layer reads it; planners never read the machine)."""

    id: str
    archive: str
    target: str
    version: Optional[str]
    files: tuple[tuple[str, str], ...]  # (dest, identity the install wrote)
    unusable: Optional[str] = None  # why its archive cannot give those files back: "is not on disk any more"


class ManagedExport(Record):
    """Linux: a line of the doctor's own shell file (~/.config/cudnn-doctor/env.sh) that drops folders from PATH or
    LD_LIBRARY_PATH as each new shell has it (never a frozen copy of this shell's value: later changes to the user's
    PATH survive); the user sources the file from ~/.bashrc: no rc file is ever edited."""

    file: str
    name: str  # PATH | LD_LIBRARY_PATH
    value: str  # what this process's value becomes: the plan shows it, and a test pins the shell function to it
    old: str  # the value the planner saw (this process's), for the printed plan and to merge two fixes of one variable
    drop: tuple[str, ...] = ()  # folders removed wherever they stand
    repeats: bool = False  # later copies of a folder removed (the first stays, so the search order is kept)

    def describe(self) -> str:
        what = [f"drop {', '.join(self.drop)}"] if self.drop else []
        what += ["drop later copies of a folder"] if self.repeats else []
        return f"{self.name} in {self.file}: {'; '.join(what)} (here: {self.old} → {self.value})"


def _distinct(*kinds: Any) -> None:
    """Two kinds of change with equal fields are still two changes: `MoveFile(p) != MoveTree(p)`, as with the frozen
    dataclasses these were (Records load without dataclasses' import and exec on `check`'s path)."""

    def equal(self: tuple, other: object) -> bool:
        return type(self) is type(other) and tuple.__eq__(self, other)

    def unequal(self: tuple, other: object) -> bool:
        return not equal(self, other)

    def hashed(self: tuple) -> int:
        return hash((type(self).__name__, tuple(self)))

    for kind in kinds:
        kind.__eq__, kind.__ne__, kind.__hash__ = equal, unequal, hashed


_distinct(
    MoveFile, MoveTree, CopyFile, SetPersistentEnv, WriteFile, RunCommand, ExtractFile, InstalledRelease, ManagedExport
)

Change = Union[MoveFile, MoveTree, CopyFile, SetPersistentEnv, WriteFile, RunCommand, ExtractFile, ManagedExport]
