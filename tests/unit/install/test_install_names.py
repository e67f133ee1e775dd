"""The plan `install` asks the user to confirm shows every name as it is: a member name with a C1 control or a
bidi override (U+202E turns `cudnn_\u202eh.exe` into what reads as `cudnn_exe.h`) is printed with the character
escaped (`\\u202e`, `\\x85`), never raw."""

from __future__ import annotations

import io
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from cudnn_doctor.cli import main
from cudnn_doctor.reports.encoding import visible
from tests import archives

HIDDEN = ("\u202e", "\u2066", "\x85", "\x9b", "\u200f", "\u2028")


def test_visible_escapes_controls_bidi_and_undecodable_bytes_and_nothing_else():
    assert visible("cudnn_\u202eh.exe") == "cudnn_\\u202eh.exe"
    assert (
        visible("a\x85b\x9b\x7f\u2066\u2069\u200f\u2028\udce9")
        == "a\\x85b\\x9b\\x7f\\u2066\\u2069\\u200f\\u2028\\udce9"
    )
    plain = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.6\\include\\cudnn.h → café ✓ 日本 (1,024 bytes)"
    assert visible(plain) == plain


def _with_member(path: Path, name: str) -> Path:
    """The native archive of this OS with one more header named `name` beside cudnn.h."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path, "a") as archive:
            top = archive.namelist()[0].split("/")[0]
            archive.writestr(f"{top}/include/{name}", b"/* a header */\n")
        return path
    other = path.with_name("with-" + path.name)
    with tarfile.open(path) as source, tarfile.open(other, "w:xz") as target:
        top = source.getnames()[0].split("/")[0]
        for info in source.getmembers():
            target.addfile(info, source.extractfile(info) if info.isfile() else None)
        extra = tarfile.TarInfo(f"{top}/include/{name}")
        data = b"/* a header */\n"
        extra.size = len(data)
        target.addfile(extra, io.BytesIO(data))
    return other


@pytest.mark.live
def test_the_plan_shows_a_member_name_with_bidi_and_c1_characters_escaped(tmp_path, capsys):
    """Before, the name went to the terminal raw: U+202E reversed the rest of the line the user confirms."""
    target = archives.toolkit(tmp_path / "cuda-12.6")
    name = "cudnn_x\u202eh.exe\x85\x9b\u2066\u200f.h"
    path = _with_member(archives.native_archive(tmp_path), name)
    assert main(["install", str(path), "--into", str(target), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert not [c for c in HIDDEN if c in out], out
    assert "cudnn_x\\u202eh.exe\\x85\\x9b\\u2066\\u200f.h" in out
    assert sys.platform == "win32" or not (target / "include" / name).exists()  # a dry run
