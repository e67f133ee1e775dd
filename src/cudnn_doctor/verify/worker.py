"""Run inside a *target* interpreter: time one framework's GPU and CPU kernels and print the raw figures.

This file is executed as source text (`python -c SOURCE CONFIG`), never imported by the doctor at
run time, so it stands alone (standard library, the framework and, for all but torch, numpy, which
they all depend on). It measures; the doctor judges (rates, % of peak, verdicts) with its knowledge.
CONFIG is JSON: {"framework": "torch", "quick": bool, "cpu_only": bool}; {"framework": ..., "selftest":
true} instead returns a convolution and a matrix product of fixed small inputs on the CPU, so a test can
check the framework's layout handling against a reference. Progress lines ("3/17 matmul-8192-bf16 on
the GPU") are appended, as each step starts, to the file $CUDNN_DOCTOR_PROGRESS names, so the doctor
can show a bar. One JSON object follows the marker line on stdout.

Every framework runs the same cases (`plan()`, same ids), so the doctor's verdicts apply to each; a
case a framework has no switch for is left out and said in the report's "notes".
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
# The smoke checks, in order: a convolution and a matrix product on the GPU against the CPU's fp32 result.
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


# what every runner shares ---------------------------------------------------------------------------


def conv_spec(size):
    """The convolution a conv case times: (input NCHW, weights OIHW in the order applied, shape text, flops).

    Batch 1 and 32 are the guides' two 3x3 layers on 224x224x3; a larger batch is one 3x3 layer of
    256 channels on 56x56, large enough to fill a GPU."""
    if size in (1, 32):
        flops = conv_flops(size, 3, 64, 224, 224) + conv_flops(size, 64, 64, 224, 224)
        return (size, 3, 224, 224), [(64, 3, 3, 3), (64, 64, 3, 3)], "2x conv3x3 3->64->64, %dx3x224x224" % size, flops
    return (size, 256, 56, 56), [(256, 256, 3, 3)], "conv3x3 256->256, %dx256x56x56" % size, conv_flops(size, 256, 256, 56, 56)


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
    return {"framework": framework, "import_s": time.perf_counter() - began, "smoke": [], "benchmarks": [], "notes": [], "_began": began}


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
    """The plan less bf16 where the GPU has none (None: not known, kept) and less the variants the framework has no switch for
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


def max_relative_error(result, reference):
    """max |result - reference| / max(1, max |reference|) of two numpy arrays, in fp32."""
    import numpy

    result = numpy.asarray(result, dtype=numpy.float32)
    reference = numpy.asarray(reference, dtype=numpy.float32)
    difference = float(numpy.max(numpy.abs(result - reference)))
    return difference / max(1.0, float(numpy.max(numpy.abs(reference))))


def smoke_failure(name, precision, failure):
    return {"name": name, "precision": precision, "max_error": None, "tolerance": TOLERANCE[precision], "ok": False, "error": str(failure)[:300]}


def smoke_result(name, precision, error):
    return {"name": name, "precision": precision, "max_error": error, "tolerance": TOLERANCE[precision], "ok": error <= TOLERANCE[precision]}


# frameworks with numpy arrays: TensorFlow, JAX, PaddlePaddle, ONNX Runtime ---------------------------


class Backend:
    """One framework's ops for the shared runner. `conv` and `matmul` take numpy fp32 inputs (NCHW, OIHW) and
    return (fn, fetch): fn() runs the op on prepared device data and returns its result, fetch(result) gives it
    back as a numpy fp32 array in NCHW, so every framework's result is compared in one layout."""

    name = "?"
    skips = ()  # type: tuple[tuple[str, str], ...]  # (variant, why the framework cannot run it); a comment: this runs on any Python
    notes = ()  # what the framework said while being probed (a list per instance where used)

    def facts(self):
        """version, cuda, cudnn and anything else the framework says about its build."""
        raise NotImplementedError

    def gpu(self):
        """(device name, bf16 supported or None when not known) of the first GPU the framework sees, None without one."""
        raise NotImplementedError

    def sync(self, device, result):
        """Wait until `result` is computed."""

    def conv(self, x, weights, device, precision, variant):
        raise NotImplementedError

    def matmul(self, a, b, device, precision):
        raise NotImplementedError

    def copy(self, variant, size):
        """(fn, shape text) of a host<->device copy of `size` bytes."""
        raise CaseUnsupported("no copy for %s" % variant)

    def memory(self, size):
        """(fn, shape text, bytes moved) of a device->device pass over `size` bytes."""
        raise CaseUnsupported("no device copy")


