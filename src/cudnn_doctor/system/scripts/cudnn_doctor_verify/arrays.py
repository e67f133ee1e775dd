"""The runner of the frameworks that take numpy arrays (TensorFlow, JAX, PaddlePaddle, ONNX Runtime): a `Backend` gives
the ops, `backend_run` runs the smoke checks and the cases on it, the same inputs for each framework."""

import os
import time

from .common import (
    SMOKE_CHECKS,
    CaseUnsupported,
    Progress,
    conv_spec,
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


class Backend:
    """One framework's ops for the shared runner. `conv` and `matmul` take numpy fp32 inputs (NCHW, OIHW) and
    return (fn, fetch): fn() runs the op on prepared device data and returns its result, fetch(result) gives it
    back as a numpy fp32 array in NCHW, so every framework's result is compared in one layout."""

    name = "?"
    # (variant, why the framework cannot run it); a type comment, as this runs on any Python
    skips = ()  # type: tuple[tuple[str, str], ...]
    notes = ()  # what the framework said while being probed (a list per instance where used)

    def facts(self):
        """version, cuda, cudnn and anything else the framework says about its build."""
        raise NotImplementedError

    def gpu(self):
        """(device name, bf16 supported or None when not known) of the first GPU the framework sees, None without
        one."""
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


def max_relative_error(result, reference):
    """max |result - reference| / max(1, max |reference|) of two numpy arrays, in fp32."""
    import numpy

    result = numpy.asarray(result, dtype=numpy.float32)
    reference = numpy.asarray(reference, dtype=numpy.float32)
    difference = float(numpy.max(numpy.abs(result - reference)))
    return difference / max(1.0, float(numpy.max(numpy.abs(reference))))


def random_array(shape, seed=0):
    """Normal fp32 data, the same for the same seed (so every framework computes on the same numbers)."""
    import numpy

    return numpy.random.default_rng(seed).standard_normal(shape, dtype=numpy.float32)


def scaled_weights(shape):
    """OIHW weights scaled by 1/sqrt(fan-in), so that activations stay near 1 through the layers (no fp16 overflow)."""
    fan_in = shape[1] * shape[2] * shape[3]
    return random_array(shape, seed=1 + shape[0]) / float(fan_in) ** 0.5


def _backend_case(backend, case, quick):
    """(runs, shape, flops, bytes) of one case on a numpy-array framework."""
    _, kind, device, precision, variant, size = case
    warmup, repeat = repeats(device, variant, quick)
    sync = lambda result: backend.sync(device, result)  # noqa: E731
    if kind == "conv":
        x_shape, w_shapes, shape, flops = conv_spec(size)
        fn, _ = backend.conv(random_array(x_shape), [scaled_weights(w) for w in w_shapes], device, precision, variant)
        return time_runs(fn, sync, warmup, repeat), shape, flops, None
    if kind == "matmul":
        fn, _ = backend.matmul(
            random_array((size, size)), random_array((size, size), 1) / float(size) ** 0.5, device, precision
        )
        return time_runs(fn, sync, warmup, repeat), "%dx%d @ %dx%d" % (size, size, size, size), matmul_flops(size), None
    if kind == "copy":
        fn, shape = backend.copy(variant, size)
        return time_runs(fn, sync, 2, repeat), shape, None, float(size)
    fn, shape, nbytes = backend.memory(size)
    return time_runs(fn, sync, warmup, repeat), shape, None, nbytes


def _backend_smoke(backend, progress, bf16):
    """The smoke checks on the GPU against the framework's own CPU fp32 result."""
    x, w = random_array((2, 16, 64, 64), 2), random_array((32, 16, 3, 3), 3) / 12.0
    a, b = random_array((512, 512), 4), random_array((512, 512), 5) / 22.0

    def compute(name, device, precision):
        fn, fetch = (
            backend.conv(x, [w], device, precision, None)
            if name == "conv2d"
            else backend.matmul(a, b, device, precision)
        )
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

    return {
        "x": grid((1, 3, 5, 6), 7, 11),
        "weights": [grid((4, 3, 3, 3), 5, 7), grid((2, 4, 3, 3), 3, 5)],
        "a": grid((3, 4), 3, 7),
        "b": grid((4, 5), 5, 9),
    }


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
        "inputs": {
            "x": inputs["x"].tolist(),
            "weights": [w.tolist() for w in inputs["weights"]],
            "a": inputs["a"].tolist(),
            "b": inputs["b"].tolist(),
        },
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


def nhwc(x):
    return x.transpose(0, 2, 3, 1)


def hwio(w):
    return w.transpose(2, 3, 1, 0)


def nchw(y):
    return y.transpose(0, 3, 1, 2)
