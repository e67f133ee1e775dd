"""The driver's libraries: provided while no driver is visible; a real dependency-missing when its files are seen (issue 9, item 8)."""

from __future__ import annotations

from typing import Any, Optional

from cudnn_doctor.findings import Area, Severity
from cudnn_doctor.loader.driver import driver_files
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import LINUX_BASE, machine, run
from tests.unit.checks.test_cudnn_checks import CUDA, cudnn8, toolkit

LIB = "/usr/lib/x86_64-linux-gnu"
PARTS = ("ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train")
TF = {
    "tensorflow": {
        "version": "2.12.0",
        "built_with_cuda": True,
        "gpus": [],
        "build_info": {"cuda_version": "11.8", "cudnn_version": "8"},
    }
}
SMI = (
    "+-----------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 550.144.03    Driver Version: 550.144.03    CUDA Version: 12.4     |\n"
    "+-----------------------------------------------------------------------------+\n"
)


def _stack(part_loads: tuple[str, ...] = ("libcuda.so.1",)) -> dict[str, Any]:
    """TensorFlow's CUDA 11 libraries and a cuDNN 8 in the system folder whose parts load the driver by name."""
    files: dict[str, Any] = {
        f"{LIB}/libcudnn.so.8": {
            "soname": "libcudnn.so.8",
            "imports": ["libc.so.6"],
            "loads": [f"libcudnn_{p}.so.8" for p in PARTS],
        },
        f"{LIB}/libcudart.so.11.0": {"soname": "libcudart.so.11.0", "imports": ["libc.so.6"]},
        f"{LIB}/libcublas.so.11": {"soname": "libcublas.so.11", "imports": ["libc.so.6"]},
    }
    for part in PARTS:
        files[f"{LIB}/libcudnn_{part}.so.8"] = {
            "soname": f"libcudnn_{part}.so.8",
            "imports": ["libc.so.6"],
            "loads": list(part_loads),
        }
    return files


def _linux(
    driver: dict[str, Any],
    commands: Optional[dict[str, Any]] = None,
    part_loads: tuple[str, ...] = ("libcuda.so.1",),
    **changes: Any,
) -> dict[str, Any]:
    pythons = [
        {
            "executable": "/v/bin/python",
            "version": "3.10.12",
            "current": True,
            "kind": "venv",
            "packages": {"tensorflow": "2.12.0"},
            "frameworks": TF,
        }
    ]
    return machine(LINUX_BASE, files={**_stack(part_loads), **driver}, pythons=pythons, commands=commands, **changes)


def _missing(document: dict[str, Any]) -> dict[str, Any]:
    return {f.evidence["name"]: f for f in run(document).findings if f.id == "dependency-missing"}


def _real(folder: str = LIB, version: str = "550.144.03", soname_link: bool = True) -> dict[str, Any]:
    """The driver's libcuda and NVML as its installer leaves them; without `soname_link` libcuda.so.1 is not there."""
    files: dict[str, Any] = {
        f"{folder}/libcuda.so.{version}": {"soname": "libcuda.so.1", "imports": ["libc.so.6"], "loads": []},
        f"{folder}/libnvidia-ml.so.{version}": {"soname": "libnvidia-ml.so.1"},
        f"{folder}/libnvidia-ml.so.1": {"link": f"libnvidia-ml.so.{version}"},
    }
    if soname_link:
        files[f"{folder}/libcuda.so.1"] = {"link": f"libcuda.so.{version}"}
    return files


def _cache(*paths: str) -> dict[str, Any]:
    lines = [
        f"{len(paths) + 1} libs found in cache `/etc/ld.so.cache'",
        f"\tlibc.so.6 (libc6,x86-64) => {LIB}/libc.so.6",
    ]
    lines += [f"\t{p.rsplit('/', 1)[1]} (libc6,x86-64) => {p}" for p in paths]
    return {"ldconfig -p": {"returncode": 0, "stdout": "\n".join(lines) + "\n"}}


# --- no driver visible: the driver's names are provided, no-nvidia-gpu says the rest -------------


def test_no_driver_at_all_keeps_driver_names_provided_and_no_nvidia_gpu_fires():
    result = run(_linux({}, nvml=None))
    assert "no-nvidia-gpu" in {f.id for f in result.findings}
    assert "libcuda.so.1" not in _missing(_linux({}, nvml=None))
    assert result.facts.driver_files == ()
    assert all(s.provided_by == "driver" for r in result.facts.resolutions for s in r.steps if s.name == "libcuda.so.1")


