"""NVML through ctypes (issue 15): against a stand-in libnvidia-ml.so.1 built here, the ctypes binding must read
exactly what pynvml reads, shut down every session it starts, and spare `check` the import of pynvml."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or shutil.which("gcc") is None, reason="builds a Linux .so with gcc"
    ),
]

# Two GPUs; knobs through the environment, read at each call: STUB_NVML_FAIL_INIT=1 makes nvmlInit fail,
# STUB_NVML_FAIL=<entry point> makes that call fail, STUB_NVML_LOG=<file> gets "init" / "shutdown" lines.
STUB_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int index; } device_t;
typedef struct { unsigned long long total, free, used; } memory_t;
static device_t devices[2] = {{0}, {1}};
static const char *names[2] = {"NVIDIA GeForce RTX 3090", "NVIDIA H100 80GB HBM3"};
static const char *uuids[2] = {"GPU-11111111-2222-3333-4444-555555555555", "GPU-66666666-7777-8888-9999-000000000000"};
static const int majors[2] = {8, 9}, minors[2] = {6, 0};
static const unsigned long long totals[2] = {25769803776ULL, 85520809984ULL};

static int fails(const char *call) {
    const char *which = getenv("STUB_NVML_FAIL");
    return which != NULL && strcmp(which, call) == 0;
}
static void note(const char *what) {
    const char *path = getenv("STUB_NVML_LOG");
    FILE *log = path ? fopen(path, "a") : NULL;
    if (log) { fprintf(log, "%s\n", what); fclose(log); }
}
static int text(char *buffer, unsigned int size, const char *value) {
    if (strlen(value) + 1 > size) return 7;  /* NVML_ERROR_INSUFFICIENT_SIZE */
    strcpy(buffer, value);
    return 0;
}
static int device(void *handle) {
    if (handle == &devices[0]) return 0;
    if (handle == &devices[1]) return 1;
    return -1;
}
static int init(void) {
    note("init");
    return getenv("STUB_NVML_FAIL_INIT") ? 9 : 0;  /* NVML_ERROR_DRIVER_NOT_LOADED */
}

int nvmlInit_v2(void) { return init(); }
int nvmlInitWithFlags(unsigned int flags) { return init(); }
int nvmlShutdown(void) { note("shutdown"); return fails("nvmlShutdown") ? 999 : 0; }
int nvmlSystemGetDriverVersion(char *version, unsigned int size) {
    return fails("nvmlSystemGetDriverVersion") ? 999 : text(version, size, "550.54.15");
}
#ifndef NO_CUDA_V2
int nvmlSystemGetCudaDriverVersion_v2(int *version) {
    if (fails("nvmlSystemGetCudaDriverVersion_v2")) return 999;
    *version = 12040;
    return 0;
}
#endif
int nvmlDeviceGetCount_v2(unsigned int *count) {
    if (fails("nvmlDeviceGetCount_v2")) return 999;
    *count = 2;
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **handle) {
    if (fails("nvmlDeviceGetHandleByIndex_v2") || index > 1) return 2;  /* NVML_ERROR_INVALID_ARGUMENT */
    *handle = &devices[index];
    return 0;
}
int nvmlDeviceGetName(void *handle, char *name, unsigned int size) {
    int i = device(handle);
    return i < 0 || fails("nvmlDeviceGetName") ? 2 : text(name, size, names[i]);
}
int nvmlDeviceGetCudaComputeCapability(void *handle, int *major, int *minor) {
    int i = device(handle);
    if (i < 0 || fails("nvmlDeviceGetCudaComputeCapability")) return 2;
    *major = majors[i];
    *minor = minors[i];
    return 0;
}
int nvmlDeviceGetMemoryInfo(void *handle, memory_t *memory) {
    int i = device(handle);
    if (i < 0 || fails("nvmlDeviceGetMemoryInfo")) return 2;
    memory->total = totals[i];
    memory->used = 1048576ULL * (i + 1);
    memory->free = totals[i] - memory->used;
    return 0;
}
int nvmlDeviceGetUUID(void *handle, char *uuid, unsigned int size) {
    int i = device(handle);
    return i < 0 || fails("nvmlDeviceGetUUID") ? 2 : text(uuid, size, uuids[i]);
}
/* verify's GPU state: clocks in MHz (1 = SM, 2 = memory), power in mW (the first GPU refuses its limit, as many
   boards do: NVML_ERROR_NOT_SUPPORTED), the clock-event reasons as a bit mask */
int nvmlDeviceGetClockInfo(void *handle, int type, unsigned int *clock) {
    int i = device(handle);
    if (i < 0 || fails("nvmlDeviceGetClockInfo")) return 2;
    *clock = type == 1 ? (i ? 1755 : 1395) : (i ? 2619 : 9751);
    return 0;
}
int nvmlDeviceGetMaxClockInfo(void *handle, int type, unsigned int *clock) {
    int i = device(handle);
    if (i < 0 || fails("nvmlDeviceGetMaxClockInfo")) return 2;
    *clock = i ? 1980 : 2100;
    return 0;
}
int nvmlDeviceGetPowerUsage(void *handle, unsigned int *milliwatts) {
    int i = device(handle);
    if (i < 0 || fails("nvmlDeviceGetPowerUsage")) return 2;
    *milliwatts = i ? 91500 : 350250;
    return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(void *handle, unsigned int *milliwatts) {
    int i = device(handle);
    if (i < 0) return 2;
    if (i == 0 || fails("nvmlDeviceGetEnforcedPowerLimit")) return 3;
    *milliwatts = 700000;
    return 0;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(void *handle, unsigned long long *reasons) {
    int i = device(handle);
    if (i < 0 || fails("nvmlDeviceGetCurrentClocksThrottleReasons")) return 2;
    *reasons = i ? 0x44ULL : 0x1ULL;
    return 0;
}
"""

