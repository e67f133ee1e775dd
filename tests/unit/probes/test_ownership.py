"""Package ownership through links: the soname link, each link on its way and the real file are all looked up (dpkg, rpm)."""

from __future__ import annotations

from typing import Any, Optional

from cudnn_doctor.facts import PackageOwner
from cudnn_doctor.probes.ownership import PackageOwnership, link_chain
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import LINUX_BASE, machine, run

SYSTEM = "/usr/lib/x86_64-linux-gnu"
OTHER = "/opt/cudnn/lib"  # a second cuDNN 8 on LD_LIBRARY_PATH: a system copy that no package owns is then reported


def _cudnn8(folder: str, linked: bool = False) -> dict[str, Any]:
    """libcudnn.so.8 in `folder`: the file itself, or (`linked`) the soname link to libcudnn.so.8.9.7 as packages ship it."""
    library = {"soname": "libcudnn.so.8", "imports": ["libc.so.6"], "loads": []}
    if not linked:
        return {f"{folder}/libcudnn.so.8": library}
    return {f"{folder}/libcudnn.so.8": {"link": "libcudnn.so.8.9.7"}, f"{folder}/libcudnn.so.8.9.7": library}


def _system_copy(files: dict[str, Any], commands: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    return machine(LINUX_BASE, files={**_cudnn8(OTHER), **files}, env={"LD_LIBRARY_PATH": OTHER}, commands=commands)


def _system_install(document: dict[str, Any]):
    return next(i for i in run(document).facts.cudnn if i.folder == SYSTEM)


def _reported(document: dict[str, Any]) -> bool:
    return "cudnn-in-system-dir" in {f.id for f in run(document).findings}


def test_dpkg_listing_only_the_real_file_owns_the_soname_link():
    files = {
        **_cudnn8(SYSTEM, linked=True),
        "/var/lib/dpkg/info/libcudnn8.list": {"text": f"/.\n{SYSTEM}/libcudnn.so.8.9.7\n"},
    }
    document = _system_copy(files)
    assert _system_install(document).package == "libcudnn8"
    assert not _reported(document)


def test_dpkg_listing_only_the_link_owns_it():
    files = {**_cudnn8(SYSTEM, linked=True), "/var/lib/dpkg/info/libcudnn8.list": {"text": f"{SYSTEM}/libcudnn.so.8\n"}}
    assert _system_install(_system_copy(files)).package == "libcudnn8"


def test_dpkg_listing_a_link_in_the_middle_of_the_chain_owns_it():
    """libcudnn.so.8 -> /etc/alternatives/libcudnn -> /opt/nv/libcudnn.so.8 -> libcudnn.so.8.9.7: the package lists only the third."""
    files = {
        f"{SYSTEM}/libcudnn.so.8": {"link": "/etc/alternatives/libcudnn"},
        "/etc/alternatives/libcudnn": {"link": "/opt/nv/libcudnn.so.8"},
        "/opt/nv/libcudnn.so.8": {"link": "libcudnn.so.8.9.7"},
        "/opt/nv/libcudnn.so.8.9.7": {"soname": "libcudnn.so.8", "imports": ["libc.so.6"], "loads": []},
        "/var/lib/dpkg/info/libcudnn8-dev.list": {"text": "/opt/nv/libcudnn.so.8\n"},
    }
    system = FixtureSystem(_system_copy(files))
    assert link_chain(system, f"{SYSTEM}/libcudnn.so.8") == [
        f"{SYSTEM}/libcudnn.so.8",
        "/etc/alternatives/libcudnn",
        "/opt/nv/libcudnn.so.8",
        "/opt/nv/libcudnn.so.8.9.7",
    ]
    assert PackageOwnership(system, wanted=lambda package: True).owner(f"{SYSTEM}/libcudnn.so.8") == PackageOwner(
        "libcudnn8-dev", "dpkg"
    )


def test_merged_usr_a_package_listing_lib_owns_what_the_loader_finds_in_usr_lib():
    """/lib is a link to usr/lib: the package lists /lib/x86_64-linux-gnu/..., the probe finds /usr/lib/x86_64-linux-gnu/..."""
    listed = {
        "/lib": {"link": "usr/lib"},
        "/var/lib/dpkg/info/libcudnn8:amd64.list": {"text": "/lib/x86_64-linux-gnu/libcudnn.so.8.9.7\n"},
    }
    system = FixtureSystem(_system_copy({**_cudnn8(SYSTEM, linked=True), **listed}))
    assert PackageOwnership(system, wanted=lambda package: True).owner(f"{SYSTEM}/libcudnn.so.8") == PackageOwner(
        "libcudnn8:amd64", "dpkg"
    )
    # the other way round: the package lists the soname link under /usr/lib, the loader finds it under /lib
    listed["/var/lib/dpkg/info/libcudnn8:amd64.list"] = {"text": f"{SYSTEM}/libcudnn.so.8\n"}
    system = FixtureSystem(_system_copy({**_cudnn8(SYSTEM, linked=True), **listed}))
    assert PackageOwnership(system, wanted=lambda package: True).owner(
        "/lib/x86_64-linux-gnu/libcudnn.so.8"
    ) == PackageOwner("libcudnn8:amd64", "dpkg")
    # near miss: without the folder link the two paths are different files
    listed = {"/var/lib/dpkg/info/libcudnn8:amd64.list": {"text": "/lib/x86_64-linux-gnu/libcudnn.so.8.9.7\n"}}
    system = FixtureSystem(_system_copy({**_cudnn8(SYSTEM, linked=True), **listed}))
    assert PackageOwnership(system, wanted=lambda package: True).owner(f"{SYSTEM}/libcudnn.so.8") is None


def test_near_miss_a_list_naming_another_file_or_another_package_family_owns_nothing():
    other_file = {
        **_cudnn8(SYSTEM, linked=True),
        "/var/lib/dpkg/info/libcudnn8.list": {"text": f"{SYSTEM}/libcudnn.so.8.9.6\n{SYSTEM}/libcudnn.so\n"},
    }
    document = _system_copy(other_file)
    assert _system_install(document).package is None
    assert _reported(document)
    # cuDNN's ownership reads only cuDNN's lists: a list of another package naming the file is not read
    other_package = {
        **_cudnn8(SYSTEM, linked=True),
        "/var/lib/dpkg/info/zlib1g.list": {"text": f"{SYSTEM}/libcudnn.so.8.9.7\n"},
    }
    assert _reported(_system_copy(other_package))


def test_rpm_owning_the_real_file_owns_the_soname_link():
    lib64 = "/usr/lib64"
    files = _cudnn8(lib64, linked=True)
    not_owned = {"returncode": 1, "stdout": f"file {lib64}/libcudnn.so.8 is not owned by any package\n"}
    commands = {
        f"rpm -qf {lib64}/libcudnn.so.8": not_owned,
        f"rpm -qf {lib64}/libcudnn.so.8.9.7": {"returncode": 0, "stdout": "libcudnn8-8.9.7.29-1.cuda12.2.x86_64\n"},
    }
    document = _system_copy(files, commands)
    install = next(i for i in run(document).facts.cudnn if i.folder == lib64)
    assert install.package == "libcudnn8-8.9.7.29-1.cuda12.2.x86_64"
    assert "cudnn-in-system-dir" not in {f.id for f in run(document).findings}


def test_near_miss_rpm_owning_nothing_or_absent():
    lib64 = "/usr/lib64"
    files = _cudnn8(lib64, linked=True)
    commands = {
        f"rpm -qf {lib64}/libcudnn.so.8": {
            "returncode": 1,
            "stdout": f"file {lib64}/libcudnn.so.8 is not owned by any package\n",
        },
        f"rpm -qf {lib64}/libcudnn.so.8.9.7": {
            "returncode": 1,
            "stdout": f"file {lib64}/libcudnn.so.8.9.7 is not owned by any package\n",
        },
    }
    for document in (_system_copy(files, commands), _system_copy(files)):  # rpm says no; rpm not installed
        install = next(i for i in run(document).facts.cudnn if i.folder == lib64)
        assert install.package is None
        assert "cudnn-in-system-dir" in {f.id for f in run(document).findings}


def test_rpm_is_not_asked_again_once_it_is_missing():
    calls: list[list[str]] = []

    class Counting(FixtureSystem):
        def run(self, argv, timeout=10.0):
            calls.append(list(argv))
            return super().run(argv, timeout)

    ownership = PackageOwnership(
        Counting(machine(LINUX_BASE, files=_cudnn8(SYSTEM, linked=True))), wanted=lambda package: True
    )
    assert ownership.owner(f"{SYSTEM}/libcudnn.so.8") is None
    assert ownership.owner(f"{SYSTEM}/libcudnn.so.8.9.7") is None
    assert [c[0] for c in calls] == ["rpm"]


# --- the Linux driver inside WSL2: the fix names the package that installed it --------------------

WSL_LINUX_DRIVER = {
    f"{SYSTEM}/libcuda.so.565.57.01": {"soname": "libcuda.so.1"},
    f"{SYSTEM}/libcuda.so.1": {"link": "libcuda.so.565.57.01"},  # made by ldconfig: in no package's list
    "/usr/lib/wsl/lib/libcuda.so.1": {"soname": "libcuda.so.1"},
}


def _wsl_fix(files: dict[str, Any], commands: Optional[dict[str, Any]] = None) -> str:
    document = machine(LINUX_BASE, files={**WSL_LINUX_DRIVER, **files}, wsl=True, commands=commands)
    finding = next(f for f in run(document).findings if f.id == "wsl-linux-driver-installed")
    return "\n".join(finding.fix)


def test_wsl_linux_driver_fix_names_the_dpkg_package_through_the_soname_link():
    listed = {"/var/lib/dpkg/info/libnvidia-compute-565:amd64.list": {"text": f"/.\n{SYSTEM}/libcuda.so.565.57.01\n"}}
    fix = _wsl_fix(listed)
    assert "`sudo apt-get remove --purge libnvidia-compute-565:amd64`" in fix and "dpkg -S" not in fix
    # near miss: no package lists the files: the fix says how to find it
    assert f"`dpkg -S {SYSTEM}/libcuda.so.565.57.01`" in _wsl_fix({})


def test_wsl_linux_driver_fix_names_the_rpm_package():
    owned = {"returncode": 0, "stdout": "nvidia-driver-cuda-libs-565.57.01-1.fc40.x86_64\n"}
    not_owned = {"returncode": 1, "stdout": "file is not owned by any package\n"}
    commands = {f"rpm -qf {SYSTEM}/libcuda.so.1": not_owned, f"rpm -qf {SYSTEM}/libcuda.so.565.57.01": owned}
    assert "`sudo dnf remove nvidia-driver-cuda-libs-565.57.01-1.fc40.x86_64`" in _wsl_fix({}, commands)
