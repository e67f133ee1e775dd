"""The CUDA driver and GPU tables: every toolkit release's drivers, what each release builds for, GPU names.

Expected values cite the row they come from (NVIDIA's Table 3 of the CUDA 13.2 Update 2 release notes,
Table 1 of the minor-version compatibility page, ptxas of NVIDIA's nvcc wheels, developer.nvidia.com/cuda-gpus),
as recorded in docs/research/issue-11/cuda.yaml and others.yaml.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest
from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.facts import DriverFacts, Gpu
from cudnn_doctor.probes.gpu import _complete
from tests.conftest import LINUX_BASE, findings_of, machine

# NVIDIA's own sites (product pages, datasheets and whitepapers too), and NVIDIA's artifacts: its nvcc wheels
# on PyPI, its repositories on GitHub
VENDOR = ("docs.nvidia.com", "developer.nvidia.com", "www.nvidia.com", "images.nvidia.com", "resources.nvidia.com")
VENDOR_PREFIXES = ("https://pypi.org/project/nvidia-", "https://github.com/NVIDIA/")


@pytest.mark.parametrize("name", ["cuda_driver", "gpus"])
def test_every_row_cites_an_nvidia_page(name):
    table = knowledge.table(name)
    for section in table._fields[1:]:
        for row in getattr(table, section):
            assert row.source.startswith("https://"), row
            for url in re.findall(r"https://[^\s;)]+", row.source):
                assert urlparse(url).hostname in VENDOR or url.startswith(VENDOR_PREFIXES), (name, section, row)
            assert "gpu-ark" not in row.source and "csdn" not in row.source, row


@pytest.mark.parametrize(
    ("cuda", "release", "linux", "windows"),
    [
        ("12.4.1", "Update 1", "550.54.15", "551.78"),  # row 'CUDA 12.4 Update 1'
        ("12.4", "GA", "550.54.14", "551.61"),  # "12.4" alone is the GA: row 'CUDA 12.4 GA'
        ("12.2.0", "GA", "535.54.03", "536.25"),  # row 'CUDA 12.2 GA'
        ("11.8.0", "GA", "520.61.05", "520.06"),  # row 'CUDA 11.8 GA'
        ("11.0.3", "Update 1", "450.51.06", "451.82"),  # row 'CUDA 11.0.3 Update 1'
        (
            "10.1.243",
            "GA (and its updates)",
            "418.39",
            "418.96",
        ),  # row 'CUDA 10.1 (10.1.105 general release, and updates)'
        ("12.3.2", "Update 1", "545.23.08", "546.12"),  # no row of its own: the newest of 12.3 at or below it
        ("13.0.0", "GA", "580.65.06", None),  # row 'CUDA 13.0 GA': Windows N/A
        ("13.2.2", "Update 2", "595.71.05", None),  # row 'CUDA 13.2 Update 2'
    ],
)
def test_toolkit_release_rows(cuda, release, linux, windows):
    row = knowledge.toolkit_release(Version(cuda))
    assert (row.release, row.linux, row.windows) == (release, linux, windows)
    assert row.source.startswith("https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/")


def test_every_release_from_10_0_to_13_2_update_2_has_a_row():
    versions = {row.cuda for row in knowledge.table("cuda_driver").toolkits}
    assert {
        "10.0.130",
        "10.2.89",
        "11.0.2",
        "11.4.4",
        "11.8.0",
        "12.0.0",
        "12.6.3",
        "12.9.1",
        "13.0.2",
        "13.1.1",
        "13.2.2",
    } <= versions
    assert all(row.windows is None for row in knowledge.table("cuda_driver").toolkits if Version(row.cuda).major == 13)
    assert all(row.windows for row in knowledge.table("cuda_driver").toolkits if Version(row.cuda).major < 13)
    assert knowledge.toolkit_release(Version("12.7")) is None  # there was no CUDA 12.7
    assert knowledge.toolkit_release(Version("13.3")).linux == "610.43.02"  # Table 3, as Meson copied it
    assert knowledge.toolkit_release(Version("13.4")).linux is None  # NVIDIA gives a driver branch from 13.4: not read


@pytest.mark.parametrize(
    ("driver", "os_name", "cuda"),
    [
        ("535.54.03", "linux", "12.2.0"),  # K1: was 11.6 for every driver >= 510.39.01
        ("580.65.06", "linux", "13.0.0"),  # K1
        ("535.86.10", "linux", "12.2.1"),  # row 'CUDA 12.2 Update 1' >= 535.86.09
        ("510.39.01", "linux", "11.6.0"),
        ("595.71.05", "linux", "13.2.2"),
        ("576.57", "windows", "12.9.1"),  # row 'CUDA 12.9 Update 1' >= 576.57
        ("581.57", "windows", "13.0"),  # 13.x has no Windows row: the >= 580 minor-version floor
        ("570.10", "windows", "12.6.3"),  # 12.8 GA needs 570.65 on Windows
    ],
)
def test_max_cuda_for_driver(driver, os_name, cuda):
    assert knowledge.max_cuda_for_driver(Version(driver), os_name)[0] == Version(cuda)


def test_the_probe_fills_a_missing_driver_cuda_version_from_the_full_table():
    gpu = (Gpu("NVIDIA GeForce RTX 4090", "8.9", None, "nvml"),)
    assert _complete(DriverFacts("nvml", "535.54.03", None, None, gpu), "linux")[2:4] == ("12.2", "driver-table")
    assert _complete(DriverFacts("nvml", "580.65.06", None, None, gpu), "linux")[2] == "13.0"


def test_minor_version_floors_and_their_upper_bounds():
    # Table 1 of minor-version-compatibility.html: 11.x >= 450 < 525 (exact floor 450.80.02 / 452.39), 12.x >= 525 < 580, 13.x >= 580
    rows = {m: knowledge.minor_version_floor(m) for m in (11, 12, 13)}
    assert [(r.linux, r.windows, r.upper) for r in rows.values()] == [
        ("450.80.02", "452.39", "525"),
        ("525", "525", "580"),
        ("580", "580", None),
    ]
    assert knowledge.minor_version_floor(10) is None


def test_driver_requirement_keeps_nvidias_spelling():
    need = knowledge.driver_requirement(Version("11.8"), "linux")
    assert (need.driver, need.driver_text) == (Version("450.80.2"), "450.80.02")
    assert (
        knowledge.driver_requirement(Version("10.1.243"), "windows").driver_text == "418.96"
    )  # row 'CUDA 10.1 (10.1.105 ...)'
    assert knowledge.driver_requirement(Version("10.0"), "linux").driver_text == "410.48"


def test_driver_too_old_prints_the_vendor_driver_string():
    """K2: "450.80.02", not packaging's "450.80.2"."""
    # A CUDA 11.8 runtime without nvcc (nothing compiles with it): the shared driver rule is minor-version compatibility,
    # so the 11.x floor is what it needs. With nvcc the release's own minimum (520.61.05) applies: compiling is not
    # covered by minor-version compatibility (test_a_toolkit_that_compiles_needs_its_own_minimum).
    files = {"/usr/local/cuda-11.8/version.json": {"text": '{"cuda": {"version": "11.8.0"}}'}}
    nvml = {
        "driver_version": "450.51.06",
        "cuda_driver_version": 11000,
        "gpus": [{"name": "NVIDIA A100-SXM4-40GB", "compute_capability": "8.0"}],
    }
    found = findings_of(machine(LINUX_BASE, nvml=nvml, files=files), "driver-too-old")
    assert found, "CUDA 11.8 on driver 450.51.06 is below the 11.x floor 450.80.02"
    assert "needs driver >= 450.80.02 (" in found[0].detail and "450.80.2 " not in found[0].detail
    assert "an NVIDIA driver >= 450.80.02 " in found[0].fix[0]
    assert found[0].evidence["needs"][0]["driver"] == "450.80.02"
    assert found[0].evidence["needs"][0]["rule"] == "minor-version compatibility"


