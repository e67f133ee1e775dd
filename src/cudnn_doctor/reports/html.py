"""`check --html FILE` / `verify --html FILE`: one self-contained HTML file (issue 12).

Everything is inline: the CSS, the SVG charts (drawn here, no script library) and the pages of
the findings (so their links work offline). A Content-Security-Policy in the head forbids any
network load and any script. Every text that comes from the machine (paths, messages, versions)
goes through `html.escape`; the report shows only what the terminal and JSON reports show. A link is
made only of a URL the doctor chose: the pages' own, those its rules name and those
of its shipped knowledge (checks/links.py) (pip indexes, datasheets); a URL in machine text (a PATH entry) stays text.
"""

from __future__ import annotations

import html
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, TextIO

from cudnn_doctor.checks.links import URL, chosen_url
from cudnn_doctor.diagnosis import Diagnosis
from cudnn_doctor.errors import UsageError
from cudnn_doctor.facts import PROCESS, Candidate, Facts, LoadStep, Resolution
from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.lazyre import regex
from cudnn_doctor.record import Record
from cudnn_doctor.reports.terminal import _facts_lines, _is_cudnn_front, _summaries


def esc(value: Any) -> str:
    """Text and attribute values alike: quotes too, since attributes carry paths."""
    return html.escape("" if value is None else str(value), quote=True)


# ---------------------------------------------------------------- the page around the sections

