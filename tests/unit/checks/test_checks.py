"""Each finding fires on a small machine built for it, and stays quiet on its near miss.

(The shared machine fixtures in test_machines.py cover the rest with real-world cases.)
"""

from __future__ import annotations

from packaging.version import Version

from cudnn_doctor.checks import RULES
from cudnn_doctor.checks.gpu_arch import supported_by_arch_list
from cudnn_doctor.findings import Severity
from tests.conftest import LINUX_BASE, WINDOWS_BASE, findings_of, ids, machine, run

CUDA = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"


def python(exe, version="3.10.11", packages=None, frameworks=None, current=True):
    return {
        "executable": exe,
        "version": version,
        "current": current,
        "kind": "venv",
        "packages": packages or {},
        "frameworks": frameworks or {},
    }


def test_every_required_id_is_registered():
    required = {
        "no-nvidia-gpu",
        "driver-too-old",
        "gpu-arch-unsupported",
        "wsl-linux-driver-installed",
        "cuda-toolkit-missing",
        "cuda-libs-not-found",
        "nvcc-not-on-path",
        "cuda-path-mismatch",
        "multiple-cuda-on-path",
        "cudnn-missing",
        "torch-cpu-build",
        "torch-cuda-unavailable",
        "tf-cpu-build",
        "tf-windows-gpu-unsupported",
        "framework-cuda-mismatch",
        "python-unsupported",
        "interpreter-mismatch",
        "env-stale-session",
        "path-missing-dir",
        "path-duplicate-entries",
        "env-var-ineffective",
    }
    assert required <= set(RULES)


def test_arch_list_rules():
    assert supported_by_arch_list(Version("8.6"), ["sm_80"])  # same major, lower minor SASS runs
    assert not supported_by_arch_list(Version("8.0"), ["sm_86"])
    assert supported_by_arch_list(Version("9.0"), ["sm_80", "compute_80"])  # PTX is JIT-compiled
    assert not supported_by_arch_list(Version("8.6"), ["sm_37", "sm_50", "sm_60", "sm_70"])


def test_driver_too_old_respects_minor_version_compatibility():
    def torch(cuda):
        return {
            "torch": {
                "version": f"2.3.1+cu{cuda.replace('.', '')}",
                "cuda": cuda,
                "cuda_available": True,
                "device_count": 1,
                "arch_list": ["sm_86"],
            }
        }

    old = {
        "driver_version": "525.60.13",
        "cuda_driver_version": 12000,
        "gpus": [{"name": "NVIDIA GeForce RTX 3060", "compute_capability": "8.6"}],
    }
    assert "driver-too-old" not in ids(
        machine(LINUX_BASE, nvml=old, pythons=[python("/v/bin/python", frameworks=torch("12.1"))])
    )
    older = dict(old, driver_version="470.63.01", cuda_driver_version=11040)
    found = findings_of(
        machine(LINUX_BASE, nvml=older, pythons=[python("/v/bin/python", frameworks=torch("12.1"))]), "driver-too-old"
    )
    assert found and "needs driver >= 525" in found[0].detail


def test_cuda_toolkit_missing_is_info_unless_a_framework_needs_it():
    assert findings_of(machine(LINUX_BASE), "cuda-toolkit-missing")[0].severity is Severity.INFO
    tf = {
        "tensorflow": {
            "version": "2.10.0",
            "built_with_cuda": True,
            "gpus": [],
            "build_info": {"cuda_version": "64_112", "cudnn_version": "64_8"},
        }
    }
    document = machine(
        WINDOWS_BASE, pythons=[python("C:\\env\\python.exe", packages={"tensorflow": "2.10.0"}, frameworks=tf)]
    )
    found = findings_of(document, "cuda-toolkit-missing")
    assert found[0].severity is Severity.ERROR and "cudart64_110.dll" in found[0].detail
    assert "cuda-libs-not-found" in ids(document)


def test_cuda_path_mismatch():
    files = {f"{CUDA}\\v11.2\\bin\\nvcc.exe": {}, f"{CUDA}\\v11.8\\bin\\nvcc.exe": {}}
    nvcc = {"nvcc --version": {"returncode": 0, "stdout": "Cuda compilation tools, release 11.2, V11.2.67\n"}}
    env = {"PATH": f"{CUDA}\\v11.2\\bin;C:\\Windows\\System32", "CUDA_PATH": f"{CUDA}\\v11.8"}
    found = findings_of(machine(WINDOWS_BASE, files=files, env=env, commands=nvcc), "cuda-path-mismatch")
    assert found and "CUDA_PATH" in found[0].detail and "v11.8" in found[0].detail
    env["CUDA_PATH"] = f"{CUDA}\\V11.2"
    assert not findings_of(machine(WINDOWS_BASE, files=files, env=env, commands=nvcc), "cuda-path-mismatch")


