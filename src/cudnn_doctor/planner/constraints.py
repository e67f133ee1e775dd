"""Judging one candidate against what the request fixes (driver, GPU, CUDA, Python): the reasons it cannot
be used, each with the knowledge row that says so, and what using it would take (toolkit release, cuDNN
release and archive, minimum drivers)."""

from __future__ import annotations

from typing import Optional

from cudnn_doctor import knowledge
from cudnn_doctor.planner.arch import archive_arch
from cudnn_doctor.planner.candidate import Candidate
from cudnn_doctor.planner.candidates import V, newest_update
from cudnn_doctor.planner.request import Request
from cudnn_doctor.record import Record

OS_NAMES = ("linux", "windows")


class Reason(Record):
    """Why a candidate cannot be used: `kind` names the constraint (driver, gpu, cuda, python, cudnn, os,
    combination)."""

    kind: str
    text: str
    source: Optional[str] = None


class Needs(Record):
    """What a candidate takes on this machine: the drivers by OS, and for a system-CUDA build the toolkit and cuDNN to
    install."""

    min_driver: dict[str, Optional[str]]  # the driver the verdict uses, per OS: one of the two below, by `driver_rule`
    min_driver_compat: dict[str, Optional[str]]  # the minor-version compatibility floor of its CUDA major, per OS
    min_driver_exact: dict[str, Optional[str]]  # the driver NVIDIA lists for that toolkit release (Table 3), per OS
    driver_source: Optional[str]
    driver_rule: Optional[str] = None  # knowledge.MINOR_VERSION_COMPATIBILITY | knowledge.TOOLKIT_RELEASE
    driver_why: Optional[str] = None  # why that rule applies (knowledge.DriverRule.why)
    toolkit: Optional[str] = None  # the toolkit release to install ("11.2.2"); None: the wheels bring CUDA
    cudnn: Optional[str] = None  # the cuDNN release to install ("8.1.1.33")
    cudnn_archive: Optional[str] = None  # NVIDIA's file name for it
    cudnn_source: Optional[str] = None


class Verdict(Record):
    candidate: Candidate
    reasons: tuple[Reason, ...]
    needs: Needs

    @property
    def ok(self) -> bool:
        return not self.reasons


def judge(candidate: Candidate, request: Request, python_hard: bool) -> Verdict:
    """Every reason `candidate` fails the request (none: it can be used), and what it needs. A toolkit is the exact
    release asked for (`--cuda 12.9.0`, with its own Table 3 minimum), else the newest update of the candidate's
    minor."""
    exact = request.cuda.text if request.cuda is not None and len(V(request.cuda.text).release) >= 3 else None
    if exact and candidate.framework == "cuda" and V(candidate.cuda).release[:2] == V(exact).release[:2]:
        candidate = candidate._replace(version=exact)
    toolkit = None
    if candidate.cuda_from == "system" and "." in candidate.cuda:
        toolkit = (
            exact if exact and V(exact).release[:2] == V(candidate.cuda).release[:2] else newest_update(candidate.cuda)
        )
    needs = _driver_needs(candidate, toolkit)
    reasons: list[Reason] = []
    reasons += _cuda_reasons(candidate, request)
    reasons += _python_reasons(candidate, request, python_hard)
    reasons += _gpu_reasons(candidate, request)
    reasons += _driver_reasons(candidate, request, needs)
    if candidate.cuda_from == "system" and not reasons and candidate.cudnn_rule == "none":
        needs = needs._replace(toolkit=toolkit)  # a toolkit, and no cuDNN to install (CuPy)
    elif candidate.cuda_from == "system" and not reasons:
        known = (
            candidate.cudnn is None or candidate.cudnn_rule == "newest" or knowledge.cudnn_series_known(candidate.cudnn)
        )
        picked = _pick_cudnn(candidate, request) if known else None
        if not known:
            # A cuDNN older than the support matrix reaches: the framework's own tested configuration names it.
            needs = needs._replace(
                toolkit=toolkit, cudnn=candidate.cudnn, cudnn_archive=None, cudnn_source=candidate.source
            )
        elif picked is None:
            wanted = (
                f"cuDNN {candidate.cudnn}{'+' if candidate.cudnn_rule == 'at-least' else ''}"
                if candidate.cudnn
                else "cuDNN"
            )
            reasons.append(
                Reason(
                    "cudnn",
                    f"no {wanted} release for CUDA {candidate.cuda} on {request.package_os} in NVIDIA's support matrix",
                )
            )
        else:
            full, row = picked
            archive = knowledge.cudnn_archive_name(
                full, V(candidate.cuda), request.package_os, archive_arch(request.arch)
            )
            needs = needs._replace(toolkit=toolkit, cudnn=full, cudnn_archive=archive, cudnn_source=row.source)
    return Verdict(candidate, tuple(reasons), needs)


def _driver_needs(candidate: Candidate, toolkit: Optional[str]) -> Needs:
    """The drivers a candidate needs, by the rule `check` applies too (`knowledge.driver_rule`): a framework build that
    brings its CUDA runs under minor-version compatibility (a GPU without native code from it is rejected by
    `_gpu_reasons`, so no planned build needs PTX JIT); a toolkit alone, or one a system-CUDA build installs, is for
    compiling, where the release's own minimum applies."""
    use = knowledge.COMPILE if candidate.cuda_from == "system" or candidate.framework == "cuda" else knowledge.RUN
    cuda = V(toolkit or candidate.cuda)
    rules = {os_name: knowledge.driver_rule(cuda, os_name, use) for os_name in OS_NAMES}
    exact = {o: (r.exact.driver_text if r and r.exact else None) for o, r in rules.items()}
    compat = {o: (r.floor.driver_text if r and r.floor else None) for o, r in rules.items()}
    used = {o: (r.need.driver_text if r else None) for o, r in rules.items()}
    if "." not in candidate.cuda:  # a major alone: no release of its own to name
        exact = dict(compat) if any(compat.values()) else exact
    first = rules["linux"] or rules["windows"]
    source = first.need.source if first else None
    if candidate.driver_floor and (used["linux"] is None or V(candidate.driver_floor) > V(used["linux"])):
        used["linux"] = candidate.driver_floor
        source = candidate.source
    return Needs(
        min_driver=used,
        min_driver_compat=compat,
        min_driver_exact=exact,
        driver_source=source,
        driver_rule=first.rule if first else None,
        driver_why=first.why if first else None,
    )


