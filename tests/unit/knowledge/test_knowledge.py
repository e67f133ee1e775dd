"""The knowledge tables: typed rows checked on load (file and row named), the generated JSON, overlays, sample lookups."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.errors import InputError, KnowledgeError
from cudnn_doctor.knowledge import files, generate, records, schema, tables


def test_every_table_loads_with_review_date():
    dates = knowledge.reviewed_dates()
    assert (
        set(dates) == set(schema.TABLES) == {path.stem for path in generate.DATA.glob("*.yaml")} | set(generate.SOURCED)
    )
    assert all(len(date) == 10 for date in dates.values())


def test_shipped_json_is_generated_from_the_yaml():
    expected = generate.render(generate.read_yaml_tables())
    assert generate.OUTPUT.read_text(encoding="utf-8") == expected, (
        f"{generate.OUTPUT.name} is out of date: run `{generate.COMMAND}`"
    )


def test_the_generator_checks_without_writing(capsys):
    assert generate.main(["--check"]) == 0
    assert capsys.readouterr().err == ""


def test_every_row_is_a_record_with_a_vendor_url():
    for name in schema.TABLES:
        table = knowledge.table(name)
        assert type(table) is schema.TABLES[name].record
        for section, spec in schema.TABLES[name].sections.items():
            value = getattr(table, section)
            for row in value if spec.key else (value,):
                assert row.source.startswith("https://"), (name, section, row)


def test_each_section_checks_exactly_its_record_fields():
    for name, table in schema.TABLES.items():
        assert list(table.record._fields) == ["reviewed", *table.sections], name
        for section_name, section in table.sections.items():
            assert set(section.fields) == set(section.record._fields), (name, section_name)
            assert set(section.label) <= set(section.fields), (name, section_name)


@pytest.mark.live
def test_a_run_loads_the_tables_without_pyyaml():
    code = "import sys; from cudnn_doctor import knowledge; [knowledge.table(n) for n in knowledge.schema.TABLES]; print('yaml' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(generate.DATA.parents[2])},
    )
    assert done.stdout.strip() == "False"


def _yaml_tables(tmp_path):
    for path in generate.DATA.glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def test_a_renamed_key_names_the_file_and_the_row(tmp_path):
    data = _yaml_tables(tmp_path)
    torch = data / "torch.yaml"
    text = torch.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if '{version: "2.11"' in line)
    torch.write_text(text.replace(row, row.replace("python:", "pyton:")), encoding="utf-8")
    with pytest.raises(KnowledgeError) as raised:
        generate.read_yaml_tables(data)
    assert str(raised.value) == "torch.yaml: releases[4] (version 2.11): unknown key 'pyton' (did you mean 'python'?)"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('{version: "2.15", cuda: ["12.6"], source: "https://x"}', "releases[0] (version 2.15): missing key 'python'"),
        (
            '{version: 2.15, python: ">=3.10", cuda: ["12.6"], source: "https://x"}',
            "releases[0]: 'version': expected a version in quotes",
        ),
        (
            '{version: "2.15", python: "3.10-3.14", cuda: ["12.6"], source: "https://x"}',
            "'python': expected a PEP 440 version range",
        ),
        (
            '{version: "2.15", python: ">=3.10", cuda: [12.6], source: "https://x"}',
            "'cuda': expected a list of versions in quotes",
        ),
        (
            '{version: "2.15", python: ">=3.10", cuda: ["12.6"], source: "blog.csdn.net/x"}',
            "'source': expected an https:// URL",
        ),
        (
            '{version: "2.15", python: ">=3.10", cuda: ["12.6"], source: "https://x", copy: "mirror"}',
            "'copy': expected an https:// URL",
        ),
        ("just text", "releases[0]: expected a mapping of keys to values"),
    ],
)
def test_a_bad_row_is_one_clear_error(row, message):
    document = files.parse_yaml(
        f"reviewed: 2026-12-03\nindex_url: {{template: x, source: 'https://x'}}\nreleases:\n  - {row}\n", "torch.yaml"
    )
    with pytest.raises(KnowledgeError, match=r"^torch\.yaml: ") as raised:
        schema.build("torch", document, "torch.yaml")
    assert message in str(raised.value)


def test_file_level_errors():
    with pytest.raises(KnowledgeError, match=r"torch.yaml: line 4: key 'python' given twice"):
        files.parse_yaml("releases:\n  - version: '2.0'\n    python: '>=3.8'\n    python: '>=3.9'\n", "torch.yaml")
    with pytest.raises(KnowledgeError, match="unknown key 'relases' \\(did you mean 'releases'\\?\\)"):
        schema.build("torch", {"reviewed": "2026-12-03", "relases": []}, "torch.yaml")
    with pytest.raises(KnowledgeError, match="missing key 'index_url'"):
        schema.build("torch", {"reviewed": "2026-12-03", "releases": []}, "torch.yaml")
    rows = [{"version": v, "python": ">=3.8", "cuda": ["11.8"], "source": "https://x"} for v in ("2.0", "2.0.1")]
    with pytest.raises(
        KnowledgeError, match=r"^mine.yaml: torch.releases\[1\] \(version 2.0.1\): same key as torch.releases\[0\]"
    ):
        schema.partial("torch", {"releases": rows}, "mine.yaml")


def test_driver_table_is_monotonic():
    shipped = knowledge.table("cuda_driver")
    tables._check_cuda_driver(shipped, "cuda_driver.yaml")
    broken = shipped._replace(
        toolkits=(
            records.ToolkitDriver("10.0", "GA", "410", "411", "https://x"),
            records.ToolkitDriver("10.1", "GA", "400", "418", "https://x"),
        )
    )
    with pytest.raises(
        KnowledgeError, match=r"cuda_driver\.yaml: CUDA 10\.1 needs an older linux driver than CUDA 10\.0"
    ):
        tables._check_cuda_driver(broken, "cuda_driver.yaml")


@pytest.mark.parametrize(
    ("cuda", "os_name", "driver", "rule"),
    [
        ("12.1", "linux", "525", "minor-version compatibility"),
        ("11.8", "windows", "452.39", "minor-version compatibility"),
        ("10.1", "windows", "418.96", "toolkit release"),
        ("13.0", "linux", "580", "minor-version compatibility"),
    ],
)
def test_driver_requirement(cuda, os_name, driver, rule):
    need = knowledge.driver_requirement(Version(cuda), os_name)
    assert (str(need.driver), need.rule) == (driver, rule)


def test_max_cuda_for_old_drivers():
    assert knowledge.max_cuda_for_driver(Version("384.130"), "linux")[0] == Version("9.0.76")
    assert knowledge.max_cuda_for_driver(Version("382.05"), "windows")[0] == Version("8.0.44")


@pytest.mark.parametrize(
    ("cuda", "os_name", "name"),
    [
        ("11.2", "windows", "cudart64_110.dll"),
        ("10.1", "windows", "cudart64_101.dll"),
        ("12.6", "linux", "libcudart.so.12"),
        ("11.8", "linux", "libcudart.so.11.0"),
    ],
)
def test_cudart_names(cuda, os_name, name):
    assert knowledge.cudart_name(Version(cuda), os_name) == name


def test_framework_tables():
    assert knowledge.tensorflow_build(Version("2.10.1"), "windows").cuda == "11.2"
    assert knowledge.tensorflow_build(Version("2.16.2"), "linux").cudnn == "8.9"
    torch_20 = knowledge.torch_release(Version("2.0.1"))
    assert Version("3.11.4") in torch_20.python and Version("3.12.0") not in torch_20.python
    assert str(torch_20.python) == ">=3.8,<3.12"
    assert knowledge.torch_index_url(Version("11.8")) == "https://download.pytorch.org/whl/cu118"
    assert knowledge.gpu_compute_capability("NVIDIA GeForce RTX 3060") == "8.6"
    assert knowledge.onnxruntime_build(Version("1.16.3")).cuda == "11.8"
    assert knowledge.onnxruntime_build(Version("1.18.1")).cudnn == "8"  # the PyPI default before 1.19
    assert Version("3.12.1") in knowledge.torch_release(Version("2.2.0")).python  # cp312 wheels on the index
    assert Version("3.13.0") in knowledge.torch_release(Version("2.5.1")).python
    assert "10.2" in knowledge.torch_release(Version("1.12.1")).cuda  # on the previous-versions page, not in RELEASE.md
    assert knowledge.onnxruntime_build(Version("1.20.0")).cuda == "12"
    assert knowledge.onnxruntime_build(Version("1.26.0")).cuda == "12"  # build_and_package_info.py: 12.8
    assert knowledge.onnxruntime_build(Version("1.27.0")).cuda == "13.0"  # the first CUDA 13 build on PyPI
    assert knowledge.onnxruntime_build(Version("1.31.1")).cudnn == "9"
    assert [knowledge.zlibwapi_required(Version(v)) for v in ("8.2.4", "8.3.0", "8.9.7.29", "9.0.0")] == [
        False,
        True,
        True,
        False,
    ]
    assert knowledge.library_provider("cublas64_11.dll").provider.startswith("the CUDA 11 toolkit")


@pytest.mark.parametrize(
    ("text", "newest"),
    [(">=3.8,<3.12", "3.11"), ("<=3.10,>=3.7", "3.10"), ("==3.11.*", "3.11"), (">=3.9", "3.9"), ("<3", None)],
)
def test_newest_minor_of_a_range(text, newest):
    assert records.VersionRange(text).newest_minor() == newest


def test_overlay_replaces_and_adds_rows_then_goes_away(tmp_path):
    mine = tmp_path / "newer.yaml"
    mine.write_text(
        "torch:\n  releases:\n"
        '    - {version: "2.16", python: ">=3.10,<3.16", cuda: ["12.6", "13.0"], source: "https://pytorch.org/x"}\n'
        '    - {version: "2.0.1", python: ">=3.8,<3.13", cuda: ["11.8"], source: "https://pytorch.org/y"}\n',
        encoding="utf-8",
    )
    assert knowledge.torch_release(Version("2.16.0")) is None
    with knowledge.overlay(mine):
        assert knowledge.torch_release(Version("2.16.0")).cuda == ("12.6", "13.0")
        assert (
            str(knowledge.torch_release(Version("2.0.0")).python) == ">=3.8,<3.13"
        )  # same key (2.0) as the shipped row: replaced
        assert knowledge.torch_release(Version("2.1.0")).version == "2.1"  # the others stay
        assert knowledge.table("torch").releases[0].version == "2.16"  # first, for lookups that take the first match
    assert knowledge.torch_release(Version("2.16.0")) is None
    assert str(knowledge.torch_release(Version("2.0.0")).python) == ">=3.8,<3.12"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "a.yaml",
            "torch:\n  releases:\n    - {version: '2.15', pyton: '>=3.10', cuda: ['12.6'], source: 'https://x'}\n",
            "a.yaml: torch.releases[0] (version 2.15): unknown key 'pyton' (did you mean 'python'?)",
        ),
        ("a.json", '{"torh": {}}', "a.json: unknown table 'torh' (did you mean 'torch'?)"),
        (
            "a.json",
            '{"torch": {"relases": []}}',
            "a.json: unknown key 'torch.relases' (did you mean 'torch.releases'?)",
        ),
        ("a.json", "[1, 2", "a.json: not valid JSON"),
        ("a.yaml", "- just\n- a list\n", "a.yaml: expected a mapping of table names"),
        (
            "a.json",
            '{"cuda_driver": {"toolkits": [{"cuda": "11.7", "release": "GA", "linux": "400.1", "windows": "516.01", "source": "https://x"}]}}',
            "a.json: cuda_driver: CUDA 11.7 needs an older linux driver than CUDA 11.6.2",
        ),
    ],
)
def test_a_bad_overlay_is_an_input_error_naming_the_file(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as raised:
        knowledge.read_overlay(path)
    assert str(raised.value).startswith(str(path)) or str(raised.value).startswith(name)
    assert message.split(": ", 1)[1] in str(raised.value)


def test_an_unreadable_overlay_is_an_input_error(tmp_path):
    binary = tmp_path / "latin1.yaml"
    binary.write_bytes(b"torch: {releases: []}  # caf\xe9\n")
    with pytest.raises(InputError, match=r"latin1\.yaml: not UTF-8 text"):
        knowledge.read_overlay(binary)
    with pytest.raises(InputError, match=r"cannot read .*: "):
        knowledge.read_overlay(tmp_path)
    with pytest.raises(InputError, match=r"no such knowledge file: .*missing\.yaml"):
        knowledge.read_overlay(tmp_path / "missing.yaml")


def test_canonical_name_agrees_with_packaging():
    from packaging.utils import canonicalize_name

    from cudnn_doctor.versions import canonical_name

    for name in ("Paddle_GPU", "nvidia-cudnn-cu12", "tf.nightly", "ONNXRuntime--GPU", "torch"):
        assert canonical_name(name) == canonicalize_name(name)


def test_a_lookup_tells_a_major_alone_from_its_x_0_release():
    """Version("11") == Version("11.0") in packaging, yet "CUDA 11, any minor" and "CUDA 11.0" need different drivers
    (11.0's own minimum lies below the 11.x floor): a cached answer to one is never the other's, whichever came first."""
    knowledge._tables_changed()
    alone_first = (knowledge.driver_rule(Version("11"), "windows"), knowledge.driver_rule(Version("11.0"), "windows"))
    knowledge._tables_changed()
    release_first = (knowledge.driver_rule(Version("11.0"), "windows"), knowledge.driver_rule(Version("11"), "windows"))
    assert alone_first == release_first[::-1]
    assert alone_first[0].rule != alone_first[1].rule, alone_first
