"""Property: whatever a machine fixture holds, `check --fixture` ends with exit 0, 1 or 2 and never crashes.

Each example starts from one of the machine fixtures (the gallery, and the shared ones where present), applies a few random mutations
(keys dropped, replaced or retyped; odd strings with non-ASCII, separators and undecodable-byte
escapes; negative and huge numbers; links to random places and in loops; random command output,
NVML answers, interpreters and framework reports), writes the result as YAML or JSON and runs the
real command line on it in this process. A rule or probe that raises shows up as a
`doctor-internal-error` finding: that is a crash too.
"""

from __future__ import annotations

import copy
import io
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cudnn_doctor.cli import main
from tests.conftest import all_fixture_paths

FIXTURES = all_fixture_paths()
DOCUMENTS = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in FIXTURES]
EXAMPLES = int(os.environ.get("CUDNN_DOCTOR_MUTANTS", "150"))  # more for a longer hunt: CUDNN_DOCTOR_MUTANTS=5000
PER_RUN_SECONDS = 10.0

# Values ---------------------------------------------------------------------------------------

ODD_STRINGS = [
    "",
    " ",
    "/",
    "\\",
    "//",
    "..",
    ".",
    "C:",
    "C:\\",
    "\\\\server\\share",
    "/usr/lib/../../..",
    "a\nb",
    "\t",
    "\x00",
    "\udcff",
    "caf\u00e9",
    "\u65e5\u672c",
    "\u2713\u2192",
    "nvidia-smi",
    "-1",
    "0",
    "1e999",
    "nan",
    "None",
    "null",
    "~",
    "x" * 5000,
    "%PATH%",
    "$ORIGIN",
    "$ORIGIN/../lib",
    ";;;",
    ":::",
    '"quoted"',
    "sm_",
    "sm_1",
    "sm_x",
    "compute_",
    "64_",
    "64_1",
    "64_112",
    "+cu",
    "+cpu",
]
VERSIONS = [
    "2.1.0+cu121",
    "1.13.1+cpu",
    "2.10.0",
    "2.15.0",
    "8.9.7",
    "9.1.0",
    "12.4",
    "11.8",
    "10",
    "3.11.7",
    "99999999999999999999.0",
    "0",
    "0.0",
    "1.0.0.post117",
    "2.6.0.post112",
    "a.b.c",
    "12.4.99.1",
    "-1.0",
    "1..2",
    ".5",
    "3.9.0rc1",
    "v12",
    "550.144.03",
]
NAMES = [
    "torch",
    "tensorflow",
    "jax",
    "paddle",
    "onnxruntime",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu11",
    "tensorflow-cpu",
    "torchvision",
    "paddlepaddle-gpu",
    "onnxruntime-gpu",
    "nvidia-cuda-runtime-cu12",
    "tf-nightly",
    "jaxlib",
]
SEGMENTS = [
    "usr",
    "lib",
    "lib64",
    "local",
    "cuda",
    "cuda-12.4",
    "cuda-11.8",
    "bin",
    "include",
    "x86_64-linux-gnu",
    "libcudnn.so.8",
    "libcudnn.so.9",
    "libcudart.so.12",
    "libcublas.so.11",
    "cudnn64_8.dll",
    "cudart64_110.dll",
    "nvcc",
    "nvcc.exe",
    "python",
    "python.exe",
    "envs",
    "site-packages",
    "..",
    ".",
    "",
    "Windows",
    "System32",
    "Program Files",
    "NVIDIA GPU Computing Toolkit",
    "CUDA",
    "v11.8",
    "caf\u00e9",
    "\udcff",
    "a b",
    "version.json",
    "cudnn_version.h",
    "cuda.h",
    "libz.so.1",
    "zlibwapi.dll",
    "wsl",
    "nvidia-smi",
]
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 2**64, 10**30, 8500, 90501, 12040, 11080, 4096]),
)

