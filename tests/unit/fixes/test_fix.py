"""`cudnn-doctor fix`: planned from the finding, applied as one transaction, re-checked, and undone byte for byte.

Each safe fix runs on a Windows and a Linux fixture machine (in memory): the re-check is clean of
the finding, `rollback` gives back the machine byte-identical (folders included), and a failure
at any file operation of the fix leaves the machine as before, or finished and undoable.
"""

from __future__ import annotations

import errno
import json
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from cudnn_doctor.checks import RULES
from cudnn_doctor.cli import main
from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.errors import CudnnDoctorError
from cudnn_doctor.fixes import MoveFile, MoveTree, WriteFile, plan_fixes
from cudnn_doctor.fixes.planners import PLANNERS
from cudnn_doctor.install import transaction
from cudnn_doctor.install.fix import expand
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.fixture_format import load_fixture
from cudnn_doctor.system.interface import CommandResult
from tests.conftest import GALLERY, LINUX_BASE, WINDOWS_BASE, machine, shared_fixture_paths
from tests.unit.install.test_install_faults import Faulty

WIN_STATE = "C:\\Users\\dev\\AppData\\Local\\cudnn-doctor"
LINUX_STATE = "/home/dev/.local/state/cudnn-doctor"
TK7 = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.7"
TK3 = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.3"
PARTS = ["", "_ops_infer", "_ops_train", "_cnn_infer", "_cnn_train", "_adv_infer", "_adv_train"]


def system32_machine() -> FixtureSystem:
    """cuDNN 8.5 in the toolkit, and two files of an older 8.2 that a tutorial put in System32 (searched first)."""
    files: dict[str, Any] = {
        f"{TK7}\\bin\\cudnn{p}64_8.dll": {"size": 2048, "version": "8.5.0.96", "machine": "x64"} for p in PARTS
    }
    files[f"{TK7}\\version.json"] = {"text": '{"cuda": {"version": "11.7.1"}}'}
    for name in ("cudnn64_8.dll", "cudnn_ops_infer64_8.dll"):
        files[f"C:\\Windows\\System32\\{name}"] = {
            "text": f"MZ {name} of cuDNN 8.2",
            "version": "8.2.0.53",
            "machine": "x64",
        }
    return FixtureSystem(
        machine(
            WINDOWS_BASE, files=files, env={"PATH": f"C:\\Windows\\System32;C:\\Windows;{TK7}\\bin", "CUDA_PATH": TK7}
        )
    )


def nested_machine() -> FixtureSystem:
    """A cuDNN 8.2 archive for CUDA 11 copied into v11.3 with its top `cuda` folder (bin, include, lib\\x64, a LICENSE)."""
    top = f"{TK3}\\cuda"
    files: dict[str, Any] = {
        f"{top}\\bin\\cudnn{p}64_8.dll": {"text": f"MZ cudnn{p} 8.2", "version": "8.2.1.32", "machine": "x64"}
        for p in PARTS
    }
    files.update(
        {
            f"{TK3}\\bin\\nvcc.exe": {"size": 100},
            f"{TK3}\\bin\\cudart64_110.dll": {"size": 100},
            f"{TK3}\\include\\cuda.h": {"text": "#define CUDA_VERSION 11030\n"},
            f"{TK3}\\version.json": {"text": '{"cuda": {"version": "11.3.1"}}'},
            f"{top}\\include\\cudnn.h": {"text": "#include <cudnn_version.h>\n"},
            f"{top}\\include\\cudnn_version.h": {
                "text": "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 2\n#define CUDNN_PATCHLEVEL 1\n"
            },
            f"{top}\\lib\\x64\\cudnn.lib": {"text": "!<arch>\n"},
            f"{top}\\NVIDIA_SLA_cuDNN_Support.txt": {"text": "license"},
        }
    )
    return FixtureSystem(
        machine(
            WINDOWS_BASE, files=files, env={"PATH": f"C:\\Windows\\System32;C:\\Windows;{TK3}\\bin", "CUDA_PATH": TK3}
        )
    )


def linux_shadowed_machine() -> FixtureSystem:
    """The gallery's TensorFlow 2.13 machine: an old cuDNN 8.1.1 tarball first on LD_LIBRARY_PATH (sizes cut, so hashing is quick)."""
    document = load_fixture(GALLERY / "linux-tf213-old-cudnn81-first-on-ld-library-path.yaml")
    for entry in document["files"].values():
        if isinstance(entry, dict) and entry.get("size", 0) > 4096:
            entry["size"] = 4096
    return FixtureSystem(document)