def test_path_missing_dir_and_duplicates():
    env = {"PATH": "/usr/local/cuda-11.0/bin:/usr/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": "/opt/cudnn/lib"}
    document = machine(LINUX_BASE, env=env, files={"/usr/bin/ls": {}, "/bin/sh": {}})
    missing = findings_of(document, "path-missing-dir")[0]
    assert "/usr/local/cuda-11.0/bin" in missing.detail and "/opt/cudnn/lib" in missing.detail
    assert missing.severity is Severity.WARNING
    clutter = machine(LINUX_BASE, env={"PATH": "/usr/local/cuda-11.0/libnvvp:/usr/bin"}, files={"/usr/bin/ls": {}})
    assert findings_of(clutter, "path-missing-dir")[0].severity is Severity.INFO
    assert "/usr/bin (#3, first at #2)" in findings_of(document, "path-duplicate-entries")[0].detail
    assert not findings_of(machine(LINUX_BASE, files={"/usr/bin/ls": {}}), "path-duplicate-entries")


def test_env_var_ineffective_table_and_typos():
    document = machine(
        LINUX_BASE,
        env={"CUDNN_AUTOTUNE": "0", "CUDA_LAUNCH_BLOCKIN": "1", "CUDA_VISIBLE_DEVICES": "0", "CUDA_VERSION": "12.1"},
    )
    found = {f.evidence.variable: f for f in findings_of(document, "env-var-ineffective")}
    assert set(found) == {"CUDNN_AUTOTUNE", "CUDA_LAUNCH_BLOCKIN"}
    assert "TF_CUDNN_USE_AUTOTUNE" in found["CUDNN_AUTOTUNE"].fix[0]
    assert found["CUDA_LAUNCH_BLOCKIN"].evidence.suggestion == "CUDA_LAUNCH_BLOCKING"


def test_tf_cpu_build_only_with_a_gpu():
    tf = {"tensorflow": {"version": "2.15.0", "built_with_cuda": False, "gpus": []}}
    pythons = [python("/v/bin/python", packages={"tensorflow": "2.15.0"}, frameworks=tf)]
    found = findings_of(machine(LINUX_BASE, pythons=pythons), "tf-cpu-build")
    assert found and "tensorflow[and-cuda]==2.15.0" in found[0].fix[0]
    assert not findings_of(machine(LINUX_BASE, pythons=pythons, nvml=None), "tf-cpu-build")


def test_python_unsupported():
    torch = {
        "torch": {
            "version": "2.0.1+cu118",
            "cuda": "11.8",
            "cuda_available": True,
            "device_count": 1,
            "arch_list": ["sm_86"],
        }
    }
    found = findings_of(
        machine(LINUX_BASE, pythons=[python("/v/bin/python", "3.12.1", {"torch": "2.0.1+cu118"}, torch)]),
        "python-unsupported",
    )
    assert found and "supports Python >=3.8,<3.12," in found[0].detail
    assert "python=3.11`" in found[0].fix[0]  # the newest minor the range allows, derived from the specifier
    assert not findings_of(
        machine(LINUX_BASE, pythons=[python("/v/bin/python", "3.11.7", {"torch": "2.0.1+cu118"}, torch)]),
        "python-unsupported",
    )


def test_torch_cuda_unavailable_links_its_causes():
    torch = {
        "torch": {"version": "2.1.0+cu121", "cuda": "12.1", "cuda_available": False, "device_count": 0, "arch_list": []}
    }
    nvml = {
        "driver_version": "472.12",
        "cuda_driver_version": 11040,
        "gpus": [{"name": "NVIDIA GeForce RTX 3060", "compute_capability": "8.6"}],
    }
    found = findings_of(
        machine(WINDOWS_BASE, nvml=nvml, pythons=[python("C:\\e\\python.exe", frameworks=torch)]),
        "torch-cuda-unavailable",
    )
    assert found[0].explained_by == ("driver-too-old",)
    healthy = {"torch": dict(torch["torch"], cuda_available=True)}
    assert not findings_of(
        machine(WINDOWS_BASE, pythons=[python("C:\\e\\python.exe", frameworks=healthy)]), "torch-cuda-unavailable"
    )


def test_interpreter_mismatch_not_when_current_has_it_too():
    gpu_torch = {
        "torch": {
            "version": "2.3.1+cu121",
            "cuda": "12.1",
            "cuda_available": True,
            "device_count": 1,
            "arch_list": ["sm_86"],
        }
    }
    both = [
        python("C:\\a\\python.exe", frameworks=gpu_torch),
        python("C:\\b\\python.exe", frameworks=gpu_torch, current=False),
    ]
    assert "interpreter-mismatch" not in ids(machine(WINDOWS_BASE, pythons=both))
    only_other = [python("C:\\a\\python.exe"), python("C:\\b\\python.exe", frameworks=gpu_torch, current=False)]
    assert "interpreter-mismatch" in ids(machine(WINDOWS_BASE, pythons=only_other))


