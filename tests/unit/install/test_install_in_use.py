"""A DLL in use (a Jupyter kernel or an IDE has cuDNN loaded) during install, rollback and recovery.

Windows will not replace or delete a loaded DLL and says "access denied" (WinError 5), as for a
missing right. The doctor must tell the two apart, name the file and the programs holding it,
refuse before touching anything, and — when a program loads a file half-way anyway — leave a
state the next command finishes, with a truthful history and nothing left behind.

The logic runs on any host against a fixture machine whose files can be held (`FixtureSystem.hold`);
the live check (CreateFile's sharing violation, the Restart Manager) runs with fake DLLs here and for
real in the Windows lane, where a child Windows Python loads the DLL the install must replace.
"""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from cudnn_doctor.cli import main
from cudnn_doctor.errors import CudnnDoctorError
from cudnn_doctor.install import transaction
from cudnn_doctor.system import winfiles
from cudnn_doctor.system.fixture import FixtureSystem
from tests import archives
from tests.conftest import WINDOWS_BASE, live_install, machine
from tests.unit.install.test_install_faults import Faulty, install, tree

CUDA = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
TARGET = f"{CUDA}\\v11.8"
STATE = "C:\\Users\\dev\\AppData\\Local\\cudnn-doctor"
BIN = f"{TARGET}\\bin"
OLD_DLLS = ("cudnn64_8.dll", "cudnn_ops_infer64_8.dll", "cudnn_cnn_infer64_8.dll")
JUPYTER = ["python.exe (pid 4242)", "Code.exe (pid 77)"]


def windows_machine() -> FixtureSystem:
    """CUDA 11.8 with cuDNN 8.2 copied in by hand: the install replaces three DLLs and the header."""
    files: dict[str, Any] = {
        f"{TARGET}\\bin\\nvcc.exe": {},
        f"{TARGET}\\include\\cuda.h": {"text": "#define CUDA_VERSION 11080\n"},
        f"{TARGET}\\lib\\x64\\cudart.lib": {},
        f"{TARGET}\\version.json": {"text": '{"cuda": {"version": "11.8.0"}}'},
        f"{TARGET}\\include\\cudnn_version.h": {"text": archives.version_header("8.2.0.53")},
    }
    files.update({f"{BIN}\\{name}": {"text": f"MZ the user's {name} of cuDNN 8.2"} for name in OLD_DLLS})
    system = FixtureSystem(machine(WINDOWS_BASE, files=files))
    system.document["persistent_env"] = {
        "user": {"Path": "%USERPROFILE%\\AppData\\Local\\Microsoft\\WindowsApps"},
        "system": {},
    }
    return system


@pytest.fixture(scope="module")
def archive_path(tmp_path_factory) -> Path:
    return archives.write_zip(
        tmp_path_factory.mktemp("a") / "cudnn-windows-x86_64-8.5.0.96_cuda11-archive.zip", archives.windows_members()
    )


def cli(monkeypatch, capsys, system: Any, *argv: str) -> tuple[int, str]:
    """The real command line against the fixture machine: (exit code, stderr)."""
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None: system)
    monkeypatch.setattr(system, "state_dir", lambda: STATE)  # the described machine's own state folder
    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().err


def leftovers(system: FixtureSystem) -> list[str]:
    return [p for p in {**tree(system, TARGET), **tree(system, STATE)} if p.endswith(transaction.TEMP_SUFFIX)]


def history_states(system: FixtureSystem) -> list[str]:
    return [entry["state"] for entry in transaction.Store(system, STATE).history()]


def journal_state(system: FixtureSystem) -> Optional[str]:
    journal = transaction.Store(system, STATE).journal()
    return journal["state"] if journal else None


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# The fixture machine simulates Windows' rules ------------------------------------------------------