def linux_system_dir_machine() -> FixtureSystem:
    """A hand-copied cuDNN 9 in /usr/lib/x86_64-linux-gnu (no package owns it) beside the one in /usr/local/cuda."""
    lib = "/usr/lib/x86_64-linux-gnu"
    cuda = "/usr/local/cuda-12.4"
    files: dict[str, Any] = {
        f"{cuda}/bin/nvcc": {"size": 100},
        f"{cuda}/version.json": {"text": '{"cuda": {"version": "12.4.1"}}'},
        f"{cuda}/lib64/libcudnn.so.9": {"link": "libcudnn.so.9.1.0"},
        f"{cuda}/lib64/libcudnn.so.9.1.0": {"size": 2048, "soname": "libcudnn.so.9"},
        f"{lib}/libcudnn.so.9": {"link": "libcudnn.so.9.0.0"},
        f"{lib}/libcudnn.so.9.0.0": {"text": "\x7fELF cudnn 9.0 copied by hand", "soname": "libcudnn.so.9"},
    }
    return FixtureSystem(machine(LINUX_BASE, files=files, env={"LD_LIBRARY_PATH": f"{cuda}/lib64"}))


def linux_nested_machine() -> FixtureSystem:
    """A cuDNN 9 tar unpacked whole into /usr/local/cuda-12.4: its lib goes to the toolkit's lib64, its include to include."""
    cuda = "/usr/local/cuda-12.4"
    top = f"{cuda}/cudnn-linux-x86_64-9.1.0.70_cuda12-archive"
    files: dict[str, Any] = {
        f"{cuda}/bin/nvcc": {"size": 100},
        f"{cuda}/version.json": {"text": '{"cuda": {"version": "12.4.1"}}'},
        f"{cuda}/lib64/libcudart.so.12": {"size": 100},
        f"{cuda}/include/cuda.h": {"text": "#define CUDA_VERSION 12040\n"},
        f"{top}/include/cudnn_version.h": {
            "text": "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"
        },
        f"{top}/lib/libcudnn.so.9": {"link": "libcudnn.so.9.1.0"},
        f"{top}/lib/libcudnn.so.9.1.0": {"text": "ELF cudnn 9.1", "soname": "libcudnn.so.9"},
        f"{top}/LICENSE": {"text": "license"},
    }
    return FixtureSystem(
        machine(LINUX_BASE, files=files, env={"LD_LIBRARY_PATH": f"{cuda}/lib64", "PATH": f"{cuda}/bin:/usr/bin:/bin"})
    )


STRAY = "/opt/stray-cudnn/lib"


def stray_before_wheel_machine(stray_version: str = "9.5.1") -> FixtureSystem:
    """A hand-copied libcudnn.so.9 on LD_LIBRARY_PATH ahead of the venv's nvidia-cudnn-cu12 wheel that ONNX Runtime should load."""
    from tests.unit.probes.test_wheels import CU12_LINUX, folders, ort_machine

    document = ort_machine(
        False, wheels=CU12_LINUX, env={"LD_LIBRARY_PATH": ":".join([STRAY, *folders(False, CU12_LINUX)])}
    )
    for entry in document["files"].values():
        entry["size"] = min(entry.get("size", 0), 4096) if "size" in entry else entry.get("size")
    document["files"] = {k: {kk: vv for kk, vv in v.items() if vv is not None} for k, v in document["files"].items()}
    document["files"][f"{STRAY}/libcudnn.so.9"] = {"link": f"libcudnn.so.{stray_version}"}
    document["files"][f"{STRAY}/libcudnn.so.{stray_version}"] = {
        "text": f"\x7fELF a stray cuDNN {stray_version}",
        "soname": "libcudnn.so.9",
    }
    return FixtureSystem(document)


MACHINES = {
    "win-system32": (system32_machine, WIN_STATE, "cudnn-in-system-dir"),
    "win-nested": (nested_machine, WIN_STATE, "cudnn-nested-layout"),
    "linux-shadowed": (linux_shadowed_machine, LINUX_STATE, "cudnn-shadowed"),
    "linux-system-dir": (linux_system_dir_machine, LINUX_STATE, "cudnn-in-system-dir"),
    "linux-nested": (linux_nested_machine, LINUX_STATE, "cudnn-nested-layout"),
    "linux-stray-before-wheel": (stray_before_wheel_machine, LINUX_STATE, "cudnn-shadowed"),
}


