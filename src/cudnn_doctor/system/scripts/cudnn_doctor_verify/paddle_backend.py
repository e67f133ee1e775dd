"""PaddlePaddle's backend."""

from .arrays import Backend, backend_run
from .common import DTYPES, CaseUnsupported, version_text


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
        return {
            "version": self.paddle.__version__,
            "cuda": version_text(version.cuda()),
            "cudnn": version_text(version.cudnn()),
        }

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
        return tensor.astype(DTYPES.get(precision, "float32")) if precision in ("fp16", "bf16") else tensor

    def _precision(self, device, precision, switch):
        """TF32 as torch has it: matrix products only in the tf32 cases, convolutions in all but fp32. PaddlePaddle
        allows TF32 in cuBLAS by default; core.set_cublas_switch / set_cudnn_switch turn it on and off."""
        if device != "gpu":
            return
        core = getattr(getattr(self.paddle, "base", None), "core", None) or getattr(
            getattr(self.paddle, "fluid", None), "core", None
        )
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
            if (
                not _paddle_flag(paddle, "FLAGS_conv2d_disable_cudnn", variant == "cudnn-off")
                and variant == "cudnn-off"
            ):
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


def run(config):
    return backend_run(config, PaddleBackend, "paddle")
