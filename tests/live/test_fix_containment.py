"""One containment rule for every write of `fix`, `rollback` and recovery, on real files with real links.

Before each write the real path of the destination's folder must lie inside the real path of the
folder the step may change (the toolkit, the quarantine, the folder a file was moved from), and a
step whose destination lies below a link the same fix moves is refused when it is planned. A
toolkit subfolder that is a link to a shared cuDNN folder elsewhere is a link, not a nested copy.
The last test states the rule as a property over generated trees of folders, files and links.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence

import hypothesis
import pytest
from hypothesis import strategies as st

from cudnn_doctor.errors import CudnnDoctorError
from cudnn_doctor.fixes import MoveFile, MoveTree
from cudnn_doctor.install import transaction
from cudnn_doctor.install.fix import expand

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        sys.platform == "win32", reason="symbolic links: Wine makes none (os.symlink succeeds and leaves nothing)"
    ),
]


def state_of(root: Path) -> dict[str, Any]:
    """Every file (bytes), link (target) and folder below `root`, links never followed."""
    found: dict[str, Any] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            key = str(path.relative_to(root))
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_dir():
                found[key] = "folder"
            else:
                found[key] = path.read_bytes()
    return found


def live() -> Any:
    from cudnn_doctor.system.live import LiveSystem

    return LiveSystem()


def nested_changes(toolkit: Path, top: Path) -> list[Any]:
    """What the cudnn-nested-layout planner returns for a Linux toolkit (each destination's folder the toolkit)."""
    pairs = [("include", "include"), ("lib", "lib64"), ("lib64", "lib64")]
    return [*(MoveTree(str(top / sub), str(toolkit / dest)) for sub, dest in pairs), MoveTree(str(top))]


def run_fix(
    system: Any, state: Path, changes: Sequence[Any], txid: str = "t1", before_apply: Optional[Any] = None
) -> dict[str, Any]:
    store = transaction.Store(system, str(state))
    with store.locked():
        transaction.recover(store)
        expanded = expand(system, changes, store.quarantine_path(txid))
        if before_apply is not None:
            before_apply()
        return transaction.apply_fix(expanded.steps, store, txid, "fix: test", "folder", env_changes=expanded.env)


def run_rollback(system: Any, state: Path) -> transaction.UndoReport:
    store = transaction.Store(system, str(state))
    with store.locked():
        if transaction.recover(store):
            return transaction.UndoReport([], [], [], [])
        return transaction.rollback_last(store)[1]


def toolkit_with_nested(tmp_path: Path) -> tuple[Path, Path, Path]:
    machine = tmp_path / "machine"
    toolkit = machine / "cuda-12.4"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "bin" / "nvcc").write_bytes(b"nvcc")
    (toolkit / "lib64").mkdir()
    (toolkit / "lib64" / "libcudart.so.12").write_bytes(b"\x7fELF cudart")
    top = toolkit / "cudnn-linux-x86_64-9.1.0.70_cuda12-archive"
    (top / "include").mkdir(parents=True)
    (top / "include" / "cudnn.h").write_bytes(b"/* cudnn 9.1 */")
    (top / "lib").mkdir()
    (top / "lib" / "libcudnn.so.9.1.0").write_bytes(b"\x7fELF cudnn 9.1")
    os.symlink("libcudnn.so.9.1.0", top / "lib" / "libcudnn.so.9")
    outside = machine / "etc"
    outside.mkdir()
    (outside / "passwd").write_bytes(b"root:x:0:0")
    return machine, toolkit, top


def test_a_file_is_never_moved_through_a_link_the_same_fix_moved(tmp_path):
    """lib/x is a link to a folder outside; lib64/x/ a real folder: moving lib/x first and then lib64/x/passwd
    into lib64/x/ would write through the moved link. Refused when planned; nothing anywhere changes."""
    machine, toolkit, top = toolkit_with_nested(tmp_path)
    os.symlink(str(machine / "etc"), top / "lib" / "x")
    (top / "lib64" / "x").mkdir(parents=True)
    (top / "lib64" / "x" / "passwd").write_bytes(b"owned")
    before = state_of(machine)
    with pytest.raises(CudnnDoctorError, match="link"):
        run_fix(live(), tmp_path / "state", nested_changes(toolkit, top))
    assert state_of(machine) == before
    assert (machine / "etc" / "passwd").read_bytes() == b"root:x:0:0"


