"""Many environments (issue 15): framework and loader-check children in one pool bounded by the CPU count,
the loader check answered by the framework child itself, and a hung interpreter asked once."""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.facts import PythonEnv
from cudnn_doctor.probes.confirm import probe_confirmations
from cudnn_doctor.probes.pythons import probe_frameworks
from cudnn_doctor.system import pyenv
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.live import LiveSystem
from tests.conftest import GALLERY

linux_fork = pytest.mark.skipif(
    not hasattr(os, "fork") or sys.platform != "linux", reason="the fold needs fork and /proc/self/maps"
)


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    """A folder on the running interpreter's PYTHONPATH, for stand-in frameworks."""
    if pyenv.pth_file(Path(sys.executable)) is not None:
        pytest.skip("this interpreter's ._pth file makes it ignore PYTHONPATH")
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(folder))
    return folder


def _onnxruntime(site: Path, body: str) -> None:
    """A stand-in ONNX Runtime whose import runs `body` first."""
    (site / "onnxruntime").mkdir()
    source = body + '\n__version__ = "1.16.3"\ndef get_available_providers():\n    return ["CPUExecutionProvider"]\n'
    (site / "onnxruntime" / "__init__.py").write_text(source, encoding="utf-8")


def _counting_import(site: Path, log: Path, seconds: float) -> None:
    """An import that notes how many imports run at once (every process sees the same folder) and when it started."""
    _onnxruntime(
        site,
        textwrap.dedent(
            f"""
            import os, time
            running = {str(log / "running")!r}
            os.makedirs(running, exist_ok=True)
            mine = os.path.join(running, str(os.getpid()))
            open(mine, "w").close()
            with open({str(log / "seen")!r}, "a") as handle:
                handle.write("%d\\n" % len(os.listdir(running)))
            time.sleep({seconds})
            os.remove(mine)
            """
        ),
    )


def _pythons(count: int) -> tuple[PythonEnv, ...]:
    """`count` environments with ONNX Runtime installed (all the running interpreter: each is asked on its own)."""
    return tuple(
        PythonEnv(sys.executable, "3", "venv", index == 0, {"onnxruntime": "1.16.3"}) for index in range(count)
    )