# One driver rule for `check` and `plan` (issue 29 class 4, issue 30): knowledge.driver_rule --------------------------------

RTX_5090 = {"name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0"}  # sm_120: native code from CUDA 12.8 on
EXE = "/home/dev/.venv/bin/python"


def _torch_cu129(arch_list):
    """torch 2.8.0+cu129 as its live report gives it, with the kernels it was built with."""
    report = {
        "torch": {
            "version": "2.8.0+cu129",
            "cuda": "12.9",
            "cuda_available": True,
            "device_count": 1,
            "arch_list": arch_list,
        }
    }
    return [
        {
            "executable": EXE,
            "version": "3.12.3",
            "current": True,
            "kind": "venv",
            "packages": {"torch": "2.8.0+cu129"},
            "frameworks": report,
        }
    ]


# 570.124.06 reports CUDA 12.8: past the 12.x floor (525), below CUDA 12.9's own minimum (575.51.03).
NVML_570 = {"driver_version": "570.124.06", "cuda_driver_version": 12080, "gpus": [RTX_5090]}


def test_a_build_with_only_ptx_for_the_gpu_needs_its_release_minimum():
    """sm_90 SASS and compute_90 PTX on a cc 12.0 GPU: what runs is PTX from CUDA 12.9, which a 12.8 driver cannot
    JIT-compile (cudaErrorUnsupportedPtxVersion); minor-version compatibility does not cover PTX JIT."""
    found = findings_of(
        machine(LINUX_BASE, nvml=NVML_570, pythons=_torch_cu129(["sm_80", "sm_90", "compute_90"])), "driver-too-old"
    )
    assert found, "PTX JIT of CUDA 12.9 PTX on a 12.8 driver"
    detail = found[0].detail
    assert "needs driver >= 575.51.03 (" in detail
    assert (
        "CUDA 12.9's own minimum is 575.51.03" in detail
        and "the minor-version compatibility floor of CUDA 12.x is 525" in detail
    )
    assert (
        "its own minimum applies" in detail
        and "does not cover PTX JIT" in detail
        and "no native code for NVIDIA GeForce RTX 5090 (sm_120)" in detail
    )
    need = found[0].evidence["needs"][0]
    assert (need["rule"], need["driver"], need["exact"], need["floor"]) == (
        "toolkit release",
        "575.51.03",
        "575.51.03",
        "525",
    )
    assert "an NVIDIA driver >= 575.51.03 " in found[0].fix[0]
    # keeping the driver: PyTorch's own cu129 wheel has sm_120 code, so it runs from the floor
    assert (
        "torch 2.8.0 (cu129, CUDA 12.9) (the published build, with native code for the GPU) runs on it"
        in found[0].fix[1]
    )


