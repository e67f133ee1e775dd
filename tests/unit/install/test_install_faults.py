"""The installer under faults: a failure, or a crash, at every file operation of install and rollback.

A fixture machine is installed into in memory through a System that fails its k-th write-side
operation (journal and backups in the state folder included) — once, or from then on, as a
killed process would. After each, a healthy next command must leave the toolkit byte-identical
to before the install or to the finished install, and rollback must then get back to before.
"""

from __future__ import annotations

import errno
import zipfile
from pathlib import Path
from typing import Any, Optional

import pytest

from cudnn_doctor.cli import main
from cudnn_doctor.errors import Busy, CudnnDoctorError
from cudnn_doctor.facts import ToolkitFacts
from cudnn_doctor.install import transaction
from cudnn_doctor.install.archive_info import inspect
from cudnn_doctor.install.plan import EnvChange, choose_target, make_plan
from cudnn_doctor.system.archive import Archive
from cudnn_doctor.system.fixture import FixtureSystem
from tests import archives
from tests.conftest import WINDOWS_BASE, live_install, machine

CUDA = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
TARGET = f"{CUDA}\\v11.8"
STATE = "C:\\Users\\dev\\AppData\\Local\\cudnn-doctor"
WRITES = ("open_read", "open_write", "make_dirs", "replace", "remove", "symlink", "append", "remove_dir")


class Faulty:
    """A System that fails its k-th operation: once (`crash=False`) or that one and every later one (a killed process)."""

    def __init__(
        self, inner: FixtureSystem, fail_at: Optional[int] = None, crash: bool = False, error: Optional[OSError] = None
    ) -> None:
        self.inner, self.fail_at, self.crash, self.count = inner, fail_at, crash, 0
        self.error = error or OSError(errno.EIO, "input/output error (injected)")

    def _tick(self, path: str = "") -> None:
        self.count += 1
        if self.fail_at is not None and (
            self.count - 1 == self.fail_at or (self.crash and self.count - 1 > self.fail_at)
        ):
            raise type(self.error)(self.error.errno, self.error.strerror, path)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name not in WRITES:
            return value

        def operation(path: str, *rest: Any) -> Any:
            self._tick(path)
            result = value(path, *rest)
            return _Writer(result, self, path) if name == "open_write" else result

        return operation


class _Writer:
    def __init__(self, inner: Any, system: Faulty, path: str) -> None:
        self.inner, self.system, self.path = inner, system, path

    def write(self, data: bytes) -> int:
        self.system._tick(self.path)
        return self.inner.write(data)

    def close(self) -> None:
        self.inner.close()  # what was written is there, as on a disk whose fsync or close failed
        self.system._tick(self.path)

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, kind: Any, *rest: Any) -> None:
        if kind is None:
            self.close()
        else:
            self.inner.close()  # a write failed half-way: the partial file stays


def windows_machine() -> FixtureSystem:
    """CUDA 11.8 with an older cuDNN the user copied by hand: the install replaces two files and adds the rest."""
    files = {
        f"{TARGET}\\bin\\nvcc.exe": {},
        f"{TARGET}\\include\\cuda.h": {"text": "#define CUDA_VERSION 11080\n"},
        f"{TARGET}\\lib\\x64\\cudart.lib": {},
        f"{TARGET}\\version.json": {"text": '{"cuda": {"version": "11.8.0"}}'},
        f"{TARGET}\\bin\\cudnn64_8.dll": {"text": "MZ the user's cuDNN 8.2"},
        f"{TARGET}\\include\\cudnn_version.h": {"text": archives.version_header("8.2.0.53")},
    }
    return FixtureSystem(machine(WINDOWS_BASE, files=files))


def tree(system: FixtureSystem, root: str) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for entry in system.list_dir(root) or []:
        link = system.link_target(entry.path)
        if entry.is_dir and link is None:
            state[entry.path.lower() + "\\"] = "folder"
            state.update(tree(system, entry.path))
        else:
            state[entry.path.lower()] = ("link", link) if link else system.open_read(entry.path).read()
    return state


@pytest.fixture(scope="module")
def archive_path(tmp_path_factory) -> Path:
    return archives.write_zip(
        tmp_path_factory.mktemp("a") / "cudnn-windows-x86_64-8.5.0.96_cuda11-archive.zip", archives.windows_members()
    )


