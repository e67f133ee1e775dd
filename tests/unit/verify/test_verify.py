"""`verify`: the worker's measurements (real torch on the CPU here), the verdicts on recorded GPU figures, the
history, the report and the command's exit codes."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cudnn_doctor.reports import verify_report
from cudnn_doctor.system.live import LiveSystem
from cudnn_doctor.verify import history, judge
from cudnn_doctor.verify import run as verifying
from tests.child_scripts import worker_module

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((ROOT / "src/cudnn_doctor/reports/verify.schema.json").read_text(encoding="utf-8"))
CONSTRUCTED = json.loads((ROOT / "tests/data/verify/constructed-gpu.json").read_text(encoding="utf-8"))
H100 = judge.Peak(
    "H100 SXM5",
    {"fp32": 67.0, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4},
    3350.0,
    64.0,
    "https://www.nvidia.com/en-us/data-center/h100/",
)
LIMITS = {
    "gpu-speedup": judge.Threshold(5.0, 1.0, "https://x"),
    "cudnn-speedup": judge.Threshold(1.5, 1.0, "https://x"),
    "matmul-peak": judge.Threshold(50.0, 20.0, "https://x"),
    "conv-peak": judge.Threshold(20.0, 5.0, "https://x"),
    "memory-bandwidth": judge.Threshold(60.0, 30.0, "https://x"),
    "host-link": judge.Threshold(50.0, 20.0, "https://x"),
}
HAS_TORCH = importlib.util.find_spec("torch") is not None


def load_worker():
    """The worker's shared module (at run time the package runs in the target interpreter)."""
    return worker_module("common")


def raw(report: dict[str, Any]) -> dict[str, Any]:
    """A framework as the worker gives it: figures without the doctor's rates and verdicts."""
    keep = (
        "id",
        "kind",
        "device",
        "precision",
        "variant",
        "shape",
        "flops",
        "bytes",
        "runs_s",
        "median_s",
        "spread",
        "elapsed_s",
    )
    framework = copy.deepcopy(report)
    framework["benchmarks"] = [{k: b[k] for k in keep if k in b} for b in framework["benchmarks"]]
    framework.pop("verdicts", None)
    return framework


def judged(framework: dict[str, Any], peak=H100, state=None) -> list[dict[str, Any]]:
    framework = dict(framework, benchmarks=judge.rates(framework["benchmarks"], peak))
    return judge.verdicts(framework, peak, LIMITS, state)


