"""`cudnn-doctor install`: real archive layouts, transactions under faults and kill -9, hostile archives, the environment."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from cudnn_doctor.cli import main
from cudnn_doctor.errors import Busy, InputError, UsageError
from cudnn_doctor.facts import ToolkitFacts
from cudnn_doctor.install import transaction
from cudnn_doctor.install.archive_info import inspect
from cudnn_doctor.install.environment import apply_windows_changes, windows_changes
from cudnn_doctor.install.plan import choose_target, make_plan
from cudnn_doctor.system.archive import Archive
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.live import LiveSystem
from tests import archives
from tests.conftest import WINDOWS_BASE, live_install, machine

WINDOWS = sys.platform == "win32"
# The library an install of archives.native_archive() writes, as this OS names it.
LIBRARY = "bin/cudnn64_8.dll" if WINDOWS else "lib64/libcudnn.so.8.9.7"


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    folder = tmp_path / "state"
    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(folder))
    return folder


CUDA = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
STATE = "C:\\Users\\dev\\AppData\\Local\\cudnn-doctor"


def windows_machine(version: str = "11.8") -> FixtureSystem:
    """A Windows fixture machine with one CUDA toolkit; the install writes into it in memory."""
    root = f"{CUDA}\\v{version}"
    files = {
        f"{root}\\bin\\nvcc.exe": {},
        f"{root}\\include\\cuda.h": {"text": "#define CUDA_VERSION 11080\n"},
        f"{root}\\lib\\x64\\cudart.lib": {},
        f"{root}\\version.json": {"text": '{"cuda": {"version": "%s.0"}}' % version},
    }
    return FixtureSystem(machine(WINDOWS_BASE, files=files))


def fixture_tree(system: FixtureSystem, root: str) -> dict:
    """Every file below root with its bytes or link target, read through the System."""
    state = {}
    for entry in system.list_dir(root) or []:
        if entry.is_dir:
            state.update(fixture_tree(system, entry.path))
        else:
            link = system.link_target(entry.path)
            state[entry.path.lower()] = ("link", link) if link else system.open_read(entry.path).read()
    return state


def install_windows(system: FixtureSystem, archive_path: Path, target: str, after_file=None):
    """A Windows install into a fixture machine (the host is Linux: the live CLI would refuse a Windows archive)."""
    archive = Archive(archive_path)
    info = inspect(archive)
    plan = make_plan(system, archive, info, choose_target(system, info, ToolkitFacts(), target, False), 11)
    transaction.apply(plan, archive, transaction.Store(system, STATE), after_file=after_file)
    return plan


@pytest.mark.parametrize(
    ("layout", "version", "cuda"), [("cuda", "8.2.0.53", 11), ("archive", "8.5.0.96", 11), ("v9", "9.1.0.70", 12)]
)
def test_windows_layouts_land_in_bin_include_and_lib_x64(tmp_path, layout, version, cuda):
    members = archives.windows_members(version, cuda, layout)
    path = archives.write_zip(tmp_path / f"cudnn-{layout}.zip", members)
    system = windows_machine(f"{cuda}.8")
    target = f"{CUDA}\\v{cuda}.8"
    info = inspect(Archive(path))
    assert (info.version, info.os) == (".".join(version.split(".")[:3]), "windows")
    assert info.cuda_major == (
        cuda if layout != "cuda" else None
    )  # an old `cuda/` zip with its name changed says nothing
    install_windows(system, path, target)
    major = version.split(".")[0]
    front = members[next(m for m in members if m.endswith(f"cudnn64_{major}.dll"))]
    assert system.open_read(f"{target}\\bin\\cudnn64_{major}.dll").read() == front
    assert system.is_file(f"{target}\\include\\cudnn_version.h") and system.is_file(f"{target}\\lib\\x64\\cudnn.lib")
    files = fixture_tree(system, target)
    assert not any(name.endswith(("license", ".cudnn-doctor-tmp")) for name in files)


@pytest.mark.live
@pytest.mark.skipif(WINDOWS, reason="a Linux archive: Windows refuses it (test_refusals)")
def test_linux_tar_xz_keeps_symlink_chains_and_checksums(tmp_path, capsys):
    path = archives.linux_tar(tmp_path / "cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz")
    target = archives.toolkit(tmp_path / "cuda-12.6")
    assert main(["install", str(path), "--into", str(target), "--yes"]) in (0, 1)
    lib = target / "lib64"
    assert (
        os.readlink(lib / "libcudnn.so") == "libcudnn.so.8"
        and os.readlink(lib / "libcudnn.so.8") == "libcudnn.so.8.9.7"
    )
    with tarfile.open(path) as archive:
        real = archive.extractfile("cudnn-linux-x86_64-8.9.7.29_cuda12-archive/lib/libcudnn_ops_infer.so.8.9.7").read()
    assert (lib / "libcudnn_ops_infer.so.8.9.7").read_bytes() == real
    out = capsys.readouterr().out
    assert "Installed" in out and "LD_LIBRARY_PATH" in out


def _two_releases(tmp_path):
    """A toolkit and two archives of one release: the same names, new bytes."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return (
        archives.toolkit(tmp_path / "cuda-12.6"),
        archives.native_archive(tmp_path / "a", "8.9.7.29"),
        archives.native_archive(tmp_path / "b", "8.9.7.29"),
    )


