"""Shared test helpers: where the machine corpora are, and a builder for small machines."""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

from cudnn_doctor.checks import run_checks
from cudnn_doctor.diagnose import Diagnosis, diagnose
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.fixture_format import validate
from tests.registry import restore_user_environment, user_environment

REPO = Path(__file__).resolve().parents[1]
# The project's own machines: in every clone, used by the suite and the README's sample.
GALLERY = REPO / "examples" / "machines"
# The external yardstick, beside the repository; CUDNN_DOCTOR_SHARED_FIXTURES points elsewhere.
SHARED_FIXTURES = Path(os.environ.get("CUDNN_DOCTOR_SHARED_FIXTURES") or REPO.parent / "shared" / "fixtures")
# Downloaded NVIDIA and framework wheels, outside the repository (their binaries are never committed);
# the Windows lane points its Windows Python at the host suite's copy.
TEST_CACHE = Path(os.environ.get("CUDNN_DOCTOR_TEST_CACHE") or Path.home() / ".cache" / "cudnn-doctor-tests")
# The doctor's own state (journals, backups, verify history, `kb update`'s data) of this test process: never the user's,
# and never another run's or another xdist worker's (each imports this file). A test that needs another sets its own.
os.environ.setdefault("CUDNN_DOCTOR_STATE_DIR", tempfile.mkdtemp(prefix="cudnn-doctor-test-state-"))


@contextlib.contextmanager
def cached(name: str) -> Iterator[Path]:
    """The folder TEST_CACHE/`name`, held under a file lock while the caller looks at it and builds it if it must: two
    runs at once (or two xdist workers) never build one entry twice, nor use one half-built. Name an entry by what it
    holds (a hash of its requirements), so that a run that needs other contents makes another, never rebuilds this one."""
    import filelock

    folder = TEST_CACHE / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(folder) + ".lock", timeout=3600):
        yield folder


def keep(target: Path, data: bytes) -> None:
    """Write a cached file whole or not at all: a run killed half-way, or one reading at the same time, never sees a
    truncated library (the bytes go to a file of this process's own, renamed into place)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    partial.write_bytes(data)
    partial.replace(target)


def pip_install(python: Path, *args: str, timeout: float = 1800) -> None:
    """`pip install ARGS` with `python`; a registry that cannot be reached or says no skips the test."""
    import subprocess

    try:
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("the package registry did not answer in time")
    if done.returncode != 0:
        pytest.skip(
            f"cannot install {' '.join(args)} from the package registry: {done.stderr.strip().splitlines()[-1:]}"
        )


def cached_venv(name: str, *requirements: str) -> Path:
    """The python of a venv holding `requirements`, built once under a lock in TEST_CACHE and named by what it holds
    (this interpreter's version and the requirements): another set makes another venv, never rebuilds this one."""
    import subprocess

    with cached(f"venvs/{name}-{content_name(sys.version, *requirements)}") as folder:
        python, stamp = (
            folder / "bin" / "python",
            folder / "cudnn-doctor-requirements.txt",
        )  # the stamp: every requirement in
        if python.exists() and stamp.is_file():
            return python
        base = Path(getattr(sys, "_base_executable", sys.executable))
        made = subprocess.run(
            [str(base), "-m", "venv", "--clear", str(folder)], capture_output=True, text=True, timeout=300
        )
        if made.returncode != 0:
            pytest.skip(f"cannot create a venv with {base}: {made.stderr.strip().splitlines()[-1:]}")
        pip_install(python, *requirements)
        stamp.write_text("\n".join(requirements) + "\n", encoding="utf-8")
    return python


def content_name(*parts: str) -> str:
    """A short, stable name for a cache entry made of `parts` (requirements, the interpreter's version)."""
    import hashlib

    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:12]


# A live install on Windows writes the user's Path in HKCU\\Environment: there, only in the Windows lane's throwaway Wine prefix.
live_install = pytest.mark.skipif(
    sys.platform == "win32" and not os.environ.get("CUDNN_DOCTOR_WINE_LANE"),
    reason="a live install writes HKCU\\Environment: only in the Wine lane",
)


