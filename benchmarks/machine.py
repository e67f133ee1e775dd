"""What every benchmark prints its ratios with: the machine they come from, and the CPU time of its children."""

from __future__ import annotations

import os
import platform


def describe() -> str:
    """CPU model, usable cores, memory, OS and Python: the line a ratio is read with."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), model)
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3 if hasattr(os, "sysconf") else 0
    return f"{model}; {usable} cores; {memory:.0f} GiB; {platform.system()} {platform.release()}; {platform.python_implementation()} {platform.python_version()}"


def children_cpu() -> float:
    """User + system CPU seconds of the waited-for children so far (0 on Windows, which has no getrusage)."""
    try:
        import resource
    except ImportError:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
