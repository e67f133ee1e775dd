"""The install's state folder is read back as any file a user could change: a hostile journal or history is one
line naming it (never a traceback), and the spool note keeps a folder's own bytes (issue 28)."""

from __future__ import annotations

import os
import sys

import pytest

from cudnn_doctor.errors import InputError
from cudnn_doctor.install import transaction
from cudnn_doctor.system.live import LiveSystem

HEADER = b'{"id": "20261206-000000-abcdef", "archive": "/a.tar.xz", "target": "/t", "steps": []}\n'


@pytest.mark.live
@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("journal.jsonl", HEADER + b"[" * 100_000 + b"\n"),  # json.loads: RecursionError
        ("history.json", b"[" * 100_000),
        (
            "history.json",
            b'[{"id": "a", "id": "b", "archive": "/a.zip", "target": "/t", "steps": [], "state": "installed"}]',
        ),  # last-wins before
    ],
    ids=[
        "journal-nested",
        "history-nested",
        "history-repeated-key",
    ],  # short: the id is in PYTEST_CURRENT_TEST (Windows caps a variable at 32,767)
)
def test_a_hostile_state_file_is_one_line_naming_it(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    store = transaction.Store(LiveSystem(), str(tmp_path))
    with pytest.raises(InputError, match=f"{name} is damaged"):
        store.journal() if name.endswith("jsonl") else store.history()


@pytest.mark.live
@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX file name of arbitrary bytes")
@pytest.mark.parametrize("tail", [b"a\nb", b"caf\xe9", b"x\xe2\x80\xa8y"])
def test_the_spool_note_keeps_the_folder_name_as_its_bytes(tmp_path, tail):
    """A killed install's spool folder is removed by the next run, whatever bytes its parent's name holds."""
    root = os.path.join(os.fsencode(tmp_path), b"tmp-" + tail)
    os.mkdir(root)
    store = transaction.Store(LiveSystem(), str(tmp_path / "state"))
    os.makedirs(store.root)
    with pytest.raises(KeyboardInterrupt), store.spooling(os.fsdecode(root)) as folder:
        assert folder is not None and os.path.isdir(folder)
        kept = folder
        raise KeyboardInterrupt
    os.mkdir(kept)  # as if the kill came before the clean-up ran
    with open(store.spool_note, "wb") as note:
        note.write(os.fsencode(kept) + b"\n")
    store.remove_leftovers()
    assert not os.path.exists(kept) and os.listdir(root) == []


@pytest.mark.parametrize("name", ["scan-cache.json", "native-names.json"])
def test_a_damaged_cache_in_the_state_folder_is_no_cache(tmp_path, monkeypatch, name):
    """The doctor's own caches are state files too: one nested 100,000 deep (json.loads: RecursionError) is ignored."""
    from cudnn_doctor.system.binaries.scan import _ScanCache
    from cudnn_doctor.system.native_cache import NativeNames

    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(tmp_path))
    (tmp_path / name).write_bytes(b"[" * 100_000)
    if name == "scan-cache.json":
        assert _ScanCache().by_file("anything") is None
    else:
        library = tmp_path / "lib.so"
        library.write_bytes(b"\x7fELF")
        assert NativeNames().names(str(library), lambda path: ("libcudart.so.12",)) == ("libcudart.so.12",)
