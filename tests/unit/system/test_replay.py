"""Replay equals live: a machine recorded by `snapshot` replays to the same findings and severities.

The recorder is run over fixture machines (record(FixtureSystem(doc)) → FixtureSystem), generated
with links, chains of links, folders behind links, binaries whose run-time loads come from a scan,
files that are no binary, empty and unreadable files, and real loads; and over this computer, live.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudnn_doctor.cli.snapshot import take_snapshot
from cudnn_doctor.diagnose import Diagnosis, diagnose
from cudnn_doctor.probes import run_probes
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.fixture_format import validate
from cudnn_doctor.system.live import LiveSystem
from cudnn_doctor.system.recorder import RecordingSystem
from tests.conftest import LINUX_BASE, WINDOWS_BASE, all_fixture_paths, machine

FIXTURES = [p for p in all_fixture_paths() if "source:" not in p.read_text(encoding="utf-8")]
DOCUMENTS = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in FIXTURES]


def record(system: Any, with_frameworks: bool = True) -> dict[str, Any]:
    """What `snapshot` writes for `system`, read back as a file would be."""
    recorder = RecordingSystem(system)
    run_probes(recorder, with_frameworks)
    return validate(json.loads(json.dumps(recorder.document("replayed"))))


def summary(diagnosis: Diagnosis) -> list[tuple[str, str, str]]:
    return sorted((f.id, f.severity.value, f.detail) for f in diagnosis.findings)


def assert_replay_equals_live(document: dict[str, Any]) -> dict[str, Any]:
    live = diagnose(FixtureSystem(copy.deepcopy(document)))
    recorded = record(FixtureSystem(copy.deepcopy(document)))
    replayed = diagnose(FixtureSystem(recorded))
    assert summary(replayed) == summary(live)
    assert replayed.facts.resolutions == live.facts.resolutions
    assert replayed.facts.confirmations == live.facts.confirmations
    return recorded


# Machines built for one difference each -------------------------------------------------------

CUDNN9 = "/home/dev/.venv/lib/python3.11/site-packages/nvidia/cudnn/lib"
TORCH_LIB = "/home/dev/.venv/lib/python3.11/site-packages/torch/lib"
TORCH = {"version": "2.5.1+cu124", "cuda": "12.4", "cudnn": 90100, "cuda_available": True, "device_count": 1}


def _torch_machine(**files: Any) -> dict[str, Any]:
    python = dict(
        LINUX_BASE["pythons"][0],
        packages={"torch": "2.5.1+cu124", "nvidia-cudnn-cu12": "9.1.0.70"},
        frameworks={"torch": TORCH},
    )
    base = {
        f"{TORCH_LIB}/libtorch_cuda.so": {
            "imports": ["libcudnn.so.9", "libc.so.6"],
            "rpath": ["$ORIGIN/../../nvidia/cudnn/lib"],
        },
        f"{CUDNN9}/libcudnn.so.9": {"soname": "libcudnn.so.9", "imports": ["libc.so.6"]},
    }
    base.update(files)
    return machine(LINUX_BASE, files=base, pythons=[python])


def test_a_scanned_load_list_stays_incomplete_so_an_optional_miss_stays_a_warning():
    """Live, `loads` come from a string scan: knowledge adds to them and a missing unversioned `.so` is optional (a warning).
    Recorded as a complete list, the replay made it an error and dropped the knowledge loads."""
    document = _torch_machine(
        **{
            f"{CUDNN9}/libcudnn.so.9": {
                "soname": "libcudnn.so.9",
                "imports": ["libc.so.6"],
                "loads": ["libnvrtc.so"],
                "loads_complete": False,
            }
        }
    )
    live = diagnose(FixtureSystem(document))
    missing = [f for f in live.findings if f.id == "dependency-missing" and "libnvrtc.so" in f.detail]
    assert [f.severity.value for f in missing] == ["warning"]
    recorded = assert_replay_equals_live(document)
    assert recorded["files"][f"{CUDNN9}/libcudnn.so.9"]["loads_complete"] is False


def test_a_fixture_without_loads_replays_with_the_knowledge_loads():
    """No `loads`: the knowledge's run-time loads of cuDNN 9 apply (its sub-libraries); the record must not freeze `loads: []` as complete."""
    document = _torch_machine()
    live = diagnose(FixtureSystem(document))
    assert any(s.how == "load" for r in live.facts.resolutions for s in r.steps)
    recorded = assert_replay_equals_live(document)
    assert recorded["files"][f"{CUDNN9}/libcudnn.so.9"] == {
        "size": 1024,
        "imports": ["libc.so.6"],
        "loads": [],
        "loads_complete": False,
        "machine": "x86_64",
        "soname": "libcudnn.so.9",
    }