def _cuda_reasons(candidate: Candidate, request: Request) -> list[Reason]:
    if request.cuda is None:
        return []
    wanted = V(request.cuda.text)
    if len(wanted.release) == 1:  # `--cuda 12`: any release of that major
        fits = candidate.cuda_major == wanted.major
    elif "." in candidate.cuda:
        fits = V(candidate.cuda).release[:2] == wanted.release[:2]
    else:
        fits = candidate.cuda_major == wanted.major and (candidate.cuda_min is None or wanted >= V(candidate.cuda_min))
    built = f"{candidate.cuda_min} or newer" if candidate.cuda_min else candidate.cuda
    return [] if fits else [Reason("cuda", f"is built for CUDA {built}, not {request.cuda.text}", candidate.source)]


def _python_reasons(candidate: Candidate, request: Request, hard: bool) -> list[Reason]:
    if not hard or request.python is None or candidate.python is None:
        return []
    if candidate.python.contains(V(request.python.text), prereleases=True):
        return []
    return [Reason("python", f"has wheels for Python {candidate.python}, not {request.python.text}", candidate.source)]


def _gpu_reasons(candidate: Candidate, request: Request) -> list[Reason]:
    cc = request.compute_capability
    if cc is None:
        return []
    gpu = f" ({request.gpu.text})" if request.gpu and cc not in request.gpu.text else ""
    if "." in candidate.cuda:
        if knowledge.cuda_runs_on_compute_capability(V(candidate.cuda), cc) is False:
            row = knowledge.cuda_architectures(V(candidate.cuda))
            text = f"CUDA {candidate.cuda} builds no code that runs on compute capability {cc}{gpu}"
            return [Reason("gpu", text, row.source if row else knowledge.BINARY_COMPATIBILITY_SOURCE)]
        return []
    floor = knowledge.cuda_min_compute_capability(candidate.cuda_major)
    if floor is not None and V(cc) < floor[0]:
        return [
            Reason(
                "gpu",
                f"CUDA {candidate.cuda_major} builds for compute capability {floor[0]} and newer, not {cc}{gpu}",
                floor[1],
            )
        ]
    return []


def _driver_reasons(candidate: Candidate, request: Request, needs: Needs) -> list[Reason]:
    if request.driver is None:
        return []
    wanted = needs.min_driver.get(request.driver_os)
    if wanted is None or V(request.driver.text) >= V(wanted):
        return []
    where = "Windows" if request.driver_os == "windows" else "Linux"
    what = f"CUDA {needs.toolkit or candidate.cuda}, {needs.driver_rule or 'its minimum'}"
    exact = needs.min_driver_exact.get(request.driver_os)
    floor = needs.min_driver_compat.get(request.driver_os)
    if needs.driver_rule == knowledge.MINOR_VERSION_COMPATIBILITY and exact and exact != wanted:
        what += f"; its own minimum is {exact}"
    elif needs.driver_rule == knowledge.TOOLKIT_RELEASE and floor and floor != wanted and V(floor) < V(wanted):
        what += f"; the minor-version floor {floor} is not enough: {needs.driver_why}"  # both side by side, and why
    return [
        Reason(
            "driver",
            f"needs driver ≥ {wanted} on {where} ({what}); the driver is {request.driver.text}",
            needs.driver_source,
        )
    ]


def _pick_cudnn(candidate: Candidate, request: Request) -> Optional[tuple[str, knowledge.records.CudnnSupport]]:
    """The newest cuDNN release the candidate accepts that supports its toolkit, OS and GPU."""
    rule = "newest" if candidate.cudnn is None else candidate.cudnn_rule
    return _newest_cudnn(candidate.cuda, request.package_os, candidate.cudnn, rule, request.compute_capability)


@knowledge.lookup
def _newest_cudnn(
    cuda: str, os_name: str, wanted: Optional[str], rule: str, cc_text: Optional[str]
) -> Optional[tuple[str, knowledge.records.CudnnSupport]]:
    """Asked once per (CUDA, OS, cuDNN wanted, GPU): a solve judges hundreds of candidates that share them."""
    cc = V(cc_text) if cc_text else None
    for full, row in knowledge.cudnn_releases_for(V(cuda), os_name):
        if not _cudnn_fits(wanted, rule, full):
            continue
        floor = knowledge.cudnn_min_compute_capability(row) if cc is not None else None
        if floor is not None and cc is not None and cc < V(floor[0]):
            continue
        return full, row
    return None


def _cudnn_fits(wanted: Optional[str], rule: str, full: str) -> bool:
    if wanted is None or rule == "newest":
        return True
    have = V(full).release
    release = V(wanted).release
    if rule == "at-least":
        return have[0] == release[0] and have >= release
    return have[: len(release)] == release


def driver_runs(request: Request) -> Optional[str]:
    """The newest CUDA toolkit release the given driver runs, from NVIDIA's table ("11.4.2" for Windows 472.12)."""
    if request.driver is None:
        return None
    found = knowledge.max_cuda_for_driver(V(request.driver.text), request.driver_os)
    return str(found[0]) if found else None