def test_a_held_file_can_be_read_and_renamed_but_not_replaced_deleted_or_opened_for_writing():
    system = windows_machine()
    dll = f"{BIN}\\cudnn64_8.dll"
    system.hold(dll, JUPYTER)
    assert system.in_use(dll.upper()) == JUPYTER and system.in_use(f"{BIN}\\nvcc.exe") is None
    assert system.open_read(dll).read().startswith(b"MZ")
    with system.open_write(dll + ".new") as handle:
        handle.write(b"MZ new")
    with pytest.raises(PermissionError) as refused:
        system.replace(dll + ".new", dll)
    assert (
        refused.value.winerror == 5 and refused.value.filename2 == dll
    )  # what Windows (and Wine 8) say for a mapped image
    with pytest.raises(PermissionError):
        system.remove(dll)
    with pytest.raises(PermissionError):
        system.open_write(dll)
    system.replace(dll, dll + ".old")  # a loaded DLL can be renamed: the program keeps holding it
    assert system.in_use(dll + ".old") == JUPYTER and system.in_use(dll) is None
    linux = FixtureSystem(machine(WINDOWS_BASE, os="linux", files={"/opt/x.so": {}}))
    linux.hold("/opt/x.so", JUPYTER)
    assert linux.in_use("/opt/x.so") is None  # Linux renames over a file in use safely


# Install ---------------------------------------------------------------------------------------------


def test_install_onto_a_held_dll_is_refused_before_anything_is_written(monkeypatch, capsys, archive_path):
    system = windows_machine()
    before = tree(system, TARGET)
    system.hold(f"{BIN}\\cudnn_ops_infer64_8.dll", JUPYTER)
    code, err = cli(monkeypatch, capsys, system, "install", str(archive_path), "--yes")
    line = one_line(err)
    assert code == 2
    assert f"{BIN}\\cudnn_ops_infer64_8.dll" in line and all(p in line for p in JUPYTER), line
    assert "nothing was changed" in line and "administrator" not in line and transaction.TEMP_SUFFIX not in line
    assert tree(system, TARGET) == before and not leftovers(system)
    assert (
        journal_state(system) is None and history_states(system) == []
    )  # not even a journal: every later command works
    assert system.persistent_env()["user"]["Path"].endswith("WindowsApps")
    assert cli(monkeypatch, capsys, system, "history")[0] == 0
    system.release(f"{BIN}\\cudnn_ops_infer64_8.dll")
    assert cli(monkeypatch, capsys, system, "install", str(archive_path), "--yes")[0] in (0, 1)
    assert history_states(system) == ["installed"]


def test_when_windows_cannot_name_the_holder_the_file_is_still_named(monkeypatch, capsys, archive_path):
    """Wine's Restart Manager, or a process of another user: no names, the same advice."""
    system = windows_machine()
    system.hold(f"{BIN}\\cudnn64_8.dll", [])
    code, err = cli(monkeypatch, capsys, system, "install", str(archive_path), "--yes")
    line = one_line(err)
    assert code == 2 and f"{BIN}\\cudnn64_8.dll" in line
    assert "did not say which" in line and "Python, Jupyter and IDE" in line and "administrator" not in line


class LoadsDuring(Faulty):
    """A program loads `victim` just before the doctor touches it (after the pre-flight looked)."""

    def __init__(self, inner: FixtureSystem, victim: str, programs: list[str], when: str) -> None:
        super().__init__(inner)
        self.victim, self.programs, self.when = victim, programs, when

    def replace(self, source: str, target: str) -> None:
        if self.when == "replace" and target.lower() == self.victim.lower():
            self.inner.hold(self.victim, self.programs)
        self.inner.replace(source, target)

    def remove(self, path: str) -> None:
        if self.when == "undo" and path.lower().startswith(TARGET.lower()):
            self.inner.hold(self.victim, self.programs)
        self.inner.remove(path)