def install(system: Any, path: Path, env: tuple[EnvChange, ...] = ()) -> None:
    store = transaction.Store(system, STATE)
    archive = Archive(path)
    try:
        with store.locked():
            transaction.recover(store)
            info = inspect(archive)
            plan = make_plan(system, archive, info, choose_target(system, info, ToolkitFacts(), TARGET, False), 11)
            transaction.apply(plan, archive, store, env_changes=env)
    finally:
        archive.close()


def rollback(system: Any) -> transaction.UndoReport:
    store = transaction.Store(system, STATE)
    with store.locked():
        if transaction.recover(store):
            return transaction.UndoReport([], [], [], [])
        return transaction.rollback_last(store)[1]


def installed_entries(system: FixtureSystem) -> list[dict]:
    """Installs still (even partly) in place: installed, or a rollback that did not finish."""
    return [
        h for h in transaction.Store(system, STATE).history() if h["state"] in ("installed", transaction.UNFINISHED)
    ]


def leftovers(system: FixtureSystem) -> list[str]:
    return [p for p in {**tree(system, TARGET), **tree(system, STATE)} if p.endswith(transaction.TEMP_SUFFIX)]


def count_operations(run) -> int:
    system = Faulty(windows_machine())
    run(system)
    return system.count


@pytest.mark.slow  # exhaustive: every operation, every file (the slow lane)
@pytest.mark.parametrize("crash", [False, True], ids=["fails-once", "killed"])
def test_a_fault_at_every_operation_of_install_recovers(archive_path, crash):
    before = tree(windows_machine(), TARGET)
    healthy = windows_machine()
    install(healthy, archive_path)
    installed = tree(healthy, TARGET)
    total = count_operations(lambda s: install(s, archive_path))
    assert total > 100  # every journal record, backup, staged file and rename is a fault point
    recovered = {"before": 0, "installed": 0}
    for point in range(total):
        system = windows_machine()
        with pytest.raises(CudnnDoctorError):  # a fault is always a one-line error, never a traceback
            install(Faulty(system, point, crash), archive_path)
        rollback_needed = bool(installed_entries(system))
        store = transaction.Store(system, STATE)
        with store.locked():
            transaction.recover(store)  # the next command, on a healthy machine
        now = tree(system, TARGET)
        assert now in (before, installed), f"fault point {point}"
        assert not leftovers(system), f"fault point {point}: {leftovers(system)}"
        if now == installed:
            recovered["installed"] += 1
            assert installed_entries(system), f"fault point {point}: a finished install must be in the history"
            rollback(system)
        else:
            recovered["before"] += 1
            assert not installed_entries(system) or rollback_needed
        assert tree(system, TARGET) == before, f"fault point {point}"
        install(system, archive_path)  # and the machine still takes an install
        assert tree(system, TARGET) == installed
    assert recovered["before"] > 0
    print(f"\ninstall: {total} fault points, {'killed' if crash else 'failed once'}: {recovered}")


@pytest.mark.slow  # exhaustive: every operation, every file (the slow lane)
@pytest.mark.parametrize("crash", [False, True], ids=["fails-once", "killed"])
def test_a_fault_at_every_operation_of_rollback_recovers(archive_path, crash):
    before = tree(windows_machine(), TARGET)

    def installed_machine() -> FixtureSystem:
        system = windows_machine()
        install(system, archive_path)
        return system

    total = count_operations(lambda s: (install(s.inner, archive_path), rollback(s)))
    assert total > 50
    for point in range(total):
        system = installed_machine()
        try:
            report = rollback(Faulty(system, point, crash))
            assert crash or report.failed or tree(system, TARGET) == before, f"fault point {point}"
        except CudnnDoctorError:
            pass
        if installed_entries(system):
            rollback(system)
        assert tree(system, TARGET) == before, f"fault point {point}"
        assert not leftovers(system), f"fault point {point}"
        assert not tree(system, transaction.Store(system, STATE).root + "\\backups") or installed_entries(system) == []
    print(f"\nrollback: {total} fault points recovered ({'killed' if crash else 'failed once'})")


def cli(monkeypatch, system: Any, *argv: str) -> int:
    """Run the real command line against a fixture machine (the Windows code paths, on any host)."""
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None: system)
    monkeypatch.setattr(system, "state_dir", lambda: STATE)  # the described machine's own state folder
    return main(list(argv))


