"""Frameworks and Python: CPU builds, builds that cannot reach the GPU, builds for the wrong CUDA, wrong interpreter."""

from __future__ import annotations

from typing import Iterator, Mapping, Optional

from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.checks._libraries import build_key, cuda_key, lookup, system_builds
from cudnn_doctor.checks._plan import (
    Option,
    describe,
    driver_os,
    driver_source,
    first_option,
    installed_toolkit,
    newest_update,
    option_text,
    pins,
    pip_install,
    plan_options,
)
from cudnn_doctor.checks.evidence import CpuBuild
from cudnn_doctor.checks.rules import (
    FRAMEWORK_CUDA_MISMATCH,
    INTERPRETER_MISMATCH,
    KNOWLEDGE_OUTDATED,
    PYTHON_UNSUPPORTED,
    TF_CPU_BUILD,
    TF_WINDOWS_GPU_UNSUPPORTED,
    TORCH_CPU_BUILD,
    TORCH_CUDA_UNAVAILABLE,
)
from cudnn_doctor.facts import Facts, FrameworkBuild
from cudnn_doctor.findings import Finding
from cudnn_doctor.knowledge.records import VersionRange
from cudnn_doctor.versions import major_minor, parse_version


def torch_install_lines(facts: Facts, build: FrameworkBuild) -> list[str]:
    """The exact commands that replace `build` by a CUDA build that the planner says this driver runs: of the same
    release where one exists, else the newest that does; and the driver that the same release needs, when it needs
    one."""
    exe = build.executable
    planned = plan_options(facts, exe, "torch", build.version)
    python = facts.python(exe)
    packages = python.packages if python else {}
    # torchvision and torchaudio are built against one torch: a CPU torch came with CPU companions, from any index
    names = [name for name in sorted(packages) if name in ("torchvision", "torchaudio")]
    lines = [f'"{exe}" -m pip uninstall -y torch {" ".join(names)}'.rstrip()]
    keep, now = planned
    if keep is not None and keep.driver is None:
        return [*lines, _torch_line(exe, keep, packages, build.version)]
    if keep is not None:
        lines.append(
            f"To keep torch {keep.version}: update the NVIDIA driver to >= {keep.driver} first "
            f"({_driver_page(facts)}), then: "
            f"{_torch_line(exe, keep, packages, build.version)}"
        )
    if now is not None:
        prefix = (
            f"Or keep the driver {facts.driver.version} and install {describe(now)}, which it runs: "
            if keep is not None
            else ""
        )
        lines.append(
            prefix
            + (option_text(exe, now) if now.stack.python_outside else _torch_line(exe, now, packages, build.version))
        )
    if keep is None and now is None:
        lines.append(f"No CUDA build of torch in the knowledge runs here; see {_TORCH_PAGE}.")
    return lines


_TORCH_PAGE = "https://pytorch.org/get-started/locally/"


def _torch_line(exe: str, option: Option, packages: Mapping[str, str], installed: Optional[str]) -> str:
    """The pip line of a planned torch build, with the installed torchvision / torchaudio when it keeps their torch
    release
    (another torch release needs other companions: pip picks them when they are not pinned)."""
    local = option.requirement.split("+", 1)[1] if "+" in option.requirement else None
    extra = []
    for name in sorted(packages):
        if name in ("torchaudio", "torchvision"):
            if option.version == _public_text(installed):
                version = packages[name].split("+")[0]
                extra.append(f"{name}=={version}+{local}" if local else f"{name}=={version}")
            else:
                extra.append(name)
    return pip_install(exe, [option.requirement, *extra], option.options)


def _public_text(version: Optional[str]) -> Optional[str]:
    return version.split("+")[0] if version else None


def _driver_page(facts: Facts) -> str:
    return driver_source(facts)


@TORCH_CPU_BUILD.checks
def torch_cpu_build(facts: Facts) -> Iterator[Finding]:
    """A `+cpu` wheel (or any build with torch.version.cuda = None) never uses the GPU, whatever the driver."""
    if not facts.has_gpu:
        return
    for build in facts.builds_of("torch"):
        if build.gpu_build is not False:
            continue
        yield TORCH_CPU_BUILD.finding(
            f"torch {build.version} in {build.executable} is a CPU-only build (torch.version.cuda is None); "
            f"the driver {facts.driver.version} supports CUDA {facts.driver.cuda}.",
            torch_install_lines(facts, build),
            CpuBuild(python=build.executable, torch=build.version),
        )