def _random(shape, seed=0):
    """Normal fp32 data, the same for the same seed (so every framework computes on the same numbers)."""
    import numpy

    return numpy.random.default_rng(seed).standard_normal(shape, dtype=numpy.float32)


def _weights(shape):
    """OIHW weights scaled by 1/sqrt(fan-in), so that activations stay near 1 through the layers (no fp16 overflow)."""
    fan_in = shape[1] * shape[2] * shape[3]
    return _random(shape, seed=1 + shape[0]) / float(fan_in) ** 0.5


def _backend_case(backend, case, quick):
    """(runs, shape, flops, bytes) of one case on a numpy-array framework."""
    _, kind, device, precision, variant, size = case
    warmup, repeat = repeats(device, variant, quick)
    sync = lambda result: backend.sync(device, result)  # noqa: E731
    if kind == "conv":
        x_shape, w_shapes, shape, flops = conv_spec(size)
        fn, _ = backend.conv(_random(x_shape), [_weights(w) for w in w_shapes], device, precision, variant)
        return time_runs(fn, sync, warmup, repeat), shape, flops, None
    if kind == "matmul":
        fn, _ = backend.matmul(_random((size, size)), _random((size, size), 1) / float(size) ** 0.5, device, precision)
        return time_runs(fn, sync, warmup, repeat), "%dx%d @ %dx%d" % (size, size, size, size), matmul_flops(size), None
    if kind == "copy":
        fn, shape = backend.copy(variant, size)
        return time_runs(fn, sync, 2, repeat), shape, None, float(size)
    fn, shape, nbytes = backend.memory(size)
    return time_runs(fn, sync, warmup, repeat), shape, None, nbytes


def _backend_smoke(backend, progress, bf16):
    """The smoke checks on the GPU against the framework's own CPU fp32 result."""
    x, w = _random((2, 16, 64, 64), 2), _random((32, 16, 3, 3), 3) / 12.0
    a, b = _random((512, 512), 4), _random((512, 512), 5) / 22.0

    def compute(name, device, precision):
        fn, fetch = backend.conv(x, [w], device, precision, None) if name == "conv2d" else backend.matmul(a, b, device, precision)
        result = fn()
        backend.sync(device, result)
        return fetch(result)

    references = {"conv2d": compute("conv2d", "cpu", "fp32"), "matmul": compute("matmul", "cpu", "fp32")}
    results = []
    for name, precision in SMOKE_CHECKS:
        progress.step("%s %s: GPU against CPU" % (name, precision))
        if precision == "bf16" and bf16 is False:
            continue
        try:
            error = max_relative_error(compute(name, "gpu", precision), references[name])
        except CaseUnsupported:
            continue
        except Exception as failure:  # the GPU path itself failed: that is the finding
            results.append(smoke_failure(name, precision, failure))
            continue
        results.append(smoke_result(name, precision, error))
    return results


