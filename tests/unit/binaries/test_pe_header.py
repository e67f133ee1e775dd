"""The struct PE reader (binaries/peheader.py) against pefile, on every PE file the tests download (NVIDIA's and
ONNX Runtime's win_amd64 wheels in the test cache), on Wine's DLLs where Wine is installed, on pip's own launchers,
on the Python's DLLs and System32 under Windows, and on damaged copies, which must reach pefile's answer too."""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cudnn_doctor.binaries import BinaryInfo, peheader
from cudnn_doctor.system.binaries import pe
from tests.conftest import REPO, TEST_CACHE

SUFFIXES = (".dll", ".exe", ".pyd")
# members above this size stay in their wheel (cuDNN's engine libraries are 0.5 GB): the rest are extracted once
MAX_EXTRACTED = 64 << 20


def quickly(path: Path) -> BinaryInfo:
    """The struct reader's answer for the file at `path` (it reads an open file; the system opens it)."""
    with open(path, "rb") as handle:
        return peheader.read_pe_quickly(handle)


def _pe_files(folder: Path, limit: int = 0, top: bool = False, suffixes: tuple[str, ...] = SUFFIXES) -> list[Path]:
    """PE files (by suffix, when given, and the MZ magic) under `folder`; `limit` of them spread evenly over the sorted list."""
    found = []
    for root, dirs, names in os.walk(folder):
        if top:
            dirs.clear()
        for name in names:
            path = Path(root) / name
            if (not suffixes or name.lower().endswith(suffixes)) and path.is_file() and not path.is_symlink():
                with open(path, "rb") as handle:
                    if handle.read(2) == b"MZ":
                        found.append(path)
    found.sort()
    if limit and len(found) > limit:
        found = [found[index * len(found) // limit] for index in range(limit)]
    return found


def _extracted_wheels() -> list[Path]:
    """The PE members of the win_amd64 wheels in the test cache, extracted once beside each wheel (`extracted/`, where
    the other tests look for them), skipping the largest."""
    found = []
    for wheel in WHEELS:
        target = wheel.parent / "extracted"
        try:
            with zipfile.ZipFile(wheel) as archive:
                for member in archive.infolist():
                    if not member.filename.lower().endswith(SUFFIXES) or member.file_size > MAX_EXTRACTED:
                        continue
                    path = target / member.filename
                    if not path.is_file() or path.stat().st_size != member.file_size:
                        archive.extract(member, target)
                    found.append(path)
        except (OSError, zipfile.BadZipFile):
            continue
    return found


def _downloaded() -> list[Path]:
    """The loose PE files in the test cache (extracted wheels and archives, the test venvs' nvidia/ packages)."""
    if not TEST_CACHE.is_dir():
        return []
    places = [
        TEST_CACHE / "wheels",
        TEST_CACHE / "archives",
        *TEST_CACHE.glob("venvs/*/lib/python*/site-packages/nvidia"),
    ]
    found = {p for place in places if place.is_dir() for p in _pe_files(place)} | set(_pe_files(TEST_CACHE, top=True))
    return sorted(found)


def _wine() -> list[Path]:
    """A sample of Wine's PE files (.dll, .exe, .drv, .sys, .ocx, ...: whatever starts with MZ)."""
    folders = [Path("/usr/lib/x86_64-linux-gnu/wine"), Path("/usr/lib/wine"), Path("/usr/lib/i386-linux-gnu/wine")]
    return sorted({p for folder in folders if folder.is_dir() for p in _pe_files(folder, limit=150, suffixes=())})


def _windows() -> list[Path]:
    """Under Windows: this Python's own DLLs and a sample of System32."""
    if sys.platform != "win32":
        return []
    base = Path(sys.base_prefix)
    system32 = Path(os.environ.get("SystemRoot", "C:\\Windows")) / "System32"
    return sorted(
        set(_pe_files(base, top=True)) | set(_pe_files(base / "DLLs")) | set(_pe_files(system32, limit=150, top=True))
    )


def _launchers() -> list[Path]:
    """pip's Windows launchers (x86, x64, arm64 PE files), present wherever pip is."""
    spec = importlib.util.find_spec("pip")
    if spec is None or not spec.submodule_search_locations:
        return []
    return _pe_files(Path(next(iter(spec.submodule_search_locations))) / "_vendor" / "distlib")


def _same(path: Path) -> bool:
    """Both readers agree; the quick one answered alone (True) or left the file to pefile (False)."""
    reference = pe.read_pe_with_pefile(str(path))
    try:
        quick = quickly(path)
    except peheader.Irregular:
        assert pe.read_pe(str(path)) == reference, path
        return False
    assert quick == reference, path
    return True


DOWNLOADED = _downloaded()
WHEELS = sorted((TEST_CACHE / "wheels" / "win_amd64").glob("**/*.whl"))
WINE = _wine()
WINDOWS = _windows()
LAUNCHERS = _launchers()


@pytest.mark.skipif(
    not DOWNLOADED and not WHEELS, reason="no win_amd64 wheels in the test cache yet (the wheel tests fill it)"
)
def test_the_struct_reader_says_what_pefile_says_on_every_downloaded_pe_file():
    nvidia = 0
    for path in sorted(set(DOWNLOADED) | set(_extracted_wheels())):
        assert _same(path), path  # NVIDIA's and ONNX Runtime's libraries are plain: no fallback
        nvidia += "nvidia" in str(path) or "cudart" in path.name or "onnxruntime" in str(path)
    assert nvidia > 0


@pytest.mark.network
def test_the_real_nvidia_and_onnxruntime_dlls_are_read_without_pefile():
    """The two win_amd64 files the other tests fetch (cudart64_12.dll, ONNX Runtime's CUDA provider), fetched the same way."""
    from tests.unit.binaries.test_binaries import _wheel_member
    from tests.unit.probes.test_wheel_files import _ort_wheel

    cudart = _wheel_member(["win_amd64"], "nvidia/cuda_runtime/bin/cudart64_12.dll")
    provider = (
        _ort_wheel("win_amd64", "onnxruntime_providers_cuda.dll")
        / "onnxruntime"
        / "capi"
        / "onnxruntime_providers_cuda.dll"
    )
    for path in (cudart, provider):
        assert _same(path), path
    assert quickly(cudart).version.startswith("6.14.11.")


@pytest.mark.slow  # exhaustive: every operation, every file (the slow lane)
@pytest.mark.skipif(not WINE, reason="Wine is not installed here")
def test_the_struct_reader_says_what_pefile_says_on_wines_dlls():
    quick = sum(_same(path) for path in WINE)
    assert quick >= len(WINE) * 0.9, f"only {quick} of {len(WINE)} Wine files read without pefile"


@pytest.mark.skipif(not WINDOWS, reason="only under Windows")
def test_the_struct_reader_says_what_pefile_says_on_pythons_dlls_and_system32():
    quick = sum(_same(path) for path in WINDOWS)
    assert quick >= len(WINDOWS) * 0.8, f"only {quick} of {len(WINDOWS)} files read without pefile"


@pytest.mark.skipif(not LAUNCHERS, reason="pip is not installed here")
def test_the_struct_reader_says_what_pefile_says_on_pips_launchers():
    assert all(_same(path) for path in LAUNCHERS)
    machines = {quickly(path).machine for path in LAUNCHERS}
    assert {"x86", "x64"} <= machines


# --- damaged copies ---------------------------------------------------------------------------------------


def _sample() -> Path:
    """A real PE file with imports and a version resource: NVIDIA's cudart when downloaded, else a pip launcher."""
    for path in [TEST_CACHE / "cudart64_12.dll", *LAUNCHERS]:
        if path.is_file():
            return path
    pytest.skip("no PE file here to damage")


def _offsets(data: bytes) -> dict[str, int]:
    """File offsets of the fields the damage cases change, found with pefile (the reference)."""
    import pefile

    image = pefile.PE(data=data, fast_load=True)
    image.parse_data_directories(directories=[1, 2])
    resource = image.DIRECTORY_ENTRY_RESOURCE.entries[0].struct
    return {
        "lfanew": image.DOS_HEADER.e_lfanew,
        "rva count": image.OPTIONAL_HEADER.get_field_absolute_offset("NumberOfRvaAndSizes"),
        "pointer": image.sections[0].get_field_absolute_offset("PointerToRawData"),
        "import name": image.DIRECTORY_ENTRY_IMPORT[0].struct.get_field_absolute_offset("Name"),
        "resource target": resource.get_field_absolute_offset("OffsetToData"),
        "function name": next(s.name_offset for s in image.DIRECTORY_ENTRY_IMPORT[0].imports if s.name),
    }


def _put(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + struct.pack("<I", value) + data[offset + 4 :]


def test_damaged_copies_are_read_as_pefile_reads_them(tmp_path):
    data = _sample().read_bytes()
    at = _offsets(data)
    cases = {
        "truncated": (data[: len(data) // 3], True),
        "headers only": (data[:0x400], True),
        "odd section offset": (
            _put(data, at["pointer"], struct.unpack_from("<I", data, at["pointer"])[0] + 0x10),
            True,
        ),
        "import name outside the sections": (_put(data, at["import name"], 0x7FFFFFF0), True),
        "resource loop": (
            _put(data, at["resource target"], 0x80000000),
            True,
        ),  # the first type's subdirectory is the root
        "few data directories": (_put(data, at["rva count"], 10), True),
        "invalid imported name": (
            data[: at["function name"]] + b"-" + data[at["function name"] + 1 :],
            True,
        ),  # pefile skips it
        "e_lfanew past the end": (_put(data, 0x3C, len(data) + 1), False),
        "NE signature": (data[: at["lfanew"]] + b"NE\0\0" + data[at["lfanew"] + 4 :], False),
        "ZM magic": (b"ZM" + data[2:], False),
        "short": (data[:40], False),
    }
    path = tmp_path / "damaged.dll"
    for label, (content, irregular) in cases.items():
        path.write_bytes(content)
        reference = pe.read_pe_with_pefile(str(path))
        assert pe.read_pe(str(path)) == reference, label
        if irregular:
            with pytest.raises(peheader.Irregular):
                quickly(path)
        else:
            assert quickly(path) == reference and reference.error, label


@pytest.mark.slow  # exhaustive: every operation, every file (the slow lane)
def test_randomly_damaged_headers_and_tables_are_read_as_pefile_reads_them(tmp_path):
    """Bytes changed at random (seeded) in the headers and the import and resource directories: whichever reader
    answers, the answer is pefile's."""
    import random

    import pefile

    data = _sample().read_bytes()
    image = pefile.PE(data=data, fast_load=True)
    regions = [(0, 0x400)]
    for index in (1, 2, 13):
        entry = image.OPTIONAL_HEADER.DATA_DIRECTORY[index]
        if entry.VirtualAddress:
            regions.append((image.get_offset_from_rva(entry.VirtualAddress), max(entry.Size, 1024)))
    chance, path, quick = random.Random(15), tmp_path / "damaged.dll", 0
    for _ in range(80):
        damaged = bytearray(data)
        for _ in range(chance.randint(1, 3)):
            start, size = chance.choice(regions)
            damaged[chance.randrange(start, min(start + size, len(data)))] = chance.randrange(256)
        path.write_bytes(bytes(damaged))
        quick += _same(path)
    assert 0 < quick < 80


def test_an_old_address_based_delay_table_is_left_to_pefile(tmp_path):
    """A PE32 delay descriptor with grAttrs 0 holds addresses, which pefile turns into RVAs: left to it."""
    launcher = next((p for p in LAUNCHERS if p.name == "t32.exe"), None)
    if launcher is None:
        pytest.skip("no 32-bit PE file here")
    import pefile

    data = bytearray(launcher.read_bytes())
    image = pefile.PE(data=bytes(data), fast_load=True)
    entry = image.OPTIONAL_HEADER.DATA_DIRECTORY[13]
    section = image.sections[-1]
    # a delay directory in the last section's slack: one descriptor of zeros but its name, then the end of the list
    rva = section.VirtualAddress + section.Misc_VirtualSize + 16
    offset = section.PointerToRawData + section.Misc_VirtualSize + 16
    if section.Misc_VirtualSize + 16 + 64 > section.SizeOfRawData:
        pytest.skip("no slack in the last section")
    data[offset : offset + 64] = struct.pack("<8I", 0, 0x401000, 0, 0, 0, 0, 0, 0) + bytes(32)
    data[entry.get_file_offset() : entry.get_file_offset() + 8] = struct.pack("<II", rva, 64)
    path = tmp_path / "old.exe"
    path.write_bytes(bytes(data))
    with pytest.raises(peheader.Irregular):
        quickly(path)
    assert pe.read_pe(str(path)) == pe.read_pe_with_pefile(str(path))


@pytest.mark.live
def test_reading_a_pe_file_does_not_import_pefile():
    path = _sample()
    code = "import sys; from cudnn_doctor.system.binaries import read_binary; info = read_binary(sys.argv[1]); print(info.format, 'pefile' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == ["pe", "False"]


@pytest.mark.live
def test_pefile_is_imported_only_for_an_irregular_file(tmp_path):
    path = tmp_path / "truncated.dll"
    shutil.copyfile(_sample(), path)
    path.write_bytes(path.read_bytes()[:0x400])
    code = "import sys; from cudnn_doctor.system.binaries.pe import read_pe; read_pe(sys.argv[1]); print('pefile' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == ["True"]


def test_a_file_pefile_fails_on_is_reported_not_raised(tmp_path, monkeypatch):
    """pefile raises struct.error or IndexError on some damaged files; one bad DLL on PATH must not end `check`."""
    import pefile

    path = tmp_path / "bad.dll"
    path.write_bytes(b"MZ" + b"\0" * 200)

    def broken(*args, **kwargs):
        raise struct.error("unpack requires a buffer of 4 bytes")

    monkeypatch.setattr(pefile, "PE", broken)
    info = pe.read_pe_with_pefile(str(path))
    assert info.format is None and "pefile failed (error)" in (info.error or "")