text = st.one_of(st.text(max_size=24), st.sampled_from(ODD_STRINGS), st.sampled_from(VERSIONS), st.sampled_from(NAMES))
path = st.builds(
    lambda root, parts, sep: root + sep.join(parts),
    st.sampled_from(["/", "C:\\", "c:/", "", "/usr/", "\\\\?\\C:\\", "~/"]),
    st.lists(st.sampled_from(SEGMENTS) | st.text(max_size=6), min_size=0, max_size=6),
    st.sampled_from(["/", "\\"]),
)
scalar = st.one_of(st.none(), st.booleans(), NUMBERS, st.floats(allow_nan=True, allow_infinity=True), text, path)
anything = st.recursive(
    scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=10
)


@st.composite
def smi_table(draw: Callable) -> str:
    """A plausible nvidia-smi table, mangled or not."""
    driver, cuda = draw(st.sampled_from(VERSIONS + ["550.144.03", "451.48", "384.81"])), draw(st.sampled_from(VERSIONS))
    name = draw(
        st.sampled_from(
            ["NVIDIA GeForce RTX 3060", "GeForce GTX 1080 Ti", "Tesla K80", "NVIDIA GeForce RTX 4090 ...", "", "\u00fc"]
        )
        | text
    )
    lines = [
        f"| NVIDIA-SMI {driver}   Driver Version: {driver}   CUDA Version: {cuda}     |",
        "|-------------------------------+----------------------+----------------------+",
        f"|   {draw(st.integers(0, 99))}  {name}  {draw(st.sampled_from(['Off', 'On', 'WDDM', 'TCC', 'N/A']))}  | 00000000:01:00.0 Off |  N/A |",
        f"| 30%   35C    P8    20W / 450W |   {draw(NUMBERS)}MiB / {draw(NUMBERS)}MiB |   0%   Default |",
        "| Processes:                                                                  |",
    ]
    if draw(st.booleans()):
        keep = draw(st.lists(st.integers(0, len(lines) - 1), max_size=len(lines)))
        lines = [lines[i] for i in keep]
    return "\n".join(lines)


# Mutations --------------------------------------------------------------------------------------


def _containers(node: Any, depth: int = 0) -> list[Any]:
    """Every dict and list in the document (a place a mutation can act on)."""
    found = [node] if isinstance(node, (dict, list)) else []
    if depth < 8:
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
        for child in children:
            found.extend(_containers(child, depth + 1))
    return found


def drop_key(doc: dict, draw: Callable) -> None:
    place = draw(st.sampled_from(_containers(doc)))
    if isinstance(place, dict) and place:
        del place[draw(st.sampled_from(sorted(place, key=str)))]
    elif isinstance(place, list) and place:
        del place[draw(st.integers(0, len(place) - 1))]


def replace_value(doc: dict, draw: Callable) -> None:
    place = draw(st.sampled_from(_containers(doc)))
    if isinstance(place, dict) and place:
        place[draw(st.sampled_from(sorted(place, key=str)))] = draw(anything)
    elif isinstance(place, list) and place:
        place[draw(st.integers(0, len(place) - 1))] = draw(anything)


def retype_value(doc: dict, draw: Callable) -> None:
    """A value of the right kind in the wrong type: "12" for 12, [x] for x, {"x": ...} for a list."""
    place = draw(st.sampled_from(_containers(doc)))
    if not isinstance(place, dict) or not place:
        return
    key = draw(st.sampled_from(sorted(place, key=str)))
    value = place[key]
    place[key] = draw(st.sampled_from([str(value), [value], {"value": value}, None, True, 0, -1, 1.5]))


def set_string(doc: dict, draw: Callable) -> None:
    """Any string-valued place gets an odd string (the schema accepts it; the probes must too)."""
    places = [(c, k) for c in _containers(doc) if isinstance(c, dict) for k, v in c.items() if isinstance(v, str)]
    places += [(c, i) for c in _containers(doc) if isinstance(c, list) for i, v in enumerate(c) if isinstance(v, str)]
    if places:
        container, key = draw(st.sampled_from(places))
        container[key] = draw(text | path)


