"""cuDNN's support matrix and NVIDIA's archive names (cudnn.yaml `support` and `archives`), as the planner and
`install` read them. Each case names the row it rests on."""

from __future__ import annotations

import copy
from typing import Optional

import pytest
from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.errors import KnowledgeError
from cudnn_doctor.knowledge import schema
from cudnn_doctor.system.archive import cuda_from_names
from tests.unit.planner.test_plan import plan

# NVIDIA's own file names, as research/issue-11/cudnn.yaml `archive_names.examples` records them.
X86_NAMES = [
    "cudnn-10.2-linux-x64-v7.6.5.32.tgz",
    "cudnn-10.2-windows10-x64-v7.6.5.32.zip",
    "cudnn-11.1-linux-x64-v8.0.5.39.tgz",
    "cudnn-11.1-windows-x64-v8.0.5.39.zip",
    "cudnn-11.2-linux-x64-v8.1.1.33.tgz",
    "cudnn-11.2-windows-x64-v8.1.1.33.zip",
    "cudnn-11.3-windows-x64-v8.2.0.53.zip",
    "cudnn-11.4-linux-x64-v8.2.2.26.tgz",
    "cudnn-11.4-linux-x64-v8.2.4.15.tgz",
    "cudnn-windows-x86_64-8.3.1.22_cuda10.2-archive.zip",
    "cudnn-windows-x86_64-8.3.2.44_cuda11.5-archive.zip",
    "cudnn-linux-x86_64-8.3.3.40_cuda10.2-archive.tar.xz",
    "cudnn-linux-x86_64-8.4.1.50_cuda11.6-archive.tar.xz",
    "cudnn-linux-x86_64-8.4.1.50_cuda10.2-archive.tar.xz",
    "cudnn-windows-x86_64-8.5.0.96_cuda11-archive.zip",
    "cudnn-windows-x86_64-8.5.0.96_cuda10-archive.zip",
    "cudnn-linux-x86_64-8.6.0.163_cuda11-archive.tar.xz",
    "cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz",
    "cudnn-windows-x86_64-8.9.7.29_cuda12-archive.zip",
    "cudnn-windows-x86_64-9.1.0.70_cuda12-archive.zip",
    "cudnn-windows-x86_64-9.10.0.56_cuda11-archive.zip",
    "cudnn-linux-x86_64-9.12.0.46_cuda13-archive.tar.xz",
    "cudnn-windows-x86_64-9.27.0.42_cuda13-archive.zip",
]
OTHER_ARCH_NAMES = [
    ("cudnn-linux-ppc64le-8.9.7.29_cuda12-archive.tar.xz", "ppc64le"),
    ("cudnn-linux-aarch64-9.1.0.70_cuda12-archive.tar.xz", "aarch64"),
    ("cudnn-windows-arm64-9.27.0.42_cuda13-archive.zip", "arm64"),
]


def fulls(cuda: str, os_name: str = "linux") -> list[str]:
    return [full for full, _ in knowledge.cudnn_releases_for(Version(cuda), os_name)]


def row_of(full: str, cuda: str) -> knowledge.records.CudnnSupport:
    return dict(knowledge.cudnn_releases_for(Version(cuda), "linux"))[full]


@pytest.mark.parametrize("name", X86_NAMES)
def test_nvidia_names_parse_and_are_named_back(name: str):
    parsed = knowledge.parse_cudnn_archive_name(name)
    assert parsed is not None and parsed.arch == "x86_64"
    assert parsed.os == ("windows" if name.endswith(".zip") else "linux")
    assert name.startswith("cudnn-") and parsed.version in name and str(parsed.cuda_major) in name
    assert (
        knowledge.cudnn_archive_name(parsed.version, Version(parsed.cuda or str(parsed.cuda_major)), parsed.os) == name
    )


@pytest.mark.parametrize(("name", "arch"), OTHER_ARCH_NAMES)
def test_other_platforms_parse_with_their_arch(name: str, arch: str):
    parsed = knowledge.parse_cudnn_archive_name(name)
    assert parsed is not None and parsed.arch == arch
    assert knowledge.cudnn_archive_name(parsed.version, Version(str(parsed.cuda_major)), parsed.os, arch) == name