def test_the_same_build_with_native_code_for_the_gpu_runs_from_the_floor():
    """sm_120 SASS in the arch list: native code, minor-version compatibility, 570 (>= 525) runs it."""
    assert not findings_of(
        machine(LINUX_BASE, nvml=NVML_570, pythons=_torch_cu129(["sm_90", "sm_120", "compute_120"])), "driver-too-old"
    )


def test_a_build_with_only_ptx_is_fine_on_a_driver_with_its_release_minimum():
    nvml = {"driver_version": "575.51.03", "cuda_driver_version": 12090, "gpus": [RTX_5090]}
    assert not findings_of(
        machine(LINUX_BASE, nvml=nvml, pythons=_torch_cu129(["sm_80", "sm_90", "compute_90"])), "driver-too-old"
    )


def test_a_toolkit_that_compiles_needs_its_own_minimum():
    """nvcc 11.8 on driver 470.57.02 (CUDA 11.4, past the 11.x floor 450.80.02): compiling with a toolkit newer than the
    driver is not covered by minor-version compatibility; 11.8's own minimum, 520.61.05, applies."""
    nvml = {
        "driver_version": "470.57.02",
        "cuda_driver_version": 11040,
        "gpus": [{"name": "NVIDIA A100-SXM4-40GB", "compute_capability": "8.0"}],
    }
    version = {"/usr/local/cuda-11.8/version.json": {"text": '{"cuda": {"version": "11.8.0"}}'}}
    found = findings_of(
        machine(LINUX_BASE, nvml=nvml, files={"/usr/local/cuda-11.8/bin/nvcc": {}, **version}), "driver-too-old"
    )
    assert found, "compiling with nvcc 11.8 on a CUDA 11.4 driver"
    detail = found[0].detail
    assert "CUDA toolkit 11.8.0 at /usr/local/cuda-11.8 needs driver >= 520.61.05 (" in detail
    assert (
        "CUDA 11.8's own minimum is 520.61.05, the minor-version compatibility floor of CUDA 11.x is 450.80.02"
        in detail
    )
    assert "does not cover compiling with CUDA 11.8's nvcc" in detail
    assert found[0].evidence["needs"][0]["rule"] == "toolkit release"
    # the same runtime without nvcc runs from the floor
    assert not findings_of(machine(LINUX_BASE, nvml=nvml, files=version), "driver-too-old")


