"""Frameworks and Python: CPU builds, builds that cannot reach the GPU, builds for the wrong CUDA, wrong interpreter."""

from __future__ import annotations

from typing import Iterator, Optional

from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.builds import Build, builds, is_gpu_build, sees_gpu
from cudnn_doctor.checks._libraries import lookup, system_builds
from cudnn_doctor.checks.registry import finding, rule
from cudnn_doctor.facts import Facts, PythonEnv
from cudnn_doctor.findings import Finding, Severity
from cudnn_doctor.versions import major_minor


def torch_install_lines(facts: Facts, build: Build) -> list[str]:
    """The exact commands that replace `build` by a CUDA build of the same release that the driver runs."""
    exe = build.python.executable
    version = build.version
    row = knowledge.torch_release(version) if version else None
    driver_cuda = facts.driver.cuda_version
    if row is None:
        return [f'"{exe}" -m pip uninstall -y torch', f'"{exe}" -m pip install torch --index-url {knowledge.torch_index_url(Version("12.6"))}  (pick the CUDA variant your driver supports on https://pytorch.org/get-started/locally/)']
    usable = [Version(c) for c in row.cuda if driver_cuda is None or Version(c) <= driver_cuda]
    if not usable:
        oldest = min(Version(c) for c in row.cuda)
        return [f"torch {row.version} has no build for CUDA {facts.driver.cuda} or older; update the NVIDIA driver to one that supports CUDA {major_minor(oldest)}, then:",
                f'"{exe}" -m pip install --force-reinstall "torch=={version}" --index-url {knowledge.torch_index_url(oldest)}']
    cuda = max(usable)
    companions = [f"{name}=={text.split('+')[0]}" for name, text in sorted(build.python.packages.items())
                  if name in ("torchvision", "torchaudio") and "+" in text]
    packages = " ".join([f"torch=={build.version_text.split('+')[0]}", *companions])
    return [f'"{exe}" -m pip uninstall -y torch {" ".join(c.split("==")[0] for c in companions)}'.rstrip(),
            f'"{exe}" -m pip install {packages} --index-url {knowledge.torch_index_url(cuda)}']


@rule("torch-cpu-build", Severity.ERROR, "PyTorch is a CPU-only build")
def torch_cpu_build(facts: Facts) -> Iterator[Finding]:
    """A `+cpu` wheel (or any build with torch.version.cuda = None) never uses the GPU, whatever the driver."""
    if not facts.has_gpu:
        return
    for build in builds(facts, "torch"):
        if is_gpu_build(build, facts.os) is not False:
            continue
        yield finding("torch-cpu-build",
                      f"torch {build.version_text} in {build.python.executable} is a CPU-only build (torch.version.cuda is None); "
                      f"the driver {facts.driver.version} supports CUDA {facts.driver.cuda}.",
                      torch_install_lines(facts, build), {"python": build.python.executable, "torch": build.version_text})


@rule("torch-cuda-unavailable", Severity.ERROR, "PyTorch is a CUDA build but cannot use the GPU",
      explained_by=("no-nvidia-gpu", "driver-too-old", "gpu-arch-unsupported", "wsl-linux-driver-installed", "env-var-ineffective"))
def torch_cuda_unavailable(facts: Facts) -> Iterator[Finding]:
    """torch.cuda.is_available() is False although torch was built with CUDA: a driver, device or environment problem."""
    for build in builds(facts, "torch"):
        report = build.report
        if not build.imported or report.get("cuda") is None or report.get("cuda_available") is not False:
            continue
        detail = f"torch {build.version_text} (CUDA {report['cuda']}) in {build.python.executable}: torch.cuda.is_available() is False."
        hidden = facts.environment.variables.get("CUDA_VISIBLE_DEVICES")
        if hidden is not None and hidden.strip() in ("", "-1", "none", "NoDevFiles"):
            detail += f" CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU."
        if report.get("warning"):
            detail += f" torch warns: {report['warning'].strip().splitlines()[0][:300]}"
        yield finding("torch-cuda-unavailable", detail, ["Fix the findings this one links to, then check with "
                      f'`"{build.python.executable}" -c "import torch; print(torch.cuda.is_available())"`.'],
                      {"python": build.python.executable, "torch": build.version_text})


