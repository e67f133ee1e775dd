"""How long `cudnn-doctor plan` takes of its own, with the whole knowledge loaded.

Two figures, each over N runs (median):
- in process, with the whole knowledge loaded: `solve()` for each query below, its first run (every lookup
  cache empty) and the median of the next N, with the number of candidates and combinations it considered.
  Target: the first run under 50 ms (the issue's "with the whole knowledge loaded"), as a ratio to 50 ms;
- as a command: `cudnn-doctor plan ... --format json` against `python -c pass` in the same run (the floor:
  interpreter start), every input given on the command line so that no machine is read; its own time
  (command minus floor) as a ratio to 50 ms, which also pays for importing typing, packaging, argparse
  and loading the tables (issue 15's "knowledge in a form that loads in a few ms" is that share).

usage: python benchmarks/plan_speed.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

QUERIES = [
    ["--framework", "torch", "--os", "windows", "--python", "3.10", "--gpu", "RTX 3060", "--driver", "472.12"],
    [
        "--framework",
        "tensorflow==2.5.0",
        "--os",
        "windows",
        "--python",
        "3.8",
        "--gpu",
        "RTX 3060",
        "--driver",
        "528.49",
    ],
    [
        "--framework",
        "tensorflow==2.12",
        "--os",
        "windows",
        "--python",
        "3.10",
        "--gpu",
        "RTX 3060",
        "--driver",
        "528.49",
    ],
    [
        "--framework",
        "torch",
        "--framework",
        "tensorflow",
        "--os",
        "linux",
        "--python",
        "3.11",
        "--gpu",
        "A100",
        "--driver",
        "535.104.05",
    ],
    ["--framework", "onnxruntime", "--os", "linux", "--python", "3.11", "--gpu", "RTX 4090", "--driver", "550.54.14"],
    ["--framework", "paddle", "--os", "windows", "--python", "3.9", "--gpu", "RTX 2080", "--driver", "531.14"],
    ["--framework", "jax", "--os", "wsl", "--python", "3.12", "--gpu", "H100", "--driver", "581.15"],
    ["--cuda", "11.8", "--os", "linux", "--python", "3.10", "--gpu", "T4", "--driver", "520.61.05"],
]


def in_process(runs: int) -> None:
    start = time.perf_counter()
    from cudnn_doctor import knowledge
    from cudnn_doctor.planner import solve
    from cudnn_doctor.planner.inputs import build_request

    for name in knowledge.schema.TABLES:
        knowledge.table(name)
    loaded = time.perf_counter() - start
    print(f"import + load every knowledge table   {loaded * 1000:7.1f} ms")
    worst = 0.0
    for query in QUERIES:
        request = _request(build_request, query)
        for cached in knowledge._LOOKUPS:  # the tables stay loaded; what the planner asked of them is forgotten
            cached.cache_clear()
        begin = time.perf_counter()
        plan = solve(request)
        first = time.perf_counter() - begin
        worst = max(worst, first)
        samples = []
        for _ in range(runs):
            begin = time.perf_counter()
            plan = solve(request)
            samples.append(time.perf_counter() - begin)
        median = statistics.median(samples) * 1000
        found = "stack" if plan.stack else "no stack"
        print(
            f"solve {' '.join(query[:2]):33} first {first * 1000:6.1f} ms  then {median:6.1f} ms  {plan.considered:5d} considered  {found}"
        )
    print(
        f"slowest first solve {worst * 1000:.1f} ms, ratio to 50 ms {worst / 0.05:.2f}: {'within' if worst < 0.05 else 'OVER'} the target"
    )


def _request(build_request, query: list[str]):
    options: dict[str, list[str]] = {}
    for flag, value in zip(query[::2], query[1::2]):
        options.setdefault(flag.lstrip("-"), []).append(value)
    return build_request(
        frameworks=options.get("framework", []),
        os_name=options["os"][0],
        python=options["python"][0],
        gpu=options["gpu"][0],
        driver=options["driver"][0],
        cuda=options.get("cuda", [None])[0],
    )


def as_command(runs: int) -> None:
    doctor = [sys.executable, "-m", "cudnn_doctor", "plan", "--format", "json"]
    floor = _timed([sys.executable, "-c", "pass"], runs)
    print(f"python -c pass (the floor)            {floor * 1000:7.1f} ms")
    worst = 0.0
    for query in QUERIES:
        total = _timed([*doctor, *query], runs)
        own = total - floor
        worst = max(worst, own)
        print(
            f"plan {' '.join(query[:2]):33} {total * 1000:7.1f} ms  own {own * 1000:6.1f} ms  ratio to 50 ms {own / 0.05:4.2f}"
        )
    print(f"slowest own time {worst * 1000:.1f} ms: {'within' if worst < 0.05 else 'OVER'} the 50 ms target")


def _timed(command: list[str], runs: int) -> float:
    """Median wall time; one unmeasured run first, with bytecode caching on, so imports read .pyc files as an installed tool does."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=environment)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=environment)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    in_process(args.runs)
    as_command(args.runs)


if __name__ == "__main__":
    main()