@pytest.mark.parametrize(
    ("name", "cuda_major"),
    [
        (
            "C:\\Users\\me\\Downloads\\cudnn-windows-x86_64-8.5.0.96_cuda11-archive (1).zip",
            11,
        ),  # a browser's second download
        ("cudnn-windows-x86_64-9.1.0.70_cuda12-archive", 12),  # the archive's top folder
        ("/tmp/CUDNN-LINUX-X86_64-8.9.7.29_CUDA12-ARCHIVE.TAR.XZ", 12),
        ("cudnn-11.3-windows-x64-v8.2.0.53.zip", 11),
        ("my-cudnn.zip", None),
        ("nvidia_cudnn_cu12-9.1.0.70-py3-none-win_amd64.whl", None),  # a wheel is not an archive of these
        ("cudnn-11.2-windows-x64-v8.1.1.33.zip.sha256", None),
    ],
)
def test_parse_finds_the_name_in_paths_and_folders_only(name: str, cuda_major: Optional[int]):
    parsed = knowledge.parse_cudnn_archive_name(name)
    assert (parsed.cuda_major if parsed else None) == cuda_major


def test_install_reads_the_cuda_major_from_the_file_then_the_top_folder_then_the_installer_layout():
    assert cuda_from_names("cudnn-11.2-windows-x64-v8.1.1.33.zip", "cuda", ["bin/cudnn64_8.dll"]) == 11
    assert cuda_from_names("renamed.zip", "cudnn-windows-x86_64-9.1.0.70_cuda12-archive", ["bin/cudnn64_9.dll"]) == 12
    assert cuda_from_names("renamed.zip", "", ["bin/12.x/cudnn64_9.dll"]) == 12
    assert cuda_from_names("renamed.zip", "stuff", ["bin/cudnn64_9.dll"]) is None


def test_tensorflow_2_5s_cuda_11_2_gets_the_one_cuda_11_binary_of_8_1():
    """support >=8.1,<8.2 for 11.2 serves every CUDA 11 minor (NVIDIA: one binary for all of CUDA 11); 8.0.5's builds are
    per minor (11.0, 11.1), so none serves 11.2."""
    windows = fulls("11.2", "windows")
    assert "8.1.1.33" in windows and "8.0.5.39" not in windows
    assert (
        knowledge.cudnn_archive_name("8.1.1.33", Version("11.3"), "windows") == "cudnn-11.2-windows-x64-v8.1.1.33.zip"
    )
    assert knowledge.cudnn_archive_name("8.0.5.39", Version("11.2"), "linux") is None


def test_cuda_11_ends_at_9_10_and_cuda_13_starts_at_9_12():
    """support >=9.10,<9.11 cuda 11 is the last CUDA 11 build; >=9.12,<9.17 cuda 13 the first CUDA 13 one."""
    assert fulls("11.8")[0] == "9.10.2.21"
    assert fulls("13.0")[-1] == "9.12.0.46"
    assert not any(Version(full) < Version("9.12") for full in fulls("13.1"))


def test_cuda_10_2_reaches_8_7_and_holds_7_6_5():
    """support >=8.7,<8.8 cuda 10 is the last CUDA 10 build (8.8 has cuda 11 and 12 only)."""
    assert fulls("10.2")[0] == "8.7.0.84"
    assert "7.6.5.32" in fulls("10.2")
    assert "7.6.5.32" in fulls("9.0") and "7.4.2.24" in fulls("10.0")


def test_a_bare_major_means_every_build_of_that_major():
    assert (
        fulls("12")[0] == "9.28.1.4"
    )  # NVIDIA's redistrib_9.28.1.json lists cuda12 archives (PyPI has no cu12 wheel of it)
    assert fulls("13")[0] == "9.28.1.4"


def test_wsl_reads_the_linux_rows_and_releases_are_newest_first():
    assert fulls("12.4", "wsl") == fulls("12.4", "linux")
    releases = fulls("12.4")
    assert releases == sorted(releases, key=Version, reverse=True) and len(set(releases)) == len(releases)


def test_the_cuda_12_8_build_of_9_10_needs_driver_570():
    """support >=9.10,<9.11 has two CUDA 12 builds: 12.0-12.9 (525.60.13) and 12.8/12.9 (570.26 / 570.65)."""
    rows = [row for row in knowledge.cudnn_support_rows() if "9.10.2.21" in row.full_versions and row.cuda == "12"]
    assert sorted((str(row.toolkits), row.driver_linux, row.driver_windows) for row in rows) == [
        (">=12.0,<13", "525.60.13", "527.41"),
        (">=12.8,<13", "570.26", "570.65"),
    ]