def selftest_inputs():
    """Small fixed inputs whose products are exact in fp32: a 1x3x5x6 image (H != W, so a swapped axis shows),
    two layers 3->4->2 and a 3x4 @ 4x5 product."""
    import numpy

    def grid(shape, step, modulo):
        count = 1
        for extent in shape:
            count *= extent
        return ((numpy.arange(count) * step % modulo) - modulo // 2).reshape(shape).astype(numpy.float32) / 4.0

    return {"x": grid((1, 3, 5, 6), 7, 11), "weights": [grid((4, 3, 3, 3), 5, 7), grid((2, 4, 3, 3), 3, 5)], "a": grid((3, 4), 3, 7), "b": grid((4, 5), 5, 9)}


def selftest(backend):
    """The framework's CPU convolution and matrix product of `selftest_inputs()`, with the inputs, as lists."""
    inputs = selftest_inputs()
    fn, fetch = backend.conv(inputs["x"], inputs["weights"], "cpu", "fp32", None)
    conv = fetch(fn())
    fn, fetch = backend.matmul(inputs["a"], inputs["b"], "cpu", "fp32")
    product = fetch(fn())
    return {
        "framework": backend.name,
        "status": "selftest",
        "inputs": {"x": inputs["x"].tolist(), "weights": [w.tolist() for w in inputs["weights"]], "a": inputs["a"].tolist(), "b": inputs["b"].tolist()},
        "conv": conv.tolist(),
        "matmul": product.tolist(),
    }


def backend_run(config, make_backend, name):
    """The shared run: import (timed), the build's versions, GPU or not, smoke checks, the plan's cases."""
    began = time.perf_counter()
    backend = make_backend()
    if config.get("selftest"):
        return selftest(backend)
    report = new_report(name, began)
    report.update(backend.facts())
    found = None if config.get("cpu_only") else backend.gpu()
    report["status"] = "ok" if found else "no-gpu"
    quick = bool(config.get("quick"))
    cases, notes = plan(quick, found is not None), []
    if found:
        report["device_name"], report["bf16"] = found
        cases, notes = gpu_cases(cases, found[1], backend.skips)
    report["notes"] += list(backend.notes) + notes
    progress = Progress(os.environ.get("CUDNN_DOCTOR_PROGRESS"), len(cases) + (len(SMOKE_CHECKS) if found else 0))
    if found:
        report["smoke"] = _backend_smoke(backend, progress, found[1])
    run_cases(report, cases, progress, lambda case: _backend_case(backend, case, quick))
    return finish(report)


def _nhwc(x):
    return x.transpose(0, 2, 3, 1)


def _hwio(w):
    return w.transpose(2, 3, 1, 0)


def _nchw(y):
    return y.transpose(0, 3, 1, 2)


class TensorFlowBackend(Backend):
    """tf.nn.conv2d in NHWC (the only layout its CPU kernels take), tf.linalg.matmul, tf.identity copies."""

    name = "tensorflow"
    skips = (("cudnn-off", "no switch to turn cuDNN off in TensorFlow"),)

    def __init__(self):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow

        self.tf = tensorflow

    def facts(self):
        info = dict(self.tf.sysconfig.get_build_info())
        return {"version": self.tf.__version__, "cuda": _text(info.get("cuda_version")), "cudnn": _text(info.get("cudnn_version"))}

    def gpu(self):
        gpus = self.tf.config.list_physical_devices("GPU")
        if not gpus:
            return None
        details = self.tf.config.experimental.get_device_details(gpus[0])
        capability = details.get("compute_capability") or (0, 0)
        return details.get("device_name") or gpus[0].name, tuple(capability) >= (8, 0)

    def _device(self, device):
        """The device's name for tf.device (a test maps "gpu" to the CPU to run the GPU cases' code)."""
        return "/GPU:0" if device == "gpu" else "/CPU:0"

    def sync(self, device, result):
        if device != "gpu":
            return
        experimental = getattr(self.tf.test, "experimental", None)
        if experimental is not None and hasattr(experimental, "sync_devices"):
            experimental.sync_devices()
        else:  # older TensorFlow: a one-element read waits for the stream
            self.tf.reshape(result, [-1])[:1].numpy()

    def _tensor(self, array, device, precision):
        dtype = getattr(self.tf, _DTYPES.get(precision, "float32"))
        with self.tf.device(self._device(device)):
            return self.tf.cast(self.tf.constant(array), dtype)

    def _precision(self, precision):
        self.tf.config.experimental.enable_tensor_float_32_execution(precision != "fp32")

    def conv(self, x, weights, device, precision, variant):
        tf = self.tf
        self._precision(precision)
        # read by the convolution each time it picks an algorithm (TensorFlow autotunes by default)
        os.environ["TF_CUDNN_USE_AUTOTUNE"] = "1" if variant == "autotune" else "0"
        inputs = self._tensor(_nhwc(x), device, precision)
        kernels = [self._tensor(_hwio(w), device, precision) for w in weights]
        name = self._device(device)

        def fn():
            with tf.device(name):
                out = inputs
                for kernel in kernels:
                    out = tf.nn.conv2d(out, kernel, strides=1, padding="SAME", data_format="NHWC")
                return out

        return fn, lambda out: _nchw(tf.cast(out, tf.float32).numpy())

    def matmul(self, a, b, device, precision):
        tf = self.tf
        self._precision(precision)
        left, right = self._tensor(a, device, precision), self._tensor(b, device, precision)
        name = self._device(device)

        def fn():
            with tf.device(name):
                return tf.linalg.matmul(left, right)

        return fn, lambda out: tf.cast(out, tf.float32).numpy()

    def copy(self, variant, size):
        tf = self.tf
        if variant != "pageable":
            raise CaseUnsupported("TensorFlow gives no pinned host buffer to copy from or to")
        import numpy

        with tf.device(self._device("cpu")):
            host = tf.constant(numpy.zeros(size, dtype=numpy.uint8))

        def to_device():
            with tf.device(self._device("gpu")):
                return tf.identity(host)

        return to_device, "%d MiB host->device, pageable" % (size >> 20)

    def memory(self, size):
        tf = self.tf
        with tf.device(self._device("gpu")):
            source = tf.zeros([size // 4], dtype=tf.float32)

        def negate():  # an identity on one device may forward the buffer; a negation reads and writes it
            with tf.device(self._device("gpu")):
                return tf.negative(source)

        return negate, "%d MiB device->device (negation)" % (size >> 20), 2.0 * size


JAX_PRECISION = {"fp32": "float32", "tf32": "tensorfloat32"}  # jax.default_matmul_precision names


class JaxBackend(Backend):
    """jax.lax.conv_general_dilated in NHWC/HWIO, jnp.matmul, jitted; jax.device_put copies."""

    name = "jax"
    skips = (
        ("cudnn-off", "no switch to turn cuDNN off in JAX"),
        ("autotune", "no run-time switch for cuDNN autotuning in JAX (XLA autotunes when it compiles)"),
    )

    def __init__(self):
        import jax
        import jax.numpy as jnp

        self.jax, self.jnp = jax, jnp

    def facts(self):
        import importlib.metadata as metadata

        facts = {"version": self.jax.__version__, "cuda": None, "cudnn": None}
        try:
            import jaxlib

            facts["jaxlib"] = getattr(jaxlib, "__version__", None) or metadata.version("jaxlib")
        except Exception:
            facts["jaxlib"] = None
        plugins = sorted(
            "%s %s" % (d.metadata["Name"], d.version)
            for d in metadata.distributions()
            if (d.metadata["Name"] or "").lower().startswith(("jax-cuda", "jax_cuda"))
        )
        facts["cuda_plugin"] = ", ".join(plugins) or None
        try:  # the CUDA plugin's runtime and cuDNN, as jax reports them
            from jax._src.lib import cuda_versions

            if cuda_versions is not None:
                facts["cuda"] = _cuda_text(cuda_versions.cuda_runtime_get_version())
                facts["cudnn"] = _cudnn_text(cuda_versions.cudnn_get_version())
        except Exception:
            pass
        return facts

    def _device(self, device):
        """The jax device (a test maps "gpu" to the CPU to run the GPU cases' code)."""
        return self.jax.devices("gpu" if device == "gpu" else "cpu")[0]

    def gpu(self):
        try:
            found = self.jax.devices("gpu")
        except RuntimeError:  # no GPU backend: jax says "Unknown backend"
            return None
        if not found:
            return None
        capability = str(getattr(found[0], "compute_capability", "0") or "0")
        return found[0].device_kind, float(capability) >= 8.0

    def sync(self, device, result):
        result.block_until_ready()  # JAX dispatches asynchronously on the CPU too

    def _put(self, array, device, precision):
        import numpy

        dtype = {"fp16": numpy.float16, "bf16": self.jnp.bfloat16}.get(precision, numpy.float32)
        return self.jax.device_put(array.astype(dtype), self._device(device))

    def _precise(self, fn, precision):
        """fn run (and traced) under jax.default_matmul_precision, which also rules convolutions."""
        jax, name = self.jax, JAX_PRECISION.get(precision)
        if name is None:
            return fn

        def run(*args):
            with jax.default_matmul_precision(name):
                return fn(*args)

        return run

    def conv(self, x, weights, device, precision, variant):
        jax = self.jax
        inputs = self._put(_nhwc(x), device, precision)
        kernels = [self._put(_hwio(w), device, precision) for w in weights]

        def chain(out, *kernels):
            for kernel in kernels:
                out = jax.lax.conv_general_dilated(out, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
            return out

        run = self._precise(jax.jit(chain), precision)
        import numpy

        return lambda: run(inputs, *kernels), lambda out: _nchw(numpy.asarray(out, dtype=numpy.float32))

    def matmul(self, a, b, device, precision):
        left, right = self._put(a, device, precision), self._put(b, device, precision)
        run = self._precise(self.jax.jit(self.jnp.matmul), precision)
        import numpy

        return lambda: run(left, right), lambda out: numpy.asarray(out, dtype=numpy.float32)

    def _memory_kind(self, kind):
        try:
            from jax.sharding import SingleDeviceSharding

            return SingleDeviceSharding(self._device("gpu"), memory_kind=kind)
        except Exception as error:
            raise CaseUnsupported("this JAX has no %s memory (%s)" % (kind, error)) from None

    def copy(self, variant, size):
        import numpy

        jax = self.jax
        host = numpy.zeros(size, dtype=numpy.uint8)
        if variant == "pageable":
            gpu = self._device("gpu")
            return lambda: jax.device_put(host, gpu), "%d MiB host->device, pageable" % (size >> 20)
        pinned, device_memory = self._memory_kind("pinned_host"), self._memory_kind("device")
        try:
            staged = jax.device_put(host, pinned)
            on_device = jax.device_put(staged, device_memory)
        except Exception as error:
            raise CaseUnsupported("JAX cannot place arrays in pinned host memory here (%s)" % str(error)[:120]) from None
        if variant == "pinned-d2h":
            return lambda: jax.device_put(on_device, pinned), "%d MiB device->host, pinned" % (size >> 20)
        return lambda: jax.device_put(staged, device_memory), "%d MiB host->device, pinned" % (size >> 20)

    def memory(self, size):
        jax = self.jax
        source = jax.device_put(self.jnp.zeros(size // 4, dtype=self.jnp.float32), self._device("gpu"))
        negate = jax.jit(lambda v: -v)  # a copy may be elided by XLA; a negation reads and writes every byte
        return lambda: negate(source), "%d MiB device->device (negation)" % (size >> 20), 2.0 * size


def _paddle_flag(paddle, name, value):
    """Set a paddle flag; False where this build does not have it (CPU builds lack the CUDA ones)."""
    try:
        paddle.set_flags({name: value})
        return True
    except Exception:
        return False


class PaddleBackend(Backend):
    """paddle.nn.functional.conv2d in NCHW, paddle.matmul, Tensor.cuda()/pin_memory() copies."""

    name = "paddle"

    def __init__(self):
        import paddle

        self.paddle = paddle
        paddle.disable_static()

    def facts(self):
        version = self.paddle.version
        return {"version": self.paddle.__version__, "cuda": _text(version.cuda()), "cudnn": _text(version.cudnn())}

    def gpu(self):
        paddle = self.paddle
        if not paddle.is_compiled_with_cuda() or paddle.device.cuda.device_count() < 1:
            return None
        capability = tuple(paddle.device.cuda.get_device_capability(0))
        return paddle.device.cuda.get_device_name(0), capability >= (8, 0)

    def _place(self, device):
        return self.paddle.CUDAPlace(0) if device == "gpu" else self.paddle.CPUPlace()

    def sync(self, device, result):
        if device == "gpu":
            self.paddle.device.synchronize()

    def _tensor(self, array, device, precision):
        tensor = self.paddle.to_tensor(array, place=self._place(device))
        return tensor.astype(_DTYPES.get(precision, "float32")) if precision in ("fp16", "bf16") else tensor

    def _precision(self, device, precision, switch):
        """TF32 as torch has it: matrix products only in the tf32 cases, convolutions in all but fp32. PaddlePaddle
        allows TF32 in cuBLAS by default; core.set_cublas_switch / set_cudnn_switch turn it on and off."""
        if device != "gpu":
            return
        core = getattr(getattr(self.paddle, "base", None), "core", None) or getattr(getattr(self.paddle, "fluid", None), "core", None)
        setter = getattr(core, "set_%s_switch" % switch, None)
        if setter is None:
            if precision == "tf32":
                raise CaseUnsupported("this PaddlePaddle has no core.set_%s_switch to allow TF32" % switch)
            return
        setter(precision == "tf32" if switch == "cublas" else precision != "fp32")

    def conv(self, x, weights, device, precision, variant):
        paddle = self.paddle
        self._precision(device, precision, "cudnn")
        if device == "gpu":
            if not _paddle_flag(paddle, "FLAGS_conv2d_disable_cudnn", variant == "cudnn-off") and variant == "cudnn-off":
                raise CaseUnsupported("this PaddlePaddle has no FLAGS_conv2d_disable_cudnn")
            _paddle_flag(paddle, "FLAGS_cudnn_exhaustive_search", variant == "autotune")
        inputs = self._tensor(x, device, precision)
        kernels = [self._tensor(w, device, precision) for w in weights]
        conv2d = paddle.nn.functional.conv2d

        def fn():
            out = inputs
            for kernel in kernels:
                out = conv2d(out, kernel, padding=1, data_format="NCHW")
            return out

        return fn, lambda out: out.astype("float32").numpy()

    def matmul(self, a, b, device, precision):
        self._precision(device, precision, "cublas")
        left, right = self._tensor(a, device, precision), self._tensor(b, device, precision)
        return (lambda: self.paddle.matmul(left, right)), (lambda out: out.astype("float32").numpy())

    def copy(self, variant, size):
        import numpy

        paddle = self.paddle
        host = numpy.zeros(size, dtype=numpy.uint8)
        if variant == "pageable":
            source = paddle.to_tensor(host, place=paddle.CPUPlace())
            return (lambda: source.cuda()), "%d MiB host->device, pageable" % (size >> 20)
        if variant == "pinned-d2h":
            source = paddle.to_tensor(host, place=paddle.CUDAPlace(0))
            return (lambda: source.pin_memory()), "%d MiB device->host, pinned" % (size >> 20)
        source = paddle.to_tensor(host, place=paddle.CUDAPinnedPlace())
        return (lambda: source.cuda()), "%d MiB host->device, pinned" % (size >> 20)

    def memory(self, size):
        source = self.paddle.zeros([size], dtype="uint8").cuda()
        return (lambda: source.clone()), "%d MiB device->device" % (size >> 20), 2.0 * size


class OnnxRuntimeBackend(Backend):
    """Conv and MatMul models built with the `onnx` package, run by the CUDA provider (with I/O bound on the
    GPU, so only the kernels are timed) or the CPU provider; OrtValue copies."""

    name = "onnxruntime"
    skips = (("cudnn-off", "no switch to turn cuDNN off in ONNX Runtime's CUDA provider"),)
    CUDA = "CUDAExecutionProvider"

    def __init__(self):
        import onnxruntime

        self.ort, self.notes = onnxruntime, []
        try:
            import onnx
            from onnx import helper, numpy_helper
        except ImportError:
            raise Unsupported("verify builds its ONNX Runtime models with the `onnx` package: pip install onnx in this environment") from None
        self.onnx, self.helper, self.numpy_helper = onnx, helper, numpy_helper

    def facts(self):
        facts = {"version": self.ort.__version__, "cuda": _text(getattr(self.ort, "cuda_version", None)), "cudnn": None}
        try:
            from onnxruntime.capi import build_and_package_info as build

            facts["cuda"] = facts["cuda"] or _text(getattr(build, "cuda_version", None))
            facts["cudnn"] = _text(getattr(build, "cudnn_version", None))
        except ImportError:
            pass
        facts["providers"] = list(self.ort.get_available_providers())
        return facts

    def gpu(self):
        """The CUDA provider runs a small product, or there is no GPU for ONNX Runtime. It names no GPU (NVML, in
        the doctor, does) and says nothing of bf16 (left out anyway: numpy has no bfloat16 to feed it)."""
        if self.CUDA not in self.ort.get_available_providers():
            return None
        try:
            fn, _ = self.matmul(_random((8, 8)), _random((8, 8), 1), "gpu", "fp32")
            fn()
        except CaseUnsupported:  # installed, but its CUDA or cuDNN libraries did not load: ONNX Runtime fell back
            self.notes.append("the CUDA provider is installed but did not load (ONNX Runtime fell back to the CPU)")
            return None
        return None, None

    def _model(self, nodes, inputs, output, initializers):
        graph = self.helper.make_graph(nodes, "verify", inputs, [output], initializer=initializers)
        model = self.helper.make_model(graph, opset_imports=[self.helper.make_opsetid("", 17)])
        model.ir_version = 8  # readable by ONNX Runtime 1.14 and later
        return model.SerializeToString()

    def _session(self, model, device, precision, variant):
        options = self.ort.SessionOptions()
        options.log_severity_level = 3
        if device == "cpu":
            return self.ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        cuda = {"use_tf32": "1" if precision == "tf32" else "0", "cudnn_conv_algo_search": "EXHAUSTIVE" if variant == "autotune" else "DEFAULT"}
        session = self.ort.InferenceSession(model, options, providers=[(self.CUDA, cuda), "CPUExecutionProvider"])
        if session.get_providers()[0] != self.CUDA:
            raise CaseUnsupported("the CUDA provider did not load")
        return session

    def _run(self, session, feeds, device):
        """fn and fetch: on the GPU the inputs are copied there once and the output stays there (I/O binding)."""
        if device == "cpu":
            return (lambda: session.run(None, feeds)[0]), (lambda out: out.astype("float32"))
        binding = session.io_binding()
        for name, array in feeds.items():
            binding.bind_ortvalue_input(name, self.ort.OrtValue.ortvalue_from_numpy(array, "cuda", 0))
        binding.bind_output(session.get_outputs()[0].name, "cuda")

        def fn():
            session.run_with_iobinding(binding)
            return binding

        return fn, lambda bound: bound.copy_outputs_to_cpu()[0].astype("float32")

    def _dtype(self, precision):
        import numpy

        if precision == "bf16":
            raise CaseUnsupported("numpy has no bfloat16 to feed ONNX Runtime")
        if precision == "fp16":
            return numpy.float16, self.onnx.TensorProto.FLOAT16
        return numpy.float32, self.onnx.TensorProto.FLOAT

    def conv(self, x, weights, device, precision, variant):
        helper = self.helper
        dtype, element = self._dtype(precision)
        nodes, initializers, previous = [], [], "x"
        for index, w in enumerate(weights):
            initializers.append(self.numpy_helper.from_array(w.astype(dtype), "w%d" % index))
            out = "y" if index == len(weights) - 1 else "h%d" % index
            nodes.append(helper.make_node("Conv", [previous, "w%d" % index], [out], pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
            previous = out
        model = self._model(
            nodes,
            [helper.make_tensor_value_info("x", element, list(x.shape))],
            helper.make_tensor_value_info("y", element, None),
            initializers,
        )
        session = self._session(model, device, precision, variant)
        return self._run(session, {"x": x.astype(dtype)}, device)

    def matmul(self, a, b, device, precision):
        helper = self.helper
        dtype, element = self._dtype(precision)
        model = self._model(
            [helper.make_node("MatMul", ["a", "b"], ["y"])],
            [helper.make_tensor_value_info("a", element, list(a.shape)), helper.make_tensor_value_info("b", element, list(b.shape))],
            helper.make_tensor_value_info("y", element, None),
            [],
        )
        session = self._session(model, device, precision, None)
        return self._run(session, {"a": a.astype(dtype), "b": b.astype(dtype)}, device)

    def copy(self, variant, size):
        import numpy

        host = numpy.zeros(size, dtype=numpy.uint8)
        if variant == "pageable":
            return (lambda: self.ort.OrtValue.ortvalue_from_numpy(host, "cuda", 0)), "%d MiB host->device, pageable" % (size >> 20)
        raise CaseUnsupported("ONNX Runtime's Python API gives no pinned host buffer to copy from or to")

    def memory(self, size):
        raise CaseUnsupported("ONNX Runtime's Python API has no device->device copy")


class Unsupported(Exception):
    """verify cannot run this framework here (a missing helper package): status "unsupported" with the reason."""


def _text(value):
    """A version the framework gives as a string, number or False/"False" (CPU builds) -> a string or None."""
    if value in (None, False, "", "False", "None"):
        return None
    return str(value)


def _cuda_text(number):
    """12040 -> 12.4 (cudaRuntimeGetVersion packs major*1000 + minor*10)."""
    if not number:
        return None
    return "%d.%d" % (number // 1000, number % 1000 // 10)


def tensorflow_run(config):
    return backend_run(config, TensorFlowBackend, "tensorflow")


def jax_run(config):
    return backend_run(config, JaxBackend, "jax")


def paddle_run(config):
    return backend_run(config, PaddleBackend, "paddle")


def onnxruntime_run(config):
    return backend_run(config, OnnxRuntimeBackend, "onnxruntime")


# torch ----------------------------------------------------------------------------------------------


def torch_run(config):
    began = time.perf_counter()
    import torch

    report = new_report("torch", began)
    report.update({"version": torch.__version__, "cuda": torch.version.cuda})
    try:
        report["cudnn"] = _cudnn_text(torch.backends.cudnn.version())
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
    dtypes = {"fp32": None, "fp16": torch.float16, "tf32": None, "bf16": torch.bfloat16}
    for name, precision in SMOKE_CHECKS:
        dtype = dtypes[precision]
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


_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _torch_case(torch, case, quick):
    """(runs, shape text, flops, bytes) of one case."""
    _, kind, device, precision, variant, size = case
    on = "cuda" if device == "gpu" else "cpu"
    dtype = getattr(torch, _DTYPES.get(precision, "float32"))
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


RUNNERS = {"torch": torch_run, "tensorflow": tensorflow_run, "jax": jax_run, "paddle": paddle_run, "onnxruntime": onnxruntime_run}


def main(argv):
    config = json.loads(argv[1]) if len(argv) > 1 else {"framework": "torch"}
    name = config.get("framework", "torch")
    try:
        runner = RUNNERS.get(name)
        if runner is None:
            report = {"framework": name, "status": "unsupported", "message": "verify has no benchmarks for %s yet" % name}
        else:
            report = runner(config)
    except Unsupported as reason:
        report = {"framework": name, "status": "unsupported", "message": str(reason)}
    except ImportError as error:
        report = {"framework": name, "status": "not-installed", "message": "%s: %s" % (type(error).__name__, error)}
    except Exception as error:  # the framework failed mid-run: report it, the doctor explains
        report = {"framework": name, "status": "error", "message": "%s: %s" % (type(error).__name__, str(error)[:500])}
    sys.stdout.write("\n" + MARKER + "\n" + json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv)
