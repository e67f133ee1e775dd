"""The terminal report, in the style of `flutter doctor`: one line per area, then the findings.

Colours come from `rich` when stdout is a terminal and NO_COLOR is unset; otherwise the same
text is printed plain, so it can be pasted into a bug report.
"""

from __future__ import annotations

from typing import Iterable, Optional, TextIO

from cudnn_doctor.diagnosis import Diagnosis
from cudnn_doctor.facts import Facts, FrameworkBuild
from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.kinds import LoadHow
from cudnn_doctor.loads import PROCESS, is_cudnn_front
from cudnn_doctor.reports.encoding import Fitter

MARKS = {
    None: ("✓", "green"),
    Severity.INFO: ("•", "blue"),
    Severity.WARNING: ("!", "yellow"),
    Severity.ERROR: ("✗", "red"),
}
ASCII_MARKS = {
    None: ("OK", "green"),
    Severity.INFO: ("i", "blue"),
    Severity.WARNING: ("!", "yellow"),
    Severity.ERROR: ("X", "red"),
}


def _short(version: Optional[str]) -> str:
    """ "13.0" for "13.0.88": the release people name."""
    return ".".join((version or "?").split(".")[:2])


def _cudnn_summary(facts: Facts) -> str:
    """Each installation (release, CUDA major, folder), and which one each framework's load picks."""
    if not facts.cudnn:
        if any(s.how is LoadHow.ROOT and is_cudnn_front(s.name) for r in facts.resolutions for s in r.steps):
            return "none found; the frameworks that load cuDNN from the system will fail"
        return "none installed on the system (framework wheels bring their own)"
    parts = []
    for install in facts.cudnn:
        cuda = f" for CUDA {install.cuda_major}" if install.cuda_major else ""
        parts.append(f"{install.version or install.major}{cuda} at {install.folder}")
    for resolution in facts.resolutions:
        if resolution.framework == PROCESS:
            continue  # an installation no framework loads: its folder is listed above
        for step in resolution.steps:
            if not step.reused and step.winner and is_cudnn_front(step.name):
                copies = len(step.candidates)
                parts.append(
                    f"{resolution.framework} loads {step.winner}"
                    + (f" (first of {copies} copies)" if copies > 1 else "")
                )
                break
    return "; ".join(parts)


def _summaries(facts: Facts) -> dict[str, str]:
    d, tk = facts.driver, facts.toolkits
    if d.present:
        gpus = ", ".join(
            f"{g.name} (sm_{g.compute_capability.replace('.', '')})" if g.compute_capability else g.name for g in d.gpus
        )
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
    current_exe = facts.current_python.executable if facts.current_python else None
    for build in facts.builds:
        if build.imported or build.import_error or build.timed_out:  # the ones the live probe ran
            where = "current" if build.executable == current_exe else build.executable
            frameworks.append(f"{build.name} {build.version or '?'} in {where} ({_state(build)})")
    current = facts.current_python
    python = f"Python {current.version} at {current.executable}" if current else "no current interpreter"
    return {
        Area.DRIVER: driver,
        Area.TOOLKIT: toolkit,
        Area.CUDNN: _cudnn_summary(facts),
        Area.FRAMEWORKS: python + ("; " + "; ".join(frameworks) if frameworks else "; no GPU framework"),
        Area.ENVIRONMENT: f"PATH has {len(facts.environment.path)} entries",
    }


def _state(build: FrameworkBuild) -> str:
    """What one framework probe came to, in a word or two."""
    if build.sees_gpu:
        return "GPU"
    if build.import_error:
        return "import failed"
    if build.timed_out:
        return "timed out"
    return "no GPU"


Segment = tuple[str, str]  # (text, rich style or "")


