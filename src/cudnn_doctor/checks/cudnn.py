"""cuDNN: is there one where the framework looks for it.

This module holds what the framework's own output and the loader's name search can tell;
the binary-level checks (versions, CUDA majors, partial installs) build on it.
"""

from __future__ import annotations

from typing import Iterator

from cudnn_doctor.checks._frameworks import sees_gpu
from cudnn_doctor.checks._libraries import failed_loads, is_cudnn_front, lookup, reach_folder_fix, system_builds
from cudnn_doctor.checks.registry import finding, rule
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding, Severity


@rule("cudnn-missing", Severity.ERROR, "The framework finds no cuDNN library")
def cudnn_missing(facts: Facts) -> Iterator[Finding]:
    """TensorFlow, PaddlePaddle and ONNX Runtime load cuDNN by name from the system; without it every convolution runs on the CPU or fails."""
    for needs in system_builds(facts):
        build = needs.build
        said = [n for n in failed_loads(build) if is_cudnn_front(n)]
        found = lookup(facts, build, needs.cudnn)
        missing = found is not None and found.found is None and not sees_gpu(build)
        if not said and not missing:
            continue
        name = said[0] if said else needs.cudnn
        detail = f"{build.name} {build.version_text} in {build.python.executable} cannot load {name}"
        detail += " (its own log says so)." if said else "."
        fix = []
        if found is not None and found.found is None:
            detail += f" Searched: {'; '.join(found.searched[:8])}{'; …' if len(found.searched) > 8 else ''}."
            if found.elsewhere:
                detail += f" A copy exists at {found.elsewhere[0]}, outside the search path."
                folder = found.elsewhere[0].rsplit("\\" if facts.os == "windows" else "/", 1)[0]
                fix.append(reach_folder_fix(facts, folder))
        if not fix:
            fix.append("Download the cuDNN release that matches the framework's CUDA version from https://developer.nvidia.com/rdp/cudnn-archive "
                       "and copy its bin, include and lib folders into the CUDA toolkit folder (or run `cudnn-doctor install ARCHIVE`).")
        yield finding("cudnn-missing", detail, fix, {"framework": build.name, "library": name})
