"""From the worker's raw timings to rates, % of the datasheet peak and a verdict per check.

Pure functions of the worker's report, the GPU's datasheet peak and the thresholds (both from the
knowledge): no machine is read here, so every verdict is tested on recorded figures.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from cudnn_doctor import knowledge
from cudnn_doctor.record import Record


class Peak(Record):
    """A GPU's datasheet rates: TFLOP/s dense per precision, GB/s for memory and the host link."""

    model: str
    rates: Mapping[str, Optional[float]]  # fp32, tf32, fp16, bf16
    memory_gbs: Optional[float]
    host_link_gbs: Optional[float]
    source: str

    def of(self, benchmark: Mapping[str, Any]) -> Optional[float]:
        """The peak a benchmark's rate is measured against (None where the datasheet gives none)."""
        if benchmark["kind"] in ("conv", "matmul"):
            return self.rates.get(benchmark["precision"])
        return self.memory_gbs if benchmark["kind"] == "memory" else self.host_link_gbs


class Threshold(Record):
    """Below `fail_below` a check fails, below `warn_below` it warns (percent of peak, or a speed-up ratio)."""

    warn_below: float
    fail_below: float
    source: str


def peak_of(gpu_name: Optional[str]) -> Optional[Peak]:
    """The datasheet row of the GPU NVML names, None when the table does not have it."""
    row = knowledge.gpu_peak(gpu_name) if gpu_name else None
    if row is None:
        return None
    rates = {"fp32": row.fp32, "tf32": row.tf32, "fp16": row.fp16, "bf16": row.bf16}
    return Peak(row.model, rates, row.memory_gbs, row.host_link_gbs, row.source)


def thresholds() -> dict[str, Threshold]:
    out = {}
    for check in ("gpu-speedup", "cudnn-speedup", "matmul-peak", "conv-peak", "memory-bandwidth", "host-link"):
        row = knowledge.verify_threshold(check)
        if row is not None:
            out[check] = Threshold(row.warn_below, row.fail_below, row.source)
    return out


def rates(benchmarks: list[dict[str, Any]], peak: Optional[Peak]) -> list[dict[str, Any]]:
    """Each benchmark with TFLOP/s or GB/s and, on a GPU with a known peak, its percent of that peak."""
    out = []
    for bench in benchmarks:
        bench = dict(bench)
        median = bench["median_s"]
        bench["tflops"] = bench["flops"] / median / 1e12 if bench.get("flops") and median > 0 else None
        bench["gbs"] = bench["bytes"] / median / 1e9 if bench.get("bytes") and median > 0 else None
        achieved = bench["tflops"] if bench["tflops"] is not None else bench["gbs"]
        limit = peak.of(bench) if peak is not None and bench["device"] == "gpu" else None
        bench["percent_of_peak"] = 100.0 * achieved / limit if achieved is not None and limit else None
        out.append(bench)
    return out


def _find(benchmarks: list[dict[str, Any]], case_id: str, device: str = "gpu") -> Optional[dict[str, Any]]:
    return next((b for b in benchmarks if b["id"] == case_id and b["device"] == device), None)


def _grade(value: float, threshold: Optional[Threshold]) -> str:
    if threshold is None:
        return "info"
    if value < threshold.fail_below:
        return "fail"
    return "warn" if value < threshold.warn_below else "pass"


