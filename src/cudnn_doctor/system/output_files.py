"""The files the user asks the doctor to write on this host (`--html FILE`, `snapshot -o FILE`): said bad before the
work starts, and written whole (a temporary file beside the target, renamed over it), never half, never through a
link that is there."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, TextIO

from cudnn_doctor.errors import InputError, UsageError


def check_report_target(path: Path, option: str = "--html") -> None:
    """Say a bad report path before the diagnosis runs, not after: one line, exit 2."""
    folder = path.absolute().parent
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give a file name")
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: the folder {folder} does not exist")


def write_report(path: Path, fill: Callable[[TextIO], None], option: str = "--html") -> None:
    """A report `fill` writes, replacing whatever file is at `path`."""
    check_report_target(path, option)
    try:
        replace_whole(path, fill, ".tmp", refuse_existing=False)
    except CannotStart as error:
        raise UsageError(f"{option} {path}: cannot write in {path.absolute().parent}: {error}") from None
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot write: {error.strerror or error}") from None


def check_new_file(output: Path, force: bool) -> None:
    """A snapshot's file: not a folder, and not there already unless `force`."""
    if os.path.isdir(output) and not os.path.islink(output):
        raise UsageError(f"{output} is a folder; give a file name for the snapshot")
    if os.path.lexists(output) and not force:
        what = "a symbolic link" if os.path.islink(output) else "a file"
        raise UsageError(f"{output} is already there ({what}); pass --force to replace it")


def write_new_file(output: Path, text: str, force: bool) -> None:
    """A snapshot's file: a link at `output` is replaced, never written through; one that appeared meanwhile is
    refused."""
    check_new_file(output, force)

    def fill(stream: TextIO) -> None:
        stream.write(text)

    try:
        replace_whole(output, fill, ".tmp", refuse_existing=not force)
    except CannotStart as error:
        raise InputError(f"cannot write {output}: {error}") from None
    except OSError as error:
        raise InputError(f"cannot write {output}: {error.strerror or error}") from None


class CannotStart(OSError):
    """No temporary file could be made beside the target (the folder is not writable)."""


def replace_whole(
    path: Path, fill: Callable[[TextIO], None], suffix: str = ".tmp", refuse_existing: bool = False
) -> None:
    """`fill` writes the file's new text to a temporary file beside `path`, which is then renamed over it (made as a
    plain open() would make it, not mkstemp's 0600); `CannotStart` when no file can be made there."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=suffix)
    except OSError as error:
        raise CannotStart(error.strerror or str(error)) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            fill(stream)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)  # mkstemp makes it private; what a plain open() would have made
        if refuse_existing and os.path.lexists(path):
            raise UsageError(f"{path} appeared while the snapshot was taken; pass --force to replace it")
        os.replace(temporary, path)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)