def test_forgot_sudo_is_one_line_and_leaves_nothing_behind(monkeypatch, capsys, archive_path):
    """An unwritable toolkit: the rollback must not rewrite files it never changed, nor leave a temp file or a stuck journal."""
    system = windows_machine()
    before = tree(system, TARGET)

    class ReadOnlyToolkit(Faulty):
        def _tick(self, path: str = "") -> None:
            if path.lower().startswith(TARGET.lower()) and not getattr(self, "reading", False):
                raise PermissionError(errno.EACCES, "Permission denied", path)

        def open_read(self, path: str) -> Any:
            return self.inner.open_read(path)

    assert cli(monkeypatch, ReadOnlyToolkit(system), "install", str(archive_path), "--yes") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "administrator" in err and "nothing was changed" in err, err
    assert tree(system, TARGET) == before and not leftovers(system)
    assert transaction.Store(system, STATE).journal()["state"] == "rolled-back"
    assert cli(monkeypatch, system, "history") == 0
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes") in (
        0,
        1,
    )  # with rights, the next install works
    assert tree(system, TARGET) != before


def test_an_install_lock_refuses_a_second_one_and_history_only_reads(archive_path):
    system = windows_machine()
    store = transaction.Store(system, STATE)
    with store.locked(), pytest.raises(Busy, match="another cudnn-doctor install"):
        install(system, archive_path)
    install(system, archive_path)  # once released, fine


def test_rollback_leaves_files_changed_since_and_names_them(monkeypatch, capsys, archive_path):
    system = windows_machine()
    before = tree(system, TARGET)
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes") in (0, 1)
    mine = f"{TARGET}\\include\\cudnn.h"
    with system.open_write(mine) as handle:
        handle.write(b"edited by the user after the install")
    capsys.readouterr()
    assert cli(monkeypatch, system, "rollback") == 1
    err = capsys.readouterr().err
    assert mine in err and "changed since" in err
    assert system.open_read(mine).read() == b"edited by the user after the install"
    after = tree(system, TARGET)
    assert {k: v for k, v in after.items() if k != mine.lower()} == {
        k: v for k, v in before.items() if k != mine.lower()
    }


def test_rollback_with_a_missing_or_altered_backup_changes_nothing(monkeypatch, capsys, archive_path):
    for damage in ("missing", "altered"):
        system = windows_machine()
        cli(monkeypatch, system, "install", str(archive_path), "--yes")
        installed = tree(system, TARGET)
        backup = next(s["backup"] for s in installed_entries(system)[0]["steps"] if s["backup"])
        if damage == "missing":
            system.remove(backup)
        else:
            with system.open_write(backup) as handle:
                handle.write(b"something else")
        capsys.readouterr()
        assert cli(monkeypatch, system, "rollback") == 2
        err = capsys.readouterr().err
        assert f"is {damage}" in err and backup in err and len(err.strip().splitlines()) == 1
        assert tree(system, TARGET) == installed


@pytest.mark.live
@live_install
def test_rollback_removes_the_folders_the_install_created(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(tmp_path / "state"))
    target = archives.toolkit(tmp_path / "cuda-12.6")
    (target / "include" / "cuda.h").unlink()
    (target / "include").rmdir()
    before = archives.tree(target)
    path = archives.native_archive(tmp_path)
    assert main(["install", str(path), "--into", str(target), "--yes"]) in (0, 1)
    assert (target / "include" / "cudnn.h").is_file()
    assert main(["rollback"]) == 0
    assert archives.tree(target) == before and not (target / "include").exists()
    assert not (tmp_path / "state" / "backups").exists()


