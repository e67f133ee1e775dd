"""Issue 30: the package index as a recorded source of the knowledge (`knowledge/pypi.py`, `sources/pypi.json.gz`,
the generated `published` table), and JAX plans that install: the extra exists in that release, what it pins was
published, and the Python it runs on is the wheels' own."""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path

import pytest

from cudnn_doctor import knowledge
from cudnn_doctor.knowledge import generate, pypi
from tests.unit.planner.test_plan import plan

JAX_METADATA = """Metadata-Version: 2.1
Name: jax
Version: 0.7.0
Requires-Python: >=3.11
Requires-Dist: numpy>=1.26
Requires-Dist: jaxlib<=0.7.0,>=0.7.0; extra == "cuda13"
Requires-Dist: jax-cuda13-plugin<=0.7.0,>=0.7.0; extra == "cuda13"
Requires-Dist: jax-cuda12-plugin[with-cuda]<=0.7.0,>=0.7.0; extra == "cuda12" and sys_platform == "linux"
Requires-Dist: pywin32; extra == "cuda12" and sys_platform == "win32"
Provides-Extra: cuda12
Provides-Extra: cuda13
Provides-Extra: tpu

"""


def test_releases_from_the_index_by_os_and_python_tag():
    files = [
        {
            "filename": "jax_cuda12_plugin-0.7.0-cp311-cp311-manylinux_2_27_x86_64.whl",
            "url": "https://x/a",
            "requires-python": ">=3.11",
        },
        {"filename": "jax_cuda12_plugin-0.7.0-cp312-cp312-manylinux_2_27_x86_64.whl", "url": "https://x/b"},
        {"filename": "jax_cuda12_plugin-0.7.0-cp312-cp312-manylinux_2_27_aarch64.whl", "url": "https://x/c"},
        {
            "filename": "jax_cuda12_plugin-0.6.0-cp311-cp311-manylinux_2_27_x86_64.whl",
            "url": "https://x/d",
            "yanked": "broken",
        },
        {"filename": "jax-0.4.5.tar.gz", "url": "https://x/e"},
        {"filename": "paddlepaddle_gpu-2.6.2-cp311-cp311-win_amd64.whl", "url": "https://x/f"},
    ]
    found = pypi.releases(files)
    assert found["0.7.0"] == {
        "linux": ["cp311", "cp312"],
        "windows": [],
        "aarch64": ["cp312"],
        "sdist": False,
        "requires_python": ">=3.11",
    }
    assert "0.6.0" not in found, "a yanked file is no release"
    assert found["0.4.5"]["sdist"] and found["0.4.5"]["linux"] == []
    assert found["2.6.2"]["windows"] == ["cp311"] and found["2.6.2"]["linux"] == []


def test_an_extra_adds_only_its_own_linux_requirements():
    assert pypi.extras(JAX_METADATA) == {
        "": ["numpy>=1.26"],  # what every install requires
        "cuda12": ["jax-cuda12-plugin[with-cuda]<=0.7.0,>=0.7.0"],
        "cuda13": ["jaxlib<=0.7.0,>=0.7.0", "jax-cuda13-plugin<=0.7.0,>=0.7.0"],
        "tpu": [],
    }