@pytest.mark.live
@live_install
def test_second_install_is_a_no_op_and_rollback_returns_to_before_the_second(tmp_path, capsys):
    target, first, second = _two_releases(tmp_path)
    main(["install", str(first), "--into", str(target), "--yes"])
    after_first = archives.tree(target)
    capsys.readouterr()
    assert main(["install", str(first), "--into", str(target), "--yes"]) == 0
    assert "Nothing to do" in capsys.readouterr().out and archives.tree(target) == after_first
    main(["install", str(second), "--into", str(target), "--yes"])
    assert archives.tree(target) != after_first
    assert main(["rollback"]) == 0
    assert archives.tree(target) == after_first
    main(["history"])
    assert "rolled-back" in capsys.readouterr().out


@pytest.mark.live
@live_install
def test_rollback_says_removed_for_added_files_restored_for_replaced_ones_then_nothing_left(tmp_path, capsys):
    """Issue 31: the first install's files were added (a rollback removes them), the second's replaced them (a rollback
    restores them); once every entry is undone, a further rollback says so with exit 0 and history agrees."""
    target, first, second = _two_releases(tmp_path)
    main(["install", str(first), "--into", str(target), "--yes"])
    main(["install", str(second), "--into", str(target), "--yes"])
    capsys.readouterr()
    assert main(["rollback"]) == 0
    said = capsys.readouterr().out.splitlines()[0].rsplit(": ", 1)[-1]  # then, on Windows, the environment's sentences
    assert said.endswith(" file(s) restored.") and "removed" not in said, said
    assert main(["rollback"]) == 0
    said = capsys.readouterr().out.splitlines()[0].rsplit(": ", 1)[-1]
    assert said.endswith(" file(s) removed.") and "restored" not in said, said
    assert main(["rollback"]) == 0
    assert "Nothing left to undo: the 2 recorded install(s) and fix(es) are rolled back" in capsys.readouterr().out
    main(["history"])
    assert capsys.readouterr().out.count("rolled-back") == 2


@pytest.mark.parametrize("failing_after", [0, 1, 3, 6])
def test_a_failure_after_n_files_leaves_the_target_byte_identical(tmp_path, failing_after):
    system = windows_machine()
    target = f"{CUDA}\\v11.8"
    with system.open_write(f"{target}\\bin\\cudnn64_8.dll") as old:
        old.write(b"an older cudnn the user had")
    before = fixture_tree(system, target)
    path = archives.write_zip(tmp_path / "cudnn-8.5.0.96_cuda11-archive.zip", archives.windows_members())

    def fail(index):
        if index == failing_after:
            raise OSError("disk full (injected)")

    with pytest.raises(transaction.InstallFailed, match="every file was restored"):
        install_windows(system, path, target, after_file=fail)
    assert fixture_tree(system, target) == before
    assert transaction.Store(system, STATE).journal()["state"] == "rolled-back"


