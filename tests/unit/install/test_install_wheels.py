"""Issue 31: NVIDIA's own pip wheels of cuDNN install into a toolkit like its archives do (the package's Python files
and metadata stay out), and the bomb limits are calibrated on NVIDIA's real wheels (read by range requests)."""

from __future__ import annotations

import sys

import pytest

import cudnn_doctor.system.archive as archive_module
from cudnn_doctor.cli import main
from cudnn_doctor.install.archive_info import inspect
from cudnn_doctor.system.archive import Archive
from tests import archives
from tests.conftest import live_install

WINDOWS = sys.platform == "win32"


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(tmp_path / "state"))


@pytest.mark.parametrize("windows", [False, True], ids=["linux", "windows"])
def test_a_wheel_is_read_as_cudnn_of_its_cuda_major(tmp_path, windows):
    path = archives.wheel(tmp_path, "9.1.0.70", 12, windows=windows)
    info = inspect(Archive(path))
    assert (info.layout, info.top, info.version, info.cuda_major, info.os) == (
        "wheel",
        "nvidia/cudnn",
        "9.1.0",
        12,
        "windows" if windows else "linux",
    )


@pytest.mark.live
@live_install
def test_a_wheel_installs_its_libraries_and_headers_and_nothing_else(tmp_path, capsys):
    target = archives.toolkit(tmp_path / "cuda-12.6")
    before = set(archives.tree(target))
    path = archives.wheel(tmp_path, "9.1.0.70", 12)
    assert main(["install", str(path), "--into", str(target), "--yes"]) == 0, capsys.readouterr()
    added = set(archives.tree(target)) - before
    library = "bin/cudnn64_9.dll" if WINDOWS else "lib64/libcudnn.so.9"
    assert library in added and "include/cudnn_version.h" in added
    assert not [name for name in added if name.endswith((".py", "METADATA", "WHEEL", "RECORD"))], sorted(added)
    assert main(["rollback"]) == 0 and set(archives.tree(target)) == before


@pytest.mark.network
@pytest.mark.parametrize(
    "distribution, release, platform",
    [
        ("nvidia-cudnn-cu12", "9.1.0.70", "manylinux2014_x86_64"),
        ("nvidia-cudnn-cu12", "9.10.2.21", "win_amd64"),
        ("nvidia-cudnn-cu13", "9.26.0.51", "manylinux_2_27_aarch64"),
    ],
    ids=["cu12-linux", "cu12-windows", "cu13-aarch64"],
)
def test_the_bomb_limits_pass_nvidias_real_wheels_with_room(distribution, release, platform):
    """Each member's expansion, each member's size and the whole wheel's, against the limits, with a 2x margin."""
    import io
    import zipfile

    from cudnn_doctor.knowledge import pypi

    try:
        files = pypi.index_files(distribution)
    except OSError as error:
        pytest.skip(f"no package index: {error}")
    found = next(f for f in files if f["filename"].endswith(f"-{platform}.whl") and f"-{release}-" in f["filename"])
    with zipfile.ZipFile(io.BufferedReader(pypi._RangeFile(found["url"], found["size"]), buffer_size=1 << 20)) as wheel:
        infos = wheel.infolist()
    worst = max(i.file_size / max(i.compress_size, 1) for i in infos if i.file_size > archive_module.RATIO_FLOOR)
    total = sum(i.file_size for i in infos)
    assert worst * 2 < archive_module.MAX_RATIO, worst
    assert max(i.file_size for i in infos) * 2 < archive_module.MAX_MEMBER_BYTES
    assert total * 2 < archive_module.MAX_TOTAL_BYTES and total < archive_module.MAX_ARCHIVE_RATIO * found["size"]


def _never_read(monkeypatch):
    """Any read of the archive's members fails the test: the refusal must come from its name or first members."""

    def refuse(*args, **kwargs):
        raise AssertionError("the archive was read")

    monkeypatch.setattr("cudnn_doctor.system.archive.Archive.__init__", refuse)


@pytest.mark.live
def test_a_cuda_major_no_toolkit_has_is_refused_from_the_name(tmp_path, monkeypatch, capsys):
    """cuDNN for CUDA 11 where no CUDA 11 toolkit is installed: said from the wheel's name, before it is read."""
    from cudnn_doctor.facts import ToolkitFacts

    monkeypatch.setattr("cudnn_doctor.install.installing.probe_toolkits", lambda system: ToolkitFacts())
    path = archives.wheel(tmp_path, "9.1.0.70", 11)
    _never_read(monkeypatch)
    assert main(["install", str(path), "--yes"]) == 2
    assert "is built for CUDA 11, and this machine has no CUDA toolkit" in capsys.readouterr().err


@pytest.mark.live
def test_a_target_that_is_not_a_toolkit_is_refused_before_the_archive_is_read(tmp_path, monkeypatch, capsys):
    (tmp_path / "somewhere").mkdir()
    path = archives.wheel(tmp_path, "9.1.0.70", 12)
    _never_read(monkeypatch)
    assert main(["install", str(path), "--into", str(tmp_path / "somewhere"), "--yes"]) == 2
    assert "is not a CUDA toolkit folder" in capsys.readouterr().err


@pytest.mark.live
def test_a_large_archive_that_is_not_cudnn_is_refused_in_under_a_second(tmp_path, monkeypatch, capsys):
    """Its first members name no cuDNN file: refused without reading the 256 MB behind them."""
    import io
    import tarfile
    import time

    target = archives.toolkit(tmp_path / "cuda-12.6")
    path = tmp_path / "backup.tar"
    with tarfile.open(path, "w") as archive:
        info = tarfile.TarInfo("backup/README")
        info.size = 6
        archive.addfile(info, io.BytesIO(b"backup"))
        big = tarfile.TarInfo("backup/disk.img")
        big.size = 256 << 20
        archive.addfile(big, io.BytesIO(bytes(big.size)))
    _never_read(monkeypatch)
    started = time.perf_counter()
    assert main(["install", str(path), "--into", str(target), "--yes"]) == 2
    assert time.perf_counter() - started < 1.0
    assert "it is not a cuDNN archive" in capsys.readouterr().err
