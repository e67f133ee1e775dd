"""The knowledge tables: a source on every row, a review date, their invariants, and sample lookups."""

from __future__ import annotations

import pytest
from packaging.version import Version

from cudnn_doctor import knowledge


def test_every_table_loads_with_review_date():
    dates = knowledge.reviewed_dates()
    assert set(dates) >= {"cuda_driver", "tensorflow", "torch", "gpus", "frameworks", "environment", "cuda_libraries"}


def test_a_row_without_source_is_rejected(tmp_path, monkeypatch):
    (tmp_path / "broken.yaml").write_text("reviewed: 2026-12-03\nrows:\n  - {a: 1}\n", encoding="utf-8")
    monkeypatch.setattr(knowledge, "DATA", tmp_path)
    knowledge.table.cache_clear()
    try:
        with pytest.raises(knowledge.KnowledgeError, match="has no source"):
            knowledge.table("broken")
    finally:
        knowledge.table.cache_clear()


def test_driver_table_is_monotonic():
    knowledge._validate_cuda_driver(knowledge.table("cuda_driver"))
    with pytest.raises(knowledge.KnowledgeError):
        knowledge._validate_cuda_driver({"toolkits": [{"cuda": "10.0", "linux": "410", "windows": "411"}, {"cuda": "10.1", "linux": "400", "windows": "418"}]})


@pytest.mark.parametrize(
    ("cuda", "os_name", "driver", "rule"),
    [("12.1", "linux", "525", "minor-version compatibility"), ("11.8", "windows", "452.39", "minor-version compatibility"),
     ("10.1", "windows", "418.96", "toolkit release"), ("13.0", "linux", "580", "minor-version compatibility")],
)
def test_driver_requirement(cuda, os_name, driver, rule):
    need = knowledge.driver_requirement(Version(cuda), os_name)
    assert (str(need.driver), need.rule) == (driver, rule)


def test_max_cuda_for_old_drivers():
    assert knowledge.max_cuda_for_driver(Version("384.130"), "linux")[0] == Version("9.0")
    assert knowledge.max_cuda_for_driver(Version("382.05"), "windows")[0] == Version("8.0")


@pytest.mark.parametrize(("cuda", "os_name", "name"), [("11.2", "windows", "cudart64_110.dll"), ("10.1", "windows", "cudart64_101.dll"),
                                                      ("12.6", "linux", "libcudart.so.12"), ("11.8", "linux", "libcudart.so.11.0")])
def test_cudart_names(cuda, os_name, name):
    assert knowledge.cudart_name(Version(cuda), os_name) == name


def test_framework_tables():
    assert knowledge.tensorflow_build(Version("2.10.1"), "windows")["cuda"] == "11.2"
    assert knowledge.tensorflow_build(Version("2.16.2"), "linux")["cudnn"] == "8.9"
    assert Version("3.11.4") in knowledge.python_range(knowledge.torch_release(Version("2.0.1"))["python"])
    assert Version("3.12.0") not in knowledge.python_range("3.8-3.11")
    assert knowledge.torch_index_url(Version("11.8")) == "https://download.pytorch.org/whl/cu118"
    assert knowledge.gpu_compute_capability("NVIDIA GeForce RTX 3060") == "8.6"
    assert knowledge.onnxruntime_build(Version("1.16.3"))["cuda"] == "11.8"


def test_canonical_name_agrees_with_packaging():
    from packaging.utils import canonicalize_name

    from cudnn_doctor.versions import canonical_name

    for name in ("Paddle_GPU", "nvidia-cudnn-cu12", "tf.nightly", "ONNXRuntime--GPU", "torch"):
        assert canonical_name(name) == canonicalize_name(name)
