"""`cudnn-doctor run` and the Python hook: real failing programs, the loader's own trace, output passed through."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.reports import run_report
from cudnn_doctor.run import errors, explain, trace

LINUX = sys.platform.startswith("linux")
CC = shutil.which("cc") or shutil.which("gcc")
needs_glibc = pytest.mark.skipif(not LINUX, reason="LD_DEBUG is glibc's")
needs_cc = pytest.mark.skipif(not (LINUX and CC), reason="needs a C compiler on Linux")
posix_only = pytest.mark.skipif(os.name != "posix", reason="signals, process groups and sh are POSIX's")


def doctor(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cudnn_doctor", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def direct(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


# errors in program output --------------------------------------------------------------------------

# Texts as the frameworks and NVIDIA's libraries print them (from users' reports).
REAL_ERRORS = [
    ("Could not load library cudnn_cnn_infer64_8.dll. Error code 126", "library-not-found", "cudnn_cnn_infer64_8.dll"),
    (
        "OSError: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory",
        "library-not-found",
        "libcudnn_ops_infer.so.8",
    ),
    (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: x",
        "library-not-found",
        "libcudart.so.11.0",
    ),
    (
        "Could not locate zlibwapi.dll. Please make sure it is in your library path!",
        "library-not-found",
        "zlibwapi.dll",
    ),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "cudnn-status", None),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "no-kernel-image", None),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040).", "insufficient-driver", None),
    ("CUDA driver version is insufficient for CUDA runtime version", "insufficient-driver", None),
]


@pytest.mark.parametrize(("line", "kind", "library"), REAL_ERRORS)
def test_known_errors_are_recognised_with_their_library(line: str, kind: str, library):
    (match,) = errors.scan(f"some output\n{line}\nmore output\n")
    assert (match.kind, match.library) == (kind, library)


# Issue 31: the failures people search for, for every framework, as the frameworks print them (users' reports).
FRAMEWORK_ERRORS = [
    ("torch-cpu", "AssertionError: Torch not compiled with CUDA enabled", "cpu-build", None),
    ("nvml", "Failed to initialize NVML: Driver/library version mismatch", "nvml", None),
    ("nvml-smi", "NVML: Driver/library version mismatch", "nvml", None),
    (
        "tf-cudnn-version",
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:361] Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0."
        "  CuDNN library needs to have matching major version and equal or higher minor version.",
        "cudnn-version",
        None,
    ),
    (
        "jax-cudnn-old",
        "Found cuDNN version 8700, but JAX was built against version 8904, which is newer.",
        "cudnn-version",
        None,
    ),
    ("jax-cudnn-missing", "RuntimeError: Unable to load cuDNN. Is it installed?", "gpu-library-not-loaded", None),
    (
        "jax-cusolver-missing",
        "CUDA backend failed to initialize: Unable to load cuSOLVER. (Set TF_CPP_MIN_LOG_LEVEL=0",
        "backend-failed",
        None,
    ),
    (
        "torch-cudnn-tuples",
        "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 5, 0) but found runtime version (8, 3, 3).",
        "cudnn-version",
        None,
    ),
    (
        "jax-backend",
        "CUDA backend failed to initialize: Found CUDA version 12010, but JAX was built against version 12020",
        "backend-failed",
        None,
    ),
    (
        "paddle-cudnn",
        "Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion.",
        "gpu-library-not-loaded",
        None,
    ),
    (
        "tf-dlopen",
        "W tensorflow/core/common_runtime/gpu/gpu_device.cc:2256] Cannot dlopen some GPU libraries. Please make sure the missing libraries"
        " mentioned above are installed properly if you would like to use GPU.",
        "gpu-library-not-loaded",
        None,
    ),
    (
        "ort-126",
        '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load '
        '"C:\\Users\\me\\venv\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"',
        "library-not-found",
        "onnxruntime_providers_cuda.dll",
    ),
    (
        "cupy-driver",
        "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorInsufficientDriver: CUDA driver version is insufficient",
        "insufficient-driver",
        None,
    ),
]


def test_run_and_the_probes_read_one_catalogue():
    """Issue 32: each wording the probes read a framework's log with is an entry of the catalogue `run` scans with."""
    from cudnn_doctor.knowledge.messages import CUDNN_MISMATCH, PATTERNS, UNLOADABLE

    scanned = {id(known.pattern) for known in PATTERNS}
    assert all(id(wording.pattern) in scanned for wording in (*CUDNN_MISMATCH, *UNLOADABLE))
    assert all(
        known.pattern.pattern.startswith(tuple(known.anchors)) or known.library_before
        for known in PATTERNS
        if len(known.anchors) == 1
    )