def _state_evidence(state: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """NVML's clocks, power and throttle reasons, shown when a rate is low."""
    if not state:
        return {}
    return {key: state[key] for key in ("clocks_mhz", "power_w", "throttle_reasons") if state.get(key) is not None}


def _low_rate_hint(state: Optional[Mapping[str, Any]]) -> str:
    reasons = [r for r in (state or {}).get("throttle_reasons", ()) if r not in ("gpu_idle", "none")]
    if reasons:
        return f": the GPU is throttled ({', '.join(reasons)})"
    return ": the GPU is throttled, shared with another process or in a low power state"


def verdicts(
    report: Mapping[str, Any],
    peak: Optional[Peak],
    limits: Mapping[str, Threshold],
    state: Optional[Mapping[str, Any]] = None,
    cpu_only: bool = False,
) -> list[dict[str, Any]]:
    """One verdict per check the figures allow, in the order a reader asks: does it run, is it right, is it fast."""
    benchmarks = report.get("benchmarks", [])
    out: list[dict[str, Any]] = []
    if report.get("status") == "no-gpu" and cpu_only:
        out.append(
            {
                "id": "cpu-only",
                "status": "pass",
                "text": f"{report['framework']} ran the CPU baseline, as asked (--cpu-only)",
            }
        )
        return out
    if report.get("status") == "no-gpu":
        out.append(
            {
                "id": "no-gpu",
                "status": "fail",
                "text": f"no NVIDIA GPU visible to {report['framework']}: only the CPU baseline ran",
            }
        )
        return out
    for smoke in report.get("smoke", []):
        if not smoke["ok"]:
            what = (
                smoke.get("error")
                or f"differs from the CPU by {smoke['max_error']:.2g} (tolerance {smoke['tolerance']:.0e})"
            )
            out.append(
                {
                    "id": "gpu-result-wrong",
                    "status": "fail",
                    "text": f"{smoke['name']} {smoke['precision']} on the GPU {what}",
                    "evidence": dict(smoke),
                }
            )
    if report.get("smoke") and all(s["ok"] for s in report["smoke"]):
        out.append(
            {
                "id": "gpu-results-match",
                "status": "pass",
                "text": f"GPU results match the CPU's ({len(report['smoke'])} checks, cuDNN on)",
            }
        )
    out += _speedups(benchmarks, limits)
    out += _peaks(benchmarks, peak, limits, state)
    return out


def _speedups(benchmarks: list[dict[str, Any]], limits: Mapping[str, Threshold]) -> list[dict[str, Any]]:
    out = []
    gpu, cpu = _find(benchmarks, "conv-guide-b1"), _find(benchmarks, "conv-guide-b1", "cpu")
    if gpu and cpu:
        ratio = cpu["median_s"] / gpu["median_s"]
        status = _grade(ratio, limits.get("gpu-speedup"))
        text = f"the guides' convolution (2× 3×3, 224×224×3) runs {ratio:.0f}× faster on the GPU than on the CPU"
        out.append(
            {
                "id": "gpu-speedup",
                "status": status,
                "text": text,
                "evidence": {"gpu_s": gpu["median_s"], "cpu_s": cpu["median_s"]},
            }
        )
    on, off = _find(benchmarks, "conv-large"), _find(benchmarks, "conv-large-cudnn-off")
    if on and off:
        ratio = off["median_s"] / on["median_s"]
        status = _grade(ratio, limits.get("cudnn-speedup"))
        text = f"cuDNN active: the large convolution is {ratio:.1f}× faster than with cuDNN off"
        if status == "fail":
            text = (
                f"cuDNN does not speed up the large convolution ({ratio:.2f}× against cuDNN off): it is not really used"
            )
        out.append(
            {
                "id": "cudnn-active",
                "status": status,
                "text": text,
                "evidence": {"on_s": on["median_s"], "off_s": off["median_s"]},
            }
        )
    tuned = _find(benchmarks, "conv-large-autotune")
    if on and tuned:
        ratio = on["median_s"] / tuned["median_s"]
        out.append(
            {
                "id": "cudnn-autotune",
                "status": "info",
                "text": f"cudnn.benchmark autotuning: {ratio:.2f}× the default algorithm's speed",
            }
        )
    return out


def _peaks(
    benchmarks: list[dict[str, Any]],
    peak: Optional[Peak],
    limits: Mapping[str, Threshold],
    state: Optional[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    if peak is None:
        gpu = [b for b in benchmarks if b["device"] == "gpu"]
        return (
            [
                {
                    "id": "peak-unknown",
                    "status": "info",
                    "text": "this GPU is not in the datasheet table: rates are shown without a % of peak",
                }
            ]
            if gpu
            else []
        )
    out = []
    checks = [
        (b, "matmul-peak")
        for b in benchmarks
        if b["kind"] == "matmul"
        and b["device"] == "gpu"
        and b["id"].startswith("matmul-")
        and b["flops"] >= 2 * 4096**3
    ]
    checks += [(b, "conv-peak") for b in benchmarks if b["id"] == "conv-large"]
    checks += [(b, "memory-bandwidth") for b in benchmarks if b["kind"] == "memory"]
    checks += [(b, "host-link") for b in benchmarks if b["id"] == "copy-h2d-pinned"]
    for bench, check in checks:
        percent = bench.get("percent_of_peak")
        if percent is None:
            continue
        status = _grade(percent, limits.get(check))
        rate = f"{bench['tflops']:.1f} TFLOP/s" if bench.get("tflops") is not None else f"{bench['gbs']:.0f} GB/s"
        what = {
            "matmul-peak": f"{bench['precision']} matrix product",
            "conv-peak": f"{bench['precision']} convolution",
        }.get(check, check.replace("-", " "))
        text = f"{what} at {percent:.0f} % of the {peak.model} datasheet peak ({rate})"
        evidence: dict[str, Any] = {"percent": round(percent, 1), "peak_source": peak.source}
        if status in ("warn", "fail"):
            text += _low_rate_hint(state)
            evidence.update(_state_evidence(state))
        out.append(
            {
                "id": f"{check}-{bench['precision']}" if check == "matmul-peak" else check,
                "status": status,
                "text": text,
                "evidence": evidence,
            }
        )
    return out


def exit_code(frameworks: Sequence[Mapping[str, Any]], gpu: Optional[Mapping[str, Any]], cpu_only: bool = False) -> int:
    """0 when a GPU ran every framework asked (with `cpu_only`: the CPU, as asked) and no verdict failed; 1 otherwise
    (no GPU included)."""
    if cpu_only:
        ran = all(f["status"] in ("ok", "no-gpu") for f in frameworks)
        return (
            0 if frameworks and ran and not any(v["status"] == "fail" for f in frameworks for v in f["verdicts"]) else 1
        )
    if gpu is None or not frameworks:
        return 1
    for framework in frameworks:
        if framework["status"] != "ok" or any(v["status"] == "fail" for v in framework["verdicts"]):
            return 1
    return 0