def snapshot(system: FixtureSystem, state: str) -> dict[str, Any]:
    """Every file (its bytes, or a link's target) and folder of the machine, the doctor's state folder left out."""
    rules = system.paths
    found: dict[str, Any] = {}

    def walk(folder: str) -> None:
        for entry in system.list_dir(folder, sizes=False) or []:
            if rules.inside(entry.path, state):
                continue
            link = system.link_target(entry.path)
            if link is not None:
                found[rules.key(entry.path)] = ("link", link)
            elif entry.is_dir:
                if not rules.inside(state, entry.path):  # the state folder's parents are made by the doctor, and kept
                    found[rules.key(entry.path) + "/"] = "folder"
                walk(entry.path)
            elif not entry.readable:
                found[rules.key(entry.path)] = "unreadable"
            else:
                found[rules.key(entry.path)] = system.open_read(entry.path).read()

    for root in ("C:\\",) if rules.windows else ("/",):
        walk(root)
    return found


def ids_of(system: Any) -> set[str]:
    return {f.id for f in diagnose(system, with_frameworks=False).findings}


def fix(system: Any, state: str, only: Optional[set[str]] = None) -> dict[str, Any]:
    """What `fix --yes` does, through the library: plan, expand, apply in the transaction."""
    diagnosis = diagnose(system, with_frameworks=False)
    plan = plan_fixes(diagnosis.findings, diagnosis.facts, only)
    store = transaction.Store(system, state)
    txid = "20261205-000000-abcdef"
    with store.locked():
        transaction.recover(store)
        expanded = expand(system, plan.changes, store.quarantine_path(txid))
        assert expanded.steps or expanded.env, "the fix plans nothing"
        return transaction.apply_fix(expanded.steps, store, txid, "fix: test", "folder", env_changes=expanded.env)


def rollback(system: Any, state: str) -> transaction.UndoReport:
    store = transaction.Store(system, state)
    with store.locked():
        if transaction.recover(store):
            return transaction.UndoReport([], [], [], [])
        return transaction.rollback_last(store)[1]


def fixed_entries(system: Any, state: str) -> list[dict]:
    return [
        h for h in transaction.Store(system, state).history() if h["state"] in ("installed", transaction.UNFINISHED)
    ]


def test_every_rule_with_a_fix_kind_has_a_planner_and_back():
    with_kind = {i for i, r in RULES.items() if r.fix_kind is not None}
    assert with_kind == set(PLANNERS)
    assert {"cudnn-shadowed", "cudnn-in-system-dir", "cudnn-nested-layout"} <= with_kind


@pytest.mark.parametrize("name", list(MACHINES))
def test_a_fix_removes_its_finding_and_rollback_restores_every_byte(name):
    make, state, finding_id = MACHINES[name]
    system = make()
    assert finding_id in ids_of(system)
    before = snapshot(system, state)
    fix(system, state)
    assert finding_id not in ids_of(system), f"{name}: the re-check still finds {finding_id}"
    assert snapshot(system, state) != before
    entry = fixed_entries(system, state)[-1]
    assert entry["kind"] == "fix" and entry["archive"] == "fix: test"
    report = rollback(system, state)
    assert report.complete, report.summary()
    assert snapshot(system, state) == before
    assert finding_id in ids_of(system)
    assert not system.list_dir(transaction.Store(system, state).quarantine_path("20261205-000000-abcdef"))


def test_system32_quarantine_takes_every_file_of_that_release():
    system = system32_machine()
    fix(system, WIN_STATE)
    assert not system.exists("C:\\Windows\\System32\\cudnn64_8.dll")
    assert not system.exists("C:\\Windows\\System32\\cudnn_ops_infer64_8.dll")  # not only the front DLL
    quarantined = f"{WIN_STATE}\\quarantine\\20261205-000000-abcdef\\C\\Windows\\System32\\cudnn_ops_infer64_8.dll"
    assert system.open_read(quarantined).read() == b"MZ cudnn_ops_infer64_8.dll of cuDNN 8.2"
    assert system.exists(f"{TK7}\\bin\\cudnn64_8.dll")  # the toolkit's copy is left alone


def test_the_nested_layout_is_flattened_and_the_top_folder_goes():
    system = nested_machine()
    fix(system, WIN_STATE)
    assert system.open_read(f"{TK3}\\bin\\cudnn_cnn_infer64_8.dll").read() == b"MZ cudnn_cnn_infer 8.2"
    assert system.exists(f"{TK3}\\include\\cudnn_version.h") and system.exists(f"{TK3}\\lib\\x64\\cudnn.lib")
    assert system.exists(f"{TK3}\\include\\cuda.h")  # the toolkit's own files stay
    assert system.stat(f"{TK3}\\cuda") is None  # the license went to quarantine, the emptied folders away


