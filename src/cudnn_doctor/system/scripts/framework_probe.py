"""Run inside a *target* interpreter: import one framework and print what it reports.

This file is executed as source text (`python -c`), never imported by the doctor, so it
must stand alone and work on every Python the frameworks ever supported. It prints one
dict as a Python literal (`repr`, read back with `ast.literal_eval`) after a marker line;
anything the framework prints to stdout stays above it, and its stderr (TensorFlow's
dso_loader lines, cuDNN errors) is read by the caller as `log`. Beyond the framework it imports
only os, sys and warnings (and select and time to wait for the fork below): `import json` (re,
enum, functools) was a noticeable part of a child, paid once per environment, where a light
framework never loads it.

Where the OS can fork, it also answers the loader check (map_probe.py, whose source comes as the
second argument, with the library names after it) in one process instead of two: a copy forked
before the framework is imported is still a fresh interpreter, so what it maps for those names is
what a separate child would map, and the import does not see those loads. The fork's answer, a
literal as well, travels as text in the report under `MAPPED`: the caller reads it.
"""

import os
import sys
import warnings

MARKER = "@@cudnn-doctor-report@@"
MAPPED = "_mapped"
MAP_WAIT = 30.0  # seconds the fork may take after the import ended; a hung load must not hold the report


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


PROBES = {
    "torch": _torch,
    "tensorflow": _tensorflow,
    "paddle": _paddle,
    "jax": _jax,
    "onnxruntime": _onnxruntime,
    "cupy": _cupy,
}


def _fork_map(map_source, names):
    """Start the loader check in a forked copy of this interpreter; (pid, pipe) or None where there is no fork."""
    if not names or not hasattr(os, "fork"):
        return None
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid == 0:  # the copy: load, write the answer, and leave without running anything of the parent's
        code = 1
        try:
            os.close(read)
            quiet = os.open(
                os.devnull, os.O_WRONLY
            )  # what a loaded library prints must not reach the report or its log
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            scope = {"__name__": "cudnn_doctor_map_probe"}
            exec(map_source, scope)
            data = repr(scope["report"](list(names))).encode("utf-8")
            while data:
                data = data[os.write(write, data) :]
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return pid, read


def _map_answer(pending):
    """The text the fork wrote; None when it wrote nothing or took more than MAP_WAIT (then it is killed)."""
    import select  # no `import signal`: its enum import would be most of what the loader check costs here
    import time

    pid, read = pending
    chunks, deadline = [], time.time() + MAP_WAIT
    try:
        while True:
            ready = select.select([read], [], [], max(deadline - time.time(), 0))[0]
            if not ready:
                os.kill(pid, 9)  # SIGKILL, 9 on every POSIX system (only they fork)
                chunks = None
                break
            chunk = os.read(read, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    return b"".join(chunks).decode("utf-8", "replace") if chunks else None


def main(name, map_source=None, names=()):
    pending = _fork_map(map_source, names) if map_source else None
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
    if pending is not None:
        mapped = _map_answer(pending)
        if mapped is not None:
            report[MAPPED] = mapped
    sys.stdout.write("\n" + MARKER + repr(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None, sys.argv[3:])