def replaced_dlls(path: Path) -> list[str]:
    """The DLLs the install replaces, in the order it writes them."""
    probe = windows_machine()
    install(probe, path)
    steps = transaction.Store(probe, STATE).history()[0]["steps"]
    return [s["dest"] for s in steps if s["old"] and s["dest"].endswith(".dll")]


def test_a_dll_loaded_half_way_through_the_install_is_undone_and_named(monkeypatch, capsys, archive_path):
    system = windows_machine()
    before = tree(system, TARGET)
    last = replaced_dlls(archive_path)[-1]  # the others are replaced by then, and must be put back
    code, err = cli(
        monkeypatch, capsys, LoadsDuring(system, last, JUPYTER[:1], "replace"), "install", str(archive_path), "--yes"
    )
    line = one_line(err)
    assert code == 2 and last in line and JUPYTER[0] in line and "every file was restored" in line, line
    assert "administrator" not in line and transaction.TEMP_SUFFIX not in line
    assert tree(system, TARGET) == before and not leftovers(system)
    assert journal_state(system) == "rolled-back" and history_states(system) == []
    assert system.persistent_env()["user"]["Path"].endswith(
        "WindowsApps"
    )  # the environment is written after the files: never reached


def test_access_denied_on_a_file_nobody_holds_stays_a_permission_problem_naming_the_file(
    monkeypatch, capsys, archive_path
):
    """A read-only or locked-down DLL refuses the rename with WinError 5 too, but opens for writing without a sharing violation."""
    system = windows_machine()
    before = tree(system, TARGET)
    dll = f"{BIN}\\cudnn64_8.dll"

    class ReadOnlyDll(Faulty):
        def replace(self, source: str, target: str) -> None:
            if target.lower() == dll.lower():
                error = PermissionError(errno.EACCES, "Access is denied", source, None, target)
                error.winerror = 5  # type: ignore[attr-defined]
                raise error
            self.inner.replace(source, target)

    code, err = cli(monkeypatch, capsys, ReadOnlyDll(system), "install", str(archive_path), "--yes")
    line = one_line(err)
    assert code == 2 and "permission denied writing " + dll in line and "administrator" in line, line
    assert transaction.TEMP_SUFFIX not in line and "in use" not in line
    assert tree(system, TARGET) == before and not leftovers(system)


# Rollback --------------------------------------------------------------------------------------------


def installed(monkeypatch, capsys, archive_path) -> FixtureSystem:
    system = windows_machine()
    assert cli(monkeypatch, capsys, system, "install", str(archive_path), "--yes", "--set-cudnn-home")[0] in (0, 1)
    return system


def test_rollback_with_a_loaded_dll_changes_nothing_and_names_it(monkeypatch, capsys, archive_path):
    before = tree(windows_machine(), TARGET)
    system = installed(monkeypatch, capsys, archive_path)
    after_install, env = tree(system, TARGET), dict(system.persistent_env()["user"])
    new_dll = f"{BIN}\\cudnn_adv_train64_8.dll"  # added by the install: rollback would delete it
    system.hold(new_dll, JUPYTER[:1])
    code, err = cli(monkeypatch, capsys, system, "rollback")
    line = one_line(err)
    assert (
        code == 2
        and new_dll in line
        and JUPYTER[0] in line
        and "nothing was changed" in line
        and "rollback` again" in line
    ), line
    assert (
        tree(system, TARGET) == after_install and system.persistent_env()["user"] == env
    )  # not a single file, nor the environment
    assert history_states(system) == ["installed"]
    system.release(new_dll)
    assert cli(monkeypatch, capsys, system, "rollback")[0] == 0
    assert tree(system, TARGET) == before and history_states(system) == ["rolled-back"] and not leftovers(system)