def test_stale_terminal_fix_says_restart_instead_of_edit_path():
    tf = {
        "tensorflow": {
            "version": "2.10.0",
            "built_with_cuda": True,
            "gpus": [],
            "build_info": {"cuda_version": "64_112", "cudnn_version": "64_8"},
        }
    }
    files = {
        f"{CUDA}\\v11.2\\bin\\cudart64_110.dll": {},
        f"{CUDA}\\v11.2\\bin\\cudnn64_8.dll": {},
        f"{CUDA}\\v11.2\\bin\\nvcc.exe": {},
    }
    persistent = {"user": {"Path": f"{CUDA}\\v11.2\\bin"}, "system": {"Path": "%SystemRoot%\\System32;%SystemRoot%"}}
    pythons = [python("C:\\env\\python.exe", packages={"tensorflow": "2.10.0"}, frameworks=tf)]
    stale = machine(WINDOWS_BASE, files=files, pythons=pythons, persistent_env=persistent)
    found = {f.id: f for f in run_checks_of(stale)}
    assert {"env-stale-session", "cuda-libs-not-found", "cudnn-missing"} <= set(found)
    assert "already on the saved (registry) PATH" in found["cudnn-missing"].fix[0]
    fresh = machine(WINDOWS_BASE, files=files, pythons=pythons)
    assert "Environment Variables → Path → New" in {f.id: f for f in run_checks_of(fresh)}["cudnn-missing"].fix[0]


def run_checks_of(document):
    from tests.conftest import run

    return run(document).findings


def test_cupy_needs_the_cuda_runtime_its_wheel_names_from_the_system():
    cupy = {"cupy": {"version": "13.3.0", "device_count": 1, "cuda_available": True}}
    alone = machine(LINUX_BASE, pythons=[python("/v/bin/python", "3.11.7", {"cupy-cuda12x": "13.3.0"}, cupy)])
    missing = findings_of(alone, "cuda-libs-not-found")
    assert missing and "libcudart.so.12" in missing[0].detail and "cupy" in missing[0].detail, missing
    lib = "/usr/local/cuda-12.4/targets/x86_64-linux/lib"
    files = {f"{lib}/{name}": {"soname": name} for name in ("libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12")}
    found = machine(
        LINUX_BASE,
        files=files,
        env={"LD_LIBRARY_PATH": lib},
        pythons=[python("/v/bin/python", "3.11.7", {"cupy-cuda12x": "13.3.0"}, cupy)],
    )
    assert "cuda-libs-not-found" not in ids(found) and "cudnn-missing" not in ids(found)


def test_a_framework_newer_than_the_data_says_so_and_how_to_update():
    """Issue 30: torch 2.16.0 is past the recorded index (newest 2.15.0): an info finding with `kb update`; 2.15.0 and a
    local build tag of a known release (2.15.0+cu126) are not."""

    def with_torch(version):
        report = {
            "torch": {
                "version": version,
                "cuda": "13.2",
                "cuda_available": True,
                "device_count": 1,
                "arch_list": ["sm_90"],
            }
        }
        return machine(LINUX_BASE, pythons=[python("/v/bin/python", packages={"torch": version}, frameworks=report)])

    (found,) = findings_of(with_torch("2.16.0"), "knowledge-outdated")
    assert (
        found.severity is Severity.INFO
        and "torch 2.16.0" in found.detail
        and "(2.15.0, from the package index as recorded on" in found.detail
    )
    assert any("cudnn-doctor kb update" in step for step in found.fix)
    assert not findings_of(with_torch("2.15.0"), "knowledge-outdated")
    assert not findings_of(with_torch("2.15.0+cu126"), "knowledge-outdated")


def test_a_rule_whose_severity_depends_on_the_case_says_so():
    """Issue 31: `explain` says when a finding's severity is not its rule's; a finding that takes another severity by its
    own case (not as a cause raised to its worst symptom) must come from a rule that declares when."""
    from cudnn_doctor.system.fixture_format import load_fixture
    from tests.conftest import all_fixture_paths, run

    undeclared = set()
    for path in all_fixture_paths():
        findings = run(load_fixture(path)).findings
        causes = {f.symptom_of for f in findings if f.symptom_of is not None}
        for index, found in enumerate(findings):
            rule = RULES[found.id]
            if found.severity is not rule.severity and index not in causes and not rule.severity_when:
                undeclared.add((found.id, found.severity.value, path.name))
    assert not undeclared, sorted(undeclared)[:10]
    assert {r for r, rule in RULES.items() if rule.severity_when} >= {
        "cudnn-shadowed",
        "dependency-missing",
        "cuda-toolkit-missing",
    }


def test_an_interpreter_whose_version_is_no_version_plans_without_a_python():
    """A snapshot's interpreter version that is no version (a damaged record: 'nvidia-cuda-runtime-cu12') leaves the
    plan without a Python constraint; it never reaches the planner as one (found by tests/unit/system/test_fixture_mutations.py)."""
    python = {
        "executable": "/home/dev/.venv/bin/python",
        "version": "nvidia-cuda-runtime-cu12",
        "current": True,
        "kind": "venv",
        "packages": {"torch": "2.5.1+cpu"},
        "frameworks": {"torch": {"version": "2.5.1+cpu", "cuda": None, "cuda_available": False}},
    }
    found = run(machine(LINUX_BASE, pythons=[python])).findings
    assert "torch-cpu-build" in {f.id for f in found}
    assert [f.detail for f in found if f.id == "doctor-internal-error"] == []
