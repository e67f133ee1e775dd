"""Rule pages: one page per finding id, none without a rule, each in the same five sections; `explain` prints them."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest

from cudnn_doctor.checks import INTERNAL_ERROR, RULES, pages
from cudnn_doctor.cli import main

ROOT = Path(__file__).resolve().parents[3]


def finding_ids() -> set[str]:
    return set(RULES) | {INTERNAL_ERROR}


def test_every_finding_id_has_a_page():
    assert sorted(finding_ids() - set(pages.page_ids())) == []


def test_every_page_names_a_finding_id():
    assert sorted(set(pages.page_ids()) - finding_ids()) == []


@pytest.mark.parametrize("finding_id", pages.page_ids())
def test_page_has_the_five_sections_in_order(finding_id):
    text = pages.page(finding_id)
    assert text.startswith("## What it means\n"), (
        "nothing above the first section: severity and title come from the rule"
    )
    assert pages.sections(text) == list(pages.SECTIONS)
    bodies = re.split(r"^## .+$", text, flags=re.MULTILINE)[1:]
    assert all(body.strip() for body in bodies), "an empty section"
    example = bodies[pages.SECTIONS.index("Example")]
    assert "```text\n" in example, "the example shows the finding as the tool prints it, in a text block"


@pytest.mark.parametrize("finding_id", pages.page_ids())
def test_related_ids_exist(finding_id):
    text = pages.page(finding_id)
    listed = pages.related(text)
    items = [line for line in text.split("\n## Related\n", 1)[1].splitlines() if line.strip()]
    assert len(items) == len(listed), f"every item under Related starts with an id in backticks: {items}"
    assert listed, "a page names at least one related id"
    assert sorted(set(listed) - finding_ids()) == []
    assert finding_id not in listed


def test_unknown_page_is_a_key_error():
    with pytest.raises(KeyError):
        pages.page("no-such-finding")
    with pytest.raises(KeyError):
        pages.page("../checks/pages/cudnn-missing")


def test_pages_ship_in_the_wheel():
    """A non-editable install takes only what package-data names: every page must match one of its globs."""
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["cudnn_doctor"]
    for finding_id in pages.page_ids():
        assert any(fnmatch.fnmatch(f"checks/pages/{finding_id}.md", g) for g in globs), globs


def test_explain_prints_the_rule_header_and_the_page(capsys):
    assert main(["explain", "cudnn-missing"]) == 0
    out = capsys.readouterr().out
    rule = RULES["cudnn-missing"]
    assert out.splitlines()[0] == f"cudnn-missing ({rule.severity.value}, {rule.area.value}): {rule.title}"
    assert pages.page("cudnn-missing").rstrip() in out


def test_explain_internal_error(capsys):
    assert main(["explain", INTERNAL_ERROR]) == 0
    assert pages.page(INTERNAL_ERROR).rstrip() in capsys.readouterr().out


def test_explain_unknown_id_is_one_line_and_exit_2(capsys):
    assert main(["explain", "cudnn-shadow"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines() == [
        "cudnn-doctor: error: unknown finding id 'cudnn-shadow' (did you mean 'cudnn-shadowed'?)"
    ]


def test_explain_all_lists_one_line_per_id(capsys):
    assert main(["explain", "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == sorted(finding_ids())
    assert "## What it means" not in lines


def test_explain_json_has_the_page_and_related_ids(capsys):
    assert main(["explain", "torch-cuda-unavailable", "--format", "json"]) == 0
    entry = json.loads(capsys.readouterr().out)
    assert entry["id"] == "torch-cuda-unavailable"
    assert entry["severity"] == RULES["torch-cuda-unavailable"].severity.value
    assert entry["title"] == RULES["torch-cuda-unavailable"].title
    assert entry["page"] == pages.page("torch-cuda-unavailable")
    assert entry["related"] == pages.related(entry["page"])
    assert "driver-too-old" in entry["related"]
