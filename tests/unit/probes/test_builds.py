"""Framework builds are typed once, in the probes: versions with how they are known, load failures
parsed from every framework's log format, and checks that never read a report or parse text."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cudnn_doctor.facts import DIST_VERSION, KNOWLEDGE, LIVE, PythonEnv
from cudnn_doctor.probes.builds import probe_builds
from cudnn_doctor.probes.messages import cudnn_mismatch, load_failures

CHECKS = Path(__file__).resolve().parents[3] / "src" / "cudnn_doctor" / "checks"


def build(name, packages, report=None, os_name="linux", version="3.10.11"):
    python = PythonEnv("/env/bin/python", version, "venv", True, packages, {name: report} if report is not None else {})
    (found,) = [b for b in probe_builds((python,), os_name) if b.name == name]
    return found


def test_torch_cuda_is_known_from_the_live_report_before_the_version_tag():
    live = build(
        "torch",
        {"torch": "2.1.0+cu118"},
        {"version": "2.1.0+cu121", "cuda": "12.1", "cuda_available": True, "cudnn": 8902},
    )
    assert (live.cuda.value, live.cuda.how) == ("12.1", LIVE)
    assert live.gpu_build is True and live.cuda_available is True and live.cudnn_loaded == "8.9.2"
    tagged = build("torch", {"torch": "2.1.0+cu118"})
    assert (tagged.cuda.value, tagged.cuda.how) == ("11.8", DIST_VERSION) and tagged.gpu_build is True
    assert build("torch", {"torch": "2.0.0+cpu"}).gpu_build is False
    assert build("torch", {"torch": "2.3.1"}).gpu_build is None  # a plain PyPI version says nothing


def test_tensorflow_tables_fill_only_what_the_build_does_not_say():
    table = build("tensorflow", {"tensorflow": "2.10.0"}, os_name="windows")
    assert (table.cuda.value, table.cuda.how) == ("11.2", KNOWLEDGE) and table.cuda.source.startswith("https://")
    assert (table.cudnn.value, table.cudnn.how) == ("8.1", KNOWLEDGE)
    live = build(
        "tensorflow",
        {"tensorflow": "2.10.0"},
        {
            "version": "2.10.0",
            "built_with_cuda": True,
            "build_info": {"cuda_version": "64_112", "cudnn_version": "64_8"},
        },
        os_name="windows",
    )
    assert live.cuda.how == LIVE and live.cuda_version.release[:2] == (11, 2)
    assert build("tensorflow", {"tensorflow-cpu": "2.10.0"}).gpu_build is False


def test_paddle_post_tag_and_onnxruntime_table():
    paddle = build("paddle", {"paddlepaddle-gpu": "2.2.0.post112"}, os_name="windows")
    assert (paddle.cuda.value, paddle.cuda.how) == ("11.2", DIST_VERSION) and paddle.cudnn.how == KNOWLEDGE
    assert paddle.system_libraries.cudart == "cudart64_110.dll" and paddle.system_libraries.cudnn == "cudnn64_8.dll"
    ort = build("onnxruntime", {"onnxruntime-gpu": "1.16.3"})
    assert (ort.cuda.value, ort.cudnn.value, ort.cuda_from) == ("11.8", "8", "system")
    assert ort.system_libraries.cudart == "libcudart.so.11.0"
    assert build("torch", {"torch": "2.1.0+cu118"}).system_libraries is None  # torch brings its own


@pytest.mark.parametrize(
    "text, expected",
    [
        # TensorFlow 2.x dso_loader, Linux: its own request, said once though two patterns match
        (
            "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; "
            "dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory",
            [("libcudart.so.11.0", None, True)],
        ),
        # TensorFlow on Windows
        (
            "Could not load dynamic library 'cudnn64_8.dll'; dlerror: cudnn64_8.dll not found",
            [("cudnn64_8.dll", None, True)],
        ),
        # ONNX Runtime: a dependency of its CUDA provider
        (
            "[E:onnxruntime:Default, provider_bridge_ort.cc:1480 TryGetProviderInfo_CUDA] Failed to load library "
            "libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open shared object file: No such file or directory",
            [("libcublasLt.so.11", "libonnxruntime_providers_cuda.so", False)],
        ),
        # an ImportError from a framework's extension module
        (
            "OSError: libcudnn.so.8: cannot open shared object file: No such file or directory",
            [("libcudnn.so.8", None, False)],
        ),
        # Python's ctypes on Windows and cuDNN 8's own loader
        ("Could not find the DLL(s) 'msvcp140_1.dll'", [("msvcp140_1.dll", None, False)]),
        (
            "Could not locate zlibwapi.dll. Please make sure it is in your library path!",
            [("zlibwapi.dll", None, False)],
        ),
        # TensorFlow 1.x on Linux and on Windows (its import-time self-check)
        (
            "W tensorflow/stream_executor/platform/default/dso_loader.cc:55] Could not dlopen library 'libcudnn.so.7'; "
            "dlerror: libcudnn.so.7: cannot open shared object file: No such file or directory",
            [("libcudnn.so.7", None, True)],
        ),
        (
            "ImportError: Could not find 'cudnn64_7.dll'. TensorFlow requires that this DLL be installed in a directory that is named in your %PATH% "
            "environment variable.",
            [("cudnn64_7.dll", None, True)],
        ),
        # PaddlePaddle's dynamic loader, with the try-list it searched
        (
            "RuntimeError: (PreconditionNotMet) The third-party dynamic library (cudnn64_8.dll) that Paddle depends on is not configured correctly. "
            "(error code is 126)",
            [("cudnn64_8.dll", None, True)],
        ),
        (
            "The third-party dynamic library (cufft64_120.dll;cufft64_12.dll;cufft64_10.dll) that Paddle depends on is not configured correctly.",
            [("cufft64_120.dll", None, True), ("cufft64_12.dll", None, True), ("cufft64_10.dll", None, True)],
        ),
        # ONNX Runtime 1.19+ on Windows: the provider and the DLL it depends on
        (
            '[ONNXRuntimeError] : 1 : FAIL : Error loading "C:\\env\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll" '
            'which depends on "cudnn64_9.dll" which is missing. (Error 126: "The specified module could not be found.")',
            [
                (
                    "cudnn64_9.dll",
                    "C:\\env\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll",
                    False,
                )
            ],
        ),
        ("all fine: Loaded cuDNN version 8902", []),
    ],
)
def test_load_failures_of_every_format(text, expected):
    assert [(f.library, f.needed_by, f.direct) for f in load_failures(text)] == expected


@pytest.mark.parametrize(
    "text, loaded, compiled",
    [
        (
            "E Loaded runtime CuDNN library: 8.1.0 but source was compiled with: 8.6.0.  CuDNN library needs to have matching major",
            "8.1.0",
            "8.6.0",
        ),
        (
            "The installed Paddle is compiled with CUDNN 8.2, but CUDNN version in your machine is 8.1, which may cause serious incompatible bug",
            "8.1",
            "8.2",
        ),
        (
            "RuntimeError: Found cuDNN version 8600, but JAX was built against version 8900, which is newer.",
            "8.6.0",
            "8.9.0",
        ),
        (
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 9, 2) but found runtime version (8, 5, 0).",
            "8.5.0",
            "8.9.2",
        ),
    ],
)
def test_cudnn_mismatch_of_every_framework(text, loaded, compiled):
    found = cudnn_mismatch(text)
    assert (found.loaded, found.compiled) == (loaded, compiled) and found.message


def test_complaints_are_typed_lines():
    torch = build(
        "torch",
        {"torch": "2.1.0+cu121"},
        {
            "version": "2.1.0+cu121",
            "cuda": "12.1",
            "cuda_available": False,
            "warning": "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040).",
        },
    )
    assert torch.driver_complaint.startswith("UserWarning: CUDA initialization") and torch.no_kernel_complaint is None
    assert torch.warning.startswith("UserWarning")


def _check_sources():
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(CHECKS.glob("*.py"))}


def test_no_check_reads_a_report_or_switches_on_a_framework_name():
    for name, source in _check_sources().items():
        assert "build.name ==" not in source and "build.name !=" not in source, name
        assert ".report" not in source and ".frameworks" not in source and ".text" not in source, name


def test_no_check_matches_a_pattern_against_framework_output():
    """Patterns in checks may read library names and paths, never what a framework printed."""
    for name, source in _check_sources().items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re":
                call_source = ast.get_source_segment(source, node) or ""
                assert call_source in ("re.compile", "re.match", "re.search", "re.fullmatch") or node.attr.isupper(), (
                    name,
                    call_source,
                )
        for literal in re.findall(r're\.compile\((r?"[^"]*")', source):
            assert not re.search(r"(?i)could not|failed|error|found|version", literal), (name, literal)


def test_where_a_build_takes_cuda_from():
    wheels = build("torch", {"torch": "2.5.1", "nvidia-cudnn-cu12": "9.1.0.70", "nvidia-cublas-cu12": "12.4.5.8"})
    assert wheels.cuda_from == "nvidia-wheels" and wheels.cuda_wheels == ("nvidia-cublas-cu12", "nvidia-cudnn-cu12")
    assert build("torch", {"torch": "2.5.1+cu124"}, os_name="windows").cuda_from == "bundled"
    assert build("tensorflow", {"tensorflow": "2.16.1"}).cuda_from == "system"
    assert (
        build(
            "tensorflow",
            {"tensorflow": "2.16.1", "nvidia-cudnn-cu12": "8.9.7.29", "nvidia-cuda-runtime-cu12": "12.3.101"},
        ).cuda_from
        == "nvidia-wheels"
    )


def test_cupy_cuda_from_its_wheel_name_and_its_report():
    assert (
        build("cupy", {"cupy-cuda12x": "13.3.0"}).cuda.value,
        build("cupy", {"cupy-cuda12x": "13.3.0"}).cuda.how,
    ) == ("12", DIST_VERSION)
    assert build("cupy", {"cupy-cuda113": "10.6.0"}).cuda.value == "11.3"
    assert build("cupy", {"cupy-cuda80": "4.5.0"}).cuda.value == "8.0"
    live = build(
        "cupy",
        {"cupy-cuda12x": "13.3.0"},
        {"version": "13.3.0", "cuda": 12040, "device_count": 1, "cuda_available": True, "cudnn": 8902},
    )
    assert (
        (live.cuda.value, live.cuda.how) == ("12.4", LIVE)
        and live.sees_gpu
        and live.cudnn_works
        and live.cudnn_loaded == "8.9.2"
    )
    # cuDNN is optional to CuPy (removed in 14): it is never asked for from the system.
    assert (
        live.cudnn is None and live.system_libraries.cudnn is None and live.system_libraries.cudart == "libcudart.so.12"
    )
    assert build("cupy", {"cupy": "13.3.0"}).gpu_build is None  # built from source: nothing says which CUDA
    assert build("cupy", {"cupy-cuda13x": "14.0.0", "nvidia-cuda-runtime": "13.0.96"}).cuda_from == "nvidia-wheels"


# Wordings of several eras, as users pasted them into public issues (each cited); the versions they state are parsed out
# as releases, whatever the framework printed (integers, tuples, dotted text).
@pytest.mark.parametrize(
    "text, loaded, compiled, minimum",
    [
        # TensorFlow 1.x integers with compatibility versions (tensorflow/tensorflow#3922, bytedeco/javacpp-presets#565)
        (
            "E tensorflow/stream_executor/cuda/cuda_dnn.cc:378] Loaded runtime CuDNN library: 7101 (compatibility version 7100) "
            "but source was compiled with 7005 (compatibility version 7000).  If using a binary install, upgrade your CuDNN library to match.",
            "7.1.1",
            "7.0.5",
            None,
        ),
        # PyTorch before 1.12, integers (VisionLearningGroup/DA_Detection#19, akanimax/T2F#6)
        (
            "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600",
            "7.6.0",
            "7.1.2",
            None,
        ),
        (
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against 7401 but linked against 7301",
            "7.3.1",
            "7.4.1",
            None,
        ),
        # PyTorch 1.12.0, tuples and "linked against" (pytorch/functorch#926)
        (
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked against (8, 0, 3)",
            "8.0.3",
            "8.3.2",
            None,
        ),
        # JAX 0.4.x, as the CUDA backend's failure (MIT-REALM/gcbfplus#1)
        (
            "CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version 8906, which is newer. "
            "The copy of cuDNN that is installed must be at least as new as the version against which JAX was built.",
            "8.6.0",
            "8.9.6",
            None,
        ),
        # JAX 0.4.26+, several lines, with the minimum it accepts (conda-forge/jax-feedstock#149)
        (
            "CUDA backend failed to initialize: Unable to use CUDA because of the following issues with CUDA components:\n"
            "Outdated cuDNN installation found.\nVersion JAX was built against: 8907\nMinimum supported: 9100\nInstalled version: 8907\n"
            "The local installation version must be no lower than 9100..(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
            "8.9.7",
            "8.9.7",
            "9.1.0",
        ),
    ],
)
def test_cudnn_mismatch_of_every_era(text, loaded, compiled, minimum):
    found = cudnn_mismatch(text)
    assert found is not None, text
    assert (found.loaded, found.compiled, found.minimum) == (loaded, compiled, minimum) and found.message


@pytest.mark.parametrize(
    "name, packages, text, parts",
    [
        # TensorFlow 2.x's summary line; since 2.16 the dso_loader lines before it are VLOG-only (tensorflow/tensorflow#60646, #66987)
        (
            "tensorflow",
            {"tensorflow": "2.16.1"},
            "W tensorflow/core/common_runtime/gpu/gpu_device.cc:2256] Cannot dlopen some GPU libraries. Please make sure the missing "
            "libraries mentioned above are installed properly if you would like to use GPU.\nSkipping registering GPU devices...",
            ["gpu"],
        ),
        # PaddlePaddle 1.x (PaddlePaddle/PaddleOCR#300) and 2.x (PaddlePaddle/Paddle#36238) dynload
        (
            "paddle",
            {"paddlepaddle-gpu": "1.7.2.post107"},
            "Error: Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion at (/paddle/paddle/fluid/platform/dynload/cudnn.cc:63)",
            ["cudnn"],
        ),
        (
            "paddle",
            {"paddlepaddle-gpu": "2.5.2.post120"},
            "RuntimeError: (PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion.\n"
            "  [Hint: cudnn_dso_handle should not be null.] (at /paddle/paddle/phi/backends/dynload/cudnn.cc:64)",
            ["cudnn"],
        ),
        # JAX: cuDNN (jax-ml/jax#20519), cuSOLVER (jax-ml/jax#18027), cuFFT and cuSOLVER in one report (conda-forge/jaxlib-feedstock#285)
        (
            "jax",
            {"jax": "0.4.25", "jaxlib": "0.4.25+cuda12.cudnn89"},
            "CUDA backend failed to initialize: Unable to load cuDNN. Is it installed? (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
            ["cudnn"],
        ),
        (
            "jax",
            {"jax": "0.4.18", "jaxlib": "0.4.18+cuda12.cudnn89"},
            "CUDA backend failed to initialize: Unable to load cuSOLVER. (Set TF_CPP_MIN_LOG_LEVEL=0",
            ["cusolver"],
        ),
        (
            "jax",
            {"jax": "0.4.31", "jax-cuda12-plugin": "0.4.31"},
            "RuntimeError: Unable to use CUDA because of the following issues with CUDA components:\nUnable to load cuFFT. Is it installed?\n"
            "--------------------------------------------------\nUnable to load cuSOLVER. Is it installed?",
            ["cufft", "cusolver"],
        ),
    ],
)
def test_unloadable_by_meaning_where_no_file_is_named(name, packages, text, parts):
    found = build(name, packages, {"version": "x", "error": text})
    assert [u.part for u in found.unloadable] == parts and all(u.message for u in found.unloadable)
    assert found.load_failures == ()  # no file is named: nothing is made up from a table
    assert not found.cudnn_works


def test_a_named_library_is_not_read_as_a_part():
    """ "Unable to load cudnn64_8.dll" names a file: the load-failure parsers say it, not the meaning table."""
    assert (
        build(
            "jax",
            {"jax": "0.4.25"},
            {"version": "x", "error": "Unable to load cudnn.so.8 and Unable to load cudnn64_8.dll"},
        ).unloadable
        == ()
    )


def test_a_long_framework_line_is_quoted_to_its_last_whole_sentence():
    from cudnn_doctor.probes.messages import clipped as _clipped

    line = "First sentence here. Second one. " + "x" * 400
    assert _clipped(line) == "First sentence here. Second one."
    assert _clipped("y" * 400) == "y" * 299 + "…" and _clipped("short") == "short"
