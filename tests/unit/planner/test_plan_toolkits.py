"""Issue 30: `plan --cuda` answers the question asked. An exact release is planned as that release with its own
Table 3 minimum (12.9.0 is not 12.9.1); a major alone (`--cuda 12`) is any of its releases, the newest first."""

from __future__ import annotations

import pytest

from cudnn_doctor.errors import UsageError
from tests.unit.planner.test_plan import plan


@pytest.mark.parametrize(
    "cuda, release, linux_driver",
    [
        ("12.9.0", "12.9.0", "575.51.03"),  # Table 3, "CUDA 12.9 GA"
        ("12.9.1", "12.9.1", "575.57.08"),  # "CUDA 12.9 Update 1"
        ("12.9", "12.9.1", "575.57.08"),  # a minor: its newest update
        ("12", "12.9.1", "575.57.08"),  # a major: its newest release
        ("11.2.0", "11.2.0", "460.27.03"),  # "CUDA 11.2.0 GA"
    ],
)
def test_a_toolkit_release_is_planned_as_asked(cuda, release, linux_driver):
    stack = plan(os="linux", cuda=cuda)["stack"]
    assert (stack["version"], stack["toolkit"]) == (release, release), stack
    assert stack["min_driver"]["linux"] == linux_driver, stack["min_driver"]


def test_a_cuda_that_never_existed_is_refused():
    for cuda in ("12.7", "14", "9.3"):
        with pytest.raises(UsageError, match="no CUDA toolkit release of that version"):
            plan(os="linux", cuda=cuda)


def test_every_table_3_toolkit_is_planned():
    """Table 3 lists toolkits from CUDA 7.0: a machine whose driver runs nothing newer gets them, not "no stack"; where the
    support matrix has no cuDNN for one, that is the reason given, not silence."""
    stack = plan(os="linux", cuda="9.0")["stack"]
    assert (stack["toolkit"], stack["min_driver"]["linux"], stack["cudnn"]) == ("9.0.76", "384.81", "7.6.5.32"), stack
    rejected = plan(os="linux", cuda="8.0")["rejected"]
    eight = next(r for r in rejected if r["version"] == "8.0.44")
    assert [reason["kind"] for reason in eight["reasons"]] == ["cudnn"], eight


def test_a_side_feed_build_is_installed_from_that_feed_alone():
    """onnxruntime-gpu 1.18.0 is on PyPI (CUDA 11.8) and on the CUDA 12 feed: `--extra-index-url` would let pip take
    either, so the CUDA 12 build comes from the feed alone (`--index-url`, `--no-deps`), then the met pin brings its deps."""
    commands = plan("onnxruntime==1.18.0", os="linux", cuda="12.2")["commands"]
    pip = [line for line in commands if "pip install" in line]
    assert not any("--extra-index-url" in line for line in pip), pip
    assert pip[0].endswith(
        "--index-url https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-12/pypi/simple/ --no-deps"
    )
    assert pip[1] == 'python -m pip install "onnxruntime-gpu==1.18.0"'


def test_checks_install_a_side_feed_build_as_the_plan_does():
    """`check`'s fix lines come from the same rule: the feed alone without dependencies, then the met pin; a release only
    the feed has keeps the one line."""
    from cudnn_doctor.checks._plan import pip_install

    feed = "https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-12/pypi/simple/"
    line = pip_install("/v/bin/python", ["onnxruntime-gpu==1.18.0"], ("--extra-index-url", feed))
    assert (
        line
        == f'"/v/bin/python" -m pip install onnxruntime-gpu==1.18.0 --index-url {feed} --no-deps && "/v/bin/python" -m pip install onnxruntime-gpu==1.18.0'
    )
    only_on_feed = pip_install("/v/bin/python", ["onnxruntime-gpu==1.18.9"], ("--extra-index-url", feed))
    assert only_on_feed == f'"/v/bin/python" -m pip install onnxruntime-gpu==1.18.9 --extra-index-url {feed}'