def test_nvml_alone_without_any_driver_file_is_no_evidence():
    """A report built from pasted nvidia-smi output lists no files: its driver names are not missing."""
    assert "libcuda.so.1" not in _missing(_linux({}))
    assert "libcuda.so.1" not in _missing(
        _linux({}, nvml=None, commands={"nvidia-smi": {"returncode": 0, "stdout": SMI}})
    )


def test_toolkit_stub_on_ld_library_path_is_not_the_driver():
    stubs = "/usr/local/cuda-12.4/lib64/stubs"
    document = _linux(
        {f"{stubs}/libcuda.so": {"soname": "libcuda.so.1"}, f"{stubs}/libnvidia-ml.so": {}},
        nvml=None,
        env={"LD_LIBRARY_PATH": stubs},
    )
    assert run(document).facts.driver_files == ()
    assert "libcuda.so.1" not in _missing(document)
    # near miss: a versioned libcuda is the driver's
    driver = _linux(
        {"/opt/driver/libcuda.so.1": {"soname": "libcuda.so.1"}}, nvml=None, env={"LD_LIBRARY_PATH": "/opt/driver"}
    )
    assert run(driver).facts.driver_files == ("/opt/driver/libcuda.so.1",)


def test_cuda_compat_libcuda_without_a_driver_is_no_driver():
    """An image with cuda-compat on LD_LIBRARY_PATH, started without a GPU: the compat libcuda needs a driver under it."""

    def document(folder: str) -> dict[str, Any]:
        files = {
            f"{folder}/libcuda.so.1": {
                "soname": "libcuda.so.1",
                "imports": ["libc.so.6"],
                "loads": ["libnvidia-ptxjitcompiler.so.1"],
            }
        }
        return _linux(files, nvml=None, env={"LD_LIBRARY_PATH": folder})

    compat = document("/usr/local/cuda-12.4/compat")
    assert run(compat).facts.driver_files == ()
    assert _missing(compat) == {} and "no-nvidia-gpu" in {f.id for f in run(compat).findings}
    # near miss: the same files anywhere else are a driver, and its JIT compiler is missing
    assert set(_missing(document("/opt/driver"))) == {"libnvidia-ptxjitcompiler.so.1"}


# --- driver visible: a name the search cannot find is a real dependency-missing ------------------


def test_soname_link_missing_beside_the_real_libcuda():
    finding = _missing(_linux(_real(soname_link=False)))["libcuda.so.1"]
    assert finding.severity is Severity.ERROR and finding.area is Area.DRIVER
    assert f"Only {LIB}/libcuda.so.550.144.03 is there" in finding.detail
    assert (
        "sudo ldconfig" in finding.fix[0] and f"sudo ln -s libcuda.so.550.144.03 {LIB}/libcuda.so.1" in finding.fix[0]
    )
    assert finding.evidence["provider"] == "the NVIDIA driver"
    # near miss: with the link the driver is found and nothing is missing
    assert _missing(_linux(_real())) == {}


def test_a_framework_that_reached_the_gpu_proves_libcuda_loaded():
    """TensorFlow lists a GPU: its process loaded libcuda.so.1 from somewhere the emulation does not see (the JIT compiler is not proven)."""
    driver = _real(soname_link=False)
    driver[f"{LIB}/libcuda.so.550.144.03"]["loads"] = ["libnvidia-ptxjitcompiler.so.1"]
    document = _linux(driver, part_loads=("libcuda.so", "libcuda.so.1", "libnvidia-ptxjitcompiler.so.1"))
    document["pythons"][0]["frameworks"] = {"tensorflow": {**TF["tensorflow"], "gpus": ["/physical_device:GPU:0"]}}
    assert set(_missing(document)) == {"libnvidia-ptxjitcompiler.so.1"}
    # near miss: no GPU in its report, and the missing link is the error it is
    document["pythons"][0]["frameworks"]["tensorflow"]["gpus"] = []
    missing = _missing(document)
    assert set(missing) == {"libcuda.so.1", "libnvidia-ptxjitcompiler.so.1"}
    assert missing["libcuda.so.1"].evidence["one_of"] == [
        "libcuda.so.1",
        "libcuda.so",
    ]  # the two spellings are one try-list


