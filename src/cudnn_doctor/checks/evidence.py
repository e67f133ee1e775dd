"""The typed evidence of the rules whose fix planner reads it: what a check saw, by field, not by dict key.

A rule names its type (`evidence=` in checks/rules.py); its check builds one by keyword and its planner in
`fixes/planners.py` reads the fields. JSON shows each as an object of its fields (findings.Evidence says how).
"""

from __future__ import annotations

from typing import Optional

from cudnn_doctor.record import Record


class ShadowedCopies(Record):
    """cudnn-shadowed: the library a framework loads, every copy of it in search order, and the one that wins."""

    name: str
    copies: tuple[str, ...]
    used: str
    off_path: Optional[str] = None  # the copy beside the library that asked, which its search does not reach


class SystemFolderCopy(Record):
    """cudnn-in-system-dir: the cuDNN files found in a system folder."""

    files: tuple[str, ...]


class NestedCopy(Record):
    """cudnn-nested-layout: where the release is, the archive's top folder it sits in, and the toolkit it was copied
    into."""

    folder: str
    top: str
    toolkit: str


class MissingHeaders(Record):
    """cudnn-header-missing: the toolkit's include folder and the headers it lacks."""

    include: str
    missing: tuple[str, ...]


class MissingImportLibraries(Record):
    """cudnn-import-lib-missing: the toolkit's lib\\x64, which has no cudnn*.lib."""

    folder: str


class MissingFolders(Record):
    """path-missing-dir: the entries that name folders that do not exist."""

    entries: tuple[str, ...]


class RepeatedEntries(Record):
    """path-duplicate-entries: the search-path variable and its later copies of an entry."""

    variable: str
    entries: tuple[str, ...]


class UnreadVariable(Record):
    """env-var-ineffective: a variable nothing reads, with the knowledge row's source or the name it resembles."""

    variable: str
    source: Optional[str] = None
    suggestion: Optional[str] = None


class CpuBuild(Record):
    """torch-cpu-build: the interpreter and the version of its CPU-only PyTorch."""

    python: str
    torch: Optional[str]
