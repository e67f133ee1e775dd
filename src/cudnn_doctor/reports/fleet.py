"""`fleet`'s terminal and JSON reports: the stacks (the reference and each drifting group with its
differing fields), the nodes not reached, each node's findings and the count of nodes per finding id.

Per node the reports carry what `check --format json` carries of a finding (id, severity, area,
title, detail), never the snapshot itself: a snapshot holds paths and variables a fleet report
has no need to spread.
"""

from __future__ import annotations

from typing import Any, Iterable, TextIO

from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.fleet.model import FIELD_TITLES, OK, STACK_FIELDS, FleetReport, Group, NodeResult
from cudnn_doctor.reports import write_json

FLEET_SCHEMA = "cudnn-doctor-fleet/1"
_MARK = {None: "✓", Severity.INFO: "•", Severity.WARNING: "!", Severity.ERROR: "✗"}
_SHOWN_NAMES = 8  # node names listed per group in the terminal; the JSON and HTML list all


def verdict(report: FleetReport) -> str:
    """One line: how many nodes, how many healthy, how many stacks."""
    total = len(report.nodes)
    unwell = [f"{n} {status}" for status, n in report.statuses.items() if n and status != OK]
    stacks = len(report.groups)
    drift = (
        f"{stacks} stacks: drift from the reference"
        if stacks > 1
        else ("one stack" if stacks == 1 else "no stack known")
    )
    return (
        f"{total} node(s), {len(report.healthy)} healthy"
        + (f" ({', '.join(unwell)})" if unwell else "")
        + f" · {drift}"
    )


# ---------------------------------------------------------------- terminal


def render_text(report: FleetReport, out: TextIO) -> None:
    out.write("\n".join(text_lines(report)) + "\n")


def text_lines(report: FleetReport) -> Iterable[str]:
    yield f"cudnn-doctor fleet: {verdict(report)}"
    yield ""
    yield "Stacks"
    for group in report.groups:
        yield from _group_lines(group)
    unreached = [n for n in report.nodes if n.status != OK]
    if unreached:
        yield ""
        yield "Nodes not checked"
        width = max(len(n.node) for n in unreached)
        for node in unreached:
            yield f"  ✗ {node.node:<{width}}  {node.status:<11}  {node.error or ''}".rstrip()
    with_findings = [n for n in report.nodes if n.status == OK and n.worst in (Severity.ERROR, Severity.WARNING)]
    infos = sum(1 for n in report.nodes if n.status == OK and n.worst is Severity.INFO)
    if with_findings or infos:
        yield ""
        yield "Findings per node (errors and warnings; --format json and --html list every node)"
        if infos:
            yield f"  {infos} node(s) with notes only (info), counted below"
    if with_findings:
        number = report.group_of()
        width = max(len(n.node) for n in with_findings)
        for node in with_findings:
            ids = ", ".join(f"{f.id} ({f.severity.value})" for f in node.findings if f.symptom_of is None)
            yield f"  {_MARK[node.worst]} {node.node:<{width}}  [stack {number.get(node.node, '?')}]  {ids}"
    if report.counts:
        yield ""
        yield "Findings across the fleet (nodes per id)"
        width = max(len(c.id) for c in report.counts)
        for count in report.counts:
            yield f"  {count.nodes:>6}  {count.severity:<7}  {count.id:<{width}}  {count.title}"
    yield ""
    yield _last_line(report)


def _last_line(report: FleetReport) -> str:
    """Why the exit code is what it is: the nodes with errors or not checked, and the drift."""
    if report.exit_code == 0:
        return "Healthy: every node ok, no error finding, one stack."
    unwell = len(report.nodes) - len(report.healthy)
    reasons = [f"{unwell} node(s) with an error finding or not checked"] if unwell else []
    if report.drifted:
        reasons.append(f"{len(report.groups)} different stacks")
    return "Not healthy: " + ("; ".join(reasons) if reasons else "no node") + "."


def _group_lines(group: Group) -> Iterable[str]:
    names = ", ".join(group.nodes[:_SHOWN_NAMES]) + (
        f", … {len(group.nodes) - _SHOWN_NAMES} more" if len(group.nodes) > _SHOWN_NAMES else ""
    )
    role = "reference" if group.reference else "drift"
    yield f"  [{group.number}] {role} · {len(group.nodes)} node(s): {names}"
    if group.reference:
        for field in STACK_FIELDS:
            yield f"        {FIELD_TITLES[field]}: {group.stack[field]}"
    for drift in group.drift:
        yield f"        {FIELD_TITLES[drift.field]}: {drift.value}   (reference: {drift.reference})"


# ---------------------------------------------------------------- JSON


def document(report: FleetReport) -> dict[str, Any]:
    """The versioned JSON object (reports/fleet.schema.json)."""
    from cudnn_doctor import __version__

    number = report.group_of()
    return {
        "schema": FLEET_SCHEMA,
        "tool": {"name": "cudnn-doctor", "version": __version__},
        "exit_code": report.exit_code,
        "summary": {
            "nodes": len(report.nodes),
            "healthy": len(report.healthy),
            "statuses": dict(report.statuses),
            "stacks": len(report.groups),
            "drift": report.drifted,
        },
        "fields": list(STACK_FIELDS),
        "groups": [
            {
                "number": g.number,
                "reference": g.reference,
                "size": len(g.nodes),
                "stack": dict(g.stack),
                "drift": [d._asdict() for d in g.drift],
                "nodes": list(g.nodes),
            }
            for g in report.groups
        ],
        "findings": [c._asdict() for c in report.counts],
        "nodes": [_node(n, number.get(n.node)) for n in report.nodes],
    }


def _node(node: NodeResult, group: Any) -> dict[str, Any]:
    return {
        "node": node.node,
        "status": node.status,
        "healthy": node.healthy,
        "group": group,
        "source": node.source,
        "error": node.error,
        "findings": [_finding(f) for f in node.findings],
    }


def _finding(found: Finding) -> dict[str, Any]:
    document: dict[str, Any] = {
        "id": found.id,
        "severity": found.severity.value,
        "area": found.area.value,
        "title": found.title,
        "detail": found.detail,
    }
    if found.symptom_of is not None:
        document["symptom_of"] = found.symptom_of
    return document


def render_json(report: FleetReport, out: TextIO) -> None:
    write_json(out, document(report), indent=1, default=str)