def by_id(verdicts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {v["id"]: v for v in verdicts}


def with_median(framework: dict[str, Any], case_id: str, median: float) -> dict[str, Any]:
    framework = copy.deepcopy(framework)
    for bench in framework["benchmarks"]:
        if bench["id"] == case_id and bench["device"] == "gpu":
            bench["median_s"] = median
    return framework


# the worker ----------------------------------------------------------------------------------------


def test_flop_counts_are_those_of_the_operations():
    worker = load_worker()
    assert worker.matmul_flops(8192) == 2 * 8192**3
    # one output element of a 3x3 convolution over 64 input channels: 64*9 multiply-adds
    assert worker.conv_flops(1, 64, 1, 1, 1) == 2 * 64 * 9
    assert worker.conv_flops(32, 3, 64, 224, 224) == 32 * worker.conv_flops(1, 3, 64, 224, 224)


def test_cudnn_numbers_of_both_packings_read_as_versions():
    worker = load_worker()
    assert worker.cudnn_text(8907) == "8.9.7"
    assert worker.cudnn_text(90100) == "9.1.0"
    assert worker.cudnn_text(91002) == "9.10.2"


def test_the_plan_has_the_guides_case_cudnn_off_and_every_precision_on_a_gpu():
    worker = load_worker()
    cpu = worker.plan(quick=True, gpu=False)
    assert [(c[0], c[2]) for c in cpu] == [("conv-guide-b1", "cpu"), ("matmul-1024-fp32", "cpu")]
    gpu = worker.plan(quick=False, gpu=True)
    ids = {c[0] for c in gpu if c[2] == "gpu"}
    assert {
        "conv-guide-b1",
        "conv-guide-b32",
        "conv-large",
        "conv-large-cudnn-off",
        "conv-large-autotune",
        "memory-copy",
    } <= ids
    assert {f"matmul-8192-{p}" for p in ("fp32", "tf32", "fp16", "bf16")} <= ids
    assert max(c[5] for c in worker.plan(quick=True, gpu=True) if c[1] == "matmul") == 4096  # --quick shrinks


def test_summary_is_the_median_and_relative_spread():
    worker = load_worker()
    assert worker.summary([1.0, 3.0, 2.0]) == (2.0, 1.0)


@pytest.mark.live
@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_the_worker_times_the_cpu_baseline_in_a_child_and_reports_progress():
    lines: list[str] = []
    config = json.dumps({"framework": "torch", "quick": True, "cpu_only": True})
    done = LiveSystem().run_worker(sys.executable, verifying.WORKER, [config], 120, lines.append)
    report = json.loads(done.stdout.rpartition(verifying.MARKER)[2].strip())
    assert report["status"] == "no-gpu" and report["version"]
    assert [(b["id"], b["device"]) for b in report["benchmarks"]] == [
        ("conv-guide-b1", "cpu"),
        ("matmul-1024-fp32", "cpu"),
    ]
    for bench in report["benchmarks"]:
        assert (
            len(bench["runs_s"]) == 5 and all(r > 0 for r in bench["runs_s"]) and bench["median_s"] in bench["runs_s"]
        )
    assert lines == ["1/2 conv-guide-b1 on the CPU", "2/2 matmul-1024-fp32 on the CPU"]


@pytest.mark.live
def test_a_script_longer_than_a_windows_command_line_still_runs():
    """Windows caps a command line at 32,767 characters and the worker is longer: the source goes in a file."""
    source = "# padding\n" * 4000 + "import sys\nprint('ran', sys.argv[1:])\n"
    assert len(source) > 32767
    done = LiveSystem().run_script(sys.executable, source, ["a b", "c"], 60)
    assert done.returncode == 0 and done.stdout.strip() == "ran ['a b', 'c']"


@pytest.mark.live
def test_a_framework_without_benchmarks_is_unsupported_and_one_that_cannot_import_is_not_installed(capsys, monkeypatch):
    done = LiveSystem().run_worker(sys.executable, verifying.WORKER, [json.dumps({"framework": "mxnet"})], 60)
    assert json.loads(done.stdout.rpartition(verifying.MARKER)[2].strip())["status"] == "unsupported"
    worker = worker_module("main")

    def missing(config):
        import no_such_framework_here  # noqa: F401

    monkeypatch.setitem(sys.modules, "cudnn_doctor_verify.torch_backend", SimpleNamespace(run=missing))
    worker.main(["-c", json.dumps({"framework": "torch"})])
    report = json.loads(capsys.readouterr().out.rpartition(verifying.MARKER)[2].strip())
    assert report["status"] == "not-installed" and "no_such_framework_here" in report["message"]


# verdicts on recorded figures ----------------------------------------------------------------------


def test_rates_and_percent_of_peak():
    benchmarks = judge.rates(raw(CONSTRUCTED["frameworks"][0])["benchmarks"], H100)
    bf16 = next(b for b in benchmarks if b["id"] == "matmul-8192-bf16")
    assert bf16["tflops"] == pytest.approx(2 * 8192**3 / 0.00151 / 1e12)
    assert bf16["percent_of_peak"] == pytest.approx(100 * bf16["tflops"] / 989.4)
    cpu = next(b for b in benchmarks if b["device"] == "cpu" and b["kind"] == "matmul")
    assert cpu["tflops"] > 0 and cpu["percent_of_peak"] is None  # the datasheet is the GPU's
    copy_rate = next(b for b in benchmarks if b["id"] == "copy-h2d-pinned")
    assert copy_rate["gbs"] == pytest.approx(256 * 2**20 / 0.0051 / 1e9) and copy_rate[
        "percent_of_peak"
    ] == pytest.approx(100 * copy_rate["gbs"] / 64.0)


def test_a_healthy_gpu_passes_every_check():
    verdicts = by_id(judged(raw(CONSTRUCTED["frameworks"][0])))
    assert verdicts["cudnn-active"]["status"] == "pass" and "44.1×" in verdicts["cudnn-active"]["text"]
    assert verdicts["gpu-speedup"]["status"] == "pass"
    assert verdicts["matmul-peak-bf16"]["status"] == "pass"
    assert verdicts["gpu-results-match"]["status"] == "pass"
    assert (
        judge.exit_code([dict(CONSTRUCTED["frameworks"][0], verdicts=list(verdicts.values()))], CONSTRUCTED["gpu"]) == 0
    )


def test_cudnn_not_faster_than_without_it_fails():
    framework = with_median(
        raw(CONSTRUCTED["frameworks"][0]), "conv-large-cudnn-off", 0.00075
    )  # off a little faster than on
    verdict = by_id(judged(framework))["cudnn-active"]
    assert verdict["status"] == "fail" and "not really used" in verdict["text"]


def test_a_slow_matmul_fails_with_the_clocks_and_throttle_reasons_as_evidence():
    framework = with_median(raw(CONSTRUCTED["frameworks"][0]), "matmul-8192-bf16", 0.040)  # 3 % of peak
    state = {
        "clocks_mhz": {"sm": 345, "sm_max": 1980},
        "power_w": {"draw": 90.0, "limit": 700.0},
        "throttle_reasons": ["hw_thermal_slowdown"],
    }
    verdict = by_id(judged(framework, state=state))["matmul-peak-bf16"]
    assert verdict["status"] == "fail" and "3 %" in verdict["text"] and "hw_thermal_slowdown" in verdict["text"]
    assert verdict["evidence"]["clocks_mhz"]["sm"] == 345
    warn = by_id(judged(with_median(raw(CONSTRUCTED["frameworks"][0]), "matmul-8192-bf16", 0.0040), state={}))[
        "matmul-peak-bf16"
    ]
    assert warn["status"] == "warn" and "shared" in warn["text"]  # 28 %: between the thresholds, no reason from NVML


def test_a_wrong_gpu_result_fails():
    framework = raw(CONSTRUCTED["frameworks"][0])
    framework["smoke"][1].update(max_error=0.3, ok=False)
    verdicts = judged(framework)
    assert verdicts[0]["id"] == "gpu-result-wrong" and verdicts[0]["status"] == "fail" and "fp16" in verdicts[0]["text"]
    assert "gpu-results-match" not in by_id(verdicts)


def test_no_gpu_and_an_unknown_gpu():
    assert judged({"framework": "torch", "status": "no-gpu", "benchmarks": []})[0]["id"] == "no-gpu"
    assert judge.exit_code([{"status": "no-gpu", "verdicts": []}], None) == 1
    verdicts = by_id(judged(raw(CONSTRUCTED["frameworks"][0]), peak=None))
    assert verdicts["peak-unknown"]["status"] == "info" and "matmul-peak-bf16" not in verdicts
    assert verdicts["cudnn-active"]["status"] == "pass"  # what needs no datasheet is still judged


def test_cpu_only_as_asked_is_a_pass():
    """Issue 31: `--cpu-only` that ran the CPU baseline did what was asked: exit 0, a ✓, not the no-GPU failure."""
    no_gpu = {"framework": "torch", "status": "no-gpu", "benchmarks": []}
    (verdict,) = judge.verdicts(no_gpu, None, LIMITS, None, cpu_only=True)
    assert (verdict["id"], verdict["status"]) == ("cpu-only", "pass")
    assert judge.exit_code([{"status": "no-gpu", "verdicts": [verdict]}], None, cpu_only=True) == 0
    assert judge.exit_code([{"status": "error", "verdicts": []}], None, cpu_only=True) == 1  # it did not run
    assert judge.exit_code([], None, cpu_only=True) == 1


@pytest.mark.live
def test_a_framework_not_installed_is_a_usage_error(capsys):
    """Issue 31: `verify --framework NAME` for a framework the interpreter lacks is one line and exit 2."""
    import sys

    from cudnn_doctor.cli import main

    assert main(["verify", "--framework", "paddle", "--python", sys.executable]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "--framework paddle: not installed in" in err


# history -------------------------------------------------------------------------------------------


@pytest.mark.live
def test_history_compares_with_the_last_run_on_the_same_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(tmp_path))
    system = LiveSystem()
    before = copy.deepcopy(CONSTRUCTED)
    history.append(system, before)
    other = copy.deepcopy(CONSTRUCTED)
    other["gpu"]["name"] = "NVIDIA A100-SXM4-80GB"
    history.append(system, other)
    (tmp_path / history.FILE).open("a").write('{"torn": \n')
    after = with_median(CONSTRUCTED["frameworks"][0], "matmul-8192-bf16", 0.00302)
    rows = history.compare(dict(CONSTRUCTED, frameworks=[after]), history.last(system, "NVIDIA H100 80GB HBM3"))
    row = next(r for r in rows if r["id"] == "matmul-8192-bf16@gpu")
    assert row["ratio"] == pytest.approx(0.5)  # half the rate since the last run
    assert history.last(system, "Tesla T4") is None
    assert "/" not in (tmp_path / history.FILE).read_text()  # no path of the machine is kept


# report and command --------------------------------------------------------------------------------


def test_the_constructed_result_validates_and_reads_as_text():
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(CONSTRUCTED, SCHEMA)
    text = "\n".join(verify_report.text_lines(CONSTRUCTED))
    assert "NVIDIA H100 80GB HBM3" in text and "% of peak" in text and "✓ cuDNN active" in text


def run_cli(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cudnn_doctor", "verify", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.live
@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_cpu_only_prints_the_cpu_baseline_and_exits_0(tmp_path, monkeypatch):
    """`--cpu-only` ran as asked: exit 0 (issue 31; it was 1, as if the GPU had failed)."""
    jsonschema = pytest.importorskip("jsonschema")
    env = {**__import__("os").environ, "CUDNN_DOCTOR_STATE_DIR": str(tmp_path)}
    done = run_cli("--quick", "--cpu-only", "--framework", "torch", "--format", "json", env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # nothing but JSON on stdout
    jsonschema.validate(result, SCHEMA)
    assert result["gpu"] is None and result["cpu_only"] and result["frameworks"][0]["status"] == "no-gpu"
    assert {b["device"] for b in result["frameworks"][0]["benchmarks"]} == {"cpu"}
    report = tmp_path / "verify.html"
    text = run_cli("--quick", "--cpu-only", "--framework", "torch", "--compare", "--html", str(report), env=env)
    assert text.returncode == 0 and "CPU only, as asked" in text.stdout and "Since the last run" in text.stdout
    page = report.read_text(encoding="utf-8")
    assert "<svg" in page and "conv-guide-b1" in page and "CPU baseline" in page
    assert "cuDNN search order" in page or "Findings" in page  # check's diagnosis follows the figures


@pytest.mark.live
def test_a_missing_interpreter_is_one_line_and_exit_2(tmp_path):
    done = run_cli("--python", str(tmp_path / "nope" / "python"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no such interpreter" in done.stderr


def _cuda_gpu() -> bool:
    if not HAS_TORCH:
        return False
    import torch

    return bool(torch.cuda.is_available())


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_gpu(), reason="needs an NVIDIA GPU that torch can use")
def test_on_a_gpu_verify_runs_every_case_and_cudnn_beats_cudnn_off(tmp_path):
    env = {**__import__("os").environ, "CUDNN_DOCTOR_STATE_DIR": str(tmp_path)}
    done = run_cli("--quick", "--framework", "torch", "--format", "json", env=env)
    result = json.loads(done.stdout)
    torch_result = result["frameworks"][0]
    assert result["gpu"] is not None and torch_result["status"] == "ok", done.stderr
    assert all(s["ok"] for s in torch_result["smoke"]), torch_result["smoke"]
    verdicts = by_id(torch_result["verdicts"])
    assert verdicts["cudnn-active"]["status"] == "pass", verdicts["cudnn-active"]
    assert {b["device"] for b in torch_result["benchmarks"]} == {"gpu", "cpu"}


def test_nvml_state_reads_clocks_power_and_throttle_reasons():
    """The GPU state verify shows, through the ctypes binding, against a stand-in NVML that answers like NVML (power in
    milliwatts, clocks in MHz; the power limit refused, as many boards refuse it)."""
    import ctypes

    from cudnn_doctor.system import nvml

    def answer(value):
        def call(handle, *args):
            args[-1]._obj.value = value(*[a.value for a in args[:-1]]) if callable(value) else value
            return nvml.SUCCESS

        return call

    class StandIn:
        nvmlInit_v2 = nvmlShutdown = staticmethod(lambda: nvml.SUCCESS)
        nvmlDeviceGetCount_v2 = staticmethod(lambda count: setattr(count._obj, "value", 1) or nvml.SUCCESS)
        nvmlDeviceGetHandleByIndex_v2 = staticmethod(lambda index, handle: nvml.SUCCESS)
        nvmlDeviceGetName = staticmethod(
            lambda handle, name, size: ctypes.memmove(name, b"NVIDIA H100 80GB HBM3\0", 22) and nvml.SUCCESS
        )
        nvmlDeviceGetClockInfo = staticmethod(answer(lambda which: {nvml.CLOCK_SM: 345, nvml.CLOCK_MEM: 2619}[which]))
        nvmlDeviceGetMaxClockInfo = staticmethod(answer(1980))
        nvmlDeviceGetPowerUsage = staticmethod(answer(91500))
        nvmlDeviceGetEnforcedPowerLimit = staticmethod(lambda handle, limit: 3)  # NVML_ERROR_NOT_SUPPORTED
        nvmlDeviceGetCurrentClocksThrottleReasons = staticmethod(answer(0x4 | 0x40))

    (state,) = nvml.gpu_state(StandIn())
    assert state == {
        "name": "NVIDIA H100 80GB HBM3",
        "clocks_mhz": {"sm": 345, "sm_max": 1980, "memory": 2619},
        "power_w": {"draw": 91.5, "limit": None},
        "throttle_reasons": ["sw_power_cap", "hw_thermal_slowdown"],
    }
    assert nvml.gpu_state(type("NoDriver", (), {"nvmlInit_v2": staticmethod(lambda: 9)})()) is None


def test_the_workers_report_is_read_by_field_and_a_wrong_one_is_the_workers_failure():
    """Issue 32: the worker's JSON becomes a typed record at the boundary; a field of the wrong type is left out."""
    report = verifying.WorkerReport.read(
        "torch",
        {
            "status": "ok",
            "version": "2.13.0",
            "import_s": 1.5,
            "total_s": True,
            "notes": ["n"],
            "smoke": [{"ok": True}, 3],
        },
    )
    assert (report.framework, report.status, report.version, report.import_s, report.total_s) == (
        "torch",
        "ok",
        "2.13.0",
        1.5,
        None,
    )
    assert report.notes == ("n",) and report.smoke == ({"ok": True},) and report.benchmarks == ()
    odd = verifying.WorkerReport.read("jax", ["not", "an", "object"])
    assert odd.status == "error" and "no report object" in (odd.message or "")
