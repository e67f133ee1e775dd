"""Driver and GPU: is there a driver, is it new enough, can the builds run on this GPU."""

from __future__ import annotations

import re
from typing import Iterator, Optional

from packaging.version import InvalidVersion, Version

from cudnn_doctor import knowledge
from cudnn_doctor.checks._driver_libraries import DRIVER_STATE, driver_mismatch, gpu_withheld
from cudnn_doctor.checks._plan import (
    describe,
    driver_source,
    option_text,
    runnable_now,
    toolkit_now,
)
from cudnn_doctor.checks.gpu_arch import supported_by_arch_list
from cudnn_doctor.checks.rules import (
    DRIVER_LIBRARY_MISMATCH,
    DRIVER_TOO_OLD,
    GPU_NOT_PASSED_TO_CONTAINER,
    NO_NVIDIA_GPU,
    WSL_LINUX_DRIVER_INSTALLED,
)
from cudnn_doctor.facts import SMI_NOT_UNDERSTOOD, Facts, FrameworkBuild
from cudnn_doctor.findings import Finding
from cudnn_doctor.paths import PathRules
from cudnn_doctor.record import Record
from cudnn_doctor.versions import major_minor, parse_version

DRIVER = "driver"  # the cause key of everything a newer driver fixes


@NO_NVIDIA_GPU.checks
def no_nvidia_gpu(facts: Facts) -> Iterator[Finding]:
    """Without a working driver nothing runs on a GPU; every framework silently falls back to the CPU."""
    if facts.driver.present or any(b.sees_gpu for b in facts.builds):
        return
    if facts.wsl:
        fix = [
            "Install the NVIDIA driver on Windows (not inside WSL); WSL2 gets /usr/lib/wsl/lib/libcuda.so from it.",
            "Then run `wsl --shutdown` in Windows and reopen the WSL terminal.",
        ]
    elif facts.os == "windows":
        fix = [
            "Install the current NVIDIA driver for your GPU from https://www.nvidia.com/Download/index.aspx and "
            "reboot.",
            "Check with `nvidia-smi` in a new terminal.",
        ]
    else:
        fix = [
            f"Install the NVIDIA driver ({driver_source(facts)}), then reboot.",
            "In a container, start it with the GPU passed through: add `--gpus all` to the `docker run` command "
            "that starts it (the host needs the NVIDIA Container Toolkit).",
            "Check with `nvidia-smi`.",
        ]
    if (facts.driver.smi_error or "").startswith(SMI_NOT_UNDERSTOOD):
        locate = "where nvidia-smi" if facts.os == "windows" else "command -v nvidia-smi"
        answered = (
            f"If it does not, find which program answered (`{locate}`): a wrapper or stub earlier on PATH, "
            f"or a broken driver install."
        )
        fix = [f'Run `nvidia-smi` yourself: it should print a table with "Driver Version". {answered}', *fix]
    yield NO_NVIDIA_GPU.finding(
        f"NVML could not be loaded and {(facts.driver.smi_error or 'nvidia-smi failed').rstrip('.')}.",
        fix,
        {"nvml": None, "nvidia_smi": facts.driver.smi_error},
        causes=(DRIVER_STATE if driver_mismatch(facts) or gpu_withheld(facts) else None,),
    )