@TORCH_CUDA_UNAVAILABLE.checks
def torch_cuda_unavailable(facts: Facts) -> Iterator[Finding]:
    """torch.cuda.is_available() is False although torch was built with CUDA: a driver, device or environment
    problem."""
    for build in facts.builds_of("torch"):
        if not build.imported or build.cuda is None or build.cuda_available is not False:
            continue
        detail = (
            f"torch {build.version} (CUDA {build.cuda.value}) in {build.executable}: "
            f"torch.cuda.is_available() is False."
        )
        hidden = facts.environment.variables.get("CUDA_VISIBLE_DEVICES")
        if hidden is not None and hidden.strip() in ("", "-1", "none", "NoDevFiles"):
            detail += f" CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU."
        if build.warning:
            detail += f" torch warns: {build.warning}"
        yield TORCH_CUDA_UNAVAILABLE.finding(
            detail,
            [
                f'Fix the findings this one links to, then check with `"{build.executable}" -c "import torch; '
                f'print(torch.cuda.is_available())"`.'
            ],
            {"python": build.executable, "torch": build.version},
        )


def _after_last_windows_gpu_release(build: FrameworkBuild) -> bool:
    last, _ = knowledge.tensorflow_windows_gpu_last()
    version = build.parsed_version
    return version is not None and version.release[:2] > last.release[:2]


@TF_WINDOWS_GPU_UNSUPPORTED.checks
def tf_windows_gpu_unsupported(facts: Facts) -> Iterator[Finding]:
    """TensorFlow 2.10 was the last release built with CUDA for native Windows; newer ones run on the CPU there."""
    if facts.os != "windows":
        return
    last, source = knowledge.tensorflow_windows_gpu_last()
    for build in facts.builds_of("tensorflow"):
        if not _after_last_windows_gpu_release(build):
            continue
        row = knowledge.tensorflow_build(Version("2.10"), "windows")
        exe = build.executable
        python = facts.python(exe)
        gpu_stack = f"plus CUDA {row.cuda if row else '11.2'} and cuDNN {row.cudnn if row else '8.1'} on PATH."
        if row and python and python.parsed_version and python.parsed_version not in row.python:
            native = (
                f"Or stay on native Windows with TensorFlow 2.10, which needs Python {row.python} ({exe} is "
                f"Python {python.version}): "
                f"`conda create -n tf210 python={row.python.newest_minor()}`, then `conda run -n tf210 python -m "
                f'pip install "tensorflow<2.11"`, {gpu_stack}'
            )
        else:
            native = (
                f'Or stay on native Windows with TensorFlow 2.10: `"{exe}" -m pip install '
                f'"tensorflow<2.11"`, {gpu_stack}'
            )
        wsl = (
            'Use WSL2: `wsl --install`, then inside Ubuntu `pip install "tensorflow[and-cuda]"` (the Windows '
            "NVIDIA driver serves WSL2)."
        )
        yield TF_WINDOWS_GPU_UNSUPPORTED.finding(
            f"tensorflow {build.version} in {exe} runs on native Windows, where TensorFlow after {last} has no "
            f"GPU build.",
            [_tf_wsl_line(facts, build) or wsl, _tf_native_line(facts, build, last) or native],
            {"tensorflow": build.version, "source": source},
        )


def _tf_wsl_line(facts: Facts, build: FrameworkBuild) -> Optional[str]:
    """WSL2 with the [and-cuda] build the planner finds for this driver: the user's release where it has one."""
    release = _public_text(build.version)
    texts = [text.replace("tensorflow", "tensorflow[and-cuda]", 1) for text in pins("tensorflow", release)] + [
        "tensorflow[and-cuda]"
    ]
    option = first_option(facts, build.executable, texts, release, os_name="wsl", python_origin="machine")
    if option is None:
        return None
    driver = (
        f"update the Windows NVIDIA driver to >= {option.driver} first (WSL2 uses it), then " if option.driver else ""
    )
    python = f" in a Python {option.stack.python} environment" if option.stack.python else ""
    serves = "" if option.driver else f" (the Windows NVIDIA driver {facts.driver.version} serves WSL2)"
    line = pip_install("python3", [option.requirement], option.options).replace('"python3"', "python3", 1)
    return f"Use WSL2: {driver}`wsl --install`, then inside Ubuntu{python}: `{line}`{serves}."


