"""One spelling rule per domain fact: the CUDA major in a DLL name, a binary's machine name."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudnn_doctor import knowledge
from cudnn_doctor.binaries import arch_of_machine, head_machine, machine_of_arch
from cudnn_doctor.install.archive_info import library_problem
from cudnn_doctor.loader.resolve import Resolver
from cudnn_doctor.system.binaries import read_binary
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.recorder import RecordingSystem
from cudnn_doctor.versions import cuda_major_of_dll_number
from tests.archives import pe_image
from tests.conftest import LINUX_BASE, WINDOWS_BASE, machine


@pytest.mark.parametrize(
    ("number", "major"),
    [
        ("12", 12),
        ("11", 11),
        ("13", 13),
        ("10", 10),
        ("110", 11),
        ("101", 10),
        ("100", 10),
        ("92", 9),
        ("80", 8),
        ("", None),
        ("x1", None),
    ],
)
def test_cuda_major_of_a_dll_number(number, major):
    assert cuda_major_of_dll_number(number) == major


@pytest.mark.parametrize(
    ("name", "major"),
    [("cudart64_110.dll", "11"), ("cublas64_12.dll", "12"), ("cudart64_101.dll", "10"), ("cublas64_80.dll", "8")],
)
def test_the_library_provider_names_the_same_major(name, major):
    provider = knowledge.library_provider(name)
    assert provider is not None and f"CUDA {major} " in provider.provider


@pytest.mark.parametrize(
    ("code", "name", "arch"), [(0x8664, "x64", "x86_64"), (0xAA64, "arm64", "aarch64"), (0x14C, "x86", "x86")]
)
def test_a_pe_machine_has_one_name_for_the_reader_and_the_installer(tmp_path: Path, code, name, arch):
    library = tmp_path / "x.dll"
    library.write_bytes(pe_image(code))
    assert read_binary(str(library), scan_loads=False).machine == name
    assert head_machine(pe_image(code)) == ("pe", name)
    assert arch_of_machine(name) == arch and machine_of_arch("windows", arch) == name
    assert library_problem("x.dll", pe_image(code), "windows", arch) is None
    other = "aarch64" if arch != "aarch64" else "x86_64"
    assert (
        library_problem("x.dll", pe_image(code), "windows", other) == f"it is built for {arch}, this machine is {other}"
    )


@pytest.mark.parametrize(("base", "expected"), [(WINDOWS_BASE, "x64"), (LINUX_BASE, "x86_64")])
def test_the_loader_and_the_fixture_name_the_process_machine_alike(base, expected):
    library = "C:\\lib\\x.dll" if base is WINDOWS_BASE else "/lib/libx.so.1"
    system = FixtureSystem(machine(base, files={library: {"size": 4096}}))
    assert Resolver(system).machine == expected
    assert system.binary(library).machine == expected  # a fixture library without a machine is built for this one


@pytest.mark.parametrize(
    ("base", "argv", "key"),
    [
        (WINDOWS_BASE, ["C:\\Windows\\System32\\nvidia-smi.EXE", "-q"], "nvidia-smi -q"),
        (WINDOWS_BASE, ["nvcc", "--version"], "nvcc --version"),
        (LINUX_BASE, ["/usr/local/cuda/bin/nvcc", "--version"], "nvcc --version"),
        (LINUX_BASE, ["/opt/tool.exe"], "tool.exe"),
    ],
)
def test_a_command_has_one_key_for_the_recorder_and_the_replay(base, argv, key):
    """What a snapshot records under a key is what the replay looks up under the same key."""
    recorder = RecordingSystem(FixtureSystem(machine(base, commands={key: {"returncode": 0, "stdout": "out"}})))
    assert recorder.run(argv).stdout == "out"
    document = recorder.document("round trip")
    assert list(document["commands"]) == [key]
    assert FixtureSystem(document).run(argv).stdout == "out"
