"""Fixes that name versions come from the planner: never a build the driver cannot run, never a (release, build)
the knowledge lacks. Each case is one where the fix before the planner was wrong or vague."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from cudnn_doctor import knowledge
from cudnn_doctor.system.fixture_format import load_fixture
from tests.conftest import GALLERY, LINUX_BASE, SHARED_FIXTURES, WINDOWS_BASE, findings_of, machine, run

WIN_EXE = "C:\\Users\\dev\\env\\python.exe"
LINUX_EXE = "/home/dev/.venv/bin/python"


def python(exe, version, packages, frameworks):
    return {
        "executable": exe,
        "version": version,
        "current": True,
        "kind": "venv",
        "packages": packages,
        "frameworks": frameworks,
    }


def nvml(driver, cuda, gpu="NVIDIA GeForce RTX 3060", cc="8.6"):
    return {"driver_version": driver, "cuda_driver_version": cuda, "gpus": [{"name": gpu, "compute_capability": cc}]}


def torch_report(version, cuda=None):
    tag = f"+cu{cuda.replace('.', '')}" if cuda else "+cpu"
    return {
        "torch": {
            "version": f"{version}{tag}",
            "cuda": cuda,
            "cuda_available": bool(cuda),
            "device_count": int(bool(cuda)),
            "arch_list": [],
        }
    }


def fix_of(document, finding_id):
    found = findings_of(document, finding_id)
    assert found, f"no {finding_id}"
    return list(found[0].fix)


def index_variants(lines):
    """The CUDA variants the fix's pip lines install from PyTorch's index: {"cu113", ...}."""
    return set(re.findall(r"download\.pytorch\.org/whl/(cu\d+)", "\n".join(lines)))


# torch-cpu-build -----------------------------------------------------------------------------------


def test_cpu_torch_on_an_old_windows_driver_never_gets_a_build_the_driver_cannot_run():
    """torch 2.13 CPU, Windows driver 472.12 (CUDA 11.4): 2.13's oldest build is cu126. The old fix proposed cu126 after
    "update the driver to one that supports CUDA 12.6"; the plan names the driver and the build that runs now."""
    packages = {"torch": "2.13.0+cpu"}
    document = machine(
        WINDOWS_BASE, nvml=nvml("472.12", 11040), pythons=[python(WIN_EXE, "3.10.11", packages, torch_report("2.13.0"))]
    )
    fix = fix_of(document, "torch-cpu-build")
    # The wheels bring their CUDA with native code for the RTX 3060 (sm_86): the shared driver rule (knowledge.driver_rule,
    # as in driver-too-old) is minor-version compatibility, so cu126 needs the 12.x floor (525 on Windows), not 12.6's own
    # 560.76, and 472.12 (>= 452.39, the 11.x floor) runs the newest 11.x build, 2.7.1's cu118, not 1.12.1's cu113.
    floor = knowledge.driver_rule(Version("12.6"), "windows").need.driver_text
    assert floor == "525"
    keep = [line for line in fix if "torch==2.13.0" in line]
    assert keep and all(f">= {floor} first" in line for line in keep), (
        fix
    )  # cu126 only after a driver update, and the update is exact
    now = [line for line in fix if line.startswith("Or keep the driver 472.12")]
    assert now and "torch==2.7.1 --index-url https://download.pytorch.org/whl/cu118" in now[0], fix
    assert not any("whl/cu126" in line for line in fix if f">= {floor} first" not in line)


def test_cpu_torch_on_linux_with_a_new_driver_takes_the_pypi_default():
    """Linux driver 580: where the newest build the driver runs is PyPI's own, the fix is a plain `pip install` (the old
    fix always named an index)."""
    # Under the shared driver rule (minor-version compatibility for wheels with native code) 580.65.06, the 13.x floor,
    # runs every 13.x build: 2.14's newest, cu132 (its own minimum 595.45.04 is not needed), is on PyTorch's index only.
    # 2.11's newest build is cu130, PyPI's own (pypi_cuda), so its line names no index.
    assert (
        knowledge.torch_release(Version("2.11")).pypi_cuda
        == "13.0"
        == max(knowledge.torch_release(Version("2.11")).cuda, key=Version)
    )
    packages = {"torch": "2.11.0+cpu", "torchvision": "0.26.0+cpu"}
    document = machine(
        LINUX_BASE,
        nvml=nvml("580.65.06", 13000),
        pythons=[python(LINUX_EXE, "3.12.3", packages, torch_report("2.11.0"))],
    )
    fix = fix_of(document, "torch-cpu-build")
    assert fix == [
        f'"{LINUX_EXE}" -m pip uninstall -y torch torchvision',
        f'"{LINUX_EXE}" -m pip install torch==2.11.0 torchvision==0.26.0',
    ], fix
    packages = {"torch": "2.14.0+cpu", "torchvision": "0.29.0+cpu"}
    document = machine(
        LINUX_BASE,
        nvml=nvml("580.65.06", 13000),
        pythons=[python(LINUX_EXE, "3.12.3", packages, torch_report("2.14.0"))],
    )
    fix = fix_of(document, "torch-cpu-build")
    assert fix[1].endswith("torch==2.14.0 torchvision==0.29.0 --index-url https://download.pytorch.org/whl/cu132"), fix


def test_cpu_torch_whose_python_has_no_cuda_wheel_on_this_driver_gets_a_new_environment():
    """torch 2.7 CPU on Python 3.12, Windows driver 451.82 (CUDA 11.0): no release with a build the driver runs has
    Python 3.12 wheels. The old fix proposed cu118 into the 3.12 interpreter; the plan says: driver, or a new environment."""
    # Under the shared driver rule 472.12 (the driver this case had) is past the 11.x floor (452.39 on Windows) and runs
    # 2.7's own cu118 build, which has cp312 wheels, so it no longer needs a new environment. 451.82 is CUDA 11.0.3's
    # own Windows minimum, below the floor: it runs CUDA 11.0 builds only (their own minimum applies), and 1.7.1's
    # cu110, the newest, has no Python 3.12 wheel.
    packages = {"torch": "2.7.0+cpu"}
    document = machine(
        WINDOWS_BASE, nvml=nvml("451.82", 11000), pythons=[python(WIN_EXE, "3.12.4", packages, torch_report("2.7.0"))]
    )
    fix = fix_of(document, "torch-cpu-build")
    keep = next(line for line in fix if "torch==2.7.0" in line)
    assert ">= 452.39 first" in keep and "whl/cu118" in keep, fix
    now = next(line for line in fix if line.startswith("Or keep the driver 451.82"))
    assert (
        "new environment (Python 3.12" in now
        and "conda create -n gpu python=3.9" in now
        and "torch==1.7.1+cu110" in now
    ), fix


# driver-too-old ------------------------------------------------------------------------------------


def test_driver_too_old_names_the_build_the_current_driver_runs():
    """torch 2.3.1 cu121 on Linux driver 470: the old fix said "Or install builds made for CUDA 11.4 or older", naming none."""
    packages = {"torch": "2.3.1+cu121"}
    document = machine(
        LINUX_BASE,
        nvml=nvml("470.223.02", 11040),
        pythons=[python(LINUX_EXE, "3.10.12", packages, torch_report("2.3.1", "12.1"))],
    )
    fix = fix_of(document, "driver-too-old")
    assert "NVIDIA driver >= 525" in fix[0]  # what runs the installed build (minor-version compatibility for CUDA 12.1)
    now = [line for line in fix if line.startswith("Or keep the driver 470.223.02")]
    # 470.223.02 is past the 11.x floor (450.80.02): under the shared rule (minor-version compatibility for the wheels'
    # native code) 2.3.1's own cu118 build runs on it, where the old planner rule (Table 3: 11.8 needs 520.61.05) went back to 1.12.1's cu113.
    assert now and (
        f'`"{LINUX_EXE}" -m pip uninstall -y torch`, then `"{LINUX_EXE}" -m pip install torch==2.3.1 --index-url https://download.pytorch.org/whl/cu118`'
        in now[0]
    ), fix
    assert not any("CUDA 11.4 or older" in line for line in fix)


def test_driver_too_old_reinstalls_when_another_build_of_the_same_release_runs():
    """torch 2.7.0 cu128 on Windows driver 522.06: 2.7's cu118 build runs on it; `pip install torch==2.7.0` alone would keep cu128."""
    packages = {"torch": "2.7.0+cu128"}
    document = machine(
        WINDOWS_BASE,
        nvml=nvml("522.06", 11080),
        pythons=[python(WIN_EXE, "3.11.9", packages, torch_report("2.7.0", "12.8"))],
    )
    fix = fix_of(document, "driver-too-old")
    now = next(line for line in fix if line.startswith("Or keep the driver 522.06"))
    assert (
        f'`"{WIN_EXE}" -m pip uninstall -y torch`, then `"{WIN_EXE}" -m pip install torch==2.7.0 --index-url https://download.pytorch.org/whl/cu118`'
        in now
    ), fix
    assert index_variants([now]) == {"cu118"}