@pytest.mark.parametrize(
    ("line", "kind", "library"), [case[1:] for case in FRAMEWORK_ERRORS], ids=[case[0] for case in FRAMEWORK_ERRORS]
)
def test_each_frameworks_known_failures_are_recognised(line: str, kind: str, library):
    found = errors.scan(f"Traceback (most recent call last):\n{line}\n")
    assert (found[0].kind, found[0].library) == (kind, library), found


def test_ordinary_output_is_no_error_and_a_repeated_error_is_told_once():
    assert errors.scan("loss 0.31\nepoch 2: accuracy 0.93\nloaded libfoo.so fine\n") == []
    assert len(errors.scan("CUDNN_STATUS_BAD_PARAM\nCUDNN_STATUS_BAD_PARAM\n")) == 1


def test_a_progress_bar_line_and_two_errors_of_one_pattern_on_a_line():
    (match,) = errors.scan("50%|#####     |\rOSError: libcudnn.so.8: cannot open shared object file: No such file\n")
    assert (match.library, match.text) == (
        "libcudnn.so.8",
        "OSError: libcudnn.so.8: cannot open shared object file: No such file",
    )
    line = "x.so: cannot open shared object file; libb.so.2: cannot open shared object file\nlibc.so.6: cannot open shared object file\n"
    assert [m.library for m in errors.scan(line)] == ["x.so", "libc.so.6"]  # one per pattern and line, as before


# A child, so that a scan that is not linear fails by its timeout instead of holding the suite for hours.
_SCAN_TIMING = """
import json, sys, time
from cudnn_doctor.run import errors

def best(text):
    times = []
    for _ in range(3):
        start = time.perf_counter()
        found = errors.scan(text)
        times.append(time.perf_counter() - start)
    return min(times), found

line = "a" * 50_000_000 + " libcudnn_graph.so.9: cannot open shared object file"
whole, found = best(line)
double, _ = best("a" * 50_000_000 + line)  # both beyond any CPU cache: the ratio is the algorithm's
print(json.dumps({"whole": whole, "double": double, "found": [(m.library, m.text) for m in found]}))
"""


