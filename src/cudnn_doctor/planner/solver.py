"""The search: the newest combination of one build per wanted framework that every constraint admits.

Candidates are judged alone first (driver, GPU, CUDA, Python: `constraints.judge`); the survivors are
then combined depth first, newest first, under the constraints between frameworks that share one
process (one CUDA major, one cuDNN major, one system toolkit, a common Python). The first complete
combination is the newest. When none exists, the search is rerun with one constraint relaxed at a
time, which turns "no stack" into "use WSL2", "update the driver to ≥ X" or "TensorFlow 2.10".
"""

from __future__ import annotations

from typing import Optional, Sequence

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.planner import pins
from cudnn_doctor.planner.arch import JETSON_INDEX, JETSON_SOURCE, cpu_only_reason, jetson
from cudnn_doctor.planner.candidate import Candidate
from cudnn_doctor.planner.candidates import V, all_candidates, candidates, toolkit_candidates
from cudnn_doctor.planner.constraints import OS_NAMES, Reason, Verdict, judge
from cudnn_doctor.planner.request import Request, Wanted
from cudnn_doctor.record import Record

PYTHONS = tuple(f"3.{minor}" for minor in range(5, 16))  # what "a common Python" is tested on


class Stack(Record):
    chosen: tuple[Verdict, ...]  # one per wanted framework, in the order asked
    python: Optional[str]  # the Pythons every chosen build has wheels for (PEP 440); None: not published
    python_outside: Optional[str] = None  # the machine's Python, when no stack admits it and this one is planned anyway

    @property
    def cuda(self) -> str:
        system = [v for v in self.chosen if v.candidate.cuda_from == "system"]
        if system:
            return system[0].candidate.cuda
        return max((v.candidate.cuda for v in self.chosen), key=V)

    @property
    def cudnn(self) -> Optional[str]:
        system = [v.needs.cudnn for v in self.chosen if v.needs.cudnn]
        if system:
            return system[0]
        known = [v.candidate.cudnn for v in self.chosen if v.candidate.cudnn]
        return max(known, key=V) if known else None

    def drivers(self, field: str) -> dict[str, Optional[str]]:
        """The highest minimum of the chosen builds, per OS (`min_driver` or `min_driver_compat`)."""
        out: dict[str, Optional[str]] = {}
        for os_name in OS_NAMES:
            values = [getattr(v.needs, field)[os_name] for v in self.chosen if getattr(v.needs, field)[os_name]]
            out[os_name] = max(values, key=V) if values else None
        return out


class Rejection(Record):
    framework: str
    version: str
    build: str
    reasons: tuple[Reason, ...]


class Alternative(Record):
    change: str  # what the user would change: "os=wsl", "driver", "python", "cuda", "framework versions"
    text: str
    stack: Stack


class Plan(Record):
    request: Request
    stack: Optional[Stack]
    rejected: tuple[Rejection, ...]
    alternatives: tuple[Alternative, ...]
    considered: int  # the candidates judged plus the partial combinations tried

    @property
    def exit_code(self) -> int:
        return 0 if self.stack is not None else 1


class _Search(Record):
    stack: Optional[Stack]
    verdicts: tuple[tuple[Verdict, ...], ...]
    structural: tuple[Rejection, ...]  # a wanted framework with no build at all here
    conflicts: dict[Candidate, Reason]
    considered: int


def solve(request: Request) -> Plan:
    search = _search(request)
    alternatives = _alternatives(request, search)
    return Plan(
        request,
        search.stack,
        _rejections(search, request.package_os == "linux"),
        alternatives,
        search.considered + sum(a.stack is not None for a in alternatives),
    )


def _wanted(request: Request) -> tuple[Wanted, ...]:
    return request.frameworks or (Wanted("cuda", SpecifierSet(), "cuda"),)