def _lines(diagnosis: Diagnosis, verbose: bool, marks: dict = MARKS) -> Iterable[list[Segment]]:
    """The report as lines of styled segments; the same lines print with or without colour."""
    summaries = _summaries(diagnosis.facts)
    findings = diagnosis.findings
    by_area: dict[Area, list[Finding]] = {}
    for found in findings:
        by_area.setdefault(found.area, []).append(found)
    yield [("cudnn-doctor check", "bold")]
    yield []
    for area in Area:
        worst = min(by_area.get(area, []), key=lambda f: f.severity.rank, default=None)
        mark, style = marks[worst.severity if worst else None]
        yield [(f"[{mark}]", style), (f" {area.title}: {summaries[area]}", "")]
        if verbose:
            for line in _facts_lines(diagnosis.facts, area):
                yield [(f"      {line}", "dim")]
    if not findings:
        yield []
        yield [(f"{'•' if marks is MARKS else '*'} No issues found!", "green")]
        return
    yield []
    symptoms: dict[int, list[Finding]] = {}
    for found in findings:
        if found.symptom_of is not None:
            symptoms.setdefault(found.symptom_of, []).append(found)
    fixable = 0
    for index, found in enumerate(findings):
        if found.symptom_of is not None:
            continue
        severity = found.severity  # a cause already carries the severity of its worst symptom (checks.causes)
        mark, style = marks[severity]
        yield [(f"{mark} {severity.value}", style), (" ", ""), (found.id, "bold"), (f": {found.title}", "")]
        yield [(f"    {found.detail}", "")]
        for number, step in enumerate(found.fix, 1):
            yield [(f"    {number}. {step}", "")]
        automatic = _fix_line(found, diagnosis.facts)
        if automatic:
            fixable += 1
            yield [(f"    {automatic}", "")]
        if symptoms.get(index):
            yield [("    The same cause also shows as:", "")]
            for symptom in symptoms[index]:
                detail = symptom.detail if verbose else _one_line(symptom.detail)
                yield [("      - ", ""), (symptom.id, "bold"), (f" ({symptom.severity.value}): {detail}", "")]
        yield []
    causes = [f.severity for f in findings if f.symptom_of is None]
    errors = causes.count(Severity.ERROR)
    warnings = causes.count(Severity.WARNING)
    tail = (
        f" ({len(findings) - len(causes)} more finding(s) shown as their symptoms)"
        if len(causes) < len(findings)
        else ""
    )
    fixing = f" {fixable} finding(s) `cudnn-doctor fix` can fix." if fixable else ""
    yield [
        (
            f"{errors} error(s), {warnings} warning(s){tail}.{fixing} `--ignore ID` hides one; `explain ID` says "
            f"more; `-v` shows every fact.",
            "",
        )
    ]


def _one_line(text: str, width: int = 160) -> str:
    """A symptom's first sentence, cut to one line: the cause above it carries the story (`-v` shows all)."""
    first = text.split(". ", 1)[0].rstrip(".")
    return first if len(first) <= width else first[: width - 1] + "…"


def _fix_line(found: Finding, facts: Facts) -> Optional[str]:
    from cudnn_doctor.checks.registry import has_fix_kind

    if not has_fix_kind(found):
        return None  # no rule fix: the planners (dataclasses, a large import) stay unloaded
    from cudnn_doctor.fixes import fix_line

    return fix_line(found, facts)


def render(diagnosis: Diagnosis, out: TextIO, verbose: bool = False, color: bool = True) -> None:
    fit = Fitter(out)  # ASCII marks where the output encoding has no ✓ (cp1252 in `check > report.txt` on Windows)
    lines = _lines(diagnosis, verbose, MARKS if fit.unicode else ASCII_MARKS)
    if not (color and out.isatty()):
        for line in lines:  # plain text: no need to load rich at all
            out.write(fit("".join(text for text, _ in line)) + "\n")
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(file=out, highlight=False, soft_wrap=True)
    for line in lines:
        console.print(Text.assemble(*((fit(text), style) for text, style in line)))