@pytest.mark.live
def test_scanning_one_50_mb_line_is_linear_and_well_under_a_second():
    done = subprocess.run([sys.executable, "-c", _SCAN_TIMING], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    timing = json.loads(done.stdout)
    assert timing["found"] == [["libcudnn_graph.so.9", "libcudnn_graph.so.9: cannot open shared object file"]]
    assert timing["whole"] < 1.0, timing  # 0.2-0.5 s here; the old scan took 1.2 s for 20 kB and grew with the square
    assert 1.3 < timing["double"] / timing["whole"] < 3.0, timing  # twice the input, about twice the time


def test_the_area_of_a_library():
    assert explain.area_of("libcudnn_graph.so.9") == "cudnn"
    assert explain.area_of("cublas64_12.dll") == "toolkit"
    assert explain.area_of("libcuda.so.1") == "driver"
    assert explain.area_of("libffi.so.8") is None


# the loader's trace --------------------------------------------------------------------------------

TRACE = textwrap.dedent(
    """\
         41:	file=libcudnn_graph.so.9 [0];  dynamically loaded by /venv/nvidia/cudnn/lib/libcudnn.so.9 [0]
         41:	find library=libcudnn_graph.so.9 [0]; searching
         41:	 search path=/opt/old/lib		(LD_LIBRARY_PATH)
         41:	  trying file=/opt/old/lib/libcudnn_graph.so.9
         41:	 search cache=/etc/ld.so.cache
         41:	 search path=/lib/x86_64-linux-gnu:/usr/lib		(system search path)
         41:	  trying file=/lib/x86_64-linux-gnu/libcudnn_graph.so.9
         41:	  trying file=/usr/lib/libcudnn_graph.so.9
         41:
         41:	file=libffi.so.8 [0];  needed by /py/_ctypes.so [0]
         41:	find library=libffi.so.8 [0]; searching
         41:	 search cache=/etc/ld.so.cache
         41:	  trying file=/lib/x86_64-linux-gnu/libffi.so.8
         41:
         41:	file=libffi.so.8 [0];  generating link map
    """
)


def test_a_trace_gives_each_request_its_places_tries_and_outcome():
    graph, ffi = trace.parse(TRACE)
    assert (graph.name, graph.how, graph.requester, graph.loaded) == (
        "libcudnn_graph.so.9",
        "dlopen",
        "/venv/nvidia/cudnn/lib/libcudnn.so.9",
        None,
    )
    assert [p.source for p in graph.places] == ["LD_LIBRARY_PATH", "ld.so cache", "system search path"]
    assert graph.places[2].folders == ("/lib/x86_64-linux-gnu", "/usr/lib")
    assert graph.tried == (
        "/opt/old/lib/libcudnn_graph.so.9",
        "/lib/x86_64-linux-gnu/libcudnn_graph.so.9",
        "/usr/lib/libcudnn_graph.so.9",
    )
    assert (ffi.how, ffi.loaded) == ("needed", "/lib/x86_64-linux-gnu/libffi.so.8")
    assert trace.failures([graph, ffi]) == [graph]


def test_a_library_found_by_a_later_request_is_no_failure():
    found = TRACE.replace("file=libffi.so.8 [0];  needed by", "file=libcudnn_graph.so.9 [0];  needed by").replace(
        "libffi.so.8", "libcudnn_graph.so.9"
    )
    assert trace.failures(trace.parse(found)) == []


def test_findings_that_name_the_library_come_first_then_those_of_its_part_of_the_stack():
    naming = Finding(
        "cudnn-sublibrary-missing",
        Severity.ERROR,
        "cuDNN is incomplete",
        "libcudnn_graph.so.9 is missing",
        area=Area.CUDNN,
    )
    same_area = Finding("cudnn-version-mismatch", Severity.WARNING, "two cuDNN releases", "8 and 9", area=Area.CUDNN)
    elsewhere = Finding("driver-too-old", Severity.ERROR, "old driver", "470", area=Area.DRIVER)
    note = Finding("cudnn-info", Severity.INFO, "cuDNN 9.1", "libcudnn_graph.so.9 present", area=Area.CUDNN)
    result = explain.explain(1, "", [TRACE], [elsewhere, same_area, note, naming])
    assert [f.id for f in result.findings] == ["cudnn-sublibrary-missing", "cudnn-version-mismatch"]
    assert [s.name for s in result.failed] == ["libcudnn_graph.so.9"]
    assert not explain.explain(0, "all good\n", [TRACE], [naming]).worth_telling  # a clean run: nothing to say


def test_each_known_error_says_what_to_do_with_the_library_it_names():
    """Every error in the catalogue has a next step, shown under it whatever `check` finds; NAME becomes the file."""
    assert all(known.next_step and known.areas for known in errors.PATTERNS)
    [found] = errors.scan("OSError: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory")
    assert found.next_step.startswith("`cudnn-doctor which libcudnn_cnn_infer.so.8` shows where the loader looks")
    [dll] = errors.scan(
        "ImportError: DLL load failed while importing _C: The specified module could not be found. C:\\cuda\\bin\\cudnn64_8.dll"
    )
    assert dll.next_step.startswith("`cudnn-doctor which cudnn64_8.dll`")
    [cpu] = errors.scan("AssertionError: Torch not compiled with CUDA enabled")
    assert "`cudnn-doctor plan --framework torch`" in cpu.next_step
    told = "\n".join(
        run_report.lines(
            explain.explain(1, "AssertionError: Torch not compiled with CUDA enabled", [], []), ["python", "x.py"]
        )
    )
    assert (
        "  ✗ this PyTorch is a CPU-only build: AssertionError: Torch not compiled with CUDA enabled\n    → install a CUDA build of PyTorch"
        in told
    )


def test_a_build_error_brings_the_frameworks_reports_and_the_driver_findings():
    """A CPU build or a build without code for the GPU is judged with the frameworks' reports (the finding with the
    exact pip line comes from them), and a machine with no usable GPU says so too."""
    no_gpu = Finding("no-nvidia-gpu", Severity.ERROR, "no GPU", "NVML could not be loaded", area=Area.DRIVER)
    cpu = explain.explain(1, "AssertionError: Torch not compiled with CUDA enabled", [], [no_gpu])
    assert cpu.about_frameworks and [f.id for f in cpu.findings] == ["no-nvidia-gpu"]
    assert not explain.explain(1, "OSError: libcudnn.so.9: cannot open shared object file", [], []).about_frameworks


# live programs ---------------------------------------------------------------------------------------


@pytest.mark.live
@needs_glibc
def test_a_python_script_that_cannot_load_a_cudnn_library(tmp_path: Path):
    (tmp_path / "lib").mkdir()
    script = tmp_path / "train.py"
    script.write_text("import ctypes\nprint('starting', flush=True)\nctypes.CDLL('libcudnn_adv.so.9')\n")
    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path / "lib")}
    done = doctor("run", "--", sys.executable, str(script), cwd=tmp_path, env=env)
    alone = direct(sys.executable, str(script), cwd=tmp_path, env=env)
    assert done.returncode == alone.returncode == 1
    assert done.stdout == alone.stdout == "starting\n"
    assert done.stderr.startswith(alone.stderr)  # its own output first, unchanged
    added = done.stderr[len(alone.stderr) :]
    assert "found no libcudnn_adv.so.9 (loaded with dlopen by" in added
    assert f"LD_LIBRARY_PATH: {tmp_path / 'lib'}" in added  # the real search, from the loader's trace