_CSS = """
:root { --ok: #2e7d32; --info: #1565c0; --warn: #b26a00; --err: #c62828; --muted: #5f6368; --line: #dadce0;
        --gpu: #5a8f00; --cpu: #607d8b; --off: #d84315; --tune: #00838f; --peak: #6a1b9a; --bw: #1565c0; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #202124; background: #f6f7f9; }
main { max-width: 1120px; margin: 0 auto; padding: 20px 28px 40px; background: #fff; }
header.top { border-bottom: 3px solid var(--gpu); margin-bottom: 12px; padding-bottom: 8px; }
header.top.verdict-ok { border-bottom-color: var(--ok); } header.top.verdict-warn { border-bottom-color: var(--warn); }
header.top.verdict-err { border-bottom-color: var(--err); }
.banner { margin: 10px 0 14px; padding: 10px 14px; border-radius: 6px; font-weight: 600; border-left: 6px solid; }
.banner.ok { background: #e8f5e9; border-color: var(--ok); color: var(--ok); }
.banner.warn { background: #fff4e0; border-color: var(--warn); color: var(--warn); }
.banner.err { background: #fdecea; border-color: var(--err); color: var(--err); }
p.autofix { margin: 4px 0 0; font-size: 0.92em; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2.part { font-size: 1.45em; border-bottom: 3px solid var(--gpu); margin-top: 40px; }
h2 { font-size: 1.25em; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05em; margin: 18px 0 6px; }
h4 { font-size: 0.95em; margin: 12px 0 4px; }
p { margin: 6px 0; }
code, pre, .path { font-family: ui-monospace, "Cascadia Mono", Consolas, "DejaVu Sans Mono", monospace; font-size: 0.88em; overflow-wrap: anywhere; }
pre { background: #f1f3f4; padding: 8px 10px; border-radius: 4px; white-space: pre-wrap; }
a { color: #1a56b0; }
nav.toc { font-size: 0.92em; color: var(--muted); }
nav.toc a { margin-right: 14px; }
.sub { color: var(--muted); font-size: 0.92em; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 10px; font-size: 0.92em; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
th { font-weight: 600; background: #f1f3f4; }
td.num, th.num { text-align: right; white-space: nowrap; }
tr.used td { background: #e8f5e9; font-weight: 600; }
tr.unusable td { background: #fdecea; }
.badge { display: inline-block; min-width: 4.6em; text-align: center; padding: 1px 6px; border-radius: 10px; font-size: 0.8em;
         font-weight: 600; color: #fff; text-transform: uppercase; letter-spacing: 0.02em; }
.badge.ok, .badge.pass { background: var(--ok); } .badge.info { background: var(--info); }
.badge.warning, .badge.warn { background: var(--warn); } .badge.error, .badge.fail { background: var(--err); }
.finding { border: 1px solid var(--line); border-left: 6px solid var(--info); border-radius: 4px; padding: 8px 14px; margin: 10px 0; }
.finding.warning { border-left-color: var(--warn); } .finding.error { border-left-color: var(--err); }
.finding h3 { margin: 2px 0 6px; }
.finding ol { margin: 6px 0; padding-left: 1.6em; }
.finding .symptoms { font-size: 0.92em; }
ul.verdicts { list-style: none; padding: 0; } ul.verdicts li { margin: 4px 0; }
.chart { margin: 10px 0 18px; } .chart svg { width: 100%; height: auto; max-width: 960px; display: block; }
.chart figcaption { font-size: 0.88em; color: var(--muted); }
svg text { font: 12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; fill: #202124; }
svg text.group { font-weight: 600; } svg text.value { fill: #3c4043; }
svg .bar.gpu, svg .bar.on { fill: var(--gpu); } svg .bar.cpu { fill: var(--cpu); } svg .bar.off { fill: var(--off); }
svg .bar.autotune { fill: var(--tune); } svg .bar.peak { fill: var(--peak); } svg .bar.bandwidth { fill: var(--bw); }
svg .track { fill: #f1f3f4; } svg .reference { stroke: #202124; stroke-width: 1.5; stroke-dasharray: 4 3; }
details > summary { cursor: pointer; color: var(--muted); font-size: 0.9em; }
.page { border-top: 1px solid var(--line); padding-top: 4px; }
footer { max-width: 1120px; margin: 0 auto; padding: 8px 28px; color: var(--muted); font-size: 0.85em; }
@media print {
  body { background: none; font-size: 10.5pt; }
  main { max-width: none; padding: 0; }
  nav.toc, details > summary { display: none; }
  a { color: inherit; text-decoration: none; }
  .badge { color: #000; background: none !important; border: 1px solid #000; }
  tr.used td, tr.unusable td, th { background: none; }
  tr.used td { text-decoration: underline; }
  tr, .finding, figure, svg, .gpu-line { break-inside: avoid; page-break-inside: avoid; }
  h2, h3 { break-after: avoid; page-break-after: avoid; }
  svg { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""

# No network and no script, whatever a string that slipped past escaping would ask for.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _document(title: str, subtitle: str, toc: list[tuple[str, str]], body: Iterable[str], verdict: Optional[tuple[str, str]] = None) -> str:
    """The page; `verdict`: (ok | warn | err, its sentence), which colours the header and heads the page as a banner."""
    from cudnn_doctor import __version__

    links = "".join(f'<a href="#{esc(anchor)}">{esc(name)}</a>' for anchor, name in toc)
    state = f" verdict-{verdict[0]}" if verdict else ""
    banner = f'<div class="banner {verdict[0]}" role="status">{esc(verdict[1])}</div>\n' if verdict else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        f"<title>{esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
        f'<header class="top{state}"><h1>{esc(title)}</h1><p class="sub">{subtitle}</p>'
        f'<nav class="toc">{links}</nav></header>\n' + banner + "\n".join(body) + "\n</main>\n"
        f"<footer>cudnn-doctor {esc(__version__)} · a self-contained report: it loads nothing from the network.</footer>\n"
        "</body></html>\n"
    )


# ---------------------------------------------------------------- check: summary, findings, search order, pages


def render_check(diagnosis: Diagnosis, stream: TextIO, when: Optional[str] = None, host: Optional[str] = None) -> None:
    """The whole `check` report: machine summary, findings with fix steps, cuDNN search order per framework, pages;
    headed by the verdict, when the check ran (`when`) and on which machine (`host`, left out when redacted)."""
    sections = list(_check_sections(diagnosis))
    subtitle = _verdict_line(diagnosis.findings) + (f" · checked {when}" if when else "") + (f" on {host}" if host else "")
    stream.write(_document("cudnn-doctor check", esc(subtitle), _CHECK_TOC, sections, _check_verdict(diagnosis.findings)))


def _check_verdict(findings: list[Finding]) -> tuple[str, str]:
    """The banner: healthy, warnings only, or errors, counted as the terminal counts them (causes)."""
    causes, _ = _grouped(findings)
    worst = [f.severity for _, f in causes]
    if Severity.ERROR in worst:
        return "err", f"✗ {worst.count(Severity.ERROR)} problem(s) stop the GPU stack from working as intended: see each fix below."
    if Severity.WARNING in worst:
        return "warn", f"! It works, with {worst.count(Severity.WARNING)} warning(s) worth fixing."
    return "ok", "✓ Healthy: the driver, CUDA, cuDNN and the frameworks found are consistent; nothing to fix."


_CHECK_TOC = [("summary", "Machine"), ("findings", "Findings"), ("search-order", "cuDNN search order"), ("pages", "Finding pages")]


def _check_sections(diagnosis: Diagnosis) -> Iterator[str]:
    yield _summary_section(diagnosis)
    yield _findings_section(diagnosis.findings, diagnosis.facts)
    yield _search_order_section(diagnosis.facts)
    yield _pages_section(diagnosis.findings)


def _verdict_line(findings: list[Finding]) -> str:
    """The terminal's last line: causes counted at their severity (that of their worst symptom)."""
    causes, _ = _grouped(findings)
    worst = [f.severity for _, f in causes]
    errors, warnings = worst.count(Severity.ERROR), worst.count(Severity.WARNING)
    if not findings:
        return "No issues found."
    tail = f", {len(findings) - len(causes)} more finding(s) shown as their symptoms" if len(causes) < len(findings) else ""
    return f"{errors} error(s), {warnings} warning(s){tail}"


def _grouped(findings: list[Finding]) -> tuple[list[tuple[int, Finding]], dict[int, list[Finding]]]:
    """(index, cause) pairs and each cause's symptoms, as the terminal report groups them."""
    symptoms: dict[int, list[Finding]] = {}
    for found in findings:
        if found.symptom_of is not None:
            symptoms.setdefault(found.symptom_of, []).append(found)
    return [(i, f) for i, f in enumerate(findings) if f.symptom_of is None], symptoms


_STATE = {None: ("ok", "ok"), Severity.INFO: ("info", "info"), Severity.WARNING: ("warning", "warning"), Severity.ERROR: ("error", "error")}


def _badge(severity: Optional[Severity]) -> str:
    css, word = _STATE[severity]
    return f'<span class="badge {css}">{word}</span>'