EXPECTED = {
    "driver_version": "550.54.15",
    "cuda_driver_version": 12040,
    "gpus": [
        {
            "name": "NVIDIA GeForce RTX 3090",
            "compute_capability": "8.6",
            "memory_total_mib": 24576,
            "uuid": "GPU-11111111-2222-3333-4444-555555555555",
        },
        {
            "name": "NVIDIA H100 80GB HBM3",
            "compute_capability": "9.0",
            "memory_total_mib": 81559,
            "uuid": "GPU-66666666-7777-8888-9999-000000000000",
        },
    ],
}

# The calls `check` makes; each failing in turn.
CALLS = (
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetName",
    "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetUUID",
    "nvmlShutdown",
)

# What both comparisons start with: the ctypes binding, pynvml, and pynvml's own session around a reading (None when
# NVML cannot start or the reading fails; shut down whatever happened), as the doctor's reading before this binding.
PYNVML_SESSION = r"""
import json, os, sys
from cudnn_doctor.system import nvml
import pynvml

def with_pynvml(read):
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        return read()
    except Exception:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
"""

# In one child (LD_LIBRARY_PATH is read when the process starts): for each case (the knobs it sets), the ctypes
# answer, pynvml's answer (the reading `check` made before, call for call) and the init/shutdown lines each logged.
COMPARE = (
    PYNVML_SESSION
    + r"""
def facts():
    driver = pynvml.nvmlSystemGetDriverVersion()
    report = {"driver_version": driver.decode() if isinstance(driver, bytes) else driver, "gpus": []}
    try:
        report["cuda_driver_version"] = int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
    except Exception:
        pass
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        name = pynvml.nvmlDeviceGetName(handle)
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
        uuid = pynvml.nvmlDeviceGetUUID(handle)
        report["gpus"].append({
            "name": name.decode() if isinstance(name, bytes) else name,
            "compute_capability": f"{major}.{minor}",
            "memory_total_mib": int(memory.total // (1024 * 1024)),
            "uuid": uuid.decode() if isinstance(uuid, bytes) else uuid,
        })
    return report

def logged(path):
    with open(path) as handle:
        lines = handle.read().split()
    os.unlink(path)
    return [lines.count("init"), lines.count("shutdown")]

log = os.environ["STUB_NVML_LOG"]
answers = {}
for case, knobs in json.loads(sys.argv[1]).items():
    for knob in ("STUB_NVML_FAIL", "STUB_NVML_FAIL_INIT"):
        os.environ.pop(knob, None)
    os.environ.update(knobs)
    mine = nvml.query()
    mine_logged = logged(log)
    theirs = with_pynvml(facts)
    answers[case] = {"ctypes": mine, "pynvml": theirs, "ctypes_log": mine_logged, "pynvml_log": logged(log)}
print(json.dumps(answers))
"""
)

# verify's GPU state: the ctypes binding against what LiveSystem read with pynvml before (call for call), each call
# failing in turn.
STATE = (
    PYNVML_SESSION
    + r"""
def number(call, *args):
    try:
        return call(*args)
    except Exception:
        return None

def states():
    found = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        name = pynvml.nvmlDeviceGetName(handle)
        draw, limit = number(pynvml.nvmlDeviceGetPowerUsage, handle), number(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle)
        bits = number(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons, handle)
        found.append({
            "name": name.decode() if isinstance(name, bytes) else name,
            "clocks_mhz": {
                "sm": number(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_SM),
                "sm_max": number(pynvml.nvmlDeviceGetMaxClockInfo, handle, pynvml.NVML_CLOCK_SM),
                "memory": number(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_MEM),
            },
            "power_w": {"draw": draw / 1000.0 if draw is not None else None, "limit": limit / 1000.0 if limit is not None else None},
            "throttle_reasons": [r for bit, r in nvml.THROTTLE_BITS.items() if bits and int(bits) & bit],
        })
    return found

answers = {}
for case, knobs in json.loads(sys.argv[1]).items():
    os.environ.pop("STUB_NVML_FAIL", None)
    os.environ.update(knobs)
    answers[case] = {"ctypes": nvml.gpu_state(), "pynvml": with_pynvml(states)}
print(json.dumps(answers))
"""
)

STATE_CALLS = (
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetName",
)

CASES = {
    "plain": {},
    "init fails": {"STUB_NVML_FAIL_INIT": "1"},
    **{f"{call} fails": {"STUB_NVML_FAIL": call} for call in CALLS},
}


