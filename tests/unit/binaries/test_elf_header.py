"""The struct ELF reader (binaries/elfheader.py) against pyelftools, on every ELF file the tests download
(NVIDIA's wheels and archives in the test cache) and on this machine's own libraries."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor.binaries import elfheader
from cudnn_doctor.system.binaries import elf, read_binary, versioned
from tests.conftest import REPO, TEST_CACHE


def _elf_files(folder: Path, limit: int = 0, top: bool = False) -> list[Path]:
    found = []
    for root, dirs, names in os.walk(folder):
        if top:
            dirs.clear()  # only the files directly in `folder`
        for name in sorted(names):
            path = Path(root) / name
            if ".so" in name and path.is_file() and not path.is_symlink():
                with open(path, "rb") as handle:
                    if handle.read(4) == b"\x7fELF":
                        found.append(path)
    found.sort()
    return found[:limit] if limit else found


# NVIDIA's libraries as the tests download them: loose, in extracted wheels and archives, in the test venvs' nvidia/
# and onnxruntime/ packages (the venvs' other packages are not NVIDIA's, and walking them all takes seconds)
_PLACES = (
    "wheels",
    "archives",
    "venvs/*/lib/python*/site-packages/nvidia",
    "venvs/*/lib/python*/site-packages/onnxruntime",
)
DOWNLOADED = (
    sorted(
        {p for place in _PLACES for folder in TEST_CACHE.glob(place) if folder.is_dir() for p in _elf_files(folder)}
        | set(_elf_files(TEST_CACHE, top=True))
    )
    if TEST_CACHE.is_dir()
    else []
)
SYSTEM = _elf_files(Path("/usr/lib/x86_64-linux-gnu"), limit=200) if sys.platform.startswith("linux") else []


@pytest.mark.skipif(not DOWNLOADED, reason="no test downloads in the cache yet (the wheel tests fill it)")
def test_the_struct_reader_says_what_pyelftools_says_on_every_downloaded_elf_file():
    nvidia = 0
    for path in DOWNLOADED:
        quick = elf._read_quickly(str(path))
        assert quick is not None, path  # NVIDIA's and the frameworks' libraries are plain: no fallback
        assert quick == elf.read_elf_with_pyelftools(str(path)), path
        assert versioned._sections(str(path)) == versioned._sections_with_pyelftools(str(path)), path
        nvidia += "nvidia" in str(path) or "cudnn" in path.name or "cudart" in path.name
    assert nvidia > 0


@pytest.mark.skipif(not SYSTEM, reason="no Linux libraries here")
def test_the_struct_reader_says_what_pyelftools_says_on_this_machines_libraries():
    for path in SYSTEM:
        assert elf.read_elf(str(path)) == elf.read_elf_with_pyelftools(str(path)), path


def _copy_of(tmp_path: Path) -> Path:
    source = Path(sys.executable).resolve()
    with open(source, "rb") as handle:
        if handle.read(4) != b"\x7fELF":
            pytest.skip("the interpreter is not an ELF file here")
    copy = tmp_path / "python.bin"
    shutil.copyfile(source, copy)
    return copy


def test_an_unknown_machine_a_truncated_file_and_odd_tables_are_left_to_pyelftools(tmp_path):
    path = _copy_of(tmp_path)
    data = bytearray(path.read_bytes())
    assert elf._read_quickly(str(path)) is not None
    little = data[5] == 1
    sparc = (2).to_bytes(2, "little" if little else "big")  # EM_SPARC: a name only pyelftools knows
    cases = {
        "machine": bytes(data[:18] + sparc + data[20:]),
        "truncated": bytes(data[: len(data) // 3]),
        "header only": bytes(data[:64]),
    }
    for label, content in cases.items():
        path.write_bytes(content)
        assert elf._read_quickly(str(path)) is None, label
        assert elf.read_elf(str(path)) == elf.read_elf_with_pyelftools(str(path)), label


def test_no_section_headers_is_read_as_pyelftools_reads_it(tmp_path):
    path = _copy_of(tmp_path)
    data = bytearray(path.read_bytes())
    at, width = (40, 8) if data[4] == 2 else (32, 4)
    data[at : at + width] = bytes(width)  # e_shoff = 0: a stripped section table
    path.write_bytes(bytes(data))
    quick = elf._read_quickly(str(path))
    assert quick is not None and quick.imports == () and quick.string_ranges == ()
    assert quick == elf.read_elf_with_pyelftools(str(path))


@pytest.mark.live
def test_reading_a_library_does_not_import_pyelftools():
    code = "import sys; from cudnn_doctor.system.binaries import read_binary; info = read_binary(sys.executable); print(info.format, 'elftools' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    if done.stdout.split()[0] != "elf":
        pytest.skip("the interpreter is not an ELF file here")
    assert done.stdout.split() == ["elf", "False"]
    assert read_binary(sys.executable).format == "elf"


def test_strings_are_decoded_as_pyelftools_decodes_them():
    table = b"\0libc.so.6\0caf\xc3\xa9\0bad\xff\0"
    assert elfheader._string(table, 1) == "libc.so.6"
    assert elfheader._string(table, 11) == "café"
    assert elfheader._string(table, 17) == "bad\ufffd"
    assert elfheader._string(table, 0) == ""
    assert elfheader._string(b"no end", 0) is None
