"""Toolkit variables and nvcc: CUDA_PATH / CUDA_HOME read as one literal folder, and which nvcc PATH finds first.

Each malformed shape seen in the wild fires cuda-path-mismatch with the exact value to set; an
older or a distribution's nvcc first on PATH, while the toolkit the machine points at is off
PATH, fires nvcc-not-on-path. Healthy, well-formed machines stay quiet.
"""

from __future__ import annotations

import pytest

from cudnn_doctor.checks import run_checks
from cudnn_doctor.checks._variables import value_problems
from cudnn_doctor.facts import VariableTarget
from cudnn_doctor.probes.toolkit import probe_toolkits
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import LINUX_BASE, WINDOWS_BASE, findings_of, machine, run

CUDA = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
V124, V118 = f"{CUDA}\\v12.4", f"{CUDA}\\v11.8"


def nvcc(version: str) -> dict:
    return {
        "nvcc --version": {
            "returncode": 0,
            "stdout": f"nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release {version}, V{version}.131\n",
        }
    }


WINDOWS_FILES = {
    f"{V124}\\bin\\nvcc.exe": {"size": 20000000},
    f"{V124}\\version.json": {"text": '{"cuda": {"version": "12.4.1"}}'},
    f"{V118}\\bin\\nvcc.exe": {"size": 20000000},
    f"{V118}\\version.json": {"text": '{"cuda": {"version": "11.8.0"}}'},
    f"{CUDA}\\v11.2\\bin\\cudnn64_8.dll": {
        "size": 200000
    },  # all the 11.2 uninstaller left: the cuDNN copied in by hand
}
LINUX_FILES = {
    "/usr/local/cuda": {"link": "/usr/local/cuda-12.4"},
    "/usr/local/cuda-12.4/bin/nvcc": {"size": 30000000},
    "/usr/local/cuda-12.4/version.json": {"text": '{"cuda": {"version": "12.4.131"}}'},
    "/usr/local/cuda-11.8/bin/nvcc": {"size": 30000000},
    "/usr/local/cuda-11.8/version.json": {"text": '{"cuda": {"version": "11.8.89"}}'},
    "/usr/local/cuda-11.2/lib64/libcudnn.so.8": {"size": 200000},
}
SETX_124 = f'Run `setx CUDA_PATH "{V124}"`, then open a new terminal (setx changes only new ones).'


def windows(value: str, version: str = "12.4", path_first: str = V124, **changes) -> dict:
    env = {"PATH": f"{path_first}\\bin;C:\\Windows\\System32", "CUDA_PATH": value, **changes.pop("env", {})}
    return machine(WINDOWS_BASE, files=WINDOWS_FILES, env=env, commands=nvcc(version), **changes)


def linux(value: str, path: str = "/usr/local/cuda/bin:/usr/bin:/bin", version: str = "12.4", **changes) -> dict:
    env = {"PATH": path, "CUDA_HOME": value}
    return machine(
        LINUX_BASE, files={**LINUX_FILES, **changes.pop("files", {})}, env=env, commands=nvcc(version), **changes
    )


WINDOWS_SHAPES = [
    (f"{V124}\\bin", "bin folder"),
    (f"{V124}/bin", "bin folder"),
    (f"{V124}\\", "ends in a path separator"),
    (f'{V124}"', "stray quote"),
    (f'"{V124}"', "wrapped in quotes"),
    (f"{V118};{V124}", "2 paths joined with ';'"),
    (f"{V124};", "joined with ';'"),
    ("%CUDA_PATH_V12_4%", "%CUDA_PATH_V12_4% unexpanded"),
    (f"  {V124} ", "spaces or tabs around the path"),
    (f"{CUDA}\\v12.1", "does not exist"),
    (f"{V124}\\bin\\nvcc.exe", "names the compiler itself"),
    (f"{CUDA}\\v11.2", "holds no toolkit"),
    (f"{V124}\\version.json", "names a file"),
    ("v12.4", "not an absolute path"),
]