def _facts_lines(facts: Facts, area: Area) -> Iterable[str]:
    if area is Area.DRIVER:
        yield f"source: {facts.driver.source or facts.driver.smi_error}"
        for gpu in facts.driver.gpus:
            yield (
                f"GPU {gpu.name}: compute capability {gpu.compute_capability or '?'} ({gpu.capability_source}), "
                f"{gpu.memory_mib or '?'} MiB"
            )
    elif area is Area.TOOLKIT:
        for t in facts.toolkits.toolkits:
            alias = f" (also {', '.join(t.aliases)})" if t.aliases else ""
            yield f"{t.root}{alias}: CUDA {t.version} from {t.version_source}; bin on PATH: {t.on_path}"
        if facts.toolkits.nvcc_on_path:
            yield f"nvcc on PATH: {facts.toolkits.nvcc_on_path} → {facts.toolkits.nvcc_real}"
        for name, value in facts.toolkits.variables:
            yield f"{name}={value}"
    elif area is Area.CUDNN:
        for install in facts.cudnn:
            yield (
                f"{install.folder}: cuDNN {install.version or install.major} "
                f"({install.version_source or 'version unknown'}), "
                f"CUDA {install.cuda_major or '?'} ({install.cuda_source or 'unknown'}), {len(install.libraries)} "
                f"libraries" + (f", missing {', '.join(install.missing_parts)}" if install.missing_parts else "")
            )
        for resolution in facts.resolutions:
            yield f"{resolution.framework} in {resolution.executable} loads:"
            for step in resolution.steps:
                if step.reused:
                    continue
                where = step.winner or (
                    f"BROKEN {step.blocked_by}"
                    if step.blocked_by
                    else f"provided by the {step.provided_by}"
                    if step.provided_by
                    else "NOT FOUND"
                )
                shadow = (
                    f"  (also: {', '.join(c.path for c in step.candidates if c.path != step.winner)})"
                    if len(step.candidates) > 1
                    else ""
                )
                yield (
                    f"  {step.how:6} {step.wanted} ← {step.requester.replace(chr(92), '/').rsplit('/', 1)[-1]}: "
                    f"{where}{shadow}"
                )
    elif area is Area.FRAMEWORKS:
        for python in facts.pythons:
            yield (
                f"{python.executable}: Python {python.version} "
                f"({python.kind}){' [current]' if python.current else ''}, {len(python.packages)} distributions"
            )
            for build in facts.builds:
                if build.executable == python.executable:
                    yield "  " + _build_line(build)
            for wheel in facts.wheels:
                if wheel.executable == python.executable:
                    yield f"  wheel {wheel.distribution} {wheel.version}: {wheel.folder} ({', '.join(wheel.libraries)})"
    elif area is Area.ENVIRONMENT:
        for entry in (*facts.environment.path, *facts.environment.ld_library_path):
            state = "" if entry.exists else "  (missing)" if entry.value else "  (empty: the current folder)"
            yield f"{entry.variable}[{entry.index}] {entry.value}{state}"


def _build_line(build: FrameworkBuild) -> str:
    """One build's typed facts, each with how it is known."""
    parts = [f"{build.name} {build.version or '?'}", f"GPU build: {_yes_no(build.gpu_build)}"]
    for label, known in (("CUDA", build.cuda), ("cuDNN", build.cudnn)):
        if known is not None:
            parts.append(f"{label} {known.value} ({known.said})")
    parts.append(f"CUDA from: {build.cuda_from}")
    if build.cuda_available is not None:
        parts.append(f"cuda_available={build.cuda_available}")
    if build.arch_list:
        parts.append("arch " + " ".join(build.arch_list))
    if build.load_failures:
        parts.append("failed to load " + ", ".join(f.library for f in build.load_failures))
    if build.import_error:
        parts.append(f"import error: {build.import_error[:200]}")
    return ", ".join(parts)


def _yes_no(value: Optional[bool]) -> str:
    return "unknown" if value is None else "yes" if value else "no"