def _summary_section(diagnosis: Diagnosis) -> str:
    facts = diagnosis.facts
    summaries = _summaries(facts)
    by_area: dict[Area, list[Finding]] = {}
    for found in diagnosis.findings:
        by_area.setdefault(found.area, []).append(found)
    rows = []
    for area in Area:
        worst = min(by_area.get(area, []), key=lambda f: f.severity.rank, default=None)
        lines = list(_facts_lines(facts, area))
        more = f"<details><summary>{len(lines)} fact(s)</summary><pre>{esc(chr(10).join(lines))}</pre></details>" if lines else ""
        rows.append(
            f'<tr data-area="{esc(area.value)}"><td>{_badge(worst.severity if worst else None)}</td>'
            f"<th>{esc(area.title)}</th><td>{esc(summaries[area])}{more}</td></tr>"
        )
    system = f"{facts.os} {facts.arch}" + (" (WSL2)" if facts.wsl else "")
    return (
        f'<section id="summary"><h2>Machine</h2><p class="sub">{esc(system)}</p>'
        '<table class="summary"><colgroup><col style="width:7em"><col style="width:13em"><col></colgroup>'
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


def _findings_section(findings: list[Finding], facts: Optional[Facts] = None) -> str:
    if not findings:
        return '<section id="findings"><h2>Findings</h2><p class="none">No issues found!</p></section>'
    causes, symptoms = _grouped(findings)
    return (
        '<section id="findings"><h2>Findings</h2><div class="findings">'
        + "".join(_finding(f, symptoms.get(i, []), _anchor(f, causes[:n]), _fix_line(f, facts)) for n, (i, f) in enumerate(causes))
        + f'</div><p class="sub">{_inline("`cudnn-doctor check --ignore ID` hides a finding; each finding has its page at the end.")}</p></section>'
    )


def _page_link(finding_id: str) -> str:
    return f'<a class="page-link" href="#page-{esc(finding_id)}">{esc(finding_id)}</a>' if _has_page(finding_id) else f"<code>{esc(finding_id)}</code>"


def _anchor(found: Finding, before: list[tuple[int, Finding]]) -> str:
    """`finding-ID` for the first finding of an id (the pages link back to it), `finding-ID-N` for the N-th after it."""
    seen = sum(1 for _, f in before if f.id == found.id)
    return f"finding-{found.id}" + (f"-{seen + 1}" if seen else "")


def _fix_line(found: Finding, facts: Optional[Facts]) -> Optional[str]:
    """`fix: safe — cudnn-doctor fix ID`, where `fix` has changes for this finding (as the terminal says it)."""
    from cudnn_doctor.reports.terminal import _fix_line as terminal_fix_line

    return terminal_fix_line(found, facts) if facts is not None else None


def _finding(found: Finding, symptoms: list[Finding], anchor: str, automatic: Optional[str] = None) -> str:
    severity = found.severity  # a cause carries the severity of its worst symptom (checks.causes)
    parts = [
        f'<article class="finding {severity.value}" id="{esc(anchor)}" data-id="{esc(found.id)}">',
        f"<h3>{_badge(severity)} <code>{esc(found.id)}</code> {esc(found.title)}</h3>",
        f'<p class="detail">{esc(found.detail)}</p>',
    ]
    if found.fix:
        parts.append('<ol class="fix">' + "".join(f"<li>{_inline(step)}</li>" for step in found.fix) + "</ol>")
    if automatic:
        parts.append(f'<p class="autofix">{_inline(automatic)}</p>')
    if symptoms:
        items = "".join(f'<li data-id="{esc(s.id)}">{_page_link(s.id)} ({esc(s.severity.value)}): {esc(s.detail)}</li>' for s in symptoms)
        parts.append(f'<div class="symptoms">The same cause also shows as:<ul>{items}</ul></div>')
    if found.evidence:
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(_evidence_text(v))}</td></tr>" for k, v in found.evidence.items())
        parts.append(f"<details><summary>Evidence</summary><table>{rows}</table></details>")
    if _has_page(found.id):
        parts.append(f'<p class="sub">More: <a class="page-link" href="#page-{esc(found.id)}">what it means, why it happens, how to fix it</a></p>')
    parts.append("</article>")
    return "".join(parts)


