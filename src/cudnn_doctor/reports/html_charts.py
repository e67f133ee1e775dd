"""Horizontal bar charts in inline SVG (no script library), and the four of verify: GPU against CPU, cuDNN on,
off and autotuned, against the datasheet peak, and copy bandwidth."""

from __future__ import annotations

from typing import Any, Optional

from cudnn_doctor.record import Record
from cudnn_doctor.reports.html_page import esc, number_text, seconds_text

# ------------------------------------------- charts: horizontal bars in inline SVG


PRECISIONS = ("fp32", "tf32", "fp16", "bf16")


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
            length = max(
                min(length, _TRACK + 30), 2.0 if bar.value > 0 else 0.0
            )  # never invisible, never off the chart
            body.append(
                f'<text x="{_LABEL - 8}" y="{y + 15}" text-anchor="end">{esc(bar.label)}</text>'
                f'<rect class="track" x="{_LABEL}" y="{y + 3}" width="{_TRACK}" height="{_ROW - 6}"/>'
                f'<rect class="bar {esc(bar.css)}" x="{_LABEL}" y="{y + 3}" width="{length:.2f}" height="{_ROW - 6}" '
                f'data-label="{esc(bar.label)}" data-value="{bar.value:.6g}"><title>{esc(bar.label)}: '
                f"{esc(bar.text)}</title></rect>"
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
        f'width="{_WIDTH + 10}" height="{y}" '
        f'data-chart="{esc(chart_id.split("-")[1] if "-" in chart_id else chart_id)}">'
        f"<title>{esc(title)}</title>{''.join(body)}</svg>"
    )


def _figure(chart_id: str, title: str, groups: list[Group], caption: str) -> str:
    return (
        f'<figure class="chart" '
        f'id="{esc(chart_id)}"><h4>{esc(title)}</h4>{chart_svg(chart_id, title, groups)}<figcaption>{esc(caption)}'
        f"</figcaption></figure>"
    )


def _key(b: dict[str, Any]) -> tuple[Any, ...]:
    return (b.get("kind"), b.get("precision"), b.get("shape"))


def _timed(b: dict[str, Any]) -> Optional[float]:
    value = b.get("median_s")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def gpu_vs_cpu_chart(benchmarks: list[dict[str, Any]], gpu: Any, slug: str) -> str:
    """The same case on both: median time per run (shorter is faster); without a GPU, the CPU baseline alone."""
    plain = [b for b in benchmarks if not b.get("variant") and _timed(b)]
    groups = []
    for cpu in (b for b in plain if b.get("device") == "cpu"):
        twin = next(
            (b for b in plain if b.get("device") == "gpu" and (b.get("id") == cpu.get("id") or _key(b) == _key(cpu))),
            None,
        )
        bars = [Bar("CPU", _timed(cpu) or 0.0, seconds_text(cpu.get("median_s")), "cpu")]
        note = "CPU only"
        if twin is not None:
            bars.insert(0, Bar("GPU", _timed(twin) or 0.0, seconds_text(twin.get("median_s")), "gpu"))
            note = f"{_times(bars[1].value, bars[0].value)} faster on the GPU"
        groups.append(
            Group(
                f"{cpu.get('id')} · {cpu.get('shape')} · {cpu.get('precision')}",
                bars,
                max(b.value for b in bars),
                note=note,
            )
        )
    if not groups:
        return ""
    groups.sort(key=lambda g: len(g.bars), reverse=True)  # the pairs first
    title = "GPU against CPU" if len(groups[0].bars) > 1 else "CPU baseline (no GPU run to compare)"
    return _figure(
        f"chart-gpucpu-{slug}", title, groups, "Median time per run; shorter is faster. Each case on its own scale."
    )


def _times(slow: float, fast: float) -> str:
    ratio = slow / fast if fast > 0 else 0.0
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.1f}×"


_VARIANTS = {None: ("cuDNN on", "on"), "autotune": ("cuDNN + autotune", "autotune"), "cudnn-off": ("cuDNN off", "off")}


