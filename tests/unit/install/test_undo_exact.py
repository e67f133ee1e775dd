"""Undo that is exact: a fix's step is undone from where its bytes are now (the destination, the source, the
backup), every intermediate state of a rollback is one the next rollback finishes, the summary counts what was
done, and a journal record torn by a full disk never blocks a later command.

Fixture machines (in memory, Windows paths on any host) through `Faulty`, which fails the k-th file operation
once or, as a kill does, from then on; the killed runs here go through every operation of a fix's rollback and
of the recovery of a killed fix.
"""

from __future__ import annotations

import copy
import errno
from typing import Any

import pytest

from cudnn_doctor.cli import main
from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.errors import CudnnDoctorError
from cudnn_doctor.fixes import plan_fixes
from cudnn_doctor.install import transaction
from cudnn_doctor.install.fix import expand
from cudnn_doctor.system.fixture import FixtureSystem
from tests.unit.fixes.test_fix import (
    TK3,
    WIN_STATE,
    OtherVolume,
    fix,
    fixed_entries,
    nested_machine,
    rollback,
    snapshot,
    system32_machine,
)
from tests.unit.install.test_install_faults import Faulty

TOP = f"{TK3}\\cuda"


def nested_over(content: str) -> FixtureSystem:
    """The nested v11.3 machine whose toolkit bin already holds a cudnn64_8.dll: the same bytes as the nested one's
    ("same"), or the user's other build ("other"), which the fix backs up and rollback must give back."""
    system = nested_machine()
    text = "MZ cudnn 8.2" if content == "same" else "MZ the user's own cudnn64_8.dll"
    document = system.document
    document["files"][f"{TK3}\\bin\\cudnn64_8.dll"] = {"text": text, "version": "8.2.1.32", "machine": "x64"}
    return FixtureSystem(document)


MAKERS = {
    "nested-same-bytes": lambda: nested_over("same"),
    "nested-other-bytes": lambda: nested_over("other"),
    "system32": system32_machine,
    "system32-other-volume": lambda: OtherVolume(
        system32_machine().document
    ),  # each move a checked copy, then a delete
}


def test_a_move_onto_the_same_bytes_is_moved_back_and_counted():
    """Moving top\\bin\\cudnn64_8.dll onto a toolkit file with the same bytes: the rollback must still move it home
    (it was "keep", and the nested file stayed missing while the summary said everything was restored)."""
    system = nested_over("same")
    before = snapshot(system, WIN_STATE)
    fix(system, WIN_STATE)
    assert system.stat(f"{TOP}\\bin\\cudnn64_8.dll") is None
    report = rollback(system, WIN_STATE)
    assert report.complete, report.summary()
    assert snapshot(system, WIN_STATE) == before
    assert f"{TOP}\\bin\\cudnn64_8.dll" in report.restored
    moves = [s for s in fixed_entries_all(system) if s.get("kind") == "move"]
    assert len(report.restored) == len(moves) + sum(1 for s in fixed_entries_all(system) if s.get("kind") == "rmdir")


def fixed_entries_all(system: Any) -> list[dict]:
    return [s for h in transaction.Store(system, WIN_STATE).history() for s in h["steps"]]


class KillAfterMoveHome(Faulty):
    """A rollback killed right after it put the first file home, before it restored what that file's destination held."""

    def __init__(self, inner: FixtureSystem) -> None:
        super().__init__(inner)
        self.dead = False

    def _tick(self, path: str = "") -> None:
        if self.dead:
            raise OSError(errno.EIO, "killed", path)

    def replace(self, source: str, target: str) -> None:
        self._tick(source)
        self.inner.replace(source, target)
        if self.paths.same(target, f"{TOP}\\bin\\cudnn64_8.dll"):
            self.dead = True


def test_a_rollback_killed_between_the_move_home_and_the_backup_is_finished_by_the_next():
    system = nested_over("other")
    before = snapshot(system, WIN_STATE)
    fix(system, WIN_STATE)
    try:
        rollback(KillAfterMoveHome(system), WIN_STATE)
    except CudnnDoctorError:
        pass
    assert system.stat(f"{TOP}\\bin\\cudnn64_8.dll") is not None  # home, and the toolkit's own file not yet back
    report = rollback(system, WIN_STATE)
    assert report.complete and not report.changed, report.summary()
    assert snapshot(system, WIN_STATE) == before
    assert system.open_read(f"{TK3}\\bin\\cudnn64_8.dll").read() == b"MZ the user's own cudnn64_8.dll"