@pytest.mark.parametrize(("driver", "cuda"), [("451.82", 11000), ("472.12", 11040), ("516.94", 11070)])
def test_no_planned_torch_variant_needs_more_than_the_driver_unless_the_line_says_so(driver, cuda):
    """Whatever the driver, a pip line from PyPI's index is for a variant the driver runs, unless it says which driver comes first.
    "Runs" is the shared driver rule (knowledge.driver_rule, as in driver-too-old): wheels with native code for the GPU
    need their major's minor-version floor (or their release's own minimum where it is lower, as 11.0's), not Table 3's row."""
    packages = {"torch": "2.5.1+cpu"}
    document = machine(
        WINDOWS_BASE, nvml=nvml(driver, cuda), pythons=[python(WIN_EXE, "3.10.11", packages, torch_report("2.5.1"))]
    )
    for line in fix_of(document, "torch-cpu-build"):
        if "update the NVIDIA driver" in line:
            continue
        for variant in index_variants([line]):
            cuda = f"{variant[2:-1]}.{variant[-1]}"
            needed = knowledge.driver_rule(Version(cuda), "windows").need
            assert Version(driver) >= needed.driver, (line, needed.driver_text)


# tf-windows-gpu-unsupported -------------------------------------------------------------------------


def tf_report(version):
    return {"tensorflow": {"version": version, "built_with_cuda": False, "gpus": [], "build_info": {}}}