@pytest.mark.parametrize(("value", "problem"), WINDOWS_SHAPES)
def test_windows_malformed_cuda_path_fires_with_the_exact_setx_command(value, problem):
    found = findings_of(windows(value), "cuda-path-mismatch")
    assert len(found) == 1
    assert f"CUDA_PATH is '{value}'" in found[0].detail and problem in found[0].detail
    assert found[0].fix == (SETX_124,)
    assert found[0].evidence["corrected"] == V124


K, LINK = "/usr/local/cuda-12.4", "/usr/local/cuda"  # nvcc on PATH is reached through the link
LINUX_SHAPES = [
    ("/usr/local/cuda-12.4/bin", "bin folder", K),  # what the value meant, when it meant the toolkit of that nvcc
    ("/usr/local/cuda-12.4/", "ends in a path separator", K),
    ('"/usr/local/cuda-12.4"', "wrapped in quotes", K),
    ("'/usr/local/cuda-12.4'", "wrapped in quotes", K),
    ("/usr/local/cuda-12.4'", "stray quote", K),
    ("/usr/local/cuda-11.8:/usr/local/cuda-12.4", "2 paths joined with ':'", LINK),  # else the spelling PATH uses
    ("/usr/local/cuda-12.4;/usr/local/cuda-11.8", "joined with ';'", LINK),
    ("$CUDA_ROOT", "$CUDA_ROOT unexpanded", LINK),
    ("${HOME}/cuda-12.4", "${HOME} unexpanded", LINK),
    ("~/cuda", "~ unexpanded", LINK),
    ("/usr/local/cuda-12.4 ", "spaces or tabs", K),
    ("/usr/local/cuda-12.1", "does not exist", LINK),
    ("/usr/local/cuda-12.4/bin/nvcc", "names the compiler itself", K),
    ("/usr/local/cuda/bin/", "; it ends in the toolkit's bin folder", LINK),
    ("/usr/local/cuda-11.2", "holds no toolkit", LINK),
    ("usr/local/cuda-12.4", "not an absolute path", LINK),
    ("", "is empty", LINK),
]


@pytest.mark.parametrize(("value", "problem", "corrected"), LINUX_SHAPES)
def test_linux_malformed_cuda_home_fires_with_the_export_line(value, problem, corrected):
    found = findings_of(linux(value), "cuda-path-mismatch")
    assert len(found) == 1
    assert f"CUDA_HOME is '{value}'" in found[0].detail and problem in found[0].detail
    assert found[0].fix[0].startswith(f"Run `export CUDA_HOME={corrected}` ")


@pytest.mark.parametrize("value", [V124, f"{CUDA}/V12.4", f"{CUDA.lower()}\\v12.4"])
def test_windows_well_formed_cuda_path_of_the_nvcc_on_path_is_quiet(value):
    assert not findings_of(windows(value), "cuda-path-mismatch")


@pytest.mark.parametrize("value", ["/usr/local/cuda", "/usr/local/cuda-12.4"])
def test_linux_well_formed_cuda_home_is_quiet(value):
    assert not findings_of(linux(value), "cuda-path-mismatch")


def test_a_joined_value_is_never_accepted_for_its_valid_first_piece():
    """`v12.4;v11.8` starts with the right toolkit, but no tool splits CUDA_PATH: it still names no folder."""
    found = findings_of(windows(f"{V124};{V118}"), "cuda-path-mismatch")
    assert found and found[0].evidence["corrected"] == V124
    assert "Written correctly" not in found[0].detail  # no piece is offered as what the value meant
    targets = probe_toolkits(FixtureSystem(windows(f"{V124};{V118}"))).targets
    assert [t.kind for t in targets if t.name == "CUDA_PATH"] == ["missing"]


def test_the_corrected_value_is_the_toolkit_of_the_nvcc_on_path_not_what_the_value_meant():
    found = findings_of(windows(f'"{V124}"', version="11.8", path_first=V118), "cuda-path-mismatch")
    assert found[0].fix == (f'Run `setx CUDA_PATH "{V118}"`, then open a new terminal (setx changes only new ones).',)
    assert "Written correctly it would name CUDA 12.4.1" in found[0].detail