def _tf_native_line(facts: Facts, build: FrameworkBuild, last: Version) -> Optional[str]:
    """Native Windows with the last GPU release: its toolkit, cuDNN and pip line from the planner, for this driver and
    Python."""
    option = first_option(
        facts, build.executable, [f"tensorflow=={last.major}.{last.minor}.*"], python_origin="machine"
    )
    if option is None:
        return None
    candidate = option.verdict.candidate
    driver = f"update the NVIDIA driver to >= {option.driver} first, then " if option.driver else ""
    stack = (
        f"TensorFlow {option.version} (CUDA {candidate.cuda}, cuDNN {option.verdict.needs.cudnn or candidate.cudnn})"
    )
    return f"Or stay on native Windows with {stack}: {driver}{option_text(build.executable, option)}."


@TF_CPU_BUILD.checks
def tf_cpu_build(facts: Facts) -> Iterator[Finding]:
    """A CPU-only TensorFlow (tensorflow-cpu, or a build without CUDA) never lists a GPU."""
    if not facts.has_gpu:
        return
    for build in facts.builds_of("tensorflow"):
        if facts.os == "windows" and _after_last_windows_gpu_release(build):
            continue  # tf-windows-gpu-unsupported says it better
        if build.gpu_build is not False:
            continue
        exe, version = build.executable, build.parsed_version
        fix = (
            [f'"{exe}" -m pip install "tensorflow[and-cuda]=={build.version}"']
            if facts.os == "linux" and version and version >= Version("2.14")
            else [
                f'"{exe}" -m pip uninstall -y tensorflow-cpu tensorflow',
                f'"{exe}" -m pip install "tensorflow-gpu=={build.version}"'
                if version and version < Version("2.1")
                else f'"{exe}" -m pip install "tensorflow=={build.version}"',
            ]
        )
        yield TF_CPU_BUILD.finding(
            f"tensorflow {build.version} in {exe} was built without CUDA (tf.test.is_built_with_cuda() is False).",
            fix,
            {"tensorflow": build.version},
        )


def _compatible(toolkit_version: Optional[Version], cuda: Version) -> bool:
    """A toolkit serves a build when it ships the runtime the build loads: same major from CUDA 11 on, same major.minor
    before."""
    if toolkit_version is None:
        return False
    if cuda.release[0] >= 11:
        return toolkit_version.release[0] == cuda.release[0]
    return toolkit_version.release[:2] == cuda.release[:2]


# Where a build for another CUDA can be had instead, per framework (the toolkit route is the same for all).
OTHER_BUILDS = {
    "onnxruntime": "Or install the onnxruntime-gpu build for the CUDA you have (see "
    "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements).",
    "tensorflow": "Or install the TensorFlow release tested with the CUDA you have "
    "(https://www.tensorflow.org/install/source#gpu).",
}


def _toolkit_line(facts: Facts, cuda: Version, where: str) -> str:
    """The toolkit update the build was made for (the newest of its minor) and, when this driver cannot run it, the
    driver first."""
    minor = major_minor(cuda)
    full = newest_update(minor)
    archive = "https://developer.nvidia.com/cuda-toolkit-archive"
    if full is None:
        return f"Install the CUDA {minor} toolkit beside the others ({archive}) and put its {where}."
    row = knowledge.toolkit_release(Version(full))
    needed = getattr(row, driver_os(facts), None) if row else None
    installed = parse_version(facts.driver.version)
    first = (
        f"Update the NVIDIA driver to >= {needed} first, then install"
        if needed and installed is not None and installed < Version(needed)
        else "Install"
    )
    return f"{first} CUDA Toolkit {full} beside the others ({archive}) and put its {where}."