def _evidence_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "; ".join(_evidence_text(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_evidence_text(v)}" for k, v in value.items())
    return str(value)


# ------------------------------------------- the search order for cuDNN, per framework


def _search_order_section(facts: Facts) -> str:
    tables = [_resolution_block(facts, r) for r in facts.resolutions]
    if not tables:
        tables = ['<p class="none">No framework load was followed on this machine (no GPU framework build asks the system for cuDNN).</p>']
    intro = (
        '<p class="sub">For each framework, every place the loader searches for the cuDNN library, in order, '
        "the copy found there and the one the load takes.</p>"
    )
    return f'<section id="search-order"><h2>cuDNN search order</h2>{intro}{"".join(tables)}</section>'


def _front_step(resolution: Resolution) -> Optional[LoadStep]:
    return next((s for s in resolution.steps if not s.reused and _is_cudnn_front(s.name)), None)


def _folder_key(path: str) -> str:
    cut = max(path.rfind("/"), path.rfind("\\"))
    return path[:cut].rstrip("/\\").casefold()


def _resolution_block(facts: Facts, resolution: Resolution) -> str:
    who = (
        resolution.framework
        if resolution.framework != PROCESS
        else f"the package {resolution.package}"
        if resolution.package
        else "any program that loads cuDNN"
    )
    where = f' in <span class="path">{esc(resolution.executable)}</span>' if resolution.executable else ""
    head = f'<div class="resolution" data-framework="{esc(resolution.framework)}"><h3>{esc(who)}{where}</h3>'
    step = _front_step(resolution)
    if step is None:
        return head + '<p class="none">This load asks for no cuDNN library by name.</p></div>'
    versions = {i.folder.rstrip("/\\").casefold(): i.version or str(i.major) for i in facts.cudnn}
    rows = []
    placed, stray = _place_candidates(step)
    for number, place in enumerate(step.searched, 1):
        copies = placed.get(number - 1, [])
        if not copies:
            rows.append(f'<tr class="searched"><td class="num">{number}</td><td class="path">{esc(place)}</td><td></td><td></td></tr>')
        for copy in copies:
            rows.append(_copy_row(number, place, copy, step, versions))
    for copy in stray:
        rows.append(_copy_row(None, copy.place, copy, step, versions))
    result = step.winner or (f"BROKEN {step.blocked_by}" if step.blocked_by else "NOT FOUND")
    table = (
        f'<table class="search-order" data-library="{esc(step.wanted)}"><colgroup><col style="width:3em"><col style="width:36%">'
        '<col><col style="width:16em"></colgroup><thead><tr><th class="num">#</th><th>searched</th>'
        f"<th>copy of {esc(step.wanted)} found there</th><th>result</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    tail = f'<p>Result: <span class="path">{esc(result)}</span> (asked for by {esc(_basename(step.requester))}, {esc(step.how)})</p>'
    if step.elsewhere:
        tail += "<p>Copies this search does not reach: " + ", ".join(f'<span class="path">{esc(p)}</span>' for p in step.elsewhere) + "</p>"
    tail += _confirmations(facts, resolution, step) + _sub_libraries(resolution, step)
    return head + table + tail + "</div>"


def _place_candidates(step: LoadStep) -> tuple[dict[int, list[Candidate]], list[Candidate]]:
    """Each copy at the first searched place that holds it (its folder, or the label it was found by: ld.so.cache)."""
    placed: dict[int, list[Candidate]] = {}
    stray = []
    keys = [p.rstrip("/\\").casefold() for p in step.searched]
    for copy in step.candidates:
        index = next((i for i, (p, k) in enumerate(zip(step.searched, keys)) if p == copy.place or k == _folder_key(copy.path)), None)
        if index is None:
            stray.append(copy)
        else:
            placed.setdefault(index, []).append(copy)
    return placed, stray


def _copy_row(number: Optional[int], place: str, copy: Candidate, step: LoadStep, versions: dict[str, str]) -> str:
    version = versions.get(_folder_key(copy.path))
    found = f'<span class="path">{esc(copy.path)}</span>' + (f" (cuDNN {esc(version)})" if version else "")
    if copy.path == step.winner:
        css, result = "used", "used"
    elif copy.problem is not None:
        css, result = "unusable", f"unusable: {copy.problem}"
    else:
        css, result = "copy", "copy, not used" + (" (the load stops at the first)" if step.winner else "")
    shown = "" if number is None else str(number)
    return f'<tr class="{css}"><td class="num">{shown}</td><td class="path">{esc(place)}</td><td>{found}</td><td>{esc(result)}</td></tr>'


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _confirmations(facts: Facts, resolution: Resolution, step: LoadStep) -> str:
    """The real loader's answer next to the emulation's, where the live run asked it."""
    lines = []
    for c in facts.confirmations:
        if c.executable == resolution.executable and _basename(c.name) == _basename(step.name):
            verdict = "agrees" if c.agrees else "DISAGREES"
            lines.append(f'<p>Real load: <span class="path">{esc(c.real or c.error)}</span> ({verdict} with the emulation)</p>')
    return "".join(lines)


def _sub_libraries(resolution: Resolution, front: LoadStep) -> str:
    """The other cuDNN libraries the same load takes; one from another folder than the front is marked."""
    others = [s for s in resolution.steps if s is not front and not s.reused and "cudnn" in _basename(s.name).casefold()]
    if not others:
        return ""
    home = _folder_key(front.winner) if front.winner else None
    rows = []
    for s in others:
        where = s.winner or (f"BROKEN {s.blocked_by}" if s.blocked_by else "NOT FOUND" + (" (optional)" if s.optional else ""))
        moved = bool(s.winner and home is not None and _folder_key(s.winner) != home)
        css = ' class="unusable"' if moved or s.failed else ""
        note = " (another folder than the front library)" if moved else ""
        rows.append(f'<tr{css}><td><code>{esc(s.wanted)}</code></td><td><span class="path">{esc(where)}</span>{esc(note)}</td></tr>')
    return f'<details open><summary>The other cuDNN libraries this load takes</summary><table class="sub-libraries">{"".join(rows)}</table></details>'


# ------------------------------------------- the pages of the findings, embedded


def _has_page(finding_id: str) -> bool:
    return _page_text(finding_id) is not None


def _page_text(finding_id: str) -> Optional[str]:
    from cudnn_doctor.checks import pages

    try:
        return pages.page(finding_id)
    except KeyError:
        return None


def _pages_section(findings: list[Finding]) -> str:
    ids = list(dict.fromkeys(f.id for f in findings))
    titles = {f.id: f.title for f in findings}
    blocks = []
    for finding_id in ids:
        text = _page_text(finding_id)
        if text is not None:
            blocks.append(
                f'<section class="page" id="page-{esc(finding_id)}"><h3><code>{esc(finding_id)}</code> {esc(titles[finding_id])}</h3>'
                f'{markdown(text)}<p class="sub"><a href="#finding-{esc(finding_id)}">back to the finding</a></p></section>'
            )
    if not blocks:
        return ""
    return (
        '<section id="pages"><h2>Finding pages</h2><p class="sub">The text of <code>cudnn-doctor explain ID</code> for each finding above.</p>'
        + "".join(blocks)
        + "</section>"
    )


_LIST_ITEM = regex(r"^(\d+\.|-)\s+(.*)$")


def _inline(text: str, pages: bool = False) -> str:
    """`code` spans (when the backticks pair up: a PowerShell escape is no code mark) and bare https links; all escaped.
    A link is made only of a URL the doctor chose, or of any in the text of its own pages (`pages`)."""
    out = []
    for index, piece in enumerate(text.split("`") if text.count("`") % 2 == 0 else [text]):
        if index % 2:
            out.append(f"<code>{esc(piece)}</code>")
        else:
            last = 0
            for match in URL.finditer(piece):
                if not (pages or chosen_url(match.group())):
                    continue
                out.append(esc(piece[last : match.start()]))
                out.append(f'<a href="{esc(match.group())}">{esc(match.group())}</a>')
                last = match.end()
            out.append(esc(piece[last:]))
    return "".join(out)


def markdown(text: str) -> str:
    """The small markdown of the rule pages (the doctor's own text: its URLs are links): `## ` headings, paragraphs, `-` / `1.` lists, fenced code."""
    out: list[str] = []
    paragraph: list[str] = []
    items: list[str] = []
    list_tag = ""
    lines = iter(text.splitlines())

    def flush() -> None:
        nonlocal list_tag
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph), pages=True)}</p>")
            paragraph.clear()
        if items:
            out.append(f"<{list_tag}>" + "".join(f"<li>{_inline(i, pages=True)}</li>" for i in items) + f"</{list_tag}>")
            items.clear()
            list_tag = ""

    for line in lines:
        stripped = line.strip()
        item = _LIST_ITEM.match(line)
        if stripped.startswith("```"):
            flush()
            code = []
            for inner in lines:
                if inner.strip().startswith("```"):
                    break
                code.append(inner)
            out.append(f"<pre><code>{esc(chr(10).join(code))}</code></pre>")
        elif line.startswith("#"):
            flush()
            out.append(f"<h4>{_inline(line.lstrip('#').strip(), pages=True)}</h4>")
        elif not stripped:
            flush()
        elif item:
            tag = "ol" if item.group(1)[0].isdigit() else "ul"
            if paragraph or (items and tag != list_tag):
                flush()
            list_tag = tag
            items.append(item.group(2))
        elif items and line[:1].isspace():
            items[-1] += " " + stripped
        else:
            if items:
                flush()
            paragraph.append(stripped)
    flush()
    return "".join(out)


