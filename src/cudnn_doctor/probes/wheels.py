"""The pip nvidia-* wheels of each interpreter, and the folder each one's libraries lie in.

Which distribution ships which libraries, and where below site-packages, comes from the
knowledge table `cuda_wheels`; a folder counts only when it exists and holds a library of
that kind, so a half-removed wheel is not mistaken for a usable one.
"""

from __future__ import annotations

import re

from cudnn_doctor import knowledge
from cudnn_doctor.facts import InstalledWheel, PythonEnv
from cudnn_doctor.probes.cudnn import site_packages
from cudnn_doctor.system.interface import Files
from cudnn_doctor.versions import canonical_name


def probe_wheels(system: Files, pythons: tuple[PythonEnv, ...]) -> tuple[InstalledWheel, ...]:
    rules = system.paths
    found: list[InstalledWheel] = []
    flags = re.IGNORECASE if rules.windows else 0
    for python in pythons:
        rows = [row for row in knowledge.cuda_wheels() if canonical_name(row.distribution) in python.packages]
        if not rows:
            continue
        sites = [s for s in site_packages(system, python) if system.is_dir(s)]
        listed: dict[str, list[str]] = {}  # the CUDA 13 wheels share one folder (nvidia/cu13/lib): listed once
        for row in rows:
            pattern = re.compile(row.windows if rules.windows else row.linux, flags)
            for site in sites:
                folder = rules.join(site, *knowledge.wheel_folder(row, system.os))
                if folder not in listed:
                    listed[folder] = [
                        rules.basename(e.path) for e in system.list_dir(folder, sizes=False) or [] if not e.is_dir
                    ]
                names = sorted(n for n in listed[folder] if pattern.match(n))
                if names:
                    dist = canonical_name(row.distribution)
                    found.append(
                        InstalledWheel(
                            executable=python.executable,
                            distribution=dist,
                            version=python.packages[dist],
                            folder=folder,
                            libraries=tuple(names),
                        )
                    )
                    break
    return tuple(found)