@rule("tf-windows-gpu-unsupported", Severity.ERROR, "TensorFlow 2.11+ has no GPU support on native Windows")
def tf_windows_gpu_unsupported(facts: Facts) -> Iterator[Finding]:
    """TensorFlow 2.10 was the last release built with CUDA for native Windows; newer ones run on the CPU there."""
    if facts.os != "windows":
        return
    last, source = knowledge.tensorflow_windows_gpu_last()
    for build in builds(facts, "tensorflow"):
        version = build.version
        if version is None or version.release[:2] <= last.release[:2]:
            continue
        row = knowledge.tensorflow_build(Version("2.10"), "windows")
        exe = build.python.executable
        python_note = ""
        if row and build.python.parsed_version and build.python.parsed_version not in row.python:
            python_note = f" (TensorFlow 2.10 needs Python {row.python}; create such an environment first: `conda create -n tf210 python={row.python.newest_minor()}`)"
        yield finding("tf-windows-gpu-unsupported",
                      f"tensorflow {build.version_text} in {exe} runs on native Windows, where TensorFlow after {last} has no GPU build.",
                      ["Use WSL2: `wsl --install`, then inside Ubuntu `pip install \"tensorflow[and-cuda]\"` (the Windows NVIDIA driver serves WSL2).",
                       f"Or stay on native Windows with TensorFlow 2.10{python_note}: `\"{exe}\" -m pip install \"tensorflow<2.11\"`, "
                       f"plus CUDA {row.cuda if row else '11.2'} and cuDNN {row.cudnn if row else '8.1'} on PATH."],
                      {"tensorflow": build.version_text, "source": source})


@rule("tf-cpu-build", Severity.ERROR, "TensorFlow was built without CUDA")
def tf_cpu_build(facts: Facts) -> Iterator[Finding]:
    """A CPU-only TensorFlow (tensorflow-cpu, or a build without CUDA) never lists a GPU."""
    if not facts.has_gpu:
        return
    last, _ = knowledge.tensorflow_windows_gpu_last()
    for build in builds(facts, "tensorflow"):
        version = build.version
        if facts.os == "windows" and version is not None and version.release[:2] > last.release[:2]:
            continue  # tf-windows-gpu-unsupported says it better
        if is_gpu_build(build, facts.os) is not False:
            continue
        exe = build.python.executable
        fix = ([f'"{exe}" -m pip install "tensorflow[and-cuda]=={build.version_text}"'] if facts.os == "linux" and version and version >= Version("2.14")
               else [f'"{exe}" -m pip uninstall -y tensorflow-cpu tensorflow', f'"{exe}" -m pip install "tensorflow-gpu=={build.version_text}"'
                     if version and version < Version("2.1") else f'"{exe}" -m pip install "tensorflow=={build.version_text}"'])
        yield finding("tf-cpu-build", f"tensorflow {build.version_text} in {exe} was built without CUDA (tf.test.is_built_with_cuda() is False).",
                      fix, {"tensorflow": build.version_text})


def _compatible(toolkit_version: Optional[Version], cuda: Version) -> bool:
    """A toolkit serves a build when it ships the runtime the build loads: same major from CUDA 11 on, same major.minor before."""
    if toolkit_version is None:
        return False
    if cuda.release[0] >= 11:
        return toolkit_version.release[0] == cuda.release[0]
    return toolkit_version.release[:2] == cuda.release[:2]