def set_number(doc: dict, draw: Callable) -> None:
    places = [
        (c, k)
        for c in _containers(doc)
        if isinstance(c, dict)
        for k, v in c.items()
        if isinstance(v, int) and not isinstance(v, bool)
    ]
    if places:
        container, key = draw(st.sampled_from(places))
        container[key] = draw(NUMBERS)


def _files(doc: dict) -> dict:
    files = doc.get("files")
    if not isinstance(files, dict):
        files = doc["files"] = {}
    return files


def file_entry(doc: dict, draw: Callable) -> None:
    """A new or changed file with random fields of the right types."""
    files = _files(doc)
    target = draw(st.sampled_from(sorted(files)) | path) if files else draw(path)
    entry = {}
    for field in draw(
        st.lists(
            st.sampled_from(
                [
                    "size",
                    "text",
                    "imports",
                    "loads",
                    "soname",
                    "rpath",
                    "dt_rpath",
                    "version",
                    "machine",
                    "link",
                    "readable",
                    "exports",
                    "load",
                    "source",
                ]
            ),
            max_size=5,
            unique=True,
        )
    ):
        if field == "size":
            entry[field] = draw(NUMBERS)
        elif field in ("imports", "loads", "rpath", "dt_rpath", "exports"):
            entry[field] = draw(st.lists(text | path | st.sampled_from(SEGMENTS), max_size=5))
        elif field == "readable":
            entry[field] = draw(st.booleans())
        elif field == "load":
            entry[field] = draw(
                st.fixed_dictionaries(
                    {},
                    optional={"ok": st.booleans(), "error": text, "cudnn_version": NUMBERS, "cudart_version": NUMBERS},
                )
            )
        elif field == "link":
            entry[field] = draw(
                path | st.sampled_from(sorted(files) or ["/"]) | st.sampled_from([target, ".", "..", target + "/x", ""])
            )
        elif field == "source":
            entry[field] = draw(
                st.sampled_from(
                    ["missing.bin", "../../../../dev/zero", "/dev/zero", ".", "", "/etc/hostname", sys.executable]
                )
                | text
            )
        elif field == "text":
            entry[field] = draw(
                text
                | st.sampled_from(
                    [
                        "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 7\n",
                        "#define CUDNN_MAJOR -1\n",
                        "#define CUDNN_MAJOR 99999999999999999999\n",
                        '{"cuda": {"version": "12.4.1"}}',
                        '{"cuda": 5}',
                        "[]",
                        "CUDA Version 11.8.89",
                        "#define CUDA_VERSION 12040",
                        "#define CUDA_VERSION 99999999999",
                    ]
                )
            )
        else:
            entry[field] = draw(text)
    files[target] = entry if draw(st.integers(0, 9)) else draw(anything)


def link_loop(doc: dict, draw: Callable) -> None:
    """Links in a loop, on a path the probes look at: two, three, self, own child, a parent."""
    files = _files(doc)
    env = doc.get("env") if isinstance(doc.get("env"), dict) else {}
    sep = "\\" if doc.get("os") == "windows" else "/"
    candidates = sorted(files) + [
        p for v in env.values() if isinstance(v, str) for p in v.split(";" if sep == "\\" else ":") if p
    ]
    base = draw(st.sampled_from(candidates)) if candidates else (f"C:{sep}x" if sep == "\\" else "/x")
    kind = draw(st.sampled_from(["self", "pair", "triple", "child", "parent"]))
    a, b, c = base, base + sep + "loop-b", base + sep + "loop-c"
    if kind == "self":
        files[a] = {"link": a}
    elif kind == "pair":
        files.update({a: {"link": b}, b: {"link": a}})
    elif kind == "triple":
        files.update({a: {"link": b}, b: {"link": c}, c: {"link": a}})
    elif kind == "child":
        files[a] = {"link": a + sep + "child"}
    else:
        files[a + sep + "up"] = {"link": ".."}


