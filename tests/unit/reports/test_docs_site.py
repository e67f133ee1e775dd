"""Issue 31: the documentation is a site (MkDocs with the Material theme) built with `--strict`, holding a page for
every finding, made from the pages `explain` prints; the README is the short front door that links into it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor.checks import RULES, pages
from tests.conftest import REPO


@pytest.mark.live
def test_the_site_builds_strict_with_a_page_per_finding(tmp_path: Path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(site)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    with_pages = [rule_id for rule_id in RULES if _page(rule_id)]
    assert with_pages and all((site / "findings" / rule_id / "index.html").is_file() for rule_id in with_pages)
    index = (site / "findings" / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{rule_id}/"' in index for rule_id in with_pages)


def _page(rule_id: str) -> bool:
    try:
        pages.page(rule_id)
    except KeyError:
        return False
    return True


def test_the_readme_is_a_front_door_that_links_into_the_docs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert (
        lines[0] == "```"
        and lines[1].startswith("python3 -m venv .venv && ")
        and lines[2].startswith("python3 -m venv .venv && ")
    )
    assert len(lines) <= 110, len(lines)  # about two screens
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / target).is_file(), target
    table = readme.split("## Commands", 1)[1].split("\n\n", 2)[1]
    rows = [row for row in table.splitlines() if row.startswith("| `")]
    assert rows and all(len(re.findall(r"(?<!\\)\|", row)) == 3 for row in rows), "one-line cells, two to a row"
