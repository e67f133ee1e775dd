"""The terminal report, in the style of `flutter doctor`: one line per area, then the findings.

Colours come from `rich` when stdout is a terminal and NO_COLOR is unset; otherwise the same
text is printed plain, so it can be pasted into a bug report.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Optional, TextIO

from cudnn_doctor.diagnosis import Diagnosis
from cudnn_doctor.facts import Facts
from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.reports.encoding import Fitter

AREAS = (
    ("driver", "NVIDIA driver and GPU", ("no-nvidia-gpu", "driver-too-old", "gpu-arch-unsupported", "wsl-linux-driver-installed")),
    ("toolkit", "CUDA toolkit", ("cuda-toolkit-missing", "cuda-libs-not-found", "nvcc-not-on-path", "cuda-path-mismatch", "multiple-cuda-on-path")),
    ("cudnn", "cuDNN", ("cudnn-",)),
    ("python", "Python and frameworks", ("torch-", "tf-", "framework-cuda-mismatch", "python-unsupported", "interpreter-mismatch")),
    ("environment", "Environment", ("env-", "path-")),
)
MARKS = {None: ("✓", "green"), Severity.INFO: ("•", "blue"), Severity.WARNING: ("!", "yellow"), Severity.ERROR: ("✗", "red")}
ASCII_MARKS = {None: ("OK", "green"), Severity.INFO: ("i", "blue"), Severity.WARNING: ("!", "yellow"), Severity.ERROR: ("X", "red")}


def _area_of(finding_id: str) -> str:
    for key, _, prefixes in AREAS:
        if any(finding_id == p or (p.endswith("-") and finding_id.startswith(p)) for p in prefixes):
            return key
    return "environment"


def _short(version: Optional[str]) -> str:
    """"13.0" for "13.0.88": the release people name."""
    return ".".join((version or "?").split(".")[:2])


def _cudnn_summary(facts: Facts) -> str:
    """Each installation (release, CUDA major, folder), and which one each framework's load picks."""
    if not facts.cudnn:
        if any(s.how == "root" and _is_cudnn_front(s.name) for r in facts.resolutions for s in r.steps):
            return "none found; the frameworks that load cuDNN from the system will fail"
        return "none installed on the system (framework wheels bring their own)"
    parts = []
    for install in facts.cudnn:
        cuda = f" for CUDA {install.cuda_major}" if install.cuda_major else ""
        parts.append(f"{install.version or install.major}{cuda} at {install.folder}")
    for resolution in facts.resolutions:
        for step in resolution.steps:
            if step.how != "reused" and step.winner and _is_cudnn_front(step.name):
                copies = len(step.candidates)
                parts.append(f"{resolution.framework} loads {step.winner}" + (f" (first of {copies} copies)" if copies > 1 else ""))
                break
    return "; ".join(parts)


def _is_cudnn_front(name: str) -> bool:
    import re

    return bool(re.search(r"(?i)(^|[\\/])(cudnn64_\d+\.dll|libcudnn\.so\.\d+)$", name))


def _summaries(facts: Facts) -> dict[str, str]:
    d, tk = facts.driver, facts.toolkits
    if d.present:
        gpus = ", ".join(f"{g.name} (sm_{g.compute_capability.replace('.', '')})" if g.compute_capability else g.name for g in d.gpus)
        driver = f"driver {d.version or '?'} · CUDA {d.cuda or '?'} max" + (f" · {gpus}" if gpus else "")
    else:
        driver = "no driver found"
    if tk.toolkits:
        first = tk.by_root(tk.path_toolkit)
        toolkit = "toolkit " + ", ".join(f"{_short(t.version)} at {t.root}" for t in tk.toolkits)
        toolkit += f"; {_short(first.version)} first on PATH (nvcc {tk.nvcc_on_path})" if first else "; no nvcc on PATH"
    else:
        toolkit = "no toolkit"
    frameworks = []
    for python in facts.pythons:
        for name, report in python.frameworks.items():
            version = report.get("version") or python.packages.get(name, "?")
            where = "current" if python.current else python.executable
            state = _state(report)
            frameworks.append(f"{name} {version} in {where} ({state})")
    current = facts.current_python
    python = f"Python {current.version} at {current.executable}" if current else "no current interpreter"
    return {
        "driver": driver,
        "toolkit": toolkit,
        "cudnn": _cudnn_summary(facts),
        "python": python + ("; " + "; ".join(frameworks) if frameworks else "; no GPU framework"),
        "environment": f"PATH has {len(facts.environment.path)} entries",
    }


def _state(report: Mapping[str, Any]) -> str:
    """What one framework probe came to, in a word or two."""
    if report.get("cuda_available") or report.get("gpus"):
        return "GPU"
    if report.get("import_error"):
        return "import failed"
    if str(report.get("error") or "").startswith("TimeoutError"):
        return "timed out"
    return "no GPU"


Segment = tuple[str, str]  # (text, rich style or "")


