"""`verify` for TensorFlow, JAX, PaddlePaddle and ONNX Runtime: the worker's shared helpers here, and each
framework's real CPU run in a venv of their CPU builds.

The venv is built once, under a lock, in ~/.cache/cudnn-doctor-tests/venvs/verify-frameworks-HASH (CUDNN_DOCTOR_TEST_CACHE
moves it), outside the repository; the tests that need it skip when the package registry cannot be
reached. Each framework's convolution is checked against a plain-Python one on a small input whose
height and width differ, so a layout mistake (NHWC taken for NCHW, OIHW for HWIO) fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cudnn_doctor.system.interface import CHILD_SCRIPTS
from cudnn_doctor.system.live import LiveSystem
from cudnn_doctor.verify import run as verifying
from tests.child_scripts import worker_module
from tests.conftest import cached_venv

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((ROOT / "src/cudnn_doctor/reports/verify.schema.json").read_text(encoding="utf-8"))
REQUIREMENTS = ("jax[cpu]", "tensorflow-cpu", "paddlepaddle", "onnxruntime", "onnx")
FRAMEWORKS = ("tensorflow", "jax", "paddle", "onnxruntime")


def load_worker():
    """The worker's shared module (at run time the package runs in the target interpreter)."""
    return worker_module("common")


worker = load_worker()


# the shared helpers (no framework needed) ----------------------------------------------------------


def test_every_framework_verify_knows_has_a_runner():
    assert set(worker_module("main").BACKENDS) == set(verifying.FRAMEWORKS)


def test_conv_spec_is_the_guides_case_and_the_large_convolution():
    x, weights, shape, flops = worker.conv_spec(32)
    assert x == (32, 3, 224, 224) and weights == [(64, 3, 3, 3), (64, 64, 3, 3)] and "32x3x224x224" in shape
    assert flops == worker.conv_flops(32, 3, 64, 224, 224) + worker.conv_flops(32, 64, 64, 224, 224)
    x, weights, _, flops = worker.conv_spec(16)
    assert x == (16, 256, 56, 56) and weights == [(256, 256, 3, 3)] and flops == worker.conv_flops(16, 256, 256, 56, 56)


def test_repeats_follow_the_device_and_the_variant():
    assert worker.repeats("cpu", None, True) == (1, 5) and worker.repeats("cpu", None, False) == (1, 5)
    assert worker.repeats("gpu", None, True) == (2, 5) and worker.repeats("gpu", None, False) == (2, 10)
    assert worker.repeats("gpu", "cudnn-off", False) == (2, 3)  # slow without cuDNN: three runs
    assert worker.repeats("gpu", "autotune", True)[0] == 5  # autotuning tries algorithms in its first calls


def test_time_runs_waits_for_each_result_and_times_only_the_repeats():
    calls: list[str] = []
    counter = iter(range(100))

    def fn():
        calls.append("run")
        return next(counter)

    def sync(result):
        calls.append(f"sync {result}")

    runs = worker.time_runs(fn, sync, 2, 3)
    assert len(runs) == 3 and all(r >= 0 for r in runs)
    assert calls == ["run", "sync 0", "run", "sync 1", "run", "sync 2", "run", "sync 3", "run", "sync 4"]


def test_gpu_cases_drop_bf16_without_it_and_note_each_variant_a_framework_cannot_switch():
    cases = worker.plan(quick=True, gpu=True)
    kept, notes = worker.gpu_cases(cases, False, (("cudnn-off", "no switch"),))
    assert "matmul-4096-bf16" not in {c[0] for c in kept} and "conv-large-cudnn-off" not in {c[0] for c in kept}
    assert notes == ["conv-large-cudnn-off left out: no switch"]  # bf16 is the GPU's lack, not the framework's
    unknown, _ = worker.gpu_cases(cases, None, ())
    assert unknown == cases  # bf16 not known (ONNX Runtime): the cases stay and say for themselves


def test_run_cases_records_each_case_and_notes_an_unsupported_one():
    report = worker.new_report("jax", 0.0)
    progress_file: list[str] = []

    class Lines(worker.Progress):
        def step(self, text):
            self.done += 1
            progress_file.append("%d/%d %s" % (self.done, self.total, text))

    cases = [
        ("conv-guide-b1", "conv", "gpu", "fp32", None, 1),
        ("copy-h2d-pinned", "copy", "gpu", "bytes", "pinned", 1 << 20),
    ]

    def measure(case):
        if case[1] == "copy":
            raise worker.CaseUnsupported("no pinned buffer")
        return [0.3, 0.1, 0.2], "shape", 10.0, None

    worker.run_cases(report, cases, Lines(None, 2), measure)
    (bench,) = report["benchmarks"]
    assert (
        bench["id"] == "conv-guide-b1"
        and bench["median_s"] == 0.2
        and bench["spread"] == pytest.approx(1.0)
        and bench["elapsed_s"] >= 0
    )
    assert report["notes"] == ["copy-h2d-pinned left out: no pinned buffer"]
    assert progress_file == ["1/2 conv-guide-b1 on the GPU", "2/2 copy-h2d-pinned on the GPU"]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(bench, SCHEMA["properties"]["frameworks"]["items"]["properties"]["benchmarks"]["items"])