def _search(request: Request, low_driver: bool = False) -> _Search:
    wanted = _wanted(request)
    result = _search_once(request, wanted, request.python is not None, low_driver)
    if result.stack is None and request.python is not None and request.python.origin != "option":
        # the machine's Python is a preference: a new environment can have another one
        soft = _search_once(request, wanted, False, low_driver)
        if soft.stack is not None:
            stack = soft.stack._replace(python_outside=request.python.text)
            return soft._replace(stack=stack, considered=soft.considered + result.considered)
    return result


def _search_once(request: Request, wanted: Sequence[Wanted], python_hard: bool, low_driver: bool = False) -> _Search:
    verdicts: list[tuple[Verdict, ...]] = []
    structural: list[Rejection] = []
    considered = 0
    for want in wanted:
        found = (
            toolkit_candidates(request.package_os)
            if want.name == "cuda"
            else candidates(want, request.package_os, request.arch)
        )
        if request.arch == "aarch64" and jetson(request.compute_capability):
            found = []  # JetPack's CUDA: PyPI's and NVIDIA's SBSA builds do not run there
        if not found:
            structural.append(_no_build(want, request))
        judged = _judge(found, request, python_hard, alone=len(wanted) == 1)
        considered += len(judged)
        verdicts.append(judged)
    if structural:
        return _Search(None, tuple(verdicts), tuple(structural), {}, considered)
    usable = [[v for v in judged if v.ok] for judged in verdicts]
    if low_driver:  # the newest releases still, but of each the build the oldest driver runs
        usable = [sorted(u, key=lambda v: (_release_rank(v), _driver_rank(v, request))) for u in usable]
    conflicts: dict[Candidate, Reason] = {}
    python = request.python.text if python_hard and request.python else None
    chosen, tried = _combine(usable, python, conflicts, request.package_os == "linux")
    stack = Stack(tuple(chosen), _common_python([v.candidate for v in chosen])) if chosen is not None else None
    return _Search(stack, tuple(verdicts), (), conflicts, considered + tried)


def _judge(found: Sequence[Candidate], request: Request, python_hard: bool, alone: bool) -> tuple[Verdict, ...]:
    """The verdicts on `found` (newest first). A framework planned alone takes its first usable release, so the
    builds after that release are not judged: they could be neither chosen nor reported."""
    judged: list[Verdict] = []
    first_ok: Optional[tuple[int, ...]] = None
    for candidate in found:
        release = V(candidate.version).release
        if alone and first_ok is not None and release != first_ok:
            break
        verdict = judge(candidate, request, python_hard)
        judged.append(verdict)
        if verdict.ok and first_ok is None:
            first_ok = release
    return tuple(judged)


def _combine(
    usable: list[list[Verdict]], python: Optional[str], conflicts: dict[Candidate, Reason], linux: bool = True
) -> tuple[Optional[list[Verdict]], int]:
    """Depth first, newest first: the first complete combination whose members can share one environment. `linux`: the
    recorded Requires-Dist (Linux x86_64) are the wheels planned, so their pins are judged too."""
    tried = 0
    path: list[Verdict] = []

    def walk(depth: int) -> bool:
        nonlocal tried
        if depth == len(usable):
            return True
        for verdict in usable[depth]:
            tried += 1
            clash = _clash(path, verdict.candidate, python, linux)
            if clash is not None:
                conflicts.setdefault(verdict.candidate, clash)
                continue
            path.append(verdict)
            if walk(depth + 1):
                return True
            path.pop()
        return False

    return (list(path) if walk(0) else None), tried