def test_without_nvcc_on_path_the_meant_toolkit_else_the_newest_is_the_corrected_value():
    quiet_path = {"PATH": "C:\\Windows\\System32"}
    meant = findings_of(windows(f"{V118}\\bin", env=quiet_path), "cuda-path-mismatch")
    assert meant[0].evidence["corrected"] == V118 and "No nvcc is on PATH" in meant[0].detail
    joined = findings_of(windows(f"{V118};{V124}", env=quiet_path), "cuda-path-mismatch")
    assert joined[0].evidence["corrected"] == V124 and "the newest installed toolkit is CUDA 12.4.1" in joined[0].detail


def test_system_scope_variable_is_set_with_setx_m_and_none_installed_means_remove_it():
    persistent = {"system": {"CUDA_PATH": f"{V124}\\bin", "Path": f"{V124}\\bin"}, "user": {}}
    found = findings_of(windows(f"{V124}\\bin", persistent_env=persistent), "cuda-path-mismatch")
    assert found[0].fix[0].startswith(f'Run `setx /M CUDA_PATH "{V124}"` from a terminal run as Administrator')
    bare = machine(WINDOWS_BASE, env={"CUDA_PATH": f"{CUDA}\\v11.2"})
    removed = findings_of(bare, "cuda-path-mismatch")
    assert "No CUDA toolkit is installed" in removed[0].detail
    assert removed[0].fix[0].startswith('Remove CUDA_PATH: `reg delete "HKCU\\Environment" /v CUDA_PATH /f`')
    gone = findings_of(machine(LINUX_BASE, env={"CUDA_HOME": "/usr/local/cuda-11.2"}), "cuda-path-mismatch")
    assert gone[0].fix[0].startswith("Run `unset CUDA_HOME`")


def test_a_path_with_spaces_is_quoted_in_the_export_line():
    files = {"/opt/my cuda/bin/nvcc": {"size": 30000000}}
    document = machine(
        LINUX_BASE,
        files=files,
        env={"PATH": "/opt/my cuda/bin:/usr/bin", "CUDA_HOME": "/opt/my cuda/"},
        commands=nvcc("12.4"),
    )
    assert findings_of(document, "cuda-path-mismatch")[0].fix[0].startswith("Run `export CUDA_HOME='/opt/my cuda'` ")


def test_well_formed_value_of_another_toolkit_keeps_the_version_mismatch_with_a_command():
    found = findings_of(linux("/usr/local/cuda-11.8"), "cuda-path-mismatch")
    assert "CUDA_HOME=/usr/local/cuda-11.8 is CUDA 11.8.89" in found[0].detail
    assert found[0].fix[0].startswith("Run `export CUDA_HOME=/usr/local/cuda` ")


@pytest.mark.parametrize(
    ("value", "os_name", "meant"),
    [
        (f'"{V124}\\bin\\"', "windows", V124),
        (f"{V124}\\bin\\nvcc.exe", "windows", V124),
        ("/usr/local/cuda-12.4/bin/", "linux", "/usr/local/cuda-12.4"),
        ("/usr/local/cuda-11.8:/usr/local/cuda-12.4", "linux", None),
        ("C:\\", "windows", "C:\\"),
    ],
)
def test_value_problems_peel_each_layer_once(value, os_name, meant):
    problems, cleaned = value_problems("CUDA_PATH", value, os_name)
    assert cleaned == meant
    assert bool(problems) == (value != "C:\\")


DISTRO = {
    "/usr/bin/nvcc": {"text": '#!/bin/sh\nexec /usr/lib/nvidia-cuda-toolkit/bin/nvcc "$@"\n'},
    "/usr/lib/nvidia-cuda-toolkit/bin/nvcc": {"size": 30000000},
    "/var/lib/dpkg/info/nvidia-cuda-toolkit.list": {
        "text": "/.\n/usr/bin/nvcc\n/usr/lib/nvidia-cuda-toolkit/bin/nvcc\n"
    },
    "/var/lib/dpkg/info/cuda-nvcc-12-4.list": {"text": "/usr/local/cuda-12.4/bin/nvcc\n"},
}