def test_the_linux_nested_layout_lands_in_lib64():
    system = linux_nested_machine()
    fix(system, LINUX_STATE)
    assert system.link_target("/usr/local/cuda-12.4/lib64/libcudnn.so.9") == "libcudnn.so.9.1.0"
    assert system.open_read("/usr/local/cuda-12.4/lib64/libcudnn.so.9.1.0").read() == b"ELF cudnn 9.1"
    assert system.exists("/usr/local/cuda-12.4/include/cudnn_version.h")
    assert system.stat("/usr/local/cuda-12.4/cudnn-linux-x86_64-9.1.0.70_cuda12-archive") is None
    assert system.stat("/usr/local/cuda-12.4/lib") is None  # no lib folder made beside lib64


def test_linux_shadowing_copy_goes_with_its_links():
    system = linux_shadowed_machine()
    fix(system, LINUX_STATE)
    for name in ("libcudnn.so.8", "libcudnn.so.8.1.1", "libcudnn_cnn_infer.so.8", "libcudnn_cnn_infer.so.8.1.1"):
        assert (
            system.stat(f"/opt/cudnn-8.1.1/lib64/{name}") is None
            and system.link_target(f"/opt/cudnn-8.1.1/lib64/{name}") is None
        )
    assert (
        system.link_target(f"{LINUX_STATE}/quarantine/20261205-000000-abcdef/opt/cudnn-8.1.1/lib64/libcudnn.so.8")
        == "libcudnn.so.8.1.1"
    )


@pytest.mark.slow  # exhaustive: every operation, every file (the slow lane)
@pytest.mark.parametrize("crash", [False, True], ids=["fails-once", "killed"])
@pytest.mark.parametrize("name", ["win-system32", "win-nested", "linux-system-dir", "linux-nested"])
def test_a_fault_at_every_operation_of_a_fix_leaves_the_machine_as_before(name, crash):
    make, state, _ = MACHINES[name]
    before = snapshot(make(), state)
    healthy = make()
    fix(healthy, state)
    fixed = snapshot(healthy, state)
    counter = Faulty(make())
    fix(counter, state)
    total = counter.count
    assert total > 10
    outcomes = {"before": 0, "fixed": 0}
    for point in range(total):
        system = make()
        with pytest.raises(CudnnDoctorError):  # one line, never a traceback
            fix(Faulty(system, point, crash), state)
        store = transaction.Store(system, state)
        with store.locked():
            transaction.recover(store)  # the next command, healthy
        now = snapshot(system, state)
        assert now in (before, fixed), f"fault point {point}"
        if now == fixed:
            outcomes["fixed"] += 1
            assert fixed_entries(system, state), f"fault point {point}: a finished fix must be in the history"
            rollback(system, state)
        else:
            outcomes["before"] += 1
        assert snapshot(system, state) == before, f"fault point {point}"
    assert outcomes["before"] > 0


class OtherVolume(FixtureSystem):
    """The state folder on another file system: a rename from the machine into it fails with EXDEV, as os.replace does."""

    state = WIN_STATE

    def replace(self, source: str, target: str) -> None:
        if self.paths.inside(source, self.state) != self.paths.inside(target, self.state):
            raise OSError(errno.EXDEV, "Invalid cross-device link", source)
        super().replace(source, target)


def test_a_move_across_file_systems_is_a_checked_copy_and_rolls_back():
    system = OtherVolume(system32_machine().document)
    before = snapshot(system, WIN_STATE)
    fix(system, WIN_STATE)
    assert "cudnn-in-system-dir" not in ids_of(system)
    assert rollback(system, WIN_STATE).complete
    assert snapshot(system, WIN_STATE) == before


def test_rollback_leaves_a_file_put_back_by_hand_and_says_so():
    system = system32_machine()
    fix(system, WIN_STATE)
    with system.open_write("C:\\Windows\\System32\\cudnn64_8.dll") as handle:
        handle.write(b"the user's new copy")
    report = rollback(system, WIN_STATE)
    assert "C:\\Windows\\System32\\cudnn64_8.dll" in report.changed
    assert system.open_read("C:\\Windows\\System32\\cudnn64_8.dll").read() == b"the user's new copy"


