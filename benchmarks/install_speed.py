"""Installing a 1 GB cuDNN-like archive with cudnn-doctor against `unzip` + `cp` of the same files, in the same run.

cudnn-doctor's install also backs nothing up here (a fresh toolkit), but writes every file
under a temporary name, fsyncs it, re-reads it to check size and SHA-256 against the archive
member, and renames it into place. Target: within 1.5x of unzip + cp.

usage: python benchmarks/install_speed.py [--gigabytes N]
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


def build(path: Path, gigabytes: float) -> None:
    members = archives.windows_members("8.9.7.29", 12, "archive")
    top = next(iter(members)).split("/", 1)[0]
    chunk = os.urandom(1 << 20)
    per_file = int(gigabytes * 1024) // 8  # MiB in each of 8 big libraries
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for index in range(8):
            with archive.open(f"{top}/bin/cudnn_engines_big{index}64_8.dll", "w", force_zip64=True) as handle:
                for _ in range(per_file):
                    handle.write(chunk)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gigabytes", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cudnn-doctor-install-bench-") as root:
        base = Path(root)
        archive = base / "cudnn-windows-x86_64-8.9.7.29_cuda12-archive.zip"
        started = time.perf_counter()
        build(archive, args.gigabytes)
        print(f"built {archive.stat().st_size / 1e9:.2f} GB archive in {time.perf_counter() - started:.1f} s")

        plain = archives.toolkit(base / "plain" / "v12.6", "12.6", windows=True)
        started = time.perf_counter()
        subprocess.run(["unzip", "-q", str(archive), "-d", str(base / "unzipped")], check=True)
        top = next((base / "unzipped").iterdir())
        for sub in ("bin", "include", "lib"):
            subprocess.run(["cp", "-r", str(top / sub), str(plain)], check=True)
        subprocess.run(["sync"], check=True)
        peer = time.perf_counter() - started

        target = archives.toolkit(base / "doctor" / "v12.6", "12.6", windows=True)
        os.environ["CUDNN_DOCTOR_STATE_DIR"] = str(base / "state")
        from cudnn_doctor.facts import ToolkitFacts
        from cudnn_doctor.install import transaction
        from cudnn_doctor.install.archive import Archive, inspect
        from cudnn_doctor.install.plan import choose_target, make_plan

        started = time.perf_counter()
        source = Archive(archive)
        info = inspect(source)
        plan = make_plan(source, info, choose_target(info, ToolkitFacts(), target, False, "windows", "x86_64"), 12)
        transaction.apply(plan, source, transaction.Store())
        ours = time.perf_counter() - started
        shutil.rmtree(base / "unzipped")
        print(f"unzip + cp + sync                 {peer:6.2f} s")
        print(f"cudnn-doctor install (verified)   {ours:6.2f} s   ratio {ours / peer:4.2f}  (target 1.50)")


if __name__ == "__main__":
    main()
