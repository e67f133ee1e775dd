"""Issue 28: every file a user hands the doctor goes through one hardened reader (`cudnn_doctor.system.untrusted`).

`--kb` gets what `--fixture` had (FIFO, /dev/zero, alias bomb) and both get what neither had
(deep nesting, huge integers, non-string and repeated keys refused in one line, exit 2); a
fixture's `source` cannot reach the host's files; `fleet --from` reports special files as nodes in
error; an archive that is both a zip and a tar is refused; `verify --python` takes a relative path.
Whatever could hang or eat memory runs in a child with a deadline and a memory limit.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cudnn_doctor.system.untrusted as untrusted
from cudnn_doctor.cli import main
from cudnn_doctor.errors import InputError
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.fixture_format import load_fixture
from tests.conftest import LINUX_BASE, machine
from tests.unit.system.test_robustness import BOMB, doctor, one_line_error

POSIX = pytest.mark.skipif(os.name != "posix", reason="FIFOs, /dev/zero and RLIMIT_AS are POSIX")

KB_BOMB = "torch:\n  releases: []\n" + "".join(
    f"x{i}: &{chr(97 + i)} [{', '.join([f'*{chr(96 + i)}'] * 9 if i else ['lol'] * 9)}]\n" for i in range(9)
)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def fixture_text(**extra: object) -> str:
    return yaml.safe_dump(machine(LINUX_BASE, **extra))


# --kb: what --fixture already had ------------------------------------------------------------------------


def _special(tmp_path: Path, kind: str) -> str:
    if kind == "fifo":
        os.mkfifo(tmp_path / "kb.yaml")
        return str(tmp_path / "kb.yaml")
    if kind == "bomb":
        return str(write(tmp_path, "kb.yaml", KB_BOMB))
    return kind  # /dev/zero


@pytest.mark.live
@POSIX
@pytest.mark.parametrize(
    ("kind", "message"), [("fifo", "not a regular file"), ("/dev/zero", "not a regular file"), ("bomb", "alias")]
)
def test_kb_fifo_dev_zero_and_alias_bomb_are_one_line_exit_2_at_once(tmp_path, kind, message):
    """Before: a FIFO blocked for ever, /dev/zero and the bomb ran until memory ran out (here: the 2 GiB limit, a traceback)."""
    fixture = write(tmp_path, "m.yaml", fixture_text())
    done = doctor(
        ["check", "--no-frameworks", "--fixture", str(fixture), "--kb", _special(tmp_path, kind)],
        timeout=30,
        memory=2 << 30,
    )
    one_line_error(done)
    assert message in done.stderr
    assert done.elapsed < 10


DEEP = "torch:\n  releases: " + "[" * 5000 + "]" * 5000 + "\n"
HUGE = (
    "torch:\n  releases:\n    - {version: '2.15', python: '>=3.10', cuda: ['12.6'], source: 'https://x', n: "
    + "9" * 5000
    + "}\n"
)
BAD_KB = {
    "deep nesting": (DEEP, "nested deeper than 64 levels"),
    "deep JSON": ('{"torch": ' + "[" * 5000 + "]" * 5000 + "}", "nested deeper than 64 levels"),
    "huge integer": (HUGE, "has more than 40 digits"),
    "64-bit overflow": ("torch: {releases: [{n: 18446744073709551616}]}\n", "does not fit in 64 bits"),
    "huge JSON integer": ('{"torch": {"releases": [' + "9" * 5000 + "]}}", "has more than 40 digits"),
    "integer key": ("1: x\n", "the key 1 is int, not a string"),
    "list key": ("? [a, b]\n: x\n", "the key ['a', 'b'] is list, not a string"),
    "mapping key": ("? {a: 1}\n: x\n", "is dict, not a string"),
    "null key": ("torch:\n  ~: x\n", "the key None is NoneType"),
    "bad date": ("torch:\n  reviewed: 2024-13-45\n", "not valid YAML"),
    "repeated key": ("torch: {}\ntorch: {}\n", "line 2: key 'torch' given twice"),
    "repeated JSON key": ('{"torch": {}, "torch": {}}', "key 'torch' given twice"),
}


@pytest.mark.parametrize(("text", "message"), BAD_KB.values(), ids=BAD_KB.keys())
def test_a_hostile_kb_file_is_one_line_exit_2_never_a_traceback(tmp_path, capsys, text, message):
    """Before: deep nesting, the huge integers (Python's 4300-digit limit), non-string keys and the bad date ended in tracebacks."""
    fixture = write(tmp_path, "m.yaml", fixture_text())
    kb = write(tmp_path, "kb.json" if text.startswith("{") else "kb.yaml", text)
    code = main(["check", "--no-frameworks", "--fixture", str(fixture), "--kb", str(kb)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith(f"cudnn-doctor: error: {kb}: "), err
    assert message in err


# --fixture: what neither had ----------------------------------------------------------------------------


BAD_FIXTURE = {
    "repeated key": (
        "m.yaml",
        fixture_text().replace("os: linux\n", "os: linux\nos: windows\n"),
        "key 'os' given twice",
    ),
    "repeated env key": (
        "m.yaml",
        fixture_text(env={"PATH": "/usr/bin"}).replace("  PATH: /usr/bin\n", "  PATH: /usr/bin\n  PATH: /evil\n"),
        "key 'PATH' given twice",
    ),
    "repeated JSON key": (
        "m.json",
        json.dumps(machine(LINUX_BASE))[:-1] + ', "os": "windows"}',
        "key 'os' given twice",
    ),
    "deep nesting": (
        "m.yaml",
        fixture_text() + "description: " + "[" * 100 + "]" * 100 + "\n",
        "nested deeper than 64 levels",
    ),
    "huge integer": (
        "m.yaml",
        fixture_text(files={"/a.so": {"size": 1}}).replace("size: 1", "size: " + "1" * 5000),
        "more than 40 digits",
    ),
    "integer key": ("m.yaml", fixture_text() + "7: x\n", "the key 7 is int"),
}


@pytest.mark.parametrize(("name", "text", "message"), BAD_FIXTURE.values(), ids=BAD_FIXTURE.keys())
def test_a_hostile_fixture_is_one_line_exit_2(tmp_path, capsys, name, text, message):
    """Before: a repeated key was silently last-wins (`os: windows` replayed a Windows machine); the rest were tracebacks or odd messages."""
    path = write(tmp_path, name, text)
    code = main(["check", "--no-frameworks", "--fixture", str(path)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith(f"cudnn-doctor: error: {name}: "), err
    assert message in err


@pytest.mark.live
@POSIX
@pytest.mark.parametrize("kind", ["fifo", "bomb", "huge"])
def test_the_fixture_reader_stays_hardened(tmp_path, kind):
    path = tmp_path / "m.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "bomb":
        path.write_text(BOMB, encoding="utf-8")
    else:
        with open(path, "wb") as handle:
            handle.truncate(100 << 20)  # sparse
    done = doctor(["check", "--fixture", str(path)], timeout=30, memory=2 << 30)
    one_line_error(done)
    assert done.elapsed < 10


# a fixture's `source` -----------------------------------------------------------------------------------


ELF = b"\x7fELF\x02\x01\x01" + bytes(57)


def _source_fixture(folder: Path, source: str) -> Path:
    return write(folder, "m.yaml", fixture_text(files={"/opt/lib/libx.so": {"source": source}}))


@pytest.mark.parametrize("how", ["absolute", "dotdot", "link out", "state file"])
def test_a_fixture_source_never_reads_the_host(tmp_path, monkeypatch, how):
    """Before: `source: /etc/...`, `../x`, a link out of the folder or the host's state file were read (size and headers)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.so"
    secret.write_bytes(ELF + b"secret" * 100)
    folder = tmp_path / "fixtures"
    folder.mkdir()
    if how == "absolute":
        source = str(secret)
    elif how == "dotdot":
        source = "../outside/secret.so"
    elif how == "link out":
        if not hasattr(os, "symlink"):
            pytest.skip("no symbolic links")
        try:
            (folder / "inside.so").symlink_to(secret)
        except OSError:
            pytest.skip("symbolic links not permitted here")
        source = "inside.so"
    else:
        state = outside / "state"
        state.mkdir()
        (state / "journal.jsonl").write_text('{"state": "in-progress"}\n', encoding="utf-8")
        monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(state))
        source = str(state / "journal.jsonl")
    path = _source_fixture(folder, source)
    with pytest.raises(InputError, match=r"^m\.yaml: files\['/opt/lib/libx\.so'\]\.source: "):
        FixtureSystem.from_file(path)
    with pytest.raises(InputError):  # and through a document with an origin, as `fleet --from` builds it
        FixtureSystem(load_fixture(path), origin=path)


def test_a_source_inside_the_folder_still_reads(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "libx.so").write_bytes(ELF)
    system = FixtureSystem.from_file(_source_fixture(tmp_path, "sub/libx.so"))
    assert system.stat("/opt/lib/libx.so").size == len(ELF)


@POSIX
def test_a_fifo_source_is_refused_not_opened(tmp_path):
    os.mkfifo(tmp_path / "libx.so")
    with pytest.raises(InputError, match="not a regular file"):
        FixtureSystem.from_file(_source_fixture(tmp_path, "libx.so"))


# fleet --from ---------------------------------------------------------------------------------------------


@POSIX
def test_special_files_among_snapshots_are_nodes_in_error(tmp_path, capsys):
    """Before: the FIFO, the link to a device and the dangling link were dropped without a word (exit 0, one node)."""
    folder = tmp_path / "snaps"
    folder.mkdir()
    write(folder, "good.yaml", fixture_text())
    os.mkfifo(folder / "fifo.yaml")
    (folder / "device.json").symlink_to("/dev/zero")
    (folder / "gone.yaml").symlink_to(folder / "nothing")
    code = main(["fleet", "--from", str(folder), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    nodes = {n["node"]: n for n in document["nodes"]}
    assert sorted(nodes) == ["device", "fifo", "gone", "good"]
    assert code == 1
    for name in ("device", "fifo"):
        assert nodes[name]["status"] == "error" and "not a regular file" in nodes[name]["error"]
    assert nodes["gone"]["status"] == "error" and "no such fixture file" in nodes["gone"]["error"]
    fifo_alone = main(["fleet", "--from", str(folder / "fifo.yaml"), "--format", "json"])
    assert fifo_alone == 1 and json.loads(capsys.readouterr().out)["nodes"][0]["status"] == "error"


def test_a_snapshot_with_a_source_out_of_its_folder_is_a_node_in_error(tmp_path, capsys):
    folder = tmp_path / "snaps"
    folder.mkdir()
    (tmp_path / "secret.so").write_bytes(ELF)
    _source_fixture(folder, "../secret.so")
    assert main(["fleet", "--from", str(folder), "--format", "json"]) == 1
    (node,) = json.loads(capsys.readouterr().out)["nodes"]
    assert node["status"] == "error" and "inside the fixture's folder" in node["error"]


# install: an archive of two kinds ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cudnn.zip", "cudnn.tar.xz", "cudnn.tar.gz", "cudnn.tar"])
def test_an_archive_that_is_both_a_tar_and_a_zip_is_refused(tmp_path, name):
    """Before: read as the zip (the tar's files never looked at) whatever its name said."""
    from cudnn_doctor.system.archive import Archive

    path = tmp_path / name
    with tarfile.open(path, "w") as tar:
        data = b"tar side"
        info = tarfile.TarInfo("cudnn/include/cudnn_version.h")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with zipfile.ZipFile(
        path, "a"
    ) as archive:  # appended: the zip's directory is at the end, the tar's header at the start
        archive.writestr("cudnn/include/cudnn_version.h", "zip side")
    assert zipfile.is_zipfile(path) and tarfile.is_tarfile(path)
    with pytest.raises(InputError, match="both a valid zip and a valid tar"):
        Archive(path)


# verify --python with a relative path ---------------------------------------------------------------------


@pytest.mark.live
def test_verify_python_relative_path_reaches_the_worker(tmp_path, monkeypatch, capsys):
    """Before: the check passed (relative to the current folder), then the worker, run in a sandbox folder, could not start."""
    import sys

    from cudnn_doctor.verify import run as verifying

    try:
        relative = os.path.relpath(sys.executable, tmp_path)  # this interpreter, named from the test's folder
    except ValueError:  # another drive (Windows): no relative path to it
        pytest.skip("the interpreter is on another drive")
    monkeypatch.chdir(tmp_path)
    seen = {}

    class Stop(Exception):
        pass

    def fake_run(system, executable, frameworks, quick, progress, cpu_only=False):
        seen["executable"] = executable
        seen["done"] = system.run_script(executable, "import sys; print('alive')", [], 60)
        raise Stop

    monkeypatch.setattr(verifying, "run", fake_run)
    monkeypatch.setattr(verifying, "installed", lambda system, executable: ["torch"])
    with pytest.raises(Stop):
        main(["verify", "--python", relative, "--framework", "torch"])
    assert os.path.isabs(seen["executable"]) and os.path.samefile(seen["executable"], sys.executable)
    assert "alive" in str(seen["done"])


# the reader itself -----------------------------------------------------------------------------------------


def test_aliases_within_the_limit_and_merges_still_read():
    document = untrusted.parse("base: &b {x: 1, y: 2}\nuse: {<<: *b, y: 3}\nlist: &l [1, 2]\nagain: *l\n", "t.yaml")
    assert document == {"base": {"x": 1, "y": 2}, "use": {"x": 1, "y": 3}, "list": [1, 2], "again": [1, 2]}


def test_the_limits_are_exact():
    nested = "[" * untrusted.MAX_DEPTH + "]" * untrusted.MAX_DEPTH
    assert untrusted.parse(nested, "t.yaml") is not None
    assert untrusted.parse(nested, "t.json", json_text=True) is not None
    for text, as_json in ((f"[{nested}]", False), (f"[{nested}]", True)):
        with pytest.raises(InputError, match="nested deeper than 64"):
            untrusted.parse(text, "t", json_text=as_json)
    assert untrusted.parse(f"n: {(1 << 64) - 1}\n", "t.yaml") == {"n": (1 << 64) - 1}
    with pytest.raises(InputError, match="64 bits"):
        untrusted.parse(f"n: {1 << 64}\n", "t.yaml")


@POSIX
def test_read_file_judges_the_size_before_reading(tmp_path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as handle:
        handle.truncate(10 << 30)  # sparse: 10 GiB, read in no time or not at all
    with pytest.raises(InputError, match="larger than 64 MiB"):
        untrusted.read_file(path, "fixture file")


# Random YAML and JSON: an InputError or a document, never another exception ----------------------------------

_scalars = st.one_of(
    st.integers(min_value=-(10**60), max_value=10**60).map(str),
    st.sampled_from(
        ["a", "~", "yes", "1.5", "2024-13-45", ".inf", "'q'", "!!binary x", "&a", "*a", "*b", "!!set {a}", "<<"]
    ),
)


def _yaml_node(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _scalars
    inner = _yaml_node(depth - 1)
    anchored = st.tuples(st.sampled_from(["", "&a ", "&b "]), inner).map("".join)
    return st.one_of(
        inner,
        st.lists(anchored, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(
            st.tuples(st.one_of(anchored, st.sampled_from(["[x]", "{k: v}", "1", "k"])), anchored), max_size=4
        ).map(lambda pairs: "{" + ", ".join(f"? {k} : {v}" for k, v in pairs) + "}"),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_yaml_node(6), prefix=st.sampled_from(["", "[" * 70, "x: &a [1, 2]\ny: "]))
def test_random_yaml_is_a_document_or_one_line_input_error(text, prefix):
    try:
        untrusted.parse(prefix + text, "r.yaml")
    except InputError as error:
        assert "\n" not in str(error) and str(error).startswith("r.yaml: ")


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300) | st.text(alphabet='{}[]":,0123456789-e.truenullfals ', max_size=300))
def test_random_bytes_are_a_document_or_one_line_input_error(data):
    for as_json in (True, False):
        try:
            untrusted.parse(data, "r", json_text=as_json)
        except InputError as error:
            assert "\n" not in str(error)


# verify's history file ------------------------------------------------------------------------------------


@pytest.mark.live
def test_a_hostile_line_in_the_verify_history_is_skipped(tmp_path, monkeypatch):
    """Before: a line nested 100,000 deep ended `verify --compare` in a RecursionError traceback."""
    from cudnn_doctor.system.live import LiveSystem
    from cudnn_doctor.verify import history

    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(tmp_path))
    good = {"time": 1, "gpu": "G", "driver": "1", "frameworks": {"torch": {"medians": {}}}}
    lines = [
        json.dumps(good),
        "[" * 100_000 + "]" * 100_000,
        '{"gpu": "G", "frameworks": {}, "n": ' + "9" * 5000 + "}",
        '{"gpu": "G", "gpu": "G", "frameworks": {}}',
    ]
    (tmp_path / history.FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert history.last(LiveSystem(), "G") == good
