"""The page every HTML report shares: escaping, the inline CSS and its Content-Security-Policy (no network, no
script), badges, the Markdown of the finding pages, and writing the file whole."""

from __future__ import annotations

import html
from typing import Any, Iterable, Optional

from cudnn_doctor.checks.links import URL, chosen_url
from cudnn_doctor.findings import Severity
from cudnn_doctor.lazyre import regex


def esc(value: Any) -> str:
    """Text and attribute values alike: quotes too, since attributes carry paths."""
    return html.escape("" if value is None else str(value), quote=True)


# ---------------------------------------------------------------- the page around the sections

CSS = """
:root { --ok: #2e7d32; --info: #1565c0; --warn: #b26a00; --err: #c62828; --muted: #5f6368; --line: #dadce0;
        --gpu: #5a8f00; --cpu: #607d8b; --off: #d84315; --tune: #00838f; --peak: #6a1b9a; --bw: #1565c0; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #202124;
  background: #f6f7f9; }
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
code, pre, .path { font-family: ui-monospace, "Cascadia Mono", Consolas, "DejaVu Sans Mono", monospace;
  font-size: 0.88em; overflow-wrap: anywhere; }
pre { background: #f1f3f4; padding: 8px 10px; border-radius: 4px; white-space: pre-wrap; }
a { color: #1a56b0; }
nav.toc { font-size: 0.92em; color: var(--muted); }
nav.toc a { margin-right: 14px; }
.sub { color: var(--muted); font-size: 0.92em; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 10px; font-size: 0.92em; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid var(--line);
  overflow-wrap: anywhere; }
th { font-weight: 600; background: #f1f3f4; }
td.num, th.num { text-align: right; white-space: nowrap; }
tr.used td { background: #e8f5e9; font-weight: 600; }
tr.unusable td { background: #fdecea; }
.badge { display: inline-block; min-width: 4.6em; text-align: center; padding: 1px 6px; border-radius: 10px;
  font-size: 0.8em;
         font-weight: 600; color: #fff; text-transform: uppercase; letter-spacing: 0.02em; }
.badge.ok, .badge.pass { background: var(--ok); } .badge.info { background: var(--info); }
.badge.warning, .badge.warn { background: var(--warn); } .badge.error, .badge.fail { background: var(--err); }
.finding { border: 1px solid var(--line); border-left: 6px solid var(--info); border-radius: 4px; padding: 8px 14px;
  margin: 10px 0; }
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


def document(
    title: str,
    subtitle: str,
    toc: list[tuple[str, str]],
    body: Iterable[str],
    verdict: Optional[tuple[str, str]] = None,
) -> str:
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
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
        f'<header class="top{state}"><h1>{esc(title)}</h1><p class="sub">{subtitle}</p>'
        f'<nav class="toc">{links}</nav></header>\n' + banner + "\n".join(body) + "\n</main>\n"
        f"<footer>cudnn-doctor {esc(__version__)} · a self-contained report: it loads nothing from the "
        f"network.</footer>\n"
        "</body></html>\n"
    )


_STATE = {
    None: ("ok", "ok"),
    Severity.INFO: ("info", "info"),
    Severity.WARNING: ("warning", "warning"),
    Severity.ERROR: ("error", "error"),
}


def badge(severity: Optional[Severity]) -> str:
    css, word = _STATE[severity]
    return f'<span class="badge {css}">{word}</span>'


_LIST_ITEM = regex(r"^(\d+\.|-)\s+(.*)$")


def inline(text: str, pages: bool = False) -> str:
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
    """The small markdown of the rule pages (the doctor's own text: its URLs are links): `## ` headings, paragraphs,
    `-` / `1.` lists, fenced code."""
    out: list[str] = []
    paragraph: list[str] = []
    items: list[str] = []
    list_tag = ""
    lines = iter(text.splitlines())

    def flush() -> None:
        nonlocal list_tag
        if paragraph:
            out.append(f"<p>{inline(' '.join(paragraph), pages=True)}</p>")
            paragraph.clear()
        if items:
            out.append(f"<{list_tag}>" + "".join(f"<li>{inline(i, pages=True)}</li>" for i in items) + f"</{list_tag}>")
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
            out.append(f"<h4>{inline(line.lstrip('#').strip(), pages=True)}</h4>")
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


def number_text(value: Any, digits: int = 3) -> str:
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