def finish(system: Any) -> None:
    """The next healthy commands: rollbacks until no fix is in place (at most three)."""
    for _ in range(3):
        if not fixed_entries(system, WIN_STATE) and not _in_progress(system):
            return
        rollback(system, WIN_STATE)


def _in_progress(system: Any) -> bool:
    journal = transaction.Store(system, WIN_STATE).journal()
    return journal is not None and journal.get("state") == "in-progress"


def planned(make: Any) -> tuple[Any, list[transaction.FixStep]]:
    """A machine's snapshot before, and the steps of its fix (planned once: applying them is what is under test)."""
    system = make()
    diagnosis = diagnose(system, with_frameworks=False)
    plan = plan_fixes(diagnosis.findings, diagnosis.facts)
    return snapshot(system, WIN_STATE), expand(
        system, plan.changes, transaction.Store(system, WIN_STATE).quarantine_path(TXID)
    ).steps


def apply_steps(system: Any, steps: list[transaction.FixStep]) -> None:
    """What `fix --yes` does once the plan is printed: recovery, then the transaction, holding the lock."""
    store = transaction.Store(system, WIN_STATE)
    with store.locked():
        transaction.recover(store)
        transaction.apply_fix(steps, store, TXID, "fix: test", "folder")


TXID = "20261205-000000-abcdef"


@pytest.mark.parametrize("name", list(MAKERS))
def test_a_kill_during_a_fixs_rollback_is_finished_by_the_next(name):
    """Killed at sampled operations (every one for the small System32 fix, every seventh for the nested ones); the
    slow lane fails every operation, once and for good."""
    rollback_faults(MAKERS[name], crash=True, stride=1 if name.startswith("system32") else 7)


@pytest.mark.slow
@pytest.mark.parametrize("crash", [False, True], ids=["fails-once", "killed"])
@pytest.mark.parametrize("name", list(MAKERS))
def test_a_fault_at_every_operation_of_a_fixs_rollback_is_finished_by_the_next(name, crash):
    rollback_faults(MAKERS[name], crash, stride=1)


def rollback_faults(make: Any, crash: bool, stride: int) -> int:
    """Fix, then a rollback failing at every `stride`-th file operation, then healthy rollbacks: the machine as before."""
    before, steps = planned(make)
    fixed = make()
    apply_steps(fixed, steps)
    counting = Faulty(copy.deepcopy(fixed))
    rollback(counting, WIN_STATE)
    total = counting.count
    assert total > 10
    for point in range(0, total, stride):
        system = copy.deepcopy(fixed)
        try:
            rollback(Faulty(system, point, crash), WIN_STATE)
        except CudnnDoctorError:
            pass
        finish(system)
        assert snapshot(system, WIN_STATE) == before, f"fault point {point}"
        assert not fixed_entries(system, WIN_STATE), f"fault point {point}"
    return total


def test_a_kill_during_the_recovery_of_a_killed_fix():
    """A fix killed at a point, then its recovery killed at a point, then a healthy command: the machine as before.
    Sampled here (the nested fix with a backup: every 16th fix point, every 3rd recovery point); the slow lane takes
    every pair on every machine."""
    assert recovery_kills(MAKERS["nested-other-bytes"], fix_stride=16, stride=3) > 10


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MAKERS))
def test_kills_of_the_recovery_of_a_killed_fix(name):
    """Every pair of kill points for the System32 fixes; for the nested ones (about 60 × 90 pairs on a fixture
    machine) every second fix point against every second recovery point, the offset alternating."""
    small = name.startswith("system32")
    recovery_kills(MAKERS[name], fix_stride=1 if small else 2, stride=1 if small else 2)


