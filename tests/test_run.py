"""`cudnn-doctor run` and the Python hook: real failing programs, the loader's own trace, output passed through."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.watch import errors, explain, trace

LINUX = sys.platform.startswith("linux")
CC = shutil.which("cc") or shutil.which("gcc")
needs_glibc = pytest.mark.skipif(not LINUX, reason="LD_DEBUG is glibc's")
needs_cc = pytest.mark.skipif(not (LINUX and CC), reason="needs a C compiler on Linux")


def doctor(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudnn_doctor", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def direct(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


# errors in program output --------------------------------------------------------------------------

# Texts as the frameworks and NVIDIA's libraries print them (from users' reports).
REAL_ERRORS = [
    ("Could not load library cudnn_cnn_infer64_8.dll. Error code 126", "library-not-found", "cudnn_cnn_infer64_8.dll"),
    ("OSError: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory", "library-not-found", "libcudnn_ops_infer.so.8"),
    (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: x",
        "library-not-found",
        "libcudart.so.11.0",
    ),
    ("Could not locate zlibwapi.dll. Please make sure it is in your library path!", "library-not-found", "zlibwapi.dll"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "cudnn-status", None),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "no-kernel-image", None),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040).", "driver-too-old", None),
    ("CUDA driver version is insufficient for CUDA runtime version", "driver-too-old", None),
]


@pytest.mark.parametrize(("line", "kind", "library"), REAL_ERRORS)
def test_known_errors_are_recognised_with_their_library(line: str, kind: str, library):
    (match,) = errors.scan(f"some output\n{line}\nmore output\n")
    assert (match.kind, match.library) == (kind, library)


def test_ordinary_output_is_no_error_and_a_repeated_error_is_told_once():
    assert errors.scan("loss 0.31\nepoch 2: accuracy 0.93\nloaded libfoo.so fine\n") == []
    assert len(errors.scan("CUDNN_STATUS_BAD_PARAM\nCUDNN_STATUS_BAD_PARAM\n")) == 1


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
    assert (graph.name, graph.how, graph.requester, graph.loaded) == ("libcudnn_graph.so.9", "dlopen", "/venv/nvidia/cudnn/lib/libcudnn.so.9", None)
    assert [p.source for p in graph.places] == ["LD_LIBRARY_PATH", "ld.so cache", "system search path"]
    assert graph.places[2].folders == ("/lib/x86_64-linux-gnu", "/usr/lib")
    assert graph.tried == ("/opt/old/lib/libcudnn_graph.so.9", "/lib/x86_64-linux-gnu/libcudnn_graph.so.9", "/usr/lib/libcudnn_graph.so.9")
    assert (ffi.how, ffi.loaded) == ("needed", "/lib/x86_64-linux-gnu/libffi.so.8")
    assert trace.failures([graph, ffi]) == [graph]


def test_a_library_found_by_a_later_request_is_no_failure():
    found = TRACE.replace("file=libffi.so.8 [0];  needed by", "file=libcudnn_graph.so.9 [0];  needed by").replace("libffi.so.8", "libcudnn_graph.so.9")
    assert trace.failures(trace.parse(found)) == []


def test_findings_that_name_the_library_come_first_then_those_of_its_part_of_the_stack():
    naming = Finding("cudnn-sublibrary-missing", Severity.ERROR, "cuDNN is incomplete", "libcudnn_graph.so.9 is missing", area=Area.CUDNN)
    same_area = Finding("cudnn-version-mismatch", Severity.WARNING, "two cuDNN releases", "8 and 9", area=Area.CUDNN)
    elsewhere = Finding("driver-too-old", Severity.ERROR, "old driver", "470", area=Area.DRIVER)
    note = Finding("cudnn-info", Severity.INFO, "cuDNN 9.1", "libcudnn_graph.so.9 present", area=Area.CUDNN)
    result = explain.explain(1, "", [TRACE], [elsewhere, same_area, note, naming])
    assert [f.id for f in result.findings] == ["cudnn-sublibrary-missing", "cudnn-version-mismatch"]
    assert [s.name for s in result.failed] == ["libcudnn_graph.so.9"]
    assert not explain.explain(0, "all good\n", [TRACE], [naming]).worth_telling  # a clean run: nothing to say


# live programs ---------------------------------------------------------------------------------------


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


@needs_cc
def test_a_library_whose_dependency_is_missing_names_the_dependency_and_who_needs_it(tmp_path: Path):
    (tmp_path / "dep.c").write_text("int dep(void) { return 1; }\n")
    (tmp_path / "top.c").write_text("int dep(void);\nint top(void) { return dep(); }\n")
    subprocess.run([CC, "-shared", "-fPIC", str(tmp_path / "dep.c"), "-o", str(tmp_path / "libcublasLt.so.12")], check=True, timeout=120)
    subprocess.run(
        [CC, "-shared", "-fPIC", str(tmp_path / "top.c"), "-o", str(tmp_path / "libtop.so"), "-L", str(tmp_path), "-l:libcublasLt.so.12"],
        check=True,
        timeout=120,
    )
    (tmp_path / "libcublasLt.so.12").unlink()  # built against it, then gone: the import fails at load time
    script = tmp_path / "use.py"
    script.write_text(f"import ctypes\nctypes.CDLL({str(tmp_path / 'libtop.so')!r})\n")
    done = doctor("run", "--", sys.executable, str(script), cwd=tmp_path)
    assert done.returncode == 1
    assert f"found no libcublasLt.so.12 (needed by {tmp_path / 'libtop.so'})" in done.stderr


def test_a_program_that_succeeds_passes_through_untouched(tmp_path: Path):
    script = tmp_path / "ok.py"
    script.write_text("import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    done = doctor("run", "--", sys.executable, str(script), cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "err\n")
    seven = doctor("run", "--", sys.executable, "-c", "import sys; sys.exit(7)", cwd=tmp_path)
    assert (seven.returncode, seven.stderr) == (7, "")  # a failure with nothing of the GPU stack: the exit code, nothing added


def test_bad_commands_are_one_line_and_exit_2(tmp_path: Path):
    for args in (["run"], ["run", "--"], ["run", "--", str(tmp_path / "no-such-program")]):
        done = doctor(*args, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, (args, done.stderr)


@needs_glibc
def test_the_hook_diagnoses_an_uncaught_error_inside_the_interpreter(tmp_path: Path):
    script = tmp_path / "notebook_cell.py"
    script.write_text("import ctypes\nctypes.CDLL('libcudnn_cnn.so.9')\n")
    done = direct(sys.executable, "-m", "cudnn_doctor.hook", str(script), cwd=tmp_path)
    assert done.returncode == 1
    traceback_end = done.stderr.index("cannot open shared object file")
    assert "cudnn-doctor hook:" in done.stderr[traceback_end:] and "libcudnn_cnn.so.9" in done.stderr[traceback_end:]
    quiet = tmp_path / "plain.py"
    quiet.write_text("raise ValueError('not a GPU problem')\n")
    plain = direct(sys.executable, "-m", "cudnn_doctor.hook", str(quiet), cwd=tmp_path)
    assert plain.returncode == 1 and "cudnn-doctor" not in plain.stderr