def _build(folder, *defines: str):
    """libnvidia-ml.so.1 from STUB_SOURCE in `folder`, compiled with `defines`."""
    folder.mkdir()
    source = folder / "nvml_stub.c"
    source.write_text(STUB_SOURCE)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O0", *defines, "-o", str(folder / "libnvidia-ml.so.1"), str(source)],
        check=True,
        timeout=60,
    )
    return folder


def _environment(folder, log) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STUB_NVML_")}
    env.update(PYTHONPATH=str(REPO / "src"), LD_LIBRARY_PATH=str(folder), STUB_NVML_LOG=str(log))
    return env


def _compare(folder, log, cases: dict) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", COMPARE, json.dumps(cases)],
        capture_output=True,
        text=True,
        env=_environment(folder, log),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("nvml") / "full")


def test_ctypes_reads_what_pynvml_reads_and_shuts_every_session_down(full, tmp_path):
    answers = _compare(full, tmp_path / "calls.log", CASES)
    assert answers["plain"]["ctypes"] == EXPECTED
    for case, answer in answers.items():
        assert answer["ctypes"] == answer["pynvml"], case
        started = 0 if case == "init fails" else 1
        assert answer["ctypes_log"] == [1, started], case  # nvmlInit once; nvmlShutdown for each session that started
    assert answers["init fails"]["ctypes"] is None
    assert "cuda_driver_version" not in answers["nvmlSystemGetCudaDriverVersion_v2 fails"]["ctypes"]
    assert answers["nvmlShutdown fails"]["ctypes"] == EXPECTED  # the facts were read before
    for call in CALLS[2:-1]:  # any GPU call failing: NVML is not to be believed
        assert answers[f"{call} fails"]["ctypes"] is None, call


def test_the_gpu_state_verify_shows_is_what_pynvml_reads(full, tmp_path):
    pytest.importorskip("pynvml")
    cases = {"plain": {}, **{f"{call} fails": {"STUB_NVML_FAIL": call} for call in STATE_CALLS}}
    done = subprocess.run(
        [sys.executable, "-c", STATE, json.dumps(cases)],
        capture_output=True,
        text=True,
        env=_environment(full, tmp_path / "calls.log"),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    for case, answer in answers.items():
        assert answer["ctypes"] == answer["pynvml"], case
    first, second = answers["plain"]["ctypes"]
    assert first == {
        "name": "NVIDIA GeForce RTX 3090",
        "clocks_mhz": {"sm": 1395, "sm_max": 2100, "memory": 9751},
        "power_w": {"draw": 350.25, "limit": None},
        "throttle_reasons": ["gpu_idle"],
    }
    assert second["power_w"] == {"draw": 91.5, "limit": 700.0} and second["throttle_reasons"] == [
        "sw_power_cap",
        "hw_thermal_slowdown",
    ]
    assert (
        answers["nvmlDeviceGetName fails"]["ctypes"] is None
    )  # a GPU that cannot be named: NVML is not to be believed


def test_a_driver_without_the_cuda_version_call_leaves_the_key_out(tmp_path):
    old = _build(tmp_path / "old", "-DNO_CUDA_V2")
    answers = _compare(old, tmp_path / "calls.log", {"plain": {}})
    assert (
        answers["plain"]["ctypes"]
        == answers["plain"]["pynvml"]
        == {k: v for k, v in EXPECTED.items() if k != "cuda_driver_version"}
    )
    assert answers["plain"]["ctypes_log"] == [1, 1]


def test_no_library_and_a_library_that_is_not_nvml_are_none(tmp_path):
    from cudnn_doctor.system import nvml

    assert nvml.open_library((str(tmp_path / "libnvidia-ml.so.1"),)) is None
    (tmp_path / "other.c").write_text("int other(void) { return 0; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "other.so"), str(tmp_path / "other.c")], check=True, timeout=60
    )
    other = nvml.open_library((str(tmp_path / "other.so"),))
    assert other is not None and nvml.query(other) is None


_CHECK = """
import io, contextlib, json, sys
from cudnn_doctor.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main(sys.argv[1:])
print(json.dumps({"report": json.loads(out.getvalue()), "modules": sorted(sys.modules)}))
"""


def test_check_reads_the_driver_and_gpus_through_ctypes_without_pynvml(full, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", _CHECK, "check", "--no-frameworks", "--format", "json"],
        capture_output=True,
        text=True,
        env=_environment(full, tmp_path / "calls.log"),
        timeout=120,
    )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    driver = answer["report"]["facts"]["driver"]
    assert driver["source"] == "nvml" and driver["version"] == "550.54.15" and driver["cuda"] == "12.4"
    assert [(g["name"], g["compute_capability"], g["memory_mib"]) for g in driver["gpus"]] == [
        ("NVIDIA GeForce RTX 3090", "8.6", 24576),
        ("NVIDIA H100 80GB HBM3", "9.0", 81559),
    ]
    assert "pynvml" not in answer["modules"] and "ctypes" in answer["modules"]
    lines = (tmp_path / "calls.log").read_text().split()
    assert lines.count("init") == lines.count("shutdown") >= 1
