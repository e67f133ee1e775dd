"""PE and ELF reading on real files: NVIDIA's own cudart from the package registry, and objects gcc builds here."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from cudnn_doctor.system.binaries import read_binary
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import TEST_CACHE, cached, keep

CACHE = TEST_CACHE
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None or sys.platform != "linux", reason="needs gcc on Linux")


def _wheel_member(platform_tags: list[str], member: str) -> Path:
    """Download nvidia-cuda-runtime-cu12 for a platform once, and extract one file from it."""
    target = CACHE / Path(member).name
    if target.exists():
        return target
    with cached(f"wheels/{platform_tags[0]}") as folder:  # under a lock: one download, whoever is first
        if not list(folder.glob("*.whl")):
            command = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "-d",
                str(folder),
            ]
            for tag in platform_tags:
                command += ["--platform", tag]
            try:
                done = subprocess.run(
                    [*command, "nvidia-cuda-runtime-cu12==12.9.79"], capture_output=True, text=True, timeout=180
                )
            except subprocess.TimeoutExpired:
                pytest.skip("the package registry did not answer in time")
            if done.returncode != 0:
                pytest.skip(
                    f"cannot download nvidia-cuda-runtime-cu12 from the package registry: {done.stderr.strip().splitlines()[-1:]}"
                )
    with zipfile.ZipFile(next(folder.glob("*.whl"))) as wheel:
        keep(target, wheel.read(member))
    return target


@pytest.mark.network
def test_real_nvidia_pe_file():
    dll = _wheel_member(["win_amd64"], "nvidia/cuda_runtime/bin/cudart64_12.dll")
    info = read_binary(str(dll))
    assert (info.format, info.machine) == ("pe", "x64")
    assert any(name.lower().startswith("api-ms-win-core") for name in info.imports)
    assert info.version and info.version.startswith("6.14.11.")  # CUDA DLLs carry a CUDA-style FileVersion
    assert "nvcuda.dll" in info.loads and "cudart64_12.dll" not in info.loads


@pytest.mark.network
def test_real_nvidia_elf_file():
    so = _wheel_member(["manylinux2014_x86_64", "manylinux_2_17_x86_64"], "nvidia/cuda_runtime/lib/libcudart.so.12")
    info = read_binary(str(so))
    assert (info.format, info.machine, info.soname) == ("elf", "x86_64", "libcudart.so.12")
    assert "libc.so.6" in info.imports and "libcuda.so.1" in info.loads


@pytest.mark.live
@needs_gcc
def test_gcc_built_elf_with_runpath_rpath_and_a_dlopen_string(tmp_path):
    source = tmp_path / "x.c"
    source.write_text('#include <dlfcn.h>\nvoid *f(void) { return dlopen("libcudnn_graph.so.9", 2); }\n')
    out = tmp_path / "libx.so"
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-o",
            str(out),
            str(source),
            "-Wl,-soname,libx.so.1",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib",
            "-Wl,--no-as-needed",
            "-lz",
        ],
        check=True,
    )
    info = read_binary(str(out))
    assert info.soname == "libx.so.1" and info.runpath == ("$ORIGIN/../lib",) and info.rpath == ()
    assert "libz.so.1" in info.imports and info.loads == ("libcudnn_graph.so.9",)
    legacy = tmp_path / "liby.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(legacy), str(source), "-Wl,--disable-new-dtags,-rpath,/opt/y"], check=True
    )
    assert read_binary(str(legacy)).rpath == ("/opt/y",)


def test_empty_truncated_and_foreign_files_never_raise(tmp_path):
    (tmp_path / "empty.so").write_bytes(b"")
    (tmp_path / "trunc.dll").write_bytes(b"MZ\x90\x00" + b"\x00" * 20)
    (tmp_path / "text.so").write_text("not a library\n")
    assert read_binary(str(tmp_path / "empty.so")).error == "file too short"
    assert read_binary(str(tmp_path / "trunc.dll")).format is None
    assert read_binary(str(tmp_path / "text.so")).error == "not a PE or ELF file"
    assert read_binary(str(tmp_path / "missing.so")).format is None


@pytest.mark.live
@needs_gcc
def test_fixture_source_reads_real_bytes_and_explicit_fields_win(tmp_path):
    source = tmp_path / "b.c"
    source.write_text("int b(void) { return 1; }\n")
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-o",
            str(tmp_path / "libb.so"),
            str(source),
            "-Wl,-soname,libb.so.2",
            "-Wl,--no-as-needed",
            "-lm",
        ],
        check=True,
    )
    document = {
        "schema": "machine-fixture/1",
        "name": "source",
        "os": "linux",
        "env": {"PATH": "/usr/bin"},
        "files": {
            "/opt/lib/libb.so.2": {"source": "libb.so"},
            "/opt/lib/libc.so.2": {"source": "libb.so", "soname": "libc.so.2"},
        },
    }
    path = tmp_path / "machine.yaml"
    path.write_text(yaml.safe_dump(document))
    system = FixtureSystem.from_file(path)
    info = system.binary("/opt/lib/libb.so.2")
    assert info.soname == "libb.so.2" and "libm.so.6" in info.imports
    assert system.stat("/opt/lib/libb.so.2").size == (tmp_path / "libb.so").stat().st_size
    assert system.binary("/opt/lib/libc.so.2").soname == "libc.so.2"
