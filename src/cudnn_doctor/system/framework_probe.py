"""Run inside a *target* interpreter: import one framework and print what it reports.

This file is executed as source text (`python -c`), never imported by the doctor, so it
must stand alone and work on every Python the frameworks ever supported. It prints one
JSON object after a marker line; anything the framework prints to stdout stays above it,
and its stderr (TensorFlow's dso_loader lines, cuDNN errors) is read by the caller as `log`.
"""

import json
import sys
import warnings

MARKER = "@@cudnn-doctor-report@@"


def _torch(report):
    import torch

    report["version"] = torch.__version__
    report["cuda"] = torch.version.cuda
    try:
        report["cudnn"] = torch.backends.cudnn.version()
    except Exception as error:  # a broken cuDNN raises here
        report["error"] = "%s: %s" % (type(error).__name__, error)
    report["cuda_available"] = bool(torch.cuda.is_available())
    report["device_count"] = int(torch.cuda.device_count()) if report["cuda_available"] else 0
    report["arch_list"] = list(torch.cuda.get_arch_list()) if report["cuda_available"] else []


def _tensorflow(report):
    import tensorflow as tf

    report["version"] = tf.__version__
    report["built_with_cuda"] = bool(tf.test.is_built_with_cuda())
    info = getattr(getattr(tf, "sysconfig", None), "get_build_info", None)
    if info is not None:
        report["build_info"] = {k: v for k, v in info().items() if isinstance(v, (str, bool, int))}
    report["gpus"] = [d.name for d in tf.config.list_physical_devices("GPU")]


def _paddle(report):
    import paddle

    report["version"] = paddle.__version__
    report["compiled_with_cuda"] = bool(paddle.device.is_compiled_with_cuda())
    report["cuda"] = paddle.version.cuda()
    report["cudnn_version"] = paddle.version.cudnn()
    report["gpu_count"] = int(paddle.device.cuda.device_count()) if report["compiled_with_cuda"] else 0


def _jax(report):
    import jax

    report["version"] = jax.__version__
    report["devices"] = [str(d) for d in jax.devices()]


def _onnxruntime(report):
    import onnxruntime

    report["version"] = onnxruntime.__version__
    report["providers"] = list(onnxruntime.get_available_providers())


def _cupy(report):
    import cupy

    report["version"] = cupy.__version__
    runtime = cupy.cuda.runtime
    report["cuda"] = runtime.runtimeGetVersion()  # 12040: the CUDA runtime CuPy loaded
    report["is_hip"] = bool(getattr(runtime, "is_hip", False))
    try:
        report["device_count"] = int(runtime.getDeviceCount())
    except Exception as error:  # no driver, or a driver too old for this runtime
        report["device_count"] = 0
        report["error"] = "%s: %s" % (type(error).__name__, error)
    report["cuda_available"] = report["device_count"] > 0
    try:  # optional in CuPy <= 13, removed in 14: cuDNN's absence only disables cupyx's DNN functions
        from cupy_backends.cuda.libs import cudnn

        report["cudnn"] = int(cudnn.getVersion())
    except Exception as error:
        report["cudnn_error"] = "%s: %s" % (type(error).__name__, error)


PROBES = {"torch": _torch, "tensorflow": _tensorflow, "paddle": _paddle, "jax": _jax, "onnxruntime": _onnxruntime, "cupy": _cupy}


def main(name):
    report = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            PROBES[name](report)
        except ImportError as error:
            if "version" not in report:
                report["import_error"] = "%s: %s" % (type(error).__name__, error)
            else:
                report["error"] = "%s: %s" % (type(error).__name__, error)
        except BaseException as error:  # the report must survive any failure of the framework
            key = "error" if "version" in report else "import_error"
            report[key] = "%s: %s" % (type(error).__name__, error)
    messages = ["%s: %s" % (w.category.__name__, w.message) for w in caught]
    if messages:
        report["warning"] = "\n".join(messages)
    sys.stdout.write("\n" + MARKER + json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
