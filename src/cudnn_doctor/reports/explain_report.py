"""What `explain` says: a finding's page headed by the rule that checks it, or every rule in one line each."""

from __future__ import annotations

from typing import Any, Optional, Sequence, TextIO

from cudnn_doctor.reports import write_json


def render(ids: Sequence[str], everything: bool, json_format: bool, out: TextIO) -> None:
    """`ids` are known finding ids (the command line checked them)."""
    known = rules()
    entries = [_entry(i, known[i]) for i in ids]
    if json_format:
        write_json(out, entries if everything else entries[0], indent=2)
    elif everything:
        out.writelines(_header(e) + "\n" for e in entries)
    else:
        _page(entries[0], out)


def _page(entry: dict[str, Any], out: TextIO) -> None:
    out.write(_header(entry) + "\n")
    if entry["severity_when"]:
        out.write(f"Severity: {entry['severity']}; {entry['severity_when']}.\n")
    if entry["explained_by"]:
        out.write(f"Usually explained by: {', '.join(entry['explained_by'])}\n")
    fix = (
        f"{entry['fix_line']} (where the case allows; the report says so per finding)"
        if entry["fix_line"]
        else "fix: manual — follow the steps the finding prints"
    )
    out.write(fix + "\n")
    out.write("\n" + entry["page"].rstrip("\n") + "\n")


def rules() -> dict[str, Any]:
    """Every finding id → its rule (doctor-internal-error included: it is registered like the others)."""
    from cudnn_doctor.checks import RULES

    return dict(RULES)


def _entry(finding_id: str, rule: Any) -> dict[str, Any]:
    from cudnn_doctor.checks import RULES, pages
    from cudnn_doctor.checks.registry import explanations, fix_line

    area = rule.area
    explained_by = explanations(RULES).get(finding_id, set())
    try:
        text = pages.page(finding_id)
    except KeyError:  # tests/unit/checks/test_rule_pages.py keeps this from shipping; never a traceback for the user
        text = rule.doc
    return {
        "id": finding_id,
        "severity": rule.severity.value,
        "severity_when": getattr(rule, "severity_when", "") or None,
        "area": _text(area),
        "title": rule.title,
        "page": text,
        "related": pages.related(text),
        "why": rule.doc,
        "explained_by": [i for i in RULES if i in explained_by],
        "autofix": getattr(rule, "fix_kind", None),
        "fix_line": fix_line(finding_id),
    }


def _text(value: Any) -> Optional[str]:
    """An area as text, whether the rule holds a string or an enum."""
    if value is None:
        return None
    return str(getattr(value, "value", value))


def _header(entry: dict[str, Any]) -> str:
    """`id (severity, area): title`, and where the case decides the severity, `id (warning or by case, area)`."""
    severity = f"{entry['severity']} or by case" if entry.get("severity_when") else entry["severity"]
    kind = ", ".join(part for part in (severity, entry["area"]) if part)
    return f"{entry['id']} ({kind}): {entry['title']}"
