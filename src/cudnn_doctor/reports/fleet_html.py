"""`fleet --html FILE`: one self-contained page for thousands of nodes.

The nodes are grouped by stack in collapsible `<details>` (the reference group closed when it is
large, every drifting group open with its differing fields marked); a search box filters the node
rows. The page's only script is those few lines, inline, allowed by its hash in the
Content-Security-Policy: nothing is loaded from the network and no other script can run. Every text
from a node goes through `esc`, the check report's escaping.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Iterable, Optional, TextIO

from cudnn_doctor.fleet.model import FIELD_TITLES, OK, STACK_FIELDS, FleetReport, Group, NodeResult
from cudnn_doctor.reports.fleet import verdict
from cudnn_doctor.reports.html_page import CSS, badge, esc

OPEN_LIMIT = 200  # a group of more nodes starts closed: the page opens fast, the summary line says what it holds

# Each row's text is read once; a query hides the rows without it and opens the groups holding a match.
_SCRIPT = """
const box = document.getElementById('filter'), count = document.getElementById('shown');
const rows = Array.from(document.querySelectorAll('tr.node'));
const texts = rows.map(r => r.textContent.toLowerCase());
box.addEventListener('input', () => {
  const q = box.value.trim().toLowerCase(); let shown = 0;
  const hits = new Set();
  rows.forEach((r, i) => { const on = !q || texts[i].includes(q); r.hidden = !on;
    if (on) { shown++; if (q) hits.add(r.closest('details')); } });
  document.querySelectorAll('details.group').forEach(d => { if (q) d.open = hits.has(d); });
  count.textContent = q ? shown + ' of ' + rows.length + ' nodes match' : '';
});
"""
_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")
_CSP = f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{_HASH}'"

_FLEET_CSS = """
.search { position: sticky; top: 0; background: #fff; padding: 8px 0; z-index: 1;
  border-bottom: 1px solid var(--line); }
.search input { width: 28em; max-width: 100%; font: inherit; padding: 4px 8px; }
details.group { border: 1px solid var(--line); border-left: 6px solid var(--ok); border-radius: 4px; margin: 10px 0;
  padding: 4px 12px; }
