"""Driver state (issue 29): a kernel module of another release than the driver's libraries, and a container without the GPU.

Each is one cause: `no-nvidia-gpu`, `torch-cuda-unavailable` and the missing `libcuda.so.1` loads are its symptoms, in the
text, JSON and HTML reports alike. The near misses keep their old diagnosis.
"""

from __future__ import annotations

import io
import json
import sys
from typing import Any, Optional

import pytest

from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.facts import DriverLibrary
from cudnn_doctor.findings import Severity
from cudnn_doctor.privacy import kept_environment
from cudnn_doctor.probes.driver_state import _module_release
from cudnn_doctor.reports import html, json_report, terminal
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.recorder import RecordingSystem
from tests.conftest import LINUX_BASE, WINDOWS_BASE, machine, run
from tests.unit.checks.test_driver_libraries import LIB, TF, _real, _stack

MISMATCH = "driver-library-mismatch"
CONTAINER = "gpu-not-passed-to-container"
SMI_MISMATCH = {
    "nvidia-smi": {
        "returncode": 18,
        "stdout": "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.144\n",
        "stderr": "",
    }
}
SMI_NO_DRIVER = {
    "nvidia-smi": {
        "returncode": 9,
        "stdout": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n",
        "stderr": "",
    }
}
TORCH = {
    "executable": "/home/dev/.venv/bin/python",
    "version": "3.11.7",
    "current": True,
    "kind": "venv",
    "packages": {"torch": "2.5.1+cu124"},
    "frameworks": {
        "torch": {
            "version": "2.5.1+cu124",
            "cuda": "12.4",
            "cudnn": 90100,
            "cuda_available": False,
            "device_count": 0,
            "arch_list": ["sm_80", "sm_89", "sm_90"],
        }
    },
}
TF_PYTHON = {
    "executable": "/v/bin/python",
    "version": "3.10.12",
    "current": True,
    "kind": "venv",
    "packages": {"tensorflow": "2.12.0"},
}


def _module(version: str, open_module: bool = False) -> dict[str, Any]:
    kind = "Open Kernel Module for x86_64" if open_module else "x86_64 Kernel Module"
    text = f"NVRM version: NVIDIA UNIX {kind}  {version}  Release Build  (dvs-builder@U16-I3-B13-1-1)\nGCC version:  gcc version 12.3.0\n"
    return {"/proc/driver/nvidia/version": {"text": text}}


def _upgraded(
    kernel: Optional[str] = "550.127.05", libraries: str = "550.144.03", commands: Optional[dict] = None, **changes: Any
) -> dict[str, Any]:
    """A Linux machine whose driver libraries are `libraries` and whose loaded module is `kernel` (None: no /proc file)."""
    files = {**_real(LIB, libraries), **(_module(kernel) if kernel else {})}
    return machine(
        LINUX_BASE,
        files=files,
        nvml=None,
        commands=SMI_MISMATCH if commands is None else commands,
        pythons=[TORCH],
        **changes,
    )


def _container(
    files: Optional[dict[str, Any]] = None, env: Optional[dict[str, str]] = None, marker: bool = True, **changes: Any
) -> dict[str, Any]:
    """A Docker container with TensorFlow, CUDA 11 and cuDNN 8 inside, started without the GPU unless `files` add it."""
    log = (
        "W tensorflow/tsl/platform/default/dso_loader.cc:66] Could not load dynamic library 'libcuda.so.1'; dlerror: libcuda.so.1: "
        "cannot open shared object file: No such file or directory\n"
        "I tensorflow/compiler/xla/stream_executor/cuda/cuda_diagnostics.cc:168] no NVIDIA GPU device is present: /dev/nvidia0 does not exist\n"
    )
    python = {**TF_PYTHON, "frameworks": {"tensorflow": {**TF["tensorflow"], "log": log}}}
    all_files = {
        **_stack(),
        **_module("535.183.01"),
        **({"/.dockerenv": {"size": 0}} if marker else {}),
        **(files or {}),
    }
    return machine(LINUX_BASE, files=all_files, env=env or {}, pythons=[python], **{"nvml": None, **changes})


