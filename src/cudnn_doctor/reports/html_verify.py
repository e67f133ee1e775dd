"""`verify --html FILE`: the GPU, each framework's verdicts, smoke checks and benchmarks, its charts, and the
comparison with the last run."""

from __future__ import annotations

import re
from typing import Any, Optional, TextIO

from cudnn_doctor.diagnosis import Diagnosis
from cudnn_doctor.reports.html_charts import PRECISIONS, bandwidth_chart, cudnn_chart, gpu_vs_cpu_chart, peak_chart
from cudnn_doctor.reports.html_check import CHECK_TOC, check_sections
from cudnn_doctor.reports.html_page import document, esc, inline, number_text, seconds_text

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
        body.extend(check_sections(diagnosis))
        toc.extend(CHECK_TOC)
    status = (
        "all checks passed"
        if result.get("exit_code") == 0
        else "some checks failed"
        if result.get("gpu")
        else "no NVIDIA GPU: CPU baseline only"
    )
    subtitle = " · ".join(
        esc(p)
        for p in (
            result.get("time"),
            f"Python {result.get('python')}",
            "quick run" if result.get("quick") else None,
            status,
        )
        if p
    )
    stream.write(document("cudnn-doctor verify", subtitle, toc, body))


def _slug(value: Any) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", str(value).lower()).strip("-") or "x"


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
        facts.append(f"{number_text(gpu['memory_mib'] / 1024)} GiB")
    clocks = ", ".join(
        f"{k} {number_text(v, 4)} MHz" for k, v in (gpu.get("clocks_mhz") or {}).items() if v is not None
    )
    power = gpu.get("power_w") or {}
    watts = " of ".join(f"{number_text(power[k], 4)} W {k}" for k in ("draw", "limit") if power.get(k) is not None)
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
        rates = [f"{k} {number_text(peak[k], 4)} TFLOP/s" for k in PRECISIONS if peak.get(k) is not None]
        rates += [
            f"{label} {number_text(peak[k], 4)} GB/s"
            for k, label in (("memory_gbs", "memory"), ("host_link_gbs", "host link"))
            if peak.get(k)
        ]
        source = peak.get("source") or ""
        link = inline(source)
        lines.append(
            f'<p class="sub">Datasheet peak of the {esc(peak.get("model"))}: {esc(", ".join(rates))} (source: '
            f"{link})</p>"
        )
    else:
        lines.append('<p class="sub">This GPU model is not in the datasheet table: no percentage of peak.</p>')
    return '<section id="gpu"><h2>GPU</h2>' + "".join(lines) + "</section>"


def _framework_section(framework: dict[str, Any], gpu: Optional[dict[str, Any]]) -> str:
    name = str(framework.get("framework"))
    slug = _slug(name)
    built = ", ".join(
        f"{label} {framework[k]}" for k, label in (("cuda", "CUDA"), ("cudnn", "cuDNN")) if framework.get(k)
    )
    title = f"{name} {framework.get('version') or ''}".strip() + (f" ({built})" if built else "")
    status = str(framework.get("status"))
    css = {"ok": "pass", "no-gpu": "warn", "error": "fail"}.get(status, "info")
    parts = [
        f'<section class="framework" id="fw-{slug}" data-framework="{esc(name)}"><h2>{esc(title)} <span '
        f'class="badge {css}">{esc(status)}</span></h2>'
    ]
    if framework.get("message"):
        parts.append(f'<p class="message">{esc(framework["message"])}</p>')
    parts.append(_verdicts(framework.get("verdicts") or [], slug))
    benchmarks = [b for b in framework.get("benchmarks") or [] if isinstance(b, dict)]
    for chart in (gpu_vs_cpu_chart, cudnn_chart, peak_chart, bandwidth_chart):
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
        f"<tr><td>{esc(s.get('name'))}</td><td>{esc(s.get('precision'))}</td><td "
        f'class="num">{esc(number_text(s.get("max_error")))}</td>'
        f'<td class="num">{esc(number_text(s.get("tolerance")))}</td><td>{_OK if s.get("ok") else _WRONG}</td></tr>'
        for s in smoke
    )
    return (
        '<h3>Correctness: GPU against CPU</h3><table class="smoke"><thead><tr><th>operation</th><th>precision</th>'
        f'<th class="num">max error</th><th '
        f'class="num">tolerance</th><th>result</th></tr></thead><tbody>{rows}</tbody></table>'
    )


def _benchmark_table(benchmarks: list[dict[str, Any]]) -> str:
    if not benchmarks:
        return ""
    rows = []
    for b in benchmarks:
        rate = (
            f"{number_text(b['tflops'])} TFLOP/s"
            if b.get("tflops") is not None
            else f"{number_text(b['gbs'])} GB/s"
            if b.get("gbs") is not None
            else ""
        )
        peak = f"{number_text(b['percent_of_peak'])} %" if b.get("percent_of_peak") is not None else ""
        spread = f"{number_text(100 * b['spread'], 2)} %" if isinstance(b.get("spread"), (int, float)) else ""
        rows.append(
            f"<tr><td><code>{esc(b.get('id'))}</code></td><td>{esc(b.get('device'))}"
            f"</td><td>{esc(b.get('precision'))}</td>"
            f"<td>{esc(b.get('variant') or '')}</td><td>{esc(b.get('shape'))}</td><td "
            f'class="num">{esc(seconds_text(b.get("median_s")))}</td>'
            f'<td class="num">{esc(spread)}</td><td class="num">{esc(rate)}</td><td class="num">{esc(peak)}</td></tr>'
        )
    return (
        "<h3>All benchmarks</h3><table "
        'class="benchmarks"><thead><tr><th>id</th><th>device</th><th>precision</th><th>variant</th>'
        '<th>shape</th><th class="num">median</th><th class="num" title="(max - min) / median of the '
        'runs">spread</th><th class="num">rate</th><th class="num">of peak</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _compare_section(rows: list[dict[str, Any]]) -> str:
    body = "".join(
        f"<tr><td>{esc(r.get('framework'))}</td><td><code>{esc(r.get('id'))}</code></td><td "
        f'class="num">{esc(seconds_text(r.get("before_s")))}</td>'
        f'<td class="num">{esc(seconds_text(r.get("after_s")))}</td><td '
        f'class="num">{esc(number_text(r.get("ratio")))}×</td></tr>'
        for r in rows
        if isinstance(r, dict)
    )
    return (
        '<section id="compare"><h2>Since the last run</h2><p class="sub">ratio = before / after: above 1 is '
        "faster now.</p>"
        '<table class="compare"><thead><tr><th>framework</th><th>benchmark</th><th class="num">before</th><th '
        'class="num">now</th>'
        f'<th class="num">ratio</th></tr></thead><tbody>{body}</tbody></table></section>'
    )
