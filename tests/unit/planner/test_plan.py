"""`plan` against the knowledge, query by query. Each expectation was worked out by hand from the rows cited
beside it (the YAML under src/cudnn_doctor/knowledge/data/), so a wrong row or a wrong search fails here."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from cudnn_doctor.planner import solve
from cudnn_doctor.planner.inputs import build_request
from cudnn_doctor.planner.machine import MachineDefaults
from cudnn_doctor.reports.plan_report import plan_json


def plan(
    *frameworks: str,
    os: str,
    python: Optional[str] = None,
    gpu: Optional[str] = None,
    driver: Optional[str] = None,
    cuda: Optional[str] = None,
    arch: Optional[str] = None,
) -> dict[str, Any]:
    """The JSON report of one query, with nothing read from this machine."""
    nothing = MachineDefaults(os, None, None, None, None, ())
    request = build_request(list(frameworks), os, python, gpu, driver, cuda, machine=nothing, arch=arch)
    return plan_json(solve(request))


def series(version: str) -> str:
    return ".".join(version.split(".")[:2])


def builds(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f["framework"], series(f["version"]), f["build"]) for f in report["stack"]["frameworks"]]


def expect(report: dict[str, Any], expected: Optional[list[tuple[str, str, str]]]) -> None:
    """`expected`: the (framework, X.Y, build) of each framework in the stack; None: no stack, with reasons."""
    if expected is None:
        assert report["stack"] is None and report["rejected"]
    else:
        assert report["stack"] is not None, report["rejected"][:3]
        assert builds(report) == expected


# Rows cited: torch.yaml `releases` (version: cuda list, python, pypi_cuda); cuda_driver.yaml Table 3 rows
# (`cuda: "11.3.0" … windows: "465.89"`); gpus.yaml `cuda_architectures` (ptxas --gpu-name lists, samples lists).
TORCH_QUERIES = [
    # The wheels bring their CUDA and run under minor-version compatibility (knowledge.driver_rule, the rule `check`
    # applies too): Windows 472.12 ≥ 452.39, the 11.x floor, < 525: the newest release with an 11.x variant, 2.7's cu118.
    (dict(os="windows", driver="472.12"), [("torch", "2.7", "cu118")]),
    # Linux 470.57.02 ≥ 450.80.02: the same answer from the Linux column.
    (dict(os="linux", driver="470.57.02"), [("torch", "2.7", "cu118")]),
    # 2.14: cuda ["12.6", "13.0", "13.2"]; 580.65.06 is the 13.x floor, so cu132 runs (its own minimum 595.45.04 is not needed).
    # 2.15: PyPI's own Linux wheel, CUDA 13.2 per its METADATA (cuda-toolkit==13.2.2); on 580.65.06 by the 13.x floor.
    (dict(os="linux", driver="580.65.06", python="3.12"), [("torch", "2.15", "cu132")]),
    (dict(os="linux", driver="595.45.04"), [("torch", "2.15", "cu132")]),
    # Windows 13.x: NVIDIA lists N/A, any driver ≥ 580 (the major-13 compatibility row).
    (dict(os="windows", driver="581.15"), [("torch", "2.14", "cu132")]),
    # RTX 5090 (12.0): first built by 12.8 (ptxas 12.8); 2.12-2.14 offer 12.6 (no sm_12x) or 13.x (driver 580);
    # 2.11 has cu128, 570.65 ≤ 572.16 on Windows, 570.26 ≤ 570.86.10 on Linux.
    (dict(os="windows", gpu="RTX 5090", driver="572.16"), [("torch", "2.11", "cu128")]),
    (dict(os="linux", gpu="RTX 5090", driver="570.86.10"), [("torch", "2.11", "cu128")]),
    # torch 2.5: cu118/cu121/cu124, none builds sm_12x.
    (dict(os="linux", gpu="RTX 5090", fw="torch==2.5"), None),
    # A100 (8.0) on 440.33 (10.2.89's Linux minimum): 10.2 and older build no sm_8x, 11.0 needs 450.51.05.
    (dict(os="linux", gpu="A100", driver="440.33"), None),
    # torch 1.12 on an A100: cu102 cannot (sm_80 first in the 11.0 samples); cu116 is the newest variant.
    (dict(os="linux", gpu="A100", fw="torch==1.12"), [("torch", "1.12", "cu116")]),
    # torch 2.1: python ">=3.8,<3.12" - no 3.12 wheels.
    (dict(os="linux", python="3.12", fw="torch==2.1"), None),
    # torch 2.2: python ">=3.8,<3.13" (cp312 on Windows too); cu121 is its newest variant.
    (dict(os="windows", python="3.12", fw="torch==2.2"), [("torch", "2.2", "cu121")]),
    # torch 1.13: windows_python ">=3.7,<3.11" (no cp311 win_amd64), Linux ">=3.7,<3.12".
    (dict(os="windows", python="3.11", fw="torch==1.13"), None),
    (dict(os="linux", python="3.11", fw="torch==1.13"), [("torch", "1.13", "cu117")]),
    # torch 1.11: windows_cuda ["11.3"] (no cu102 on Windows); on Linux 450.80.02 is the 11.x floor: cu113 runs.
    (dict(os="windows", fw="torch==1.11"), [("torch", "1.11", "cu113")]),
    (dict(os="linux", driver="450.80.02", fw="torch==1.11"), [("torch", "1.11", "cu113")]),
    # Kepler 3.5: CUDA 12+ dropped sm_35 (ptxas 12.0); 2.7 is the newest release with cu118.
    (dict(os="linux", gpu="3.5"), [("torch", "2.7", "cu118")]),
    # torch 2.0: cu117/cu118; Windows 516.94 < 520.06 (11.8.0's own minimum) but ≥ 452.39 (the 11.x floor): cu118.
    (dict(os="windows", driver="516.94", fw="torch>=2.0,<2.1"), [("torch", "2.0", "cu118")]),
    # --cuda fixes the variant: newest release with that CUDA.
    (dict(os="windows", cuda="11.8"), [("torch", "2.7", "cu118")]),
    (dict(os="windows", cuda="12.1"), [("torch", "2.5", "cu121")]),
    (dict(os="linux", cuda="10.2"), [("torch", "1.12", "cu102")]),
    # Python 3.8: 2.4 is the last release with ">=3.8"; its newest variant is cu124.
    (dict(os="linux", python="3.8"), [("torch", "2.4", "cu124")]),
    # Python 3.15: 2.15's PyPI wheel has cp315 (2.14 stops at <3.15); 3.16: no release yet.
    (dict(os="linux", python="3.15"), [("torch", "2.15", "cu132")]),
    (dict(os="linux", python="3.16"), None),
    # H100 (9.0) on 525.85.12: the 12.x floor (525), and CUDA 12.6 builds sm_90 (native code: no PTX JIT): 2.14 cu126.
    (dict(os="linux", gpu="H100", driver="525.85.12"), [("torch", "2.14", "cu126")]),
    # RTX 4090 (8.9): 11.7 builds sm_86/sm_87, which run on 8.9 (binary compatibility within a major).
    (dict(os="linux", gpu="RTX 4090", fw="torch==1.13"), [("torch", "1.13", "cu117")]),
    # V100 (7.0): CUDA 13.0's lowest is sm_75; 580.65.06 runs 12.6 (560.28.03).
    (dict(os="linux", gpu="V100", driver="580.65.06"), [("torch", "2.14", "cu126")]),
    # WSL: the Windows driver counts; 528.49 ≥ 525 (the 12.x floor) < 580: 2.14's cu126 (its own minimum, 560.76, is not needed).
    (dict(os="wsl", driver="528.49"), [("torch", "2.14", "cu126")]),
    # Python 3.7: 1.13 (python ">=3.7,<3.12") is the last; Linux PyPI default is cu117.
    (dict(os="linux", python="3.7"), [("torch", "1.13", "cu117")]),
    # ~=2.3.0 on 535.104.05 (12.2.2): 2.3 has cu118/cu121.
    (dict(os="linux", driver="535.104.05", fw="torch~=2.3.0"), [("torch", "2.3", "cu121")]),
    # A release the data does not have.
    (dict(os="linux", fw="torch==9.9"), None),
]


@pytest.mark.parametrize(("query", "expected"), TORCH_QUERIES, ids=[str(q) for q, _ in TORCH_QUERIES])
def test_torch_query(query: dict[str, str], expected: Optional[list[tuple[str, str, str]]]):
    query = dict(query)
    expect(plan(query.pop("fw", "torch"), **query), expected)


def test_driver_472_never_gets_a_cuda_12_build_on_any_os():
    """Acceptance: driver 472.12 supports CUDA ≤ 11.4 (Table 3: 11.4.3 needs 472.50 on Windows)."""
    for os_name in ("windows", "linux", "wsl"):
        report = plan("torch", os=os_name, driver="472.12")
        assert not report["stack"]["cuda"].startswith("12")
        assert report["stack"]["min_driver"]["windows"] == "452.39"  # the 11.x minor-version floor (cu118 wheels)
        assert report["stack"]["driver_rule"]["rule"] == "minor-version compatibility"


def test_an_a100_never_gets_cu102_whatever_the_release():
    for release in ("1.8", "1.9", "1.10", "1.11", "1.12"):
        assert plan(f"torch=={release}", os="linux", gpu="A100")["stack"]["build"] != "cu102"
        forced = plan(f"torch=={release}", os="linux", gpu="A100", cuda="10.2")
        assert forced["stack"] is None
        cu102 = [r["reasons"] for r in forced["rejected"] if r["build"] == "cu102"]
        assert [[reason["kind"] for reason in reasons] for reasons in cu102] == [["gpu"]]


def test_rtx_5090_needs_cu128_or_newer():
    for driver in ("570.86.10", "580.65.06", "595.45.04"):
        stack = plan("torch", os="linux", gpu="RTX 5090", driver=driver)["stack"]
        assert tuple(int(p) for p in stack["cuda"].split(".")) >= (12, 8)


def test_rejections_name_the_constraint_and_cite_a_row():
    report = plan("torch==2.5", os="linux", gpu="RTX 5090")
    assert {r["build"] for r in report["rejected"]} == {"cu118", "cu121", "cu124"}
    for rejection in report["rejected"]:
        (reason,) = rejection["reasons"]
        assert reason["kind"] == "gpu" and "12.0" in reason["text"] and reason["source"].startswith("https://")


def test_a_driver_rejection_says_the_driver_the_build_needs():
    report = plan("torch==2.14", os="windows", driver="472.12")
    texts = {r["build"]: r["reasons"][0]["text"] for r in report["rejected"]}
    assert "560.76" in texts["cu126"] and "472.12" in texts["cu126"]  # 12.6.0 GA, Windows


def test_no_stack_offers_the_change_that_gives_one():
    report = plan("torch", os="linux", gpu="A100", driver="440.33")
    (alternative,) = [a for a in report["alternatives"] if a["change"] == "driver"]
    assert alternative["stack"]["min_driver"]["linux"] in alternative["text"]
    python = plan("torch", os="linux", python="3.16")["alternatives"]
    assert any(a["change"] == "python" and a["stack"]["version"].startswith("2.15") for a in python)


def test_the_stack_carries_the_exact_driver_and_the_compatibility_floor():
    stack = plan("torch==2.0", os="linux", cuda="11.8")["stack"]
    assert stack["min_driver_exact"] == {"linux": "520.61.05", "windows": "520.06"}  # 11.8.0 GA row
    assert stack["min_driver_compat"] == {"linux": "450.80.02", "windows": "452.39"}  # major-11 compatibility row
    assert stack["min_driver"] == stack["min_driver_compat"]  # bundled wheels: minor-version compatibility applies
    assert (
        stack["driver_rule"]["rule"] == "minor-version compatibility" and "native code" in stack["driver_rule"]["why"]
    )


def test_pip_lines_use_the_index_of_the_variant():
    windows = plan("torch==2.5", os="windows", cuda="12.4")
    assert any("--index-url https://download.pytorch.org/whl/cu124" in line for line in windows["commands"])
    linux_default = plan("torch==2.14", os="linux", cuda="13.0")  # pypi_cuda 13.0: PyPI's own wheel
    assert any("pip install" in line and "--index-url" not in line for line in linux_default["commands"])
    old = plan("torch==1.7", os="linux", cuda="11.0")  # before 1.11: local versions from torch_stable.html
    assert any(
        "+cu110" in line and "-f https://download.pytorch.org/whl/torch_stable.html" in line for line in old["commands"]
    )


def test_the_solver_reports_how_many_combinations_it_considered():
    report = plan("torch", os="windows", driver="472.12")
    rejected_builds = sum(len(r["build"].split(", ")) for r in report["rejected"])
    assert report["considered"] >= rejected_builds + 1
    both = plan("torch", "tensorflow", os="linux", driver="535.104.05")
    assert both["considered"] > report["considered"]  # pairs, not single builds


# Rows cited: tensorflow.yaml `tested_builds` (version, os, python, cudnn, cuda), `and_cuda` (Linux releases whose
# [and-cuda] extra brings CUDA), `windows_native_gpu_last` 2.10; frameworks.yaml `onnxruntime_builds`,
# `paddle_builds`, `jax_plugins`, `releases`; cuda_driver.yaml Table 3 rows.
OTHER_QUERIES = [
    # tested_builds 2.5.0 windows: python ">=3.6,<3.10", cudnn "8.1", cuda "11.2".
    (("tensorflow==2.5.0",), dict(os="windows"), [("tensorflow", "2.5", "system")]),
    # 2.10 is the last native-Windows GPU release; its row: CUDA 11.2 / cuDNN 8.1.
    (("tensorflow",), dict(os="windows"), [("tensorflow", "2.10", "system")]),
    (("tensorflow==2.4",), dict(os="windows"), [("tensorflow", "2.4", "system")]),  # 2.4.0: CUDA 11.0 / cuDNN 8.0
    (("tensorflow==2.12",), dict(os="windows"), None),  # after windows_native_gpu_last
    (("tensorflow",), dict(os="windows", python="3.11"), None),  # 2.10 stops at <3.11
    (("tensorflow==2.10",), dict(os="windows", python="3.11"), None),
    # Linux newest: 2.21.0 (CUDA 12.5 / cuDNN 9.3), a system toolkit (no and_cuda row for 2.21).
    (("tensorflow",), dict(os="linux"), [("tensorflow", "2.21", "and-cuda")]),
    # [and-cuda] brings its CUDA wheels: minor-version compatibility, so any 12.x build runs from 525 (the 12.x floor).
    (("tensorflow",), dict(os="linux", driver="535.104.05"), [("tensorflow", "2.21", "and-cuda")]),
    (("tensorflow",), dict(os="linux", driver="525.60.13"), [("tensorflow", "2.21", "and-cuda")]),
    (("tensorflow",), dict(os="wsl", driver="528.49"), [("tensorflow", "2.21", "and-cuda")]),
    # 470.57.02 is below the 12.x floor: 2.14's [and-cuda] pins CUDA 11.8 wheels, which run from 450.80.02.
    (("tensorflow",), dict(os="linux", driver="470.57.02"), [("tensorflow", "2.14", "and-cuda")]),
    (("tensorflow<2",), dict(os="linux"), [("tensorflow", "1.15", "system")]),  # 1.15.0: CUDA 10.0 / cuDNN 7.4
    (("tensorflow",), dict(os="linux", python="3.8"), [("tensorflow", "2.13", "system")]),  # 2.13.0: >=3.8,<3.12
    # One environment: same CUDA major and cuDNN major. torch 2.4+ bundle cuDNN 9, TF 2.15's wheels cuDNN 8.9.
    (
        ("torch", "tensorflow"),
        dict(os="linux", driver="535.104.05"),
        [("torch", "2.14", "cu126"), ("tensorflow", "2.21", "and-cuda")],
    ),
    (("torch", "tensorflow"), dict(os="windows"), [("torch", "2.3", "cu118"), ("tensorflow", "2.10", "system")]),
    # onnxruntime_builds ">=1.27" pypi: CUDA 13.0 / cuDNN 9 with the [cuda,cudnn] extras; newest release 1.31.1.
    (("onnxruntime",), dict(os="linux"), [("onnxruntime", "1.31", "pypi[cuda,cudnn]")]),
    # 1.18.x on PyPI: CUDA 11.8 / cuDNN 8.
    (("onnxruntime==1.18.1",), dict(os="linux"), [("onnxruntime", "1.18", "pypi")]),
    (("onnxruntime==1.18.1",), dict(os="windows"), [("onnxruntime", "1.18", "pypi")]),
    # 550.54.14 runs ≤ 12.4.0: the CUDA 12 side feed of 1.27+ (onnxruntime-cuda-12).
    (("onnxruntime",), dict(os="linux", driver="550.54.14"), [("onnxruntime", "1.31", "feed:onnxruntime-cuda-12")]),
    # paddle_builds windows: 3.1.0's cu126 build (Paddle's cu126 index lists paddlepaddle_gpu-3.1.0-cp39-cp39-win_amd64.whl).
    (("paddle",), dict(os="windows", python="3.9"), [("paddle", "3.1", "cu126")]),
    (("paddle==2.5",), dict(os="linux"), [("paddle", "2.5", "post120")]),
    # jax_plugins: cuda13 (driver ≥ 580) newest; cuda12 on a 535 driver; no Windows GPU build.
    (("jax",), dict(os="wsl", python="3.12"), [("jax", "0.12", "cuda13")]),
    (("jax",), dict(os="linux", driver="535.104.05"), [("jax", "0.12", "cuda12")]),
    (("jax",), dict(os="windows"), None),
    # --cuda alone: the toolkit's own row (11.8.0 GA).
    ((), dict(os="linux", cuda="11.8"), [("cuda", "11.8", "toolkit")]),
    # 531.14 (12.1) cannot run 12.4 (551.61).
    ((), dict(os="windows", cuda="12.4", driver="531.14"), None),
    (
        ("torch", "onnxruntime"),
        dict(os="linux", driver="580.65.06"),
        [("torch", "2.15", "cu132"), ("onnxruntime", "1.31", "pypi[cuda,cudnn]")],
    ),
]


@pytest.mark.parametrize(
    ("frameworks", "query", "expected"), OTHER_QUERIES, ids=[f"{f}-{q}" for f, q, _ in OTHER_QUERIES]
)
def test_other_query(
    frameworks: tuple[str, ...], query: dict[str, str], expected: Optional[list[tuple[str, str, str]]]
):
    expect(plan(*frameworks, **query), expected)


def test_tensorflow_2_5_on_windows_is_cuda_11_2_and_cudnn_8_1_without_python_3_10():
    """Acceptance: not the 11.3 / 8.2 some guides say. cuDNN 8.1.1.33 is the 8.1 release NVIDIA built for CUDA 11.2
    (cudnn.yaml support: the >=8.1,<8.2 row for 11.2), and its Windows zip is named as NVIDIA names it (archives: 8.0-8.3)."""
    report = plan("tensorflow==2.5.0", os="windows")
    stack = report["stack"]
    assert (stack["cuda"], stack["cudnn"]) == ("11.2", "8.1.1.33")
    assert stack["python"] == ">=3.6,<3.10"
    assert stack["toolkit"] == "11.2.2"  # the newest 11.2 update
    assert stack["cudnn_archive"] == "cudnn-11.2-windows-x64-v8.1.1.33.zip"
    assert "cudnn-doctor install cudnn-11.2-windows-x64-v8.1.1.33.zip" in report["commands"]


def test_tensorflow_2_12_on_windows_offers_wsl2_or_2_10():
    report = plan("tensorflow==2.12", os="windows")
    assert report["stack"] is None
    assert report["rejected"][0]["reasons"][0]["kind"] == "os"
    texts = [a["text"] for a in report["alternatives"]]
    assert any(t.startswith("use WSL2") for t in texts)
    assert any("tensorflow 2.10" in t for t in texts)


def test_tensorflow_windows_commands_give_the_conda_line_and_the_old_package_name():
    report = plan("tensorflow==2.5.0", os="windows")
    assert report["conda"] == ["conda install -c conda-forge cudatoolkit=11.2 cudnn=8.1.0"]
    assert not plan("tensorflow==1.12.0", os="windows")[
        "conda"
    ]  # the guide's CUDA 11.2 / cuDNN 8.1 line is not 1.12's 9.0 / 7.2
    old = plan("tensorflow<2", os="linux")
    assert any('"tensorflow-gpu==1.15.5"' in line for line in old["commands"])  # packages: tensorflow-gpu before 2.1


def test_and_cuda_builds_install_with_the_extra():
    # [and-cuda] brings CUDA wheels with native code for the GPU: minor-version compatibility (knowledge.driver_rule,
    # as in `check`). 535.104.05 is past the 12.x floor (525), so 2.21's CUDA 12.5 wheels run (the old planner asked
    # 12.5's own minimum, 555.42.02, and pinned 2.15.1; 2.21's [and-cuda] is known from its recorded METADATA);
    # 470.57.02 is below it, and 2.14.1 pins CUDA 11.8 wheels (11.x floor 450.80.02).
    report = plan("tensorflow", os="linux", driver="535.104.05")
    assert any('"tensorflow[and-cuda]==2.21.0"' in line for line in report["commands"])
    old = plan("tensorflow", os="linux", driver="470.57.02")
    assert any('"tensorflow[and-cuda]==2.14.1"' in line for line in old["commands"])


def text_of(*frameworks: str, **query: Any) -> str:
    from cudnn_doctor.reports.plan_report import text_lines

    nothing = MachineDefaults(query["os"], None, None, None, None, ())
    request = build_request(
        list(frameworks), query["os"], None, query.get("gpu"), query.get("driver"), query.get("cuda"), machine=nothing
    )
    return "\n".join(text_lines(solve(request)))


def test_plan_shows_both_minimums_and_the_rule_it_used():
    """Issue 30: the release's own minimum and the minor-version floor side by side, which one the verdict used and why
    (the rule `check`'s driver-too-old applies: knowledge.driver_rule)."""
    wheels = text_of("torch", os="linux", gpu="H100", driver="525.85.12")
    assert (
        "the release's own minimum (NVIDIA's Table 3): ≥ 560.28.03 on Linux" in wheels
        and "the minor-version compatibility floor: ≥ 525 on Linux" in wheels
    )
    assert (
        "rule used: minor-version compatibility, because code built with CUDA 12.6 that has native code for the GPU"
        in wheels
    )
    # a toolkit is for compiling: its own minimum, and the rejection says why the floor is not enough
    toolkit = text_of(os="linux", cuda="12.4", driver="535.104.05")
    assert (
        "cuda 12.4.1: toolkit: needs driver ≥ 550.54.15 on Linux (CUDA 12.4, toolkit release; the minor-version floor 525 is not enough:"
        in toolkit
    )
    assert "does not cover compiling with CUDA 12.4's nvcc" in toolkit


def test_a_release_past_the_data_points_to_kb_update():
    """Issue 30: asked for a release newer than the recorded index, plan says how old the data is and how to update it;
    asked for one that never existed before it, it does not."""
    (newer,) = plan("torch==2.16", os="linux")["rejected"]
    assert (
        "newest known: 2.15.0" in newer["reasons"][0]["text"]
        and "cudnn-doctor kb update" in newer["reasons"][0]["text"]
    )
    (older,) = plan("torch==1.0", os="linux")["rejected"]
    assert "kb update" not in older["reasons"][0]["text"]
