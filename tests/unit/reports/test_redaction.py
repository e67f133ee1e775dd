"""`snapshot --redact` on Windows (issue 10): the user's name goes from every value and path, whatever its
casing (`C:\\Users\\Dev` and `c:\\users\\dev` are one folder), from %HOMEPATH% and the 8.3 short name too, and
the redacted machine replays to the same findings."""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
from typing import Any

import pytest
import yaml

from cudnn_doctor.privacy import redact_document, user_names
from cudnn_doctor.system.fixture_format import validate
from tests.conftest import WINDOWS_BASE, all_fixture_paths, machine, run

PROFILE = "C:\\Users\\jsmith.CORP"  # a domain profile folder: its last part is not the USERNAME


def _summary(document: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((f.id, f.severity.value) for f in run(document, with_frameworks=False).findings)


def _mentions(text: str, name: str) -> list[str]:
    """Where `name` (any casing) still stands as a whole component of a path or value."""
    return re.findall(rf"(?i)(?<![\w.~-]){re.escape(name)}(?![\w-])", text)


def test_user_names_are_the_variables_the_login_and_the_profile_folder():
    names = user_names({"USERNAME": "JSmith", "LOGNAME": "jsmith"}, PROFILE)
    assert {"JSmith", "jsmith", "jsmith.CORP"} <= set(names) and "" not in names
    assert "" not in user_names({}, "~") and "" not in user_names({"USER": ""}, "")


def test_a_home_variable_that_names_another_folder_gives_its_name_too():
    """On Windows the home folder is USERPROFILE; Git Bash, MSYS and Cygwin set HOME, which can be elsewhere."""
    names = user_names(
        {"USERNAME": "js", "HOME": "/c/msys/home/jsmith-git", "USERPROFILE": "C:\\Users\\js.CORP"}, "C:\\Users\\js"
    )
    assert {"js", "jsmith-git", "js.CORP"} <= set(names)


def test_every_casing_homepath_forward_slashes_short_names_and_command_output():
    where = "C:\\Users\\JSmith.Corp\\envs\\tf\\python.exe\r\nC:\\Python310\\python.exe\r\n"
    document = {
        "os": "windows",
        "env": {
            "USERPROFILE": PROFILE,
            "HOMEPATH": "\\Users\\JSMITH.corp",
            "APPDATA": "c:\\users\\jsmith.corp\\AppData\\Roaming",
            "LOCALAPPDATA": "C:\\USERS\\JSMITH.CORP\\AppData\\Local",
            "USERNAME": "jsmith",
            "PATH": "C:/Users/JSmith.corp/bin;C:\\Users\\JSMITH~1\\tools;D:\\work\\JSMITH;C:\\Windows",
            "CONDA_PREFIX": "D:\\envs\\JSmith",
        },
        "files": {
            "c:\\users\\JSMITH.CORP\\envs\\tf\\python.exe": {},
            "C:\\Data\\jsmith-notes\\x": {},
            "D:\\work\\Jsmith\\cudnn64_8.dll": {},
        },
        "commands": {"where python": {"returncode": 0, "stdout": where, "stderr": ""}},
        "pythons": [{"executable": "C:\\Users\\jsmith.corp\\envs\\tf\\python.exe", "version": "3.10.11"}],
    }
    clean = redact_document(document, PROFILE, ["JSmith", "jsmith.CORP"], "ws-01")
    text = json.dumps(clean)
    assert not _mentions(text, "jsmith") and not _mentions(text, "jsmith.corp") and "~1" not in text, text
    env = clean["env"]
    assert env["HOMEPATH"] == "\\Users\\user" and env["USERPROFILE"] == "C:\\Users\\user"
    assert (
        env["APPDATA"].lower() == "c:\\users\\user\\appdata\\roaming"
        and env["LOCALAPPDATA"].lower() == "c:\\users\\user\\appdata\\local"
    )
    assert env["PATH"] == "C:/Users/user/bin;C:\\Users\\user\\tools;D:\\work\\user;C:\\Windows"
    assert env["CONDA_PREFIX"] == "D:\\envs\\user"
    assert "C:\\Data\\jsmith-notes\\x" in clean["files"]  # a name inside another name is not the user's folder
    assert (
        clean["commands"]["where python"]["stdout"]
        == "C:\\Users\\user\\envs\\tf\\python.exe\r\nC:\\Python310\\python.exe\r\n"
    )
    assert clean["pythons"][0]["executable"].lower() == "c:\\users\\user\\envs\\tf\\python.exe"


def test_a_linux_name_keeps_its_case_rule():
    document = {
        "os": "linux",
        "env": {"HOME": "/home/alice", "PATH": "/home/alice/bin:/opt/alice:/usr/bin"},
        "files": {"/home/alice/x": {}},
    }
    clean = redact_document(document, "/home/alice", ["alice"])
    assert clean["env"]["PATH"] == "/home/user/bin:/opt/user:/usr/bin" and "/home/user/x" in clean["files"]


def _cased(value: Any, name: str, casings: Any) -> Any:
    """The document with every `\\Users\\<name>` written in the next of several casings, as Windows tools do."""
    if isinstance(value, str):
        return re.sub(rf"(?i)(\\users\\){re.escape(name)}(?=\\|$)", lambda m: m.group(1) + next(casings), value)
    if isinstance(value, dict):
        return {_cased(k, name, casings): _cased(v, name, casings) for k, v in value.items()}
    if isinstance(value, list):
        return [_cased(v, name, casings) for v in value]
    return value


def _windows_profile_machines() -> list[tuple[str, dict[str, Any], str]]:
    machines = []
    for path in all_fixture_paths():
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        found = re.search(r"(?i)[a-z]:\\users\\([a-z0-9_.]{2,})\\", json.dumps(document).replace("\\\\", "\\"))
        if document.get("os") == "windows" and found and found.group(1).lower() not in ("public", "default"):
            machines.append((path.stem, document, found.group(1)))
    machines.append(("base", machine(WINDOWS_BASE), "dev"))
    return machines


@pytest.mark.parametrize(
    ("stem", "document", "name"),
    _windows_profile_machines(),
    ids=lambda v: v if isinstance(v, str) and "\\" not in v else "",
)
def test_windows_machines_with_the_name_in_every_casing_replay_redacted_to_the_same_findings(stem, document, name):
    casings = itertools.cycle([name.upper(), name.capitalize(), name.lower(), name])
    document = _cased(copy.deepcopy(document), name, casings)
    document.setdefault("env", {}).update(
        {
            "USERPROFILE": f"C:\\Users\\{name.capitalize()}",
            "HOMEPATH": f"\\Users\\{name.upper()}",
            "APPDATA": f"c:\\users\\{name.lower()}\\AppData\\Roaming",
        }
    )
    document = validate(document)
    clean = validate(
        json.loads(json.dumps(redact_document(document, f"C:\\Users\\{name}", [name.upper()], "host-name")))
    )
    assert not _mentions(json.dumps(clean).replace("\\\\", "\\"), name), stem
    assert clean["env"]["HOMEPATH"] == "\\Users\\user"
    assert _summary(clean) == _summary(document), stem


@pytest.mark.live
def test_snapshot_redact_takes_the_names_from_the_environment_and_the_home_folder(tmp_path, monkeypatch):
    """The live CLI: USERNAME, LOGNAME and the home folder's last part all go, not only the login's name."""
    from cudnn_doctor.cli import main

    home = tmp_path / "Qzhome.Corp"
    (home / "bin").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERNAME", "qzwin")
    monkeypatch.setenv("LOGNAME", "qzlog")
    monkeypatch.setenv("PATH", f"{home / 'bin'}:/opt/qzwin/bin:/srv/qzlog:/srv/Qzhome.Corp/x:{os.environ['PATH']}")
    out = tmp_path / "machine.yaml"
    assert main(["snapshot", "--no-frameworks", "--redact", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    validate(yaml.safe_load(text))
    assert not any(_mentions(text, name) for name in ("qzwin", "qzlog", "Qzhome.Corp")), text
    assert "/opt/user/bin" in text and "/srv/user:" in text