def test_rollback_undoes_the_persistent_environment_changes(monkeypatch, capsys, archive_path):
    persistent = {
        "user": {"Path": "%USERPROFILE%\\AppData\\Local\\Microsoft\\WindowsApps"},
        "system": {"Path": "%SystemRoot%\\system32"},
    }
    system = windows_machine()
    system.document["persistent_env"] = persistent
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes", "--set-cudnn-home") in (0, 1)
    user = system.persistent_env()["user"]
    assert user["Path"].endswith(f";{TARGET}\\bin") and user["CUDNN_HOME"] == TARGET
    system.set_persistent_env("user", "Path", user["Path"] + ";C:\\Tools")  # the user adds a folder afterwards
    assert cli(monkeypatch, system, "rollback") == 0
    user = system.persistent_env()["user"]
    assert (
        user["Path"] == "%USERPROFILE%\\AppData\\Local\\Microsoft\\WindowsApps;C:\\Tools" and "CUDNN_HOME" not in user
    )
    assert "removed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("history.json", '{"not": "a list"}'),
        ("history.json", '["a string"]'),
        ("history.json", '[{"id": 1}]'),
        ("history.json", "not json at all"),
        ("journal.jsonl", "[]\n"),
        ("journal.jsonl", '{"id": "x"}\n'),
        ("journal.jsonl", 'garbage\n{"state": "committed"}\n'),
        (
            "journal.jsonl",
            '{"id": "x", "archive": "a", "target": "t", "steps": [{"dest": "d", "kind": "add"}]}\n{"step": 7, "started": true}\n',
        ),
    ],
)
@pytest.mark.parametrize("command", ["install", "rollback", "history"])
def test_damaged_state_files_are_one_line_naming_the_file(monkeypatch, capsys, archive_path, name, content, command):
    system = windows_machine()
    path = f"{STATE}\\{name}"
    with system.open_write(path) as handle:
        handle.write(content.encode())
    argv = ["install", str(archive_path), "--yes"] if command == "install" else [command]
    assert cli(monkeypatch, system, *argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and path in err and "rename it" in err, err


def test_a_journal_line_torn_by_a_crash_is_ignored(monkeypatch, archive_path):
    system = windows_machine()
    before = tree(system, TARGET)
    with pytest.raises(CudnnDoctorError):
        install(Faulty(system, 60, crash=True), archive_path)
    system.append(f"{STATE}\\journal.jsonl", b'{"step": 3, "new": "sha256:ab')  # killed in the middle of a line
    assert cli(monkeypatch, system, "rollback") == 0
    assert tree(system, TARGET) == before


@pytest.mark.parametrize("problem", ["a file", "read-only", "full"])
def test_an_unusable_state_folder_is_one_line(monkeypatch, capsys, archive_path, problem):
    system = windows_machine()
    if problem == "a file":
        with system.open_write(STATE) as handle:
            handle.write(b"oops")

        class Broken(Faulty):
            def _tick(self, path: str = "") -> None:
                if path.lower().startswith(STATE.lower() + "\\"):
                    raise NotADirectoryError(errno.ENOTDIR, "Not a directory", path)
    else:
        error = (
            PermissionError(errno.EROFS, "Read-only file system")
            if problem == "read-only"
            else OSError(errno.ENOSPC, "No space left on device")
        )

        class Broken(Faulty):  # type: ignore[no-redef]
            def _tick(self, path: str = "") -> None:
                if path.lower().startswith(STATE.lower()) and not path.endswith(("history.json", "journal.jsonl")):
                    raise type(error)(error.errno, error.strerror, path)

    before = tree(system, TARGET)
    assert cli(monkeypatch, Broken(system), "install", str(archive_path), "--yes") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and STATE in err, err
    assert tree(system, TARGET) == before


def test_free_space_is_checked_before_writing(monkeypatch, capsys, archive_path):
    system = windows_machine()
    system.free_space = 1 << 20
    before = tree(system, TARGET)
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes") == 2
    assert "free some space" in capsys.readouterr().err
    assert tree(system, TARGET) == before and not system.exists(f"{STATE}\\journal.jsonl")


def test_the_journal_grows_linearly_with_the_number_of_files(tmp_path):
    """2,000 files cost ten times what 200 do, not a hundred (a journal rewritten per file is quadratic)."""
    written = {}
    for count in (200, 2000):
        members = {
            f"cudnn-windows-x86_64-8.9.7.29_cuda11-archive/include/cudnn_extra_{i}.h": b"/* header */"
            for i in range(count)
        }
        members.update(archives.windows_members("8.9.7.29", 11))
        path = archives.write_zip(tmp_path / f"cudnn-{count}_cuda11-archive.zip", members)
        system = Counting(windows_machine())
        install(system, path)
        written[count] = system.bytes
    assert written[2000] < 12 * written[200], written


class Counting(Faulty):
    """Counts the bytes written to the state folder."""

    bytes = 0

    def append(self, path: str, data: bytes) -> None:
        if path.startswith(STATE):
            self.bytes += len(data)
        self.inner.append(path, data)

    def open_write(self, path: str) -> Any:
        writer = self.inner.open_write(path)
        if path.startswith(STATE) and not path.startswith(f"{STATE}\\backups"):
            counter = self

            class Counted:
                def write(self, data: bytes) -> int:
                    counter.bytes += len(data)
                    return writer.write(data)

                def __enter__(self) -> Counted:
                    return self

                def __exit__(self, *exc: Any) -> None:
                    writer.close()

            return Counted()
        return writer


def test_edge_members_never_crash(tmp_path, monkeypatch, capsys):
    """A header that is a dangling link (a Windows install makes no links: refused in the plan), and an installed
    file the user cannot read, in a dry run and a real one: one line each, never a traceback."""
    members = archives.windows_members()
    top = "cudnn-windows-x86_64-8.5.0.96_cuda11-archive"
    members.pop(f"{top}/include/cudnn_version.h")
    path = archives.write_zip(tmp_path / f"{top}.zip", members)
    with zipfile.ZipFile(path, "a") as archive:
        info = zipfile.ZipInfo(f"{top}/include/cudnn_version.h")
        info.create_system, info.external_attr = 3, 0o120777 << 16
        archive.writestr(info, "missing.h")
    system = windows_machine()
    assert cli(monkeypatch, system, "install", str(path), "--dry-run") == 2
    err = capsys.readouterr().err
    assert "refusing link" in err and "makes no links" in err and len(err.strip().splitlines()) == 1
    locked = windows_machine()
    locked.document["files"][f"{TARGET}\\bin\\cudnn64_8.dll"]["readable"] = False
    locked = FixtureSystem(locked.document)
    for argv in (["--dry-run"], ["--yes"]):
        assert cli(monkeypatch, locked, "install", str(path), *argv) == 2
        err = capsys.readouterr().err
        assert "cannot read" in err and "cudnn64_8.dll" in err and len(err.strip().splitlines()) == 1


def test_history_entry_is_written_before_the_journal_commits(archive_path):
    """A kill between the two leaves an install that rollback knows: recovery keeps it, rollback undoes it."""
    before = tree(windows_machine(), TARGET)
    healthy = Faulty(windows_machine())
    install(healthy, archive_path)
    commit_point = healthy.count - 1  # the last operation is the journal's commit record
    system = windows_machine()
    with pytest.raises(CudnnDoctorError):
        install(Faulty(system, commit_point, crash=True), archive_path)
    assert installed_entries(system) and transaction.Store(system, STATE).journal()["state"] == "in-progress"
    rollback(system)  # recovery keeps the finished install
    assert installed_entries(system)
    rollback(system)
    assert tree(system, TARGET) == before


def test_names_that_collide_on_windows_are_refused(tmp_path, monkeypatch, capsys):
    """`cudnn64_8.dll` and `CUDNN64_8.DLL` are two members of a zip but one file on Windows (and bin/a/x.dll, bin/b/x.dll one after flattening)."""
    for extra in (
        "cudnn-windows-x86_64-8.5.0.96_cuda11-archive/bin/CUDNN64_8.DLL",
        "cudnn-windows-x86_64-8.5.0.96_cuda11-archive/bin/old/cudnn64_8.dll",
    ):
        members = archives.windows_members()
        members[extra] = archives.fake_library("cudnn64_8.dll")
        path = archives.write_zip(tmp_path / "cudnn-windows-x86_64-8.5.0.96_cuda11-archive.zip", members)
        system = windows_machine()
        before = tree(system, TARGET)
        assert cli(monkeypatch, system, "install", str(path), "--yes") == 2
        err = capsys.readouterr().err
        assert "would both be installed as" in err and len(err.strip().splitlines()) == 1
        assert tree(system, TARGET) == before


def test_a_registry_that_refuses_the_path_change_is_one_line_and_undoes_the_install(monkeypatch, capsys, archive_path):
    """The environment is part of the transaction: a refused registry write undoes the files too."""
    system = windows_machine()
    system.document["persistent_env"] = {"user": {}, "system": {}}

    def refuse(scope: str, name: str, value: Optional[str], kind: Optional[str] = None) -> None:
        raise PermissionError(errno.EACCES, "Access is denied")

    monkeypatch.setattr(system, "set_persistent_env", refuse)
    assert cli(monkeypatch, system, "install", str(archive_path), "--yes") == 2
    err = capsys.readouterr().err
    assert (
        len(err.strip().splitlines()) == 1
        and "could not set user Path in the registry (Access is denied)" in err
        and "every file was restored" in err
    )
    monkeypatch.undo()
    assert tree(system, TARGET) == tree(windows_machine(), TARGET) and system.persistent_env()["user"] == {}
    assert not installed_entries(system)
