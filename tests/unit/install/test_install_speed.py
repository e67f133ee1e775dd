"""Install at the speed of reading the archive: one pass over it, spooled bytes renamed into place, cached scans."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

from cudnn_doctor.cli import main
from cudnn_doctor.install import apply as apply_module
from cudnn_doctor.install import transaction
from cudnn_doctor.install.archive_info import inspect
from cudnn_doctor.system.archive import Archive
from cudnn_doctor.system.binaries import scan
from cudnn_doctor.system.xz import xz_stream
from tests import archives
from tests.conftest import live_install

WINDOWS = sys.platform == "win32"


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    folder = tmp_path / "state"
    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(folder))
    return folder


def _count_tar_opens(monkeypatch) -> list[str]:
    """Every mode tarfile.open is called with (is_tarfile's sniff included)."""
    modes: list[str] = []
    real = tarfile.open

    def counting(name=None, mode="r", *args, **kwargs):
        modes.append(mode)
        return real(name, mode, *args, **kwargs)

    monkeypatch.setattr(tarfile, "open", counting)
    return modes


@pytest.mark.live
@pytest.mark.parametrize("xz", [True, False], ids=["xz-process", "python-lzma"])
def test_a_tar_is_read_once_as_a_stream_for_listing_version_machine_and_hashes(tmp_path, monkeypatch, xz):
    path = archives.linux_tar(tmp_path / "cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz")
    if xz and shutil.which("xz") is None:
        pytest.skip("no xz on PATH here: Python's lzma decompresses (the other case)")
    if not xz:  # no xz on PATH (Windows, a slim container): Python's lzma decompresses, still once
        monkeypatch.setattr(shutil, "which", lambda name: None)
    modes = _count_tar_opens(monkeypatch)
    archive = Archive(path, opener=xz_stream)
    info = inspect(archive)
    library = next(m for m in archive.members if m.is_file and ".so" in m.name)
    with tarfile.TarFile.open(
        path
    ) as whole:  # the truth, read apart (tarfile.TarFile.open is not the counted function)
        expected = whole.extractfile(whole.getmember(library.name)).read()
    assert archive.digest(library) == hashlib.sha256(expected).hexdigest()
    assert archive.read_head(library) == expected[: 1 << 16] and info.version == "8.9.7"
    archive.close()
    assert modes[1:] == ["r|" if xz else "r|*"], (
        modes
    )  # the sniff, then the one streaming pass (from xz's pipe, or the file)


def test_the_cuda_major_is_read_from_the_ops_library_in_the_same_pass(tmp_path, monkeypatch):
    """An archive renamed by its user: the name says no CUDA major, the ops library's cuBLAS name does."""
    path = archives.linux_tar(tmp_path / "cudnn.tar.xz", cuda=11)
    modes = _count_tar_opens(monkeypatch)
    archive = Archive(path)
    assert inspect(archive).cuda_major == 11
    archive.close()
    assert [m for m in modes if m.startswith("r|")] == [modes[1]] and len(modes) == 2, modes


@pytest.mark.live
@pytest.mark.skipif(WINDOWS, reason="a Linux archive")
@live_install
def test_the_install_renames_spooled_files_and_leaves_no_spool(tmp_path, monkeypatch):
    target = archives.toolkit(tmp_path / "cuda-12.6")
    path = archives.linux_tar(tmp_path / "cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz")
    copied: list[str] = []
    real_copy = apply_module._copy_member
    monkeypatch.setattr(
        apply_module, "_copy_member", lambda *a, **k: copied.append(a[2].member.name) or real_copy(*a, **k)
    )
    modes = _count_tar_opens(monkeypatch)
    assert main(["install", str(path), "--into", str(target), "--yes"]) in (0, 1)
    assert copied == []  # every file was renamed from the spool, none read from the archive again
    assert len(modes) == 2 and modes[1].startswith("r|"), modes
    assert (target / "lib64" / "libcudnn.so.8.9.7").read_bytes()[:4] == b"\x7fELF"
    assert not [p for p in target.iterdir() if p.name.startswith(transaction.SPOOL_PREFIX)]
    assert main(["rollback"]) == 0


@pytest.mark.live
@pytest.mark.skipif(WINDOWS, reason="a Linux archive")
@live_install
def test_a_spool_left_by_a_killed_run_is_removed_by_the_next_rollback(tmp_path, state):
    target = archives.toolkit(tmp_path / "cuda-12.6")
    before = archives.tree(target)
    left = target / f"{transaction.SPOOL_PREFIX}0123456789ab"
    left.mkdir()
    (left / "00003").write_bytes(b"half an archive")
    state.mkdir()
    (state / "spool.txt").write_text(f"{left}\n")
    assert main(["rollback"]) == 0  # nothing to roll back (said, not an error), but the leftovers are gone first
    assert archives.tree(target) == before and not left.exists() and not (state / "spool.txt").exists()


@pytest.mark.live
def test_a_spool_note_never_removes_a_folder_of_another_name(tmp_path, state):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "file").write_text("keep")
    state.mkdir()
    (state / "spool.txt").write_text(f"{precious}\n")
    from cudnn_doctor.system.live import LiveSystem

    transaction.Store(LiveSystem()).remove_leftovers()
    assert (precious / "file").read_text() == "keep"