def test_finish_sums_the_time_and_drops_empty_notes():
    report = worker.finish(worker.new_report("tensorflow", 0.0))
    assert "notes" not in report and "_began" not in report and report["total_s"] >= report["import_s"] > 0
    noted = worker.new_report("jax", 0.0)
    noted["notes"].append("x")
    assert worker.finish(noted)["notes"] == ["x"]


def test_versions_as_frameworks_give_them_read_as_text():
    assert (
        worker.version_text("False") is None and worker.version_text(False) is None and worker.version_text("") is None
    )  # CPU builds
    assert worker.version_text("12.4") == "12.4" and worker.version_text(9) == "9"
    assert worker.cuda_text(12040) == "12.4" and worker.cuda_text(13000) == "13.0" and worker.cuda_text(0) is None


def test_a_smoke_result_is_judged_against_its_precisions_tolerance():
    assert worker.smoke_result("matmul", "bf16", 0.04)["ok"] and not worker.smoke_result("matmul", "fp32", 0.04)["ok"]
    failed = worker.smoke_failure("conv2d", "fp16", RuntimeError("CUDNN_STATUS_NOT_SUPPORTED"))
    assert failed["ok"] is False and failed["max_error"] is None and "CUDNN_STATUS" in failed["error"]


# the frameworks, for real, on the CPU --------------------------------------------------------------


@pytest.fixture(scope="session")
def framework_python() -> Path:
    """A venv with the CPU builds of the four frameworks (and onnx), built once and reused."""
    if sys.platform == "win32":
        pytest.skip("the framework venv is a Linux/macOS venv")
    return cached_venv("verify-frameworks", *REQUIREMENTS)


def _worker(python: Path, config: dict[str, Any], lines: list[str] | None = None) -> dict[str, Any]:
    done = LiveSystem().run_worker(
        str(python), verifying.WORKER, [json.dumps(config)], 300, lines.append if lines is not None else None
    )
    assert not done.timed_out and verifying.MARKER in done.stdout, done.stderr[-2000:]
    return json.loads(done.stdout.rpartition(verifying.MARKER)[2].strip())


def _conv_reference(x: list, weights: list) -> list:
    """Plain-Python stride-1, same-padded 3x3 cross-correlation in NCHW/OIHW, layer after layer."""
    for w in weights:
        batch, channels, height, width = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
        out = [[[[0.0] * width for _ in range(height)] for _ in range(len(w))] for _ in range(batch)]
        for n in range(batch):
            for o in range(len(w)):
                for i in range(height):
                    for j in range(width):
                        total = 0.0
                        for c in range(channels):
                            for di in range(3):
                                for dj in range(3):
                                    if 0 <= i + di - 1 < height and 0 <= j + dj - 1 < width:
                                        total += x[n][c][i + di - 1][j + dj - 1] * w[o][c][di][dj]
                        out[n][o][i][j] = total
        x = out
    return x


def _close(result: Any, reference: Any) -> bool:
    """Same nesting (so the same layout) and the same numbers."""
    if isinstance(reference, list):
        return (
            isinstance(result, list)
            and len(result) == len(reference)
            and all(_close(r, e) for r, e in zip(result, reference))
        )
    return abs(result - reference) <= 1e-4 * max(1.0, abs(reference))


