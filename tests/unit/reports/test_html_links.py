"""The HTML report links only the URLs the doctor chose: text from the machine (a PATH entry holding a URL, a
folder named like a link) is escaped text, never an <a href>; the doctor's own download pages and pip indexes stay
links."""

from __future__ import annotations

import io
import re
from pathlib import Path

from cudnn_doctor.checks import links
from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.reports import html, html_page
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import WINDOWS_BASE, machine

SRC = Path(__file__).resolve().parents[3] / "src" / "cudnn_doctor"
EVIL = "https://evil.example/cuda-12/bin"


def _links(text: str) -> list[str]:
    return re.findall(r'<a [^>]*href="([^"]*)"', text)


def test_a_url_in_a_path_entry_is_text_in_the_report():
    """Before, every https URL in a fix step became a link, the PATH entry's included."""
    system = FixtureSystem(
        machine(WINDOWS_BASE, env={"PATH": f"C:\\Windows\\System32;{EVIL};http://x.example/cuda/bin"})
    )
    diagnosis = diagnose(system, with_frameworks=False)
    assert any(EVIL in step for f in diagnosis.findings for step in f.fix)  # the machine's text is in a fix step
    out = io.StringIO()
    html.render_check(diagnosis, out)
    text = out.getvalue()
    assert EVIL in text  # shown, escaped
    assert not [link for link in _links(text) if "example" in link]
    assert all(link.startswith("#") or links.chosen_url(link) for link in _links(text))


def test_the_doctors_own_urls_stay_links():
    assert html_page.inline(
        "Install it from https://developer.nvidia.com/cuda-downloads and see https://evil.example/a."
    ) == (
        'Install it from <a href="https://developer.nvidia.com/cuda-downloads">https://developer.nvidia.com/cuda-downloads</a> and see https://evil.example/a.'
    )
    assert links.chosen_url("https://download.pytorch.org/whl/cu121")  # the knowledge's template
    assert not links.chosen_url("https://download.pytorch.org/whl/cu121/../../evil")
    assert 'href="https://example.com/x"' in html.markdown(
        "See https://example.com/x."
    )  # the pages are the doctor's own text


def test_every_url_the_rules_name_is_a_chosen_one():
    """A URL a check or the planner writes into a fix step is in DOCTOR_LINKS (or the knowledge): a new one is added there."""
    named = set()
    for folder in ("checks", "planner"):
        for path in (SRC / folder).glob("*.py"):
            named.update(re.findall(r"https?://[^\s<>()\"'`]+[^\s<>()\"'`.,;:]", path.read_text(encoding="utf-8")))
    assert named and not [url for url in sorted(named) if not links.chosen_url(url)]