def test_a_dll_loaded_half_way_through_a_rollback_leaves_a_truthful_history_that_rollback_finishes(
    monkeypatch, capsys, archive_path
):
    before = tree(windows_machine(), TARGET)
    system = installed(monkeypatch, capsys, archive_path)
    victim = replaced_dlls(archive_path)[0]  # undone last (newest first): the program loads it while the undo runs
    code, err = cli(monkeypatch, capsys, LoadsDuring(system, victim, JUPYTER[:1], "undo"), "rollback")
    assert code == 1 and "Traceback" not in err
    assert victim in err and f"in use by {JUPYTER[0]}" in err and "rollback` again" in err, err
    assert history_states(system) == [transaction.UNFINISHED] and not leftovers(system)
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None: system)
    assert main(["history"]) == 0
    assert "did not finish" in capsys.readouterr().out
    code, err = cli(monkeypatch, capsys, system, "rollback")  # still loaded: refused, nothing more changes
    assert code == 2 and victim in one_line(err)
    system.release(victim)
    assert cli(monkeypatch, capsys, system, "rollback")[0] == 0
    assert tree(system, TARGET) == before and history_states(system) == ["rolled-back"]
    assert "CUDNN_HOME" not in system.persistent_env()["user"]
    assert not tree(system, f"{STATE}\\backups")


def written_dlls(system: FixtureSystem) -> list[str]:
    """The DLLs an interrupted install had written, in its order (undo puts them back newest first)."""
    steps = transaction.Store(system, STATE).journal()["steps"]
    found = [
        s["dest"]
        for s in steps
        if s["dest"].endswith(".dll") and s.get("new") and transaction.identity(system, s["dest"]) == s["new"]
    ]
    assert found, "the install must be killed after it replaced a DLL"
    return found


def test_an_interrupted_install_with_a_loaded_dll_is_one_line_and_recovers_later(monkeypatch, capsys, archive_path):
    system = windows_machine()
    before = tree(system, TARGET)
    with pytest.raises(CudnnDoctorError):
        install(Faulty(system, 60, crash=True), archive_path)  # killed half-way: the journal stays in progress
    assert journal_state(system) == "in-progress"
    held = written_dlls(system)[-1]
    system.hold(held, [])
    for argv in (["rollback"], ["install", str(archive_path), "--yes"]):
        code, err = cli(monkeypatch, capsys, system, *argv)
        line = one_line(err)
        assert code == 2 and held in line and "interrupted install" in line and "nothing was changed" in line, line
        assert journal_state(system) == "in-progress"
    assert cli(monkeypatch, capsys, system, "history")[0] == 0
    system.release(held)
    assert cli(monkeypatch, capsys, system, "rollback")[0] == 0
    assert tree(system, TARGET) == before and journal_state(system) == "rolled-back" and not leftovers(system)


def test_an_interrupted_install_whose_undo_meets_a_dll_loaded_half_way_names_it(monkeypatch, capsys, archive_path):
    system = windows_machine()
    before = tree(system, TARGET)
    with pytest.raises(CudnnDoctorError):
        install(Faulty(system, 80, crash=True), archive_path)
    victim = next(d for d in written_dlls(system) if d in replaced_dlls(archive_path))  # undone last
    code, err = cli(monkeypatch, capsys, LoadsDuring(system, victim, JUPYTER[:1], "undo"), "rollback")
    line = one_line(err)
    assert code == 2 and victim in line and JUPYTER[0] in line and "administrator" not in line, line
    assert journal_state(system) == "in-progress" and not leftovers(system)
    system.release(victim)
    assert cli(monkeypatch, capsys, system, "rollback")[0] == 0
    assert tree(system, TARGET) == before


# The live check, with fake Windows DLLs ------------------------------------------------------------


class FakeKernel32:
    """CreateFileW fails with `error` (or opens); processes have image names."""

    def __init__(self, error: Optional[int], images: Optional[dict[int, str]] = None) -> None:
        self.error, self.images, self.closed = error, images or {}, []

    def CreateFileW(self, path, access, share, security, disposition, flags, template):
        assert (
            access == winfiles.GENERIC_WRITE
            and share == winfiles.FILE_SHARE_ALL
            and disposition == winfiles.OPEN_EXISTING
        )
        return winfiles.INVALID_HANDLE_VALUE if self.error is not None else 1234

    def CloseHandle(self, handle):
        self.closed.append(handle)

    def OpenProcess(self, access, inherit, pid):
        return 9000 + pid if pid in self.images else None

    def QueryFullProcessImageNameW(self, handle, flags, buffer, size):
        buffer.value = self.images[handle - 9000]
        return 1


