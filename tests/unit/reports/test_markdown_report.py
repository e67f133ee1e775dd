"""Issue 31: `check --format markdown`, a report to paste into a GitHub issue: rendered by a Markdown library it is one
table of the machine, a heading per finding with its fix steps as a list; machine text stays text; redacted by default."""

from __future__ import annotations

import io
import re

from markdown_it import MarkdownIt

from cudnn_doctor.cli import main
from cudnn_doctor.reports import markdown_report
from tests.conftest import LINUX_BASE, machine, run
from tests.unit.system.test_robustness import write_fixture

HOME = "/home/alice"


def _machine():
    env = {
        "HOME": HOME,
        "USER": "alice",
        "PATH": f"{HOME}/<script>x</script>/cuda/bin:/usr/local/cuda-12.1/bin:/usr/bin:/usr/bin",
    }
    return machine(LINUX_BASE, env=env, files={"/usr/bin/ls": {}, "/bin/sh": {}})


def _html(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(text)


def test_the_markdown_renders_as_a_table_and_a_section_per_finding():
    diagnosis = run(_machine())
    out = io.StringIO()
    markdown_report.render(diagnosis, out)
    html = _html(out.getvalue())
    causes = [f for f in diagnosis.findings if f.symptom_of is None]
    assert html.count("<table>") == 1 and "<td>NVIDIA driver and GPU</td>" in html
    assert html.count("<h4>") == len(causes) > 0
    assert html.count("<ol>") == sum(1 for f in causes if f.fix)
    assert "<script>" not in html and "&lt;script&gt;" in html  # the machine's text is never markup


def test_it_is_redacted_unless_asked_not_to(tmp_path, capsys):
    path = write_fixture(tmp_path, _machine())
    assert main(["check", "--fixture", str(path), "--format", "markdown"]) in (0, 1)
    text = capsys.readouterr().out
    assert "alice" not in text and "/home/user/" in text
    assert main(["check", "--fixture", str(path), "--format", "markdown", "--no-redact"]) in (0, 1)
    assert f"{HOME}/" in capsys.readouterr().out


def test_a_healthy_machine_says_so():
    out = io.StringIO()
    markdown_report.render(run(machine(LINUX_BASE, env={"PATH": "/usr/bin"}, files={"/usr/bin/ls": {}})), out)
    first = out.getvalue().splitlines()[0]
    assert re.match(r"### cudnn-doctor check: (no problems found|0 error\(s\))", first), first