@pytest.mark.parametrize(
    ("cuda", "os_name", "use", "exact", "floor", "rule"),
    [
        # Linux: Table 3 row and Table 1 floor side by side; RUN takes the floor, PTX JIT and COMPILE the release's own.
        ("12.9", "linux", knowledge.RUN, "575.51.03", "525", knowledge.MINOR_VERSION_COMPATIBILITY),
        ("12.9", "linux", knowledge.PTX_JIT, "575.51.03", "525", knowledge.TOOLKIT_RELEASE),
        ("12.9", "linux", knowledge.COMPILE, "575.51.03", "525", knowledge.TOOLKIT_RELEASE),
        ("11.8", "linux", knowledge.RUN, "520.61.05", "450.80.02", knowledge.MINOR_VERSION_COMPATIBILITY),
        ("11.8", "windows", knowledge.RUN, "520.06", "452.39", knowledge.MINOR_VERSION_COMPATIBILITY),
        ("11.8", "windows", knowledge.COMPILE, "520.06", "452.39", knowledge.TOOLKIT_RELEASE),
        # 11.0's own minimum (450.51.05) is below the 11.x floor: a driver runs what its own release built.
        ("11.0", "linux", knowledge.RUN, "450.51.05", "450.80.02", knowledge.TOOLKIT_RELEASE),
        # Before CUDA 11 there is no floor: each release needs its own driver, whatever the use.
        ("10.2", "linux", knowledge.RUN, "440.33", None, knowledge.TOOLKIT_RELEASE),
        # Windows 13.x: Table 3 lists N/A, so the floor is all there is.
        ("13.0", "windows", knowledge.PTX_JIT, None, "580", knowledge.MINOR_VERSION_COMPATIBILITY),
        # A major alone (cupy-cuda12x): no release of its own; the floor.
        ("12", "linux", knowledge.RUN, "525.60.13", "525", knowledge.MINOR_VERSION_COMPATIBILITY),
    ],
)
def test_driver_rule_table(cuda, os_name, use, exact, floor, rule):
    found = knowledge.driver_rule(Version(cuda), os_name, use)
    assert found is not None
    assert (
        found.exact.driver_text if found.exact else None,
        found.floor.driver_text if found.floor else None,
        found.rule,
    ) == (exact, floor, rule)
    assert found.need is (found.floor if rule == knowledge.MINOR_VERSION_COMPATIBILITY else found.exact)
    assert (
        found.why and ("own minimum" if rule == knowledge.TOOLKIT_RELEASE else "minor-version floor") in found.explain()
    )


@pytest.mark.parametrize(
    ("cuda", "cc", "supported"),
    [
        ("11.8", "8.9", True),  # ptxas 11.8.89 adds sm_89 and sm_90
        ("11.8", "9.0", True),
        ("11.7", "8.9", False),  # ptxas 11.7.99 ends at sm_87
        ("11.8", "3.5", True),
        ("12.0", "3.7", False),  # sm_35/sm_37 gone in 12.0
        ("12.6", "12.0", False),  # Blackwell only from 12.8
        ("12.8", "12.0", True),
        ("12.8", "10.0", True),
        ("12.9", "7.0", True),  # Volta's last major is 12
        ("13.0", "7.0", False),  # ptxas 13.0: sm_75 is the lowest
        ("13.0", "7.5", True),
        ("13.0", "10.1", False),  # renamed sm_110 in 13.0
        ("13.0", "11.0", True),
        ("13.3", "10.7", False),  # sm_107 only from 13.4
        ("13.4", "10.7", True),
        ("11.1", "8.6", True),  # samples v11.1 build sm_86 (a lower-bound row)
        ("11.0", "8.6", False),  # newer than all 11.0's samples build, and first built by 11.1's: 11.0 predates sm_86
        ("10.2", "8.0", False),  # sm_80 first in the 11.0 samples (an A100 on a cu102 build)
        ("10.0", "7.2", None),  # a lower-bound row without it, below its newest: it cannot say no
        ("12.7", "8.6", None),  # no such release
        ("9.2", "8.0", False),  # older than every row, and sm_80 newer than all the oldest (10.0) row lists
        ("9.2", "7.0", None),  # the 10.0 row lists sm_70; a 9.x compiler may have had it
    ],
)
def test_cuda_supports_compute_capability(cuda, cc, supported):
    assert knowledge.cuda_supports_compute_capability(Version(cuda), cc) is supported