def test_kernel_module_alone_makes_the_driver_visible():
    """A container started with the NVIDIA runtime but without its libraries mounted: /proc shows the driver, libcuda is nowhere."""
    document = _linux(
        {"/proc/driver/nvidia/version": {"text": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.144.03\n"}}
    )
    assert run(document).facts.driver_files == ("/proc/driver/nvidia/version",)
    finding = _missing(document)["libcuda.so.1"]
    assert "libnvidia-compute-550" in finding.fix[0] and "--gpus all" in finding.fix[1]


def test_ptxjit_compiler_missing_beside_a_working_libcuda():
    driver = _real()
    driver[f"{LIB}/libcuda.so.550.144.03"]["loads"] = ["libnvidia-ptxjitcompiler.so.1"]
    finding = _missing(_linux(driver))["libnvidia-ptxjitcompiler.so.1"]
    assert "libcuda.so.550.144.03" in finding.detail and "libnvidia-compute-550" in finding.fix[0]
    # near miss: the JIT compiler is there
    driver[f"{LIB}/libnvidia-ptxjitcompiler.so.1"] = {"soname": "libnvidia-ptxjitcompiler.so.1"}
    assert _missing(_linux(driver)) == {}


def test_unversioned_fallback_spelling_is_not_missing_when_the_real_name_loaded():
    """cuDNN 8 tries libcuda.so as well as libcuda.so.1 (an optional load): the dev link's absence does not matter."""
    loads = ("libcuda.so", "libcuda.so.1")
    assert _missing(_linux(_real(), part_loads=loads)) == {}
    # near miss: when libcuda.so.1 is missing too, the try-list of both spellings is one error with the link to make
    missing = _missing(_linux(_real(soname_link=False), part_loads=loads))
    assert set(missing) == {"libcuda.so.1"} and missing["libcuda.so.1"].severity is Severity.ERROR
    assert (
        "one of libcuda.so.1, libcuda.so" in missing["libcuda.so.1"].detail
        and "ln -s libcuda.so" in missing["libcuda.so.1"].fix[0]
    )


WSL = "/usr/lib/wsl/lib"


def test_wsl_driver_folder_not_in_the_loader_cache():
    driver = _real(WSL, "1.1")
    document = _linux(driver, commands=_cache(), wsl=True)
    finding = _missing(document)["libcuda.so.1"]
    assert f"A copy is in {WSL}" in finding.detail
    assert f"echo {WSL} | sudo tee -a /etc/ld.so.conf.d/ld.so.wsl.conf && sudo ldconfig" in finding.fix[0]
    assert "wsl-linux-driver-installed" not in {f.id for f in run(document).findings}
    # near misses: the cache lists it (found), or the cache is not known (the emulation cannot tell: provided)
    assert _missing(_linux(driver, commands=_cache(f"{WSL}/libcuda.so.1"), wsl=True)) == {}
    unknown = _linux(driver, wsl=True)
    assert _missing(unknown) == {}
    assert next(s.elsewhere for r in run(unknown).facts.resolutions for s in r.steps if s.name == "libcuda.so.1") == (
        f"{WSL}/libcuda.so.1",
    )


def test_a_bare_libcuda_so_load_is_not_proven_by_a_gpu_the_framework_reached():
    """WSL's /usr/lib/wsl/lib holds libcuda.so as a plain file; ldconfig caches it under its soname libcuda.so.1
    only. A cuDNN part that dlopens the bare name fails although the framework reached the GPU through libcuda.so.1."""
    driver = {
        f"{WSL}/{name}": {"soname": "libcuda.so.1", "imports": ["libc.so.6"]}
        for name in ("libcuda.so", "libcuda.so.1", "libcuda.so.1.1")
    }
    document = _linux(driver, commands=_cache(f"{WSL}/libcuda.so.1"), part_loads=("libcuda.so",), wsl=True)
    document["pythons"][0]["frameworks"] = {"tensorflow": {**TF["tensorflow"], "gpus": ["/physical_device:GPU:0"]}}
    finding = _missing(document)["libcuda.so"]
    assert finding.severity is Severity.ERROR, finding
    assert f"export LD_LIBRARY_PATH={WSL}" in finding.fix[0] and "ldconfig" not in finding.fix[0], finding.fix
    # near misses: the binary also tries the soname (a fallback spelling), or the folder is on LD_LIBRARY_PATH
    both = _linux(driver, commands=_cache(f"{WSL}/libcuda.so.1"), part_loads=("libcuda.so", "libcuda.so.1"), wsl=True)
    assert "libcuda.so" not in _missing(both)
    on_path = _linux(
        driver,
        commands=_cache(f"{WSL}/libcuda.so.1"),
        part_loads=("libcuda.so",),
        wsl=True,
        env={"LD_LIBRARY_PATH": WSL},
    )
    assert "libcuda.so" not in _missing(on_path)


def test_wsl_without_the_windows_drivers_libcuda():
    driver = {f"{WSL}/libnvidia-ml.so.1": {"soname": "libnvidia-ml.so.1"}}
    finding = _missing(_linux(driver, commands=_cache(f"{WSL}/libnvidia-ml.so.1"), wsl=True))["libcuda.so.1"]
    assert "update the NVIDIA driver on Windows" in finding.fix[0] and "wsl --shutdown" in finding.fix[0]


def test_container_toolkit_folder_not_in_the_loader_cache():
    folder = "/usr/local/nvidia/lib64"
    finding = _missing(_linux(_real(folder), commands=_cache()))["libcuda.so.1"]
    assert f"echo {folder} | sudo tee -a /etc/ld.so.conf.d/nvidia.conf" in finding.fix[0]
    # near miss: the container puts it on LD_LIBRARY_PATH, as NVIDIA's images do
    assert _missing(_linux(_real(folder), commands=_cache(), env={"LD_LIBRARY_PATH": folder})) == {}


def test_driver_files_seen_through_the_loader_cache_only():
    document = _linux(
        {"/opt/nvidia/lib/libcuda.so.1": {"soname": "libcuda.so.1"}},
        commands=_cache("/opt/nvidia/lib/libcuda.so.1"),
        nvml=None,
    )
    system = FixtureSystem(document)
    assert driver_files(system, FolderIndex(system)) == ("/opt/nvidia/lib/libcuda.so.1",)
    assert _missing(document) == {}


def test_ldconfig_outside_path_is_still_the_loader_cache():
    """Debian's users have no /sbin on PATH: the cache is read from /sbin/ldconfig then."""

    class SbinOnly(FixtureSystem):
        def run(self, argv, timeout=10.0):
            return super().run(argv, timeout) if argv[0].startswith("/") else super().run(["not-installed"], timeout)

    system = SbinOnly(_linux({}, commands=_cache("/opt/nvidia/lib/libcuda.so.1")))
    index = FolderIndex(system)
    assert index.cache_known and index.cache["libcuda.so.1"] == "/opt/nvidia/lib/libcuda.so.1"


# --- Windows ---------------------------------------------------------------------------------------

SYSTEM32 = "C:\\Windows\\System32"


def _windows(driver: dict[str, Any], nvml: bool = True) -> dict[str, Any]:
    files = cudnn8(f"{CUDA}\\bin")
    files[f"{CUDA}\\bin\\cudnn_ops_infer64_8.dll"]["loads"].append("nvcuda.dll")
    document = toolkit({**files, **driver})
    if not nvml:
        document.pop("nvml")
    return document


def test_windows_nvcuda_missing_beside_the_drivers_nvml():
    finding = _missing(_windows({f"{SYSTEM32}\\nvml.dll": {"size": 1000}}))["nvcuda.dll"]
    assert finding.area is Area.DRIVER and "Reinstall the NVIDIA driver" in finding.fix[0]
    # near misses: nvcuda.dll is there; no driver file at all (no-nvidia-gpu's case)
    assert "nvcuda.dll" not in _missing(
        _windows({f"{SYSTEM32}\\nvml.dll": {"size": 1000}, f"{SYSTEM32}\\nvcuda.dll": {"size": 1000}})
    )
    bare = _windows({}, nvml=False)
    assert "nvcuda.dll" not in _missing(bare) and "no-nvidia-gpu" in {f.id for f in run(bare).findings}


def test_a_missing_driver_library_is_one_problem_whichever_interpreter_meets_it():
    """Two environments with TensorFlow both miss libcuda.so.1: the machine has one gap, said once, the other load its symptom."""
    document = _linux(_real(soname_link=False))
    second = {**document["pythons"][0], "executable": "/w/bin/python", "current": False}
    document["pythons"].append(second)
    findings = run(document).findings
    gaps = [f for f in findings if f.id == "dependency-missing" and f.evidence["name"] == "libcuda.so.1"]
    assert len(gaps) == 2 and sum(f.symptom_of is None for f in gaps) == 1, [(f.detail, f.symptom_of) for f in gaps]
