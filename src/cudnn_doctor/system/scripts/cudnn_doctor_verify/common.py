"""What every framework's run shares: the wire (marker, progress file), the plan of cases, timing and the report's
records."""

import statistics
import time

MARKER = "@@cudnn-doctor-verify@@"


TOLERANCE = {"fp32": 1e-4, "tf32": 5e-3, "fp16": 1e-2, "bf16": 5e-2}


SMOKE_CHECKS = (("conv2d", "fp32"), ("conv2d", "fp16"), ("matmul", "tf32"), ("matmul", "bf16"))


class Progress:
    """Writes "N/TOTAL what" to the progress file before each step (nothing when there is no file)."""

    def __init__(self, path, total):
        self.path, self.total, self.done = path, total, 0

    def step(self, text):
        self.done += 1
        if self.path:
            with open(self.path, "a") as handle:
                handle.write("%d/%d %s\n" % (self.done, self.total, text))


class CaseUnsupported(Exception):
    """The framework cannot run this case here (no switch, no such memory): left out, the reason noted."""


class Unsupported(Exception):
    """verify cannot run this framework here (a missing helper package): status "unsupported" with the reason."""


def summary(runs):
    """Median and spread ((max - min) / median) of the run times, in seconds."""
    median = statistics.median(runs)
    return median, ((max(runs) - min(runs)) / median if median > 0 else None)


def conv_flops(batch, in_channels, out_channels, height, width, kernel=3):
    """Multiply-adds x 2 of a stride-1, same-padded convolution."""
    return 2.0 * batch * out_channels * height * width * in_channels * kernel * kernel


def matmul_flops(n):
    return 2.0 * n * n * n


def plan(quick, gpu):
    """The cases, as (id, kind, device, precision, variant, size); sizes shrink with --quick."""
    small = 1024 if quick else 2048  # a matrix product the CPU finishes in well under a second
    cases = [
        ("conv-guide-b1", "conv", "cpu", "fp32", None, 1),
        ("matmul-%d-fp32" % small, "matmul", "cpu", "fp32", None, small),
    ]
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


def conv_spec(size):
    """The convolution a conv case times: (input NCHW, weights OIHW in the order applied, shape text, flops).

    Batch 1 and 32 are the guides' two 3x3 layers on 224x224x3; a larger batch is one 3x3 layer of
    256 channels on 56x56, large enough to fill a GPU."""
    if size in (1, 32):
        flops = conv_flops(size, 3, 64, 224, 224) + conv_flops(size, 64, 64, 224, 224)
        return (size, 3, 224, 224), [(64, 3, 3, 3), (64, 64, 3, 3)], "2x conv3x3 3->64->64, %dx3x224x224" % size, flops
    return (
        (size, 256, 56, 56),
        [(256, 256, 3, 3)],
        "conv3x3 256->256, %dx256x56x56" % size,
        conv_flops(size, 256, 256, 56, 56),
    )


def repeats(device, variant, quick):
    """(warm-up, timed) runs of a case: the first call picks algorithms and creates handles, the second finds the
    clocks up; autotuning tries algorithms in its first calls; cuDNN off is slow: 3 runs; the CPU 5."""
    repeat = 3 if variant == "cudnn-off" else (5 if quick or device == "cpu" else 10)
    warmup = 1 if device == "cpu" else (5 if variant == "autotune" else 2)
    return warmup, repeat


def time_runs(fn, sync, warmup, repeat):
    """Seconds per run: perf_counter around each run, each ended by `sync(result)` so the device has finished."""
    for _ in range(warmup):
        sync(fn())
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        sync(fn())
        runs.append(time.perf_counter() - start)
    return runs


def new_report(framework, began):
    """The report's common fields; `began` is when the framework's import began."""
    return {
        "framework": framework,
        "import_s": time.perf_counter() - began,
        "smoke": [],
        "benchmarks": [],
        "notes": [],
        "_began": began,
    }


def benchmark_record(case, runs, shape, flops, nbytes, elapsed):
    """One benchmark of the result (verify.schema.json's worker part)."""
    case_id, kind, device, precision, variant, _ = case
    median, spread = summary(runs)
    return {
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


def run_cases(report, cases, progress, measure):
    """Time each case with `measure(case) -> (runs, shape, flops, bytes)`; a CaseUnsupported becomes a note."""
    for case in cases:
        progress.step("%s on the %s" % (case[0], case[2].upper()))
        began = time.perf_counter()
        try:
            runs, shape, flops, nbytes = measure(case)
        except CaseUnsupported as reason:
            report["notes"].append("%s left out: %s" % (case[0], reason))
            continue
        report["benchmarks"].append(benchmark_record(case, runs, shape, flops, nbytes, time.perf_counter() - began))


def finish(report):
    """The report as printed: total time since the import began; no empty notes."""
    report["total_s"] = time.perf_counter() - report.pop("_began")
    if not report.get("notes"):
        report.pop("notes", None)
    return report


def gpu_cases(cases, bf16, skips):
    """The plan less bf16 where the GPU has none (None: not known, kept) and less the variants the framework has no
    switch for
    (`skips`: (variant, why) pairs); returns (cases, notes)."""
    skips, kept, notes = dict(skips), [], []
    for case in cases:
        if case[3] == "bf16" and case[2] == "gpu" and bf16 is False:
            continue
        if case[4] in skips:
            notes.append("%s left out: %s" % (case[0], skips[case[4]]))
            continue
        kept.append(case)
    return kept, notes


def smoke_failure(name, precision, failure):
    return {
        "name": name,
        "precision": precision,
        "max_error": None,
        "tolerance": TOLERANCE[precision],
        "ok": False,
        "error": str(failure)[:300],
    }


def smoke_result(name, precision, error):
    return {
        "name": name,
        "precision": precision,
        "max_error": error,
        "tolerance": TOLERANCE[precision],
        "ok": error <= TOLERANCE[precision],
    }


def version_text(value):
    """A version the framework gives as a string, number or False/"False" (CPU builds) -> a string or None."""
    if value in (None, False, "", "False", "None"):
        return None
    return str(value)


def cuda_text(number):
    """12040 -> 12.4 (cudaRuntimeGetVersion packs major*1000 + minor*10)."""
    if not number:
        return None
    return "%d.%d" % (number // 1000, number % 1000 // 10)


DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def cudnn_text(number):
    """8907 -> 8.9.7, 90100 -> 9.1.0 (cuDNN 9 packs major*10000 + minor*100 + patch)."""
    if number is None:
        return None
    if number >= 10000:
        return "%d.%d.%d" % (number // 10000, number % 10000 // 100, number % 100)
    return "%d.%d.%d" % (number // 1000, number % 1000 // 100, number % 100)
