"""The kill harness (slow lane: `pytest -m slow tests/slow/test_kill_harness.py`): `fix --yes` and `rollback` run as the
real commands in a child process on real files, and the child is killed (SIGKILL, no cleanup of any kind) at a
random file operation — in the middle of writing a file or a journal record when the operation is a write. After
each kill the next `rollback` must give back the machine byte for byte: every file, link and folder.

The machine: a CUDA toolkit with a cuDNN archive unpacked whole into it (files, a soname link, a file whose bytes the
toolkit already holds, one that replaces the toolkit's own), and a stray cuDNN elsewhere that goes to quarantine.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cudnn_doctor.install import transaction
from tests.live.test_fix_containment import nested_changes, state_of

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        sys.platform == "win32" or not hasattr(os, "fork"), reason="os.fork, SIGKILL and symbolic links are POSIX"
    ),
]

TRIALS = int(os.environ.get("CUDNN_DOCTOR_KILL_TRIALS", "120"))
WRITES = ("open_write", "make_dirs", "replace", "remove", "symlink", "append", "remove_dir")


class Killing:
    """A LiveSystem that kills its own process at its `kill_at`-th write-side operation; a write (a file's block, a
    journal record) is cut in the middle first and what was written is flushed to the disk, as a power cut leaves it."""

    def __init__(self, inner: Any, kill_at: int) -> None:
        self.inner, self.kill_at, self.count = inner, kill_at, 0

    def tick(self) -> bool:
        self.count += 1
        return self.count - 1 == self.kill_at

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name not in WRITES:
            return value

        def operation(path: str, *rest: Any) -> Any:
            if name == "append" and self.tick():
                self.inner.append(path, rest[0][: len(rest[0]) // 2])
                die()
            elif name != "append" and self.tick():
                die()
            result = value(path, *rest)
            return Writer(result, self) if name == "open_write" else result

        return operation


class Writer:
    def __init__(self, inner: Any, system: Killing) -> None:
        self.inner, self.system = inner, system

    def write(self, data: bytes) -> int:
        if self.system.tick():
            self.inner.write(data[: len(data) // 2])
            self.inner._handle.flush()
            die()
        return self.inner.write(data)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *rest: Any) -> None:
        self.inner.close()


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def build(machine: Path) -> list[Any]:
    """The machine's files, and the changes `fix` plans for it (the planners' own kinds: MoveTree, MoveFile)."""
    from cudnn_doctor.fixes import MoveFile

    if machine.exists():
        shutil.rmtree(machine)
    toolkit = machine / "cuda-12.4"
    for folder in ("bin", "include", "lib64"):
        (toolkit / folder).mkdir(parents=True)
    (toolkit / "bin" / "nvcc").write_bytes(b"nvcc")
    (toolkit / "include" / "cuda.h").write_bytes(b"#define CUDA_VERSION 12040\n")
    (toolkit / "include" / "cudnn_version.h").write_bytes(
        b"#define CUDNN_MAJOR 9\n"
    )  # the same bytes as the nested one's
    (toolkit / "lib64" / "libcudnn.so.9.1.0").write_bytes(
        b"\x7fELF the toolkit's own older build"
    )  # replaced, backed up
    top = toolkit / "cudnn-linux-x86_64-9.1.0.70_cuda12-archive"
    (top / "include" / "sub").mkdir(parents=True)
    (top / "include" / "cudnn.h").write_bytes(b"/* cudnn 9.1 */" * 200)
    (top / "include" / "cudnn_version.h").write_bytes(b"#define CUDNN_MAJOR 9\n")
    (top / "include" / "sub" / "extra.h").write_bytes(b"/* extra */")
    (top / "lib").mkdir()
    (top / "lib" / "libcudnn.so.9.1.0").write_bytes(b"\x7fELF cudnn 9.1" * 500)
    os.symlink("libcudnn.so.9.1.0", top / "lib" / "libcudnn.so.9")
    (top / "LICENSE").write_bytes(b"license")
    stray = machine / "opt" / "stray" / "lib"
    stray.mkdir(parents=True)
    (stray / "libcudnn.so.8.1.1").write_bytes(b"\x7fELF stray 8.1")
    os.symlink("libcudnn.so.8.1.1", stray / "libcudnn.so.8")
    return [
        *nested_changes(toolkit, top),
        MoveFile(str(stray / "libcudnn.so.8")),
        MoveFile(str(stray / "libcudnn.so.8.1.1")),
    ]


def run_command(system: Any, argv: list[str], changes: list[Any], state: Path) -> int:
    """The real `cudnn-doctor` command line on `system`; `fix` is given its plan (the diagnosis of a live toolkit
    needs a live CUDA install: what is under test is what `fix --yes` does once it has a plan)."""
    from cudnn_doctor import cli
    from cudnn_doctor.findings import Finding, Severity
    from cudnn_doctor.fixes import FixPlan, PlannedFix

    finding = Finding("cudnn-nested-layout", Severity.ERROR, "a cuDNN archive copied whole into the toolkit", "test")
    diagnosis = SimpleNamespace(findings=[finding], facts=None, exit_code=1)
    import cudnn_doctor.diagnose
    import cudnn_doctor.fixes.applying
    import cudnn_doctor.system

    cudnn_doctor.system.open_system = lambda *a, **k: system  # type: ignore[assignment]
    cudnn_doctor.diagnose.diagnose = lambda *a, **k: diagnosis  # type: ignore[assignment]
    cudnn_doctor.fixes.applying.plan_fixes = lambda *a, **k: FixPlan((PlannedFix(finding, "safe", tuple(changes)),), ())  # type: ignore[assignment]
    os.environ["CUDNN_DOCTOR_STATE_DIR"] = str(state)
    return cli.main(argv)


def in_child(function: Any) -> int:
    """Run `function` in a forked child with its output discarded; its exit status, or -signal when it was killed."""
    pid = os.fork()
    if pid == 0:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code = function()
        except BaseException:
            code = 99
        os._exit(code if isinstance(code, int) else 0)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def next_rollbacks(state: Path) -> None:
    """The next healthy commands: `rollback` until nothing is left in place (a recovery, then the fix's undo)."""
    from cudnn_doctor.system.live import LiveSystem

    system = LiveSystem()
    for _ in range(3):
        store = transaction.Store(system, str(state))
        journal = store.journal()
        pending = [h for h in store.history() if h["state"] in ("installed", transaction.UNFINISHED)]
        if not pending and (journal is None or journal.get("state") != "in-progress"):
            return
        code = in_child(lambda: run_command(system, ["rollback"], [], state))
        assert code in (0, 1), f"the next rollback exited {code}"


def count_operations(tmp_path: Path, argv: list[str], before_fix: bool) -> int:
    """The write-side operations of one whole run of the command (counted in a child, which writes the number down)."""
    from cudnn_doctor.system.live import LiveSystem

    machine, state, note = tmp_path / "machine", tmp_path / "state", tmp_path / "count"
    shutil.rmtree(state, ignore_errors=True)
    changes = build(machine)
    if not before_fix:
        assert in_child(lambda: run_command(LiveSystem(), ["fix", "--yes", "--no-frameworks"], changes, state)) in (
            0,
            1,
        )
    counter = Killing(LiveSystem(), kill_at=-1)

    def counted() -> int:
        code = run_command(counter, argv, changes, state)
        note.write_text(str(counter.count))
        return code

    assert in_child(counted) in (0, 1)
    return int(note.read_text())


@pytest.mark.parametrize("command", ["fix", "rollback"])
def test_random_kills_of_fix_and_rollback_end_byte_identical_after_the_next_rollback(tmp_path, command, capsys):
    from cudnn_doctor.system.live import LiveSystem

    machine, state = tmp_path / "machine", tmp_path / "state"
    argv = ["fix", "--yes", "--no-frameworks"] if command == "fix" else ["rollback"]
    build(machine)
    before = state_of(machine)
    total = count_operations(tmp_path, argv, before_fix=command == "fix")
    assert total > 40
    rng = random.Random(int(os.environ.get("CUDNN_DOCTOR_KILL_SEED", "2028")))
    kills = finished = 0
    started = time.perf_counter()
    for trial in range(TRIALS):
        shutil.rmtree(state, ignore_errors=True)
        changes = build(machine)
        if command == "rollback":
            assert in_child(
                lambda changes=changes: run_command(LiveSystem(), ["fix", "--yes", "--no-frameworks"], changes, state)
            ) in (0, 1)
        point = rng.randrange(total)
        code = in_child(
            lambda point=point, changes=changes: run_command(Killing(LiveSystem(), point), argv, changes, state)
        )
        if code == -signal.SIGKILL:
            kills += 1
        else:
            finished += 1
        next_rollbacks(state)
        assert state_of(machine) == before, f"{command} killed at operation {point} of {total} (trial {trial})"
        leftovers = [p for p in machine.rglob("*") if p.name.endswith(transaction.TEMP_SUFFIX)]
        assert not leftovers, f"{command} killed at operation {point}: {leftovers}"
    elapsed = time.perf_counter() - started
    assert kills >= min(100, TRIALS - 5)
    with capsys.disabled():
        print(
            f"\nkill harness, {command}: {TRIALS} trials, {kills} killed, {finished} finished, {total} operations, {elapsed:.1f} s"
        )
