"""`check --html FILE`: the machine, each finding with its evidence and fix, the cuDNN search order per framework,
and the finding pages embedded (their links work offline)."""

from __future__ import annotations

from typing import Any, Iterator, Optional, TextIO

from cudnn_doctor.diagnosis import Diagnosis
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.loads import PROCESS, Candidate, LoadStep, Resolution
from cudnn_doctor.reports.html_page import badge, document, esc, inline, markdown
from cudnn_doctor.reports.terminal import _facts_lines, _summaries

# ---------------------------------------------------------------- check: summary, findings, search order, pages


def render_check(diagnosis: Diagnosis, stream: TextIO, when: Optional[str] = None, host: Optional[str] = None) -> None:
    """The whole `check` report: machine summary, findings with fix steps, cuDNN search order per framework, pages;
    headed by the verdict, when the check ran (`when`) and on which machine (`host`, left out when redacted)."""
    sections = list(check_sections(diagnosis))
    subtitle = (
        _verdict_line(diagnosis.findings) + (f" · checked {when}" if when else "") + (f" on {host}" if host else "")
    )
    stream.write(document("cudnn-doctor check", esc(subtitle), CHECK_TOC, sections, _check_verdict(diagnosis.findings)))


def _check_verdict(findings: list[Finding]) -> tuple[str, str]:
    """The banner: healthy, warnings only, or errors, counted as the terminal counts them (causes)."""
    causes, _ = _grouped(findings)
    worst = [f.severity for _, f in causes]
    if Severity.ERROR in worst:
        return (
            "err",
            f"✗ {worst.count(Severity.ERROR)} problem(s) stop the GPU stack from working as intended: see each "
            f"fix below.",
        )
    if Severity.WARNING in worst:
        return "warn", f"! It works, with {worst.count(Severity.WARNING)} warning(s) worth fixing."
    return "ok", "✓ Healthy: the driver, CUDA, cuDNN and the frameworks found are consistent; nothing to fix."


CHECK_TOC = [
    ("summary", "Machine"),
    ("findings", "Findings"),
    ("search-order", "cuDNN search order"),
    ("pages", "Finding pages"),
]


def check_sections(diagnosis: Diagnosis) -> Iterator[str]:
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
    tail = (
        f", {len(findings) - len(causes)} more finding(s) shown as their symptoms"
        if len(causes) < len(findings)
        else ""
    )
    return f"{errors} error(s), {warnings} warning(s){tail}"


def _grouped(findings: list[Finding]) -> tuple[list[tuple[int, Finding]], dict[int, list[Finding]]]:
    """(index, cause) pairs and each cause's symptoms, as the terminal report groups them."""
    symptoms: dict[int, list[Finding]] = {}
    for found in findings:
        if found.symptom_of is not None:
            symptoms.setdefault(found.symptom_of, []).append(found)
    return [(i, f) for i, f in enumerate(findings) if f.symptom_of is None], symptoms


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
        more = (
            f"<details><summary>{len(lines)} fact(s)</summary><pre>{esc(chr(10).join(lines))}</pre></details>"
            if lines
            else ""
        )
        rows.append(
            f'<tr data-area="{esc(area.value)}"><td>{badge(worst.severity if worst else None)}</td>'
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
        + "".join(
            _finding(f, symptoms.get(i, []), _anchor(f, causes[:n]), _fix_line(f, facts))
            for n, (i, f) in enumerate(causes)
        )
        + '</div><p class="sub">'
        + inline("`cudnn-doctor check --ignore ID` hides a finding; each finding has its page at the end.")
        + "</p></section>"
    )