def _planned_toolkit_line(facts: Facts, build: FrameworkBuild, where: str) -> Optional[str]:
    """The toolkit and cuDNN releases the planner gives the installed release (ONNX Runtime 1.16: CUDA 11.8, not the
    11.0
    its runtime's soname says), and the driver first when this one cannot run that toolkit."""
    release = _public_text(build.version)
    option = first_option(facts, build.executable, pins(build.name, release), release)
    if option is None or option.verdict.candidate.cuda_from != "system" or not option.verdict.needs.toolkit:
        return None
    if option.verdict.candidate.cuda_major != build.cuda_major:
        return None
    first = f"Update the NVIDIA driver to >= {option.driver} first, then install" if option.driver else "Install"
    line = (
        f"{first} CUDA Toolkit {option.verdict.needs.toolkit} beside the others "
        f"(https://developer.nvidia.com/cuda-toolkit-archive) and put its {where}"
    )
    return line + _cudnn_clause(option) + "."


def _cudnn_clause(option: Option) -> str:
    needs = option.verdict.needs
    if not needs.cudnn:
        return ""
    how = (
        f"`cudnn-doctor install {needs.cudnn_archive}`"
        if needs.cudnn_archive
        else "https://developer.nvidia.com/rdp/cudnn-archive"
    )
    return f", with cuDNN {needs.cudnn} for it ({how})"


def _build_for_toolkit_line(facts: Facts, build: FrameworkBuild) -> Optional[str]:
    """The release of the framework the planner finds built for a toolkit already installed, with the cuDNN it takes."""
    toolkit = installed_toolkit(facts, None)
    option = first_option(facts, build.executable, [build.name], cuda=toolkit) if toolkit else None
    if option is None:
        return None
    line = f"Or keep CUDA {toolkit} and install {describe(option)}, built for it: "
    if option.driver:
        line += f"update the NVIDIA driver to >= {option.driver} first, then "
    line += f"`{pip_install(build.executable, [option.requirement], option.options)}`"
    return line + _cudnn_clause(option) + "."


@FRAMEWORK_CUDA_MISMATCH.checks
def framework_cuda_mismatch(facts: Facts) -> Iterator[Finding]:
    """Frameworks that load CUDA from the system need the runtime of the CUDA version they were built with (by file
    name)."""
    toolkits = facts.toolkits.toolkits
    if not toolkits:
        return  # cuda-toolkit-missing explains it
    for build, libraries in system_builds(facts):
        cuda, cudart, known = (
            build.cuda_version,
            libraries.cudart,
            build.cuda,
        )  # cuda_version is known's version: both or neither
        if cuda is None or cudart is None or known is None:
            continue
        found = lookup(facts, build, cudart)
        if found is None or found.winner is not None or build.sees_gpu:
            continue
        if any(_compatible(t.parsed_version, cuda) for t in toolkits) or found.elsewhere:
            continue
        present = ", ".join(f"CUDA {t.version}" for t in toolkits)
        where = "bin folder first on PATH" if facts.os == "windows" else "lib64 folder on LD_LIBRARY_PATH"
        fix = [_planned_toolkit_line(facts, build, where) or _toolkit_line(facts, cuda, where)]
        other = _build_for_toolkit_line(facts, build)
        fix += [other] if other else [OTHER_BUILDS[build.name]] if build.name in OTHER_BUILDS else []
        yield FRAMEWORK_CUDA_MISMATCH.finding(
            f"{build.name} {build.version} was built for CUDA {major_minor(cuda)} ({known.said}) and loads {cudart}, "
            f"but the machine has {present}, which does not provide it.",
            fix,
            {
                "framework": build.name,
                "built_for": str(cuda),
                "known_from": known.how,
                "evidence": known.source,
                "needs": cudart,
                "installed": [t.version for t in toolkits],
            },
            causes=(cuda_key(build.cuda_major), build_key(build)),
        )


