"""MkDocs hook: one page per finding id, made from the pages `cudnn-doctor explain ID` prints
(src/cudnn_doctor/checks/pages/), and an index of them, so the site and the command never differ."""

from __future__ import annotations

from typing import Any


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    from cudnn_doctor.checks import RULES, pages

    rows = []
    for rule_id in sorted(RULES):
        rule = RULES[rule_id]
        try:
            text = pages.page(rule_id)
        except KeyError:
            continue  # doctor-internal-error and the like: no page (tests/unit/checks/test_rule_pages.py says which)
        severity = (
            f"{rule.severity.value}, or by case: {rule.severity_when}" if rule.severity_when else rule.severity.value
        )
        head = f"# `{rule_id}`\n\n**{rule.title}** · severity: {severity} · area: {rule.area.value}\n\n"
        files.append(File.generated(config, f"findings/{rule_id}.md", content=head + text))
        rows.append(f"| [`{rule_id}`]({rule_id}.md) | {rule.severity.value} | {rule.title} |")
    index = "# Findings\n\nEvery finding `check` can report; `cudnn-doctor explain ID` prints the same page.\n\n"
    index += "| id | severity | title |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    files.append(File.generated(config, "findings/index.md", content=index))
    return files
