"""One spelling rule per domain fact: the CUDA major in a DLL name."""

from __future__ import annotations

import pytest

from cudnn_doctor import knowledge
from cudnn_doctor.versions import cuda_major_of_dll_number


@pytest.mark.parametrize(
    ("number", "major"),
    [("12", 12), ("11", 11), ("13", 13), ("10", 10), ("110", 11), ("101", 10), ("100", 10), ("92", 9), ("80", 8), ("", None), ("x1", None)],
)
def test_cuda_major_of_a_dll_number(number, major):
    assert cuda_major_of_dll_number(number) == major


@pytest.mark.parametrize(("name", "major"), [("cudart64_110.dll", "11"), ("cublas64_12.dll", "12"), ("cudart64_101.dll", "10"), ("cublas64_80.dll", "8")])
def test_the_library_provider_names_the_same_major(name, major):
    provider = knowledge.library_provider(name)
    assert provider is not None and f"CUDA {major} " in provider["provider"]
