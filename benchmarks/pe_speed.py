"""Milliseconds a file for the two PE readers over a folder of DLLs, and the import time of each.

`pe.read_pe` reads a file with the struct reader (binaries/peheader.py) and leaves the files it calls
irregular to pefile (`pe.read_pe_with_pefile`). A Windows `check` reads dozens of DLLs, so both costs
count: the import once a run, the read once a file. The files are read in this process, each reader
over the whole folder in turn, --runs times (the median run is printed); the imports are timed in
fresh interpreters that have imported the package already (bytecode cached, as an installed
package has it). Ratios are pefile's figure over
the struct reader's, in the same run. The default folder is Wine's 64-bit DLLs.

usage: python benchmarks/pe_speed.py [--runs N] [FOLDER]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import describe  # benchmarks/machine.py (this folder is sys.path[0])

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from cudnn_doctor.binaries import peheader  # noqa: E402
from cudnn_doctor.system.binaries import pe  # noqa: E402

WINE = (
    Path("/usr/lib/x86_64-linux-gnu/wine/x86_64-windows"),
    Path("/usr/lib/wine/x86_64-windows"),
    Path("/usr/lib/wine"),
)
IMPORTS = {
    "struct reader": "from cudnn_doctor.binaries import peheader",
    "pefile": "import pefile",
}
# the package itself is imported first, untimed: a run has it already when it reaches a DLL
TIMED_IMPORT = "import time\nimport cudnn_doctor.binaries\nstart = time.perf_counter()\n{statement}\nprint((time.perf_counter() - start) * 1000)"
CACHE = tempfile.mkdtemp(prefix="pe-speed-pycache-")


def pe_files(folder: Path) -> list[str]:
    """Every file under `folder` that starts with the MZ magic."""
    found = []
    for root, _dirs, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as handle:
                    if handle.read(2) == b"MZ":
                        found.append(path)
    return sorted(found)


def import_ms(statement: str, runs: int) -> float:
    """Median milliseconds of `statement` in a fresh interpreter (after one warm-up run that caches the bytecode)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONPYCACHEPREFIX": CACHE}
    command = [sys.executable, "-c", TIMED_IMPORT.format(statement=statement)]
    times = [
        float(subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout)
        for _ in range(runs + 1)
    ]
    return statistics.median(times[1:])


def _quick(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            peheader.read_pe_quickly(handle)
    except peheader.Irregular:
        return False
    return True


def read_ms(read, files: list[str], runs: int) -> float:
    """Median over `runs` of the milliseconds a file of reading every file with `read`."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for path in files:
            read(path)
        times.append((time.perf_counter() - start) * 1000 / len(files))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=Path, help="a folder of DLLs (default: Wine's)")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    folder = args.folder or next((f for f in WINE if f.is_dir()), None)
    if folder is None:
        sys.exit("no folder given and Wine's DLLs are not installed here")
    files = pe_files(folder)
    if not files:
        sys.exit(f"no PE files under {folder}")
    quick = sum(_quick(path) for path in files)
    print(describe())
    print(
        f"{len(files)} PE files under {folder}; the struct reader answers {quick}, pefile the other {len(files) - quick}"
    )
    imports = {label: import_ms(statement, args.runs) for label, statement in IMPORTS.items()}
    reads = {
        "struct reader": read_ms(_quick, files, args.runs),
        "pefile": read_ms(pe.read_pe_with_pefile, files, args.runs),
        "read_pe (both)": read_ms(pe.read_pe, files, args.runs),
    }
    for label, ms in imports.items():
        print(f"import {label:<16} {ms:7.2f} ms")
    for label, ms in reads.items():
        print(f"read   {label:<16} {ms:7.3f} ms a file")
    print(
        f"pefile / struct reader: import x{imports['pefile'] / imports['struct reader']:.1f}, read x{reads['pefile'] / reads['struct reader']:.1f}"
    )
    for count in (10, 50):
        ours = imports["struct reader"] + count * reads["read_pe (both)"]
        theirs = imports["pefile"] + count * reads["pefile"]
        print(
            f"{count} DLLs, import included: {theirs:.1f} ms with pefile, {ours:.1f} ms with read_pe (x{theirs / ours:.1f})"
        )


if __name__ == "__main__":
    main()
