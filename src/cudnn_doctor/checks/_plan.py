"""Fixes that name versions ask the planner, so a fix never proposes a build the driver cannot run or
a (release, build) the knowledge does not hold.

One Python environment and one framework at a time: the request is this machine (OS, driver, first
GPU) and that interpreter's Python, a hard constraint since the fix is for that interpreter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from packaging.version import InvalidVersion, Version

from cudnn_doctor import knowledge
from cudnn_doctor.errors import UsageError
from cudnn_doctor.facts import Facts
from cudnn_doctor.record import Record

if TYPE_CHECKING:  # the planner is imported when a fix asks it, not by every `check`
    from cudnn_doctor.planner.commands import Steps
    from cudnn_doctor.planner.constraints import Verdict
    from cudnn_doctor.planner.request import Given, Request, Wanted
    from cudnn_doctor.planner.solver import Plan, Stack

FRAMEWORKS = (
    "torch",
    "tensorflow",
    "onnxruntime",
    "paddle",
    "jax",
    "cupy",
)  # planner.request.FRAMEWORKS, kept in step by a test


class Option(Record):
    """One planned build of the framework and how to get it."""

    verdict: Verdict  # the build chosen for the framework
    stack: Stack
    steps: Steps
    requirement: str  # what pip installs: the user's own patch release where the plan keeps its minor
    driver: Optional[str]  # the driver to install first; None: the machine's driver runs the build

    @property
    def options(self) -> tuple[str, ...]:
        return self.verdict.candidate.pip_options

    @property
    def build(self) -> str:
        return self.verdict.candidate.build

    @property
    def version(self) -> str:
        return (
            self.requirement.split("==", 1)[1].split("+")[0]
            if "==" in self.requirement
            else self.verdict.candidate.version
        )


class Options(Record):
    keep: Optional[Option]  # the user's release (its minor), on this driver or after a driver update
    now: Optional[Option]  # the newest build the current driver runs, when `keep` is missing or needs a new driver


def machine_request(
    facts: Facts,
    executable: str,
    wanted: Sequence[Wanted],
    python_origin: str = "option",
    os_name: Optional[str] = None,
    cuda: Optional[str] = None,
) -> Request:
    """The planner's request for this machine and the interpreter `executable` (`os_name`: "wsl" plans WSL2 on this
    Windows; `cuda`: an installed toolkit's X.Y the build must be made for)."""
    from cudnn_doctor.planner.request import Request

    gpu = facts.driver.gpus[0] if facts.driver.gpus else None
    driver = machine_driver(facts)
    python = facts.python(executable)
    parsed = python.parsed_version if python else None
    python_xy = (
        ".".join(str(part) for part in parsed.release[:2]) if parsed is not None and len(parsed.release) >= 2 else None
    )
    return Request(
        frameworks=tuple(wanted),
        os=os_name or ("wsl" if facts.wsl else facts.os),
        python=_given(python_xy, python_origin) if python_xy else None,
        gpu=_given(gpu.name, "machine") if gpu else None,
        compute_capability=gpu.compute_capability if gpu and _is_version(gpu.compute_capability) else None,
        driver=_given(driver, "machine") if driver else None,
        cuda=_given(cuda, "machine") if cuda else None,
    )


def plannable(name: str) -> bool:
    """The planner knows the framework and can judge every build it has."""
    return name in FRAMEWORKS


def plan_options(
    facts: Facts, executable: str, name: str, release: Optional[str], extras: frozenset[str] = frozenset()
) -> Options:
    """The user's release where some build of it is usable (after a driver update if need be), and the newest build
    the current driver runs when that one needs an update or none exists."""
    if not plannable(name):
        return Options(None, None)
    keep = None
    for text in pins(name, release):
        plan = _solve(machine_request(facts, executable, [_wanted(text, extras)]))
        keep = _option(facts, plan, name, release) or _after_driver_update(facts, plan, name, release)
        if keep is not None:
            break
    now = None
    if keep is None or keep.driver is not None:
        now = runnable_now(facts, executable, name, release, extras)
    return Options(keep, now)


def runnable_now(
    facts: Facts, executable: str, name: str, release: Optional[str] = None, extras: frozenset[str] = frozenset()
) -> Optional[Option]:
    """The build the current driver runs: of the user's minor where one exists, else the newest release; a new
    environment's
    Python when the interpreter's has none."""
    if not plannable(name):
        return None
    for text in [*pins(name, release)[1:], name]:
        plan = _solve(machine_request(facts, executable, [_wanted(text, extras)]))
        found = _option(facts, plan, name, release)
        if found is not None:
            return found
    plan = _solve(machine_request(facts, executable, [_wanted(name, extras)], python_origin="machine"))
    return _option(facts, plan, name, release)