def test_distribution_nvcc_first_while_the_cuda_link_points_at_a_newer_toolkit():
    document = machine(LINUX_BASE, files={**LINUX_FILES, **DISTRO}, commands=nvcc("11.5"))
    facts = probe_toolkits(FixtureSystem(document))
    assert facts.nvcc_package == "nvidia-cuda-toolkit" and facts.path_toolkit == "/usr/lib/nvidia-cuda-toolkit"
    found = findings_of(document, "nvcc-not-on-path")
    assert len(found) == 1
    assert "from the distribution package nvidia-cuda-toolkit (CUDA 11.5.131)" in found[0].detail
    assert "/usr/local/cuda links to" in found[0].detail
    assert found[0].fix == (
        "export PATH=/usr/local/cuda/bin:$PATH  (add it to ~/.bashrc to keep it)",
        "Or remove the distribution's older compiler: `sudo apt remove nvidia-cuda-toolkit`.",
    )
    assert "No other finding explains it" not in found[0].detail


def test_distribution_nvcc_of_unknown_version_still_yields_to_the_linked_toolkit():
    document = machine(LINUX_BASE, files={**LINUX_FILES, **DISTRO})
    assert findings_of(document, "nvcc-not-on-path")[0].evidence["package"] == "nvidia-cuda-toolkit"


def test_nvidias_own_package_is_no_distribution_compiler():
    path = "/usr/local/cuda-12.4/bin:/usr/bin"
    document = machine(LINUX_BASE, files={**LINUX_FILES, **DISTRO}, env={"PATH": path}, commands=nvcc("12.4"))
    # NVIDIA's packages install under /usr/local: no package lookup is needed to know it is no distribution's compiler
    assert probe_toolkits(FixtureSystem(document)).nvcc_package is None
    assert not findings_of(document, "nvcc-not-on-path")


def test_multiarch_dpkg_list_names_the_package_without_its_architecture():
    files = {
        **LINUX_FILES,
        **DISTRO,
        "/var/lib/dpkg/info/nvidia-cuda-toolkit:amd64.list": DISTRO["/var/lib/dpkg/info/nvidia-cuda-toolkit.list"],
    }
    del files["/var/lib/dpkg/info/nvidia-cuda-toolkit.list"]
    assert probe_toolkits(FixtureSystem(machine(LINUX_BASE, files=files))).nvcc_package == "nvidia-cuda-toolkit"


def test_older_toolkit_first_while_cuda_home_names_a_newer_one():
    files = {k: v for k, v in LINUX_FILES.items() if k != "/usr/local/cuda"}
    document = machine(
        LINUX_BASE,
        files=files,
        env={"PATH": "/usr/local/cuda-11.8/bin:/usr/bin", "CUDA_HOME": "/usr/local/cuda-12.4"},
        commands=nvcc("11.8"),
    )
    found = findings_of(document, "nvcc-not-on-path")
    assert "from CUDA 11.8.131 at /usr/local/cuda-11.8" in found[0].detail and "CUDA_HOME names" in found[0].detail
    assert found[0].fix == ("export PATH=/usr/local/cuda-12.4/bin:$PATH  (add it to ~/.bashrc to keep it)",)
    assert findings_of(document, "cuda-path-mismatch")  # the variable and PATH disagree too


def test_older_toolkit_first_while_a_framework_was_built_for_a_newer_one():
    files = {k: v for k, v in LINUX_FILES.items() if k != "/usr/local/cuda"}
    torch = {
        "torch": {
            "version": "2.4.0+cu124",
            "cuda": "12.4",
            "cuda_available": True,
            "device_count": 1,
            "arch_list": ["sm_89"],
        }
    }
    pythons = [dict(LINUX_BASE["pythons"][0], packages={"torch": "2.4.0+cu124"}, frameworks=torch)]
    document = machine(
        LINUX_BASE,
        files=files,
        env={"PATH": "/usr/local/cuda-11.8/bin:/usr/bin"},
        pythons=pythons,
        commands=nvcc("11.8"),
    )
    found = findings_of(document, "nvcc-not-on-path")
    assert (
        "torch 2.4.0+cu124 was built for" in found[0].detail and found[0].evidence["toolkit"] == "/usr/local/cuda-12.4"
    )


