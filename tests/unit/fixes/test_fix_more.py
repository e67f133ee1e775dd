"""`fix`, the later fixes: missing headers / import libraries from the installed archive; Linux env.sh; ONNX Runtime extras.

A fixture machine gets a real install (an archive built here, in NVIDIA's layout, installed through
the transaction), then loses its headers / import libraries; the fix extracts exactly the files the
install wrote (checked against the SHA-256 the history kept), the re-check is clean of the finding,
rollback gives back the machine byte-identical, and a fault at any operation leaves it as before or
fixed. With no history, or the archive gone, there is no automatic fix and the plan says why.

On Linux, PATH and LD_LIBRARY_PATH are cleaned in the doctor's own env.sh (sourced by a real bash
here to show a new shell is clean); ONNX Runtime's `[cuda,cudnn]` extras line is an unsafe fix.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from cudnn_doctor.cli import main
from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.errors import CudnnDoctorError, UsageError
from cudnn_doctor.facts import ToolkitFacts
from cudnn_doctor.fixes import ExtractFile, RunCommand, plan_fixes
from cudnn_doctor.install import transaction
from cudnn_doctor.install.archive_info import inspect
from cudnn_doctor.install.fix import expand, recorded_releases
from cudnn_doctor.install.plan import choose_target, make_plan
from cudnn_doctor.system.archive import Archive
from cudnn_doctor.system.fixture import FixtureSystem
from tests import archives
from tests.conftest import LINUX_BASE, WINDOWS_BASE, machine
from tests.unit.fixes.test_fix import LINUX_STATE, WIN_STATE, rollback, snapshot
from tests.unit.install.test_install_faults import Faulty

CUDA = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
WIN_TK = f"{CUDA}\\v11.8"
LINUX_TK = "/usr/local/cuda-12.4"
TXID = "20261205-000000-restor"


def windows_toolkit() -> FixtureSystem:
    files = {
        f"{WIN_TK}\\bin\\nvcc.exe": {},
        f"{WIN_TK}\\include\\cuda.h": {"text": "#define CUDA_VERSION 11080\n"},
        f"{WIN_TK}\\lib\\x64\\cudart.lib": {},
        f"{WIN_TK}\\version.json": {"text": '{"cuda": {"version": "11.8.0"}}'},
    }
    return FixtureSystem(
        machine(
            WINDOWS_BASE,
            files=files,
            env={"PATH": f"C:\\Windows\\System32;C:\\Windows;{WIN_TK}\\bin", "CUDA_PATH": WIN_TK},
        )
    )


def linux_toolkit() -> FixtureSystem:
    files = {
        f"{LINUX_TK}/bin/nvcc": {"size": 100},
        f"{LINUX_TK}/version.json": {"text": '{"cuda": {"version": "12.4.1"}}'},
        f"{LINUX_TK}/include/cuda.h": {"text": "#define CUDA_VERSION 12040\n"},
        f"{LINUX_TK}/lib64/libcudart.so.12": {"size": 100},
    }
    return FixtureSystem(
        machine(
            LINUX_BASE,
            files=files,
            env={"LD_LIBRARY_PATH": f"{LINUX_TK}/lib64", "PATH": f"{LINUX_TK}/bin:/usr/bin:/bin"},
        )
    )


def install(system: FixtureSystem, archive_path: Path, target: str, state: str) -> None:
    """What `cudnn-doctor install ARCHIVE --into TARGET` does, through the library (the host may be another OS)."""
    archive = Archive(archive_path)
    info = inspect(archive)
    plan = make_plan(system, archive, info, choose_target(system, info, ToolkitFacts(), target, False), None)
    store = transaction.Store(system, state)
    with store.locked():
        transaction.apply(plan, archive, store)
    archive.close()


def windows_case(tmp_path: Path) -> tuple[FixtureSystem, Path]:
    """cuDNN 8.5 installed by the doctor into v11.8; then its headers and import libraries were deleted."""
    path = archives.write_zip(
        tmp_path / "cudnn-windows-x86_64-8.5.0.96_cuda11-archive.zip", archives.windows_members("8.5.0.96", 11)
    )
    system = windows_toolkit()
    install(system, path, WIN_TK, WIN_STATE)
    for folder in (f"{WIN_TK}\\include", f"{WIN_TK}\\lib\\x64"):
        for entry in system.list_dir(folder) or []:
            if entry.path.lower().rsplit("\\", 1)[-1].startswith("cudnn"):
                system.remove(entry.path)
    return system, path


def linux_case(tmp_path: Path) -> tuple[FixtureSystem, Path]:
    """cuDNN 8.9.7 installed by the doctor into /usr/local/cuda-12.4; then include/cudnn.h and cudnn_version.h were deleted."""
    path = archives.linux_tar(tmp_path / "cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz")
    system = linux_toolkit()
    install(system, path, LINUX_TK, LINUX_STATE)
    for name in ("cudnn.h", "cudnn_version.h"):
        system.remove(f"{LINUX_TK}/include/{name}")
    return system, path


CASES: dict[str, tuple[Callable[[Path], tuple[FixtureSystem, Path]], str, set[str]]] = {
    "windows": (windows_case, WIN_STATE, {"cudnn-header-missing", "cudnn-import-lib-missing"}),
    "linux": (linux_case, LINUX_STATE, {"cudnn-header-missing"}),
}


def ids_of(system: Any) -> set[str]:
    return {f.id for f in diagnose(system, with_frameworks=False).findings}


def plan_of(system: Any, state: str, only: Optional[set[str]] = None):
    diagnosis = diagnose(system, with_frameworks=False)
    return plan_fixes(
        diagnosis.findings, diagnosis.facts, only, releases=recorded_releases(transaction.Store(system, state))
    )


def fix(system: Any, state: str, only: Optional[set[str]] = None) -> None:
    plan = plan_of(system, state, only)
    store = transaction.Store(system, state)
    with store.locked():
        transaction.recover(store)
        expanded = expand(system, plan.changes, store.quarantine_path(TXID))
        assert expanded.steps, "the fix plans nothing"
        transaction.apply_fix(expanded.steps, store, TXID, "fix: test", "folder")


@pytest.mark.parametrize("name", list(CASES))
def test_missing_files_come_back_from_the_installed_archive_and_rollback_restores(tmp_path, name):
    make, state, found = CASES[name]
    system, _ = make(tmp_path)
    assert found <= ids_of(system)
    before = snapshot(system, state)
    plan = plan_of(system, state)
    restored = [c for f in plan.fixes for c in f.changes]
    assert restored and all(isinstance(c, ExtractFile) for c in restored)
    fix(system, state)
    assert not found & ids_of(system), f"{name}: the re-check still finds {found & ids_of(system)}"
    rollback(system, state)
    assert snapshot(system, state) == before
    assert found <= ids_of(system)


def test_the_restored_bytes_are_the_archives_and_every_missing_header_comes_back(tmp_path):
    system, _ = windows_case(tmp_path)
    fix(system, WIN_STATE)
    members = archives.windows_members("8.5.0.96", 11)
    top = "cudnn-windows-x86_64-8.5.0.96_cuda11-archive"
    assert system.open_read(f"{WIN_TK}\\include\\cudnn_version.h").read() == members[f"{top}/include/cudnn_version.h"]
    assert (
        system.open_read(f"{WIN_TK}\\lib\\x64\\cudnn_ops_infer64_8.lib").read()
        == members[f"{top}/lib/x64/cudnn_ops_infer64_8.lib"]
    )
    assert system.exists(f"{WIN_TK}\\lib\\x64\\cudart.lib")  # the toolkit's own files are untouched


def test_only_the_missing_files_are_planned(tmp_path):
    system, _ = linux_case(tmp_path)
    plan = plan_of(system, LINUX_STATE, {"cudnn-header-missing"})
    dests = sorted(c.dest for f in plan.fixes for c in f.changes)
    assert dests == [
        f"{LINUX_TK}/include/cudnn.h",
        f"{LINUX_TK}/include/cudnn_version.h",
    ]  # the other cudnn_*.h are still there


@pytest.mark.slow  # exhaustive: every operation, every file (the slow lane)
@pytest.mark.parametrize("crash", [False, True], ids=["fails-once", "killed"])
def test_a_fault_at_every_operation_of_the_restore_leaves_the_machine_as_before_or_fixed(tmp_path, crash):
    make, state, _ = CASES["windows"]
    base, _ = make(tmp_path)

    def fresh() -> FixtureSystem:
        return copy.deepcopy(base)

    before = snapshot(fresh(), state)
    healthy = fresh()
    fix(healthy, state)
    fixed = snapshot(healthy, state)
    counter = Faulty(fresh())
    fix(counter, state)
    assert counter.count > 10
    outcomes = {"before": 0, "fixed": 0}
    for point in range(counter.count):
        system = fresh()
        try:
            fix(Faulty(system, point, crash), state)
        except CudnnDoctorError:
            pass  # one line, never a traceback
        store = transaction.Store(system, state)
        with store.locked():
            transaction.recover(store)
        now = snapshot(system, state)
        assert now in (before, fixed), f"fault point {point}"
        outcomes["fixed" if now == fixed else "before"] += 1
        if now == fixed:
            rollback(system, state)
        assert snapshot(system, state) == before, f"fault point {point}"
    assert outcomes["before"] > 0


def test_no_history_means_no_automatic_fix_and_the_plan_says_why(tmp_path):
    system, _ = windows_case(tmp_path)
    diagnosis = diagnose(system, with_frameworks=False)
    plan = plan_fixes(diagnosis.findings, diagnosis.facts, {"cudnn-header-missing"}, releases=())
    assert not plan.fixes
    assert "no install into" in plan.skipped[0].why and "history" in plan.skipped[0].why


def test_an_archive_gone_from_disk_keeps_the_manual_steps_and_says_so(tmp_path, monkeypatch, capsys):
    system, path = windows_case(tmp_path)
    path.unlink()
    plan = plan_of(system, WIN_STATE)
    assert not plan.fixes
    why = {s.finding.id: s.why for s in plan.skipped}
    assert (
        f"the archive {path} that installed cuDNN 8.5.0 into {WIN_TK} is not on disk any more"
        in why["cudnn-header-missing"]
    )
    assert "is not on disk any more" in why["cudnn-import-lib-missing"]
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    monkeypatch.setattr(system, "state_dir", lambda: WIN_STATE)  # the described machine's own state folder
    assert main(["fix", "--dry-run", "--no-frameworks"]) == 0
    out = capsys.readouterr().out
    assert "not fixed: cudnn-header-missing: the archive" in out and "is not on disk any more: follow its steps" in out


def test_an_archive_of_another_size_or_other_bytes_gives_nothing_back(tmp_path):
    system, path = windows_case(tmp_path)
    path.write_bytes(path.read_bytes() + b"\0")  # the same path, another file
    assert (
        "has changed since" in {s.finding.id: s.why for s in plan_of(system, WIN_STATE).skipped}["cudnn-header-missing"]
    )
    other = archives.windows_members("8.5.0.96", 11)
    top = "cudnn-windows-x86_64-8.5.0.96_cuda11-archive"
    other[f"{top}/include/cudnn.h"] = b"/* another release's header */\n"
    archives.write_zip(path, other)  # same path; the size the history kept no longer says anything: hide it
    store = transaction.Store(system, WIN_STATE)
    history = store.history()
    history[-1].pop("archive_size")
    store.save_history(history)
    plan = plan_of(system, WIN_STATE)
    before = snapshot(system, WIN_STATE)
    with pytest.raises(UsageError, match=r"no longer holds the cudnn\.h"):
        expand(system, plan.changes, store.quarantine_path(TXID))
    assert snapshot(system, WIN_STATE) == before


def test_a_toolkit_holding_another_release_than_the_one_installed_is_not_restored(tmp_path):
    system, _ = windows_case(tmp_path)
    diagnosis = diagnose(system, with_frameworks=False)
    releases = recorded_releases(transaction.Store(system, WIN_STATE))
    other = diagnosis.facts._replace(cudnn=tuple(i._replace(version="8.9.7") for i in diagnosis.facts.cudnn))
    plan = plan_fixes(diagnosis.findings, other, {"cudnn-header-missing"}, releases=releases)
    assert not plan.fixes and "not the 8.5.0" in plan.skipped[0].why


def test_reports_without_the_history_offer_no_fix_for_them(tmp_path, monkeypatch, capsys):
    system, _ = windows_case(tmp_path)
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    main(["check", "--no-frameworks", "--no-color"])
    assert "cudnn-doctor fix cudnn-header-missing" not in capsys.readouterr().out


def test_the_fix_command_restores_rechecks_and_rollback_undoes(tmp_path, monkeypatch, capsys):
    system, _ = windows_case(tmp_path)
    before = snapshot(system, WIN_STATE)
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    monkeypatch.setattr(system, "state_dir", lambda: WIN_STATE)  # the described machine's own state folder
    main(["fix", "--yes", "--no-frameworks"])
    out = capsys.readouterr().out
    assert "fix cudnn-header-missing (safe)" in out and "fix cudnn-import-lib-missing (safe)" in out
    assert f"write  {WIN_TK}\\include\\cudnn.h" in out
    assert not {"cudnn-header-missing", "cudnn-import-lib-missing"} & ids_of(system)
    assert main(["rollback"]) == 0
    assert snapshot(system, WIN_STATE) == before


# Linux: PATH and LD_LIBRARY_PATH cleaned in the doctor's own env.sh, which the user sources ------------------

ENV_SH = "/home/dev/.config/cudnn-doctor/env.sh"
CUDA_LIB = f"{LINUX_TK}/lib64"


def linux_path_machine(**env: str) -> FixtureSystem:
    """LD_LIBRARY_PATH names a removed CUDA 10.0 and CUDA 12.4's lib64 twice; PATH names a removed CUDA 10.0 bin."""
    values = {
        "LD_LIBRARY_PATH": f"/usr/local/cuda-10.0/lib64:{CUDA_LIB}:/opt/other:{CUDA_LIB}/",
        "PATH": f"/usr/local/cuda-10.0/bin:{LINUX_TK}/bin:/usr/bin:/bin",
        **env,
    }
    files = {
        f"{LINUX_TK}/bin/nvcc": {"size": 100},
        f"{LINUX_TK}/version.json": {"text": '{"cuda": {"version": "12.4.1"}}'},
        f"{CUDA_LIB}/libcudart.so.12": {"size": 100},
        "/opt/other/libfoo.so": {"size": 10},
        "/home/dev/.bashrc": {"text": "# the user's own\n"},
    }
    return FixtureSystem(machine(LINUX_BASE, files=files, env=values))