details.group.drift { border-left-color: var(--warn); } details.group.unreached { border-left-color: var(--err); }
details.group > summary { color: #202124; font-size: 1em; font-weight: 600; }
td.drift { background: #fff4e5; font-weight: 600; } .ref { color: var(--muted); font-weight: normal; }
table.nodes td:first-child, table.overview td:first-child { white-space: nowrap; }
"""


def render(report: FleetReport, stream: TextIO) -> None:
    """The whole page, written in pieces: 10,000 rows never sit in one string twice."""
    stream.write(_head(report))
    stream.write(_overview(report))
    stream.write('<section id="stacks"><h2>Stacks</h2>')
    stream.write(
        '<div class="search"><label>Filter nodes <input type="search" id="filter" placeholder="node name, finding '
        'id, status…" '
        'autocomplete="off"></label> <span id="shown" class="sub"></span></div>'
    )
    by_name = {n.node: n for n in report.nodes}
    reference = report.groups[0] if report.groups else None
    for group in report.groups:
        stream.write(_group(group, reference, [by_name[name] for name in group.nodes]))
    unreached = [n for n in report.nodes if n.status != OK]
    if unreached:
        stream.write(
            f'<details class="group unreached" id="not-checked" open><summary>Not checked · {len(unreached)} '
            f"node(s)</summary>" + _node_table(unreached) + "</details>"
        )
    stream.write("</section>")
    stream.write(_counts(report))
    from cudnn_doctor import __version__

    stream.write(
        f"\n</main>\n<footer>cudnn-doctor {esc(__version__)} · a self-contained report: it loads nothing from the "
        f"network.</footer>\n"
        f"<script>{_SCRIPT}</script>\n</body></html>\n"
    )


def _overview(report: FleetReport) -> str:
    """One row per stack: how many nodes, how many with errors, what differs from the reference."""
    unwell = {n.node for n in report.nodes if not n.healthy}
    rows = []
    for group in report.groups:
        errors = sum(1 for name in group.nodes if name in unwell)
        differs = "; ".join(f"{FIELD_TITLES[d.field]}: {d.value}" for d in group.drift) or (
            "the reference" if group.reference else ""
        )
        rows.append(
            f'<tr><td><a href="#stack-{group.number}">Stack {group.number}</a></td><td '
            f'class="num">{len(group.nodes)}</td>'
            f'<td class="num">{errors}</td><td>{esc(differs)}</td></tr>'
        )
    unreached = len(report.nodes) - sum(len(g.nodes) for g in report.groups)
    if unreached:
        rows.append(
            f'<tr><td><a href="#not-checked">Not checked</a></td><td class="num">{unreached}</td><td '
            f'class="num">{unreached}</td><td></td></tr>'
        )
    return (
        '<section id="overview"><h2>Overview</h2><table class="overview"><thead><tr><th>Stack</th><th '
        'class="num">Nodes</th>'
        '<th class="num">Not healthy</th><th>Differs from the reference in</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


def _head(report: FleetReport) -> str:
    title = "cudnn-doctor fleet"
    toc = "".join(
        f'<a href="#{a}">{n}</a>'
        for a, n in (("overview", "Overview"), ("stacks", "Stacks"), ("counts", "Findings across the fleet"))
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        f"<title>{title}</title>\n<style>{CSS}{_FLEET_CSS}</style>\n</head>\n<body>\n<main>\n"
        f'<header class="top"><h1>{title}</h1><p class="sub">{esc(verdict(report))}</p><nav '
        f'class="toc">{toc}</nav></header>\n'
    )


def _group(group: Group, reference: Optional[Group], nodes: list[NodeResult]) -> str:
    drifted = {d.field for d in group.drift}
    role = "reference" if group.reference else "drift"
    what = "; ".join(f"{FIELD_TITLES[d.field]} {d.value}" for d in group.drift)
    unwell = sum(1 for n in nodes if not n.healthy)
    summary = (
        f"Stack {group.number} · {role} · {len(nodes)} node(s)"
        + (f" · {unwell} with errors" if unwell else "")
        + (f" · {what}" if what else "")
    )
    rows = []
    for field in STACK_FIELDS:
        mark = ' class="drift"' if field in drifted else ""
        was = (
            f' <span class="ref">(reference: {esc(reference.stack[field])})</span>'
            if field in drifted and reference
            else ""
        )
        rows.append(
            f'<tr data-field="{field}"><th>{esc(FIELD_TITLES[field])}</th><td{mark}>{esc(group.stack[field])}{was}'
            f"</td></tr>"
        )
    opened = " open" if not group.reference or len(nodes) <= OPEN_LIMIT else ""
    return (
        f'<details class="group {role}" id="stack-{group.number}"{opened}><summary>{esc(summary)}</summary>'
        f'<table class="stack"><colgroup><col style="width:13em"><col></colgroup><tbody>{"".join(rows)}</tbody></table>'
        + _node_table(nodes)
        + "</details>"
    )


def _node_table(nodes: list[NodeResult]) -> str:
    return (
        '<table class="nodes"><colgroup><col style="width:38%"><col '
        'style="width:8em"><col></colgroup><thead><tr><th>Node</th><th>State</th><th>Findings</th></tr></thead><tbody>'
        + "".join(_row(n) for n in nodes)
        + "</tbody></table>"
    )


def _row(node: NodeResult) -> str:
    if node.status != OK:
        state = f'<span class="badge error">{esc(node.status)}</span>'
        said = esc(node.error or "")
    else:
        state = badge(node.worst)
        said = (
            ", ".join(f'<code title="{esc(f.title)}">{esc(f.id)}</code>' for f in node.findings if f.symptom_of is None)
            or "no issues"
        )
    return (
        f'<tr class="node" '
        f'data-status="{esc(node.status)}"><td>{esc(node.node)}</td><td>{state}</td><td>{said}</td></tr>'
    )


def _counts(report: FleetReport) -> str:
    rows: Iterable[str] = (
        f'<tr><td class="num">{c.nodes}</td><td><span class="badge {esc(c.severity)}">{esc(c.severity)}</span></td>'
        f"<td><code>{esc(c.id)}</code></td><td>{esc(c.title)}</td></tr>"
        for c in report.counts
    )
    body = "".join(rows) or '<tr><td colspan="4">No findings on any node.</td></tr>'
    return (
        '<section id="counts"><h2>Findings across the fleet</h2>'
        '<table class="counts"><thead><tr><th '
        'class="num">Nodes</th><th>Severity</th><th>Id</th><th>Title</th></tr></thead>'
        f"<tbody>{body}</tbody></table></section>"
    )