@pytest.mark.live
@live_install
def test_kill_9_mid_copy_is_rolled_back_by_the_next_run(tmp_path, state):
    """SIGKILL on POSIX; on Windows Popen.kill() is TerminateProcess, as Task Manager's End task."""
    target = archives.toolkit(tmp_path / "cuda-12.6")
    (target / LIBRARY).write_bytes(b"the user's old library")
    before = archives.tree(target)
    path = archives.native_archive(tmp_path)
    env = dict(os.environ, CUDNN_DOCTOR_STATE_DIR=str(state), CUDNN_DOCTOR_TEST_DELAY="0.3")
    child = subprocess.Popen(
        [sys.executable, "-m", "cudnn_doctor", "install", str(path), "--into", str(target), "--yes"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        journal = transaction.Store(LiveSystem(), str(state)).journal()
        if journal and sum(bool(s.get("new")) for s in journal["steps"]) >= 3:
            break
        time.sleep(0.05)
    child.kill()
    child.wait()
    store = transaction.Store(LiveSystem(), str(state))
    assert store.journal()["state"] == "in-progress" and archives.tree(target) != before
    assert main(["history"]) == 0 and archives.tree(target) != before  # history only reads
    assert main(["rollback"]) == 0
    assert archives.tree(target) == before
    assert store.journal()["state"] == "rolled-back"
    assert not (state / "backups").exists()  # an undone install's backups are not kept


def _zip_with(tmp_path, name, data=b"x", link=None):
    path = tmp_path / "hostile.zip"
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo(name)
        if link is not None:
            info.external_attr = 0o120777 << 16
            data = link.encode()
        archive.writestr(info, data)
        archive.writestr("cudnn/include/cudnn.h", b"")  # a cuDNN archive in every other way: the hostile member decides
    return path


@pytest.mark.live
@pytest.mark.parametrize(
    ("name", "link", "message"),
    [
        ("../../evil.dll", None, "climbs out"),
        ("/etc/cron.d/evil", None, "absolute path"),
        ("C:/Windows/System32/evil.dll", None, "absolute path"),
        ("cudnn/bin/escape.dll", "../../../../etc/passwd", "points outside"),
        ("cudnn/bin/abs.dll", "/etc/passwd", "absolute target"),
    ],
)
def test_hostile_members_are_refused_before_anything_is_written(tmp_path, name, link, message, capsys):
    target = archives.toolkit(tmp_path / "cuda-12.6")
    before = archives.tree(target)
    assert main(["install", str(_zip_with(tmp_path, name, link=link)), "--into", str(target), "--yes"]) == 2
    assert message in capsys.readouterr().err and archives.tree(target) == before


@pytest.mark.live
def test_zip_bomb_and_truncated_archives_are_refused(tmp_path, capsys):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("cudnn/lib/libcudnn.so.8", b"\0" * (64 * 1024 * 1024))
    with pytest.raises(InputError, match="zip bomb"):
        Archive(bomb)
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(archives.write_zip(tmp_path / "ok.zip", archives.windows_members()).read_bytes()[:5000])
    assert main(["install", str(truncated), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "corrupt or truncated" in err or "is not a .zip" in err, err


@pytest.mark.live
def test_refusals(tmp_path):
    path = archives.write_zip(tmp_path / "cudnn-8.9.7.29_cuda12-archive.zip", archives.windows_members("8.9.7.29", 12))
    info = inspect(Archive(path))
    system = windows_machine()
    foreign = (
        archives.linux_tar(tmp_path / "linux.tar.xz") if sys.platform == "win32" else path
    )  # the other OS's archive
    with pytest.raises(UsageError, match=f"{'linux' if sys.platform == 'win32' else 'windows'} archive"):
        choose_target(LiveSystem(), inspect(Archive(foreign)), ToolkitFacts(), str(tmp_path), False)
    with pytest.raises(UsageError, match="system folder"):
        choose_target(system, info, ToolkitFacts(), "C:\\Windows\\System32", True)
    with pytest.raises(UsageError, match="not a CUDA toolkit"):
        choose_target(system, info, ToolkitFacts(), "C:\\elsewhere", False)
    with pytest.raises(UsageError, match="built for CUDA 12"):
        choose_target(system, info, ToolkitFacts(), None, False)


@pytest.mark.skipif(WINDOWS, reason="a read-only folder is POSIX; Windows lets anyone add files to it")
def test_permission_denied_names_the_file_and_changes_nothing(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    target = archives.toolkit(tmp_path / "cuda-12.6")
    (target / "lib64").chmod(0o555)
    before = archives.tree(target)
    assert (
        main(["install", str(archives.linux_tar(tmp_path / "c-cuda12-archive.tar.xz")), "--into", str(target), "--yes"])
        == 2
    )
    assert "permission denied" in capsys.readouterr().err and archives.tree(target) == before


def test_windows_path_is_added_once_to_the_user_path_keeping_expand_variables():
    toolkit = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8"
    persistent = {
        "user": {"Path": "%USERPROFILE%\\AppData\\Local\\Microsoft\\WindowsApps"},
        "system": {"Path": "%SystemRoot%\\system32;%SystemRoot%"},
    }
    system = FixtureSystem(machine(WINDOWS_BASE, persistent_env=persistent))
    changes = windows_changes(system, toolkit, set_cudnn_home=True)
    apply_windows_changes(system, changes)
    assert (
        system.persistent_env()["user"]["Path"]
        == f"%USERPROFILE%\\AppData\\Local\\Microsoft\\WindowsApps;{toolkit}\\bin"
    )
    assert system.persistent_env()["user"]["CUDNN_HOME"] == toolkit
    assert system.env_writes[-1] == ("broadcast", "WM_SETTINGCHANGE", "Environment")
    assert windows_changes(system, toolkit, set_cudnn_home=True) == []  # the second time: nothing to add


def test_windows_path_already_reachable_through_a_system_variable():
    toolkit = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8"
    persistent = {"user": {}, "system": {"Path": "%CUDA_PATH%\\bin;%SystemRoot%\\system32", "CUDA_PATH": toolkit}}
    system = FixtureSystem(machine(WINDOWS_BASE, persistent_env=persistent))
    assert windows_changes(system, toolkit, set_cudnn_home=False) == []


def test_cuda_major_from_the_old_name_or_from_the_cublas_the_ops_library_loads(tmp_path):
    members = archives.windows_members("8.2.0.53", 11, "cuda")
    assert (
        inspect(Archive(archives.write_zip(tmp_path / "cudnn-11.3-windows-x64-v8.2.0.53.zip", members))).cuda_major
        == 11
    )
    members["cuda/bin/cudnn_ops_infer64_8.dll"] += b"\0cublas64_12.dll\0"
    assert inspect(Archive(archives.write_zip(tmp_path / "renamed.zip", members))).cuda_major == 12


@pytest.mark.live
def test_the_plan_names_the_release_it_replaces(tmp_path, capsys):
    target = archives.toolkit(tmp_path / "cuda-12.6")
    (target / "include" / "cudnn_version.h").write_text(archives.version_header("8.6.0.163"))
    path = archives.native_archive(tmp_path)
    assert main(["install", str(path), "--into", str(target), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "replace" in out and "of cuDNN 8.6.0 (backed up)" in out
    # the totals close the plan (issue 31): the one header replaced, the rest added, and the size to write
    total = out.strip().splitlines()[-1]
    assert (
        total.startswith("Total: ")
        and "1 to replace (backed up)" in total
        and " to add" in total
        and " MB to write" in total
    ), total
    assert "#define CUDNN_MINOR 6" in (target / "include" / "cudnn_version.h").read_text()  # a dry run changes nothing


def _installed(target: Path) -> dict:
    """The target's files but the spool folder the install is still moving its files out of."""
    return {path: data for path, data in archives.tree(target).items() if not path.startswith(transaction.SPOOL_PREFIX)}


@pytest.mark.live
@live_install
def test_one_install_at_a_time_and_history_changes_nothing_while_one_runs(tmp_path, state):
    """A second terminal: `history` only reads (it used to "recover" the install under way), install and rollback wait their turn."""
    target = archives.toolkit(tmp_path / "cuda-12.6")
    path = archives.native_archive(tmp_path)
    delay = (
        "2" if WINDOWS else "0.2"
    )  # per file: the first install must outlast three more starts of Python (slow under Wine)
    env = dict(os.environ, CUDNN_DOCTOR_STATE_DIR=str(state), CUDNN_DOCTOR_TEST_DELAY=delay)
    first = subprocess.Popen(
        [sys.executable, "-m", "cudnn_doctor", "install", str(path), "--into", str(target), "--yes"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    store = transaction.Store(LiveSystem(), str(state))
    deadline = time.time() + 30
    while time.time() < deadline and not ((journal := store.journal()) and any(s.get("new") for s in journal["steps"])):
        time.sleep(0.05)
    copying = _installed(target)
    second = [sys.executable, "-m", "cudnn_doctor"]
    history = subprocess.run([*second, "history"], env=env, capture_output=True, text=True, timeout=60)
    assert history.returncode == 0 and "is running or was interrupted" in history.stdout
    assert store.journal()["state"] == "in-progress" and set(_installed(target)) >= set(copying)
    for argv in (["install", str(path), "--into", str(target), "--yes"], ["rollback"]):
        other = subprocess.run([*second, *argv], env=env, capture_output=True, text=True, timeout=60)
        assert other.returncode == 2 and "another cudnn-doctor install or rollback is running" in other.stderr, (
            other.stderr
        )
    out, err = first.communicate(timeout=60)
    assert first.returncode in (0, 1) and "Installed" in out, err
    assert store.journal()["state"] == "committed" and (target / LIBRARY).is_file()


@pytest.mark.live
def test_the_state_lock_refuses_a_second_holder_and_is_free_again_after(tmp_path):
    """Busy, not "cannot write ...lock": under Wine a held msvcrt lock reports errno 0, which filelock took for a failure."""
    path = str(tmp_path / "lock")
    system = LiveSystem()
    with (
        system.lock(path),
        pytest.raises(Busy, match="another cudnn-doctor install or rollback is running"),
        system.lock(path),
    ):
        pass
    with system.lock(path):  # released: the next install takes it
        pass


@pytest.mark.live
@pytest.mark.skipif(not WINDOWS, reason="Windows' per-user application data")
def test_the_default_state_folder_is_local_not_roaming(monkeypatch):
    """Backups can be gigabytes: they belong in %LOCALAPPDATA%, which a roaming profile does not copy around."""
    import ntpath

    monkeypatch.delenv("CUDNN_DOCTOR_STATE_DIR")
    folder = LiveSystem().state_dir()
    assert ntpath.basename(folder) == "cudnn-doctor"
    assert ntpath.normcase(ntpath.dirname(folder)) == ntpath.normcase(os.environ["LOCALAPPDATA"]), folder
