"""Every error the tool raises on purpose, in one place, each with the exit code it maps to.

The CLI catches `CudnnDoctorError` once and prints its message as a single line; anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations


class CudnnDoctorError(Exception):
    """Base of the tool's own errors."""

    exit_code = 2


class UsageError(CudnnDoctorError):
    """The command line asks for something that cannot be done."""


class InputError(CudnnDoctorError):
    """A file the user gave (fixture, archive) is missing, unreadable or invalid."""


class Busy(CudnnDoctorError):
    """Another cudnn-doctor process holds the install lock; nothing was changed."""


class KnowledgeError(CudnnDoctorError):
    """A knowledge data file breaks one of its invariants: a packaging bug, not a user error."""

    exit_code = 3