def _clash(path: list[Verdict], candidate: Candidate, python: Optional[str], linux: bool = True) -> Optional[Reason]:
    """Why `candidate` cannot join the builds already chosen in one environment (None: it can)."""
    for other in (v.candidate for v in path):
        if other.cuda_major != candidate.cuda_major:
            return Reason(
                "combination",
                f"uses CUDA {candidate.cuda_major}, {other.label()} CUDA {other.cuda_major}: one process loads "
                f"one CUDA runtime major",
            )
        if other.cudnn_major and candidate.cudnn_major and other.cudnn_major != candidate.cudnn_major:
            return Reason(
                "combination",
                f"uses cuDNN {candidate.cudnn_major}, {other.label()} cuDNN {other.cudnn_major}: one process "
                f"loads one libcudnn of a major",
            )
        if other.cuda_from == candidate.cuda_from == "system" and other.cuda != candidate.cuda:
            return Reason("combination", f"needs the CUDA {candidate.cuda} toolkit, {other.label()} CUDA {other.cuda}")
        pinned = pins.clash(_pins(candidate), _pins(other)) if linux else None
        if pinned is not None:
            return Reason("combination", pinned, "https://pypi.org/simple/ (each release's Requires-Dist, recorded)")
    if (
        candidate.python is not None
        and path
        and _common_python([v.candidate for v in path] + [candidate], python) is None
    ):
        return Reason("combination", f"shares no Python version with {', '.join(v.candidate.label() for v in path)}")
    return None


def _pins(candidate: Candidate) -> tuple[pins.Pin, ...]:
    return pins.pins(candidate.requirement, candidate.pip_options) if candidate.requirement else ()


def _common_python(chosen: Sequence[Candidate], python: Optional[str] = None) -> Optional[str]:
    """The Python range every build admits, as PEP 440 text; None when none publishes one, or none is common."""
    ranges = [c.python for c in chosen if c.python is not None]
    if not ranges:
        return None
    if len(ranges) == 1:
        return str(ranges[0]) if (python is None or ranges[0].contains(V(python), prereleases=True)) else None
    common = [p for p in ((python,) if python else PYTHONS) if all(r.contains(V(p), prereleases=True) for r in ranges)]
    if not common:
        return None
    return ",".join(str(r) for r in ranges)


def _no_build(want: Wanted, request: Request) -> Rejection:
    """A framework with no build to judge here: none on this OS, or no release the specifier accepts."""
    os_name = request.package_os
    other = "linux" if os_name == "windows" else "windows"
    spec = str(want.specifier) or "(any release)"
    if request.arch == "aarch64":
        if jetson(request.compute_capability):
            text = (
                f"a Jetson (compute capability {request.compute_capability}) runs JetPack's own CUDA, for which "
                f"PyPI and NVIDIA's SBSA "
                f"archives have no build: install from NVIDIA's Jetson index ({JETSON_INDEX}) for your JetPack"
            )
            return Rejection(want.name, spec, "", (Reason("arch", text, JETSON_SOURCE),))
        cpu_only = cpu_only_reason(want.name)
        if cpu_only is not None or candidates(want, os_name):
            text, source = cpu_only or (
                "has no GPU build for Linux aarch64 in the recorded package index",
                "https://pypi.org/simple/",
            )
            return Rejection(want.name, spec, "", (Reason("arch", text, source),))
    if candidates(want, other):
        where = "native Windows" if os_name == "windows" else "Linux"
        text = f"has no GPU build for {where}"
        source = knowledge.framework(want.name).source
        if want.name == "tensorflow" and os_name == "windows":
            last, source = knowledge.tensorflow_windows_gpu_last()
            text += f" after {last}"
        return Rejection(want.name, spec, "", (Reason("os", text, source),))
    every = all_candidates(want.name, os_name) or all_candidates(want.name, other)
    newest = max((c.version for c in every), key=V, default=None)
    text = f"no release matching {spec!r} in the knowledge" + (f" (newest known: {newest})" if newest else "")
    if newest and _asks_newer(want, V(newest)):
        recorded = knowledge.table("published").reviewed
        text += (
            f"; the data was recorded from the package indexes on {recorded}: `cudnn-doctor kb update` reads them now"
        )
    return Rejection(want.name, spec, "", (Reason("version", text),))