def test_a_file_that_is_no_binary_stays_one():
    document = _torch_machine(**{f"{CUDNN9}/libcudnn.so.9": {"binary_error": "not a PE or ELF file"}})
    live = diagnose(FixtureSystem(document))
    assert any(
        c.problem and c.problem.detail == "not a PE or ELF file"
        for r in live.facts.resolutions
        for s in r.steps
        for c in s.candidates
    )
    recorded = assert_replay_equals_live(document)
    assert recorded["files"][f"{CUDNN9}/libcudnn.so.9"]["binary_error"] == "not a PE or ELF file"


def test_chains_of_links_and_folders_behind_links_are_recorded():
    """`cuda` → `/etc/alternatives/cuda` → `cuda-12.4`; a listed file that links into another folder; a folder linked to one elsewhere."""
    document = _torch_machine(
        **{
            "/usr/local/cuda": {"link": "/etc/alternatives/cuda"},
            "/etc/alternatives/cuda": {"link": "/usr/local/cuda-12.4"},
            "/usr/local/cuda-12.4/lib64/libcudart.so.12": {"link": "../targets/x86_64-linux/lib/libcudart.so.12.4.127"},
            "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127": {
                "soname": "libcudart.so.12",
                "imports": ["libc.so.6"],
                "loads": [],
            },
            "/usr/local/cuda-12.4/version.json": {"text": '{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}'},
            f"{TORCH_LIB}/libcudnn_graph.so.9": {"link": "/opt/cudnn/lib/libcudnn_graph.so.9"},
            "/opt/cudnn": {"link": "cudnn-9.1"},
            "/opt/cudnn-9.1/lib/libcudnn_graph.so.9": {"soname": "libcudnn_graph.so.9", "loads": [], "size": 0},
        }
    )
    document["env"].update(LD_LIBRARY_PATH="/usr/local/cuda/lib64", CUDA_PATH="/usr/local/cuda")
    recorded = assert_replay_equals_live(document)
    files = recorded["files"]
    assert files["/usr/local/cuda"] == {"link": "/etc/alternatives/cuda"} and files["/etc/alternatives/cuda"] == {
        "link": "/usr/local/cuda-12.4"
    }
    assert files["/opt/cudnn"] == {"link": "cudnn-9.1"} and files["/opt/cudnn-9.1/lib/libcudnn_graph.so.9"]["size"] == 0


def test_listings_name_entries_below_the_folder_as_asked():
    """`os.scandir('/lib64')` names `/lib64/x`, not `/usr/lib64/x`: the fixture lists a linked folder the same way."""
    document = machine(
        LINUX_BASE, files={"/lib64": {"link": "usr/lib64"}, "/usr/lib64/ld-linux-x86-64.so.2": {"size": 5}}
    )
    listing = FixtureSystem(document).list_dir("/lib64")
    assert [e.path for e in listing or []] == ["/lib64/ld-linux-x86-64.so.2"]


MAPPED = {
    "cudart64_110.dll": {"path": "C:\\Elsewhere\\cudart64_110.dll"},
    "cublas64_11.dll": {},
    "cudnn64_8.dll": {"error": "[WinError 126] The specified module could not be found"},
}


def test_real_loads_are_recorded_and_replayed():
    """`loader-emulation-differs` asks for a snapshot: the real loads it rests on must be in it."""
    python = dict(WINDOWS_BASE["pythons"][0], packages={"tensorflow": "2.10.0"}, mapped=MAPPED)
    python["frameworks"] = {
        "tensorflow": {
            "version": "2.10.0",
            "built_with_cuda": True,
            "build_info": {"cuda_version": "64_112", "cudnn_version": "64_8"},
        }
    }
    document = machine(
        WINDOWS_BASE, pythons=[python], files={"C:\\Users\\dev\\env\\cudart64_110.dll": {"imports": ["KERNEL32.dll"]}}
    )
    live = diagnose(FixtureSystem(document))
    assert "loader-emulation-differs" in {f.id for f in live.findings}
    recorded = assert_replay_equals_live(document)
    assert recorded["pythons"][0]["mapped"] == MAPPED
    assert (
        FixtureSystem(machine(WINDOWS_BASE)).mapped_libraries("C:\\Users\\dev\\env\\python.exe", ["cudart64_110.dll"])
        is None
    )


def test_sudo_is_kept_in_the_record():
    """nvcc-not-on-path explains a lost PATH by sudo only when SUDO_USER is there."""
    document = machine(
        LINUX_BASE,
        env={"SUDO_USER": "dev"},
        files={
            "/usr/local/cuda-9.0/bin/nvcc": {},
            "/usr/local/cuda-9.0/version.txt": {"text": "CUDA Version 9.0.176\n"},
        },
    )
    recorded = assert_replay_equals_live(document)
    assert recorded["env"]["SUDO_USER"] == "dev"