def _by_id(document: dict[str, Any]) -> dict[str, list]:
    found: dict[str, list] = {}
    for finding in run(document).findings:
        found.setdefault(finding.id, []).append(finding)
    return found


def _cause_of(findings: list, finding) -> str:
    return findings[finding.symptom_of].id


# driver-library-mismatch --------------------------------------------------------------------------------


def test_module_and_libraries_of_two_releases_are_one_mismatch_with_both_versions():
    diagnosis = run(_upgraded())
    findings = diagnosis.findings
    [found] = [f for f in findings if f.id == MISMATCH]
    assert found.severity is Severity.ERROR and found.symptom_of is None
    assert "550.127.05 (/proc/driver/nvidia/version)" in found.detail
    assert (
        f"550.144.03 ({LIB}/libcuda.so.550.144.03)" in found.detail
        and f"{LIB}/libnvidia-ml.so.550.144.03" in found.detail
    )
    assert "Driver/library version mismatch" in found.detail
    assert found.fix[0].startswith("Reboot") and "550.144.03" in found.fix[0]
    assert "sudo modprobe -r nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia" in found.fix[1]
    assert found.evidence["kernel_module"] == "550.127.05"
    assert found.evidence["libraries"] == {
        f"{LIB}/libcuda.so.550.144.03": "550.144.03",
        f"{LIB}/libnvidia-ml.so.550.144.03": "550.144.03",
    }
    symptoms = {f.id: _cause_of(findings, f) for f in findings if f.symptom_of is not None}
    assert symptoms == {"no-nvidia-gpu": MISMATCH, "torch-cuda-unavailable": MISMATCH}
    assert diagnosis.facts.driver_state.libraries == (
        DriverLibrary(f"{LIB}/libcuda.so.550.144.03", "550.144.03"),
        DriverLibrary(f"{LIB}/libnvidia-ml.so.550.144.03", "550.144.03"),
    )


def test_nvidia_smi_words_alone_are_enough():
    """A pasted nvidia-smi output is all a bug report may carry: the NVML library version it names is the libraries' release."""
    document = machine(LINUX_BASE, nvml=None, commands=SMI_MISMATCH, pythons=[TORCH])
    [found] = _by_id(document)[MISMATCH]
    assert "was not read" in found.detail and "the NVML library is 550.144" in found.detail
    assert found.evidence["nvml_library"] == "550.144" and found.evidence["kernel_module"] is None
    assert "550.144" in found.fix[0]


def test_versions_alone_are_enough_when_nvidia_smi_is_missing():
    found = _by_id(_upgraded(commands={}))[MISMATCH]
    assert len(found) == 1 and "nvidia-smi:" not in found[0].detail


def test_the_open_kernel_module_line_is_read():
    assert _module_release(_module("560.35.03", open_module=True)["/proc/driver/nvidia/version"]["text"]) == "560.35.03"
    assert _module_release("NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.130  Release Build\n") == "384.130"
    assert _module_release("garbage") is None and _module_release(None) is None


def test_the_soname_link_decides_which_release_is_in_use():
    """An old versioned file left beside the new one is not what the loader takes: no mismatch with the module."""
    files = {
        f"{LIB}/libcuda.so.470.82.01": {"soname": "libcuda.so.1"},
        f"{LIB}/libnvidia-ml.so.470.82.01": {"soname": "libnvidia-ml.so.1"},
    }
    document = _upgraded(kernel="550.144.03", commands=SMI_NO_DRIVER)
    document["files"].update(files)
    assert MISMATCH not in _by_id(document)


def test_near_miss_same_release_no_mismatch():
    """Module and libraries of one release, nvidia-smi failing for another reason (a module that does not load): no-nvidia-gpu as before."""
    found = _by_id(_upgraded(kernel="550.144.03", commands=SMI_NO_DRIVER))
    assert MISMATCH not in found
    [gpu] = found["no-nvidia-gpu"]
    assert gpu.symptom_of is None and not gpu.causes