@pytest.fixture
def big_strings(tmp_path, monkeypatch) -> Path:
    """A file whose scanned bytes pass the caching threshold (lowered), with two names in it."""
    monkeypatch.setattr(scan, "CACHE_FROM", 1024)
    monkeypatch.setattr(scan, "_CACHE", scan._ScanCache())
    path = tmp_path / "libbig.so"
    path.write_bytes(b"\x00libcudnn_ops.so.9\x00" + bytes(4096) + b"\x00libcublasLt.so.12\x00")
    return path


def test_a_big_scan_is_cached_by_content_and_found_again_without_scanning(big_strings, monkeypatch, state):
    first = scan.library_names(str(big_strings), "elf")
    assert first == ["libcublasLt.so.12", "libcudnn_ops.so.9"]
    scan._CACHE.save()
    assert (state / "scan-cache.json").is_file()
    monkeypatch.setattr(scan, "_CACHE", scan._ScanCache())  # a new process: read from the file
    monkeypatch.setattr(scan, "_scan", lambda *a: pytest.fail("scanned again"))
    monkeypatch.setattr(
        scan, "_content_key", lambda *a: pytest.fail("hashed again: the file's identity should have found it")
    )
    assert scan.library_names(str(big_strings), "elf") == first


def test_a_copy_of_a_scanned_library_is_hashed_not_scanned(big_strings, monkeypatch, tmp_path):
    first = scan.library_names(str(big_strings), "elf")
    copy = tmp_path / "copy.so"
    copy.write_bytes(big_strings.read_bytes())
    monkeypatch.setattr(scan, "_scan", lambda *a: pytest.fail("scanned again"))
    assert scan.library_names(str(copy), "elf") == first


def test_a_changed_library_is_scanned_again(big_strings):
    assert "libcudnn_ops.so.9" in scan.library_names(str(big_strings), "elf")
    data = big_strings.read_bytes().replace(b"libcudnn_ops.so.9", b"libcudnn_cnn.so.9")
    big_strings.write_bytes(data)
    os.utime(big_strings, ns=(1, 1))  # even with the old times put back, the inode's change time differs
    assert "libcudnn_cnn.so.9" in scan.library_names(str(big_strings), "elf")