def first_option(
    facts: Facts,
    executable: str,
    texts: Sequence[str],
    release: Optional[str] = None,
    os_name: Optional[str] = None,
    python_origin: str = "option",
    cuda: Optional[str] = None,
) -> Optional[Option]:
    """The first of `texts` (requirements, most wanted first) with a usable build here, or one a driver update makes
    usable; `release`: the user's, whose patch a plan of its minor keeps."""
    for text in texts:
        try:
            wanted = _parse(text)
        except UsageError:  # a framework the planner does not know (cupy): no plan
            return None
        if not plannable(wanted.name):
            return None
        plan = _solve(machine_request(facts, executable, [wanted], python_origin, os_name, cuda))
        found = _option(facts, plan, wanted.name, release, os_name) or _after_driver_update(
            facts, plan, wanted.name, release, os_name
        )
        if found is not None:
            return found
    return None


def pins(name: str, release: Optional[str]) -> list[str]:
    """The user's exact release, then its minor (the knowledge holds a build table per minor: 2.2 for 2.2.2)."""
    version = _public(release)
    if version is None:
        return []
    minor = ".".join(str(p) for p in (*version.release, 0)[:2])
    return [f"{name}=={version}", f"{name}=={minor}.*"]


def _wanted(text: str, extras: frozenset[str]) -> Wanted:
    return _parse(text)._replace(extras=extras) if extras else _parse(text)


def _option(
    facts: Facts, plan: Plan, name: str, release: Optional[str], os_name: Optional[str] = None
) -> Optional[Option]:
    stack = plan.stack
    if stack is None:
        return None
    return _make(facts, stack, name, release, None, os_name)


def _after_driver_update(
    facts: Facts, plan: Plan, name: str, release: Optional[str], os_name: Optional[str] = None
) -> Optional[Option]:
    """The planner's "update the driver" alternative: the build of this release the oldest driver runs."""
    if plan.stack is not None:
        return None
    found = next((a.stack for a in plan.alternatives if a.change == "driver"), None)
    if found is None:
        return None
    needed = found.drivers("min_driver")[plan.request.driver_os]
    return _make(facts, found, name, release, needed, os_name)


def _make(
    facts: Facts, stack: Stack, name: str, release: Optional[str], driver: Optional[str], os_name: Optional[str] = None
) -> Optional[Option]:
    verdict = next((v for v in stack.chosen if v.candidate.framework == name), None)
    if verdict is None or not verdict.candidate.requirement:
        return None
    os_name = os_name or ("wsl" if facts.wsl else facts.os)
    planned = _steps(stack, os_name, machine_driver(facts) if driver is None else None)
    return Option(verdict, stack, planned, _keep_patch(verdict, release), driver)


def _keep_patch(verdict: Verdict, release: Optional[str]) -> str:
    """torch==2.2.0 -> torch==2.2.2 when the user has 2.2.2: the knowledge's build table covers every patch of a
    minor."""
    candidate = verdict.candidate
    version = _public(release)
    planned = _public(candidate.version)
    if (
        version is None
        or planned is None
        or version.release[:2] != planned.release[:2]
        or f"=={candidate.version}" not in candidate.requirement
    ):
        return candidate.requirement
    return candidate.requirement.replace(f"=={candidate.version}", f"=={version}", 1)


def _public(text: Optional[str]) -> Optional[Version]:
    """The public release of a version ("2.2.2+cpu" -> 2.2.2); None when it is not one."""
    if not text:
        return None
    try:
        version = Version(text.split("+")[0])
    except InvalidVersion:
        return None
    return Version(".".join(str(p) for p in version.release))


def machine_driver(facts: Facts) -> Optional[str]:
    """The driver's version as the planner reads it; None when the machine's is no version number."""
    version = facts.driver.version
    return version if version and _is_version(version) else None