def _wheel(metadata: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("jax/__init__.py", "")
        archive.writestr("jax-0.7.0.dist-info/METADATA", metadata)
    return buffer.getvalue()


def test_record_reads_the_index_and_one_member_of_each_wheel_by_range(tmp_path: Path):
    """The recorder asks the index, then only byte ranges of the wheel: never the whole file."""
    wheel = _wheel(JAX_METADATA) + b""
    index = {
        "files": [
            {
                "filename": "jax-0.7.0-py3-none-any.whl",
                "url": "https://files.example/jax.whl",
                "size": len(wheel),
                "requires-python": ">=3.11",
            }
        ]
    }
    asked: list[tuple[str, str]] = []

    def get(url: str, headers: dict) -> bytes:
        asked.append((url, headers.get("Range", "")))
        if url.endswith("/jax/"):
            return json.dumps(index).encode()
        start, end = (int(n) for n in headers["Range"].removeprefix("bytes=").split("-"))
        return wheel[start : end + 1]

    document = pypi.record(["jax"], tmp_path / "pypi.json.gz", get)
    entry = document["distributions"]["jax"]["0.7.0"]
    assert entry["extras"]["cuda13"] == ["jaxlib<=0.7.0,>=0.7.0", "jax-cuda13-plugin<=0.7.0,>=0.7.0"]
    assert all(rng for url, rng in asked if url.endswith(".whl")), "each wheel read is a range request"
    assert pypi.read(tmp_path / "pypi.json.gz") == document
    # read again with that document as the previous one: the index only, no wheel (a published release never changes)
    asked.clear()
    again = pypi.fetch(["jax"], get, previous=document)
    assert again["distributions"] == document["distributions"] and [url for url, _ in asked] == [
        "https://pypi.org/simple/jax/"
    ]


def test_the_published_table_is_what_the_recorded_source_gives(tmp_path: Path):
    """Regenerated from the shipped source, the tables are the shipped ones; from another source, another table."""
    assert generate.main(["--check"]) == 0
    document = pypi.read()
    del document["distributions"]["jax"]["0.7.0"]
    other = tmp_path / "pypi.json.gz"
    with gzip.open(other, "wb") as out:
        out.write(json.dumps(document).encode())
    tables = generate.read_yaml_tables(sources=other)
    versions = {row["version"] for row in tables["published"]["releases"] if row["distribution"] == "jax"}
    assert "0.7.0" not in versions and "0.7.2" in versions


def test_the_source_knows_what_the_hand_kept_list_did_not():
    """JAX 0.11 and 0.12 need Python 3.12: `pip index versions` on 3.11 never listed them."""
    assert {"0.11.0", "0.12.1"} <= set(knowledge.framework_releases("jax"))
    assert not knowledge.published("jax-cuda13-plugin") or "0.7.0" not in {
        r.version for r in knowledge.published("jax-cuda13-plugin")
    }


def _jax_builds(python: str) -> list[tuple[str, str]]:
    report = plan("jax", os="linux", python=python)
    return (
        [(option["version"], option["build"]) for option in report["frameworks"][0]["options"]]
        if report.get("frameworks")
        else []
    )


def test_jax_cuda13_is_never_planned_where_its_plugin_was_never_published():
    """jax 0.7.0 and 0.7.1 declare a cuda13 extra pinning jax-cuda13-plugin 0.7.0 / 0.7.1, which PyPI never had."""
    for version in ("0.7.0", "0.7.1"):
        adds = knowledge.published_extra("jax", version, "cuda13")
        assert adds is not None and f"jax-cuda13-plugin[with-cuda]<={version},>={version}" in adds.requires
    report = plan("jax==0.7.1", os="linux", python="3.12")
    planned = json.dumps(report)
    assert "jax[cuda13]==0.7.1" not in planned and "jax[cuda12]==0.7.1" in planned, planned[:2000]


@pytest.mark.parametrize("python, newest", [("3.10", "0.6.2"), ("3.11", "0.10.2"), ("3.12", "0.12.1")])
def test_jax_is_planned_for_a_python_its_wheels_serve(python, newest):
    planned = json.dumps(plan("jax", os="linux", python=python))
    assert f"jax[cuda13]=={newest}" in planned or f"jax[cuda12]=={newest}" in planned, planned[:1500]


def test_tensorflow_on_linux_is_planned_by_its_pip_route_first():
    """TensorFlow 2.21.0's METADATA has `[and-cuda]`: the wheels bring CUDA and cuDNN, no toolkit or archive to install."""
    assert knowledge.published_extra("tensorflow", "2.21.0", "and-cuda") is not None
    stack = plan("tensorflow", os="linux", python="3.11")["stack"]
    assert (stack["version"], stack["build"]) == ("2.21.0", "and-cuda"), stack


def test_paddle_is_planned_only_for_the_pythons_its_release_was_built_for():
    """paddlepaddle-gpu 2.6.2's wheels are cp38-cp312: Python 3.13 gets no 2.6.2 build (from PyPI or Paddle's index)."""
    rejected = plan("paddle==2.6.2", os="linux", python="3.13")
    assert rejected["stack"] is None and any(
        reason["kind"] == "python" for option in rejected["rejected"] for reason in option["reasons"]
    ), rejected["rejected"][:3]
    assert plan("paddle==2.6.2", os="linux", python="3.12")["stack"]["version"] == "2.6.2"


def test_cudnn_9_28_1_has_cuda_12_archives():
    """NVIDIA's redistrib_9.28.1.json lists cuda12 archives (linux-x86_64, linux-sbsa): it is not CUDA 13 only."""
    from packaging.version import Version

    assert (
        knowledge.cudnn_archive_name("9.28.1.4", Version("12.9"), "linux")
        == "cudnn-linux-x86_64-9.28.1.4_cuda12-archive.tar.xz"
    )
    assert plan(os="linux", cuda="12.9")["stack"]["cudnn"] == "9.28.1.4"