# ---------------------------------------------------------------- verify: the GPU line, verdicts and charts


def render_verify(result: dict[str, Any], stream: TextIO, diagnosis: Optional[Diagnosis] = None) -> None:
    """A `verify` result (cudnn-doctor-verify/1); with `diagnosis`, the `check` report follows it in the same file."""
    frameworks = [f for f in result.get("frameworks") or [] if isinstance(f, dict)]
    toc = [("gpu", "GPU")] + [(f"fw-{_slug(f.get('framework'))}", str(f.get("framework"))) for f in frameworks]
    body = [_gpu_section(result.get("gpu"))]
    body.extend(_framework_section(f, result.get("gpu")) for f in frameworks)
    if result.get("compare"):
        body.append(_compare_section(result["compare"]))
        toc.append(("compare", "Since last run"))
    if diagnosis is not None:
        body.append('<h2 class="part">The diagnosis (<code>cudnn-doctor check</code>)</h2>')
        body.extend(_check_sections(diagnosis))
        toc.extend(_CHECK_TOC)
    status = "all checks passed" if result.get("exit_code") == 0 else "some checks failed" if result.get("gpu") else "no NVIDIA GPU: CPU baseline only"
    subtitle = " · ".join(esc(p) for p in (result.get("time"), f"Python {result.get('python')}", "quick run" if result.get("quick") else None, status) if p)
    stream.write(_document("cudnn-doctor verify", subtitle, toc, body))


def _slug(value: Any) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", str(value).lower()).strip("-") or "x"


def _number(value: Any, digits: int = 3) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "?"
    return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:,.0f}"


def seconds_text(value: Any) -> str:
    """0.00021 → "210 µs", 0.41 → "410 ms"."""
    if not isinstance(value, (int, float)):
        return "?"
    if value < 1e-3:
        return f"{value * 1e6:.3g} µs"
    if value < 1:
        return f"{value * 1e3:.3g} ms"
    return f"{value:.3g} s"


def _gpu_section(gpu: Optional[dict[str, Any]]) -> str:
    if not gpu:
        return (
            '<section id="gpu"><h2>GPU</h2><p class="gpu-line none">No NVIDIA GPU: only the CPU baseline ran. '
            "Run <code>cudnn-doctor check</code> to see why no GPU is usable.</p></section>"
        )
    facts = [gpu.get("name")]
    if gpu.get("compute_capability"):
        facts.append(f"compute capability {gpu['compute_capability']}")
    if gpu.get("driver"):
        facts.append(f"driver {gpu['driver']}")
    if gpu.get("memory_mib"):
        facts.append(f"{_number(gpu['memory_mib'] / 1024)} GiB")
    clocks = ", ".join(f"{k} {_number(v, 4)} MHz" for k, v in (gpu.get("clocks_mhz") or {}).items() if v is not None)
    power = gpu.get("power_w") or {}
    watts = " of ".join(f"{_number(power[k], 4)} W {k}" for k in ("draw", "limit") if power.get(k) is not None)
    reasons = gpu.get("throttle_reasons") or []
    lines = [f'<p class="gpu-line"><strong>{esc(facts[0])}</strong> · {esc(" · ".join(str(f) for f in facts[1:]))}</p>']
    lines.append(
        '<table class="gpu-state"><tbody>'
        f"<tr><th>clocks</th><td>{esc(clocks or 'not reported')}</td></tr>"
        f"<tr><th>power</th><td>{esc(watts or 'not reported')}</td></tr>"
        f"<tr><th>throttle reasons</th><td>{esc(', '.join(reasons) if reasons else 'none')}</td></tr>"
        "</tbody></table>"
    )
    peak = gpu.get("peak")
    if peak:
        rates = [f"{k} {_number(peak[k], 4)} TFLOP/s" for k in _PRECISIONS if peak.get(k) is not None]
        rates += [f"{label} {_number(peak[k], 4)} GB/s" for k, label in (("memory_gbs", "memory"), ("host_link_gbs", "host link")) if peak.get(k)]
        source = peak.get("source") or ""
        link = _inline(source)
        lines.append(f'<p class="sub">Datasheet peak of the {esc(peak.get("model"))}: {esc(", ".join(rates))} (source: {link})</p>')
    else:
        lines.append('<p class="sub">This GPU model is not in the datasheet table: no percentage of peak.</p>')
    return '<section id="gpu"><h2>GPU</h2>' + "".join(lines) + "</section>"