def test_a_later_shorter_read_does_not_cut_the_recorded_text():
    document = machine(LINUX_BASE, files={"/etc/ld.so.conf": {"text": "include /etc/ld.so.conf.d/*.conf\n"}})
    recorder = RecordingSystem(FixtureSystem(document))
    recorder.read_text("/etc/ld.so.conf")
    recorder.read_text("/etc/ld.so.conf", limit=3)
    assert recorder.document("x")["files"]["/etc/ld.so.conf"] == {"text": "include /etc/ld.so.conf.d/*.conf\n"}


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_every_fixture_machine_replays_to_itself(path: Path):
    assert_replay_equals_live(validate(yaml.safe_load(path.read_text(encoding="utf-8"))))


# Generated machines ----------------------------------------------------------------------------


def _binaries(doc: dict[str, Any]) -> list[str]:
    return sorted(
        p
        for p, e in doc["files"].items()
        if isinstance(e, dict) and "link" not in e and "text" not in e and not p.endswith(("/", "\\"))
    )


def _rules(doc: dict[str, Any]) -> Any:
    return FixtureSystem(doc).paths


def drop_loads(doc: dict[str, Any], draw: Callable) -> None:
    """A binary whose run-time loads are not listed (knowledge supplies them) or came from a scan."""
    names = [p for p in _binaries(doc) if "loads" in doc["files"][p]]
    if names:
        entry = doc["files"][draw(st.sampled_from(names))]
        if draw(st.booleans()):
            del entry["loads"]
        else:
            entry["loads_complete"] = False


def move_behind_link(doc: dict[str, Any], draw: Callable) -> None:
    """A file or a whole folder moves elsewhere; a link (relative or absolute, maybe two hops) stays at the old place."""
    names = _binaries(doc)
    if not names:
        return
    rules = _rules(doc)
    old = draw(st.sampled_from(names))
    if draw(st.booleans()):
        old = rules.dirname(old)
    new = (
        rules.join(rules.dirname(old), "real-" + rules.basename(old))
        if draw(st.booleans())
        else rules.join(rules.dirname(rules.dirname(old)) or old, "moved", rules.basename(old))
    )
    if rules.inside(new, old) or rules.same(new, old):
        return
    files = doc["files"]
    for path in [p for p in files if rules.inside(p, old)]:
        files[new + path[len(old) :]] = files.pop(path)
    target = rules.basename(new) if rules.same(rules.dirname(new), rules.dirname(old)) and draw(st.booleans()) else new
    if draw(st.booleans()):
        hop = rules.join(rules.dirname(old), "alternatives-" + rules.basename(old))
        files[hop] = {"link": target}
        target = hop
    files[old] = {"link": target}


def spoil(doc: dict[str, Any], draw: Callable) -> None:
    """A library becomes empty, unreadable, no binary, for another machine, or disappears; or a link dangles or loops."""
    names = _binaries(doc)
    if not names:
        return
    path = draw(st.sampled_from(names))
    entry = doc["files"][path]
    choice = draw(st.sampled_from(["empty", "unreadable", "not-binary", "machine", "gone", "dangling", "loop"]))
    if choice == "empty":
        entry["size"] = 0
    elif choice == "unreadable":
        entry["readable"] = False
    elif choice == "not-binary":
        doc["files"][path] = {"binary_error": "not a PE or ELF file", "size": 7}
    elif choice == "machine":
        entry["machine"] = "aarch64" if doc["os"] == "linux" else "x86"
    elif choice == "gone":
        del doc["files"][path]
    elif choice == "dangling":
        doc["files"][path] = {"link": "nowhere-" + _rules(doc).basename(path)}
    else:
        doc["files"][path] = {"link": _rules(doc).basename(path)}


def real_loads(doc: dict[str, Any], draw: Callable) -> None:
    """What loading a library for real gave: a path (maybe not the emulated one), nothing, or an error."""
    for python in doc.get("pythons") or []:
        names = [n for p in _binaries(doc) for n in [_rules(doc).basename(p)]]
        for name in draw(st.lists(st.sampled_from(names or ["libcudart.so.12"]), max_size=3)):
            python.setdefault("mapped", {})[name] = draw(
                st.sampled_from(
                    [
                        {},
                        {"error": f"{name}: cannot open shared object file"},
                        {"path": draw(st.sampled_from(_binaries(doc) or ["/x"]))},
                    ]
                )
            )