@pytest.mark.live
def test_imports_of_many_environments_run_at_most_cpu_count_at_once(site, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    _counting_import(site, tmp_path, 0.5)
    pythons = probe_frameworks(LiveSystem(), _pythons(6), timeout=60)
    assert all(p.frameworks["onnxruntime"]["version"] == "1.16.3" for p in pythons)
    seen = [int(line) for line in (tmp_path / "seen").read_text().split()]
    assert len(seen) == 6
    assert max(seen) <= 2  # unbounded, all six import at once and their memory adds up
    assert max(seen) == 2  # and the pool is used: two at a time


@pytest.mark.live
def test_the_pool_has_at_least_one_place(site, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # os.cpu_count() may not know
    _counting_import(site, tmp_path, 0.1)
    pythons = probe_frameworks(LiveSystem(), _pythons(3), timeout=60)
    assert [p.frameworks["onnxruntime"]["version"] for p in pythons] == ["1.16.3"] * 3
    assert max(int(line) for line in (tmp_path / "seen").read_text().split()) == 1


@pytest.mark.live
def test_an_interpreter_that_timed_out_is_not_asked_again(site, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # the second import waits for the first one's place
    starts = tmp_path / "starts"
    for name in ("jax", "paddle"):
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(
            f"open({str(starts)!r}, 'a').write('{name}\\n')\nimport time\ntime.sleep(30)\n", encoding="utf-8"
        )
    system = LiveSystem()
    reports = system.framework_reports(sys.executable, ["jax", "paddle"], timeout=2)
    assert all(report["error"].startswith("TimeoutError") for report in reports.values())
    assert len(starts.read_text().split()) == 1  # the interpreter hung once: the second import never started
    assert system.mapped_libraries(sys.executable, ["libc.so.6"]) is None  # nor does the loader check start it


@pytest.mark.live
@linux_fork
def test_the_framework_child_answers_the_loader_check_as_a_child_of_its_own_would(site, monkeypatch):
    _onnxruntime(site, "")
    names = [Path(ctypes.util.find_library("z") or "libz.so.1").name, "libcudnn_doctor_absent.so.9"]
    separate = LiveSystem().mapped_libraries(sys.executable, names)
    assert separate is not None and separate["loaded"][names[0]] and names[1] in separate["errors"]

    system = LiveSystem()
    system.expect_mapped_libraries(sys.executable, lambda machine: {"onnxruntime": names})
    report = system.framework_reports(sys.executable, ["onnxruntime"], timeout=60)["onnxruntime"]
    assert report["version"] == "1.16.3" and "_mapped" not in report  # the fork's answer is no part of the report

    def no_second_child(*args, **kwargs):
        raise AssertionError("the loader check started a child of its own")

    monkeypatch.setattr(system, "_child", no_second_child)
    assert system.mapped_libraries(sys.executable, names) == separate
    with pytest.raises(AssertionError, match="child of its own"):  # other names: that guess did not cover them
        system.mapped_libraries(sys.executable, names[:1])


@pytest.mark.live
@linux_fork
def test_the_forked_loads_are_not_seen_by_the_import(site, tmp_path):
    """The fork is taken before the import: a library it loads is not in the framework's process."""
    libz = Path(ctypes.util.find_library("z") or "libz.so.1").name
    maps = tmp_path / "maps"
    _onnxruntime(
        site, f"import time\ntime.sleep(0.3)\nopen({str(maps)!r}, 'w').write(open('/proc/self/maps').read())\n"
    )
    system = LiveSystem()
    system.expect_mapped_libraries(sys.executable, lambda machine: {"onnxruntime": [libz]})
    system.framework_reports(sys.executable, ["onnxruntime"], timeout=60)
    assert system._mapped  # the fork answered
    assert libz not in maps.read_text()


@pytest.mark.live
def test_the_framework_child_imports_nothing_a_light_framework_does_not(site):
    """Every environment pays what the probe script imports on top of the framework: `import json` (re, enum,
    functools) and `import signal` (enum) were 10-15 ms of a 0.23 s child. Only these few may come on top."""
    from cudnn_doctor.system.live_processes import _script

    _onnxruntime(site, "")
    libz = Path(ctypes.util.find_library("z") or "libz.so.1").name

    def imported(argv: list[str]) -> set[str]:
        done = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, check=True)
        return {
            line.rsplit("|", 1)[1].strip()
            for line in done.stderr.splitlines()
            if line.startswith("import time:") and "|" in line
        }

    bare = imported(["-c", "import onnxruntime"])
    probe = imported(["-c", _script("framework_probe.py"), "onnxruntime", _script("map_probe.py"), libz])
    assert "onnxruntime" in probe
    assert probe - bare <= {"warnings", "select", "time", "_warnings"}, sorted(probe - bare)


class _Hinted(FixtureSystem):
    """A described machine that notes the hints and the loader checks asked of it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.expected: list[tuple[str, tuple[str, ...]]] = []
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    def expect_mapped_libraries(self, executable, guess):
        self.expected.extend((executable, tuple(names)) for names in guess(self).values())

    def mapped_libraries(self, executable, names):
        self.asked.append((executable, tuple(names)))
        return super().mapped_libraries(executable, names)


@pytest.mark.parametrize(
    "name",
    ["linux-tf213-old-cudnn81-first-on-ld-library-path.yaml", "win-healthy-tf210-cuda112-cudnn81-tools-folder.yaml"],
)
def test_the_hint_names_what_the_loader_check_asks(name):
    """Before the import, the packages on disk already say which names TensorFlow loads: the guess is the question."""
    system = _Hinted.from_file(GALLERY / name)
    plain = diagnose(FixtureSystem.from_file(GALLERY / name))
    hinted = diagnose(system)
    assert system.asked and set(system.asked) <= set(system.expected)
    assert [f.id for f in hinted.findings] == [f.id for f in plain.findings]


def test_loader_checks_are_answered_in_order(monkeypatch):
    """Asked from a pool, each answer still goes with its own resolution."""
    system = FixtureSystem.from_file(GALLERY / "linux-tf213-old-cudnn81-first-on-ld-library-path.yaml")
    resolutions = diagnose(system).facts.resolutions
    doubled = tuple(r._replace(executable=f"/env{index}/bin/python") for index, r in enumerate(resolutions * 4))
    monkeypatch.setattr(
        system, "mapped_libraries", lambda exe, names: {"loaded": {n: f"{exe}:{n}" for n in names}, "errors": {}}
    )
    confirmations = probe_confirmations(system, doubled)
    assert len({c.executable for c in confirmations}) > 1
    assert all(c.real == f"{c.executable}:{c.name}" for c in confirmations)


def test_slow_imports_start_first_and_each_report_goes_with_its_environment(monkeypatch):
    """Longest job first: an environment with torch found last must not start its import after all the light
    ones (on 2 cores it would end the run alone, 1.5 s after them); answers still go with their environment."""
    from cudnn_doctor.probes import confirm
    from cudnn_doctor.probes import pythons as module

    packages = [
        {"onnxruntime-gpu": "1.20.1"},
        {"cupy-cuda12x": "13.3.0"},
        {"torch": "2.5.1"},
        {"numpy": "2.1"},
        {"tensorflow": "2.17.0", "jax": "0.4.35"},
    ]
    environments = tuple(
        PythonEnv(f"/env{index}/bin/python", "3.11", "venv", False, p) for index, p in enumerate(packages)
    )
    started: list[str] = []

    class Recording(FixtureSystem):
        def framework_reports(self, executable, frameworks, timeout):
            started.append(executable)
            return {name: {"version": executable} for name in frameworks}

    monkeypatch.setattr(
        confirm, "in_pool", lambda ask, items: [ask(item) for item in items]
    )  # one at a time, in its order
    system = Recording.from_file(GALLERY / "linux-tf213-old-cudnn81-first-on-ld-library-path.yaml")
    probed = module.probe_frameworks(system, environments)
    assert started == [
        "/env4/bin/python",
        "/env2/bin/python",
        "/env0/bin/python",
        "/env1/bin/python",
        "/env3/bin/python",
    ]
    assert [sorted(p.frameworks) for p in probed] == [["onnxruntime"], ["cupy"], ["torch"], [], ["jax", "tensorflow"]]
    assert all(report["version"] == p.executable for p in probed for report in p.frameworks.values())


class _CountedTuple(tuple):
    """A tuple that counts how often it is walked."""

    walks = 0

    def __iter__(self):
        type(self).walks += 1
        return super().__iter__()


def test_interpreter_mismatch_compares_each_environment_with_the_current_one_only():
    from cudnn_doctor.checks.frameworks import interpreter_mismatch
    from tests.conftest import LINUX_BASE, machine, run

    gpu = {
        "torch": {
            "version": "2.3.1+cu121",
            "cuda": "12.1",
            "cuda_available": True,
            "device_count": 1,
            "arch_list": ["sm_86"],
        }
    }
    cpu = {"torch": {"version": "2.3.1+cpu", "cuda": None, "cuda_available": False, "device_count": 0, "arch_list": []}}

    def env(index: int, frameworks: dict, current: bool = False) -> dict:
        return {
            "executable": f"/envs/e{index}/bin/python",
            "version": "3.11.7",
            "current": current,
            "kind": "conda",
            "packages": {},
            "frameworks": frameworks,
        }

    pythons = [env(0, {}, current=True)] + [env(i, gpu if i % 3 else cpu) for i in range(1, 31)]
    facts = run(machine(LINUX_BASE, pythons=pythons)).facts
    _CountedTuple.walks = 0
    found = list(interpreter_mismatch(facts._replace(builds=_CountedTuple(facts.builds))))
    assert sorted(f.evidence["other"] for f in found) == sorted(f"/envs/e{i}/bin/python" for i in range(1, 31) if i % 3)
    assert _CountedTuple.walks <= 2  # the builds are grouped once, not walked again for every environment


def test_the_guess_reads_only_the_machine_that_uses_it():
    """A described machine never calls the guess; a recording passes it to the machine it records, so the
    files the guess reads are not added to the snapshot."""
    from cudnn_doctor.system.recorder import RecordingSystem

    path = GALLERY / "linux-tf213-old-cudnn81-first-on-ld-library-path.yaml"
    seen: list = []
    FixtureSystem.from_file(path).expect_mapped_libraries("/x/bin/python", lambda machine: seen.append(machine) or {})
    assert seen == []
    inner = _Hinted.from_file(path)
    RecordingSystem(inner).expect_mapped_libraries("/x/bin/python", lambda machine: seen.append(machine) or {})
    assert seen == [inner]
