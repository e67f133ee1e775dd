"""Run inside a *target* interpreter: time one framework's GPU and CPU kernels and print the raw figures.

This file is executed as source text (`python -c SOURCE CONFIG`), never imported by the doctor at
run time, so it stands alone (standard library and the framework only). It measures; the doctor
judges (rates, % of peak, verdicts) with its knowledge. CONFIG is JSON: {"framework": "torch",
"quick": bool, "cpu_only": bool}. Progress lines ("3/17 matmul-8192-bf16 on the GPU") are appended,
as each step starts, to the file $CUDNN_DOCTOR_PROGRESS names, so the doctor can show a bar. One JSON object follows the
marker line on stdout.
"""

import json
import os
import statistics
import sys
import time

MARKER = "@@cudnn-doctor-verify@@"

# Relative tolerance of a GPU result against the CPU's fp32 one, per precision: fp32 keeps ~7 decimal digits
# (summing K=576..4096 products loses ~2), tf32 and bf16 carry 10 and 7 mantissa bits, fp16 10.
TOLERANCE = {"fp32": 1e-4, "tf32": 5e-3, "fp16": 1e-2, "bf16": 5e-2}


class Progress:
    """Writes "N/TOTAL what" to the progress file before each step (nothing when there is no file)."""

    def __init__(self, path, total):
        self.path, self.total, self.done = path, total, 0

    def step(self, text):
        self.done += 1
        if self.path:
            with open(self.path, "a") as handle:
                handle.write("%d/%d %s\n" % (self.done, self.total, text))


def summary(runs):
    """Median and spread ((max - min) / median) of the run times, in seconds."""
    median = statistics.median(runs)
    return median, ((max(runs) - min(runs)) / median if median > 0 else None)


def conv_flops(batch, in_channels, out_channels, height, width, kernel=3):
    """Multiply-adds x 2 of a stride-1, same-padded convolution."""
    return 2.0 * batch * out_channels * height * width * in_channels * kernel * kernel


def matmul_flops(n):
    return 2.0 * n * n * n


def relative_error(result, reference):
    """max |result - reference| / max(1, max |reference|), on the CPU in fp32."""
    difference = (result.float().cpu() - reference).abs().max().item()
    return difference / max(1.0, reference.abs().max().item())


def plan(quick, gpu):
    """The cases, as (id, kind, device, precision, variant, size); sizes shrink with --quick."""
    small = 1024 if quick else 2048  # a matrix product the CPU finishes in well under a second
    cases = [("conv-guide-b1", "conv", "cpu", "fp32", None, 1), ("matmul-%d-fp32" % small, "matmul", "cpu", "fp32", None, small)]
    if not gpu:
        return cases
    n = 4096 if quick else 8192
    large = 16 if quick else 64
    cases += [
        ("conv-guide-b1", "conv", "gpu", "fp32", None, 1),
        ("conv-guide-b32", "conv", "gpu", "fp32", None, 32),
        ("conv-large", "conv", "gpu", "fp16", None, large),
        ("conv-large-autotune", "conv", "gpu", "fp16", "autotune", large),
        ("conv-large-cudnn-off", "conv", "gpu", "fp16", "cudnn-off", large),
        ("matmul-%d-fp32" % small, "matmul", "gpu", "fp32", None, small),
    ]
    for precision in ("fp32", "tf32", "fp16", "bf16"):
        cases.append(("matmul-%d-%s" % (n, precision), "matmul", "gpu", precision, None, n))
    size = (256 if quick else 1024) << 20
    cases += [
        ("copy-h2d-pinned", "copy", "gpu", "bytes", "pinned", size),
        ("copy-h2d-pageable", "copy", "gpu", "bytes", "pageable", size),
        ("copy-d2h-pinned", "copy", "gpu", "bytes", "pinned-d2h", size),
        ("memory-copy", "memory", "gpu", "bytes", None, size),
    ]
    return cases


# torch ----------------------------------------------------------------------------------------------