@DRIVER_LIBRARY_MISMATCH.checks
def driver_library_mismatch(facts: Facts) -> Iterator[Finding]:
    """A driver upgrade replaces the libraries at once, but the running kernel keeps the old module until a reboot:
    NVML, nvidia-smi and CUDA all refuse to start."""
    if not driver_mismatch(facts):
        return
    state = facts.driver_state
    libraries = state.libraries
    new = sorted({lib.version for lib in libraries if lib.version != state.kernel_module}) or (
        [state.nvml_library] if state.nvml_library else []
    )
    if state.kernel_module:
        detail = f"The loaded kernel module is {state.kernel_module} (/proc/driver/nvidia/version)"
    else:
        detail = "The loaded kernel module's release was not read (`cat /proc/driver/nvidia/version` shows it)"
    if libraries:
        detail += f"; the driver's libraries are {', '.join(f'{lib.version} ({lib.path})' for lib in libraries)}."
    elif state.nvml_library:
        detail += f"; the NVML library is {state.nvml_library}."
    else:
        detail += "."
    if state.nvml_mismatch:
        detail += f' nvidia-smi: "{state.nvml_mismatch}".'
    detail += (
        " The libraries were upgraded (a package update, often unattended) while the running kernel kept the old "
        "module:"
        " nothing can use the GPU until the module of the same release is loaded."
    )
    release = new[0] if len(new) == 1 else "the installed release"
    branch = release.split(".")[0] if release[:1].isdigit() else "<branch>"
    fix = [
        f"Reboot: the kernel then loads the nvidia module of {release}, the libraries' release.",
        "Or, without a reboot: stop every program using the GPU (`sudo lsof /dev/nvidia*`; `sudo systemctl stop "
        "nvidia-persistenced`; "
        "on a desktop the display manager: `sudo systemctl isolate multi-user.target`), then reload the modules: "
        f"`sudo modprobe -r nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia nvidia_uvm`; "
        f"`cat /proc/driver/nvidia/version` then says {release} and `nvidia-smi` works.",
        f"If it is still the old release after a reboot, the module of {release} was not built for this kernel: "
        f"check `dkms status`, reinstall the driver package (`sudo apt-get install --reinstall "
        f"nvidia-driver-{branch}` on Ubuntu) and reboot.",
        "To keep an unattended upgrade from doing it again, hold the driver packages (`sudo apt-mark hold` them) "
        "or add them to "
        "Unattended-Upgrade::Package-Blacklist in /etc/apt/apt.conf.d/50unattended-upgrades.",
    ]
    if state.container:
        fix.insert(
            0,
            f"This is a container ({state.container}): reboot or reload on the host. The image must not carry "
            f"driver libraries "
            "of its own; the NVIDIA Container Toolkit mounts the host's (`docker run --gpus all`).",
        )
    yield DRIVER_LIBRARY_MISMATCH.finding(
        detail,
        fix,
        {
            "kernel_module": state.kernel_module,
            "libraries": {lib.path: lib.version for lib in libraries},
            "nvml": state.nvml_mismatch,
            "nvml_library": state.nvml_library,
        },
        causes=(DRIVER_STATE,),
    )


@GPU_NOT_PASSED_TO_CONTAINER.checks
def gpu_not_passed_to_container(facts: Facts) -> Iterator[Finding]:
    """The driver lives on the host: a container reaches the GPU only when started with it, and then the NVIDIA
    Container Toolkit mounts the driver's libraries and /dev/nvidia* into it."""
    if not gpu_withheld(facts):
        return
    state = facts.driver_state
    detail = (
        f"This is a container ({state.container}) in which neither the NVIDIA driver's libraries (libcuda.so.1, "
        f"libnvidia-ml.so.1) "
        "nor a GPU device (/dev/nvidiactl, /dev/nvidia0) is visible: it was started without GPU access."
    )
    if state.kernel_module:
        detail += (
            f" The host's NVIDIA kernel module {state.kernel_module} is loaded "
            f"(/proc/driver/nvidia/version): the host has a driver."
        )
    else:
        detail += " No NVIDIA kernel module is visible either: check the host with `nvidia-smi` there too."
    software = [f"{b.name} {b.version}" for b in facts.builds if b.uses_gpu] + [
        f"CUDA {t.version}" for t in facts.toolkits.toolkits if t.version
    ]
    if software:
        detail += f" The CUDA software inside ({', '.join(software)}) is not what is missing."
    yield GPU_NOT_PASSED_TO_CONTAINER.finding(
        detail,
        [
            "Start the container with the GPU: add `--gpus all` to the `docker run` command that starts it "
            "(Podman: `--device nvidia.com/gpu=all`); in Docker Compose, "
            "under the service: `deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all, "
            "capabilities: [gpu]}]}}}`; "
            "a GitHub Actions container job: `options: --gpus all`.",
            'If Docker answers `could not select device driver "" with capabilities: [[gpu]]`, install the NVIDIA '
            "Container Toolkit on the host: "
            "`sudo apt-get install -y nvidia-container-toolkit && sudo nvidia-ctk runtime configure "
            "--runtime=docker && sudo systemctl restart docker`.",
            "On Kubernetes, request the GPU in the pod's container spec: `resources: {limits: {nvidia.com/gpu: 1}}` "
            "(the node needs the NVIDIA device plugin or the GPU Operator).",
            "Do not install an NVIDIA driver inside the container: the host's is mounted in. Check with "
            "`nvidia-smi` in the new container.",
        ],
        {"container": state.container, "kernel_module": state.kernel_module, "devices": list(state.devices)},
        causes=(DRIVER_STATE,),
    )


