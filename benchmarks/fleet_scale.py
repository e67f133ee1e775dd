"""How `cudnn-doctor fleet` scales: 100, 1,000 and 10,000 generated snapshots (issue 14).

Per size it prints, median of N runs: the checks on the snapshots (one diagnosis per distinct
snapshot, the rest from the cache), then the aggregation (grouping, drift, counts) plus rendering
of all three reports (terminal, JSON, HTML) with the peak memory tracemalloc sees during it, and
the ratio to the size ten times smaller (linear means about 10×). Target: 1,000 nodes aggregate
and render in under 2 s.

The fleets come from tests/fleet_gen.py: 90 % of the nodes on the healthy gallery machine, 6 % on
another driver, 4 % on a driver too old for their torch, every 250th node dead or timed out.

usage: PYTHONPATH=src python benchmarks/fleet_scale.py [--runs N] [--sizes 100,1000,10000]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fleet_gen import generated_results

from cudnn_doctor.fleet.model import aggregate
from cudnn_doctor.fleet.nodes import Checker
from cudnn_doctor.reports import fleet, fleet_html

TARGET_1000 = 2.0


def aggregate_and_render(results: list) -> tuple[int, int, int]:
    """The timed part: the report and its three renderings (sizes returned so nothing is optimised away)."""
    report = aggregate(results)
    text, data, page = io.StringIO(), io.StringIO(), io.StringIO()
    fleet.render_text(report, text)
    fleet.render_json(report, data)
    fleet_html.render(report, page)
    return len(text.getvalue()), len(data.getvalue()), len(page.getvalue())


def measure(size: int, runs: int) -> dict[str, float]:
    checks, times = [], []
    for _ in range(runs):
        start = time.perf_counter()
        results = generated_results(size, Checker())
        checks.append(time.perf_counter() - start)
        start = time.perf_counter()
        sizes = aggregate_and_render(results)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    aggregate_and_render(results)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "check": statistics.median(checks),
        "render": statistics.median(times),
        "peak_mib": peak / 2**20,
        "html_mib": sizes[2] / 2**20,
    }


def uncached(runs: int = 20) -> float:
    """The checks on one snapshot that the cache has not seen: what each distinct stack costs."""
    from tests.fleet_gen import HEALTHY

    from cudnn_doctor.system.fixture_format import load_fixture

    document = load_fixture(HEALTHY)
    samples = []
    for _ in range(runs):
        checker = Checker()
        start = time.perf_counter()
        checker.result("one", document)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="100,1000,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"{'nodes':>7}  {'checks s':>9}  {'aggregate+render s':>18}  {'ratio':>6}  {'peak MiB':>9}  {'ratio':>6}  {'HTML MiB':>8}"
    )
    previous = None
    failed = False
    for size in sizes:
        row = measure(size, args.runs)
        time_ratio = mem_ratio = ""
        if previous and size == previous[0] * 10:
            time_ratio = f"{row['render'] / previous[1]['render']:.1f}×"
            mem_ratio = f"{row['peak_mib'] / previous[1]['peak_mib']:.1f}×"
        print(
            f"{size:>7}  {row['check']:>9.3f}  {row['render']:>18.3f}  {time_ratio:>6}  {row['peak_mib']:>9.1f}  {mem_ratio:>6}  {row['html_mib']:>8.2f}"
        )
        if size == 1000 and row["render"] >= TARGET_1000:
            failed = True
        previous = (size, row)
    print(
        f"one diagnosis without the cache: {uncached() * 1000:.1f} ms (a fleet of all-different snapshots pays it per node)"
    )
    if 1000 in sizes:
        print(f"target: 1,000 nodes aggregate and render in under {TARGET_1000:g} s: {'missed' if failed else 'met'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