def _is_version(text: Optional[str]) -> bool:
    if not text:
        return False
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def pip_install(executable: str, requirements: Sequence[str], options: Sequence[str]) -> str:
    """`"exe" -m pip install torch==2.2.2 torchvision==0.17.2 --index-url URL`: quoted only where a shell would split or
    redirect. A build from a side feed whose version PyPI also serves is installed as the planner does
    (`planner.commands.pip_lines`): from the feed alone without dependencies, then the same pin for them, joined by
    `&&`."""
    words = [_quote(r) for r in requirements]
    steps = [tuple(options)]
    if requirements and "--extra-index-url" in options:  # only then is the planner's rule loaded (`check`'s start)
        from cudnn_doctor.planner.commands import pip_option_sets

        steps = pip_option_sets(requirements[0], tuple(options))
    return " && ".join(" ".join([f'"{executable}" -m pip install', *words, *step]) for step in steps)


def _quote(requirement: str) -> str:
    return f'"{requirement}"' if any(c in requirement for c in "[]<>*; ") else requirement


def driver_os(facts: Facts) -> str:
    return "windows" if facts.os == "windows" or facts.wsl else "linux"


def driver_source(facts: Facts) -> str:
    """Where the driver comes from on this machine: NVIDIA's download page on Windows and under WSL2 (the Windows driver
    serves it), `ubuntu-drivers` on Ubuntu and its derivatives (os-release), else the distribution's own package."""
    if driver_os(facts) == "windows":
        return "https://www.nvidia.com/Download/index.aspx"
    if "ubuntu" in facts.environment.distribution:
        return "e.g. `sudo ubuntu-drivers install`"
    return (
        "your distribution's NVIDIA driver package, or NVIDIA's installer from "
        "https://www.nvidia.com/Download/index.aspx"
    )


def describe(option: Option) -> str:
    """`torch 2.2.2 (cu121, CUDA 12.1)`."""
    candidate = option.verdict.candidate
    return f"{candidate.framework} {option.version} ({candidate.build}, CUDA {candidate.cuda})"


def option_text(executable: str, option: Option, say_environment: bool = True) -> str:
    """An option as one fix line: what to download first, then the exact commands (this interpreter's pip, or a new
    environment's when its Python has no wheel)."""
    parts = [
        f"download {d.what}" + (f" ({d.file})" if d.file else "") + f" from {d.page}"
        for d in option.steps.downloads
        if not d.what.startswith("NVIDIA driver")
    ]
    commands = [c for c in option.steps.commands if c != "cudnn-doctor check"]
    commands = [_own_pip("python" if option.stack.python_outside else executable, c, option) for c in commands]
    parts += [f"`{c}`" for c in commands]
    text = ", then ".join(parts) + "".join(f"; {note}" for note in option.steps.notes if "outside" not in note)
    if option.stack.python_outside and say_environment:
        text = f"in a new environment (Python {option.stack.python_outside} has no wheel of it): {text}"
    if option.driver:
        text = f"update the NVIDIA driver to >= {option.driver} first, then {text}"
    return text


def _own_pip(executable: str, command: str, option: Option) -> str:
    """`python -m pip install "torch==2.2.0" ...` -> this interpreter's pip, with the user's patch release kept."""
    candidate = option.verdict.candidate
    if not command.startswith("python -m pip install") or f'"{candidate.requirement}"' not in command:
        return command
    line = pip_install(executable, [option.requirement], _line_options(command, candidate.requirement))
    return line.replace('"python" -m', "python -m") if executable == "python" else line


def _line_options(command: str, requirement: str) -> tuple[str, ...]:
    """The options the planner's own line gives after the requirement: each of a feed build's two lines keeps its
    own."""
    return tuple(command.split(f'"{requirement}"', 1)[1].split())


def toolkit_now(facts: Facts) -> Optional[str]:
    """The newest CUDA toolkit release the current driver runs (the planner with no framework), None when unknown."""
    driver = machine_driver(facts)
    if not driver:
        return None
    from cudnn_doctor.planner.request import Request

    request = Request(frameworks=(), os="wsl" if facts.wsl else facts.os, driver=_given(driver, "machine"))
    stack = _solve(request).stack
    return stack.chosen[0].candidate.version if stack else None


def installed_toolkit(facts: Facts, major: Optional[int]) -> Optional[str]:
    """The X.Y of the installed toolkit of a CUDA major the planner knows (the one on PATH first), None when there is
    none."""
    toolkits = sorted(facts.toolkits.toolkits, key=lambda t: not t.on_path)
    for toolkit in toolkits:
        version = toolkit.parsed_version
        if version is None or (major is not None and version.release[0] != major):
            continue
        xy = ".".join(str(p) for p in (*version.release, 0)[:2])
        if knowledge.toolkit_release(Version(xy)) is not None:
            return xy
    return None


