"""`check`, `snapshot` and `which` never hang and never lie.

Every child process has a deadline and leaves nothing behind, only regular files are read and
never without a bound, link loops in a fixture end like the kernel's ELOOP, the report prints on
any output, an `nvidia-smi` that says nothing usable is not taken for a healthy driver, and bad
command-line values are one-line errors. Whatever could hang runs in a child process or under an
alarm, so a regression fails the test instead of stopping the suite.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
import yaml

from cudnn_doctor.cli import main
from cudnn_doctor.errors import InputError
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import LINUX_BASE, machine, run

POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX process groups, FIFOs and signals")
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and /dev/full")


class Done:
    """What one `python -m cudnn_doctor` child did."""

    def __init__(self, returncode: int, stdout: bytes, stderr: bytes, elapsed: float) -> None:
        self.returncode, self.stdout_bytes, self.elapsed = returncode, stdout, elapsed
        self.stdout = stdout.decode("utf-8", "replace")
        self.stderr = stderr.decode("utf-8", "replace")


def doctor(
    args: list[str],
    timeout: float = 60,
    env: Optional[dict[Any, Any]] = None,
    stdout: Any = None,
    memory: Optional[int] = None,
) -> Done:
    """Run the CLI in a child with a hard timeout: a hang fails the test (and is killed), it never stops the suite.

    Output goes to temporary files, not pipes, so a grandchild that keeps a pipe open cannot hold this up either.
    """

    def limit_memory() -> None:
        if memory is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    env = dict(os.environ if env is None else env)
    for name in ("PYTHONUNBUFFERED", b"PYTHONUNBUFFERED"):  # buffered, as users run it: the last flush happens at exit
        env.pop(name, None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "cudnn_doctor", *args],
            stdin=subprocess.DEVNULL,
            stdout=stdout if stdout is not None else out,
            stderr=err,
            env=env,
            start_new_session=os.name == "posix",
            preexec_fn=limit_memory if memory else None,
        )
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL) if os.name == "posix" else process.kill()
            process.wait()
            pytest.fail(f"cudnn-doctor {' '.join(args)} did not finish within {timeout} s")
        elapsed = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        return Done(code, out.read(), err.read(), elapsed)


def one_line_error(done: Done) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("cudnn-doctor: error: "), done.stderr
    assert "Traceback" not in done.stderr


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise in this (main) thread when the block runs longer than `seconds`: a hang becomes a failure."""

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def write_fixture(folder: Path, document: dict[str, Any], name: str = "m.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(document) if name.endswith(".yaml") else json.dumps(document), encoding="utf-8")
    return path


def processes_mentioning(token: str) -> list[int]:
    """Process ids whose command line contains `token` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if token.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def kill_leftovers(token: str) -> list[int]:
    """End the processes this test started (found by their unique folder) and say which were still there."""
    left = processes_mentioning(token)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left


# 9. Hard deadlines ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "snapshot"])
@pytest.mark.parametrize("value", ["0", "-1", "-0.5", "nan", "inf", "1e999", "abc", ""])
def test_framework_timeout_must_be_a_positive_finite_number(tmp_path, capsys, command, value):
    args = [command, f"--framework-timeout={value}", "--no-frameworks"]
    if command == "check":
        args += ["--fixture", str(write_fixture(tmp_path, machine(LINUX_BASE)))]
    else:
        args += ["-o", str(tmp_path / "snapshot.yaml")]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--framework-timeout" in err
    assert not (tmp_path / "snapshot.yaml").exists()


@pytest.mark.live
@LINUX
def test_run_child_kills_the_whole_tree_at_its_deadline(tmp_path):
    from cudnn_doctor.system.child import run_child

    token = str(tmp_path / "holder")
    Path(token).write_text("#!/bin/sh\nsleep 100\n")
    os.chmod(token, 0o755)
    started = time.monotonic()
    try:
        result = run_child(["/bin/sh", "-c", f"echo started; {token} & {token}"], timeout=1)
        elapsed = time.monotonic() - started
        time.sleep(0.2)
        left = processes_mentioning(token)
    finally:
        kill_leftovers(token)
    assert result.timed_out and result.returncode is None
    assert result.stdout == "started\n"  # what it said before the deadline is kept
    assert elapsed < 5, elapsed
    assert left == [], "the grandchild that holds stdout outlived the deadline"


def _hung_python(folder: Path, log: Path, holder: Path) -> Path:
    """An interpreter that never answers, with a grandchild that keeps its stdout open."""
    folder.mkdir(parents=True, exist_ok=True)
    python = folder / "python"
    python.write_text(f'#!/bin/sh\necho "$0" >> "{log}"\n"{holder}" &\nsleep 100\n')
    python.chmod(0o755)
    return python


def _hung_machine(root: Path) -> dict[str, str]:
    """Conda envs and a venv whose interpreters hang, and hanging nvidia-smi / nvcc on PATH; returns the environment."""
    log, holder = root / "calls.log", root / "holder"
    holder.write_text("#!/bin/sh\nsleep 100\n")
    holder.chmod(0o755)
    conda = root / "conda"
    _hung_python(conda / "bin", log, holder)  # no conda-meta python record: its version must be asked
    (conda / "conda-meta").mkdir(parents=True)
    for name, framework in (("torchenv", "torch-2.1.0"), ("tfenv", "tensorflow-2.15.0"), ("bare", None)):
        prefix = conda / "envs" / name
        _hung_python(prefix / "bin", log, holder)
        (prefix / "conda-meta").mkdir(parents=True)
        if framework:
            (prefix / "conda-meta" / "python-3.11.5-h955ad1f_0.json").write_text("{}")
            (prefix / "lib" / "python3.11" / "site-packages" / f"{framework}.dist-info").mkdir(parents=True)
    venv = root / "venv"
    _hung_python(venv / "bin", log, holder)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.10.12\n")
    (venv / "lib" / "python3.10" / "site-packages" / "torch-2.2.0.dist-info").mkdir(parents=True)
    tools = root / "tools"
    tools.mkdir()
    for tool in ("nvidia-smi", "nvcc"):
        (tools / tool).write_text(f'#!/bin/sh\necho "$0" >> "{log}"\n"{holder}" &\nsleep 100\n')
        (tools / tool).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONDA", "VIRTUAL_ENV", "CUDA"))}
    env.update(
        CONDA_PREFIX=str(conda), VIRTUAL_ENV=str(venv), PWD=str(root), PATH=f"{tools}:/usr/bin:/bin", NO_COLOR="1"
    )
    return env


@pytest.mark.live
@LINUX
@pytest.mark.parametrize("command", [["check"], ["snapshot"]])
def test_hung_interpreters_and_tools_do_not_hold_up_the_run(tmp_path, command):
    env = _hung_machine(tmp_path)
    try:
        done = doctor([*command, "--framework-timeout", "2"], timeout=120, env=env)
        time.sleep(0.3)
        left = processes_mentioning(str(tmp_path))
    finally:
        kill_leftovers(str(tmp_path))
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    assert done.elapsed < 15, f"took {done.elapsed:.1f} s"
    assert left == [], "children or grandchildren outlived the run"
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert len(calls) == len(set(calls)), f"an interpreter or tool that timed out was asked again: {sorted(calls)}"
    if command == ["check"]:
        assert "nvidia-smi: timed out" in done.stdout
        assert "torch 2.2.0 in " + str(tmp_path / "venv" / "bin" / "python") + " (timed out" in done.stdout, done.stdout
    elif command == ["snapshot"]:
        document = yaml.safe_load(done.stdout)
        assert document["commands"]["nvidia-smi"] == {"timeout": True}
        venv = next(p for p in document["pythons"] if p["executable"] == str(tmp_path / "venv" / "bin" / "python"))
        assert "TimeoutError" in venv["frameworks"]["torch"]["error"]


# 10. Special files -------------------------------------------------------------------------


@pytest.mark.live
@POSIX
def test_fifo_named_nvcc_on_path_does_not_block_check(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    os.mkfifo(folder / "nvcc")
    env = {**os.environ, "PATH": f"{folder}:/usr/bin:/bin"}
    done = doctor(["check", "--no-frameworks", "--format", "json"], timeout=30, env=env)
    assert done.returncode in (0, 1), done.stderr
    assert done.elapsed < 20
    assert json.loads(done.stdout)["facts"]["toolkits"]["nvcc_on_path"] is None  # a FIFO is no compiler


@pytest.mark.live
@POSIX
def test_live_system_opens_only_regular_files(tmp_path):
    from cudnn_doctor.system.live import LiveSystem

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "plain.txt").write_text("x" * 100)
    system = LiveSystem()
    with deadline(10):
        assert system.stat(str(fifo)) is None and system.stat("/dev/zero") is None
        assert str(fifo) not in [entry.path for entry in system.list_dir(str(tmp_path))]
        assert system.read_text(str(fifo)) is None
        assert system.read_text("/dev/zero") is None
        assert system.binary(str(fifo)) is None
        with pytest.raises(OSError):
            system.open_read(str(fifo))
        with pytest.raises(OSError):
            system.open_read("/dev/zero")
        assert system.read_text(str(tmp_path / "plain.txt"), limit=10) == "x" * 10
        with system.open_read(str(tmp_path / "plain.txt")) as handle:
            assert handle.read() == b"x" * 100


def _special(tmp_path: Path, kind: str) -> str:
    if kind == "fifo":
        os.mkfifo(tmp_path / "fixture.yaml")
        return str(tmp_path / "fixture.yaml")
    if kind == "directory":
        (tmp_path / "fixture.yaml").mkdir()
        return str(tmp_path / "fixture.yaml")
    if kind == "huge":
        with open(tmp_path / "fixture.yaml", "wb") as handle:
            handle.truncate(65 << 20)  # sparse: 65 MiB that cost nothing on disk
        return str(tmp_path / "fixture.yaml")
    return kind


@pytest.mark.live
@POSIX
@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("/dev/zero", "not a regular file"),
        ("fifo", "not a regular file"),
        ("directory", "not a regular file"),
        ("huge", "larger than 64 MiB"),
    ],
)
def test_fixture_must_be_a_bounded_regular_file(tmp_path, kind, message):
    done = doctor(["check", "--fixture", _special(tmp_path, kind)], timeout=30, memory=2 << 30)
    one_line_error(done)
    assert message in done.stderr
    assert done.elapsed < 10


# 11. Link loops and YAML aliases -------------------------------------------------------------

LOOPS = {
    "two links": {"/l/a": {"link": "b"}, "/l/b": {"link": "a"}},
    "three links": {"/l/a": {"link": "/l/b"}, "/l/b": {"link": "c"}, "/l/c": {"link": "/l/a"}},
    "self": {"/l/a": {"link": "a"}},
    "own child": {"/l/a": {"link": "/l/a/b"}},
    "parent folder": {"/l/a/b": {"link": ".."}, "/l/x": {"link": "a/b/a/b/a/b/x"}},
}


@POSIX
@pytest.mark.parametrize("files", LOOPS.values(), ids=LOOPS.keys())
def test_link_loops_resolve_like_dangling_links(files):
    system = FixtureSystem(machine(LINUX_BASE, files={**files, "/l/file.so": {"size": 7}}))
    with deadline(5):
        for path in files:
            for probe in (path, path + "/child/libx.so"):
                info = system.stat(probe)
                assert info is None or (path == "/l/a/b" and info.is_dir), (probe, info)
                assert isinstance(system.realpath(probe), str)
                assert system.read_text(probe) is None or path == "/l/a/b"
                assert system.binary(probe + "/no.so") is None
        assert system.stat("/l/file.so").size == 7  # the rest of the machine still resolves


@POSIX
def test_one_hop_budget_for_the_whole_path():
    chain = {f"/c/{i}": {"link": f"/c/{i + 1}"} for i in range(40)}
    system = FixtureSystem(machine(LINUX_BASE, files={**chain, "/c/40": {"size": 3}}))
    with deadline(5):
        assert system.stat("/c/0").size == 3  # 40 hops: the kernel's limit, still fine
        assert system.stat("/c/1").size == 3
    # 20 hops through a folder link, then 21 more for the file: 41 in all is a loop to the kernel
    files = {
        "/d/top": {"link": "/d/t0"},
        **{f"/d/t{i}": {"link": f"/d/t{i + 1}"} for i in range(19)},
        "/d/t19/": {},
        **{f"/d/t19/f{i}": {"link": f"f{i + 1}"} for i in range(21)},
        "/d/t19/f21": {"size": 3},
    }
    system = FixtureSystem(machine(LINUX_BASE, files=files))
    with deadline(5):
        assert system.stat("/d/t19/f0").size == 3
        assert system.stat("/d/top/f0") is None


@pytest.mark.live
@POSIX
def test_check_on_a_fixture_with_link_loops_on_every_search_path(tmp_path):
    files = {
        **{f"/loop/{n}": {"link": f"/loop/{m}"} for n, m in (("a", "b"), ("b", "c"), ("c", "a"))},
        "/usr/local/cuda": {"link": "cuda"},
        "/opt/venv/lib/self": {"link": "self/self"},
    }
    env = {
        "PATH": "/loop/a:/loop/a/bin:/usr/local/cuda/bin:/usr/bin",
        "LD_LIBRARY_PATH": "/loop/b/lib:/opt/venv/lib/self/lib",
        "CUDA_HOME": "/loop/c",
        "HOME": "/home/dev",
    }
    document = machine(LINUX_BASE, files=files, env=env)
    document["pythons"][0]["frameworks"] = {
        "tensorflow": {
            "version": "2.15.0",
            "built_with_cuda": True,
            "build_info": {"cuda_version": "12.2", "cudnn_version": "8"},
        }
    }
    document["pythons"][0]["packages"] = {"tensorflow": "2.15.0"}
    path = write_fixture(tmp_path, document)
    for fmt in ("text", "json"):
        done = doctor(
            ["check", "--fixture", str(path), "--format", fmt, "-v" if fmt == "text" else "--no-color"], timeout=30
        )
        assert done.returncode in (0, 1), done.stderr
        assert done.elapsed < 10


BOMB = """\
schema: machine-fixture/1
name: alias-bomb
os: linux
env: {PATH: /usr/bin}
files: {}
pythons:
  - executable: /usr/bin/python3
    version: "3.11.7"
    current: true
    frameworks:
      torch:
        version: "2.1.0"
        a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
        b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
        c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
        d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
        e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
        f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
        g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
        h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
        i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


@pytest.mark.live
@POSIX
@pytest.mark.parametrize("args", [["--format", "json"], ["-v", "--no-color"]])
def test_yaml_alias_bomb_is_refused_quickly(tmp_path, args):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB, encoding="utf-8")
    done = doctor(["check", "--fixture", str(path), *args], timeout=30, memory=2 << 30)
    one_line_error(done)
    assert "alias" in done.stderr
    assert done.elapsed < 10


