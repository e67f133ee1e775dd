"""Toolkit discovery: one toolkit per real folder, nvcc behind links and wrapper scripts, every version source."""

from __future__ import annotations

import pytest

from cudnn_doctor.probes.toolkit import probe_toolkits
from cudnn_doctor.system.fixture import FixtureSystem
from cudnn_doctor.system.live import LiveSystem
from tests.conftest import LINUX_BASE, WINDOWS_BASE, machine, needs_nvcc

NVCC_13 = {"returncode": 0, "stdout": "Cuda compilation tools, release 13.0, V13.0.88\n"}


def test_cuda_symlink_is_one_toolkit_and_a_wrapper_script_leads_to_the_real_nvcc():
    files = {
        "/usr/local/cuda": {"link": "/usr/local/cuda-13.0"},
        "/usr/local/cuda-13.0/bin/nvcc": {"size": 30000000},
        "/usr/local/cuda-13.0/include/cuda.h": {"text": "#define CUDA_VERSION 13000\n"},
        "/usr/local/bin/nvcc": {"text": '#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@"\n'},
    }
    facts = probe_toolkits(FixtureSystem(machine(LINUX_BASE, files=files, commands={"nvcc --version": NVCC_13})))
    assert [t.root for t in facts.toolkits] == ["/usr/local/cuda-13.0"]
    assert facts.toolkits[0].aliases == ("/usr/local/cuda",)
    assert facts.nvcc_on_path == "/usr/local/bin/nvcc" and facts.nvcc_real == "/usr/local/cuda-13.0/bin/nvcc"
    assert facts.path_toolkit == "/usr/local/cuda-13.0" and facts.toolkits[0].version == "13.0.88"


@pytest.mark.parametrize(
    ("files", "version", "source"),
    [
        (
            {"/usr/local/cuda-12.6/version.json": {"text": '{"cuda": {"name": "CUDA SDK", "version": "12.6.77"}}'}},
            "12.6.77",
            "version.json",
        ),
        ({"/usr/local/cuda-10.2/version.txt": {"text": "CUDA Version 10.2.89\n"}}, "10.2.89", "version.txt"),
        ({"/usr/local/cuda-12.8/include/cuda.h": {"text": "#define CUDA_VERSION 12080\n"}}, "12.8", "cuda.h"),
        ({"/usr/local/cuda-11.7/include/cuda_runtime.h": {"size": 100}}, "11.7", "folder-name"),
    ],
)
def test_version_sources(files, version, source):
    facts = probe_toolkits(FixtureSystem(machine(LINUX_BASE, files=files)))
    assert (facts.toolkits[0].version, facts.toolkits[0].version_source) == (version, source)


def test_windows_toolkits_from_default_folder_and_variables():
    root = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
    files = {
        f"{root}\\v11.2\\bin\\nvcc.exe": {},
        f"{root}\\v11.8\\bin\\nvcc.exe": {},
        f"{root}\\v11.8\\version.json": {"text": '{"cuda": {"version": "11.8.0"}}'},
    }
    env = {
        "PATH": f"{root}\\v11.8\\bin;C:\\Windows\\System32",
        "CUDA_PATH": f"{root}\\V11.8",
        "CUDA_PATH_V11_2": f"{root}\\v11.2",
    }
    facts = probe_toolkits(FixtureSystem(machine(WINDOWS_BASE, files=files, env=env)))
    assert sorted(t.version for t in facts.toolkits) == ["11.2", "11.8.0"]
    assert facts.path_toolkit.lower().endswith("v11.8")
    assert [t.on_path for t in sorted(facts.toolkits, key=lambda t: t.root)] == [False, True]


@pytest.mark.live
@needs_nvcc
def test_live_toolkit_on_this_machine():
    facts = probe_toolkits(LiveSystem())
    assert facts.nvcc_real and facts.path_toolkit
    toolkit = facts.by_root(facts.path_toolkit)
    assert toolkit is not None and toolkit.version
    roots = [t.root for t in facts.toolkits]
    assert len(roots) == len(set(roots))