# the planner, imported on first use ----------------------------------------------------------------


@knowledge.lookup
def _solve(request: Request) -> Plan:
    """Cached with the knowledge lookups (and cleared with them when a `--kb` file changes the tables): a check asks
    the same question for every environment that holds the same build."""
    from cudnn_doctor.planner.solver import solve

    return solve(request)


def _given(text: str, origin: str) -> Given:
    from cudnn_doctor.planner.request import Given

    return Given(text, origin)


def _parse(text: str) -> Wanted:
    from cudnn_doctor.planner.request import parse_framework

    return parse_framework(text)


def _steps(stack: Stack, os_name: str, driver: Optional[str]) -> Steps:
    from cudnn_doctor.planner.commands import steps

    return steps(stack, os_name, driver)


def newest_update(cuda: str) -> Optional[str]:
    """The newest toolkit release of a CUDA minor the knowledge lists ("11.2" -> "11.2.2")."""
    from cudnn_doctor.planner.candidates import newest_update

    return newest_update(cuda)


def cudnn_archive_for(facts: Facts, cudnn_major: int, cuda: str) -> Optional[tuple[str, str]]:
    """(full version, NVIDIA's archive name) of the newest cuDNN `cudnn_major` release built for CUDA `cuda` (a major or
    X.Y) on this OS that still has kernels for the GPU, as the planner picks it; None when the knowledge has none."""
    from cudnn_doctor.planner.constraints import _newest_cudnn

    gpu = facts.driver.gpus[0] if facts.driver.gpus else None
    cc = gpu.compute_capability if gpu and _is_version(gpu.compute_capability) else None
    os_name = "linux" if facts.os == "wsl" else facts.os
    picked = _newest_cudnn(cuda, os_name, str(cudnn_major), "series", cc)
    if picked is None:
        return None
    archive = knowledge.cudnn_archive_name(picked[0], Version(cuda), os_name)
    return (picked[0], archive) if archive else None


def install_archive(facts: Facts, cudnn: Optional[str], cuda: Optional[str]) -> str:
    """`cudnn-doctor install` with NVIDIA's archive of cuDNN `cudnn` (a release such as "8.9.7", or a major for its
    newest
    release with kernels for the GPU) built for CUDA `cuda` on this OS, by its real name; where the knowledge has no
    such
    archive, the naming rule of NVIDIA's archives for that release. Never a placeholder."""
    os_name = "linux" if facts.os == "wsl" else facts.os
    wanted = Version(cudnn) if cudnn and _is_version(cudnn) else None
    if wanted is not None and cuda and _is_version(cuda):
        full = next(
            (
                f
                for row in knowledge.table("cudnn").support
                for f in row.full_versions
                if f == cudnn or f.startswith(f"{cudnn}.")
            ),
            None,
        )
        named = knowledge.cudnn_archive_name(full, Version(cuda), os_name) if full and len(wanted.release) > 1 else None
        picked = (full, named) if full and named else cudnn_archive_for(facts, wanted.release[0], cuda)
        if picked is not None and (len(wanted.release) == 1 or Version(picked[0]).release[:2] == wanted.release[:2]):
            return f"`cudnn-doctor install {picked[1]}`, NVIDIA's cuDNN {picked[0]} archive for CUDA {cuda}"
    era = next(
        (
            row
            for row in knowledge.table("cudnn").archives
            if row.os == os_name and wanted is not None and row.versions.contains(str(wanted))
        ),
        None,
    )
    shape = era.pattern if era else _NEWEST_ARCHIVE_SHAPE[os_name == "windows"]
    known = {
        "arch": "x86_64",
        "cuda_major": cuda.split(".")[0] if cuda else None,
        "cuda": cuda if cuda and "." in cuda else None,
    }
    for field, value in known.items():
        shape = shape.replace(f"{{{field}}}", value) if value else shape
    for_cuda = f"CUDA {cuda}" if cuda else "your CUDA major"
    return (
        f"`cudnn-doctor install` with the path of NVIDIA's cuDNN {cudnn or ''} archive for {for_cuda}, named {shape}"
    ).replace("  ", " ")


# NVIDIA's archive names since cuDNN 8.5 (knowledge cudnn.yaml `archives`): the shape a fix names when the release is
# not known
_NEWEST_ARCHIVE_SHAPE = (
    "cudnn-linux-{arch}-{version}_cuda{cuda_major}-archive.tar.xz",
    "cudnn-windows-{arch}-{version}_cuda{cuda_major}-archive.zip",
)