_PRECISIONS = ("fp32", "tf32", "fp16", "bf16")


def _framework_section(framework: dict[str, Any], gpu: Optional[dict[str, Any]]) -> str:
    name = str(framework.get("framework"))
    slug = _slug(name)
    built = ", ".join(f"{label} {framework[k]}" for k, label in (("cuda", "CUDA"), ("cudnn", "cuDNN")) if framework.get(k))
    title = f"{name} {framework.get('version') or ''}".strip() + (f" ({built})" if built else "")
    status = str(framework.get("status"))
    css = {"ok": "pass", "no-gpu": "warn", "error": "fail"}.get(status, "info")
    parts = [f'<section class="framework" id="fw-{slug}" data-framework="{esc(name)}"><h2>{esc(title)} <span class="badge {css}">{esc(status)}</span></h2>']
    if framework.get("message"):
        parts.append(f'<p class="message">{esc(framework["message"])}</p>')
    parts.append(_verdicts(framework.get("verdicts") or [], slug))
    benchmarks = [b for b in framework.get("benchmarks") or [] if isinstance(b, dict)]
    for chart in (_gpu_vs_cpu_chart, _cudnn_chart, _peak_chart, _bandwidth_chart):
        drawn = chart(benchmarks, gpu, slug)
        if drawn:
            parts.append(drawn)
    parts.append(_smoke_table(framework.get("smoke") or []))
    parts.append(_benchmark_table(benchmarks))
    parts.append("</section>")
    return "".join(parts)


def _verdicts(verdicts: list[dict[str, Any]], slug: str) -> str:
    if not verdicts:
        return ""
    items = "".join(
        f'<li data-id="{esc(v.get("id"))}"><span class="badge {esc(v.get("status"))}">{esc(v.get("status"))}</span> '
        f"<code>{esc(v.get('id'))}</code> {esc(v.get('text'))}</li>"
        for v in verdicts
    )
    return f'<h3>Verdicts</h3><ul class="verdicts" id="verdicts-{slug}">{items}</ul>'


_OK, _WRONG = '<span class="badge pass">ok</span>', '<span class="badge fail">wrong</span>'


def _smoke_table(smoke: list[dict[str, Any]]) -> str:
    if not smoke:
        return ""
    rows = "".join(
        f'<tr><td>{esc(s.get("name"))}</td><td>{esc(s.get("precision"))}</td><td class="num">{esc(_number(s.get("max_error")))}</td>'
        f'<td class="num">{esc(_number(s.get("tolerance")))}</td><td>{_OK if s.get("ok") else _WRONG}</td></tr>'
        for s in smoke
    )
    return (
        '<h3>Correctness: GPU against CPU</h3><table class="smoke"><thead><tr><th>operation</th><th>precision</th>'
        f'<th class="num">max error</th><th class="num">tolerance</th><th>result</th></tr></thead><tbody>{rows}</tbody></table>'
    )