def torch_run(config):
    began = time.perf_counter()
    import torch

    report = {"import_s": time.perf_counter() - began}
    report.update({"framework": "torch", "version": torch.__version__, "cuda": torch.version.cuda, "smoke": [], "benchmarks": []})
    try:
        report["cudnn"] = _cudnn_text(torch.backends.cudnn.version())
    except Exception as error:  # a broken cuDNN raises here; the smoke test says the rest
        report["cudnn"] = None
        report["message"] = "cuDNN: %s: %s" % (type(error).__name__, error)
    gpu = bool(torch.cuda.is_available()) and not config.get("cpu_only")
    quick = bool(config.get("quick"))
    report["status"] = "ok" if gpu else "no-gpu"
    if gpu:
        report["device_name"] = torch.cuda.get_device_name(0)
        report["bf16"] = bool(torch.cuda.is_bf16_supported())
    cases = plan(quick, gpu)
    if gpu and not report["bf16"]:
        cases = [case for case in cases if case[3] != "bf16"]
    progress = Progress(os.environ.get("CUDNN_DOCTOR_PROGRESS"), len(cases) + (4 if gpu else 0))
    torch.manual_seed(0)
    torch.set_grad_enabled(False)
    if gpu:
        report["smoke"] = _torch_smoke(torch, progress)
    for case_id, kind, device, precision, variant, size in cases:
        progress.step("%s on the %s" % (case_id, device.upper()))
        case_began = time.perf_counter()
        runs, shape, flops, nbytes = _torch_case(torch, kind, device, precision, variant, size, quick)
        elapsed = time.perf_counter() - case_began
        median, spread = summary(runs)
        report["benchmarks"].append(
            {
                "id": case_id,
                "kind": kind,
                "device": device,
                "precision": precision,
                "variant": variant,
                "shape": shape,
                "flops": flops,
                "bytes": nbytes,
                "runs_s": runs,
                "median_s": median,
                "spread": spread,
                "elapsed_s": elapsed,
            }
        )
    report["total_s"] = time.perf_counter() - began
    return report


