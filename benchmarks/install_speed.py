"""Installing cuDNN-like archives with cudnn-doctor against `unzip` + `cp` of the same files, in the same run.

Two archives: a 1 GB one of a few big libraries (bandwidth), and one of 2,000 small files
(the per-file cost: journal records, fsyncs, renames; a journal rewritten per file made this
quadratic, 96 s). cudnn-doctor's install backs nothing up here (a fresh toolkit), but journals
every file, writes it under a temporary name, fsyncs it, re-reads it to check size and SHA-256
against the archive member, and renames it into place. Target: within 1.5x of unzip + cp for
the big archive; the small-file ratio is printed as measured.

usage: python benchmarks/install_speed.py [--gigabytes N] [--files N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import archives

TOP = "cudnn-linux-x86_64-8.9.7.29_cuda12-archive"


def build(path: Path, gigabytes: float, files: int = 0) -> None:
    """NVIDIA's Linux layout (include/, lib/) as a zip, with 8 big libraries making up the size, or `files` small headers."""
    chunk = os.urandom(1 << 20)
    per_file = int(gigabytes * 1024) // 8  # MiB in each of 8 big libraries
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr(f"{TOP}/include/cudnn_version.h", archives.version_header("8.9.7.29"))
        archive.writestr(f"{TOP}/include/cudnn.h", '#include "cudnn_version.h"\n')
        for part in archives.PARTS8:
            archive.writestr(f"{TOP}/lib/libcudnn_{part}.so.8.9.7", archives.fake_library(part))
        for index in range(files):
            archive.writestr(f"{TOP}/include/cudnn_extra_{index}.h", f"/* {index} */\n")
        for index in range(8 if not files else 0):
            with archive.open(f"{TOP}/lib/libcudnn_engines_big{index}.so.8.9.7", "w", force_zip64=True) as handle:
                handle.write(b"\x7fELF")  # a library's bytes must be ELF: the installer checks
                for _ in range(per_file):
                    handle.write(chunk)


def compare(base: Path, archive: Path, label: str) -> None:
    """Time unzip + cp + sync and cudnn-doctor's install of the same archive; check both trees are byte-identical."""
    plain = archives.toolkit(base / "plain" / "cuda-12.6", "12.6")
    started = time.perf_counter()
    subprocess.run(["unzip", "-q", str(archive), "-d", str(base / "unzipped")], check=True)
    top = base / "unzipped" / TOP
    subprocess.run(["cp", "-r", str(top / "include"), str(plain)], check=True)
    subprocess.run(["cp", "-r", str(top / "lib") + "/.", str(plain / "lib64")], check=True)
    subprocess.run(["sync"], check=True)
    peer = time.perf_counter() - started

    target = archives.toolkit(base / "doctor" / "cuda-12.6", "12.6")
    os.environ["CUDNN_DOCTOR_STATE_DIR"] = str(base / "state")
    from cudnn_doctor.facts import ToolkitFacts
    from cudnn_doctor.install import transaction
    from cudnn_doctor.install.archive import Archive, inspect
    from cudnn_doctor.install.plan import choose_target, make_plan
    from cudnn_doctor.system.live import LiveSystem

    started = time.perf_counter()
    system = LiveSystem()
    source = Archive(archive)
    info = inspect(source)
    plan = make_plan(system, source, info, choose_target(system, info, ToolkitFacts(), str(target), False), 12)
    store = transaction.Store(system)
    with store.locked():
        transaction.apply(plan, source, store)
    ours = time.perf_counter() - started
    shutil.rmtree(base / "unzipped")
    if archives.tree(plain) != archives.tree(target):
        sys.exit("the two installs differ: the comparison is void")
    for folder in ("plain", "doctor", "state"):
        shutil.rmtree(base / folder, ignore_errors=True)
    print(f"{label}: unzip + cp + sync {peer:6.2f} s; cudnn-doctor install (journaled, verified) {ours:6.2f} s; ratio {ours / peer:4.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cudnn-doctor-install-bench-") as root:
        base = Path(root)
        for label, gigabytes, files in ((f"{args.gigabytes:g} GB in 16 files", args.gigabytes, 0), (f"{args.files:,} small files", 0.0, args.files)):
            archive = base / f"{TOP}.zip"
            started = time.perf_counter()
            build(archive, gigabytes, files)
            print(f"built {archive.stat().st_size / 1e6:,.1f} MB archive ({label}) in {time.perf_counter() - started:.1f} s")
            compare(base, archive, label)
            archive.unlink()


if __name__ == "__main__":
    main()
