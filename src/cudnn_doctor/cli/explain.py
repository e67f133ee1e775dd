"""`cudnn-doctor explain ID` / `explain --all`: the page of a finding, headed by the rule that checks it."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from cudnn_doctor.reports import write_json


def configure_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("explain", help="what a finding id means, why it happens and how to fix it")
    parser.add_argument("id", nargs="?", help="a finding id, e.g. cudnn-shadowed")
    parser.add_argument("--all", action="store_true", help="list every finding id with its severity and title")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cudnn_doctor.cli.options import finding_ids
    from cudnn_doctor.errors import UsageError

    if args.all == bool(args.id):
        raise UsageError("give one finding id, or --all")
    known = _rules()
    if args.all:
        ids = sorted(known)
    elif args.id in known:
        ids = [args.id]
    else:
        ids = sorted(finding_ids([args.id]))  # raises the one-line error, with a suggestion when one is close
    entries = [_entry(i, known[i]) for i in ids]
    if args.format == "json":
        write_json(sys.stdout, entries if args.all else entries[0], indent=2)
    elif args.all:
        sys.stdout.writelines(_header(e) + "\n" for e in entries)
    else:
        entry = entries[0]
        sys.stdout.write(_header(entry) + "\n")
        if entry["severity_when"]:
            sys.stdout.write(f"Severity: {entry['severity']}; {entry['severity_when']}.\n")
        if entry["explained_by"]:
            sys.stdout.write(f"Usually explained by: {', '.join(entry['explained_by'])}\n")
        sys.stdout.write(
            (
                f"{entry['fix_line']} (where the case allows; the report says so per finding)"
                if entry["fix_line"]
                else "fix: manual — follow the steps the finding prints"
            )
            + "\n"
        )
        sys.stdout.write("\n" + entry["page"].rstrip("\n") + "\n")
    return 0


def _rules() -> dict[str, Any]:
    """Every finding id → its rule (doctor-internal-error included: it is registered like the others)."""
    from cudnn_doctor.checks import RULES

    return dict(RULES)


def _entry(finding_id: str, rule: Any) -> dict[str, Any]:
    from cudnn_doctor.checks import pages
    from cudnn_doctor.checks.registry import fix_line

    area = rule.area
    try:
        text = pages.page(finding_id)
    except KeyError:  # tests/test_rule_pages.py keeps this from shipping; never a traceback for the user
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
        "explained_by": list(rule.explained_by),
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