def _cudnn_text(number):
    """8907 -> 8.9.7, 90100 -> 9.1.0 (cuDNN 9 packs major*10000 + minor*100 + patch)."""
    if number is None:
        return None
    if number >= 10000:
        return "%d.%d.%d" % (number // 10000, number % 10000 // 100, number % 100)
    return "%d.%d.%d" % (number // 1000, number % 1000 // 100, number % 100)


def _torch_smoke(torch, progress):
    """A convolution and a matrix product on the GPU against the CPU's fp32 result, cuDNN on."""
    torch.backends.cudnn.enabled = True
    results = []
    x = torch.randn(2, 16, 64, 64)
    w = torch.randn(32, 16, 3, 3) / 12.0
    reference = torch.nn.functional.conv2d(x, w, padding=1)
    a, b = torch.randn(512, 512), torch.randn(512, 512) / 22.0
    product = a @ b
    checks = [("conv2d", "fp32", None), ("conv2d", "fp16", torch.float16), ("matmul", "tf32", None), ("matmul", "bf16", torch.bfloat16)]
    for name, precision, dtype in checks:
        progress.step("%s %s: GPU against CPU" % (name, precision))
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = precision == "tf32"
        try:
            if name == "conv2d":
                out = torch.nn.functional.conv2d(x.cuda().to(dtype or torch.float32), w.cuda().to(dtype or torch.float32), padding=1)
                error = relative_error(out, reference)
            else:
                if dtype is torch.bfloat16 and not torch.cuda.is_bf16_supported():
                    continue
                out = a.cuda().to(dtype or torch.float32) @ b.cuda().to(dtype or torch.float32)
                error = relative_error(out, product)
        except Exception as failure:  # the GPU path itself failed: that is the finding
            results.append(
                {"name": name, "precision": precision, "max_error": None, "tolerance": TOLERANCE[precision], "ok": False, "error": str(failure)[:300]}
            )
            continue
        results.append({"name": name, "precision": precision, "max_error": error, "tolerance": TOLERANCE[precision], "ok": error <= TOLERANCE[precision]})
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = True
    return results


def _torch_timer(torch, device, fn, warmup, repeat):
    """Seconds per run: CUDA events around each run on the GPU (after a synchronize), perf_counter on the CPU."""
    for _ in range(warmup):
        fn()
    if device == "cpu":
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
        return runs
    torch.cuda.synchronize()
    pairs = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    return [start.elapsed_time(end) / 1000.0 for start, end in pairs]


_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _torch_case(torch, kind, device, precision, variant, size, quick):
    """(runs, shape text, flops, bytes) of one case."""
    on = "cuda" if device == "gpu" else "cpu"
    dtype = getattr(torch, _DTYPES.get(precision, "float32"))
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision != "fp32"
    torch.backends.cudnn.enabled = variant != "cudnn-off"
    torch.backends.cudnn.benchmark = variant == "autotune"
    repeat = 3 if variant == "cudnn-off" else (5 if quick or device == "cpu" else 10)
    warmup = 1 if device == "cpu" else 2  # the first call picks algorithms and creates handles; the second finds the clocks up
    try:
        if kind == "conv" and size in (1, 32):
            x = torch.randn(size, 3, 224, 224, device=on, dtype=dtype)
            conv1 = torch.nn.Conv2d(3, 64, 3, padding=1).to(on, dtype)
            conv2 = torch.nn.Conv2d(64, 64, 3, padding=1).to(on, dtype)
            runs = _torch_timer(torch, device, lambda: conv2(conv1(x)), warmup, repeat)
            flops = conv_flops(size, 3, 64, 224, 224) + conv_flops(size, 64, 64, 224, 224)
            return runs, "2x conv3x3 3->64->64, %dx3x224x224" % size, flops, None
        if kind == "conv":
            x = torch.randn(size, 256, 56, 56, device=on, dtype=dtype).to(memory_format=torch.channels_last)
            conv = torch.nn.Conv2d(256, 256, 3, padding=1, bias=False).to(on, dtype).to(memory_format=torch.channels_last)
            runs = _torch_timer(torch, device, lambda: conv(x), 5 if variant == "autotune" else warmup, repeat)
            return runs, "conv3x3 256->256, %dx256x56x56" % size, conv_flops(size, 256, 256, 56, 56), None
        if kind == "matmul":
            a = torch.randn(size, size, device=on, dtype=dtype)
            b = torch.randn(size, size, device=on, dtype=dtype)
            runs = _torch_timer(torch, device, lambda: a @ b, warmup, repeat)
            return runs, "%dx%d @ %dx%d" % (size, size, size, size), matmul_flops(size), None
        if kind == "copy":
            return _torch_copy(torch, variant, size, repeat)
        source = torch.empty(size, dtype=torch.uint8, device="cuda")
        target = torch.empty_like(source)
        runs = _torch_timer(torch, device, lambda: target.copy_(source), warmup, repeat)
        return runs, "%d MiB device->device" % (size >> 20), None, 2.0 * size  # read and write
    finally:
        torch.backends.cudnn.enabled = True
        torch.backends.cudnn.benchmark = False


def _torch_copy(torch, variant, size, repeat):
    """Host<->device copies: pinned memory may use DMA directly; pageable is staged through a pinned buffer."""
    device_buffer = torch.empty(size, dtype=torch.uint8, device="cuda")
    host = torch.empty(size, dtype=torch.uint8, pin_memory=variant in ("pinned", "pinned-d2h"))
    if variant == "pinned-d2h":
        runs = _torch_timer(torch, "gpu", lambda: host.copy_(device_buffer, non_blocking=True), 2, repeat)
        return runs, "%d MiB device->host, pinned" % (size >> 20), None, float(size)
    runs = _torch_timer(torch, "gpu", lambda: device_buffer.copy_(host, non_blocking=variant == "pinned"), 2, repeat)
    return runs, "%d MiB host->device, %s" % (size >> 20, variant), None, float(size)


RUNNERS = {"torch": torch_run}


def main(argv):
    config = json.loads(argv[1]) if len(argv) > 1 else {"framework": "torch"}
    name = config.get("framework", "torch")
    try:
        runner = RUNNERS.get(name)
        if runner is None:
            report = {"framework": name, "status": "unsupported", "message": "verify has no benchmarks for %s yet" % name}
        else:
            report = runner(config)
    except ImportError as error:
        report = {"framework": name, "status": "not-installed", "message": "%s: %s" % (type(error).__name__, error)}
    except Exception as error:  # the framework failed mid-run: report it, the doctor explains
        report = {"framework": name, "status": "error", "message": "%s: %s" % (type(error).__name__, str(error)[:500])}
    sys.stdout.write("\n" + MARKER + "\n" + json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv)
