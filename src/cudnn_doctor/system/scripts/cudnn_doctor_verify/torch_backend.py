"""PyTorch's backend: torch tensors and CUDA events (torch needs no numpy), the same cases and records as the others."""

import os
import time

from .common import (
    DTYPES,
    SMOKE_CHECKS,
    Progress,
    conv_spec,
    cudnn_text,
    finish,
    gpu_cases,
    matmul_flops,
    new_report,
    plan,
    repeats,
    run_cases,
    smoke_failure,
    smoke_result,
    time_runs,
)


def run(config):
    began = time.perf_counter()
    import torch

    report = new_report("torch", began)
    report.update({"version": torch.__version__, "cuda": torch.version.cuda})
    try:
        report["cudnn"] = cudnn_text(torch.backends.cudnn.version())
    except Exception as error:  # a broken cuDNN raises here; the smoke test says the rest
        report["cudnn"] = None
        report["message"] = "cuDNN: %s: %s" % (type(error).__name__, error)
    gpu = bool(torch.cuda.is_available()) and not config.get("cpu_only")
    quick = bool(config.get("quick"))
    report["status"] = "ok" if gpu else "no-gpu"
    cases = plan(quick, gpu)
    if gpu:
        report["device_name"] = torch.cuda.get_device_name(0)
        report["bf16"] = bool(torch.cuda.is_bf16_supported())
        cases, report["notes"] = gpu_cases(cases, report["bf16"], {})
    progress = Progress(os.environ.get("CUDNN_DOCTOR_PROGRESS"), len(cases) + (len(SMOKE_CHECKS) if gpu else 0))
    torch.manual_seed(0)
    torch.set_grad_enabled(False)
    if gpu:
        report["smoke"] = _torch_smoke(torch, progress)
    run_cases(report, cases, progress, lambda case: _torch_case(torch, case, quick))
    return finish(report)


def relative_error(result, reference):
    """max |result - reference| / max(1, max |reference|), on the CPU in fp32."""
    difference = (result.float().cpu() - reference).abs().max().item()
    return difference / max(1.0, reference.abs().max().item())


def _torch_smoke(torch, progress):
    """A convolution and a matrix product on the GPU against the CPU's fp32 result, cuDNN on."""
    torch.backends.cudnn.enabled = True
    results = []
    x = torch.randn(2, 16, 64, 64)
    w = torch.randn(32, 16, 3, 3) / 12.0
    reference = torch.nn.functional.conv2d(x, w, padding=1)
    a, b = torch.randn(512, 512), torch.randn(512, 512) / 22.0
    product = a @ b
    dtypes = {"fp32": None, "fp16": torch.float16, "tf32": None, "bf16": torch.bfloat16}
    for name, precision in SMOKE_CHECKS:
        dtype = dtypes[precision]
        progress.step("%s %s: GPU against CPU" % (name, precision))
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = precision == "tf32"
        try:
            if name == "conv2d":
                out = torch.nn.functional.conv2d(
                    x.cuda().to(dtype or torch.float32), w.cuda().to(dtype or torch.float32), padding=1
                )
                error = relative_error(out, reference)
            else:
                if dtype is torch.bfloat16 and not torch.cuda.is_bf16_supported():
                    continue
                out = a.cuda().to(dtype or torch.float32) @ b.cuda().to(dtype or torch.float32)
                error = relative_error(out, product)
        except Exception as failure:  # the GPU path itself failed: that is the finding
            results.append(smoke_failure(name, precision, failure))
            continue
        results.append(smoke_result(name, precision, error))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = True
    return results


def _torch_timer(torch, device, fn, warmup, repeat):
    """Seconds per run: CUDA events around each run on the GPU (after a synchronize), perf_counter on the CPU."""
    if device == "cpu":
        return time_runs(fn, lambda result: None, warmup, repeat)
    for _ in range(warmup):
        fn()
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


def _torch_case(torch, case, quick):
    """(runs, shape text, flops, bytes) of one case."""
    _, kind, device, precision, variant, size = case
    on = "cuda" if device == "gpu" else "cpu"
    dtype = getattr(torch, DTYPES.get(precision, "float32"))
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision != "fp32"
    torch.backends.cudnn.enabled = variant != "cudnn-off"
    torch.backends.cudnn.benchmark = variant == "autotune"
    warmup, repeat = repeats(device, variant, quick)
    try:
        if kind == "conv":
            x_shape, w_shapes, shape, flops = conv_spec(size)
            x = torch.randn(*x_shape, device=on, dtype=dtype)
            layers = [torch.nn.Conv2d(w[1], w[0], 3, padding=1, bias=len(w_shapes) > 1).to(on, dtype) for w in w_shapes]
            if len(w_shapes) == 1:  # the large convolution: channels-last, as tensor cores prefer
                x = x.to(memory_format=torch.channels_last)
                layers = [layer.to(memory_format=torch.channels_last) for layer in layers]

            def forward():
                out = x
                for layer in layers:
                    out = layer(out)
                return out

            return _torch_timer(torch, device, forward, warmup, repeat), shape, flops, None
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
