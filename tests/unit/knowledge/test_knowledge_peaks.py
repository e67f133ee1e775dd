"""The datasheet peak table (gpus.yaml `peaks`) and the verify thresholds (`verify_thresholds`)."""

from __future__ import annotations

import copy

import pytest

from cudnn_doctor import knowledge
from cudnn_doctor.errors import KnowledgeError
from cudnn_doctor.knowledge import fields, schema

# Every model the brief of issue 12 asks for that has a sourced row, by a name NVML reports where one is sourced
# (NVIDIA's open-gpu-kernel-modules README), else by the table's model name.
COVERED = {
    "NVIDIA B200": "B200 (HGX)",
    "NVIDIA GB200": "GB200 (per GPU)",
    "NVIDIA H200": "H200 SXM",
    "NVIDIA H200 NVL": "H200 NVL",
    "NVIDIA H100 80GB HBM3": "H100 SXM5",
    "NVIDIA H100 PCIe": "H100 PCIe",
    "NVIDIA H100 NVL": "H100 NVL",
    "NVIDIA GH200 480GB": "GH200 96GB HBM3",
    "NVIDIA GH200 144G HBM3e": "GH200 144GB HBM3e",
    "NVIDIA A100-SXM4-80GB": "A100 SXM4 80GB",
    "NVIDIA A100 80GB PCIe": "A100 PCIe 80GB",
    "NVIDIA A100-SXM4-40GB": "A100 SXM4 40GB",
    "NVIDIA A100-PCIE-40GB": "A100 PCIe 40GB",
    "NVIDIA A30": "A30",
    "NVIDIA A10": "A10",
    "NVIDIA L40S": "L40S",
    "NVIDIA L40": "L40",
    "NVIDIA L4": "L4",
    "Tesla T4": "T4",
    "V100 SXM2": "V100 SXM2",
    "V100 PCIe": "V100 PCIe",
    "NVIDIA RTX 6000 Ada Generation": "RTX 6000 Ada Generation",
    "NVIDIA RTX A6000": "RTX A6000",
    "NVIDIA GeForce RTX 5090": "GeForce RTX 5090",
    "NVIDIA GeForce RTX 4090": "GeForce RTX 4090",
    "NVIDIA GeForce RTX 4080": "GeForce RTX 4080",
    "NVIDIA GeForce RTX 3090": "GeForce RTX 3090",
    "NVIDIA GeForce RTX 3080": "GeForce RTX 3080",
    "NVIDIA GeForce RTX 2080 Ti": "GeForce RTX 2080 Ti",
}
CHECKS = ("matmul-peak", "conv-peak", "memory-bandwidth", "host-link", "cudnn-speedup", "gpu-speedup")


def _peaks():
    return knowledge.table("gpus").peaks


@pytest.mark.parametrize("name, model", sorted(COVERED.items()))
def test_each_covered_model_resolves(name, model):
    assert knowledge.gpu_peak(name).model == model


def test_every_row_is_covered_and_resolves_by_its_model_name():
    assert {row.model for row in _peaks()} == set(COVERED.values())
    for row in _peaks():
        assert knowledge.gpu_peak(row.model) is row
        for name in row.names:
            assert knowledge.gpu_peak(name) is row, name


@pytest.mark.parametrize(
    "name, model",
    [
        ("nvidia h100 80gb hbm3", "H100 SXM5"),  # case
        ("NVIDIA  H100   PCIe", "H100 PCIe"),  # spaces
        ("H100 80GB HBM3", "H100 SXM5"),  # brand optional
        ("NVIDIA T4", "T4"),  # the other brand NVIDIA's pages use
        ("RTX 4090", "GeForce RTX 4090"),  # "GeForce" optional
        ("NVIDIA RTX 6000 Ada", "RTX 6000 Ada Generation"),  # the gpus row's spelling
    ],
)
def test_names_compare_like_the_capability_table(name, model):
    assert knowledge.gpu_peak(name).model == model


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA GeForce RTX 4090 D",  # another product that starts with a known name
        "NVIDIA GeForce RTX 4090 Laptop GPU",
        "NVIDIA GeForce RTX 3080 Ti",  # a row's name is whole: not the RTX 3080
        "NVIDIA GeForce RTX 3060",  # not in the table (no vendor figures found)
        "NVIDIA H100",  # NVML name of an H100 variant the table does not list
        "NVIDIA H800",
        "",
    ],
)
def test_unknown_or_partial_names_give_no_peak(name):
    assert knowledge.gpu_peak(name) is None


