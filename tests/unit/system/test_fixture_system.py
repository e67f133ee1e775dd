"""FixtureSystem follows the spec: Windows path rules on any host, links, implied folders, commands."""

from __future__ import annotations

from cudnn_doctor.paths import PathRules
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import LINUX_BASE, WINDOWS_BASE, machine


def test_windows_paths_are_case_insensitive_with_either_separator():
    system = FixtureSystem(machine(WINDOWS_BASE, files={"C:\\Program Files\\NVIDIA\\x.dll": {"size": 5}}))
    assert system.stat("c:/program files/nvidia/X.DLL").size == 5
    assert system.is_dir("C:\\PROGRAM FILES")
    assert [PathRules("windows").basename(e.path) for e in system.list_dir("c:\\program files\\nvidia")] == ["x.dll"]
    assert system.env()["path"] == system.env()["PATH"]


def test_linux_paths_are_case_sensitive():
    system = FixtureSystem(machine(LINUX_BASE, files={"/opt/Lib/x.so": {}}))
    assert system.exists("/opt/Lib/x.so") and not system.exists("/opt/lib/x.so")


def test_links_are_followed_through_folders_and_chains():
    files = {
        "/usr/local/cuda": {"link": "cuda-13.0"},
        "/usr/local/cuda-13.0/lib/libcudart.so.13.0.96": {"size": 700000},
        "/usr/local/cuda-13.0/lib/libcudart.so.13": {"link": "libcudart.so.13.0.96"},
        "/usr/local/cuda-13.0/lib64": {"link": "lib"},
    }
    system = FixtureSystem(machine(LINUX_BASE, files=files))
    info = system.stat("/usr/local/cuda/lib64/libcudart.so.13")
    assert info.size == 700000 and info.path == "/usr/local/cuda-13.0/lib/libcudart.so.13.0.96"
    assert system.realpath("/usr/local/cuda") == "/usr/local/cuda-13.0"
    assert system.stat("/usr/local/cuda").link == "cuda-13.0"


def test_sizes_text_and_permissions():
    files = {
        "/a/text.h": {"text": "#define X 1\n"},
        "/a/bin.so": {},
        "/a/empty.so": {"size": 0},
        "/a/locked.so": {"readable": False},
        "/empty/": {},
    }
    system = FixtureSystem(machine(LINUX_BASE, files=files))
    assert system.stat("/a/text.h").size == len("#define X 1\n")
    assert system.stat("/a/bin.so").size == 1024
    assert system.stat("/a/empty.so").size == 0
    assert system.stat("/a/locked.so").readable is False and system.read_text("/a/locked.so") is None
    assert system.is_dir("/empty") and system.list_dir("/empty") == []


def test_commands_missing_hung_and_with_exe_suffix():
    commands = {"nvidia-smi": {"returncode": 0, "stdout": "x"}, "ldconfig -p": {"timeout": True}}
    system = FixtureSystem(machine(WINDOWS_BASE, commands=commands))
    assert system.run(["C:\\Windows\\System32\\nvidia-smi.exe"]).stdout == "x"
    assert system.run(["ldconfig", "-p"]).timed_out
    assert system.run(["nvcc", "--version"]).not_found
