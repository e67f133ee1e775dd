"""install, fix, rollback and history as library calls (issue 31): each returns a result that a report renders, runs on
a fixture machine exactly as live, and says the same in JSON (reports/changes.schema.json) as on the terminal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from cudnn_doctor.cli import main
from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.fixes.applying import fix
from cudnn_doctor.install.installing import install
from cudnn_doctor.install.undoing import history, rollback
from cudnn_doctor.system.fixture import FixtureSystem
from tests import archives
from tests.conftest import WINDOWS_BASE, machine

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[3] / "src" / "cudnn_doctor" / "reports" / "changes.schema.json").read_text()
)
TARGET = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8"
STATE = "C:\\Users\\dev\\AppData\\Local\\cudnn-doctor"


def toolkit_machine() -> dict[str, Any]:
    """CUDA 11.8 with cuDNN 8.2 copied in by hand (a DLL and the header), and a stray cuDNN in System32."""
    files: dict[str, Any] = {
        f"{TARGET}\\bin\\nvcc.exe": {},
        f"{TARGET}\\include\\cuda.h": {"text": "#define CUDA_VERSION 11080\n"},
        f"{TARGET}\\version.json": {"text": '{"cuda": {"version": "11.8.0"}}'},
        f"{TARGET}\\include\\cudnn_version.h": {"text": archives.version_header("8.2.0.53")},
        f"{TARGET}\\bin\\cudnn64_8.dll": {"text": "MZ the user's cuDNN 8.2"},
        "C:\\Windows\\System32\\cudnn64_8.dll": {"size": 300000},
    }
    env = {
        "USERPROFILE": "C:\\Users\\dev",
        "LOCALAPPDATA": "C:\\Users\\dev\\AppData\\Local",
        "PATH": f"{TARGET}\\bin;C:\\Windows\\System32;C:\\Windows",
    }
    return machine(WINDOWS_BASE, files=files, env=env)


def content(system: FixtureSystem, path: str) -> bytes:
    with system.open_read(path) as handle:
        return handle.read()


@pytest.fixture(scope="module")
def archive_path(tmp_path_factory) -> Path:
    return archives.write_zip(
        tmp_path_factory.mktemp("a") / "cudnn-windows-x86_64-8.5.0.96_cuda11-archive.zip", archives.windows_members()
    )


@pytest.fixture
def fixture_file(tmp_path) -> Path:
    path = tmp_path / "machine.yaml"
    path.write_text(yaml.safe_dump(toolkit_machine()), encoding="utf-8")
    return path


def test_install_rollback_and_history_as_library_calls_on_a_fixture_machine(archive_path):
    system = FixtureSystem(toolkit_machine())
    before = content(system, f"{TARGET}\\bin\\cudnn64_8.dll")
    shown, asked = [], []
    result = install(system, archive_path, show=shown.append, confirm=lambda: asked.append(True) or True)
    assert result.applied and not result.live and len(shown) == 1 and asked == [True]
    assert shown[0].plan.target == TARGET and system.paths.same(system.state_dir(), STATE)
    assert content(system, f"{TARGET}\\bin\\cudnn64_8.dll") != before  # written in memory, through the transaction
    assert b"#define CUDNN_MINOR 5" in content(system, f"{TARGET}\\include\\cudnn_version.h")
    recorded = history(system)
    assert [e["state"] for e in recorded.entries] == ["installed"]
    undone = rollback(system)
    assert undone.report is not None and undone.report.complete and undone.report.restored and undone.report.removed
    assert content(system, f"{TARGET}\\bin\\cudnn64_8.dll") == before
    assert rollback(system).nothing and [e["state"] for e in history(system).entries] == ["rolled-back"]


def test_a_dry_run_shows_the_plan_and_never_asks(archive_path):
    system = FixtureSystem(toolkit_machine())
    shown = []
    result = install(
        system, archive_path, dry_run=True, show=shown.append, confirm=lambda: pytest.fail("a dry run asked")
    )
    assert result.dry_run and not result.applied and shown and not history(system).entries


def test_an_install_the_user_declines_changes_nothing(archive_path):
    system = FixtureSystem(toolkit_machine())
    before = content(system, f"{TARGET}\\bin\\cudnn64_8.dll")
    result = install(system, archive_path, confirm=lambda: False)
    assert result.declined and not result.applied and result.exit_code == 0
    assert content(system, f"{TARGET}\\bin\\cudnn64_8.dll") == before and not history(system).entries


def test_fix_as_a_library_call_reports_each_finding_before_and_after():
    system = FixtureSystem(toolkit_machine())
    result = fix(system, diagnose=lambda machine: diagnose(machine, with_frameworks=False))
    assert result.applied and not result.live
    outcomes = {o.id: o for o in result.outcomes}
    assert outcomes["cudnn-in-system-dir"].verdict == "fixed" and outcomes["cudnn-in-system-dir"].before == 1
    assert "cudnn-in-system-dir" not in {f.id for f in diagnose(system, with_frameworks=False).findings}
    assert [e["kind"] for e in history(system).entries] == ["fix"]
    dry = fix(
        FixtureSystem(toolkit_machine()),
        dry_run=True,
        diagnose=lambda m: diagnose(m, with_frameworks=False),
        confirm=lambda: pytest.fail("asked"),
    )
    assert dry.dry_run and not dry.applied and dry.exit_code == 0 and dry.outcomes == ()


def run_json(capsys, *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(list(argv))
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    return code, document


def test_the_commands_run_on_a_fixture_file_and_their_json_follows_the_schema(capsys, fixture_file, archive_path):
    code, planned = run_json(
        capsys, "install", str(archive_path), "--fixture", str(fixture_file), "--dry-run", "--format", "json"
    )
    assert (
        code == 0
        and planned["schema"] == "cudnn-doctor-install/1"
        and planned["target"] == TARGET
        and not planned["applied"]
    )
    assert {a["kind"] for a in planned["actions"]} >= {"add", "replace"} and planned["bytes_to_write"] > 0
    code, installed = run_json(
        capsys, "install", str(archive_path), "--fixture", str(fixture_file), "--yes", "--format", "json"
    )
    assert installed["applied"] and not installed["live"] and code == installed["exit_code"]
    code, fixed = run_json(
        capsys, "fix", "--fixture", str(fixture_file), "--yes", "--no-frameworks", "--format", "json"
    )
    assert (
        fixed["applied"]
        and {"id": "cudnn-in-system-dir", "before": 1, "after": 0, "verdict": "fixed"} in fixed["outcomes"]
    )
    code, undone = run_json(
        capsys, "rollback", "--fixture", str(fixture_file), "--format", "json"
    )  # a fresh process: memory is gone
    assert code == 0 and undone["nothing_to_undo"] and undone["undone"] is None
    code, listed = run_json(capsys, "history", "--fixture", str(fixture_file), "--format", "json")
    assert code == 0 and listed["entries"] == []


def test_the_terminal_says_what_the_fixture_run_did(capsys, fixture_file, archive_path):
    assert main(["install", str(archive_path), "--fixture", str(fixture_file), "--yes"]) in (0, 1)
    out = capsys.readouterr().out
    assert f"→ {TARGET}" in out and "Total: " in out and ", on the fixture machine in memory only in " in out
    assert main(["fix", "--fixture", str(fixture_file), "--yes", "--no-frameworks"]) in (0, 1)
    out = capsys.readouterr().out
    assert "to the fixture machine, in memory only" in out and "  cudnn-in-system-dir: fixed (1 before, 0 after)" in out


@pytest.mark.parametrize("command", [["install", "ARCHIVE"], ["fix"]])
def test_json_output_never_asks(capsys, fixture_file, archive_path, command):
    argv = [str(archive_path) if a == "ARCHIVE" else a for a in command]
    assert main([*argv, "--fixture", str(fixture_file), "--format", "json"]) == 2
    assert "--format json does not ask: pass --yes" in capsys.readouterr().err