@pytest.mark.parametrize(("error", "held"), [(32, True), (33, True), (5, False), (None, False)])
def test_only_a_sharing_violation_means_in_use(error, held):
    kernel32 = FakeKernel32(error)
    assert winfiles.sharing_violation("C:\\x.dll", kernel32, lambda: error or 0) is held
    assert kernel32.closed == ([] if error else [1234])  # an open that succeeded is closed at once


class FakeRestartManager:
    """Lists `pids` as holders; answers ERROR_MORE_DATA first when the caller's room is too small."""

    def __init__(self, pids: list[tuple[int, str]], start: int = 0) -> None:
        self.pids, self.start, self.registered, self.ended = pids, start, None, False

    def RmStartSession(self, session, flags, key):
        session._obj.value = 7
        return self.start

    def RmRegisterResources(self, session, count, files, apps, app_list, services, service_list):
        self.registered = [files[i] for i in range(count)]
        return 0

    def RmGetList(self, session, needed, count, infos, reasons):
        needed._obj.value = len(self.pids)
        if count._obj.value < len(self.pids):
            return winfiles.ERROR_MORE_DATA
        for slot, (pid, app) in zip(infos, self.pids):
            slot.Process.dwProcessId = pid
            slot.strAppName = app
        count._obj.value = len(self.pids)
        return 0

    def RmEndSession(self, session):
        self.ended = True
        return 0


def test_the_restart_manager_names_the_holders_by_program_file():
    many = [(100 + i, f"App {i}") for i in range(12)]  # more than the first call has room for
    rm = FakeRestartManager([(4242, "Python"), (77, "Visual Studio Code"), (4242, "Python"), *many])
    found = winfiles.holders(
        ["C:\\a.dll"], rm, FakeKernel32(None, {4242: "C:\\Python39\\python.exe", 77: "C:\\VS Code\\Code.exe"})
    )
    assert (
        found[:2] == ["python.exe (pid 4242)", "Code.exe (pid 77)"] and "App 3 (pid 103)" in found and len(found) == 14
    )
    assert rm.registered == ["C:\\a.dll"] and rm.ended


def test_a_restart_manager_that_cannot_start_names_nobody():
    rm = FakeRestartManager([(4242, "Python")], start=5)
    assert winfiles.holders(["C:\\a.dll"], rm, FakeKernel32(None)) == [] and not rm.ended


# For real: a Windows Python under Wine (or Windows) holds the DLL -----------------------------------

windows_only = pytest.mark.skipif(
    sys.platform != "win32", reason="a DLL loaded by another process: Windows (the Wine lane)"
)


def a_real_dll() -> bytes:
    """A DLL any Windows Python can load: its own python3.dll (a venv's base), or _ctypes.pyd."""
    import _ctypes

    for candidate in (
        Path(sys.base_prefix) / "python3.dll",
        Path(sys.executable).parent / "python3.dll",
        Path(_ctypes.__file__),
    ):
        if candidate.is_file():
            return candidate.read_bytes()
    pytest.skip("no DLL of this Python found to load")


class Holder:
    """A child Windows Python that loads `dll` and keeps it loaded until closed."""

    def __init__(self, dll: Path) -> None:
        code = "import ctypes, sys; ctypes.WinDLL(sys.argv[1]); print('loaded', flush=True); sys.stdin.read()"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(dll)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(dll.parent.parent),
        )
        assert self.process.stdout.readline().strip() == b"loaded"

    def close(self) -> None:
        self.process.kill()
        self.process.wait(60)


