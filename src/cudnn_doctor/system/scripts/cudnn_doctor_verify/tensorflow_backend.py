"""TensorFlow's backend."""

import os

from .arrays import Backend, backend_run, hwio, nchw, nhwc
from .common import DTYPES, CaseUnsupported, version_text


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
        return {
            "version": self.tf.__version__,
            "cuda": version_text(info.get("cuda_version")),
            "cudnn": version_text(info.get("cudnn_version")),
        }

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
        dtype = getattr(self.tf, DTYPES.get(precision, "float32"))
        with self.tf.device(self._device(device)):
            return self.tf.cast(self.tf.constant(array), dtype)

    def _precision(self, precision):
        self.tf.config.experimental.enable_tensor_float_32_execution(precision != "fp32")

    def conv(self, x, weights, device, precision, variant):
        tf = self.tf
        self._precision(precision)
        # read by the convolution each time it picks an algorithm (TensorFlow autotunes by default)
        os.environ["TF_CUDNN_USE_AUTOTUNE"] = "1" if variant == "autotune" else "0"
        inputs = self._tensor(nhwc(x), device, precision)
        kernels = [self._tensor(hwio(w), device, precision) for w in weights]
        name = self._device(device)

        def fn():
            with tf.device(name):
                out = inputs
                for kernel in kernels:
                    out = tf.nn.conv2d(out, kernel, strides=1, padding="SAME", data_format="NHWC")
                return out

        return fn, lambda out: nchw(tf.cast(out, tf.float32).numpy())

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


def run(config):
    return backend_run(config, TensorFlowBackend, "tensorflow")
