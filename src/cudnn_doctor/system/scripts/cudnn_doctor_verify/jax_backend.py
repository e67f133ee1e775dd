"""JAX's backend."""

from .arrays import Backend, backend_run, hwio, nchw, nhwc
from .common import CaseUnsupported, cuda_text, cudnn_text

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
                facts["cuda"] = cuda_text(cuda_versions.cuda_runtime_get_version())
                facts["cudnn"] = cudnn_text(cuda_versions.cudnn_get_version())
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
        inputs = self._put(nhwc(x), device, precision)
        kernels = [self._put(hwio(w), device, precision) for w in weights]

        def chain(out, *kernels):
            for kernel in kernels:
                out = jax.lax.conv_general_dilated(
                    out, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
                )
            return out

        run = self._precise(jax.jit(chain), precision)
        import numpy

        return lambda: run(inputs, *kernels), lambda out: nchw(numpy.asarray(out, dtype=numpy.float32))

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
            raise CaseUnsupported(
                "JAX cannot place arrays in pinned host memory here (%s)" % str(error)[:120]
            ) from None
        if variant == "pinned-d2h":
            return lambda: jax.device_put(on_device, pinned), "%d MiB device->host, pinned" % (size >> 20)
        return lambda: jax.device_put(staged, device_memory), "%d MiB host->device, pinned" % (size >> 20)

    def memory(self, size):
        jax = self.jax
        source = jax.device_put(self.jnp.zeros(size // 4, dtype=self.jnp.float32), self._device("gpu"))
        negate = jax.jit(lambda v: -v)  # a copy may be elided by XLA; a negation reads and writes every byte
        return lambda: negate(source), "%d MiB device->device (negation)" % (size >> 20), 2.0 * size


def run(config):
    return backend_run(config, JaxBackend, "jax")