@rule("framework-cuda-mismatch", Severity.ERROR, "The system CUDA does not match what the framework was built for")
def framework_cuda_mismatch(facts: Facts) -> Iterator[Finding]:
    """Frameworks that load CUDA from the system need the runtime of the CUDA version they were built with (by file name)."""
    for needs in system_builds(facts):
        build = needs.build
        if needs.cuda is None or needs.cudart is None:
            continue
        found = lookup(facts, build, needs.cudart)
        if found is None or found.winner is not None or sees_gpu(build):
            continue
        toolkits = facts.toolkits.toolkits
        if any(_compatible(t.parsed_version, needs.cuda) for t in toolkits) or found.elsewhere:
            continue
        present = ", ".join(f"CUDA {t.version}" for t in toolkits) or "no CUDA toolkit"
        if not toolkits:
            continue  # cuda-toolkit-missing explains it
        yield finding("framework-cuda-mismatch",
                      f"{build.name} {build.version_text} was built for CUDA {major_minor(needs.cuda)} and loads {needs.cudart}, "
                      f"but the machine has {present}, which does not provide it.",
                      _cuda_fix(facts, build, needs.cuda),
                      {"framework": build.name, "built_for": str(needs.cuda), "needs": needs.cudart, "installed": [t.version for t in toolkits]})


def _cuda_fix(facts: Facts, build: Build, cuda: Version) -> list[str]:
    where = "bin folder first on PATH" if facts.os == "windows" else "lib64 folder on LD_LIBRARY_PATH"
    fix = [f"Install the CUDA {major_minor(cuda)} toolkit beside the others (https://developer.nvidia.com/cuda-toolkit-archive) and put its {where}."]
    if build.name == "onnxruntime":
        fix.append('Or install the onnxruntime-gpu build for the CUDA you have (see https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements).')
    elif build.name == "tensorflow":
        fix.append("Or install the TensorFlow release tested with the CUDA you have (https://www.tensorflow.org/install/source#gpu).")
    return fix


@rule("python-unsupported", Severity.ERROR, "The Python version is outside what the framework release supports")
def python_unsupported(facts: Facts) -> Iterator[Finding]:
    """Each framework release ships wheels for a range of Python versions only; outside it pip finds nothing or installs a broken build."""
    for build in builds(facts):
        python_version, version = build.python.parsed_version, build.version
        if python_version is None or version is None:
            continue
        row = None
        if build.name == "torch":
            row = knowledge.torch_release(version)
        elif build.name == "tensorflow":
            row = knowledge.tensorflow_build(version, facts.os) or knowledge.tensorflow_build(version, "linux")
        if row is None:
            continue
        if python_version in row.python:
            continue
        yield finding("python-unsupported",
                      f"{build.name} {build.version_text} supports Python {row.python}, but {build.python.executable} is Python {build.python.version}.",
                      [f"Create an environment with a supported Python, e.g. `conda create -n {build.name}-env python={row.python.newest_minor()}`, and install {build.name} there."],
                      {"framework": build.name, "python": build.python.version, "supported": str(row.python), "source": row.source})


def _gpu_frameworks(python: PythonEnv, facts: Facts) -> dict[str, Build]:
    return {b.name: b for b in builds(facts) if b.python is python and b.imported and (is_gpu_build(b, facts.os) or sees_gpu(b))}


@rule("interpreter-mismatch", Severity.WARNING, "The GPU framework is installed in another interpreter than the one in use")
def interpreter_mismatch(facts: Facts) -> Iterator[Finding]:
    """IDEs, Jupyter kernels and terminals often run a different environment than the one the framework was installed into."""
    current = facts.current_python
    if current is None:
        return
    here = _gpu_frameworks(current, facts)
    for python in facts.pythons:
        if python is current:
            continue
        for name, build in _gpu_frameworks(python, facts).items():
            if name in here:
                continue
            exe = python.executable
            yield finding("interpreter-mismatch",
                          f"{name} {build.version_text} with GPU support is installed in {exe}, but the current interpreter is {current.executable}, "
                          f"which has {'no ' + name if name not in {b.name for b in builds(facts) if b.python is current} else 'no working GPU build of ' + name}.",
                          [f'Run your code with "{exe}" (in the IDE: select that interpreter; in VS Code: "Python: Select Interpreter").',
                           f'For Jupyter, register it as a kernel: `"{exe}" -m pip install ipykernel` then `"{exe}" -m ipykernel install --user --name {name}-gpu`, and pick that kernel.'],
                          {"current": current.executable, "other": exe, "framework": name})