def real_toolkit(tmp_path: Path) -> Path:
    target = archives.toolkit(tmp_path / "cuda-12.6", windows=True)
    return target


def native_tree(root: Path) -> dict[str, object]:
    return archives.tree(root)


def temp_files(*roots: Path) -> list[str]:
    return [str(p) for root in roots for p in root.rglob(f"*{transaction.TEMP_SUFFIX}")]


@pytest.mark.live
@windows_only
@live_install
def test_for_real_install_onto_a_loaded_dll_is_refused_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    from cudnn_doctor.system.live import LiveSystem

    state = tmp_path / "state"
    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(state))
    target = real_toolkit(tmp_path)
    dll = target / "bin" / "cudnn64_8.dll"
    dll.write_bytes(a_real_dll())
    (target / "bin" / "plain.txt").write_bytes(b"nobody holds me")
    archive = archives.native_archive(tmp_path)
    before = native_tree(target)
    holder = Holder(dll)
    try:
        live = LiveSystem()
        held = live.in_use(str(dll))
        assert held is not None and live.in_use(str(target / "bin" / "plain.txt")) is None
        capsys.readouterr()
        code = main(["install", str(archive), "--into", str(target), "--yes"])
        line = one_line(capsys.readouterr().err)
        assert code == 2 and str(dll) in line and "nothing was changed" in line and "administrator" not in line, line
        assert all(p in line for p in held) if held else "did not say which" in line
        assert native_tree(target) == before and not temp_files(target, tmp_path)
        assert not (state / "journal.jsonl").exists()
    finally:
        holder.close()
    assert LiveSystem().in_use(str(dll)) is None
    assert main(["install", str(archive), "--into", str(target), "--yes"]) in (0, 1)
    assert main(["rollback"]) == 0 and native_tree(target) == before


@pytest.mark.live
@windows_only
@live_install
def test_for_real_rollback_with_a_loaded_dll_changes_nothing(tmp_path, monkeypatch, capsys):
    state = tmp_path / "state"
    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(state))
    target = real_toolkit(tmp_path)
    (target / "bin" / "cudnn64_8.dll").write_bytes(b"MZ the user's older cuDNN")
    members = archives.windows_members("8.9.7.29", 12)
    top = "cudnn-windows-x86_64-8.9.7.29_cuda12-archive"
    members[f"{top}/bin/cudnn64_8.dll"] = a_real_dll()  # loadable, as the real one is
    members[f"{top}/bin/cudnn_ops_infer64_8.dll"] = a_real_dll()
    archive = archives.write_zip(tmp_path / f"{top}.zip", members)
    before = native_tree(target)
    assert main(["install", str(archive), "--into", str(target), "--yes"]) in (0, 1)
    installed_tree = native_tree(target)
    holders = [Holder(target / "bin" / "cudnn64_8.dll"), Holder(target / "bin" / "cudnn_ops_infer64_8.dll")]
    try:
        capsys.readouterr()
        code = main(["rollback"])
        line = one_line(capsys.readouterr().err)
        assert code == 2 and "nothing was changed" in line, line
        assert str(target / "bin" / "cudnn64_8.dll") in line and str(target / "bin" / "cudnn_ops_infer64_8.dll") in line
        assert native_tree(target) == installed_tree and not temp_files(target, tmp_path)
        main(["history"])
        assert "  installed  " in capsys.readouterr().out
    finally:
        for holder in holders:
            holder.close()
    assert main(["rollback"]) == 0
    assert native_tree(target) == before and not temp_files(target, tmp_path)


@pytest.mark.live
@pytest.mark.skipif(sys.platform == "win32", reason="on Windows the live check is the real one above")
def test_the_live_system_asks_nothing_on_linux():
    """Linux renames over a file in use safely: the live System never reports one."""
    from cudnn_doctor.system.live import LiveSystem

    assert LiveSystem().in_use(__file__) is None