def _asks_newer(want: Wanted, newest: Version) -> bool:
    """Whether the specifier admits a release after the newest the data knows (the next patch, minor or major)."""
    major, minor, patch = (*newest.release, 0, 0)[:3]
    later = (f"{major}.{minor}.{patch + 1}", f"{major}.{minor + 1}.0", f"{major + 1}.0.0")
    return any(want.accepts(V(version)) for version in later)


def _rejections(search: _Search, linux: bool = True) -> tuple[Rejection, ...]:
    """The builds newer than the chosen ones (every one, when nothing was chosen) and why each was refused;
    patch releases of one minor refused for the same reasons are told once, for the newest of them."""
    if search.structural:
        return search.structural
    out: list[Rejection] = []
    seen: set[tuple[str, str, str, tuple[str, ...]]] = set()
    chosen = {v.candidate for v in search.stack.chosen} if search.stack else set()
    for judged in search.verdicts:
        for verdict in judged:
            candidate = verdict.candidate
            if candidate in chosen:
                break
            reasons = verdict.reasons or _conflict(search, candidate, linux)
            if not reasons:
                continue
            key = (
                candidate.framework,
                ".".join(candidate.version.split(".")[:2]),
                candidate.build,
                tuple(r.text for r in reasons),
            )
            if key in seen:
                continue
            seen.add(key)
            out.append(Rejection(candidate.framework, candidate.version, candidate.build, reasons))
    return tuple(out)


def _conflict(search: _Search, candidate: Candidate, linux: bool) -> tuple[Reason, ...]:
    """Why a usable build was left out of the combination: what keeps it from the stack chosen, where one was (the
    first clash met in the search may be with a build that was not chosen either)."""
    if candidate not in search.conflicts:
        return ()
    if search.stack is not None:
        others = [v for v in search.stack.chosen if v.candidate.framework != candidate.framework]
        against_chosen = _clash(others, candidate, None, linux)
        if against_chosen is not None:
            return (against_chosen,)
    return (search.conflicts[candidate],)


def _alternatives(request: Request, search: _Search) -> tuple[Alternative, ...]:
    """Stacks one change away: asked for when nothing fits, and for a newer stack behind an old driver."""
    tries: list[tuple[str, str, Request]] = []
    if search.stack is None:
        if request.os == "windows":
            tries.append(("os", "use WSL2 (Linux builds, the Windows driver)", request._replace(os="wsl")))
        if any(str(w.specifier) or w.extras for w in request.frameworks):
            unpinned = tuple(w._replace(specifier=SpecifierSet(), extras=frozenset()) for w in request.frameworks)
            tries.append(("versions", "use another release", request._replace(frameworks=unpinned)))
        if request.python is not None and request.python.origin == "option":
            tries.append(("python", "use another Python", request._replace(python=None)))
        if request.cuda is not None:
            tries.append(("cuda", "use another CUDA toolkit", request._replace(cuda=None)))
    if request.driver is not None:
        tries.append(("driver", "update the driver", request._replace(driver=None)))
    out = []
    for change, text, relaxed in tries:
        found = _search(relaxed, low_driver=change == "driver").stack
        if found is None or (search.stack is not None and not _newer(found, search.stack)):
            continue
        out.append(Alternative(change, text, found))
    return tuple(out)


def _release_rank(verdict: Verdict) -> tuple[int, ...]:
    """Sorts newer releases first."""
    return tuple(-part for part in V(verdict.candidate.version).release)


def _driver_rank(verdict: Verdict, request: Request) -> Version:
    needed = verdict.needs.min_driver.get(request.driver_os)
    return V(needed) if needed else V("0")


def _newer(a: Stack, b: Stack) -> bool:
    return [V(v.candidate.version) for v in a.chosen] > [V(v.candidate.version) for v in b.chosen] or (
        [V(v.candidate.version) for v in a.chosen] == [V(v.candidate.version) for v in b.chosen]
        and V(a.cuda) > V(b.cuda)
    )
