"""cuda-visible-devices-hides-gpus: a value that leaves no GPU visible, and the values that do not."""

from __future__ import annotations

import pytest

from tests.conftest import LINUX_BASE, machine, run

TORCH = {"torch": {"version": "2.5.1+cu124", "cuda": "12.4", "cuda_available": False, "device_count": 0}}


def _diagnosis(value):
    pythons = [
        {
            "executable": "/v/bin/python",
            "version": "3.11.7",
            "current": True,
            "kind": "venv",
            "packages": {"torch": "2.5.1+cu124"},
            "frameworks": TORCH,
        }
    ]
    return run(machine(LINUX_BASE, env={"CUDA_VISIBLE_DEVICES": value}, pythons=pythons))


@pytest.mark.parametrize("value", ["", "-1", "NoDevFiles", "1", "1,2", " 3 ", "-1,0"])
def test_values_that_hide_the_only_gpu(value):
    diagnosis = _diagnosis(value)
    found = [i for i, f in enumerate(diagnosis.findings) if f.id == "cuda-visible-devices-hides-gpus"]
    assert found, [f.id for f in diagnosis.findings]
    unavailable = next(f for f in diagnosis.findings if f.id == "torch-cuda-unavailable")
    assert unavailable.symptom_of == found[0]  # said once: the variable is the cause


@pytest.mark.parametrize("value", ["0", "0,1", "1,0", "GPU-8a9c2b1e", "MIG-GPU-1"])
def test_values_that_leave_a_gpu_visible(value):
    assert "cuda-visible-devices-hides-gpus" not in {f.id for f in _diagnosis(value).findings}