def cudnn_chart(benchmarks: list[dict[str, Any]], gpu: Any, slug: str) -> str:
    """Each GPU case run with cuDNN off, against the same case with cuDNN on (and autotuned)."""
    groups = []
    on_gpu = [b for b in benchmarks if b.get("device") == "gpu" and _timed(b)]
    for off in (b for b in on_gpu if b.get("variant") == "cudnn-off"):
        family = [b for b in on_gpu if _key(b) == _key(off) and (b.get("variant") or None) in _VARIANTS]
        family.sort(key=lambda b: list(_VARIANTS).index(b.get("variant") or None))
        bars = [
            Bar(
                _VARIANTS[b.get("variant") or None][0],
                _timed(b) or 0.0,
                seconds_text(b.get("median_s")),
                _VARIANTS[b.get("variant") or None][1],
            )
            for b in family
        ]
        on = next((b for b in bars if b.css == "on"), None)
        note = f"{_times(_timed(off) or 0.0, on.value)} faster with cuDNN" if on else ""
        groups.append(
            Group(f"{off.get('shape')} · {off.get('precision')}", bars, max(b.value for b in bars), note=note)
        )
    if not groups:
        return ""
    return _figure(
        f"chart-cudnn-{slug}",
        "cuDNN on against cuDNN off",
        groups,
        "Median time per run on the GPU; shorter is faster.",
    )


def peak_chart(benchmarks: list[dict[str, Any]], gpu: Any, slug: str) -> str:
    """The best matrix product (else convolution) of each precision, as a percentage of the datasheet peak."""
    peak = (gpu or {}).get("peak") or {}
    bars = []
    for precision in PRECISIONS:
        runs = [
            b
            for b in benchmarks
            if b.get("device") == "gpu" and not b.get("variant") and b.get("precision") == precision
        ]
        runs = [b for b in runs if isinstance(b.get("percent_of_peak"), (int, float))]
        best = max(runs, key=lambda b: (b.get("kind") == "matmul", b["percent_of_peak"]), default=None)
        if best is None:
            continue
        of = f" of {number_text(peak[precision], 4)}" if isinstance(peak.get(precision), (int, float)) else ""
        text = (
            f"{number_text(best['percent_of_peak'])} % · {number_text(best.get('tflops'))}{of} TFLOP/s "
            f"({best.get('kind')})"
        )
        bars.append(Bar(precision, float(best["percent_of_peak"]), text, "peak"))
    if not bars:
        return ""
    scale = max(100.0, *(b.value for b in bars))
    group = Group(
        f"achieved against the {peak.get('model') or 'GPU'} datasheet",
        bars,
        scale,
        reference=(100.0, "100 % = datasheet peak"),
    )
    return _figure(
        f"chart-peak-{slug}",
        "Percentage of peak per precision",
        [group],
        "Dense tensor rates from the datasheet table; the dashed line is 100 %.",
    )


_COPY_NAMES = {"pinned": "pinned", "pageable": "pageable"}


def bandwidth_chart(benchmarks: list[dict[str, Any]], gpu: Any, slug: str) -> str:
    """Host↔device copies against the host link, device memory against its datasheet bandwidth."""
    peak = (gpu or {}).get("peak") or {}
    groups = []
    for kind, title, reference in (
        ("copy", "host ↔ device copies", "host_link_gbs"),
        ("memory", "device memory", "memory_gbs"),
    ):
        runs = [b for b in benchmarks if b.get("kind") == kind and isinstance(b.get("gbs"), (int, float))]
        if not runs:
            continue
        bars = [
            Bar(
                b.get("variant") or b.get("id") or kind,
                float(b["gbs"]),
                f"{number_text(b['gbs'], 4)} GB/s · {b.get('shape')}",
                "bandwidth",
            )
            for b in runs
        ]
        limit = peak.get(reference) if isinstance(peak.get(reference), (int, float)) else None
        scale = max([b.value for b in bars] + ([limit] if limit else []))
        mark = (float(limit), f"peak {number_text(limit, 4)} GB/s") if limit else None
        groups.append(Group(title, bars, scale, reference=mark))
    if not groups:
        return ""
    return _figure(
        f"chart-bandwidth-{slug}",
        "Copy and memory bandwidth",
        groups,
        "GB/s; longer is faster. The dashed line is the datasheet rate.",
    )