def test_cuda_min_compute_capability_per_major():
    assert {m: str(knowledge.cuda_min_compute_capability(m)[0]) for m in (11, 12, 13)} == {
        11: "3.5",
        12: "5.0",
        13: "7.5",
    }
    assert knowledge.cuda_min_compute_capability(10) is None  # only lower-bound rows for CUDA 10
    assert knowledge.cuda_min_compute_capability(13)[1].startswith("https://pypi.org/project/nvidia-cuda-nvcc/")


def test_the_floor_of_a_major_still_finds_old_gpus():
    files = {
        "/usr/local/cuda-13.0/bin/nvcc": {},
        "/usr/local/cuda-13.0/version.json": {"text": '{"cuda": {"version": "13.0.2"}}'},
    }
    nvml = {
        "driver_version": "580.95.05",
        "cuda_driver_version": 13000,
        "gpus": [{"name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0"}],
    }
    found = findings_of(machine(LINUX_BASE, nvml=nvml, files=files), "gpu-arch-unsupported")
    assert found and found[0].evidence["min_cc"] == "7.5"


@pytest.mark.parametrize(
    ("name", "cc"),
    [
        ("NVIDIA GeForce RTX 4090", "8.9"),  # cuda-gpus 8.9 'GeForce RTX 4090'
        ("NVIDIA GeForce RTX 4090 D", "8.9"),  # longest prefix: 'GeForce RTX 4090'
        ("NVIDIA H100 80GB HBM3", "9.0"),  # 'NVIDIA H100'
        ("NVIDIA H200", "9.0"),
        ("NVIDIA B200", "10.0"),
        ("NVIDIA GB200", "10.0"),
        ("NVIDIA GB300", "10.3"),
        ("Tesla V100-SXM2-16GB", "7.0"),  # cuda-legacy-gpus 'NVIDIA V100'
        ("Tesla T4", "7.5"),  # 'NVIDIA T4'
        ("Tesla P100-PCIE-16GB", "6.0"),  # legacy 'Tesla P100'
        ("Tesla K80", "3.7"),
        ("NVIDIA A100-SXM4-80GB", "8.0"),
        ("NVIDIA A10", "8.6"),
        ("NVIDIA A10G", None),  # not 'NVIDIA A10': no word boundary
        ("NVIDIA L4", "8.9"),
        ("NVIDIA L40S", "8.9"),
        ("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6"),
        ("NVIDIA GeForce RTX 3060 Ti", "8.6"),
        ("NVIDIA GeForce GTX 1060 6GB", "6.1"),
        ("GeForce GTX 960M", "5.0"),  # its own row, not 'GeForce GTX 960' (5.2)
        ("GeForce GTX 960", "5.2"),
        ("NVIDIA GeForce GTX 1650", None),  # the page lists only the 1650 Ti
        ("NVIDIA RTX 6000 Ada Generation", "8.9"),
        ("Quadro RTX 6000", "7.5"),
        ("NVIDIA RTX A6000", "8.6"),
        ("NVIDIA TITAN X", "6.1"),
        ("GeForce GTX TITAN X", "5.2"),
        ("NVIDIA GB10", "12.1"),  # 'NVIDIA GB10 (DGX Spark)'
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"),
        ("Jetson AGX Orin", "8.7"),
        ("NVIDIA GeForce RTX 5090", "12.0"),
        ("Radeon RX 7900 XTX", None),
    ],
)
def test_gpu_names_resolve(name, cc):
    assert knowledge.gpu_compute_capability(name) == cc


@pytest.mark.parametrize(
    ("cuda", "cc", "runs"),
    [
        ("11.7", "8.9", True),  # no sm_89 in 11.7, but its sm_86/sm_87 code runs on 8.9 (same major, lower minor)
        ("11.6", "8.9", True),  # the 11.6 samples build sm_86
        ("11.7", "9.0", False),  # no 9.x at all before 11.8
        ("12.6", "12.0", False),  # no 12.x before 12.8
        ("12.6", "12.1", False),
        ("12.8", "12.1", True),  # sm_120 code runs on a GB10 (12.1)
        ("10.2", "8.0", False),  # no 8.x before 11.0
        ("9.2", "8.6", False),
        ("13.0", "7.0", False),  # 13.0 lowest is sm_75: below it, no same-major code
        ("10.0", "7.2", True),  # the 10.0 samples build sm_70
    ],
)
def test_cuda_runs_on_compute_capability(cuda, cc, runs):
    assert knowledge.cuda_runs_on_compute_capability(Version(cuda), cc) is runs
