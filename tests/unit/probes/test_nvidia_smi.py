"""nvidia-smi tables of every era, from the machine fixtures and hand-written, parse the same way."""

from __future__ import annotations

import pytest
import yaml

from cudnn_doctor.probes import nvidia_smi
from tests.conftest import all_fixture_paths

TABLES = []
for path in all_fixture_paths():
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    smi = (document.get("commands") or {}).get("nvidia-smi")
    if smi and document.get("nvml"):
        TABLES.append(pytest.param(smi["stdout"], document["nvml"], id=f"{path.parent.name}/{path.stem}"))


@pytest.mark.parametrize(("text", "nvml"), TABLES)
def test_table_agrees_with_nvml(text, nvml):
    report = nvidia_smi.parse_table(text)
    assert report.driver_version == nvml["driver_version"]
    assert len(report.gpus) == len(nvml["gpus"])
    for parsed, truth in zip(report.gpus, nvml["gpus"]):
        if parsed.truncated:  # a name too long for its column ends in "...": the part shown must be the real one
            assert truth["name"].startswith(parsed.name[:-3].rstrip()) and len(parsed.name) > 3
        else:
            assert parsed.name == truth["name"]
        assert parsed.memory_mib == truth["memory_total_mib"]
    if "cuda_driver_version" in nvml and "CUDA Version" in text:
        cuda = nvml["cuda_driver_version"]
        assert report.cuda_version == f"{cuda // 1000}.{(cuda % 1000) // 10}"


def test_pre_r410_table_has_no_cuda_version():
    text = "| NVIDIA-SMI 384.130               Driver Version: 384.130                    |\n|   0  GeForce GTX 10 ...  Off  | 00000000:01:00.0  On |                  N/A |\n| N/A   40C    P8    10W /  N/A |    300MiB / 11178MiB |      0%      Default |\n"
    report = nvidia_smi.parse_table(text)
    assert report.driver_version == "384.130" and report.cuda_version is None
    assert (
        report.gpus[0].name == "GeForce GTX 10 ..." and report.gpus[0].truncated and report.gpus[0].memory_mib == 11178
    )


def test_query_output():
    gpus = nvidia_smi.parse_query(
        "NVIDIA GeForce RTX 3090, 8.6, 525.89.02, 24576 MiB\nNVIDIA GeForce RTX 3090, 8.6, 525.89.02, 24576 MiB\n"
    )
    assert [(g.index, g.compute_capability, g.memory_mib) for g in gpus] == [(0, "8.6", 24576), (1, "8.6", 24576)]
    assert nvidia_smi.parse_query('Field "compute_cap" is not a valid field to query.') == []
