"""`verify`'s report: the GPU, each framework's checks and figures, and the verdicts; text or one JSON object.
Also the progress display the run feeds while the worker runs (stderr only, and only on a terminal)."""

from __future__ import annotations

from typing import Any, Callable, Optional, TextIO

from cudnn_doctor.lazyre import regex
from cudnn_doctor.reports import write_json
from cudnn_doctor.reports.encoding import Fitter

MARKS = {"pass": "✓", "warn": "!", "fail": "✗", "info": "•"}


def render_json(result: dict[str, Any], out: TextIO) -> None:
    write_json(out, result, indent=2, ensure_ascii=False)


def render_text(result: dict[str, Any], out: TextIO) -> None:
    fit = Fitter(out)
    for line in text_lines(result):
        out.write(fit(line) + "\n")


def _gpu_line(gpu: Optional[dict[str, Any]]) -> list[str]:
    if gpu is None:
        return ["✗ No NVIDIA GPU: verify ran the CPU baseline only (no driver, or no GPU visible to the framework)."]
    parts = [gpu["name"]]
    if gpu.get("compute_capability"):
        parts.append(f"compute capability {gpu['compute_capability']}")
    if gpu.get("driver"):
        parts.append(f"driver {gpu['driver']}")
    clocks, power = gpu.get("clocks_mhz") or {}, gpu.get("power_w") or {}
    if clocks.get("sm") is not None:
        parts.append(f"SM {clocks['sm']:.0f}/{clocks.get('sm_max') or '?'} MHz")
    if power.get("draw") is not None:
        parts.append(f"{power['draw']:.0f}/{power.get('limit') or '?'} W")
    lines = ["GPU: " + " · ".join(parts)]
    if gpu.get("throttle_reasons"):
        lines.append("  clock events: " + ", ".join(gpu["throttle_reasons"]))
    peak = gpu.get("peak")
    if peak:
        rates = ", ".join(f"{p} {peak[p]:g}" for p in ("fp32", "tf32", "fp16", "bf16") if peak.get(p))
        lines.append(f"  datasheet ({peak['model']}): {rates} TFLOP/s; memory {peak.get('memory_gbs') or '?'} GB/s")
    else:
        lines.append("  datasheet: this GPU is not in the table, so no % of peak")
    return lines


def _rate(bench: dict[str, Any]) -> str:
    if bench.get("tflops") is not None:
        text = f"{bench['tflops']:8.2f} TFLOP/s"
    elif bench.get("gbs") is not None:
        text = f"{bench['gbs']:8.1f} GB/s   "
    else:
        text = " " * 15
    if bench.get("percent_of_peak") is not None:
        text += f" {bench['percent_of_peak']:5.1f} % of peak"
    return text


def text_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"Verify in {result['python']}" + (" (quick)" if result.get("quick") else ""), ""]
    lines += (
        ["CPU only, as asked (--cpu-only): no GPU was used."]
        if result.get("cpu_only")
        else _gpu_line(result.get("gpu"))
    )
    if not result["frameworks"]:
        lines.append(
            f"✗ No framework to verify in {result['python']}: install one (python -m pip install torch), or pass "
            f"--python"
        )
    for framework in result["frameworks"]:
        versions = " · ".join(f"{k} {framework[k]}" for k in ("cuda", "cudnn") if framework.get(k))
        lines += [
            "",
            f"{framework['framework']} {framework.get('version') or ''}" + (f" ({versions})" if versions else ""),
        ]
        if framework["status"] not in ("ok", "no-gpu"):
            lines.append(f"  ✗ {framework['status']}: {framework.get('message') or ''}")
            continue
        if framework.get("message"):
            lines.append(f"  ! {framework['message']}")
        lines += [f"  • {note}" for note in framework.get("notes") or ()]
        for smoke in framework["smoke"]:
            error = f"{smoke['max_error']:.1e}" if smoke.get("max_error") is not None else smoke.get("error", "failed")
            lines.append(
                f"  {'✓' if smoke['ok'] else '✗'} {smoke['name']} {smoke['precision']}: GPU vs CPU error {error} "
                f"(tolerance {smoke['tolerance']:.0e})"
            )
        if framework["benchmarks"]:
            lines.append("  benchmark                  device precision   median      rate")
        for bench in framework["benchmarks"]:
            name = bench["id"]
            lines.append(
                f"  {name:26} {bench['device'].upper():6} {bench['precision']:9} {bench['median_s'] * 1000:8.2f} "
                f"ms {_rate(bench)}"
            )
        for verdict in framework["verdicts"]:
            lines.append(f"  {MARKS[verdict['status']]} {verdict['text']}")
    if result.get("compare"):
        lines += ["", "Since the last run (" + (result["compare"][0].get("before_time") or "?") + "):"]
        for row in result["compare"]:
            change = "faster" if row["ratio"] >= 1 else "slower"
            factor = row["ratio"] if row["ratio"] >= 1 else 1 / row["ratio"]
            lines.append(
                f"  {row['framework']} {row['id']}: {row['before_s'] * 1000:.2f} → {row['after_s'] * 1000:.2f} ms "
                f"({factor:.2f}× {change})"
            )
    elif result.get("compare") is not None:
        lines += ["", "No earlier run on this GPU to compare with."]
    if result.get("cpu_only"):
        verdict = "the CPU baseline ran, as asked; run without --cpu-only to test the GPU."
    else:
        verdict = "the GPU and cuDNN accelerate as they should."
    lines += ["", "Result: " + (verdict if result["exit_code"] == 0 else "see the ✗ lines above.")]
    return lines


class Progress:
    """A bar on stderr fed with the worker's "N/TOTAL what" lines; silent when stderr is not a terminal."""

    _LINE = regex(r"^(\d+)/(\d+) (.*)$")

    def __init__(self, stream: Optional[TextIO]) -> None:
        self._bar: Any = None
        self._task: Any = None
        self._framework = ""
        if stream is not None and stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            console = Console(file=stream)
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def start(self, name: str) -> Callable[[str], None]:
        """A new bar for one framework's worker; returns what takes its progress lines."""
        self._framework = name
        if self._bar is not None:
            if self._task is not None:
                self._bar.remove_task(self._task)
            self._task = self._bar.add_task(f"{name}: starting", total=None)
        return self._line

    def _line(self, line: str) -> None:
        found = self._LINE.match(line)
        if self._bar is None or self._task is None or not found:
            return
        done, total, what = int(found.group(1)), int(found.group(2)), found.group(3)
        self._bar.update(self._task, completed=done - 1, total=total, description=f"{self._framework}: {what}")