def test_a_shadowing_copy_that_is_usable_or_owned_by_a_package_is_not_planned():
    system = linux_shadowed_machine()
    diagnosis = diagnose(system, with_frameworks=False)
    shadowed = next(f for f in diagnosis.findings if f.id == "cudnn-shadowed")
    usable = shadowed._replace(severity=shadowed.severity.WARNING)
    assert PLANNERS["cudnn-shadowed"](
        usable, diagnosis.facts
    )  # the next copy is apt's libcudnn8 8.6, newer: the stray goes
    unowned = diagnosis.facts._replace(cudnn=tuple(i._replace(package=None) for i in diagnosis.facts.cudnn))
    assert (
        PLANNERS["cudnn-shadowed"](usable, unowned) == []
    )  # two hand-made copies, the winner usable: the user chooses
    owned = diagnosis.facts._replace(cudnn=tuple(i._replace(package="libcudnn8") for i in diagnosis.facts.cudnn))
    assert PLANNERS["cudnn-shadowed"](shadowed, owned) == []
    assert all(
        isinstance(c, MoveFile) and c.dest is None for c in PLANNERS["cudnn-shadowed"](shadowed, diagnosis.facts)
    )


def test_a_stray_copy_ahead_of_a_pip_wheel_is_quarantined_not_the_wheel():
    system = stray_before_wheel_machine()
    diagnosis = diagnose(system)
    shadowed = next(f for f in diagnosis.findings if f.id == "cudnn-shadowed")
    assert shadowed.severity.value == "warning"  # usable, but not the copy the environment installed
    assert PLANNERS["cudnn-shadowed"](shadowed, diagnosis.facts) == [
        MoveFile(f"{STRAY}/libcudnn.so.9"),
        MoveFile(f"{STRAY}/libcudnn.so.9.5.1"),
    ]
    wheel = diagnosis.facts.cudnn[0]
    assert "site-packages" in wheel.folder
    newer = diagnosis.facts._replace(
        cudnn=tuple(
            i._replace(version="9.0.0") if "site-packages" in i.folder else i._replace(version="9.5.1")
            for i in diagnosis.facts.cudnn
        )
    )
    assert PLANNERS["cudnn-shadowed"](shadowed, newer) == []  # the wheel is older than the stray: the user decides
    flipped = shadowed._replace(evidence=shadowed.evidence._replace(used=shadowed.evidence.copies[1]))
    assert PLANNERS["cudnn-shadowed"](flipped, diagnosis.facts) == []  # a pip wheel's files are never quarantined
    beside = shadowed._replace(evidence=shadowed.evidence._replace(off_path=shadowed.evidence.copies[1]))
    assert PLANNERS["cudnn-shadowed"](beside, diagnosis.facts) == []  # the other copy is not on the search path


def test_nested_plan_is_data_only():
    system = nested_machine()
    diagnosis = diagnose(system, with_frameworks=False)
    nested = next(f for f in diagnosis.findings if f.id == "cudnn-nested-layout")
    changes = PLANNERS["cudnn-nested-layout"](nested, diagnosis.facts)
    assert changes[:3] == [MoveTree(f"{TK3}\\cuda\\{s}", f"{TK3}\\{s}") for s in ("bin", "include", "lib")]
    assert changes[-1] == MoveTree(f"{TK3}\\cuda")


# The persistent PATH (Windows registry): duplicates and missing folders, REG_EXPAND_SZ and %VAR% kept ---------


def path_machine() -> FixtureSystem:
    tk = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4"
    document = machine(
        WINDOWS_BASE,
        files={f"{tk}\\bin\\cudart64_12.dll": {"size": 100}},
        env={"PATH": f"C:\\Windows\\System32;C:\\Windows;{tk}\\bin;{tk}\\bin;C:\\CUDA\\v10.0\\bin", "CUDA_PATH": tk},
    )
    document["persistent_env"] = {
        "system": {"Path": "C:\\Windows\\System32;C:\\Windows;%CUDA_PATH%\\bin", "CUDA_PATH": tk},
        "user": {"Path": f"{tk}\\bin;C:\\CUDA\\v10.0\\bin"},
    }
    return FixtureSystem(document)


