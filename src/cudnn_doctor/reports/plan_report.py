"""`plan`'s report: the stack, the steps, what was refused and why, as text or as one JSON object."""

from __future__ import annotations

from typing import Any, Optional, TextIO

from cudnn_doctor.planner.candidates import V
from cudnn_doctor.planner.commands import Steps, steps
from cudnn_doctor.planner.constraints import driver_runs
from cudnn_doctor.planner.request import Given, Request
from cudnn_doctor.planner.solver import Plan, Rejection, Stack
from cudnn_doctor.reports import write_json
from cudnn_doctor.reports.encoding import Fitter

PLAN_SCHEMA = "cudnn-doctor-plan/1"
OS_TITLES = {"windows": "native Windows", "linux": "Linux", "wsl": "WSL2"}
SHOWN_REJECTIONS = 8


def stack_json(stack: Stack, request: Request) -> dict[str, Any]:
    first = stack.chosen[0]
    needs = first.needs
    system = next((v for v in stack.chosen if v.needs.toolkit), None)
    return {
        "framework": first.candidate.framework,
        "version": first.candidate.version,
        "build": first.candidate.build,
        "cuda": stack.cuda,
        "cudnn": stack.cudnn,
        "python": stack.python,
        "min_driver": stack.drivers("min_driver"),
        "min_driver_compat": stack.drivers("min_driver_compat"),
        "min_driver_exact": stack.drivers("min_driver_exact"),
        "driver_rule": _driver_rule(stack),
        "gpu": {"name": request.gpu.text if request.gpu else None, "compute_capability": request.compute_capability},
        "cuda_from": "system" if system else "bundled",
        "toolkit": system.needs.toolkit if system else None,
        "cudnn_archive": system.needs.cudnn_archive if system else None,
        "driver_source": needs.driver_source,
        "frameworks": [
            {
                "framework": v.candidate.framework,
                "version": v.candidate.version,
                "build": v.candidate.build,
                "cuda": v.candidate.cuda,
                "cudnn": v.needs.cudnn or v.candidate.cudnn,
                "python": str(v.candidate.python) if v.candidate.python else None,
                "cuda_from": v.candidate.cuda_from,
                "requirement": v.candidate.requirement,
                "source": v.candidate.source,
            }
            for v in stack.chosen
        ],
    }


def plan_json(plan: Plan) -> dict[str, Any]:
    from cudnn_doctor import __version__

    request = plan.request
    todo = steps(plan.stack, request.os, _text(request.driver)) if plan.stack else None
    return {
        "schema": PLAN_SCHEMA,
        "tool": {"name": "cudnn-doctor", "version": __version__},
        "inputs": _inputs(request),
        "stack": stack_json(plan.stack, request) if plan.stack else None,
        "commands": list(todo.commands) if todo else [],
        "conda": list(todo.conda) if todo else [],
        "downloads": [d._asdict() for d in todo.downloads] if todo else [],
        "notes": list(todo.notes) if todo else [],
        "rejected": [_rejection_json(r) for r in plan.rejected],
        "alternatives": [
            {
                "change": a.change,
                "text": _alternative_text(a.change, a.stack, request),
                "stack": stack_json(a.stack, request),
            }
            for a in plan.alternatives
        ],
        "considered": plan.considered,
        "exit_code": plan.exit_code,
    }


def render_json(plan: Plan, out: TextIO) -> None:
    write_json(out, plan_json(plan), indent=2, ensure_ascii=False)


def render_text(plan: Plan, out: TextIO) -> None:
    fit = Fitter(out)
    for line in text_lines(plan):
        out.write(fit(line) + "\n")