@PYTHON_UNSUPPORTED.checks
def python_unsupported(facts: Facts) -> Iterator[Finding]:
    """Each framework release ships wheels for a range of Python versions only; outside it pip finds nothing or
    installs a broken build."""
    for build in facts.builds:
        python = facts.python(build.executable)
        if python is None or python.parsed_version is None or build.supported_python is None:
            continue
        allowed = VersionRange(build.supported_python.value)
        if python.parsed_version in allowed:
            continue
        yield PYTHON_UNSUPPORTED.finding(
            f"{build.name} {build.version} supports Python {allowed}, but {build.executable} is Python "
            f"{python.version}.",
            [
                _python_line(facts, build)
                or f"Create an environment with a supported Python, e.g. `conda create -n {build.name}-env "
                f"python={allowed.newest_minor() or '3'}`, and install {build.name} there."
            ],
            {
                "framework": build.name,
                "python": python.version,
                "supported": str(allowed),
                "source": build.supported_python.source,
            },
        )


def _python_line(facts: Facts, build: FrameworkBuild) -> Optional[str]:
    """The new environment the planner gives the installed release: its Python, and the build of it this driver runs."""
    release = _public_text(build.version)
    option = first_option(facts, build.executable, pins(build.name, release), release, python_origin="machine")
    if option is None or not option.stack.python_outside:
        return None
    return (
        f"Create an environment with a supported Python and install {describe(option)} there: "
        f"{option_text(build.executable, option, say_environment=False)}."
    )


def _gpu_frameworks_by_executable(facts: Facts) -> dict[str, dict[str, FrameworkBuild]]:
    """Per interpreter, its imported GPU builds by framework name: one pass over the builds."""
    grouped: dict[str, dict[str, FrameworkBuild]] = {}
    for build in facts.builds:
        if build.imported and build.uses_gpu:
            grouped.setdefault(build.executable, {})[build.name] = build
    return grouped


@INTERPRETER_MISMATCH.checks
def interpreter_mismatch(facts: Facts) -> Iterator[Finding]:
    """IDEs, Jupyter kernels and terminals often run a different environment than the one the framework was installed
    into."""
    current = facts.current_python
    if current is None:
        return
    gpu_builds = _gpu_frameworks_by_executable(
        facts
    )  # grouped once: each interpreter is compared with the current one only
    here = gpu_builds.get(current.executable, {})
    installed_here = {b.name for b in facts.builds if b.executable == current.executable}
    for python in facts.pythons:
        if python is current:
            continue
        for name, build in gpu_builds.get(python.executable, {}).items():
            if name in here:
                continue
            exe = python.executable
            yield INTERPRETER_MISMATCH.finding(
                f"{name} {build.version} with GPU support is installed in {exe}, but the current interpreter is "
                f"{current.executable}, "
                f"which has {'no ' + name if name not in installed_here else 'no working GPU build of ' + name}.",
                [
                    f'Run your code with "{exe}" (in the IDE: select that interpreter; in VS Code: "Python: '
                    f'Select Interpreter").',
                    f'For Jupyter, register it as a kernel: `"{exe}" -m pip install ipykernel` then `"{exe}" -m '
                    f"ipykernel install --user --name {name}-gpu`, and pick that kernel.",
                ],
                {"current": current.executable, "other": exe, "framework": name},
            )


@KNOWLEDGE_OUTDATED.checks
def knowledge_outdated(facts: Facts) -> Iterator[Finding]:
    """A release the package index had not published when the data was recorded: its CUDA builds, pins and Python range
    are unknown here, so the checks judge it by what its files say alone, and `plan` cannot offer it."""
    recorded = knowledge.table("published").reviewed
    for build in facts.builds:
        version = parse_version(build.version)
        newest = _newest_known(build.name)
        if version is None or newest is None or version.release <= newest.release:
            continue
        yield KNOWLEDGE_OUTDATED.finding(
            f"{build.name} {build.version} in {build.executable} is newer than the newest release the doctor's "
            f"data knows "
            f"({newest}, from the package index as recorded on {recorded}).",
            [
                "Update the data from the vendors' indexes (network): `cudnn-doctor kb update`",
                "Then check again: `cudnn-doctor check`",
            ],
            {"framework": build.name, "version": build.version, "newest_known": str(newest), "recorded": recorded},
        )


def _newest_known(name: str) -> Optional[Version]:
    """The newest release of a framework's recorded distributions (torch; onnxruntime-gpu; cupy-cuda12x, -13x …)."""
    found = [
        parse_version(v) for d in knowledge.framework(name).distributions for v in knowledge.framework_releases(d)[:1]
    ]
    known = [v for v in found if v is not None]
    return max(known) if known else None
