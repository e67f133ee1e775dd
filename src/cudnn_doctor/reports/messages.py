"""The tool's own one-line messages on standard error: `cudnn-doctor: error: …`, `cudnn-doctor: warning: …`."""

from __future__ import annotations

from typing import TextIO


def error(message: str, err: TextIO) -> None:
    """One line, whatever a path or key in the message holds (its line breaks shown as \\n)."""
    err.write(f"cudnn-doctor: error: {message.replace(chr(13), chr(92) + 'r').replace(chr(10), chr(92) + 'n')}\n")


def warning(message: str, err: TextIO) -> None:
    err.write(f"cudnn-doctor: warning: {message}\n")


def note(message: str, err: TextIO) -> None:
    err.write(f"cudnn-doctor: {message}\n")