def _driver_os(facts: Facts) -> str:
    """The driver column that applies: under WSL2 the driver is the Windows one."""
    return "windows" if facts.os == "windows" or facts.wsl else "linux"


class _Need(Record):
    """One thing that needs the driver: who, the CUDA it was built with, and the rule that applies to it."""

    who: str
    cuda: Version
    rule: knowledge.DriverRule


def _requirements(facts: Facts, os_name: str) -> Iterator[_Need]:
    """Everything that needs the driver, each with the one driver rule `plan` applies too (`knowledge.driver_rule`):
    a toolkit with nvcc compiles (its own minimum); a framework build runs (minor-version compatibility), unless the
    GPU has only PTX from it to run (its own minimum)."""
    for toolkit in facts.toolkits.toolkits:
        version = toolkit.parsed_version
        rule = (
            knowledge.driver_rule(version, os_name, knowledge.COMPILE if toolkit.has_nvcc else knowledge.RUN)
            if version
            else None
        )
        if rule is not None and version is not None:
            yield _Need(f"CUDA toolkit {toolkit.version} at {toolkit.root}", version, rule)
    for build in facts.builds:
        cuda = build.cuda_version
        if cuda is None or build.gpu_build is False:
            continue
        jit = _ptx_only(facts, build, cuda)
        rule = knowledge.driver_rule(cuda, os_name, knowledge.PTX_JIT if jit else knowledge.RUN)
        if rule is not None:
            yield _Need(_who(build), cuda, rule._replace(why=f"{rule.why}; {jit}") if jit else rule)
    yield from _package_requirements(facts, os_name)


def _package_requirements(facts: Facts, os_name: str) -> Iterator[_Need]:
    """The native code of packages outside the frameworks (issue 29): the CUDA major its CUDA libraries belong to
    (libcublas.so.12
    is CUDA 12, from the nvidia-* wheel that alone ships that name) runs under minor-version compatibility, once per
    package."""
    rules = PathRules(facts.os)
    for resolution in facts.resolutions:
        if resolution.package is None:
            continue
        majors: dict[int, str] = {}
        for step in resolution.steps:
            if step.how == "root":
                continue
            shipped = {
                row.cuda for row in knowledge.wheels_shipping(rules.basename(step.winner or step.name), facts.os)
            }
            if len(shipped) == 1:
                majors.setdefault(
                    next(iter(shipped)),
                    f"{rules.basename(step.requester)} loads {rules.basename(step.winner or step.name)}",
                )
        if not majors:
            continue
        major = max(majors)
        rule = knowledge.driver_rule(Version(f"{major}.0"), os_name, knowledge.RUN)
        if rule is not None:
            yield _Need(
                f"{resolution.package} (a package whose {majors[major]}, of CUDA {major}) in {resolution.executable}",
                Version(f"{major}.0"),
                rule,
            )


def _ptx_only(facts: Facts, build: FrameworkBuild, cuda: Version) -> Optional[str]:
    """Why a GPU can run `build` only by JIT-compiling its PTX, None when it has native code for every GPU (or none can
    be told): its arch list has PTX (compute_XY) and no SASS (sm_XY) for the GPU, or without an arch list, CUDA `cuda`
    builds no native code for the GPU at all."""
    for gpu in facts.driver.gpus:
        if not gpu.compute_capability:
            continue
        cc = Version(gpu.compute_capability)
        name = f"{gpu.name} (sm_{gpu.compute_capability.replace('.', '')})"
        if build.arch_list:
            sass = [a for a in build.arch_list if a.startswith("sm_")]
            if not supported_by_arch_list(cc, sass) and supported_by_arch_list(cc, list(build.arch_list)):
                return (
                    f"{build.name}'s kernels ({' '.join(build.arch_list)}) have no native code for {name}, "
                    f"only PTX the driver JIT-compiles"
                )
        elif len(cuda.release) > 1 and knowledge.cuda_runs_on_compute_capability(cuda, gpu.compute_capability) is False:
            return (
                f"CUDA {major_minor(cuda)} builds no native code for {name}, so what runs there is PTX the "
                f"driver JIT-compiles"
            )
    return None


