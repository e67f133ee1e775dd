"""ONNX Runtime's backend (its models built with the `onnx` package)."""

from .arrays import Backend, backend_run, random_array
from .common import CaseUnsupported, Unsupported, version_text


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
            raise Unsupported(
                "verify builds its ONNX Runtime models with the `onnx` package: pip install onnx in this environment"
            ) from None
        self.onnx, self.helper, self.numpy_helper = onnx, helper, numpy_helper

    def facts(self):
        facts = {
            "version": self.ort.__version__,
            "cuda": version_text(getattr(self.ort, "cuda_version", None)),
            "cudnn": None,
        }
        try:
            from onnxruntime.capi import build_and_package_info as build

            facts["cuda"] = facts["cuda"] or version_text(getattr(build, "cuda_version", None))
            facts["cudnn"] = version_text(getattr(build, "cudnn_version", None))
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
            fn, _ = self.matmul(random_array((8, 8)), random_array((8, 8), 1), "gpu", "fp32")
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
        cuda = {
            "use_tf32": "1" if precision == "tf32" else "0",
            "cudnn_conv_algo_search": "EXHAUSTIVE" if variant == "autotune" else "DEFAULT",
        }
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
            nodes.append(
                helper.make_node("Conv", [previous, "w%d" % index], [out], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
            )
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
            [
                helper.make_tensor_value_info("a", element, list(a.shape)),
                helper.make_tensor_value_info("b", element, list(b.shape)),
            ],
            helper.make_tensor_value_info("y", element, None),
            [],
        )
        session = self._session(model, device, precision, None)
        return self._run(session, {"a": a.astype(dtype), "b": b.astype(dtype)}, device)

    def copy(self, variant, size):
        import numpy

        host = numpy.zeros(size, dtype=numpy.uint8)
        if variant == "pageable":
            return (lambda: self.ort.OrtValue.ortvalue_from_numpy(host, "cuda", 0)), "%d MiB host->device, pageable" % (
                size >> 20
            )
        raise CaseUnsupported("ONNX Runtime's Python API gives no pinned host buffer to copy from or to")

    def memory(self, size):
        raise CaseUnsupported("ONNX Runtime's Python API has no device->device copy")


def run(config):
    return backend_run(config, OnnxRuntimeBackend, "onnxruntime")