@pytest.mark.parametrize(
    "damage",
    [b"{not json", b'{"files": [], "names": 3}', b'{"files": {"k": "c"}, "names": {"c": [1, 2]}}', b"\xff\xfe"],
)
def test_a_damaged_scan_cache_is_ignored(big_strings, monkeypatch, state, damage):
    state.mkdir(exist_ok=True)
    (state / "scan-cache.json").write_bytes(damage)
    assert scan.library_names(str(big_strings), "elf") == ["libcublasLt.so.12", "libcudnn_ops.so.9"]
    scan._CACHE.save()  # and it is rewritten whole
    monkeypatch.setattr(scan, "_CACHE", scan._ScanCache())
    monkeypatch.setattr(scan, "_scan", lambda *a: pytest.fail("scanned again"))
    assert scan.library_names(str(big_strings), "elf") == ["libcublasLt.so.12", "libcudnn_ops.so.9"]


def _elf_heads() -> list[tuple[str, bytes]]:
    """Real NVIDIA libraries the tests downloaded (where they are), this interpreter, and headers of other machines."""
    from tests.conftest import TEST_CACHE
    from tests.unit.install.test_hostile_archives import elf

    paths = [
        TEST_CACHE / "libcudart.so.12",
        *sorted(TEST_CACHE.glob("venvs/*/lib/python*/site-packages/nvidia/*/lib/*.so*")),
        Path(sys.executable).resolve(),
    ]
    heads = [(str(p), p.read_bytes()[: 1 << 16]) for p in paths if p.is_file()]
    return heads + [(f"e_machine {m}", elf(m)) for m in (3, 40, 62, 183, 243)]


@pytest.mark.slow  # exhaustive: every operation, every file (the slow lane)
def test_the_machine_of_an_elf_library_is_read_as_pyelftools_reads_it():
    import io

    from elftools.elf.elffile import ELFFile

    from cudnn_doctor.binaries import ELF_MACHINES, head_machine

    for name, head in _elf_heads():
        if head[:4] != b"\x7fELF":
            continue
        machine = ELFFile(io.BytesIO(head))["e_machine"]
        assert head_machine(head) == ("elf", ELF_MACHINES.get(machine, str(machine))), name
    assert head_machine(b"\x7fELF\x09") == ("elf", None)  # too short, or a class no ELF file has


@pytest.mark.parametrize("threaded", [False, True])
def test_a_write_that_fails_while_spooling_is_raised_not_lost(threaded):
    from cudnn_doctor.system.sink import Sink

    class Full:
        def write(self, data: bytes) -> int:
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"), Sink(Full(), threaded=threaded) as sink:  # type: ignore[arg-type]
        for _ in range(20):
            sink.put(b"x" * 1000)


def test_the_hashing_thread_hashes_what_one_thread_would():
    import io

    from cudnn_doctor.system.sink import Sink

    blocks = [os.urandom(1000 + n) for n in range(50)]
    outs = [io.BytesIO(), io.BytesIO()]
    digests = []
    for threaded, out in zip((False, True), outs):
        with Sink(out, threaded=threaded) as sink:
            for block in blocks:
                sink.put(block)
        digests.append(sink.digest.hexdigest())
    assert digests[0] == digests[1] == hashlib.sha256(b"".join(blocks)).hexdigest()
    assert outs[0].getvalue() == outs[1].getvalue() == b"".join(blocks)


@pytest.mark.live
@pytest.mark.skipif(WINDOWS, reason="a Linux archive")
@live_install
def test_a_spool_that_would_not_fit_is_refused_before_it_fills_the_disk(tmp_path, monkeypatch, capsys):
    import cudnn_doctor.system.archive as archive_module

    target = archives.toolkit(tmp_path / "cuda-12.6")
    before = archives.tree(target)
    path = archives.linux_tar(tmp_path / "cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz")
    monkeypatch.setattr(archive_module, "_free_bytes", lambda folder: archive_module.SPOOL_MARGIN + 10_000)
    assert main(["install", str(path), "--into", str(target), "--yes"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "free some space" in err, err
    assert archives.tree(target) == before and not [
        p for p in target.iterdir() if p.name.startswith(transaction.SPOOL_PREFIX)
    ]
