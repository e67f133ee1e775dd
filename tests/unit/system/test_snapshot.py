"""`snapshot` records the live machine; replaying the record gives the live diagnosis."""

from __future__ import annotations

import json

import pytest
import yaml

from cudnn_doctor.cli import main
from cudnn_doctor.cli.snapshot import take_snapshot
from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.privacy import redact_document
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.fixture_format import validate
from cudnn_doctor.system.live import LiveSystem


def _summary(diagnosis):
    return sorted((f.id, f.severity.value) for f in diagnosis.findings)


@pytest.mark.live
def test_replaying_a_snapshot_gives_the_live_findings():
    live = diagnose(LiveSystem(), with_frameworks=False)
    document = validate(json.loads(json.dumps(take_snapshot(with_frameworks=False))))
    replayed = diagnose(FixtureSystem(document), with_frameworks=False)
    assert _summary(replayed) == _summary(live)
    assert replayed.facts.toolkits.toolkits == live.facts.toolkits.toolkits
    assert replayed.facts.driver == live.facts.driver


@pytest.mark.live
def test_snapshot_cli_writes_a_valid_fixture(tmp_path, capsys):
    out = tmp_path / "machine.yaml"
    assert main(["snapshot", "--no-frameworks", "--redact", "-o", str(out)]) == 0
    document = validate(yaml.safe_load(out.read_text(encoding="utf-8")))
    code = main(["check", "--fixture", str(out), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["exit_code"] == code
    live = diagnose(LiveSystem(), with_frameworks=False)  # redaction renames paths, it must not change the diagnosis
    assert sorted((f["id"], f["severity"]) for f in report["findings"]) == _summary(live)
    assert document["schema"] == "machine-fixture/1"


def test_redaction_replaces_home_and_user_everywhere():
    document = {
        "env": {"HOME": "/home/alice", "USER": "alice", "PATH": "/home/alice/.venv/bin:/usr/bin"},
        "files": {"/home/alice/.venv/bin/python": {"link": "/usr/bin/python3"}, "/srv/alice/data/x": {}},
    }
    clean = redact_document(document, "/home/alice", "alice")
    text = json.dumps(clean)
    assert "alice" not in text
    assert clean["env"]["PATH"] == "/home/user/.venv/bin:/usr/bin"


def test_redaction_covers_windows_case_homepath_host_and_gpu_uuids():
    document = {
        "name": "snapshot-ALICE-PC",
        "env": {
            "USERPROFILE": "C:\\Users\\Alice",
            "HOMEPATH": "\\Users\\alice",
            "COMPUTERNAME": "ALICE-PC",
            "LOGONSERVER": "\\\\ALICE-PC",
        },
        "files": {"c:\\users\\alice\\env\\python.exe": {}, "C:\\Data\\alice-pc-notes\\x": {}},
        "nvml": {"gpus": [{"name": "NVIDIA GeForce RTX 3060", "uuid": "GPU-8d2b9c3e-1f4a-4b7c-9e2d-0a1b2c3d4e5f"}]},
    }
    clean = redact_document(document, "C:\\Users\\Alice", "alice", "alice-pc")
    assert (
        clean["files"].get("C:\\Data\\alice-pc-notes\\x") == {}
    )  # only whole values are the host: a host called "cuda" must not rewrite paths
    del clean["files"]["C:\\Data\\alice-pc-notes\\x"]
    text = json.dumps(clean).lower()
    assert "alice" not in text and "8d2b9c3e" not in text and clean["env"]["LOGONSERVER"] == "\\\\host"
    assert clean["env"]["USERPROFILE"] == "C:\\Users\\user" and clean["env"]["HOMEPATH"] == "\\Users\\user"
    assert (
        clean["name"] == "snapshot-host"
        and clean["nvml"]["gpus"][0]["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    )
    assert "c:\\users\\user\\env\\python.exe" in {k.lower() for k in clean["files"]}