def test_tf_windows_wsl_line_pins_the_and_cuda_release_the_driver_runs():
    """tensorflow 2.15.0 on native Windows, driver 552.44: WSL2 gets the planner's [and-cuda] build of 2.15, not an unpinned
    `pip install "tensorflow[and-cuda]"` that takes the newest release whatever the driver."""
    packages = {"tensorflow": "2.15.0"}
    document = machine(WINDOWS_BASE, pythons=[python(WIN_EXE, "3.10.11", packages, tf_report("2.15.0"))])
    wsl = fix_of(document, "tf-windows-gpu-unsupported")[0]
    assert '`python3 -m pip install "tensorflow[and-cuda]==2.15.0"`' in wsl and "552.44 serves WSL2" in wsl, wsl


def test_tf_windows_wsl_line_says_which_driver_first_when_this_one_is_too_old():
    """Driver 472.12 (CUDA 11.4) cannot run 2.15's CUDA 12.2 wheels under WSL2: the line names the driver to install first."""
    packages = {"tensorflow": "2.15.0"}
    document = machine(
        WINDOWS_BASE, nvml=nvml("472.12", 11040), pythons=[python(WIN_EXE, "3.10.11", packages, tf_report("2.15.0"))]
    )
    wsl = fix_of(document, "tf-windows-gpu-unsupported")[0]
    # The [and-cuda] wheels run under minor-version compatibility (the shared driver rule): the 12.x floor, 525, not
    # 12.2's own Table 3 minimum (536.25) that the old planner rule asked for.
    needed = knowledge.driver_rule(Version("12.2"), "windows").need.driver_text
    assert needed == "525"
    assert f"update the Windows NVIDIA driver to >= {needed} first" in wsl and "tensorflow[and-cuda]==2.15.0" in wsl, (
        wsl
    )