@pytest.mark.parametrize(
    ("full", "cuda", "floor"),
    [
        ("7.6.5.32", "10.2", "3.0"),  # 7.6.4-7.6.5: Kepler (3.x)
        ("8.0.5.39", "10.2", "3.0"),  # no matrix read: 8.0.2-8.0.3's CUDA 10.2 floor
        ("8.0.5.39", "11.1", "3.5"),  # no matrix read: 8.0.2-8.0.3's CUDA 11.0 floor
        ("8.7.0.84", "11.8", "3.5"),  # the last with sm_35 cubins
        ("8.8.0.121", "11.8", "5.0"),  # Kepler dropped
        ("9.9.0.52", "12.4", "5.0"),  # no matrix read: 9.5's floor
        ("9.10.2.21", "12.4", "5.0"),
        ("9.11.0.98", "12.4", "7.5"),  # Maxwell, Pascal and Volta dropped (cubins)
        ("9.20.0.48", "12.4", "7.5"),  # no matrix read: 9.17's floor
        ("9.28.1.4", "13.0", "7.5"),
    ],
)
def test_each_build_has_the_compute_capability_floor_nvidia_gave_it_or_an_older_release_did(
    full: str, cuda: str, floor: str
):
    found = knowledge.cudnn_min_compute_capability(row_of(full, cuda))
    assert found is not None and found[0] == floor and found[1].startswith("https://")


@pytest.mark.parametrize(
    ("gpu", "cuda", "cudnn"),
    [
        ("GTX 1080", "12.8", "9.10.2.21"),  # Pascal: the newest cuDNN with sm_61 kernels
        ("Tesla K80", "11.4", "8.7.0.84"),  # Kepler: the newest with sm_35 kernels
        ("RTX 4090", "12.8", "9.28.1.4"),
    ],
)
def test_the_planner_gives_each_gpu_the_newest_cudnn_that_runs_on_it(gpu: str, cuda: str, cudnn: str):
    assert plan(os="linux", gpu=gpu, cuda=cuda)["stack"]["cudnn"] == cudnn


def test_a_cudnn_older_than_the_matrix_keeps_the_frameworks_own_word():
    """TensorFlow 1.12 on Windows was tested with cuDNN 7.2 (tensorflow.yaml), before the matrix's first rows (7.4)."""
    assert (
        not knowledge.cudnn_series_known("7.2")
        and knowledge.cudnn_series_known("7.4")
        and knowledge.cudnn_series_known("8")
    )
    stack = plan("tensorflow==1.12.0", os="windows")["stack"]
    assert (stack["cuda"], stack["cudnn"], stack["cudnn_archive"]) == ("9.0", "7.2", None)


def test_zlibwapi_range_says_its_end_is_indirect():
    row = knowledge.table("cudnn").zlibwapi
    assert row.end_indirect and row.observed
    assert knowledge.zlibwapi_required(Version("8.9.7.29")) and knowledge.zlibwapi_required(Version("8.3.1.22"))
    assert not knowledge.zlibwapi_required(Version("9.0.0.312")) and not knowledge.zlibwapi_required(
        Version("8.2.4.15")
    )


def _broken(section: str, change) -> dict:
    document = copy.deepcopy(knowledge.shipped_document()["cudnn"])
    change(document[section][-1])
    return document


@pytest.mark.parametrize(
    ("section", "change", "message"),
    [
        ("support", lambda row: row.pop("source"), "missing key 'source'"),
        ("support", lambda row: row.update(source="docs.nvidia.com/x"), "'source': expected an https:// URL"),
        ("support", lambda row: row.update(full_versions=["9.17.0.29"]), "9.17.0.29 is not in >=9.18,<9.29"),
        ("support", lambda row: row.update(cuda="11"), "toolkits >=12.0,<13 does not serve CUDA 11"),
        ("support", lambda row: row.update(os=["macos"]), "'os': expected a list of operating systems"),
        (
            "archives",
            lambda row: row.update(pattern="cudnn-{platform}-{version}.zip"),
            "only {cuda}, {cuda_major}, {arch}",
        ),
        ("archives", lambda row: row.pop("source"), "missing key 'source'"),
    ],
)
def test_a_bad_support_or_archive_row_fails_the_table(section: str, change, message: str):
    with pytest.raises(KnowledgeError) as raised:
        schema.build("cudnn", _broken(section, change), "cudnn.yaml")
    assert str(raised.value).startswith("cudnn.yaml: ") and message in str(raised.value)
