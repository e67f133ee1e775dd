"""Load time of the knowledge tables: the prebuilt pickle a run reads, the generated JSON it falls back to, and
the YAML they are generated from; and the wall time of `check --no-frameworks --fixture FILE` against a
baseline revision.

Each load runs in a fresh interpreter, so imports count (PyYAML's is most of the YAML cost, the schema's
and the json module's part of the JSON cost); all three give the same typed records, only the reader
differs. Ratios are against the pickle, in the same run: once for every table, once for the tables
`check --no-frameworks` reads. With --baseline REV, the check is timed on this tree and on `git archive
REV src`, runs interleaved so that machine noise falls on both alike: once on this machine (no fixture:
no PyYAML at all on that path) and once on FILE (the fixture itself is YAML, so PyYAML loads anyway). CPU
seconds are printed beside wall seconds: on a shared machine they are the steadier figure. Bytecode is
cached in a temporary folder (PYTHONPYCACHEPREFIX) after a warm-up run, as an installed package has it;
compiling the sources on every run would measure the compiler.

usage: python benchmarks/knowledge_load.py [--runs N] [--fixture FILE] [--baseline REV]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from machine import children_cpu  # benchmarks/machine.py (this folder is sys.path[0])

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FIXTURE = REPO.parent / "shared" / "fixtures" / "real" / "45-linux-ort116-cuda11-build-on-cuda121.yaml"
ALL_TABLES = (
    "cuda_driver",
    "cuda_libraries",
    "cudnn",
    "cuda_wheels",
    "environment",
    "frameworks",
    "gpus",
    "libraries",
    "tensorflow",
    "torch",
)
CHECK_TABLES = (
    "libraries",
    "frameworks",
    "torch",
    "cudnn",
    "cuda_wheels",
    "gpus",
    "environment",
)  # what check --no-frameworks read on the machine without a driver it was written on

LOAD = """
import time
start, cpu = time.perf_counter(), time.process_time()
from cudnn_doctor import knowledge
tables, tables_cpu = time.perf_counter(), time.process_time()
{read}
end, end_cpu = time.perf_counter(), time.process_time()
print((end - start) * 1000, (end_cpu - cpu) * 1000, (end - tables) * 1000, (end_cpu - tables_cpu) * 1000)
"""
READERS = {
    "pickle": "for name in {tables}: knowledge.table(name)\nassert knowledge._prebuilt() is not None",
    "JSON": "knowledge._prebuilt = lambda: None\nfor name in {tables}: knowledge.table(name)",
    "YAML": """from cudnn_doctor.knowledge import files, generate, schema
for name in {tables}: schema.build(name, files.read(generate.DATA / f"{{name}}.yaml"), name)""",
}


CACHE = tempfile.mkdtemp(prefix="knowledge-load-pycache-")


def _env(src: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONPYCACHEPREFIX": CACHE}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def load_ms(read: str) -> list[float]:
    """Milliseconds of one fresh interpreter's load: wall and CPU with the package import, then of the tables alone."""
    done = subprocess.run(
        [sys.executable, "-c", LOAD.format(read=read)],
        env=_env(REPO / "src"),
        capture_output=True,
        text=True,
        check=True,
    )
    return [float(value) for value in done.stdout.split()]


def check_seconds(src: Path, options: list[str]) -> list[float]:
    """(wall, CPU) seconds of one `check --no-frameworks OPTIONS`."""
    start, cpu = time.perf_counter(), children_cpu()
    subprocess.run(
        [sys.executable, "-m", "cudnn_doctor", "check", "--no-frameworks", *options],
        env=_env(src),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return [time.perf_counter() - start, children_cpu() - cpu]


def _median(samples: list[list[float]]) -> list[float]:
    return [statistics.median(column) for column in zip(*samples)]


def baseline_src(revision: str, folder: Path) -> Path:
    archive = folder / "src.tar"
    with open(archive, "wb") as handle:
        subprocess.run(["git", "-C", str(REPO), "archive", revision, "src"], stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder)  # our own repository's files
    return folder / "src"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--fixture", type=Path, default=DEFAULT_FIXTURE)
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also time the check on this git revision (e.g. the commit before the JSON tables)",
    )
    args = parser.parse_args()
    for label, tables in (("all tables", ALL_TABLES), ("the tables check --no-frameworks reads", CHECK_TABLES)):
        reads = {reader: code.format(tables=repr(tables)) for reader, code in READERS.items()}
        for code in reads.values():
            load_ms(code)  # warm-up: bytecode
        loads: dict[str, list[list[float]]] = {reader: [] for reader in reads}
        for _ in range(args.runs):  # interleaved
            for reader, code in reads.items():
                loads[reader].append(load_ms(code))
        medians = {reader: _median(samples) for reader, samples in loads.items()}
        print(f"{label}, median of {args.runs} fresh interpreters (wall / CPU ms; ratio of CPU against the pickle):")
        for what, at in (("read + build (imports included)", 2), ("with the knowledge package's import", 0)):
            base = medians["pickle"][at + 1]
            shown = "   ".join(
                f"{reader} {values[at]:6.1f} / {values[at + 1]:5.1f} ({values[at + 1] / base:4.1f}x)"
                for reader, values in medians.items()
            )
            print(f"  {what:36} {shown}")
    commands = {"(this machine)": []}
    if args.fixture.is_file():
        commands[f"--fixture {args.fixture.name}"] = ["--fixture", str(args.fixture)]
    else:
        print(f"no fixture at {args.fixture}: pass --fixture FILE to time the check on one")
    with tempfile.TemporaryDirectory() as folder:
        trees = {"this tree": REPO / "src"}
        if args.baseline:
            trees[args.baseline] = baseline_src(args.baseline, Path(folder))
        for label, options in commands.items():
            samples: dict[str, list[list[float]]] = {name: [] for name in trees}
            for src in trees.values():
                check_seconds(src, options)  # warm-up: bytecode
            for _ in range(args.runs):
                for name, src in trees.items():
                    samples[name].append(check_seconds(src, options))
            print(f"check --no-frameworks {label}, median of {args.runs}:")
            for name, values in samples.items():
                wall, cpu = _median(values)
                print(f"  {name:24} {wall:6.3f} s wall  {cpu:6.3f} s CPU")


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(CACHE, ignore_errors=True)