def _page_link(finding_id: str) -> str:
    return (
        f'<a class="page-link" href="#page-{esc(finding_id)}">{esc(finding_id)}</a>'
        if _has_page(finding_id)
        else f"<code>{esc(finding_id)}</code>"
    )


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
        f"<h3>{badge(severity)} <code>{esc(found.id)}</code> {esc(found.title)}</h3>",
        f'<p class="detail">{esc(found.detail)}</p>',
    ]
    if found.fix:
        parts.append('<ol class="fix">' + "".join(f"<li>{inline(step)}</li>" for step in found.fix) + "</ol>")
    if automatic:
        parts.append(f'<p class="autofix">{inline(automatic)}</p>')
    if symptoms:
        items = "".join(
            f'<li data-id="{esc(s.id)}">{_page_link(s.id)} ({esc(s.severity.value)}): {esc(s.detail)}</li>'
            for s in symptoms
        )
        parts.append(f'<div class="symptoms">The same cause also shows as:<ul>{items}</ul></div>')
    evidence = found.evidence_json()
    if evidence:
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(_evidence_text(v))}</td></tr>" for k, v in evidence.items())
        parts.append(f"<details><summary>Evidence</summary><table>{rows}</table></details>")
    if _has_page(found.id):
        parts.append(
            f'<p class="sub">More: <a class="page-link" href="#page-{esc(found.id)}">what it means, why it '
            f"happens, how to fix it</a></p>"
        )
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
        tables = [
            '<p class="none">No framework load was followed on this machine (no GPU framework build asks the '
            "system for cuDNN).</p>"
        ]
    intro = (
        '<p class="sub">For each framework, every place the loader searches for the cuDNN library, in order, '
        "the copy found there and the one the load takes.</p>"
    )
    return f'<section id="search-order"><h2>cuDNN search order</h2>{intro}{"".join(tables)}</section>'


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
    step = resolution.cudnn_front()
    if step is None:
        return head + '<p class="none">This load asks for no cuDNN library by name.</p></div>'
    versions = {i.folder.rstrip("/\\").casefold(): i.version or str(i.major) for i in facts.cudnn}
    rows = []
    placed, stray = _place_candidates(step)
    for number, place in enumerate(step.searched, 1):
        copies = placed.get(number - 1, [])
        if not copies:
            rows.append(
                f'<tr class="searched"><td class="num">{number}</td><td '
                f'class="path">{esc(place)}</td><td></td><td></td></tr>'
            )
        for copy in copies:
            rows.append(_copy_row(number, place, copy, step, versions))
    for copy in stray:
        rows.append(_copy_row(None, copy.place, copy, step, versions))
    result = step.winner or (f"BROKEN {step.blocked_by}" if step.blocked_by else "NOT FOUND")
    table = (
        f'<table class="search-order" data-library="{esc(step.wanted)}"><colgroup><col style="width:3em"><col '
        f'style="width:36%">'
        '<col><col style="width:16em"></colgroup><thead><tr><th class="num">#</th><th>searched</th>'
        f"<th>copy of {esc(step.wanted)} found "
        f"there</th><th>result</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    tail = (
        f'<p>Result: <span class="path">{esc(result)}</span> (asked for by {esc(_basename(step.requester))}, '
        f"{esc(step.how)})</p>"
    )
    if step.elsewhere:
        tail += (
            "<p>Copies this search does not reach: "
            + ", ".join(f'<span class="path">{esc(p)}</span>' for p in step.elsewhere)
            + "</p>"
        )
    tail += _confirmations(facts, resolution, step) + _sub_libraries(resolution, step)
    return head + table + tail + "</div>"


def _place_candidates(step: LoadStep) -> tuple[dict[int, list[Candidate]], list[Candidate]]:
    """Each copy at the first searched place that holds it (its folder, or the label it was found by: ld.so.cache)."""
    placed: dict[int, list[Candidate]] = {}
    stray = []
    keys = [p.rstrip("/\\").casefold() for p in step.searched]
    for copy in step.candidates:
        index = next(
            (i for i, (p, k) in enumerate(zip(step.searched, keys)) if p == copy.place or k == _folder_key(copy.path)),
            None,
        )
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
    return (
        f'<tr class="{css}"><td class="num">{shown}</td><td '
        f'class="path">{esc(place)}</td><td>{found}</td><td>{esc(result)}</td></tr>'
    )


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _confirmations(facts: Facts, resolution: Resolution, step: LoadStep) -> str:
    """The real loader's answer next to the emulation's, where the live run asked it."""
    lines = []
    for c in facts.confirmations:
        if c.executable == resolution.executable and _basename(c.name) == _basename(step.name):
            verdict = "agrees" if c.agrees else "DISAGREES"
            lines.append(
                f'<p>Real load: <span class="path">{esc(c.real or c.error)}</span> ({verdict} with the emulation)</p>'
            )
    return "".join(lines)


def _sub_libraries(resolution: Resolution, front: LoadStep) -> str:
    """The other cuDNN libraries the same load takes; one from another folder than the front is marked."""
    others = [
        s for s in resolution.steps if s is not front and not s.reused and "cudnn" in _basename(s.name).casefold()
    ]
    if not others:
        return ""
    home = _folder_key(front.winner) if front.winner else None
    rows = []
    for s in others:
        where = s.winner or (
            f"BROKEN {s.blocked_by}" if s.blocked_by else "NOT FOUND" + (" (optional)" if s.optional else "")
        )
        moved = bool(s.winner and home is not None and _folder_key(s.winner) != home)
        css = ' class="unusable"' if moved or s.failed else ""
        note = " (another folder than the front library)" if moved else ""
        rows.append(
            f"<tr{css}><td><code>{esc(s.wanted)}</code></td><td><span "
            f'class="path">{esc(where)}</span>{esc(note)}</td></tr>'
        )
    return (
        f"<details open><summary>The other cuDNN libraries this load takes</summary><table "
        f'class="sub-libraries">{"".join(rows)}</table></details>'
    )


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
                f'<section class="page" id="page-{esc(finding_id)}"><h3><code>{esc(finding_id)}</code> '
                f"{esc(titles[finding_id])}</h3>"
                f'{markdown(text)}<p class="sub"><a href="#finding-{esc(finding_id)}">back to the '
                f"finding</a></p></section>"
            )
    if not blocks:
        return ""
    return (
        '<section id="pages"><h2>Finding pages</h2><p class="sub">The text of <code>cudnn-doctor explain '
        "ID</code> for each finding above.</p>" + "".join(blocks) + "</section>"
    )