def test_path_fixes_rewrite_the_registry_path_keeping_var_references_and_types():
    system = path_machine()
    assert {"path-duplicate-entries", "path-missing-dir"} <= ids_of(system)
    assert system.persistent_env_kind("system", "Path") == "REG_EXPAND_SZ"
    before = system.persistent_env()
    fix(system, WIN_STATE, {"path-duplicate-entries", "path-missing-dir"})
    after = system.persistent_env()
    assert (
        after["system"]["Path"] == "C:\\Windows\\System32;C:\\Windows;%CUDA_PATH%\\bin"
    )  # the first copy stays, %VAR% as written
    assert "Path" not in after["user"] or after["user"]["Path"] == ""
    assert system.persistent_env_kind("system", "Path") == "REG_EXPAND_SZ"
    rollback(system, WIN_STATE)
    assert system.persistent_env() == before


def test_an_ineffective_persistent_variable_is_removed_and_a_misspelling_renamed():
    document = machine(WINDOWS_BASE, env={"CUDNN_AUTOTUNE": "1", "CUDA_LAUNCH_BLOCKIN": "1"})
    document["persistent_env"] = {"system": {}, "user": {"CUDNN_AUTOTUNE": "1", "CUDA_LAUNCH_BLOCKIN": "1"}}
    system = FixtureSystem(document)
    found = [f for f in diagnose(system, with_frameworks=False).findings if f.id == "env-var-ineffective"]
    assert {f.evidence.variable for f in found} == {"CUDNN_AUTOTUNE", "CUDA_LAUNCH_BLOCKIN"}
    before = system.persistent_env()
    fix(system, WIN_STATE, {"env-var-ineffective"})
    assert system.persistent_env()["user"] == {"CUDA_LAUNCH_BLOCKING": "1"}
    rollback(system, WIN_STATE)
    assert system.persistent_env() == before


def test_an_ineffective_variable_on_linux_keeps_its_manual_steps():
    system = FixtureSystem(machine(LINUX_BASE, env={"CUDNN_AUTOTUNE": "1"}))
    diagnosis = diagnose(system, with_frameworks=False)
    plan = plan_fixes(diagnosis.findings, diagnosis.facts, {"env-var-ineffective"})
    assert not plan.fixes and [s.finding.id for s in plan.skipped] == ["env-var-ineffective"]


# The command ------------------------------------------------------------------------------------------------


def cli(monkeypatch, system: Any, *argv: str) -> int:
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    monkeypatch.setattr(
        system, "state_dir", lambda: WIN_STATE if system.os == "windows" else LINUX_STATE
    )  # the described machine's own state folder
    return main(list(argv))


def test_fix_command_applies_rechecks_and_rollback_undoes(monkeypatch, capsys):
    system = system32_machine()
    before = snapshot(system, WIN_STATE)
    assert cli(monkeypatch, system, "fix", "--yes", "--no-frameworks") in (0, 1)
    out = capsys.readouterr().out
    assert "fix cudnn-in-system-dir (safe)" in out and "Before: " in out and "After: " in out
    assert "  cudnn-in-system-dir: fixed (1 before, 0 after)" in out, out  # per finding, whatever else remains
    assert "cudnn-in-system-dir" not in ids_of(system)
    assert cli(monkeypatch, system, "history") == 0
    assert "fix: cudnn-in-system-dir" in capsys.readouterr().out
    assert cli(monkeypatch, system, "rollback") == 0
    assert snapshot(system, WIN_STATE) == before


def test_fix_exit_codes(monkeypatch, capsys):
    system = system32_machine()
    assert cli(monkeypatch, system, "fix", "no-such-finding", "--yes") == 2
    before = snapshot(system, WIN_STATE)
    assert (
        cli(monkeypatch, system, "fix", "--no-frameworks") == 2
    )  # not a terminal and no --yes: refuses, changes nothing
    assert snapshot(system, WIN_STATE) == before
    # only the ids named: the System32 copy stays when only the header finding is asked for
    assert cli(monkeypatch, system, "fix", "cudnn-header-missing", "--yes", "--no-frameworks") == 1
    assert "Nothing to fix automatically." in capsys.readouterr().out
    assert snapshot(system, WIN_STATE) == before