@pytest.mark.parametrize(
    "path",
    [
        "/usr/local/cuda/bin:/usr/bin",  # the newest toolkit's nvcc first
        "/usr/local/cuda-12.4/bin:/usr/local/cuda-11.8/bin:/usr/bin",
        "/usr/local/cuda-11.8/bin:/usr/local/cuda/bin:/usr/bin",  # the newer one is on PATH, later: multiple-cuda-on-path says so
    ],
)
def test_quiet_when_the_pointed_at_toolkits_bin_is_on_path(path):
    document = machine(
        LINUX_BASE,
        files=LINUX_FILES,
        env={"PATH": path},
        commands=nvcc("12.4" if "12.4" in path.split(":")[0] or path.startswith("/usr/local/cuda/") else "11.8"),
    )
    assert not findings_of(document, "nvcc-not-on-path")


def test_quiet_when_nothing_points_at_the_newer_toolkit():
    files = {k: v for k, v in LINUX_FILES.items() if k != "/usr/local/cuda"}
    document = machine(
        LINUX_BASE, files=files, env={"PATH": "/usr/local/cuda-11.8/bin:/usr/bin"}, commands=nvcc("11.8")
    )
    assert not findings_of(document, "nvcc-not-on-path")


def test_windows_older_nvcc_first_while_cuda_path_names_a_newer_toolkit():
    document = windows(V124, version="11.8", path_first=V118)
    found = findings_of(document, "nvcc-not-on-path")
    assert "CUDA_PATH names" in found[0].detail
    assert found[0].fix[0].startswith(f"Put {V124}\\bin first on PATH")
    assert not findings_of(windows(V124), "nvcc-not-on-path")


def test_a_value_the_probe_saw_as_a_toolkit_is_never_faulted_for_naming_none():
    facts = run(linux("/opt/elsewhere")).facts
    assert [f.id for f in run_checks(facts) if f.id == "cuda-path-mismatch"]  # a missing folder is faulted
    seen = facts._replace(
        toolkits=facts.toolkits._replace(targets=(VariableTarget("CUDA_HOME", "/opt/elsewhere", "toolkit"),))
    )
    assert not [f for f in run_checks(seen) if f.id == "cuda-path-mismatch"]


def test_the_corrected_value_keeps_the_users_spelling_of_the_same_toolkit():
    """`"/usr/local/cuda-12.4/"` with nvcc reached through /usr/local/cuda: the fix keeps cuda-12.4, the link stays the link."""
    found = findings_of(linux('"/usr/local/cuda-12.4/"'), "cuda-path-mismatch")
    assert found[0].fix[0].startswith("Run `export CUDA_HOME=/usr/local/cuda-12.4` ")
    plain_path = "/usr/local/cuda-12.4/bin:/usr/bin"
    assert (
        findings_of(linux("/usr/local/cuda/bin", path=plain_path), "cuda-path-mismatch")[0].evidence["corrected"]
        == "/usr/local/cuda"
    )
    assert (
        findings_of(linux("/usr/local/cuda-12.1", path=plain_path), "cuda-path-mismatch")[0].evidence["corrected"]
        == "/usr/local/cuda-12.4"
    )


def test_windows_nvcc_off_path_stands_on_its_own():
    """Its own cause key: not told that "no other finding explains it" as if it were a framework's symptom."""
    cuda = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4"
    document = machine(WINDOWS_BASE, files={f"{cuda}\\bin\\nvcc.exe": {"size": 1000}}, env={"CUDA_PATH": cuda})
    found = [f for f in run(document).findings if f.id == "nvcc-not-on-path"]
    assert found and "No other finding explains it" not in found[0].detail and f"{cuda}\\bin" in found[0].fix[0], found


def test_a_build_that_names_only_its_cuda_major_is_told_any_release_of_it():
    """cupy-cuda12x runs on any CUDA 12 release: the fix asks for a 12.x toolkit, not for 12.0."""
    python = {**LINUX_BASE["pythons"][0], "packages": {"cupy-cuda12x": "13.3.0"}}
    found = {f.id: f for f in run(machine(LINUX_BASE, pythons=[python])).findings}
    assert "CUDA 12.x toolkit" in found["cuda-toolkit-missing"].fix[0], found["cuda-toolkit-missing"].fix
    assert "12.0" not in " ".join(found["cuda-libs-not-found"].fix), found["cuda-libs-not-found"].fix