def test_h100_sxm5_is_the_dense_figure():
    row = knowledge.gpu_peak("NVIDIA H100 80GB HBM3")
    # docs/research/issue-12/peaks.yaml: the H100 table prints 'BFLOAT16 Tensor コア | 1,979 TFLOPS*' and
    # 'TF32 Tensor コア | 989 TFLOPS*' with '* Shown with sparsity. Specifications 1/2 lower without sparsity.'
    assert row.bf16 == row.fp16 == 1979 / 2
    assert row.tf32 == 989 / 2
    # NVIDIA's exemplar-performance table, non-sparse BF16 for H100: 989
    assert abs(row.bf16 - 989) < 1


def test_a100_rows_record_the_dense_side_of_dense_or_sparse():
    # the A100 80GB datasheet: 'BFLOAT16 Tensor Core | 312 TFLOPS / 624 TFLOPS*', '* With sparsity'
    for name in ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-40GB"):
        row = knowledge.gpu_peak(name)
        assert (row.tf32, row.bf16, row.fp16) == (156, 312, 312), name
    assert knowledge.gpu_peak("NVIDIA A100-SXM4-80GB").memory_gbs == 2039
    assert knowledge.gpu_peak("NVIDIA A100 80GB PCIe").memory_gbs == 1935


def test_geforce_rates_accumulate_in_fp32():
    # Ada whitepaper Appendix A: 'Peak FP16 Tensor TFLOPS with FP32 Accumulate 165.2/330.4' (FP16 accumulate: 330.3)
    assert knowledge.gpu_peak("NVIDIA GeForce RTX 4090").fp16 == 165.2
    # Turing: 'Peak FP16 Tensor TFLOPS with FP32 Accumulate ... 53.8 / 56.9' (FP16 accumulate 107.6 / 113.8)
    assert knowledge.gpu_peak("NVIDIA GeForce RTX 2080 Ti").fp16 == 53.8


def test_no_bf16_or_tf32_before_ampere_is_null_not_zero():
    for name in ("Tesla T4", "V100 SXM2", "V100 PCIe", "NVIDIA GeForce RTX 2080 Ti"):
        row = knowledge.gpu_peak(name)
        assert row.bf16 is None and row.tf32 is None, name
        assert row.fp16 is not None, name


def test_rates_are_consistent():
    for row in _peaks():
        if row.fp16 is not None and row.fp32 is not None:
            assert row.fp16 >= row.fp32, row.model
        if row.tf32 is not None and row.fp16 is not None:
            assert row.tf32 <= row.fp16, row.model
        for value in (row.fp32, row.tf32, row.fp16, row.bf16, row.memory_gbs, row.memory_gb, row.host_link_gbs):
            assert value is None or value > 0, row.model
        if row.host_link_gbs is not None:
            assert row.host_link, row.model


def test_names_are_unique_across_rows():
    seen: dict[str, str] = {}
    for row in _peaks():
        for name in {fields.peak_name_key(n) for n in (row.model, *row.names)}:
            assert seen.setdefault(name, row.model) == row.model, name


def _gpus_document():
    return copy.deepcopy(knowledge.shipped_document()["gpus"])


def test_a_row_without_source_fails_the_build():
    document = _gpus_document()
    del document["peaks"][0]["source"]
    with pytest.raises(KnowledgeError, match=r"gpus.yaml: peaks\[0\] \(model H100 SXM5\): missing key 'source'"):
        schema.build("gpus", document, "gpus.yaml")


def test_a_sparse_minded_typo_or_zero_fails_the_build():
    document = _gpus_document()
    document["peaks"][0]["bf16"] = 0
    with pytest.raises(KnowledgeError, match="'bf16': expected a positive number"):
        schema.build("gpus", document, "gpus.yaml")


def test_a_name_on_two_rows_fails_the_build():
    document = _gpus_document()
    document["peaks"][1]["names"].append("NVIDIA H100 80GB HBM3")
    with pytest.raises(KnowledgeError, match="also names H100 SXM5"):
        schema.build("gpus", document, "gpus.yaml")


@pytest.mark.parametrize("check", CHECKS)
def test_thresholds_exist_for_every_check(check):
    row = knowledge.verify_threshold(check)
    assert row is not None and row.source.startswith("https://")
    assert 0 < row.fail_below <= row.warn_below
    assert row.note


def test_speedups_fail_when_not_faster():
    for check in ("cudnn-speedup", "gpu-speedup"):
        row = knowledge.verify_threshold(check)
        assert row.unit == "ratio" and row.fail_below == 1.0, check
    for check in ("matmul-peak", "conv-peak", "memory-bandwidth", "host-link"):
        row = knowledge.verify_threshold(check)
        assert row.unit == "percent" and row.warn_below < 100, check
    assert knowledge.verify_threshold("no-such-check") is None


def test_a_threshold_that_fails_above_its_warning_fails_the_build():
    document = _gpus_document()
    document["verify_thresholds"][0]["fail_below"] = 90
    with pytest.raises(KnowledgeError, match="fail_below is above warn_below"):
        schema.build("gpus", document, "gpus.yaml")