def test_explain_and_reports_say_a_finding_has_an_automatic_fix(monkeypatch, capsys):
    assert main(["explain", "cudnn-in-system-dir"]) == 0
    assert "fix: safe — `cudnn-doctor fix cudnn-in-system-dir` (where the case allows" in capsys.readouterr().out
    assert main(["explain", "cudnn-version-mismatch"]) == 0
    assert "cudnn-doctor fix" not in capsys.readouterr().out
    system = system32_machine()
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    main(["check", "--no-frameworks", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    autofix = {f["id"]: f.get("autofix") for f in report["findings"]}
    assert autofix["cudnn-in-system-dir"] == "safe" and autofix["cudnn-mixed-versions"] is None
    main(["check", "--no-frameworks", "--no-color"])
    out = capsys.readouterr().out
    assert "fix: safe — `cudnn-doctor fix cudnn-in-system-dir`" in out
    assert "cudnn-doctor fix cudnn-header-missing" not in out


def test_a_finding_whose_case_the_fix_does_not_handle_says_no_automatic_fix(monkeypatch, capsys):
    """env-var-ineffective has a safe fix for the Windows registry; on Linux (a variable from a shell file) it stays manual.
    path-missing-dir on Linux is fixed in the doctor's env.sh."""
    system = FixtureSystem(
        machine(LINUX_BASE, env={"CUDNN_AUTOTUNE": "1", "LD_LIBRARY_PATH": "/usr/local/cuda-10.0/lib64"})
    )
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    main(["check", "--no-frameworks", "--format", "json"])
    found = {f["id"]: f["autofix"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert found["env-var-ineffective"] is None and found["path-missing-dir"] == "safe"
    main(["check", "--no-frameworks", "--no-color"])
    assert "cudnn-doctor fix env-var-ineffective" not in capsys.readouterr().out
    windows = path_machine()
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: windows)
    main(["check", "--no-frameworks", "--format", "json"])
    assert {f["id"]: f["autofix"] for f in json.loads(capsys.readouterr().out)["findings"]}[
        "path-missing-dir"
    ] == "safe"


SHARED = shared_fixture_paths()


@pytest.mark.skipif(not SHARED, reason="no shared fixtures beside the repository")
@pytest.mark.parametrize("path", SHARED + sorted(GALLERY.glob("*.yaml")), ids=lambda p: Path(p).name)
def test_dry_run_on_every_fixture_plans_only_present_findings_and_changes_nothing(path, capsys):
    system = FixtureSystem.from_file(path)
    diagnosis = diagnose(system, with_frameworks=False)
    present = {f.id for f in diagnosis.findings}
    plan = plan_fixes(diagnosis.findings, diagnosis.facts)
    assert {f.finding.id for f in plan.fixes} <= present
    assert all(RULES[f.finding.id].fix_kind == "safe" for f in plan.fixes)
    state = WIN_STATE if system.os == "windows" else LINUX_STATE
    before = snapshot(system, state)
    env_before = system.persistent_env()
    code = main(["fix", "--dry-run", "--fixture", str(path), "--no-frameworks"])
    assert code == 0
    out = capsys.readouterr().out
    for fix_id in {f.finding.id for f in plan.fixes}:
        assert f"fix {fix_id} (safe)" in out
    for rule_id in set(PLANNERS) - present:
        assert f"fix {rule_id} " not in out
    expand(system, plan.changes, transaction.Store(system, state).quarantine_path("x"))  # expanding reads only
    assert snapshot(system, state) == before and system.persistent_env() == env_before and not system.env_writes


def test_a_dll_in_use_stops_the_fix_before_any_change():
    system = system32_machine()
    before = snapshot(system, WIN_STATE)
    system.hold("C:\\Windows\\System32\\cudnn64_8.dll", ["python.exe (1234)"])
    with pytest.raises(transaction.FileInUse, match=r"python\.exe"):
        fix(system, WIN_STATE)
    assert snapshot(system, WIN_STATE) == before


def test_rollback_refuses_when_a_quarantined_file_is_gone_and_changes_nothing():
    system = system32_machine()
    fix(system, WIN_STATE)
    quarantined = f"{WIN_STATE}\\quarantine\\20261205-000000-abcdef\\C\\Windows\\System32\\cudnn64_8.dll"
    system.remove(quarantined)
    after = snapshot(system, WIN_STATE)
    with pytest.raises(CudnnDoctorError, match="no longer there"):
        rollback(system, WIN_STATE)
    assert snapshot(system, WIN_STATE) == after


# Unsafe fixes: the finding's own pip lines, in its interpreter ----------------------------------------------

TORCH_CPU = GALLERY / "win-torch-cpu-wheel-from-pypi.yaml"


def test_an_unsafe_fix_needs_the_flag_and_says_how_it_is_undone(capsys):
    assert main(["fix", "--dry-run", "--fixture", str(TORCH_CPU)]) == 0
    out = capsys.readouterr().out
    assert "not fixed: torch-cpu-build: an unsafe fix (it changes packages): pass --unsafe-fixes" in out
    assert main(["fix", "--dry-run", "--unsafe-fixes", "--fixture", str(TORCH_CPU)]) == 0
    out = capsys.readouterr().out
    assert "fix torch-cpu-build (unsafe)" in out
    assert (
        "-m pip install torch==2.2.2 torchvision==0.17.2 --index-url https://download.pytorch.org/whl/cu121 (needs the network)"
        in out
    )
    python = "C:\\Users\\mira\\projects\\yolo\\.venv\\Scripts\\python.exe"
    assert (
        f'undo: "{python}" -m pip uninstall -y torch torchvision, then "{python}" -m pip install torch==2.2.2 torchvision==0.17.2'
        in out
    )


def test_an_unsafe_fix_runs_its_commands_in_order_and_history_keeps_the_undo(monkeypatch, capsys):
    system = FixtureSystem.from_file(TORCH_CPU)
    ran: list[list[str]] = []

    def run(argv, timeout=10.0):
        ran.append(list(argv))
        return CommandResult(0, "ok", "")

    monkeypatch.setattr(system, "run", run)
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    monkeypatch.setattr(system, "state_dir", lambda: WIN_STATE)  # the described machine's own state folder
    assert main(["fix", "--unsafe-fixes", "--yes"]) == 1  # the fixture's torch stays a CPU build
    pips = [argv[1:4] for argv in ran if argv[1:3] == ["-m", "pip"]]
    assert pips == [["-m", "pip", "uninstall"], ["-m", "pip", "install"]]
    capsys.readouterr()
    assert main(["rollback"]) == 0
    assert "to undo it, run: " in capsys.readouterr().out


@pytest.mark.live
@pytest.mark.skipif(
    sys.platform == "win32", reason="Wine makes no symbolic links (os.symlink succeeds and leaves nothing)"
)
def test_a_fix_on_the_live_file_system_moves_links_as_links_and_rolls_back(tmp_path):
    """The same transaction on real files: os.replace moves, a link stays a link, rollback gives back every byte and folder."""
    from cudnn_doctor.system.live import LiveSystem

    system = LiveSystem()
    stray = tmp_path / "machine" / "opt" / "cudnn" / "lib"
    stray.mkdir(parents=True)
    (stray / "libcudnn.so.9.1.0").write_bytes(b"\x7fELF a stray cuDNN 9.1")
    (stray / "libcudnn.so.9").symlink_to("libcudnn.so.9.1.0")
    managed = tmp_path / "machine" / "home" / ".config" / "cudnn-doctor" / "env.sh"

    def state() -> dict[str, Any]:
        return {
            str(p.relative_to(tmp_path / "machine")): ("link", str(p.readlink()))
            if p.is_symlink()
            else "folder"
            if p.is_dir()
            else p.read_bytes()
            for p in sorted((tmp_path / "machine").rglob("*"))
        }

    before = state()
    store = transaction.Store(system, str(tmp_path / "state"))
    changes = [MoveTree(str(stray.parent)), WriteFile(str(managed), "export LD_LIBRARY_PATH=/x\n")]
    with store.locked():
        expanded = expand(system, changes, store.quarantine_path("t1"))
        assert [s.kind for s in expanded.steps] == ["move", "move", "write", "rmdir", "rmdir"]
        transaction.apply_fix(expanded.steps, store, "t1", "fix: test", str(stray))
    assert not stray.parent.exists() and managed.read_text() == "export LD_LIBRARY_PATH=/x\n"
    quarantined = Path(store.quarantine_path("t1")) / str(stray).lstrip("/")
    assert (quarantined / "libcudnn.so.9").is_symlink() and (
        quarantined / "libcudnn.so.9.1.0"
    ).read_bytes() == b"\x7fELF a stray cuDNN 9.1"
    with store.locked():
        _, report = transaction.rollback_last(store)
    assert report.complete and state() == before


def test_changes_of_two_kinds_with_equal_fields_are_two_changes():
    """The changes are NamedTuples (quick to import on `check`'s path) yet compare like the dataclasses they were:
    a plan that moves a file and one that moves a folder of the same name are different plans."""
    assert MoveFile("/a") != MoveTree("/a") and (MoveFile("/a") == MoveTree("/a")) is False
    assert MoveFile("/a") == MoveFile("/a", None) and MoveFile("/a") != MoveFile("/a", "/b")
    assert len({MoveFile("/a"), MoveTree("/a"), MoveFile("/a")}) == 2
    assert MoveFile("/a") != ("/a", None) and WriteFile("/f", "x")._replace(text="y") == WriteFile("/f", "y")