def set_env(doc: dict, draw: Callable) -> None:
    env = doc.get("env")
    if not isinstance(env, dict):
        env = doc["env"] = {}
    name = draw(
        st.sampled_from(
            [
                "PATH",
                "Path",
                "LD_LIBRARY_PATH",
                "CUDA_PATH",
                "CUDA_HOME",
                "CUDA_PATH_V11_8",
                "CONDA_PREFIX",
                "CONDA_EXE",
                "VIRTUAL_ENV",
                "PWD",
                "CUDA_VISIBLE_DEVICES",
                "CUDNN_AUTOTUNE",
                "SystemRoot",
                "ProgramFiles",
                "HOME",
                "TF_CPP_MIN_LOG_LEVEL",
            ]
        )
        | text
    )
    sep = draw(st.sampled_from([":", ";", ""]))
    env[name] = sep.join(draw(st.lists(path | text, max_size=5)))


def set_command(doc: dict, draw: Callable) -> None:
    commands = doc.get("commands")
    if not isinstance(commands, dict):
        commands = doc["commands"] = {}
    key = draw(
        st.sampled_from(
            [
                "nvidia-smi",
                "nvcc --version",
                "ldconfig -p",
                "nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader",
            ]
        )
        | text
    )
    if draw(st.integers(0, 5)) == 0:
        commands[key] = {"timeout": True}
        return
    stdout = draw(
        st.one_of(
            text,
            smi_table(),
            st.sampled_from(
                [
                    "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n",
                    "release 99999.1, V1.2.3",
                    "release .",
                    "NVIDIA GeForce RTX 3060, 8.6, 550.54, 12288 MiB\n",
                    "x, y, z, w\n",
                    ", , , \n",
                    "a,8.6,b,-5 MiB",
                    "\tlibcudnn.so.8 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.8\n",
                    "\tlibx.so => \n",
                    " => /a/b\n",
                    "1 libs found in cache\n",
                ]
            ),
        )
    )
    commands[key] = {"returncode": draw(NUMBERS | st.just(0)), "stdout": stdout, "stderr": draw(text)}


def set_nvml(doc: dict, draw: Callable) -> None:
    if draw(st.integers(0, 4)) == 0:
        doc.pop("nvml", None)
        return
    gpu = st.fixed_dictionaries(
        {},
        optional={
            "name": text,
            "compute_capability": st.sampled_from(
                ["8.6", "3.7", "9.0", "12.0", "x", "", "8", "8.6.1", "-1.0", "99999999999999.0"]
            )
            | text,
            "memory_total_mib": NUMBERS,
            "uuid": text,
        },
    )
    doc["nvml"] = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "driver_version": st.sampled_from(VERSIONS) | text,
                "cuda_driver_version": NUMBERS,
                "gpus": st.lists(gpu, max_size=3),
            },
        )
    )


REPORT = {
    "version": st.sampled_from(VERSIONS) | text,
    "cuda": st.sampled_from(VERSIONS + ["64_112", "11.2"]) | text | st.none(),
    "cudnn": NUMBERS | st.sampled_from(VERSIONS) | st.none(),
    "cuda_available": st.booleans() | st.none(),
    "device_count": NUMBERS,
    "arch_list": st.lists(
        st.sampled_from(
            [
                "sm_86",
                "sm_37",
                "compute_90",
                "sm_",
                "sm_1",
                "sm_x",
                "sm_9999999999999999999",
                "compute_",
                "x_86",
                "sm_8a",
            ]
        )
        | text,
        max_size=5,
    ),
    "error": text,
    "import_error": text,
    "warning": text,
    "log": text
    | st.sampled_from(
        [
            "Could not load dynamic library 'cudnn64_8.dll'; dlerror: cudnn64_8.dll not found",
            "Loaded runtime CuDNN library: 8.1.0 but source was compiled with: 8.6.0",
            "no kernel image is available for execution on the device",
            "CUDA driver version is insufficient",
        ]
    ),
    "built_with_cuda": st.booleans(),
    "build_info": st.dictionaries(
        st.sampled_from(["cuda_version", "cudnn_version", "is_cuda_build"]) | text,
        text | st.booleans() | NUMBERS,
        max_size=3,
    ),
    "gpus": st.lists(text, max_size=3),
    "providers": st.lists(st.sampled_from(["CUDAExecutionProvider", "CPUExecutionProvider"]) | text, max_size=3),
    "compiled_with_cuda": st.booleans(),
    "cudnn_version": NUMBERS | st.sampled_from(VERSIONS),
    "gpu_count": NUMBERS,
    "devices": st.lists(text, max_size=3),
}