def text_lines(plan: Plan) -> list[str]:
    request = plan.request
    lines = [
        f"Plan for {_wanted(request)} on {OS_TITLES[request.os]}"
        + "".join(f" · {part}" for part in _given_parts(request))
    ]
    runs = driver_runs(request)
    if runs and request.driver is not None:  # runs: known only for a given driver
        lines.append(
            f"  Driver {request.driver.text} runs CUDA toolkits up to {runs} (newer ones need a newer driver)."
        )
    lines.append("")
    if plan.stack is None:
        lines.append("✗ No stack satisfies every constraint:")
        lines += _rejection_lines(plan.rejected)
    else:
        lines += _stack_lines(plan.stack, request)
        todo = steps(plan.stack, request.os, _text(request.driver))
        lines += _steps_lines(todo)
        if plan.rejected:
            lines += ["", "Newer builds not usable here:"]
            lines += _rejection_lines(plan.rejected)
    if plan.alternatives:
        lines += ["", "Alternatives:" if plan.stack is None else "With a change:"]
        for alternative in plan.alternatives:
            lines.append(f"  → {_alternative_text(alternative.change, alternative.stack, request)}")
    lines += ["", f"{plan.considered} candidates and combinations considered."]
    return lines


def _stack_lines(stack: Stack, request: Request) -> list[str]:
    lines = []
    for verdict in stack.chosen:
        c = verdict.candidate
        cudnn = verdict.needs.cudnn or c.cudnn
        cudnn_text = (
            f"cuDNN {cudnn}{'+' if c.cudnn_rule == 'at-least' and not verdict.needs.cudnn else ''}"
            if cudnn
            else "cuDNN (not published)"
        )
        where = "from pip" if c.cuda_from == "bundled" else "to install"
        if c.cudnn_rule == "none":
            cudnn_text, where = (
                "no cuDNN needed",
                ("· CUDA from pip" if c.cuda_from == "bundled" else "· CUDA to install"),
            )
        lines.append(
            f"✓ {c.framework} {c.version} ({c.build}) · CUDA {c.cuda} · {cudnn_text} {where}"
            + (f" · Python {c.python}" if c.python else "")
        )
    drivers = stack.drivers("min_driver")
    compat = stack.drivers("min_driver_compat")
    exact = stack.drivers("min_driver_exact")
    rule = _driver_rule(stack)
    lines.append(
        "  Driver: " + ", ".join(f"≥ {drivers[o]} on {o.capitalize()}" for o in ("linux", "windows") if drivers[o])
    )
    if any(exact.values()) or any(compat.values()):
        side = [f"the release's own minimum (NVIDIA's Table 3): {_per_os(exact)}"] if any(exact.values()) else []
        side += [f"the minor-version compatibility floor: {_per_os(compat)}"] if any(compat.values()) else []
        lines.append("    " + "; ".join(side))
    if rule["rule"]:
        lines.append(f"    rule used: {rule['rule']}, because {rule['why']}")
    if request.compute_capability:
        name = request.gpu.text if request.gpu else ""
        lines.append(
            f"  GPU: {name}"
            if request.compute_capability in name
            else f"  GPU: {name} (compute capability {request.compute_capability})"
        )
    return lines


def _per_os(drivers: dict[str, Optional[str]]) -> str:
    return ", ".join(f"≥ {drivers[o]} on {o.capitalize()}" for o in ("linux", "windows") if drivers[o]) or "none listed"


def _driver_rule(stack: Stack) -> dict[str, Optional[str]]:
    """The rule behind the stack's driver: that of the build that needs the newest driver (the one the minimum is)."""
    verdicts = [v for v in stack.chosen if v.needs.driver_rule]
    if not verdicts:
        return {"rule": None, "why": None}
    top = max(verdicts, key=lambda v: V(v.needs.min_driver.get("linux") or v.needs.min_driver.get("windows") or "0"))
    return {"rule": top.needs.driver_rule, "why": top.needs.driver_why}


def _steps_lines(todo: Steps) -> list[str]:
    lines: list[str] = []
    if todo.downloads:
        lines += ["", "Download:"]
        lines += [f"  {d.what}: {d.file + ' from ' if d.file else ''}{d.page}" for d in todo.downloads]
    lines += ["", "Commands:"] + [f"  {c}" for c in todo.commands]
    if todo.conda:
        lines += ["", "Or with conda:"] + [f"  {c}" for c in todo.conda]
    if todo.notes:
        lines += [""] + [f"  Note: {n}" for n in todo.notes]
    return lines