def test_tf_windows_native_line_names_the_toolkit_and_cudnn_releases():
    """The native TensorFlow 2.10 line: the exact toolkit update and cuDNN release, then this interpreter's pip line
    (the old line said "CUDA 11.2 and cuDNN 8.1 on PATH")."""
    packages = {"tensorflow": "2.15.0"}
    document = machine(WINDOWS_BASE, pythons=[python(WIN_EXE, "3.10.11", packages, tf_report("2.15.0"))])
    native = fix_of(document, "tf-windows-gpu-unsupported")[1]
    assert native.startswith("Or stay on native Windows with TensorFlow 2.10.1 (CUDA 11.2, cuDNN 8.1"), native
    assert "download CUDA Toolkit 11.2.2 from https://developer.nvidia.com/cuda-toolkit-archive" in native, native
    assert f'`"{WIN_EXE}" -m pip install tensorflow==2.10.1`' in native, native


# framework-cuda-mismatch and cudnn-version-mismatch --------------------------------------------------


def fixture_fix(path, finding_id):
    if not path.exists():
        pytest.skip(f"no {path}")
    found = [f for f in run(load_fixture(path)).findings if f.id == finding_id]
    assert found, f"{path.name}: no {finding_id}"
    return list(found[0].fix)


def test_framework_cuda_mismatch_names_the_toolkit_update_and_its_cudnn():
    """TensorFlow 2.1 (CUDA 10.1) beside CUDA 10.2: the toolkit release to install and the cuDNN of TF 2.1's tested series;
    the old line said "the CUDA 10.1 toolkit" and no cuDNN."""
    fix = fixture_fix(
        SHARED_FIXTURES / "real" / "22-win-tf21-needs-cuda101-has-cuda102.yaml", "framework-cuda-mismatch"
    )
    assert fix[0].startswith("Install CUDA Toolkit 10.1.105 beside the others"), fix
    assert "with cuDNN 7.6." in fix[0], fix


def test_cudnn_version_mismatch_names_the_cudnn_release_and_archive():
    """TensorFlow 2.13 needs cuDNN 8.6 for CUDA 11.8: the planner's release of that series, not "8.6 or newer ... ARCHIVE"."""
    fix = fixture_fix(GALLERY / "linux-tf213-old-cudnn81-first-on-ld-library-path.yaml", "cudnn-version-mismatch")
    line = next(f for f in fix if f.startswith("Install cuDNN"))
    assert line.startswith("Install cuDNN 8.6.") and " for CUDA 11.8 " in line and "ARCHIVE" not in line, fix


# python-unsupported ---------------------------------------------------------------------------------


def test_python_unsupported_names_the_new_environment_and_the_build_to_install_there():
    """torch 2.0.1 cu118 in Python 3.12 on Linux: the new environment's Python and the exact pip line of a 2.0.1 build the
    driver runs (the old fix: "conda create ... python=3.11, and install torch there")."""
    packages = {"torch": "2.0.1+cu118"}
    document = machine(LINUX_BASE, pythons=[python(LINUX_EXE, "3.12.1", packages, torch_report("2.0.1", "11.8"))])
    fix = fix_of(document, "python-unsupported")
    assert len(fix) == 1 and "`conda create -n gpu python=3.11`, then `conda activate gpu`" in fix[0], fix
    assert "`python -m pip install torch==2.0.1 --index-url https://download.pytorch.org/whl/cu118`" in fix[0], fix


# gpu-arch-unsupported (torch) -----------------------------------------------------------------------


def test_torch_arch_fix_keeps_the_release_with_a_build_for_this_gpu():
    """torch 1.9.1 cu102 on an RTX 3060 (sm_86): 1.9.1's cu111 build has code for it and the driver runs it; the old fix
    jumped to the newest release the driver's CUDA allowed ("torch==1.12.*", cu113) whatever the interpreter."""
    fix = fixture_fix(
        SHARED_FIXTURES / "real" / "31-linux-rtx3060-laptop-torch-cu102-no-sm86.yaml", "gpu-arch-unsupported"
    )
    assert fix[-1].endswith(
        "-m pip install torch==1.9.1+cu111 -f https://download.pytorch.org/whl/torch_stable.html"
    ), fix