@pytest.mark.live
@needs_cc
def test_a_native_program_that_dlopens_a_missing_cudnn_name(tmp_path: Path):
    source = tmp_path / "probe.c"
    source.write_text(
        '#include <dlfcn.h>\n#include <stdio.h>\nint main(void) {\n  if (!dlopen("libcudnn_graph.so.9", RTLD_NOW)) {\n'
        '    fprintf(stderr, "%s\\n", dlerror());\n    return 3;\n  }\n  return 0;\n}\n'
    )
    subprocess.run([CC, str(source), "-o", str(tmp_path / "probe"), "-ldl"], check=True, timeout=120)
    done = doctor("run", "--", str(tmp_path / "probe"), cwd=tmp_path)
    assert done.returncode == 3
    assert "libcudnn_graph.so.9: cannot open shared object file" in done.stderr
    assert f"found no libcudnn_graph.so.9 (loaded with dlopen by {tmp_path / 'probe'})" in done.stderr


@pytest.mark.live
@needs_cc
def test_a_library_whose_dependency_is_missing_names_the_dependency_and_who_needs_it(tmp_path: Path):
    (tmp_path / "dep.c").write_text("int dep(void) { return 1; }\n")
    (tmp_path / "top.c").write_text("int dep(void);\nint top(void) { return dep(); }\n")
    subprocess.run(
        [CC, "-shared", "-fPIC", str(tmp_path / "dep.c"), "-o", str(tmp_path / "libcublasLt.so.12")],
        check=True,
        timeout=120,
    )
    subprocess.run(
        [
            CC,
            "-shared",
            "-fPIC",
            str(tmp_path / "top.c"),
            "-o",
            str(tmp_path / "libtop.so"),
            "-L",
            str(tmp_path),
            "-l:libcublasLt.so.12",
        ],
        check=True,
        timeout=120,
    )
    (tmp_path / "libcublasLt.so.12").unlink()  # built against it, then gone: the import fails at load time
    script = tmp_path / "use.py"
    script.write_text(f"import ctypes\nctypes.CDLL({str(tmp_path / 'libtop.so')!r})\n")
    done = doctor("run", "--", sys.executable, str(script), cwd=tmp_path)
    assert done.returncode == 1
    assert f"found no libcublasLt.so.12 (needed by {tmp_path / 'libtop.so'})" in done.stderr


@pytest.mark.live
def test_a_program_that_succeeds_passes_through_untouched(tmp_path: Path):
    script = tmp_path / "ok.py"
    script.write_text("import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    done = doctor("run", "--", sys.executable, str(script), cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "err\n")
    seven = doctor("run", "--", sys.executable, "-c", "import sys; sys.exit(7)", cwd=tmp_path)
    assert (seven.returncode, seven.stderr) == (
        7,
        "",
    )  # a failure with nothing of the GPU stack: the exit code, nothing added


@pytest.mark.live
def test_bad_commands_are_one_line_and_exit_2(tmp_path: Path):
    for args in (["run"], ["run", "--"], ["run", "--", str(tmp_path / "no-such-program")]):
        done = doctor(*args, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, (args, done.stderr)


@pytest.mark.live
@needs_glibc
def test_the_hook_diagnoses_an_uncaught_error_inside_the_interpreter(tmp_path: Path):
    script = tmp_path / "notebook_cell.py"
    script.write_text("import ctypes\nctypes.CDLL('libcudnn_cnn.so.9')\n")
    done = direct(sys.executable, "-m", "cudnn_doctor.run.hook", str(script), cwd=tmp_path)
    assert done.returncode == 1
    traceback_end = done.stderr.index("cannot open shared object file")
    assert "cudnn-doctor hook:" in done.stderr[traceback_end:] and "libcudnn_cnn.so.9" in done.stderr[traceback_end:]
    quiet = tmp_path / "plain.py"
    quiet.write_text("raise ValueError('not a GPU problem')\n")
    plain = direct(sys.executable, "-m", "cudnn_doctor.run.hook", str(quiet), cwd=tmp_path)
    assert (
        plain.returncode == 1 and "cudnn-doctor hook:" not in plain.stderr
    )  # (a clone in a folder called cudnn-doctor is in the traceback)


@pytest.mark.live
def test_a_50_mb_line_on_stderr_passes_through_and_run_returns_at_once(tmp_path: Path):
    program = "import sys; sys.stderr.write('a' * 50_000_000); sys.exit(1)"
    with open(tmp_path / "err", "wb") as err:
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "cudnn_doctor", "run", "--", sys.executable, "-c", program], stderr=err, timeout=120
        )
        elapsed = time.monotonic() - start
    assert done.returncode == 1
    assert (tmp_path / "err").stat().st_size == 50_000_000  # byte for byte, nothing added (no GPU-stack error in it)
    assert elapsed < 20, elapsed  # seconds, where the old scan of the 1 MiB it keeps took hours