def test_near_miss_healthy_driver_no_mismatch():
    document = machine(LINUX_BASE, files={**_real(LIB, "550.144.03"), **_module("550.144.03")})
    assert not {MISMATCH, "no-nvidia-gpu"} & set(_by_id(document))


def test_no_module_file_and_no_words_no_mismatch():
    found = _by_id(_upgraded(kernel=None, commands=SMI_NO_DRIVER))
    assert MISMATCH not in found and "no-nvidia-gpu" in found


def test_wsl_and_windows_have_no_module_of_their_own():
    wsl = machine(LINUX_BASE, wsl=True, files={**_real("/usr/lib/wsl/lib", "550.144.03"), **_module("535.183.01")})
    windows = machine(WINDOWS_BASE, nvml=None, commands=SMI_MISMATCH)
    assert MISMATCH not in _by_id(wsl) and MISMATCH not in _by_id(windows)


def test_in_a_container_the_fix_says_the_host():
    document = _upgraded()
    document["files"]["/.dockerenv"] = {"size": 0}
    [found] = _by_id(document)[MISMATCH]
    assert found.fix[0].startswith("This is a container (/.dockerenv): reboot or reload on the host")


# gpu-not-passed-to-container ----------------------------------------------------------------------------


def test_container_without_gpu_is_one_cause_with_its_symptoms():
    diagnosis = run(_container())
    findings = diagnosis.findings
    [found] = [f for f in findings if f.id == CONTAINER]
    assert found.severity is Severity.ERROR and found.symptom_of is None
    assert "(/.dockerenv)" in found.detail and "host's NVIDIA kernel module 535.183.01" in found.detail
    assert "tensorflow 2.12.0" in found.detail
    assert "add `--gpus all` to the `docker run` command" in found.fix[0] and "nvidia.com/gpu" in found.fix[2]
    assert not any("Install the NVIDIA driver" in step for step in found.fix)
    roots = [f for f in findings if f.symptom_of is None and f.severity is Severity.ERROR]
    assert [f.id for f in roots] == [CONTAINER]
    symptoms = [f for f in findings if f.symptom_of is not None]
    assert {f.id for f in symptoms} == {"no-nvidia-gpu", "dependency-missing"}
    assert all(_cause_of(findings, f) == CONTAINER for f in symptoms)
    libcuda = [f for f in symptoms if f.id == "dependency-missing"]
    assert libcuda and all(f.evidence["name"] == "libcuda.so.1" for f in libcuda)
    assert all("started without the GPU" in f.detail for f in libcuda)


def test_container_on_a_host_without_any_driver_still_names_the_container():
    """No /proc module either (a host without a driver, or /proc hidden): the container is still the first thing to fix,
    and the logged libcuda.so.1 failures are its symptoms rather than lost."""
    document = _container()
    del document["files"]["/proc/driver/nvidia/version"]
    findings = run(document).findings
    [found] = [f for f in findings if f.id == CONTAINER]
    assert "No NVIDIA kernel module is visible either" in found.detail
    logged = [f for f in findings if f.id == "dependency-missing"]
    assert logged and all(findings[f.symptom_of].id == CONTAINER for f in logged)


@pytest.mark.parametrize(
    ("files", "env", "said"),
    [
        ({"/run/.containerenv": {"size": 0}}, {}, "/run/.containerenv"),
        ({}, {"container": "podman"}, "container=podman"),
        ({}, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "KUBERNETES_SERVICE_HOST"),
        (
            {"/proc/1/cgroup": {"text": "12:devices:/kubepods/besteffort/pod1234/abcd\n0::/\n"}},
            {},
            "/proc/1/cgroup (kubepods)",
        ),
        ({"/proc/1/cgroup": {"text": "11:memory:/docker/0123456789abcdef\n"}}, {}, "/proc/1/cgroup (docker)"),
    ],
)
def test_every_container_marker(files, env, said):
    found = _by_id(_container(files, env, marker=False))
    assert found[CONTAINER][0].evidence["container"] == said