def _benchmark_table(benchmarks: list[dict[str, Any]]) -> str:
    if not benchmarks:
        return ""
    rows = []
    for b in benchmarks:
        rate = f"{_number(b['tflops'])} TFLOP/s" if b.get("tflops") is not None else f"{_number(b['gbs'])} GB/s" if b.get("gbs") is not None else ""
        peak = f"{_number(b['percent_of_peak'])} %" if b.get("percent_of_peak") is not None else ""
        spread = f"{_number(100 * b['spread'], 2)} %" if isinstance(b.get("spread"), (int, float)) else ""
        rows.append(
            f"<tr><td><code>{esc(b.get('id'))}</code></td><td>{esc(b.get('device'))}</td><td>{esc(b.get('precision'))}</td>"
            f'<td>{esc(b.get("variant") or "")}</td><td>{esc(b.get("shape"))}</td><td class="num">{esc(seconds_text(b.get("median_s")))}</td>'
            f'<td class="num">{esc(spread)}</td><td class="num">{esc(rate)}</td><td class="num">{esc(peak)}</td></tr>'
        )
    return (
        '<h3>All benchmarks</h3><table class="benchmarks"><thead><tr><th>id</th><th>device</th><th>precision</th><th>variant</th>'
        '<th>shape</th><th class="num">median</th><th class="num" title="(max - min) / median of the runs">spread</th><th class="num">rate</th><th class="num">of peak</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _compare_section(rows: list[dict[str, Any]]) -> str:
    body = "".join(
        f'<tr><td>{esc(r.get("framework"))}</td><td><code>{esc(r.get("id"))}</code></td><td class="num">{esc(seconds_text(r.get("before_s")))}</td>'
        f'<td class="num">{esc(seconds_text(r.get("after_s")))}</td><td class="num">{esc(_number(r.get("ratio")))}×</td></tr>'
        for r in rows
        if isinstance(r, dict)
    )
    return (
        '<section id="compare"><h2>Since the last run</h2><p class="sub">ratio = before / after: above 1 is faster now.</p>'
        '<table class="compare"><thead><tr><th>framework</th><th>benchmark</th><th class="num">before</th><th class="num">now</th>'
        f'<th class="num">ratio</th></tr></thead><tbody>{body}</tbody></table></section>'
    )


# ------------------------------------------- charts: horizontal bars in inline SVG


class Bar(Record):
    label: str  # the row's name: "GPU", "cuDNN off", "bf16"
    value: float  # what the bar's length follows
    text: str  # printed after the bar
    css: str  # its colour: gpu, cpu, on, off, autotune, peak, bandwidth


class Group(Record):
    title: str
    bars: list[Bar]
    scale: float  # the value a full-length bar stands for
    reference: Optional[tuple[float, str]] = None  # a dashed line (value, label): the datasheet peak
    note: str = ""


_WIDTH, _LABEL, _TRACK, _ROW, _HEAD = 860, 140, 400, 24, 22


def chart_svg(chart_id: str, title: str, groups: list[Group]) -> str:
    """Groups of horizontal bars, each group on its own scale (a 58× gap would hide a bar on a shared one)."""
    y = 6
    body = []
    for group in groups:
        body.append(f'<text class="group" x="0" y="{y + 14}">{esc(group.title)}</text>')
        if group.note:
            body.append(f'<text class="value" x="{_WIDTH}" y="{y + 14}" text-anchor="end">{esc(group.note)}</text>')
        y += _HEAD
        top = y
        for bar in group.bars:
            length = _TRACK * bar.value / group.scale if group.scale > 0 else 0.0
            length = max(min(length, _TRACK + 30), 2.0 if bar.value > 0 else 0.0)  # never invisible, never off the chart
            body.append(
                f'<text x="{_LABEL - 8}" y="{y + 15}" text-anchor="end">{esc(bar.label)}</text>'
                f'<rect class="track" x="{_LABEL}" y="{y + 3}" width="{_TRACK}" height="{_ROW - 6}"/>'
                f'<rect class="bar {esc(bar.css)}" x="{_LABEL}" y="{y + 3}" width="{length:.2f}" height="{_ROW - 6}" '
                f'data-label="{esc(bar.label)}" data-value="{bar.value:.6g}"><title>{esc(bar.label)}: {esc(bar.text)}</title></rect>'
                f'<text class="value" x="{_LABEL + max(length, _TRACK) + 8:.2f}" y="{y + 15}">{esc(bar.text)}</text>'
            )
            y += _ROW
        if group.reference and group.scale > 0:
            value, label = group.reference
            x = _LABEL + _TRACK * value / group.scale
            body.append(
                f'<line class="reference" x1="{x:.2f}" x2="{x:.2f}" y1="{top}" y2="{y}" data-value="{value:.6g}"/>'
                f'<text class="value" x="{x:.2f}" y="{y + 12}" text-anchor="middle">{esc(label)}</text>'
            )
            y += 14
        y += 8
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{esc(title)}" viewBox="0 0 {_WIDTH + 10} {y}" '
        f'width="{_WIDTH + 10}" height="{y}" data-chart="{esc(chart_id.split("-")[1] if "-" in chart_id else chart_id)}">'
        f"<title>{esc(title)}</title>{''.join(body)}</svg>"
    )


def _figure(chart_id: str, title: str, groups: list[Group], caption: str) -> str:
    return (
        f'<figure class="chart" id="{esc(chart_id)}"><h4>{esc(title)}</h4>{chart_svg(chart_id, title, groups)}<figcaption>{esc(caption)}</figcaption></figure>'
    )


def _key(b: dict[str, Any]) -> tuple[Any, ...]:
    return (b.get("kind"), b.get("precision"), b.get("shape"))


def _timed(b: dict[str, Any]) -> Optional[float]:
    value = b.get("median_s")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _gpu_vs_cpu_chart(benchmarks: list[dict[str, Any]], gpu: Any, slug: str) -> str:
    """The same case on both: median time per run (shorter is faster); without a GPU, the CPU baseline alone."""
    plain = [b for b in benchmarks if not b.get("variant") and _timed(b)]
    groups = []
    for cpu in (b for b in plain if b.get("device") == "cpu"):
        twin = next((b for b in plain if b.get("device") == "gpu" and (b.get("id") == cpu.get("id") or _key(b) == _key(cpu))), None)
        bars = [Bar("CPU", _timed(cpu) or 0.0, seconds_text(cpu.get("median_s")), "cpu")]
        note = "CPU only"
        if twin is not None:
            bars.insert(0, Bar("GPU", _timed(twin) or 0.0, seconds_text(twin.get("median_s")), "gpu"))
            note = f"{_times(bars[1].value, bars[0].value)} faster on the GPU"
        groups.append(Group(f"{cpu.get('id')} · {cpu.get('shape')} · {cpu.get('precision')}", bars, max(b.value for b in bars), note=note))
    if not groups:
        return ""
    groups.sort(key=lambda g: len(g.bars), reverse=True)  # the pairs first
    title = "GPU against CPU" if len(groups[0].bars) > 1 else "CPU baseline (no GPU run to compare)"
    return _figure(f"chart-gpucpu-{slug}", title, groups, "Median time per run; shorter is faster. Each case on its own scale.")