@pytest.fixture(autouse=True)
def _user_environment_kept() -> Any:
    """Windows: whatever a test's live install or rollback wrote in HKCU\\Environment is put back (no-op elsewhere). The
    host is asked here, before the test: one that pretends to be Windows (sys.platform patched) is not."""
    if sys.platform != "win32":
        yield
        return
    saved = user_environment()
    yield
    restore_user_environment(saved)


# Markers of tests that may touch this machine (run them with `-m live`, `-m slow`, …); every other test is a unit
# test, and the tripwire below fails it when it builds a live system or starts a process. The fast lane leaves them out:
#     pytest -m "not live and not slow and not network"
MACHINE_MARKERS = ("live", "slow", "network", "gpu")
TRIPWIRE_RECORD = os.environ.get("CUDNN_DOCTOR_TRIPWIRE_RECORD")  # a file: list the offenders there instead of failing


# Modules whose unit tests replay described machines only (FixtureSystem, in memory: the path rules are the fixture's,
# never the host's) or read the shipped knowledge: they run alike on every host, so the Windows lane leaves their unit
# tests to the Linux one (.ci/windows: -m "not host_independent"); their tests marked live still run there. A module
# that writes host files, reads host binaries or branches on the host stays out of this list.
HOST_INDEPENDENT = {
    "test_builds",
    "test_checks",
    "test_code_size",
    "test_cuda_tags",
    "test_cudnn_checks",
    "test_domain_rules",
    "test_driver_libraries",
    "test_findings_baseline",
    "test_fix",
    "test_fix_facts",
    "test_fixture_mutations",
    "test_fixture_system",
    "test_gallery_fixes",
    "test_kb_update",
    "test_knowledge_cuda_gpus",
    "test_knowledge_cudnn",
    "test_knowledge_gaps",
    "test_knowledge_gpus_legacy",
    "test_knowledge_peaks",
    "test_lazyre",
    "test_machines",
    "test_markdown_report",
    "test_nvidia_smi",
    "test_output_in_reports",
    "test_ownership",
    "test_plan",
    "test_plan_facts",
    "test_plan_install_together",
    "test_plan_request",
    "test_plan_toolkits",
    "test_record",
    "test_rule_pages",
    "test_rules",
    "test_toolkit_checks",
    "test_unclaimed_cudnn",
    "test_undo_exact",
    "test_visible_devices",
    "test_wheel_files",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
        if module in HOST_INDEPENDENT and not any(item.get_closest_marker(name) for name in MACHINE_MARKERS):
            item.add_marker(pytest.mark.host_independent)


class MachineTouched(AssertionError):
    """A unit test reached the machine: mark it `live` (or keep it to fixtures and in-memory systems)."""


@pytest.fixture(autouse=True)
def _unit_tests_stay_off_the_machine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The tripwire (after cibuildwheel's `mock_protection`): a test not marked with one of MACHINE_MARKERS may not build
    a LiveSystem, start a process or fork. Fixtures of a wider scope (a module's venv) are set up before it and stay free."""
    if any(request.node.get_closest_marker(name) for name in MACHINE_MARKERS):
        yield
        return
    import subprocess

    from cudnn_doctor.system.live import LiveSystem

    node = request.node.nodeid

    def tripped(what: str) -> None:
        if TRIPWIRE_RECORD:
            with open(TRIPWIRE_RECORD, "a", encoding="utf-8") as record:
                record.write(f"{node}\t{what}\n")
            return
        raise MachineTouched(f"a unit test {what}: mark it @pytest.mark.live, or give it a fixture machine")

    def guard(original: Any, what: str) -> Any:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            tripped(what)
            return original(*args, **kwargs)

        return guarded

    monkeypatch.setattr(LiveSystem, "__init__", guard(LiveSystem.__init__, "built a LiveSystem"))
    monkeypatch.setattr(subprocess.Popen, "_execute_child", guard(subprocess.Popen._execute_child, "started a process"))  # type: ignore[attr-defined]
    if hasattr(os, "fork"):
        monkeypatch.setattr(os, "fork", guard(os.fork, "forked"))
    yield


def link_real_file(source: Path, link: Path) -> None:
    """`link` names the real binary `source` without copying it (some are 200 MB): a hard link, else a copy. Never a
    symbolic link: a fixture's `source` that leads out of its folder through one is refused (a fixture never reads the host)."""
    for make in (os.link, shutil.copyfile):
        try:
            make(source, link)
        except OSError:
            continue
        if link.is_file():
            return
        with contextlib.suppress(OSError):  # Wine 8 "makes" a symbolic link that is not there
            link.unlink()
    pytest.skip(f"cannot link or copy {source} here")


WINDOWS_BASE: dict[str, Any] = {
    "schema": "machine-fixture/1",
    "name": "test-windows",
    "os": "windows",
    "env": {"SystemRoot": "C:\\Windows", "PATH": "C:\\Windows\\System32;C:\\Windows"},
    "files": {"C:\\Windows\\System32\\kernel32.dll": {"size": 700000}},
    "nvml": {
        "driver_version": "552.44",
        "cuda_driver_version": 12040,
        "gpus": [{"name": "NVIDIA GeForce RTX 3060", "compute_capability": "8.6", "memory_total_mib": 12288}],
    },
    "pythons": [
        {
            "executable": "C:\\Users\\dev\\env\\python.exe",
            "version": "3.10.11",
            "current": True,
            "kind": "venv",
            "packages": {},
            "frameworks": {},
        }
    ],
}
LINUX_BASE: dict[str, Any] = {
    "schema": "machine-fixture/1",
    "name": "test-linux",
    "os": "linux",
    "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/dev"},
    "files": {"/usr/lib/x86_64-linux-gnu/libc.so.6": {"size": 2000000}},
    "nvml": {
        "driver_version": "550.144.03",
        "cuda_driver_version": 12040,
        "gpus": [{"name": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9", "memory_total_mib": 24564}],
    },
    "pythons": [
        {
            "executable": "/home/dev/.venv/bin/python",
            "version": "3.11.7",
            "current": True,
            "kind": "venv",
            "packages": {},
            "frameworks": {},
        }
    ],
}


def onnxruntime_gpu_python(executable: str, version: str) -> dict[str, Any]:
    """An interpreter with onnxruntime-gpu whose report lists the CUDA provider."""
    report = {"version": version, "providers": ["CUDAExecutionProvider", "CPUExecutionProvider"]}
    return {
        "executable": executable,
        "version": "3.11.9",
        "current": True,
        "kind": "venv",
        "packages": {"onnxruntime-gpu": version},
        "frameworks": {"onnxruntime": report},
    }


def machine(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of `base` with top-level keys replaced; `files` and `env` are merged."""
    document = copy.deepcopy(base)
    for key, value in changes.items():
        if key in ("files", "env") and isinstance(value, dict):
            document[key].update(value)
        elif value is None:
            document.pop(key, None)
        else:
            document[key] = value
    return validate(document)


def run(document: dict[str, Any], **options: Any) -> Diagnosis:
    return diagnose(FixtureSystem(document), **options)


def ids(document: dict[str, Any]) -> set[str]:
    return {f.id for f in run(document).findings}


def findings_of(document: dict[str, Any], finding_id: str) -> list:
    return [f for f in run_checks(run(document).facts) if f.id == finding_id]


def fixture_paths(folder: Path) -> list[Path]:
    """Every machine fixture below `folder`, in a stable order; none when the folder is absent."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))


def shared_fixture_paths() -> list[Path]:
    return fixture_paths(SHARED_FIXTURES)


def gallery_paths() -> list[Path]:
    return fixture_paths(GALLERY)


def all_fixture_paths() -> list[Path]:
    """The gallery, then the shared yardstick where it exists: for tests that need many real machines."""
    return gallery_paths() + shared_fixture_paths()


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH on this machine")