def reach_through_link(doc: dict[str, Any], draw: Callable) -> None:
    """A folder the environment names (PATH, LD_LIBRARY_PATH, CUDA_PATH) or an interpreter is reached through a new link."""
    rules = _rules(doc)
    names = _binaries(doc)
    if not names:
        return
    folder = rules.dirname(draw(st.sampled_from(names)))
    link = rules.join(rules.dirname(folder) or folder, "via-link")
    if rules.inside(folder, link) or any(rules.inside(p, link) for p in doc["files"]):
        return
    doc["files"][link] = {"link": folder if draw(st.booleans()) else rules.basename(folder)}
    variable = draw(st.sampled_from(["PATH", "LD_LIBRARY_PATH", "CUDA_PATH", "python"]))
    if variable == "python":
        pythons = doc.get("pythons") or []
        executables = [
            p for p in names if rules.basename(p).startswith("python") and rules.same(rules.dirname(p), folder)
        ]
        if pythons and executables:
            python = draw(st.sampled_from(pythons))
            python["executable"] = rules.join(link, rules.basename(python["executable"]))
        return
    separator = ";" if rules.windows else ":"
    old = doc["env"].get(variable)
    doc["env"][variable] = (
        link
        if variable == "CUDA_PATH" or not old
        else separator.join([link, old] if draw(st.booleans()) else [old, link])
    )


MUTATIONS = [drop_loads, move_behind_link, spoil, real_loads, reach_through_link]


@st.composite
def generated_machine(draw: Callable) -> dict[str, Any]:
    document = copy.deepcopy(draw(st.sampled_from(DOCUMENTS)))
    for _ in range(draw(st.integers(1, 6))):
        draw(st.sampled_from(MUTATIONS))(document, draw)
    return validate(document)


@pytest.mark.skipif(not DOCUMENTS, reason="no fixture machines to start from")
@settings(
    max_examples=int(os.environ.get("CUDNN_DOCTOR_REPLAYS", "60")),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(generated_machine())
def test_a_recorded_machine_replays_to_the_same_findings_and_severities(document: dict[str, Any]):
    assert_replay_equals_live(document)


# This computer ------------------------------------------------------------------------------


def _ids_and_severities(diagnosis: Diagnosis) -> list[tuple[str, str]]:
    return sorted((f.id, f.severity.value) for f in diagnosis.findings)


@pytest.mark.live
def test_live_and_replay_agree_on_this_machine_with_its_frameworks():
    """The environment the suite runs in, frameworks imported: whatever is installed here, the replay says the same."""
    live = diagnose(LiveSystem())
    document = validate(json.loads(json.dumps(take_snapshot(with_frameworks=True))))
    replayed = diagnose(FixtureSystem(document))
    assert _ids_and_severities(replayed) == _ids_and_severities(live)
    assert replayed.facts.resolutions == live.facts.resolutions


@pytest.mark.live
@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links and ELF files")
def test_live_and_replay_agree_on_a_built_cuda_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A toolkit behind two links, a cuDNN that is no binary, an empty one, a listed link into another folder: live and replayed alike."""
    real = tmp_path / "cuda-12.4"
    (real / "lib64").mkdir(parents=True)
    (real / "bin").mkdir()
    (real / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}', encoding="utf-8")
    (real / "lib64" / "libcudnn.so.9").write_bytes(b"garbage")
    (real / "lib64" / "libcudnn_ops.so.9").write_bytes(b"")
    other = tmp_path / "other"
    other.mkdir()
    shutil.copyfile(os.path.realpath(sys.executable), other / "libcudart.so.12.4.127")  # any ELF file of this machine
    (real / "lib64" / "libcudart.so.12").symlink_to(other / "libcudart.so.12.4.127")
    (tmp_path / "alternatives").symlink_to("cuda-12.4")
    (tmp_path / "cuda").symlink_to(tmp_path / "alternatives")
    cuda = str(tmp_path / "cuda")
    monkeypatch.setenv("CUDA_PATH", cuda)
    monkeypatch.setenv("CUDA_HOME", cuda)
    monkeypatch.setenv("LD_LIBRARY_PATH", os.path.join(cuda, "lib64"))
    monkeypatch.setenv("PATH", os.path.join(cuda, "bin") + os.pathsep + os.environ.get("PATH", ""))
    live = diagnose(LiveSystem(), with_frameworks=False)
    document = validate(json.loads(json.dumps(take_snapshot(with_frameworks=False))))
    replayed = diagnose(FixtureSystem(document), with_frameworks=False)
    assert summary(replayed) == summary(live)
    assert replayed.facts.cudnn == live.facts.cudnn
    files = document["files"]
    assert files[cuda] == {"link": str(tmp_path / "alternatives")} and files[str(tmp_path / "alternatives")] == {
        "link": "cuda-12.4"
    }
    assert (
        files[str(real / "lib64" / "libcudnn.so.9")].get("binary_error")
        or files[str(real / "lib64" / "libcudnn.so.9")]["size"] == 7
    )