def _times(slow: float, fast: float) -> str:
    ratio = slow / fast if fast > 0 else 0.0
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.1f}×"


_VARIANTS = {None: ("cuDNN on", "on"), "autotune": ("cuDNN + autotune", "autotune"), "cudnn-off": ("cuDNN off", "off")}


def _cudnn_chart(benchmarks: list[dict[str, Any]], gpu: Any, slug: str) -> str:
    """Each GPU case run with cuDNN off, against the same case with cuDNN on (and autotuned)."""
    groups = []
    on_gpu = [b for b in benchmarks if b.get("device") == "gpu" and _timed(b)]
    for off in (b for b in on_gpu if b.get("variant") == "cudnn-off"):
        family = [b for b in on_gpu if _key(b) == _key(off) and (b.get("variant") or None) in _VARIANTS]
        family.sort(key=lambda b: list(_VARIANTS).index(b.get("variant") or None))
        bars = [
            Bar(_VARIANTS[b.get("variant") or None][0], _timed(b) or 0.0, seconds_text(b.get("median_s")), _VARIANTS[b.get("variant") or None][1])
            for b in family
        ]
        on = next((b for b in bars if b.css == "on"), None)
        note = f"{_times(_timed(off) or 0.0, on.value)} faster with cuDNN" if on else ""
        groups.append(Group(f"{off.get('shape')} · {off.get('precision')}", bars, max(b.value for b in bars), note=note))
    if not groups:
        return ""
    return _figure(f"chart-cudnn-{slug}", "cuDNN on against cuDNN off", groups, "Median time per run on the GPU; shorter is faster.")


def _peak_chart(benchmarks: list[dict[str, Any]], gpu: Any, slug: str) -> str:
    """The best matrix product (else convolution) of each precision, as a percentage of the datasheet peak."""
    peak = (gpu or {}).get("peak") or {}
    bars = []
    for precision in _PRECISIONS:
        runs = [b for b in benchmarks if b.get("device") == "gpu" and not b.get("variant") and b.get("precision") == precision]
        runs = [b for b in runs if isinstance(b.get("percent_of_peak"), (int, float))]
        best = max(runs, key=lambda b: (b.get("kind") == "matmul", b["percent_of_peak"]), default=None)
        if best is None:
            continue
        of = f" of {_number(peak[precision], 4)}" if isinstance(peak.get(precision), (int, float)) else ""
        text = f"{_number(best['percent_of_peak'])} % · {_number(best.get('tflops'))}{of} TFLOP/s ({best.get('kind')})"
        bars.append(Bar(precision, float(best["percent_of_peak"]), text, "peak"))
    if not bars:
        return ""
    scale = max(100.0, *(b.value for b in bars))
    group = Group(f"achieved against the {peak.get('model') or 'GPU'} datasheet", bars, scale, reference=(100.0, "100 % = datasheet peak"))
    return _figure(f"chart-peak-{slug}", "Percentage of peak per precision", [group], "Dense tensor rates from the datasheet table; the dashed line is 100 %.")


_COPY_NAMES = {"pinned": "pinned", "pageable": "pageable"}


def _bandwidth_chart(benchmarks: list[dict[str, Any]], gpu: Any, slug: str) -> str:
    """Host↔device copies against the host link, device memory against its datasheet bandwidth."""
    peak = (gpu or {}).get("peak") or {}
    groups = []
    for kind, title, reference in (("copy", "host ↔ device copies", "host_link_gbs"), ("memory", "device memory", "memory_gbs")):
        runs = [b for b in benchmarks if b.get("kind") == kind and isinstance(b.get("gbs"), (int, float))]
        if not runs:
            continue
        bars = [Bar(b.get("variant") or b.get("id") or kind, float(b["gbs"]), f"{_number(b['gbs'], 4)} GB/s · {b.get('shape')}", "bandwidth") for b in runs]
        limit = peak.get(reference) if isinstance(peak.get(reference), (int, float)) else None
        scale = max([b.value for b in bars] + ([limit] if limit else []))
        mark = (float(limit), f"peak {_number(limit, 4)} GB/s") if limit else None
        groups.append(Group(title, bars, scale, reference=mark))
    if not groups:
        return ""
    return _figure(f"chart-bandwidth-{slug}", "Copy and memory bandwidth", groups, "GB/s; longer is faster. The dashed line is the datasheet rate.")


# ---------------------------------------------------------------- writing the file


def check_target(path: Path) -> None:
    """Say a bad --html path before the diagnosis runs, not after: one line, exit 2."""
    folder = path.absolute().parent
    if path.is_dir():
        raise UsageError(f"--html {path}: is a folder; give a file name")
    if not folder.is_dir():
        raise UsageError(f"--html {path}: the folder {folder} does not exist")


def write(path: Path, fill: Callable[[TextIO], None]) -> None:
    """Write the report atomically: a temporary file in the same folder, then os.replace (no half-written report)."""
    check_target(path)
    folder = path.absolute().parent
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise UsageError(f"--html {path}: cannot write in {folder}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            fill(stream)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)  # mkstemp makes it private; a report is an ordinary file
        os.replace(temporary, path)
    except OSError as error:
        _remove(temporary)
        raise UsageError(f"--html {path}: cannot write: {error.strerror or error}") from None
    except BaseException:
        _remove(temporary)
        raise


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