def test_near_miss_container_with_the_gpu():
    """Started with --gpus all: the toolkit mounted libcuda and /dev/nvidia*; NVML answers. No finding."""
    gpu = {**_real(LIB, "535.183.01"), "/dev/nvidiactl": {"size": 0}, "/dev/nvidia0": {"size": 0}}
    document = _container(gpu, nvml=LINUX_BASE["nvml"] | {"driver_version": "535.183.01"})
    found = _by_id(document)
    assert not {CONTAINER, MISMATCH, "no-nvidia-gpu"} & set(found)
    assert run(document).facts.driver_state.devices == ("/dev/nvidiactl", "/dev/nvidia0")


@pytest.mark.parametrize("given", ["libraries", "devices"])
def test_near_miss_container_with_half_the_gpu(given):
    """Either half present is not "started without GPU access": the gap is another finding's."""
    files = (
        _real(LIB, "535.183.01")
        if given == "libraries"
        else {"/dev/nvidia0": {"size": 0}, "/dev/nvidiactl": {"size": 0}}
    )
    assert CONTAINER not in _by_id(_container(files))


def test_near_miss_not_a_container():
    """The same machine without a container marker: no-nvidia-gpu, the cause, as before."""
    document = _container(marker=False)
    found = _by_id(document)
    assert CONTAINER not in found
    [gpu] = found["no-nvidia-gpu"]
    assert gpu.symptom_of is None
    assert run(document).facts.driver_state.devices == ()  # device files are looked for in containers only


def test_symptoms_in_every_report():
    diagnosis = run(_container())
    out = io.StringIO()
    json_report.render(diagnosis, out)
    document = json.loads(out.getvalue())
    by_index = document["findings"]
    cause = next(i for i, f in enumerate(by_index) if f["id"] == CONTAINER)
    assert "symptom_of" not in by_index[cause]
    assert {f["id"] for f in by_index if f.get("symptom_of") == cause} == {"no-nvidia-gpu", "dependency-missing"}
    out = io.StringIO()
    terminal.render(diagnosis, out, color=False)
    text = out.getvalue()
    assert f"error {CONTAINER}" in text and "- no-nvidia-gpu (error)" in text and "- dependency-missing (error)" in text
    out = io.StringIO()
    html.render_check(diagnosis, out)
    page = out.getvalue()
    assert 'data-id="no-nvidia-gpu"' in page and "The same cause also shows as" in page


# snapshots ---------------------------------------------------------------------------------------------


def test_snapshot_records_what_the_probe_read():
    """A snapshot of the container keeps its marker, /proc module text and devices, so the replay finds the same."""
    for document in (_container(), _container({**_real(LIB, "535.183.01"), "/dev/nvidia0": {"size": 0}}), _upgraded()):
        recorder = RecordingSystem(FixtureSystem(document))
        live = diagnose(recorder, with_frameworks=True)
        snapshot = recorder.document("replayed")
        assert (
            "/proc/driver/nvidia/version" in snapshot["files"]
            and "text" in snapshot["files"]["/proc/driver/nvidia/version"]
        )
        replay = run(snapshot)
        assert replay.facts.driver_state == live.facts.driver_state
        assert {f.id for f in replay.findings} == {f.id for f in live.findings}


def test_the_container_variable_is_kept_in_reports():
    assert kept_environment({"container": "podman", "KUBERNETES_SERVICE_HOST": "10.96.0.1", "SECRET": "x"}) == {
        "container": "podman",
        "KUBERNETES_SERVICE_HOST": "<redacted>",  # that it is set is the evidence; its address stays on the machine
    }


@pytest.mark.live
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX device files")
def test_live_device_files_sees_character_devices_it_never_opens():
    """`stat` answers for files and folders only; the device files are looked at through their own call."""
    from cudnn_doctor.system.live import LiveSystem

    system = LiveSystem()
    assert system.stat("/dev/null") is None
    assert system.device_files(("/dev/null", "/dev/no-such-device-here")) == ("/dev/null",)