def sourced(system: FixtureSystem, tmp_path: Path, file: str = ENV_SH) -> dict[str, str]:
    """What a new bash gets from sourcing the file (real bash), starting from this machine's values."""
    import shutil
    import subprocess

    if sys.platform == "win32" or shutil.which("bash") is None:
        pytest.skip("needs a POSIX bash to source env.sh")
    script = tmp_path / "env.sh"
    script.write_bytes(system.open_read(file).read())
    env = {"PATH": "/usr/bin:/bin", "HOME": "/home/dev"}
    values = {n: system.env().get(n) for n in ("PATH", "LD_LIBRARY_PATH")}
    shown = subprocess.run(
        ["bash", "-c", f'. "{script}"; printf "%s\\n%s\\n" "${{PATH-(unset)}}" "${{LD_LIBRARY_PATH-(unset)}}"'],
        env={**env, **{k: v for k, v in values.items() if v is not None}, "PATH": values["PATH"] or env["PATH"]},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return {"PATH": shown[0], "LD_LIBRARY_PATH": shown[1]}


def with_env(system: FixtureSystem, values: dict[str, str]) -> FixtureSystem:
    """The same machine seen from a new shell with these values (its files, the doctor's state included, kept)."""
    other = copy.deepcopy(system)
    other.document["env"].update(values)
    return other


@pytest.mark.live
def test_linux_path_fixes_write_one_managed_env_sh_that_a_new_shell_sources_clean(tmp_path):
    system = linux_path_machine()
    assert {"path-missing-dir", "path-duplicate-entries"} <= ids_of(system)
    before = snapshot(system, LINUX_STATE)
    plan = plan_of(system, LINUX_STATE)
    assert {f.finding.id for f in plan.fixes} >= {"path-missing-dir", "path-duplicate-entries"}
    exports = {c.name: c.value for c in plan.changes if hasattr(c, "name") and hasattr(c, "file")}
    assert exports == {
        "LD_LIBRARY_PATH": f"{CUDA_LIB}:/opt/other",
        "PATH": f"{LINUX_TK}/bin:/usr/bin:/bin",
    }  # order kept, both fixes merged
    fix(system, LINUX_STATE)
    text = system.open_read(ENV_SH).read().decode()
    assert text.startswith("# Managed by cudnn-doctor")
    assert text.count("\n_cudnn_doctor_clean LD_LIBRARY_PATH ") == 1 and text.count("\n_cudnn_doctor_clean PATH ") == 1
    assert system.open_read("/home/dev/.bashrc").read() == b"# the user's own\n"  # never an rc file
    assert {"path-missing-dir", "path-duplicate-entries"} <= ids_of(system)  # this process's values are what they were
    new_shell = with_env(system, sourced(system, tmp_path))
    assert not {"path-missing-dir", "path-duplicate-entries"} & ids_of(new_shell)
    rollback(system, LINUX_STATE)
    assert snapshot(system, LINUX_STATE) == before  # env.sh and the folders made for it are gone


@pytest.mark.live
def test_a_second_fix_rewrites_the_managed_file_and_keeps_the_first_ones_variables(tmp_path):
    system = linux_path_machine()
    fix(system, LINUX_STATE, {"path-duplicate-entries"})
    first = system.open_read(ENV_SH).read()
    assert (
        b"\n_cudnn_doctor_clean LD_LIBRARY_PATH --repeats\n" in first and b"_cudnn_doctor_clean PATH" not in first
    )  # PATH has no duplicate
    # a new shell sourced it, and later PATH got a duplicate of its own
    later = with_env(system, {**sourced(system, tmp_path), "PATH": f"{LINUX_TK}/bin:/usr/bin:{LINUX_TK}/bin:/bin"})
    assert "path-duplicate-entries" in ids_of(later)
    plan = plan_of(later, LINUX_STATE, {"path-duplicate-entries"})
    store = transaction.Store(later, LINUX_STATE)
    with store.locked():
        expanded = expand(later, plan.changes, store.quarantine_path("t2"))
        transaction.apply_fix(expanded.steps, store, "t2", "fix: test", "folder")
    text = later.open_read(ENV_SH).read().decode()
    assert text.splitlines()[0].startswith("# Managed by cudnn-doctor")
    assert text.count("# Managed by cudnn-doctor") == 1 and text.count("\n_cudnn_doctor_clean LD_LIBRARY_PATH ") == 1
    assert (
        "\n_cudnn_doctor_clean PATH --repeats\n" in text
        and sourced(later, tmp_path)["PATH"] == f"{LINUX_TK}/bin:/usr/bin:/bin"
    )
    rollback(later, LINUX_STATE)
    assert later.open_read(ENV_SH).read() == first  # the second fix undone: the first's file, byte for byte


def test_a_file_the_doctor_does_not_manage_is_never_overwritten():
    system = linux_path_machine()
    system.make_dirs("/home/dev/.config/cudnn-doctor")
    with system.open_write(ENV_SH) as handle:
        handle.write(b"export FOO=1\n")
    before = snapshot(system, LINUX_STATE)
    plan = plan_of(system, LINUX_STATE)
    with pytest.raises(UsageError, match="not a file cudnn-doctor manages"):
        expand(system, plan.changes, "/q")
    assert snapshot(system, LINUX_STATE) == before


def test_xdg_config_home_is_respected_and_a_relative_one_ignored():
    assert {c.file for c in plan_of(linux_path_machine(XDG_CONFIG_HOME="/home/dev/cfg"), LINUX_STATE).changes} == {
        "/home/dev/cfg/cudnn-doctor/env.sh"
    }
    assert {c.file for c in plan_of(linux_path_machine(XDG_CONFIG_HOME="cfg"), LINUX_STATE).changes} == {ENV_SH}


@pytest.mark.live
def test_env_sh_only_removes_folders_and_never_freezes_this_shells_value(tmp_path):
    """An activated environment's folder, or a folder another rc file adds later, is neither written into env.sh
    nor lost by a shell that sources it: the file names only the folders it drops."""
    system = linux_path_machine(
        VIRTUAL_ENV="/home/dev/.venv", PATH=f"/home/dev/.venv/bin:/usr/local/cuda-10.0/bin:{LINUX_TK}/bin:/usr/bin:/bin"
    )
    fix(system, LINUX_STATE, {"path-missing-dir"})
    text = system.open_read(ENV_SH).read().decode()
    assert "/home/dev/.venv" not in text and "/usr/bin" not in text
    elsewhere = with_env(system, {"PATH": f"/home/dev/go/bin:/usr/local/cuda-10.0/bin:{LINUX_TK}/bin:/usr/bin"})
    assert sourced(elsewhere, tmp_path)["PATH"] == f"/home/dev/go/bin:{LINUX_TK}/bin:/usr/bin"


@pytest.mark.live
@pytest.mark.parametrize(
    "value, drop, repeats",
    [
        ("/a:/b:/a/:/c:/b", (), True),
        ("/a:/b:/a/:/c:/b", ("/b",), False),
        ("/x y:/x y/:/q*:/q*", ("/gone",), True),
        (":/a::/a", (), True),  # empty entries (the current folder) are kept as they are
        ("/only", ("/only",), False),  # nothing left: the variable is unset
        ("/a//:/a:/", ("/",), True),
    ],
)
def test_the_shell_function_gives_what_the_plan_shows(tmp_path, value, drop, repeats):
    """env.sh's function, run by a real bash and a real dash, against a straightforward Python statement of the same rule."""
    import shutil
    import subprocess

    from cudnn_doctor.install.fix import _CLEAN_FUNCTION, _clean_line

    kept, seen = [], set()
    for entry in value.split(":"):
        key = entry.rstrip("/") or entry
        if key in drop or (repeats and key and key in seen):
            continue
        seen.add(key)
        kept.append(entry)
    expected = ":".join(kept) if kept else "(unset)"
    script = tmp_path / "env.sh"
    script.write_text(f"{_CLEAN_FUNCTION}\n{_clean_line('V', repeats, drop)}\n")
    shells = [s for s in ("bash", "dash", "zsh") if shutil.which(s)]
    if sys.platform == "win32" or not shells:
        pytest.skip("needs a POSIX shell")
    for shell in shells:
        shown = subprocess.run(
            [shell, "-c", f'. "{script}"; printf "%s" "${{V-(unset)}}"'],
            env={"V": value, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
        )
        assert shown.stdout == expected, (shell, shown.stderr)


def test_the_fix_command_says_how_env_sh_takes_effect_and_never_claims_a_clean_recheck(monkeypatch, capsys):
    system = linux_path_machine()
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    monkeypatch.setattr(system, "state_dir", lambda: LINUX_STATE)  # the described machine's own state folder
    main(["fix", "--yes", "--no-frameworks", "path-missing-dir", "path-duplicate-entries"])
    out = capsys.readouterr().out
    assert "add  . ~/.config/cudnn-doctor/env.sh  to ~/.bashrc" in out
    assert "path-missing-dir: takes effect in shells that source env.sh" in out
    assert f"write  {ENV_SH}" in out
    assert main(["rollback"]) == 0
    assert not system.exists(ENV_SH)


def test_a_fault_at_every_operation_of_the_env_sh_write_leaves_the_machine_as_before_or_fixed():
    base = linux_path_machine()
    before = snapshot(base, LINUX_STATE)
    healthy = copy.deepcopy(base)
    fix(healthy, LINUX_STATE)
    fixed = snapshot(healthy, LINUX_STATE)
    counter = Faulty(copy.deepcopy(base))
    fix(counter, LINUX_STATE)
    for crash in (False, True):
        for point in range(counter.count):
            system = copy.deepcopy(base)
            try:
                fix(Faulty(system, point, crash), LINUX_STATE)
            except CudnnDoctorError:
                pass
            store = transaction.Store(system, LINUX_STATE)
            with store.locked():
                transaction.recover(store)
            now = snapshot(system, LINUX_STATE)
            assert now in (before, fixed), f"fault point {point}"
            if now == fixed:
                rollback(system, LINUX_STATE)
            assert snapshot(system, LINUX_STATE) == before, f"fault point {point}"


# Unsafe: ONNX Runtime's [cuda,cudnn] extras, the finding's own pip line in its interpreter ---------------------


def ort_system(version: str = "1.22.0") -> FixtureSystem:
    from tests.unit.probes.test_wheels import ort_machine

    return FixtureSystem(ort_machine(False, version=version))


def test_the_onnxruntime_extras_line_is_an_unsafe_fix_run_once_in_its_interpreter():
    from tests.unit.probes.test_wheels import LINUX_EXE

    system = ort_system()
    diagnosis = diagnose(system)
    found = {f.id for f in diagnosis.findings}
    assert {"cudnn-missing", "cuda-libs-not-found"} <= found
    safe = plan_fixes(diagnosis.findings, diagnosis.facts)
    why = {s.finding.id: s.why for s in safe.skipped}
    assert why["cudnn-missing"] == "an unsafe fix (it changes packages): pass --unsafe-fixes"
    plan = plan_fixes(diagnosis.findings, diagnosis.facts, unsafe=True)
    assert {"cudnn-missing", "cuda-libs-not-found"} <= {f.finding.id for f in plan.fixes}
    commands = [c for c in plan.changes if isinstance(c, RunCommand)]
    assert len(commands) == 1  # one line for every finding it answers
    assert (
        commands[0].argv == (LINUX_EXE, "-m", "pip", "install", "onnxruntime-gpu[cuda,cudnn]==1.22.0")
        and commands[0].network
    )
    assert (
        "pip uninstall -y every nvidia-* package" in commands[0].undo
        and "onnxruntime-gpu itself is not changed" in commands[0].undo
    )


def test_an_older_onnxruntime_without_extras_gets_no_automatic_fix():
    system = ort_system("1.20.1")
    diagnosis = diagnose(system)
    plan = plan_fixes(diagnosis.findings, diagnosis.facts, unsafe=True)
    assert not [f for f in plan.fixes if f.finding.id in ("cudnn-missing", "cuda-libs-not-found", "dependency-missing")]
    safe = plan_fixes(diagnosis.findings, diagnosis.facts)
    assert all("unsafe" not in s.why for s in safe.skipped if s.finding.id == "cudnn-missing")  # no flag would help


def test_the_extras_fix_command_says_network_and_undo_and_runs_pip(monkeypatch, capsys):
    from cudnn_doctor.system.interface import CommandResult

    system = ort_system()
    ran: list[list[str]] = []

    def run(argv, timeout=10.0):
        ran.append(list(argv))
        return CommandResult(0, "ok", "")

    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    monkeypatch.setattr(system, "state_dir", lambda: LINUX_STATE)  # the described machine's own state folder
    assert main(["fix", "--dry-run", "--unsafe-fixes"]) == 0
    out = capsys.readouterr().out
    assert "fix cudnn-missing (unsafe)" in out
    assert "-m pip install onnxruntime-gpu[cuda,cudnn]==1.22.0 (needs the network); undo: " in out
    monkeypatch.setattr(system, "run", run)
    main(["fix", "--unsafe-fixes", "--yes"])
    assert [a[1:] for a in ran if a[1:3] == ["-m", "pip"]] == [
        ["-m", "pip", "install", "onnxruntime-gpu[cuda,cudnn]==1.22.0"]
    ]
    capsys.readouterr()
    assert main(["rollback"]) == 0
    assert "to undo it, run: " in capsys.readouterr().out


@pytest.mark.live
@pytest.mark.skipif(sys.platform == "win32", reason="a Linux shell and loader path")
def test_live_env_sh_fix_a_new_bash_that_sources_it_is_clean_and_rollback_removes_it(tmp_path):
    """The real command on this machine, in a private HOME: the written env.sh, sourced by a real bash, gives a
    `check` without the finding; the same process's re-check still has it and says so; rollback removes the file."""
    import os
    import subprocess

    home, kept = tmp_path / "home", tmp_path / "lib"
    home.mkdir()
    kept.mkdir()
    src = str(Path(__file__).resolve().parents[3] / "src")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "LD_LIBRARY_PATH": f"/usr/local/cuda-10.0/lib64:{kept}:{kept}",
        "CUDNN_DOCTOR_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": src,
    }
    doctor = [sys.executable, "-m", "cudnn_doctor"]

    def ids(shell_prefix: str = "") -> set[str]:
        command = f'{shell_prefix}"{sys.executable}" -m cudnn_doctor check --no-frameworks --format json'
        out = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=120).stdout
        return {f["id"] for f in json.loads(out)["findings"]}

    assert {"path-missing-dir", "path-duplicate-entries"} <= ids()
    done = subprocess.run(
        [*doctor, "fix", "--yes", "--no-frameworks", "path-missing-dir", "path-duplicate-entries"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "add  . ~/.config/cudnn-doctor/env.sh  to ~/.bashrc" in done.stdout, done.stdout + done.stderr
    assert "path-missing-dir: takes effect in shells that source env.sh" in done.stdout
    written = home / ".config" / "cudnn-doctor" / "env.sh"
    assert (
        written.read_text().splitlines()[-2]
        == "_cudnn_doctor_clean LD_LIBRARY_PATH --repeats /usr/local/cuda-10.0/lib64"
    )
    assert not {"path-missing-dir", "path-duplicate-entries"} & ids(". ~/.config/cudnn-doctor/env.sh; ")
    assert sorted(os.listdir(home)) == [".config"]  # no rc file was made or edited
    assert subprocess.run([*doctor, "rollback"], env=env, capture_output=True, timeout=120).returncode == 0
    assert not (home / ".config").exists()