def recovery_kills(make: Any, fix_stride: int, stride: int) -> int:
    before, steps = planned(make)
    counting = Faulty(make())
    apply_steps(counting, steps)
    runs = 0
    for fix_point in range(0, counting.count, fix_stride):
        killed = make()
        with pytest.raises(CudnnDoctorError):
            apply_steps(Faulty(killed, fix_point, crash=True), steps)
        probe = Faulty(copy.deepcopy(killed))
        store = transaction.Store(probe, WIN_STATE)
        with store.locked():
            transaction.recover(store)
        for point in range(fix_point % stride, probe.count, stride):
            system = copy.deepcopy(killed)
            store = transaction.Store(Faulty(system, point, crash=True), WIN_STATE)
            try:
                with store.locked():
                    transaction.recover(store)
            except CudnnDoctorError:
                pass
            finish(system)
            assert snapshot(system, WIN_STATE) == before, f"fix killed at {fix_point}, recovery at {point}"
            runs += 1
    return runs


# A journal record torn by a full disk ------------------------------------------------------------------------------


class FullDisk(Faulty):
    """The state disk fills during the `at`-th append to the journal: half the record is written, then ENOSPC; the
    disk is free again afterwards (`once`), or every later write fails too (a kill while appending)."""

    def __init__(self, inner: FixtureSystem, at: int, once: bool = True) -> None:
        super().__init__(inner)
        self.at, self.once, self.appends, self.dead = at, once, 0, False

    def _tick(self, path: str = "") -> None:
        if self.dead:
            raise OSError(errno.EIO, "killed", path)

    def append(self, path: str, data: bytes) -> None:
        self._tick(path)
        if path.endswith("journal.jsonl"):
            self.appends += 1
            if self.appends == self.at:
                self.inner.append(path, data[: len(data) // 2])
                self.dead = not self.once
                raise OSError(errno.ENOSPC, "No space left on device", path)
        self.inner.append(path, data)


def cli(monkeypatch, system: Any, *argv: str) -> int:
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    monkeypatch.setattr(system, "state_dir", lambda: WIN_STATE)  # the described machine's own state folder
    return main(list(argv))


@pytest.mark.parametrize("once", [True, False], ids=["disk-full-then-freed", "killed-mid-append"])
@pytest.mark.parametrize("at", [1, 2, 3])
def test_a_journal_record_torn_by_a_full_disk_never_blocks_a_later_command(monkeypatch, capsys, at, once):
    system = system32_machine()
    before = snapshot(system, WIN_STATE)
    with pytest.raises(CudnnDoctorError):
        fix(FullDisk(system, at, once), WIN_STATE)
    capsys.readouterr()
    assert cli(monkeypatch, system, "history") == 0, capsys.readouterr().err  # reads only: the torn record is skipped
    finish(system)  # recovery (a fix left in progress) appends after the torn record; a finished fix is rolled back
    assert snapshot(system, WIN_STATE) == before
    for argv in (["history"], ["fix", "--yes", "--no-frameworks"], ["rollback"], ["history"]):
        code = cli(monkeypatch, system, *argv)
        err = capsys.readouterr().err
        assert code in (0, 1) and "damaged" not in err, (argv, err)
    assert snapshot(system, WIN_STATE) == before


def test_a_torn_record_in_the_middle_of_the_journal_is_skipped_with_a_warning(monkeypatch, capsys):
    system = system32_machine()
    fix(system, WIN_STATE)
    journal = f"{WIN_STATE}\\journal.jsonl"
    lines = system.open_read(journal).read().split(b"\n")
    torn = b"\n".join([*lines[:2], lines[2][: len(lines[2]) // 2] + lines[3], *lines[4:]])  # record 3 cut, 4 glued on
    with system.open_write(journal) as handle:
        handle.write(torn)
    store = transaction.Store(system, WIN_STATE)
    assert store.journal()["state"] == "committed"
    assert any("torn" in w for w in store.warnings)
    capsys.readouterr()
    assert cli(monkeypatch, system, "rollback") == 0
    assert "torn" in capsys.readouterr().err


def test_a_record_torn_after_its_first_byte_is_still_a_torn_record():
    system = system32_machine()
    fix(system, WIN_STATE)
    journal = f"{WIN_STATE}\\journal.jsonl"
    lines = system.open_read(journal).read().split(b"\n")
    whole = transaction.Store(system, WIN_STATE).journal()
    with system.open_write(journal) as handle:
        handle.write(
            b"\n".join([*lines[:2], b"{" + lines[2], *lines[3:]])
        )  # one byte of a record, then the next glued on
    store = transaction.Store(system, WIN_STATE)
    assert store.journal() == whole and store.warnings  # the glued record is kept