def set_python(doc: dict, draw: Callable) -> None:
    """An interpreter (new or existing) with random packages and framework reports."""
    pythons = doc.get("pythons")
    if not isinstance(pythons, list):
        pythons = doc["pythons"] = []
    if pythons and draw(st.booleans()):
        python = draw(st.sampled_from(pythons))
        if not isinstance(python, dict):
            return
    else:
        python = {"executable": draw(path), "version": draw(st.sampled_from(VERSIONS) | text)}
        pythons.append(python)
    if draw(st.booleans()):
        python["packages"] = draw(
            st.dictionaries(st.sampled_from(NAMES) | text, st.sampled_from(VERSIONS) | text, max_size=4)
        )
    frameworks = python.get("frameworks")
    if not isinstance(frameworks, dict):
        frameworks = python["frameworks"] = {}
    name = draw(st.sampled_from(["torch", "tensorflow", "jax", "paddle", "onnxruntime"]) | text)
    keys = draw(st.lists(st.sampled_from(sorted(REPORT)), max_size=8, unique=True))
    frameworks[name] = {key: draw(REPORT[key]) for key in keys}
    if draw(st.integers(0, 5)) == 0:
        frameworks[name][draw(text)] = draw(anything)  # open keys: anything goes
    if draw(st.booleans()):
        python["current"] = draw(st.booleans())
    if draw(st.integers(0, 3)) == 0:
        python["kind"] = draw(st.sampled_from(["conda", "venv", "system", "embedded"]))


def set_top(doc: dict, draw: Callable) -> None:
    """os / arch / wsl / persistent_env / expect, the right type or not."""
    key = draw(st.sampled_from(["os", "arch", "wsl", "persistent_env", "name", "schema", "description", "expect"]))
    choices = {
        "os": st.sampled_from(["windows", "linux", "macos", ""]),
        "arch": st.sampled_from(["x86_64", "aarch64", "ppc"]),
        "wsl": st.booleans() | NUMBERS,
        "persistent_env": st.fixed_dictionaries(
            {},
            optional={
                "user": st.dictionaries(text, text | path, max_size=3),
                "system": st.dictionaries(text, text | path, max_size=3),
            },
        ),
        "name": text,
        "schema": st.sampled_from(["machine-fixture/1", "machine-fixture/2"]),
        "description": text,
        "expect": anything,
    }
    doc[key] = draw(choices[key])


# the ones that keep the document valid come twice: they reach the probes and checks, not only the validator
WEIGHTED = [
    drop_key,
    replace_value,
    retype_value,
    set_string,
    set_number,
    file_entry,
    file_entry,
    link_loop,
    set_env,
    set_env,
    set_command,
    set_command,
    set_nvml,
    set_python,
    set_python,
    set_top,
]


# Writing and running ------------------------------------------------------------------------------


def _write(document: Any, folder: Path, as_json: bool) -> Path:
    if as_json:
        target = folder / "mutant.json"
        target.write_text(json.dumps(document, allow_nan=True), encoding="utf-8")
        return target

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:  # fixture loading refuses aliases: write every value in full
            return True

    target = folder / "mutant.yaml"
    target.write_text(yaml.dump(document, Dumper=Dumper, allow_unicode=True), encoding="utf-8")
    return target