@DRIVER_TOO_OLD.checks
def driver_too_old(facts: Facts) -> Iterator[Finding]:
    """Each CUDA runtime needs a minimum driver; from CUDA 11 on, any driver of the same major family will do, except
    for
    PTX JIT and compiling, where the release's own minimum applies (`knowledge.driver_rule`, the rule `plan` uses)."""
    driver = facts.driver
    if not driver.present:
        return
    os_name = _driver_os(facts)
    installed = parse_version(driver.version)
    unmet = []
    for need in _requirements(facts, os_name):
        cuda, wanted = need.cuda, need.rule.need
        says = driver.cuda_version is not None and driver.cuda_version.release[:2] >= (cuda.release + (0,))[:2]
        if installed is not None:
            # a release's own minimum is met too by a driver that itself reports that CUDA (570.124.04 reports 12.8)
            too_old = installed < wanted.driver and not (need.rule.rule == knowledge.TOOLKIT_RELEASE and says)
        elif driver.cuda_version is not None:
            minor_ok = need.rule.rule == knowledge.MINOR_VERSION_COMPATIBILITY
            too_old = driver.cuda_version.release[0] < cuda.release[0] if minor_ok else driver.cuda_version < cuda
        else:
            continue
        if too_old:
            unmet.append(need)
    said = [b for b in facts.builds if b.driver_complaint]
    if not unmet and not said:
        return
    lines = [
        f"The driver is {driver.version or 'unknown'} (supports CUDA up to {driver.cuda or 'unknown'}, from "
        f"{driver.cuda_source or driver.source})."
    ]
    for need in unmet:
        lines.append(f"{need.who} needs driver >= {need.rule.need.driver_text} ({need.rule.explain()}).")
    for build in said:
        lines.append(f'{build.name} itself reports: "{build.driver_complaint}"')
    wanted_text = max(((n.rule.need.driver, n.rule.need.driver_text) for n in unmet), default=(None, None))[
        1
    ]  # printed as NVIDIA writes it
    where = driver_source(facts)
    target = f"an NVIDIA driver >= {wanted_text}" if wanted_text else "a current NVIDIA driver"
    fix = [f"Install {target} ({where}), then reboot and check `nvidia-smi`."]
    kept = _keep_driver_lines(facts, _unmet_builds(facts, unmet), any(n.who.startswith("CUDA toolkit") for n in unmet))
    if kept:
        fix += kept
    elif driver.cuda and driver.cuda_version is not None:
        fix.append(
            f"Or install builds made for {_runnable(driver.cuda_version, installed, os_name)}, which this driver runs."
        )
    yield DRIVER_TOO_OLD.finding(
        " ".join(lines),
        fix,
        {
            "driver": driver.version,
            "driver_cuda": driver.cuda,
            "needs": [
                {
                    "by": n.who,
                    "cuda": str(n.cuda),
                    "driver": n.rule.need.driver_text,
                    "source": n.rule.need.source,
                    "rule": n.rule.rule,
                    "why": n.rule.why,
                    "exact": n.rule.exact.driver_text if n.rule.exact else None,
                    "floor": n.rule.floor.driver_text if n.rule.floor else None,
                }
                for n in unmet
            ],
        },
        causes=(DRIVER,),
    )


def _unmet_builds(facts: Facts, unmet: list[_Need]) -> list[FrameworkBuild]:
    """The framework builds among what the driver is too old for (the toolkits are told apart by `who`)."""
    whos = {need.who for need in unmet}
    return [b for b in facts.builds if _who(b) in whos]


def _who(build: FrameworkBuild) -> str:
    cuda, known = build.cuda_version, build.cuda  # cuda_version is known's version: both or neither
    return (
        f"{build.name} {build.version} (built for CUDA {major_minor(cuda)}, {known.said}) in {build.executable}"
        if cuda and known
        else ""
    )


def _keep_driver_lines(facts: Facts, builds: list[FrameworkBuild], toolkit: bool) -> list[str]:
    """For who would rather keep this driver: the build of each framework the planner says it runs (the installed
    release where one of its builds does), and the newest toolkit it runs. Empty when the planner cannot say."""
    lines = []
    driver = facts.driver.version
    for build in builds:
        option = runnable_now(facts, build.executable, build.name, build.version)
        if option is None:
            continue
        same = option.version == (build.version or "").split("+")[0]
        again = f'`"{build.executable}" -m pip uninstall -y {_distribution(build)}`, then ' if same else ""
        # the same release for the same CUDA where the installed build has only PTX for the GPU: the published one has
        # native code
        ptx = (
            same
            and build.cuda_version is not None
            and major_minor(build.cuda_version) == option.verdict.candidate.cuda
            and _ptx_only(facts, build, build.cuda_version)
        )
        why = " (the published build, with native code for the GPU)" if ptx else ""
        lines.append(
            f"Or keep the driver {driver}: {describe(option)}{why} runs on it: "
            f"{again}{option_text(build.executable, option)}."
        )
    newest = toolkit_now(facts) if toolkit else None
    if newest:
        lines.append(
            f"Or keep the driver {driver} and build with CUDA Toolkit {newest}, the newest it runs "
            f"(https://developer.nvidia.com/cuda-toolkit-archive)."
        )
    return lines


