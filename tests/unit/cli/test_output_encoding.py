"""Every command's output survives any stdout encoding (issue 10): Windows gives a pipe or a file the
ANSI code page, cp1252, which has no ✓ ✗ → ←. Each command runs as `cudnn-doctor ... > file` and
`... | findstr` would on Windows (PYTHONIOENCODING=cp1252, stdout a pipe or a file): no traceback,
the ASCII spellings in place of the symbols, no mojibake; a UTF-8 stream keeps the symbols."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Optional

import pytest

from cudnn_doctor.cli import build_parser, main
from cudnn_doctor.reports.encoding import FittedStream, Fitter
from tests import archives
from tests.conftest import REPO, gallery_paths, live_install

SRC = REPO / "src"
PAGES = SRC / "cudnn_doctor" / "checks" / "pages"
UNWRITABLE = "✓✗→←≥≤"  # none of these is in cp1252
MOJIBAKE = ("â€", "â†", "âœ", "Ã", "\\u2")  # UTF-8 bytes read as cp1252, or Python's backslashreplace


def doctor(
    args: list[str], tmp_path: Path, encoding: str = "cp1252", sink: str = "pipe", env: Optional[dict] = None
) -> tuple[int, str, str]:
    """The CLI as a child process, stdout a pipe or a file of the given encoding; returns (code, stdout, stderr) decoded with it."""
    environment = dict(
        os.environ,
        PYTHONIOENCODING=encoding,
        PYTHONPATH=str(SRC),
        CUDNN_DOCTOR_STATE_DIR=str(tmp_path / "state"),
        NO_COLOR="1",
    )
    environment.pop("PYTHONUTF8", None)
    environment.update(env or {})
    command = [sys.executable, "-m", "cudnn_doctor", *args]
    if sink == "file":
        target = tmp_path / "report.txt"
        with open(target, "wb") as out:
            done = subprocess.run(command, env=environment, stdout=out, stderr=subprocess.PIPE, timeout=120)
        raw = target.read_bytes()
    else:
        done = subprocess.run(command, env=environment, capture_output=True, timeout=120)
        raw = done.stdout
    return done.returncode, raw.decode(encoding), done.stderr.decode(encoding)


def assert_fitted(out: str, err: str, json_out: bool = False) -> None:
    assert "Traceback" not in err and "Error" not in err.split(":")[0], err
    text = err if json_out else out + err  # JSON writes "\u2192" escapes, which read back to the symbol
    assert not any(c in out + err for c in UNWRITABLE), text
    assert not any(m in text for m in MOJIBAKE), text


WINDOWS_MACHINES = [p for p in gallery_paths() if p.name.startswith("win-")]


@pytest.mark.live
@pytest.mark.parametrize("path", gallery_paths(), ids=lambda p: p.stem)
def test_check_to_a_cp1252_pipe_or_file_writes_ascii_marks(tmp_path, path):
    sink = "file" if len(path.stem) % 2 else "pipe"
    code, out, err = doctor(["check", "--fixture", str(path)], tmp_path, sink=sink)
    assert code in (0, 1), err
    assert_fitted(out, err)
    assert "[OK]" in out or "[X]" in out or "[!]" in out
    if code == 1:
        assert "X error" in out
    utf8_code, utf8_out, _ = doctor(["check", "--fixture", str(path)], tmp_path, encoding="utf-8", sink=sink)
    assert utf8_code == code and ("[✓]" in utf8_out or "[✗]" in utf8_out or "[!]" in utf8_out)
    assert "[OK]" not in utf8_out  # a stream that can write the symbols keeps them


@pytest.mark.live
@pytest.mark.parametrize("path", WINDOWS_MACHINES, ids=lambda p: p.stem)
def test_check_json_to_cp1252_is_the_same_document(tmp_path, path):
    code, out, err = doctor(["check", "--fixture", str(path), "--format", "json"], tmp_path, sink="file")
    assert_fitted(out, err, json_out=True)
    report = json.loads(out)
    assert report["exit_code"] == code
    _, utf8_out, _ = doctor(["check", "--fixture", str(path), "--format", "json"], tmp_path, encoding="utf-8")
    assert json.loads(utf8_out)["findings"] == report["findings"]  # JSON escapes: nothing is lost


def _subcommands() -> list[str]:
    parser = build_parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices
    return [""] + sorted(choices)


@pytest.mark.live
@pytest.mark.parametrize("command", _subcommands())
def test_every_help_survives_cp1252(tmp_path, command):
    code, out, err = doctor([*command.split(), "--help"], tmp_path)
    assert code == 0, err
    assert_fitted(out, err)
    assert out.startswith("usage: cudnn-doctor")
    if not command:
        assert "NVIDIA driver -> CUDA -> cuDNN" in out


@pytest.mark.live
def test_which_tree_gets_ascii_arrows(tmp_path):
    path = next(p for p in WINDOWS_MACHINES if "zlibwapi-missing" in p.name)
    code, out, err = doctor(["which", "--fixture", str(path), "cudnn64_8.dll"], tmp_path, sink="file")
    assert code in (0, 1), err  # 1: something in the tree is broken
    assert_fitted(out, err)
    assert "<- used" in out and "search order:" in out


@pytest.mark.live
def test_explain_pages_get_ascii_arrows(tmp_path):
    page = next(p for p in sorted(PAGES.glob("*.md")) if "→" in p.read_text(encoding="utf-8"))
    code, out, err = doctor(["explain", page.stem], tmp_path)
    assert code == 0, err
    assert_fitted(out, err)
    assert "->" in out
    code, out, err = doctor(["explain", "--all"], tmp_path, sink="file")
    assert code == 0 and len(out.splitlines()) >= 10
    assert_fitted(out, err)


@pytest.mark.live
@live_install
def test_install_plan_install_and_history_get_ascii_arrows(tmp_path):
    target = archives.toolkit(tmp_path / "cuda-12.6")
    path = archives.native_archive(tmp_path)
    code, out, err = doctor(["history"], tmp_path)
    assert code == 0 and "Nothing recorded: no install or fix yet." in out, err
    code, out, err = doctor(["install", str(path), "--into", str(target), "--dry-run"], tmp_path)
    assert code == 0, err
    assert_fitted(out, err)
    assert f"-> {target}" in out
    code, out, err = doctor(["install", str(path), "--into", str(target), "--yes"], tmp_path, sink="file")
    assert code in (0, 1) and "Installed" in out, err
    assert_fitted(out, err)
    code, out, err = doctor(["history"], tmp_path, sink="file")
    assert code == 0, err
    assert_fitted(out, err)
    assert f"-> {target}" in out


@pytest.mark.live
def test_an_error_naming_an_unwritable_path_is_one_fitted_line(tmp_path):
    missing = tmp_path / "machine→é.yaml"
    code, out, err = doctor(["check", "--fixture", str(missing)], tmp_path, encoding="ascii")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "machine->e.yaml" in err  # no "\u2192", no "?" for a letter that has a plain form
    assert_fitted(out, err)


def test_in_process_cp1252_stdout_and_stderr_never_raise():
    """A caller's strict cp1252 TextIOWrapper (a notebook or a test harness), not the interpreter's own stdout."""
    path = next(p for p in WINDOWS_MACHINES if "zlibwapi-missing" in p.name)
    page = next(p for p in sorted(PAGES.glob("*.md")) if "→" in p.read_text(encoding="utf-8"))
    for args in (
        ["check", "--fixture", str(path)],
        ["which", "--fixture", str(path), "cudnn64_8.dll"],
        ["explain", page.stem],
        ["--help"],
    ):
        out = io.TextIOWrapper(io.BytesIO(), encoding="cp1252", errors="strict", newline="")
        err = io.TextIOWrapper(io.BytesIO(), encoding="cp1252", errors="strict", newline="")
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exit:  # --help
                code = exit.code
            assert sys.stdout is out and sys.stderr is err  # main gives the caller's streams back
        out.flush()
        err.flush()
        text, errors = out.buffer.getvalue().decode("cp1252"), err.buffer.getvalue().decode("cp1252")
        assert code in (0, 1), errors
        assert_fitted(text, errors)
        assert "->" in text or "<-" in text or "[OK]" in text


def test_fitter_spells_symbols_in_ascii_only_where_needed():
    cp1252 = Fitter(io.TextIOWrapper(io.BytesIO(), encoding="cp1252"))
    assert cp1252("[✓] driver → toolkit ← ≥ 12 …") == "[OK] driver -> toolkit <- >= 12 ..."
    assert cp1252("C:\\Users\\José\\π") == "C:\\Users\\José\\?"  # cp1252 has é; π has no plain form
    ascii_ = Fitter(io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    assert ascii_("José \udcff") == "Jose ?"  # a surrogate escape (undecodable bytes) is written as "?"
    utf8 = Fitter(io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    assert utf8("[✓] → ←") == "[✓] → ←" and utf8("x\udcff") == "x?"
    stream = FittedStream(io.TextIOWrapper(io.BytesIO(), encoding="cp1252", errors="strict"))
    stream.writelines(["✗ a → b\n", "✓\n"])
    stream.flush()
    assert stream.buffer.getvalue() == b"X a -> b\nOK\n".replace(
        b"\n", os.linesep.encode()
    )  # a text stream on Windows ends lines with CRLF