def test_the_plain_python_reference_is_a_convolution_not_its_transpose():
    # a 1x1x1x3 row against a kernel with a single off-centre tap: the output shifts one way only
    kernel = [[[[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]]
    assert _conv_reference([[[[1.0, 2.0, 3.0]]]], [kernel]) == [[[[0.0, 0.0, 0.0]]]]  # row -1 is padding
    kernel = [[[[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]]]
    assert _conv_reference([[[[1.0, 2.0, 3.0]]]], [kernel]) == [[[[2.0, 3.0, 0.0]]]]


@pytest.mark.network
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_frameworks_convolution_and_product_match_a_reference(framework_python, framework):
    result = _worker(framework_python, {"framework": framework, "selftest": True})
    assert result["status"] == "selftest", result
    inputs = result["inputs"]
    assert _close(result["conv"], _conv_reference(inputs["x"], inputs["weights"])), result["conv"]
    a, b = inputs["a"], inputs["b"]
    product = [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]
    assert _close(result["matmul"], product)


@pytest.mark.network
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_without_a_gpu_each_framework_runs_the_cpu_baseline_with_the_torch_ids(framework_python, framework):
    lines: list[str] = []
    report = _worker(framework_python, {"framework": framework, "quick": True}, lines)
    assert report["status"] == "no-gpu" and report["version"], report
    assert report["cuda"] is None and report["cudnn"] is None  # CPU builds
    assert [(b["id"], b["device"]) for b in report["benchmarks"]] == [
        (c[0], c[2]) for c in worker.plan(quick=True, gpu=False)
    ]
    assert [(b["id"], b["device"]) for b in report["benchmarks"]] == [
        ("conv-guide-b1", "cpu"),
        ("matmul-1024-fp32", "cpu"),
    ]
    conv, product = report["benchmarks"]
    assert conv["flops"] == worker.conv_flops(1, 3, 64, 224, 224) + worker.conv_flops(1, 64, 64, 224, 224)
    assert product["flops"] == worker.matmul_flops(1024)
    for bench in report["benchmarks"]:
        assert (
            len(bench["runs_s"]) == 5 and all(r > 0 for r in bench["runs_s"]) and bench["median_s"] in bench["runs_s"]
        )
        assert bench["elapsed_s"] >= sum(bench["runs_s"])
    assert report["total_s"] >= report["import_s"] > 0 and report["smoke"] == []
    assert lines == ["1/2 conv-guide-b1 on the CPU", "2/2 matmul-1024-fp32 on the CPU"]


@pytest.mark.network
def test_onnx_runtime_without_onnx_is_unsupported_and_says_so(framework_python, tmp_path, monkeypatch):
    (tmp_path / "onnx.py").write_text("raise ImportError('onnx hidden by the test')\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    report = _worker(framework_python, {"framework": "onnxruntime", "quick": True})
    assert report["status"] == "unsupported" and "`onnx`" in report["message"]


# The GPU cases' code, run on the CPU: the framework's "gpu" device mapped to its CPU, sizes shrunk.
STAND_IN_GPU = """
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
from cudnn_doctor_verify import arrays, common
module = importlib.import_module("cudnn_doctor_verify.%s_backend" % sys.argv[3])
base, real_plan = getattr(module, sys.argv[2]), common.plan

def small_plan(quick, gpu):
    return [(c[0], c[1], c[2], c[3], c[4], {"conv": 1, "matmul": 64}.get(c[1], 1 << 20)) for c in real_plan(quick, gpu)]

class OnTheCpu(base):
    def gpu(self):
        return "Stand-in GPU", True

    def _device(self, device):
        return base._device(self, "cpu")

arrays.plan = small_plan
report = arrays.backend_run({"quick": True}, OnTheCpu, sys.argv[3])
sys.stdout.write(common.MARKER + "\\n" + json.dumps(report) + "\\n")
"""


@pytest.mark.network
@pytest.mark.parametrize(
    ("framework", "backend", "left_out"),
    [
        ("jax", "JaxBackend", {"conv-large-autotune": "no run-time switch", "conv-large-cudnn-off": "no switch"}),
        (
            "tensorflow",
            "TensorFlowBackend",
            {
                "conv-large-cudnn-off": "no switch",
                "copy-h2d-pinned": "no pinned host",
                "copy-d2h-pinned": "no pinned host",
            },
        ),
    ],
)
def test_the_gpu_cases_code_runs_every_case_with_a_stand_in_gpu(framework_python, framework, backend, left_out):
    done = LiveSystem().run_script(str(framework_python), STAND_IN_GPU, [str(CHILD_SCRIPTS), backend, framework], 300)
    assert verifying.MARKER in done.stdout, done.stderr[-3000:]
    report = json.loads(done.stdout.rpartition(verifying.MARKER)[2].strip())
    assert report["status"] == "ok" and report["device_name"] == "Stand-in GPU"
    assert [(s["name"], s["precision"]) for s in report["smoke"]] == list(worker.SMOKE_CHECKS)
    assert all(s["ok"] for s in report["smoke"]), report["smoke"]
    expected = [(c[0], c[2]) for c in worker.plan(quick=True, gpu=True) if c[0] not in left_out]
    assert [(b["id"], b["device"]) for b in report["benchmarks"]] == expected
    for note, (case_id, why) in zip(report["notes"], left_out.items()):
        assert note.startswith(f"{case_id} left out: ") and why in note
    assert len(report["notes"]) == len(left_out)
    for bench in report["benchmarks"]:
        assert bench["median_s"] > 0 and (bench["flops"] or bench["bytes"]), bench
    copies = [b for b in report["benchmarks"] if b["kind"] in ("copy", "memory")]
    assert all(b["bytes"] >= 1 << 20 for b in copies) and any(
        b["kind"] == "memory" and b["bytes"] == 2 << 20 for b in copies
    )