def _distribution(build: FrameworkBuild) -> str:
    """What pip uninstalls for a framework, so that the same release of another build is not taken as installed."""
    return {
        "tensorflow": "tensorflow",
        "onnxruntime": "onnxruntime-gpu",
        "paddle": "paddlepaddle-gpu",
        "jax": "jax jaxlib",
    }.get(build.name, build.name)


def _runnable(driver_cuda: Version, installed: Optional[Version], os_name: str) -> str:
    """What this driver runs: every CUDA X.y of its major when it meets that major's minor-version floor, else up to
    its own version."""
    major = driver_cuda.release[0]
    rule = knowledge.driver_rule(Version(str(major)), os_name)
    floor = rule.floor if rule is not None else None
    if installed is not None and floor is not None and installed >= floor.driver:
        return f"CUDA {major}.x (any minor: minor-version compatibility) or older"
    return f"CUDA {major_minor(driver_cuda)} or older"


def _wsl_toolkit_package(facts: Facts) -> str:
    """NVIDIA's apt package of the toolkit alone (no driver): for the toolkit installed in WSL, else the newest CUDA the
    Windows driver runs (`cuda-toolkit-12-4`)."""
    versions = [t.parsed_version for t in facts.toolkits.toolkits if t.parsed_version is not None]
    if versions:
        release = max(versions).release
    else:
        try:
            release = Version(facts.driver.cuda or "").release
        except InvalidVersion:
            return (
                "the `cuda-toolkit` package of your CUDA release (the toolkit alone, `apt-cache search "
                "cuda-toolkit-` lists them)"
            )
    return f"`cuda-toolkit-{release[0]}-{release[1] if len(release) > 1 else 0}`"


@WSL_LINUX_DRIVER_INSTALLED.checks
def wsl_linux_driver(facts: Facts) -> Iterator[Finding]:
    """Under WSL2 the GPU is reached only through the Windows driver's libcuda in /usr/lib/wsl/lib; a Linux libcuda
    found first breaks CUDA (CUDA_ERROR_NO_DEVICE)."""
    if not facts.wsl or not facts.linux_driver_in_wsl:
        return
    files = ", ".join(facts.linux_driver_in_wsl)
    real = next(
        (f for f in facts.linux_driver_in_wsl if re.search(r"libcuda\.so\.\d{3}", f)), facts.linux_driver_in_wsl[0]
    )
    pulled_in = (
        f"often pulled in by the `cuda` or `cuda-drivers` metapackage; install {_wsl_toolkit_package(facts)} instead"
    )
    dpkg = [o.package for o in facts.linux_driver_packages if o.manager == "dpkg"]
    rpm = [o.package for o in facts.linux_driver_packages if o.manager == "rpm"]
    if dpkg or rpm:
        remove = (
            [
                f"Remove the package{'s' if len(dpkg) > 1 else ''} that installed them: `sudo apt-get remove "
                f"--purge {' '.join(dpkg)}` ({pulled_in})."
            ]
            if dpkg
            else []
        )
        remove += (
            [f"Remove the package{'s' if len(rpm) > 1 else ''} that installed them: `sudo dnf remove {' '.join(rpm)}`."]
            if rpm
            else []
        )
    else:
        remove = [
            f"Find the package that installed them: `dpkg -S {real}`.",
            f"Remove it: `sudo apt-get remove --purge $(dpkg -S {real} | cut -d: -f1)` ({pulled_in}).",
        ]
    yield WSL_LINUX_DRIVER_INSTALLED.finding(
        f"Linux driver libraries inside WSL: {files}. They shadow /usr/lib/wsl/lib/libcuda.so.1, the only driver "
        f"that reaches the GPU under WSL2.",
        [*remove, "Run `sudo ldconfig`, then check that `ldconfig -p | grep libcuda` lists only /usr/lib/wsl/lib."],
        {"files": list(facts.linux_driver_in_wsl), "packages": [o.package for o in facts.linux_driver_packages]},
    )