class Hang(BaseException):
    """Raised by the alarm; a BaseException, so that no `except Exception` in the product can swallow it."""


def _expire(signum: int, frame: Any) -> None:
    raise Hang(f"still running after {PER_RUN_SECONDS} s")


def _run(args: list[str], encoding: str) -> tuple[int, str, str]:
    """The CLI in this process, stdout a strict stream of `encoding`; under an alarm where there are signals, so a hang fails instead of stopping the suite."""
    out = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="strict", newline="")
    err = io.StringIO()
    alarm = hasattr(signal, "setitimer")
    if alarm:
        previous = signal.signal(signal.SIGALRM, _expire)
        signal.setitimer(signal.ITIMER_REAL, PER_RUN_SECONDS)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(args)
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    out.flush()
    return code, out.buffer.getvalue().decode(encoding), err.getvalue()


def test_mutated_fixtures_never_crash_the_check(capsys):
    stats: Counter = Counter()
    folder = Path(tempfile.mkdtemp(prefix="cudnn-doctor-mutants-"))
    started = time.monotonic()

    # no shrinking: a mutant is a whole machine, and the message already names the fixture and the mutations
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
        report_multiple_bugs=False,
    )
    @given(data=st.data())
    def one_mutant(data: st.DataObject) -> None:
        draw = data.draw
        index = draw(st.integers(0, len(DOCUMENTS) - 1), label="fixture")
        document = copy.deepcopy(DOCUMENTS[index])
        applied = [draw(st.sampled_from(WEIGHTED), label="mutation") for _ in range(draw(st.integers(1, 6)))]
        for mutate in applied:
            mutate(document, draw)
            stats[mutate.__name__] += 1
        as_json = draw(st.booleans(), label="json file")
        fmt = draw(st.sampled_from(["text", "json"]), label="format")
        encoding = draw(st.sampled_from(["utf-8", "cp1252", "ascii"]), label="stdout encoding")
        args = ["check", "--fixture", str(_write(document, folder, as_json)), "--format", fmt, "--no-color"] + (
            ["-v"] if draw(st.booleans()) else []
        )
        begun = time.monotonic()
        try:
            code, out, err = _run(args, encoding)
        except Hang:
            pytest.fail(
                f"{FIXTURES[index].name} mutated by {[m.__name__ for m in applied]} ran longer than {PER_RUN_SECONDS} s"
            )
        elapsed = time.monotonic() - begun
        stats["mutants"] += 1
        stats[f"exit {code}"] += 1
        assert code in (0, 1, 2), (code, err)
        assert elapsed < PER_RUN_SECONDS, (
            f"{FIXTURES[index].name} mutated by {[m.__name__ for m in applied]} took {elapsed:.1f} s"
        )
        if code == 2:
            assert out == "" and err.count("\n") == 1 and err.startswith("cudnn-doctor: error: "), err
            return
        assert err == "", err
        if fmt == "json":
            report = json.loads(out)
            internal = [f["detail"] for f in report["findings"] if f["id"] == "doctor-internal-error"]
        else:
            internal = [line for line in out.splitlines() if "doctor-internal-error" in line]
        assert not internal, f"{FIXTURES[index].name} mutated by {[m.__name__ for m in applied]}: {internal}"

    one_mutant()
    with capsys.disabled():
        kinds = ", ".join(f"{name} {stats[name]}" for name in sorted({m.__name__ for m in WEIGHTED}))
        print(
            f"\n{stats['mutants']} mutants of {len(DOCUMENTS)} fixtures in {time.monotonic() - started:.1f} s: "
            f"exit 0 {stats['exit 0']}, exit 1 {stats['exit 1']}, exit 2 {stats['exit 2']}; mutations: {kinds}"
        )
    assert stats["mutants"] >= EXAMPLES // 2
