"""The prebuilt (pickled) knowledge tables: equal to building them from knowledge.json, used only while they match it."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

from cudnn_doctor import knowledge
from cudnn_doctor.knowledge import generate, prebuilt, records, schema


def test_the_shipped_pickle_is_what_the_json_builds():
    text = generate.OUTPUT.read_text(encoding="utf-8")
    assert generate.prebuilt_is_current(text), f"{generate.PREBUILT.name} is out of date: run `{generate.COMMAND}`"


def test_every_prebuilt_table_equals_the_table_built_from_json_and_prints_alike():
    tables = prebuilt.read(generate.PREBUILT, generate.OUTPUT)
    assert tables is not None and set(tables) == set(schema.TABLES)
    for name in schema.TABLES:
        built = schema.build(name, knowledge.shipped_document()[name], f"{name}.yaml")
        loaded = prebuilt.table(tables, name)
        assert type(loaded) is type(built) and loaded == built and repr(loaded) == repr(built), name


def test_a_pickle_of_another_json_is_not_read(tmp_path):
    other = tmp_path / "knowledge.json"
    other.write_bytes(generate.OUTPUT.read_bytes().replace(b'"reviewed"', b'"reviewed" ', 1))
    assert prebuilt.read(generate.PREBUILT, other) is None
    assert prebuilt.read(generate.PREBUILT, generate.OUTPUT) is not None


def test_a_checkout_with_crlf_line_ends_still_reads_the_pickle(tmp_path):
    crlf = tmp_path / "knowledge.json"
    crlf.write_bytes(generate.OUTPUT.read_bytes().replace(b"\n", b"\r\n"))
    assert prebuilt.read(generate.PREBUILT, crlf) is not None


def test_a_pickle_of_other_records_is_not_read(tmp_path, monkeypatch):
    path = tmp_path / "knowledge.pickle"
    path.write_bytes(generate.PREBUILT.read_bytes())
    assert prebuilt.read(path, generate.OUTPUT) is not None
    monkeypatch.setattr(prebuilt, "records_fingerprint", lambda: 0)
    assert prebuilt.read(path, generate.OUTPUT) is None


def test_a_broken_or_stale_pickle_falls_back_to_the_json(tmp_path, monkeypatch):
    expected = {name: knowledge.table(name) for name in schema.TABLES}
    for content in (
        b"not a pickle",
        pickle.dumps({"format": prebuilt.FORMAT, "json": (0, 0), "records": 0, "tables": {}}),
    ):
        path = tmp_path / "knowledge.pickle"
        path.write_bytes(content)
        monkeypatch.setattr(knowledge, "PREBUILT", path)
        knowledge._prebuilt.cache_clear()
        knowledge._tables_changed()
        try:
            assert knowledge._prebuilt() is None
            for name in schema.TABLES:
                assert repr(knowledge.table(name)) == repr(expected[name])
        finally:
            monkeypatch.undo()
            knowledge._prebuilt.cache_clear()
            knowledge._tables_changed()


def test_the_generator_rewrites_a_stale_pickle(tmp_path, monkeypatch):
    path = tmp_path / "knowledge.pickle"
    path.write_bytes(b"stale")
    monkeypatch.setattr(generate, "PREBUILT", path)
    text = generate.OUTPUT.read_text(encoding="utf-8")
    assert not generate.prebuilt_is_current(text, path)
    assert generate.main(["--check"]) == 1
    assert generate.main([]) == 0
    assert generate.prebuilt_is_current(text, path)
    assert path.read_bytes() == knowledge.PREBUILT.read_bytes()  # the same bytes as shipped


def test_a_version_range_pickles_as_its_text():
    value = records.VersionRange(">=3.8,<3.12")
    back = pickle.loads(pickle.dumps(value, protocol=prebuilt.PROTOCOL))
    assert type(back) is records.VersionRange and str(back) == ">=3.8,<3.12" and back == value
    assert "3.11" in back and "3.12" not in back


@pytest.mark.live
def test_a_run_loads_the_tables_without_the_schema_or_json():
    code = "import sys; from cudnn_doctor import knowledge; [knowledge.table(n) for n in knowledge._prebuilt()]; print(sorted(m for m in ('json', 'cudnn_doctor.knowledge.schema') if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(generate.DATA.parents[2])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "[]"
