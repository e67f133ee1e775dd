"""Every command with a closed or broken stdout or stderr (a `pythonw`, service or scheduler launch, `| head -c1`):
no traceback, and a sensible exit code — the command's own where the stream is closed or only stderr fails, 0
where the reader of stdout left (`| head`).

Each command runs in a child interpreter whose `sys.excepthook` and `sys.unraisablehook` write to a file, so that
a traceback shows even when the stream it would have gone to is the one that is closed.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from cudnn_doctor.cli import main
from tests.archives import linux_tar, toolkit
from tests.conftest import GALLERY

WINDOWS = sys.platform == "win32"
FIXTURE = GALLERY / "linux-driver470-torch231-cu121.yaml"

# The child: its hooks record any uncaught exception (and the interpreter's "Exception ignored" at exit), and on
# Windows it closes the named stream itself, as `pythonw` has none (POSIX closes it before the interpreter starts).
RUNNER = """
import os, sys, traceback
report = os.environ["STREAMS_TEST_REPORT"]
def record(text):
    with open(report, "a", encoding="utf-8") as handle:
        handle.write(text)
sys.excepthook = lambda *exc: record("".join(traceback.format_exception(*exc)))
sys.unraisablehook = lambda u: record(f"unraisable {u.exc_type.__name__}: {u.exc_value} in {u.object!r}\\n")
closed = os.environ.get("STREAMS_TEST_CLOSE")
if closed:
    os.close(int(closed))
    setattr(sys, ("stdin", "stdout", "stderr")[int(closed)], None)
from cudnn_doctor.cli import entrypoint
sys.argv = ["cudnn-doctor", *sys.argv[1:]]
entrypoint()
"""

COMMANDS = {
    "check": ["check", "--fixture", str(FIXTURE)],
    "plan": ["plan", "--fixture", str(FIXTURE)],
    "explain": ["explain", "--all"],
    "which": ["which", "libcudnn.so.9", "--fixture", str(FIXTURE)],
    "verify": ["verify", "--quick", "--cpu-only", "--no-history"],
    "snapshot": ["snapshot", "--no-frameworks"],
    "fleet": ["fleet", "--from", "{fleet}"],
    "install": ["install", "{archive}", "--into", "{toolkit}", "--dry-run"],
    "history": ["history"],
    "fix": ["fix", "--dry-run", "--fixture", str(FIXTURE)],
    "run": [
        "run",
        "--",
        sys.executable,
        "-c",
        "import sys; print('CUDNN_STATUS_NOT_INITIALIZED', file=sys.stderr); sys.exit(3)",
    ],
    "usage-error": ["check", "--no-such-option"],
}
MODES = ["stdout-closed", "stdout-broken", "stderr-closed", "stderr-broken"]


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("streams")
    fleet = root / "fleet"
    fleet.mkdir()
    for name in ("linux-driver470-torch231-cu121.yaml", "linux-healthy-torch241-pip-nvidia-wheels.yaml"):
        shutil.copy(GALLERY / name, fleet / name)
    return {
        "fleet": str(fleet),
        "archive": str(linux_tar(root / "cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz")),
        "toolkit": str(toolkit(root / "cuda-12.6")),
        "state": str(root / "state"),
    }


def _launch(args: list[str], places: dict[str, str], tmp_path: Path, mode: Optional[str]) -> tuple[int, str, str]:
    """(exit code, what the hooks recorded, stderr where it was readable)."""
    report = tmp_path / "report.txt"
    env = dict(os.environ, STREAMS_TEST_REPORT=str(report), CUDNN_DOCTOR_STATE_DIR=places["state"])
    env.pop("STREAMS_TEST_CLOSE", None)
    command = [sys.executable, "-c", RUNNER, *(a.format(**places) for a in args)]
    options: dict[str, Any] = {"cwd": tmp_path, "env": env, "stdin": subprocess.DEVNULL, "timeout": 300}
    stream, _, how = (mode or "-").partition("-")
    fd = {"stdout": 1, "stderr": 2}.get(stream)
    err = tmp_path / "stderr.txt"
    broken: list[int] = []
    with open(err, "wb") as err_file:
        options.update(stdout=subprocess.DEVNULL, stderr=err_file)
        if how == "closed" and WINDOWS:
            env["STREAMS_TEST_CLOSE"] = str(fd)
        elif how == "closed":
            options["preexec_fn"] = lambda: os.close(fd)  # `>&-`: the interpreter starts without it
        elif how == "broken":
            reader, writer = os.pipe()
            os.close(reader)  # the reader has left before the first write: every write fails (EPIPE)
            broken.append(writer)
            options[stream] = writer
        try:
            done = subprocess.run(command, **options)
        finally:
            for writer in broken:
                os.close(writer)
    recorded = report.read_text(encoding="utf-8") if report.exists() else ""
    return done.returncode, recorded, err.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def normal_codes() -> dict[str, int]:
    return {}


@pytest.mark.live
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_closed_or_broken_stream_gives_no_traceback_and_a_sensible_exit_code(
    name: str, mode: str, places: dict[str, str], normal_codes: dict[str, int], tmp_path: Path
) -> None:
    if name not in normal_codes:  # the command's own code, with both streams open
        normal = tmp_path / "normal"
        normal.mkdir()
        code, recorded, _ = _launch(COMMANDS[name], places, normal, None)
        assert not recorded, recorded
        normal_codes[name] = code
    expected = normal_codes[name]
    code, recorded, stderr = _launch(COMMANDS[name], places, tmp_path, mode)
    assert not recorded, f"{name} with {mode}: {recorded}"
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    if mode == "stdout-broken":
        assert code in (0, expected), (code, stderr)  # the reader left: 0, or the command's own code if it never wrote
    else:
        assert code == expected, (code, stderr)


class _ReaderGoneOnWindows:
    """A stdout as Windows' C runtime gives it once the pipe's reader has left: EINVAL, not EPIPE."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        raise OSError(errno.EINVAL, "Invalid argument")

    def flush(self) -> None:
        pass


def test_einval_on_a_windows_stdout_is_a_reader_that_left(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", _ReaderGoneOnWindows())
    monkeypatch.setattr(sys, "platform", "win32")
    assert main(["explain", "--all"]) == 0  # as `| head` on POSIX: no "cannot write to standard output", exit 2
    assert capsys.readouterr().err == ""