def _lines(diagnosis: Diagnosis, verbose: bool, marks: dict = MARKS) -> Iterable[list[Segment]]:
    """The report as lines of styled segments; the same lines print with or without colour."""
    summaries = _summaries(diagnosis.facts)
    by_area: dict[str, list[Finding]] = {}
    for found in diagnosis.findings:
        by_area.setdefault(_area_of(found.id), []).append(found)
    yield [("cudnn-doctor check", "bold")]
    yield []
    for key, title, _ in AREAS:
        worst = min(by_area.get(key, []), key=lambda f: f.severity.rank, default=None)
        mark, style = marks[worst.severity if worst else None]
        yield [(f"[{mark}]", style), (f" {title}: {summaries[key]}", "")]
        if verbose:
            for line in _facts_lines(diagnosis.facts, key):
                yield [(f"      {line}", "dim")]
    if not diagnosis.findings:
        yield []
        yield [(f"{'•' if marks is MARKS else '*'} No issues found!", "green")]
        return
    yield []
    for found in diagnosis.findings:
        mark, style = marks[found.severity]
        yield [(f"{mark} {found.severity.value}", style), (" ", ""), (found.id, "bold"), (f": {found.title}", "")]
        yield [(f"    {found.detail}", "")]
        for number, step in enumerate(found.fix, 1):
            yield [(f"    {number}. {step}", "")]
        yield []
    errors = sum(f.severity is Severity.ERROR for f in diagnosis.findings)
    warnings = sum(f.severity is Severity.WARNING for f in diagnosis.findings)
    yield [(f"{errors} error(s), {warnings} warning(s). `--ignore ID` hides one; `-v` shows every fact.", "")]


def render(diagnosis: Diagnosis, out: TextIO, verbose: bool = False, color: bool = True) -> None:
    fit = Fitter(out)  # ASCII marks where the output encoding has no ✓ (cp1252 in `check > report.txt` on Windows)
    lines = _lines(diagnosis, verbose, MARKS if fit.unicode else ASCII_MARKS)
    if not (color and out.isatty() and "NO_COLOR" not in os.environ):
        for line in lines:  # plain text: no need to load rich at all
            out.write(fit("".join(text for text, _ in line)) + "\n")
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(file=out, highlight=False, soft_wrap=True)
    for line in lines:
        console.print(Text.assemble(*((fit(text), style) for text, style in line)))


def _facts_lines(facts: Facts, area: str) -> Iterable[str]:
    if area == "driver":
        yield f"source: {facts.driver.source or facts.driver.smi_error}"
        for gpu in facts.driver.gpus:
            yield f"GPU {gpu.name}: compute capability {gpu.compute_capability or '?'} ({gpu.capability_source}), {gpu.memory_mib or '?'} MiB"
    elif area == "toolkit":
        for t in facts.toolkits.toolkits:
            alias = f" (also {', '.join(t.aliases)})" if t.aliases else ""
            yield f"{t.root}{alias}: CUDA {t.version} from {t.version_source}; bin on PATH: {t.on_path}"
        if facts.toolkits.nvcc_on_path:
            yield f"nvcc on PATH: {facts.toolkits.nvcc_on_path} → {facts.toolkits.nvcc_real}"
        for name, value in facts.toolkits.variables:
            yield f"{name}={value}"
    elif area == "cudnn":
        for install in facts.cudnn:
            yield (f"{install.folder}: cuDNN {install.version or install.major} ({install.version_source or 'version unknown'}), "
                   f"CUDA {install.cuda_major or '?'} ({install.cuda_source or 'unknown'}), {len(install.libraries)} libraries"
                   + (f", missing {', '.join(install.missing_parts)}" if install.missing_parts else ""))
        for resolution in facts.resolutions:
            yield f"{resolution.framework} in {resolution.executable} loads:"
            for step in resolution.steps:
                if step.reused:
                    continue
                where = step.winner or (f"BROKEN {step.blocked_by}" if step.blocked_by else f"provided by the {step.provided_by}" if step.provided_by else "NOT FOUND")
                shadow = f"  (also: {', '.join(c.path for c in step.candidates if c.path != step.winner)})" if len(step.candidates) > 1 else ""
                yield f"  {step.how:6} {step.name} ← {step.requester.replace(chr(92), '/').rsplit('/', 1)[-1]}: {where}{shadow}"
    elif area == "python":
        for python in facts.pythons:
            yield f"{python.executable}: Python {python.version} ({python.kind}){' [current]' if python.current else ''}, {len(python.packages)} distributions"
            for name, report in python.frameworks.items():
                yield f"  {name}: " + ", ".join(f"{k}={v}" for k, v in report.items() if k not in ("log",))
    elif area == "environment":
        for entry in (*facts.environment.path, *facts.environment.ld_library_path):
            yield f"{entry.variable}[{entry.index}] {entry.value}{'' if entry.exists else '  (missing)'}"