def test_the_checks_know_the_planners_frameworks_without_importing_it():
    """checks/_plan.py keeps the planner out of every `check`'s start: its copy of the framework names must not drift."""
    from cudnn_doctor.checks import _plan
    from cudnn_doctor.planner.request import FRAMEWORKS

    assert _plan.FRAMEWORKS == FRAMEWORKS


def test_a_driver_version_that_is_no_version_number_plans_without_a_driver():
    """A mangled driver version (the mutation fuzzer's "xxxx") must not crash the fix: the plan has no driver constraint."""
    packages = {"torch": "2.14.0+cpu"}
    document = machine(
        LINUX_BASE, nvml=nvml("xxxx", 13000), pythons=[python(LINUX_EXE, "3.12.3", packages, torch_report("2.14.0"))]
    )
    found = findings_of(document, "torch-cpu-build")
    assert found and any("torch==2.14.0" in line for line in found[0].fix), found
    assert not findings_of(document, "doctor-internal-error")


def test_cudnn_version_mismatch_with_only_another_major_names_the_release_to_put_beside_it():
    """TensorFlow 2.10 (cuDNN 8.1, CUDA 11.2) where only cuDNN 9 is installed: the cuDNN 8 release and archive to add beside
    it; the old line said "cuDNN 8.1 or a newer 8.x ... `cudnn-doctor install ARCHIVE`"."""
    from tests.unit.checks import test_cudnn_checks as cudnn_checks

    document = cudnn_checks.toolkit(cudnn_checks.cudnn9(f"{cudnn_checks.CUDA}\\bin", cuda=11))
    document["files"][f"{cudnn_checks.CUDA}\\include\\cudnn_version.h"] = {
        "text": "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"
    }
    mismatch = next(f for f in run(document).findings if f.id == "cudnn-version-mismatch")
    assert (
        mismatch.fix[0].startswith("Install cuDNN 8.1.")
        and "for CUDA 11.2 beside the cuDNN 9 you have" in mismatch.fix[0]
    ), mismatch.fix
    assert "ARCHIVE" not in mismatch.fix[0]


def test_cupy_is_planned_from_the_recorded_index():
    """cupy loads the system CUDA like TensorFlow does; its releases come from the recorded package index (issue 30): the
    installed cupy-cuda12x 13.0.0 is planned as itself, with a CUDA 12 toolkit the driver (550, CUDA 12.4) runs."""
    from cudnn_doctor.checks._plan import first_option

    document = machine(LINUX_BASE, pythons=[python(LINUX_EXE, "3.11.7", {"cupy-cuda12x": "13.0.0"}, {})])
    facts = run(document).facts
    option = first_option(facts, LINUX_EXE, ["cupy==13.0.0"], "13.0.0")
    assert option is not None and option.requirement == "cupy-cuda12x==13.0.0", option
    assert option.verdict.candidate.cuda == "12.4" and option.verdict.needs.cudnn is None


def test_the_planner_solves_each_question_once_per_run_until_the_tables_change(monkeypatch, tmp_path):
    """Ten environments with the same CPU build of torch ask the planner one question, not ten; a `--kb` file that
    changes the tables asks it again (answers from the old tables would be wrong)."""
    from cudnn_doctor.planner import solver

    calls = []
    solve = solver.solve
    monkeypatch.setattr(solver, "solve", lambda request: calls.append(request) or solve(request))
    knowledge._tables_changed()
    pythons = [
        python(f"/home/dev/env{i}/bin/python", "3.10.12", {"torch": "2.13.0+cpu"}, torch_report("2.13.0"))
        for i in range(10)
    ]
    for other in pythons[1:]:
        other.update(current=False, kind="conda")
    document = machine(LINUX_BASE, nvml=nvml("535.104.05", 12020), pythons=pythons)
    assert len(findings_of(document, "torch-cpu-build")) == 10
    asked = len(calls)
    assert 0 < asked <= 3, asked  # one question per kind of plan, whatever the number of environments
    findings_of(document, "torch-cpu-build")
    assert len(calls) == asked  # a second check asks nothing new
    knowledge._tables_changed()
    findings_of(document, "torch-cpu-build")
    assert len(calls) == 2 * asked