def test_a_toolkit_folder_that_is_a_link_out_of_the_toolkit_is_refused(tmp_path):
    """lib64 links to a folder outside the toolkit: the nested copy's libraries would land there."""
    machine, toolkit, top = toolkit_with_nested(tmp_path)
    shared = machine / "shared-lib"
    shutil.move(str(toolkit / "lib64"), shared)
    os.symlink(str(shared), toolkit / "lib64")
    before = state_of(machine)
    with pytest.raises(CudnnDoctorError, match="outside"):
        run_fix(live(), tmp_path / "state", nested_changes(toolkit, top))
    assert state_of(machine) == before


def test_a_linked_cudnn_folder_in_a_toolkit_is_a_link_not_a_nested_copy(tmp_path):
    """<toolkit>/cudnn links to a cuDNN shared by several toolkits: never emptied into this one."""
    machine, toolkit, _ = toolkit_with_nested(tmp_path)
    shared = machine / "opt" / "cudnn-9.1"
    (shared / "include").mkdir(parents=True)
    (shared / "include" / "cudnn.h").write_bytes(b"/* shared */")
    (shared / "lib").mkdir()
    (shared / "lib" / "libcudnn.so.9").write_bytes(b"\x7fELF shared")
    linked = toolkit / "cudnn"
    os.symlink(str(shared), linked)
    before = state_of(machine)
    system = live()
    store = transaction.Store(system, str(tmp_path / "state"))
    expanded = expand(system, nested_changes(toolkit, linked), store.quarantine_path("t1"))
    assert expanded.steps == [] and any("link" in note for note in expanded.notes), expanded
    assert state_of(machine) == before


def test_a_folder_swapped_for_a_link_after_the_plan_is_refused_at_the_write(tmp_path):
    """The plan was fine; before the fix writes, include/ becomes a link out of the toolkit: the real path is
    resolved again before every write, the fix refuses and undoes what it did, and nothing lands outside."""
    machine, toolkit, top = toolkit_with_nested(tmp_path)
    (toolkit / "include").mkdir()
    (toolkit / "include" / "cuda.h").write_bytes(b"cuda")
    before = state_of(machine)

    def swap() -> None:
        shutil.move(str(toolkit / "include"), machine / "elsewhere")
        os.symlink(str(machine / "elsewhere"), toolkit / "include")

    with pytest.raises(CudnnDoctorError, match="outside"):
        run_fix(live(), tmp_path / "state", nested_changes(toolkit, top), before_apply=swap)
    assert not (machine / "elsewhere" / "cudnn.h").exists()
    os.unlink(toolkit / "include")
    shutil.move(str(machine / "elsewhere"), toolkit / "include")
    assert state_of(machine) == before


def test_rollback_never_writes_through_a_folder_swapped_for_a_link(tmp_path):
    """After a quarantine, the folder the file came from becomes a link elsewhere: rollback refuses to put the
    file back through it (and says so), and writes nothing there."""
    machine = tmp_path / "machine"
    folder = machine / "usr" / "lib"
    folder.mkdir(parents=True)
    (folder / "libcudnn.so.8").write_bytes(b"\x7fELF stray")
    (machine / "attacker").mkdir()
    system = live()
    run_fix(system, tmp_path / "state", [MoveFile(str(folder / "libcudnn.so.8"))])
    os.rmdir(folder)
    os.symlink(str(machine / "attacker"), folder)
    report = run_rollback(system, tmp_path / "state")
    assert report.failed and "outside" in report.summary()
    assert list((machine / "attacker").iterdir()) == []
    os.unlink(folder)
    folder.mkdir()
    assert run_rollback(system, tmp_path / "state").complete  # the folder is a folder again: the rollback finishes
    assert (folder / "libcudnn.so.8").read_bytes() == b"\x7fELF stray"