def test_yaml_aliases_are_bounded_not_banned(tmp_path):
    """`yaml.safe_dump` writes a list used twice as an alias (the shared fixtures have them): fine. One that contains itself is not."""
    from cudnn_doctor.system.fixture_format import load_fixture

    path = tmp_path / "aliased.yaml"
    path.write_text(
        "schema: machine-fixture/1\nname: &n harmless\ndescription: *n\nos: linux\nenv: {}\nfiles: {/a.so: {rpath: &r [/x, /y]}, /b.so: {rpath: *r}}\n",
        encoding="utf-8",
    )
    assert load_fixture(path)["files"]["/b.so"]["rpath"] == ["/x", "/y"]
    path.write_text(
        "schema: machine-fixture/1\nname: n\nos: linux\nenv: {}\nfiles: {}\n"
        "pythons: [{executable: /p, version: '3.11', frameworks: {torch: &t {inner: [*t]}}}]\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match="refers to a value that contains it"):
        load_fixture(path)


# 12. Output ----------------------------------------------------------------------------------


@pytest.mark.live
@pytest.mark.parametrize("encoding", ["cp1252", "ascii", "latin-1"])
@pytest.mark.parametrize("verbose", [False, True])
def test_text_report_on_any_output_encoding(tmp_path, encoding, verbose):
    document = machine(
        LINUX_BASE,
        nvml=None,
        env={"PATH": "/usr/local/bin:/opt/caf\u00e9/\u65e5\u672c:/usr/bin"},
        files={
            "/usr/local/cuda-12.4/bin/nvcc": {"size": 100000},
            "/usr/local/bin/nvcc": {"link": "/usr/local/cuda-12.4/bin/nvcc"},
        },
    )
    path = write_fixture(tmp_path, document)
    done = doctor(
        ["check", "--fixture", str(path), "--no-color", *(["-v"] if verbose else [])],
        env={**os.environ, "PYTHONIOENCODING": encoding},
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stderr == ""
    text = done.stdout_bytes.decode(encoding)
    assert "[X] NVIDIA driver and GPU" in text
    assert "X error no-nvidia-gpu" in text
    if verbose:
        assert "nvcc on PATH: /usr/local/bin/nvcc -> /usr/local/cuda-12.4/bin/nvcc" in text


@pytest.mark.live
def test_text_report_keeps_its_marks_on_utf8(tmp_path):
    done = doctor(
        ["check", "--fixture", str(write_fixture(tmp_path, machine(LINUX_BASE))), "--no-color"],
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert done.returncode == 0
    assert "[\u2713] NVIDIA driver and GPU" in done.stdout


@pytest.mark.live
@LINUX
@pytest.mark.parametrize("args", [["--no-color"], ["--format", "json"], ["-v", "--no-color"]])
def test_full_disk_on_stdout_is_one_line_exit_2(tmp_path, args):
    path = write_fixture(tmp_path, machine(LINUX_BASE))
    with open("/dev/full", "wb") as full:
        done = doctor(["check", "--fixture", str(path), *args], stdout=full)
    one_line_error(done)
    assert "No space left on device" in done.stderr
    assert "Exception ignored" not in done.stderr


@pytest.mark.live
@POSIX
@pytest.mark.parametrize("args", [["--no-color"], ["-v", "--no-color"], ["--format", "json"]])
def test_closed_pipe_on_stdout_is_quiet(tmp_path, args):
    path = write_fixture(tmp_path, machine(LINUX_BASE, nvml=None))
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before the first byte, as with `| head -0`
    try:
        done = doctor(["check", "--fixture", str(path), *args], stdout=writer)
    finally:
        os.close(writer)
    assert done.returncode in (0, 1)
    assert done.stderr == "", done.stderr


@pytest.mark.live
@POSIX
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_snapshot_of_a_non_utf8_environment_writes_and_replays(tmp_path, suffix):
    odd_dir = os.fsencode(str(tmp_path)) + b"/caf\xe9-\xff"
    os.mkdir(odd_dir)
    env = {k: v for k, v in os.environb.items() if not k.startswith((b"CONDA", b"VIRTUAL_ENV"))}
    env.update(
        {
            b"CUDA_DOCTOR_ODD": b"caf\xe9\xff",
            b"PATH": odd_dir + b":" + os.environb.get(b"PATH", b"/usr/bin"),
            b"CUDNN_AUTOTUNE": b"\xff",
        }
    )
    out = tmp_path / f"machine{suffix}"
    done = doctor(["snapshot", "--no-frameworks", "-o", str(out)], env=env)
    assert done.returncode == 0, done.stderr
    from cudnn_doctor.system.fixture_format import load_fixture

    document = load_fixture(out)
    assert os.fsencode(document["env"]["CUDA_DOCTOR_ODD"]) == b"caf\xe9\xff"  # lossless
    assert os.fsencode(document["env"]["PATH"]).startswith(odd_dir)
    for args in (["--no-color", "-v"], ["--format", "json"]):
        replay = doctor(["check", "--fixture", str(out), *args], env={**os.environ, "PYTHONIOENCODING": "utf-8"})
        assert replay.returncode in (0, 1), replay.stderr
        assert "Traceback" not in replay.stderr
    live = doctor(["check", "--no-frameworks", "-v", "--no-color"], env=env)
    assert live.returncode in (0, 1) and "Traceback" not in live.stderr, live.stderr
    to_stdout = doctor(["snapshot", "--no-frameworks"], env=env)
    assert to_stdout.returncode == 0 and "Traceback" not in to_stdout.stderr, to_stdout.stderr


# 13. No false health ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stdout",
    ["", "\n", "hello\nworld\n", "NVIDIA-SMI 550.54\n| nothing here |\n"],
    ids=["empty", "blank", "garbage", "no-driver-line"],
)
def test_nvidia_smi_output_not_understood_is_not_a_healthy_driver(tmp_path, capsys, stdout):
    document = machine(
        LINUX_BASE, nvml=None, commands={"nvidia-smi": {"returncode": 0, "stdout": stdout, "stderr": ""}}
    )
    diagnosis = run(document)
    assert not diagnosis.facts.driver.present
    assert diagnosis.facts.driver.smi_error.startswith("nvidia-smi: output not understood")
    finding = next(f for f in diagnosis.findings if f.id == "no-nvidia-gpu")
    assert "output not understood" in finding.detail
    assert finding.evidence["nvidia_smi"] == diagnosis.facts.driver.smi_error
    assert main(["check", "--fixture", str(write_fixture(tmp_path, document)), "--no-color"]) == 1
    out = capsys.readouterr().out
    assert "No issues found" not in out and "driver None" not in out


def test_nvidia_smi_table_is_still_understood():
    table = (
        "| NVIDIA-SMI 550.144.03   Driver Version: 550.144.03   CUDA Version: 12.4 |\n"
        "|   0  NVIDIA GeForce RTX 4090        Off  |\n| 30%   35C    P8    20W / 450W |   1MiB / 24564MiB |\n"
    )
    document = machine(LINUX_BASE, nvml=None, commands={"nvidia-smi": {"returncode": 0, "stdout": table}})
    driver = run(document).facts.driver
    assert driver.present and driver.version == "550.144.03" and driver.smi_error is None


# 14. Command-line values --------------------------------------------------------------------


@pytest.mark.live
@pytest.mark.parametrize("kind", ["missing", "directory", "fixture-unknown"])
def test_which_python_must_be_an_interpreter(tmp_path, capsys, kind):
    args = ["which", "libcudart.so.12"]
    if kind == "missing":
        args += ["--python", str(tmp_path / "no" / "python")]
    elif kind == "directory":
        args += ["--python", str(tmp_path)]
    else:
        args += ["--python", "/opt/other/bin/python", "--fixture", str(write_fixture(tmp_path, machine(LINUX_BASE)))]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--python" in err


@pytest.mark.parametrize("name", ["", "   ", "lib\0cudnn"])
def test_which_needs_a_library_name(tmp_path, capsys, name):
    """Issue 31: `which ""` is a usage error (exit 2, one line), not a search for nothing."""
    path = write_fixture(tmp_path, machine(LINUX_BASE))
    assert main(["which", name, "--fixture", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "library name" in err


def test_which_exits_1_when_a_library_or_its_dependency_is_missing(tmp_path, capsys):
    """Issue 31: a library that is not found, or whose imports are not, is exit 1; one that loads whole is exit 0."""
    path = write_fixture(tmp_path, machine(LINUX_BASE))
    assert main(["which", "libcudnn.so.9", "--fixture", str(path)]) == 1
    capsys.readouterr()


def test_which_python_of_the_fixture_is_accepted(tmp_path, capsys):
    path = write_fixture(tmp_path, machine(LINUX_BASE))
    assert main(["which", "libc.so.6", "--python", "/home/dev/.venv/bin/python", "--fixture", str(path)]) in (0, 1)
    assert capsys.readouterr().err == ""


@pytest.fixture
def quick_snapshot(monkeypatch):
    """The writing of `snapshot -o` is under test here, not the probes: record a tiny machine."""
    from cudnn_doctor.cli import snapshot

    document = machine(LINUX_BASE)
    monkeypatch.setattr(snapshot, "take_snapshot", lambda *args, **kwargs: document)
    return document


def test_snapshot_refuses_to_overwrite_without_force(tmp_path, capsys, quick_snapshot):
    out = tmp_path / "machine.yaml"
    out.write_text("precious\n")
    assert main(["snapshot", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--force" in err
    assert out.read_text() == "precious\n"
    assert main(["snapshot", "-o", str(out), "--force"]) == 0
    assert yaml.safe_load(out.read_text())["name"] == quick_snapshot["name"]
    assert [p.name for p in tmp_path.iterdir()] == ["machine.yaml"]  # no temporary file left behind


@POSIX
@pytest.mark.parametrize("dangling", [False, True])
def test_snapshot_never_writes_through_a_link(tmp_path, capsys, quick_snapshot, dangling):
    victim = tmp_path / "victim.txt"
    if not dangling:
        victim.write_text("keep me\n")
    link = tmp_path / "machine.yaml"
    link.symlink_to(victim)
    assert main(["snapshot", "-o", str(link)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["snapshot", "-o", str(link), "--force"]) == 0
    assert not link.is_symlink()
    assert yaml.safe_load(link.read_text())["name"] == quick_snapshot["name"]
    if dangling:
        assert not victim.exists()
    else:
        assert victim.read_text() == "keep me\n"


def test_snapshot_into_a_folder_is_one_line_exit_2(tmp_path, capsys, quick_snapshot):
    assert main(["snapshot", "-o", str(tmp_path), "--force"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