def _rejection_lines(rejected: tuple[Rejection, ...]) -> list[str]:
    """One line per release: its refused builds by the kind of reason, each kind told by its last (least demanding)
    build."""
    groups: dict[tuple[str, str], list[Rejection]] = {}
    for rejection in rejected:
        groups.setdefault((rejection.framework, rejection.version), []).append(rejection)
    lines = []
    # the releases refused only for being another CUDA than the one asked for tell least: they go last
    other_cuda = {
        key: all(any(r.kind == "cuda" for r in m.reasons) for m in members) for key, members in groups.items()
    }
    for (framework, version), members in sorted(groups.items(), key=lambda item: other_cuda[item[0]])[
        :SHOWN_REJECTIONS
    ]:
        kinds: dict[str, list[Rejection]] = {}
        for member in members:
            kinds.setdefault(member.reasons[0].kind, []).append(member)
        parts = []
        for same in kinds.values():
            builds = ", ".join(
                dict.fromkeys(r.build for r in same if r.build)
            )  # one build per CUDA toolkit: named once
            parts.append((f"{builds}: " if builds else "") + "; ".join(r.text for r in same[-1].reasons))
        lines.append(f"  {framework} {version}: " + " | ".join(parts))
    if len(groups) > SHOWN_REJECTIONS:
        lines.append(f"  … and {len(groups) - SHOWN_REJECTIONS} more releases (--format json lists every build)")
    return lines


def _alternative_text(change: str, stack: Stack, request: Request) -> str:
    chosen = ", ".join(f"{v.candidate.framework} {v.candidate.version} ({v.candidate.build})" for v in stack.chosen)
    what = f"{chosen} with CUDA {stack.cuda}" + (f" / cuDNN {stack.cudnn}" if stack.cudnn else "")
    if change == "driver":
        driver = stack.drivers("min_driver")[request.driver_os]
        return f"update the driver to ≥ {driver}: {what}"
    if change == "os":
        return f"use WSL2: {what}"
    if change == "python":
        return f"use Python {stack.python}: {what}"
    if (
        change == "cuda" and request.cuda is not None
    ):  # an alternative of another CUDA is only looked for when one was asked for
        return f"use CUDA {stack.cuda} instead of {request.cuda.text}: {what}"
    return f"use {what}"


def _rejection_json(rejection: Rejection) -> dict[str, Any]:
    return {
        "framework": rejection.framework,
        "version": rejection.version,
        "build": rejection.build,
        "reasons": [r._asdict() for r in rejection.reasons],
    }


def _inputs(request: Request) -> dict[str, Any]:
    def given(value: Optional[Given]) -> Optional[dict[str, str]]:
        return {"value": value.text, "from": value.origin} if value else None

    return {
        "frameworks": [w.text for w in request.frameworks],
        "os": request.os,
        "python": given(request.python),
        "gpu": given(request.gpu),
        "compute_capability": request.compute_capability,
        "driver": given(request.driver),
        "driver_runs_cuda": driver_runs(request),
        "cuda": given(request.cuda),
        "arch": request.arch,
    }


def _wanted(request: Request) -> str:
    return " + ".join(w.text for w in request.frameworks) if request.frameworks else "a CUDA toolkit and cuDNN"


def _given_parts(request: Request) -> list[str]:
    parts = []
    for label, value in (
        ("Python", request.python),
        ("driver", request.driver),
        ("GPU", request.gpu),
        ("CUDA", request.cuda),
    ):
        if value:
            parts.append(f"{label} {value.text}" + (" (this machine)" if value.origin == "machine" else ""))
    return parts + ([request.arch] if request.arch != "x86_64" else [])


def _text(value: Optional[Given]) -> Optional[str]:
    return value.text if value else None