# The rule as a property: generated toolkits with nested copies, links inside and out ------------------------------


NAMES = ["a", "b", "x", "lib", "lib64", "include"]
LINK_TARGETS = ["OUT", "OUT/sub", "SHARED", "TK/lib64", "TK/include", "../..", "..", "a", "../x", "../../../.."]


def node() -> Any:
    return st.deferred(
        lambda: st.one_of(
            st.tuples(st.just("file"), st.binary(min_size=0, max_size=8)),
            st.tuples(st.just("link"), st.sampled_from(LINK_TARGETS)),
            st.tuples(st.just("dir"), st.dictionaries(st.sampled_from(NAMES), node(), max_size=3)),
        )
    )


def folder_spec() -> Any:
    return st.dictionaries(st.sampled_from(NAMES), node(), max_size=4)


def build(folder: Path, spec: dict[str, Any], roots: dict[str, Path], depth: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, (kind, value) in spec.items():
        path = folder / name
        if kind == "file":
            path.write_bytes(value)
        elif kind == "link":
            head, _, rest = value.partition("/")
            os.symlink(str(roots[head] / rest) if head in roots else value, path)
        elif depth < 3:
            build(path, value, roots, depth + 1)


@hypothesis.settings(max_examples=60, deadline=None, suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(
    top=st.fixed_dictionaries({}, optional={"include": folder_spec(), "lib": folder_spec(), "lib64": folder_spec()}),
    toolkit_lib64=st.one_of(st.just(None), st.sampled_from(["OUT", "SHARED"])),
    top_is_link=st.booleans(),
)
def test_no_fix_writes_outside_its_folders_and_rollback_restores_everything(top, toolkit_lib64, top_is_link):
    """Whatever the links, a nested-layout fix changes nothing outside the toolkit (the quarantine aside), refuses
    rather than writes through a link, and `rollback` afterwards gives back every byte, link and folder."""
    base = Path(tempfile.mkdtemp(prefix="cdd-contain-"))
    try:
        machine, state = base / "machine", base / "state"
        toolkit, out, shared = machine / "tk", machine / "out", machine / "shared"
        roots = {"OUT": out, "SHARED": shared, "TK": toolkit}
        for folder in (out / "sub", shared / "lib64", toolkit / "include"):
            folder.mkdir(parents=True)
        (out / "keep").write_bytes(b"outside")
        (shared / "lib64" / "libshared.so").write_bytes(b"shared")
        if toolkit_lib64 is None:
            (toolkit / "lib64").mkdir()
        else:
            os.symlink(str(roots[toolkit_lib64] / ("lib64" if toolkit_lib64 == "SHARED" else "")), toolkit / "lib64")
        nested = toolkit / "cudnn"
        spec = {name: ("dir", folder) for name, folder in top.items()}
        if top_is_link:
            build(shared / "nested", spec, roots)
            os.symlink(str(shared / "nested"), nested)
        else:
            build(nested, spec, roots)
        before = state_of(machine)
        outside_before = {k: v for k, v in before.items() if not k.startswith("tk/")}
        system = live()
        try:
            run_fix(system, state, nested_changes(toolkit, nested))
        except CudnnDoctorError:
            assert state_of(machine) == before  # refused, or failed and undone: nothing changed anywhere
            return
        after = state_of(machine)
        assert {k: v for k, v in after.items() if not k.startswith("tk/")} == outside_before
        real_toolkit = os.path.realpath(toolkit)
        for key in set(after) ^ set(before) | {k for k in after if after.get(k) != before.get(k)}:
            assert os.path.realpath(machine / Path(key).parent).startswith(real_toolkit), key
        report = run_rollback(system, state)
        assert report.complete, report.summary()
        assert state_of(machine) == before
    finally:
        shutil.rmtree(base, ignore_errors=True)