@pytest.mark.live
@posix_only
def test_run_returns_when_the_program_exits_though_a_background_child_holds_its_stderr(tmp_path: Path):
    marker = tmp_path / "marker"
    script = f"(sleep 6; echo late >&2; echo alive > {marker}) & echo early >&2; exit 3"
    with open(tmp_path / "err", "wb") as err:
        start = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "cudnn_doctor", "run", "--", "sh", "-c", script], stderr=err, cwd=tmp_path
        )
        code = process.wait(timeout=60)
        elapsed = time.monotonic() - start
    assert code == 3
    assert elapsed < 4.5, elapsed  # the old wrapper waited for the background child's 6 s
    deadline = time.monotonic() + 30
    while not (marker.exists() and b"late" in (tmp_path / "err").read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.read_text() == "alive\n"  # it kept running, detached, and its late write did not kill it
    assert (tmp_path / "err").read_bytes() == b"early\nlate\n"  # its stderr still reaches ours


@pytest.mark.live
@posix_only
@pytest.mark.parametrize("name", ["SIGSEGV", "SIGTERM", "SIGKILL"])
def test_a_death_by_signal_is_128_plus_n_as_a_shell_says(tmp_path: Path, name: str):
    number = int(getattr(signal, name))
    done = doctor("run", "--", "sh", "-c", f"kill -{number} $$", cwd=tmp_path)
    shell = direct("sh", "-c", f"sh -c 'kill -{number} $$'; echo $?", cwd=tmp_path)
    assert done.returncode == 128 + number == int(shell.stdout), (done.returncode, shell.stdout)  # not 256 - N


_WAITS_FOR_A_SIGNAL = """
import os, pathlib, signal, sys, time
here = pathlib.Path(sys.argv[1])
if sys.argv[2] != "default":
    def handler(number, frame):
        (here / "got").write_text(signal.Signals(number).name)
        sys.exit(7)
    signal.signal(getattr(signal, sys.argv[2]), handler)
(here / "pid").write_text(str(os.getpid()))
time.sleep(60)
"""


@pytest.mark.live
@posix_only
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT", "default"])
def test_a_signal_to_run_reaches_the_program_and_the_trace_folder_is_removed(tmp_path: Path, name: str):
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    command = [
        sys.executable,
        "-m",
        "cudnn_doctor",
        "run",
        "--",
        sys.executable,
        "-c",
        _WAITS_FOR_A_SIGNAL,
        str(tmp_path),
        name,
    ]
    # A session of its own and no terminal: a SIGINT here is one sent to run alone, not a Ctrl-C its program also got.
    process = subprocess.Popen(
        command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "pid").exists()
        if LINUX:
            assert [p.name[:19] for p in temp.iterdir()] == ["cudnn-doctor-trace-"]  # the loader's traces go here
        sent = signal.SIGTERM if name == "default" else getattr(signal, name)
        process.send_signal(sent)
        code = process.wait(timeout=30)
        if name == "default":
            assert (
                code == 128 + signal.SIGTERM
            )  # the program died of the forwarded SIGTERM; run says so as a shell would
        else:
            assert (tmp_path / "got").read_text() == name
            assert code == 7
        assert list(temp.iterdir()) == []  # the trace folder is gone
    finally:
        process.kill()
        if (tmp_path / "pid").exists():
            try:
                os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)  # the old wrapper left it orphaned
            except (OSError, ValueError):
                pass
