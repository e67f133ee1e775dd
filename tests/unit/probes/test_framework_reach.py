"""Issue 29, class 2: a framework that takes CUDA from pip nvidia-* wheels is judged by how *its own*
loader reaches them (the RUNPATH of the binary that makes its dlopen calls, read from its files),
and its own word that it could not load GPU libraries outranks an emulation that finds them all.

TensorFlow 2.16.1's libtensorflow_framework.so.2 reaches only nvidia/cuda_runtime/lib, 2.17.0's
every wheel (tensorflow/tensorflow#63362); the real files are read from the registry's wheels."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from cudnn_doctor.system.binaries import read_binary
from tests.conftest import LINUX_BASE, machine, run
from tests.remote_wheel import wheel_member

SITE = "/home/dev/.venv/lib/python3.11/site-packages"
TF = f"{SITE}/tensorflow/libtensorflow_framework.so.2"
RUNPATH_2_16 = [
    "$ORIGIN/",
    "$ORIGIN/../../tensorrt",
    "$ORIGIN/../tensorrt",
    "$ORIGIN/../../nvidia/cuda_runtime/lib",
    "$ORIGIN/../nvidia/cuda_runtime/lib",
]
RUNPATH_2_17 = [
    *RUNPATH_2_16[:3],
    *(f"$ORIGIN/{up}nvidia/{w}/lib" for w in ("cublas", "cudnn", "cuda_runtime") for up in ("../../", "../")),
]
CANNOT_DLOPEN = "W tensorflow/core/common_runtime/gpu/gpu_device.cc:2251] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly"
SYSTEM_LIBRARIES = (
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
)
WHEELS = {"nvidia-cudnn-cu12": "8.9.7.29", "nvidia-cublas-cu12": "12.3.4.1", "nvidia-cuda-runtime-cu12": "12.3.101"}


def _wheel_files() -> dict[str, Any]:
    lib = f"{SITE}/nvidia"
    return {
        f"{lib}/cuda_runtime/lib/libcudart.so.12": {"soname": "libcudart.so.12", "imports": ["libc.so.6"]},
        f"{lib}/cublas/lib/libcublas.so.12": {
            "soname": "libcublas.so.12",
            "imports": ["libcublasLt.so.12", "libc.so.6"],
            "rpath": ["$ORIGIN"],
        },
        f"{lib}/cublas/lib/libcublasLt.so.12": {"soname": "libcublasLt.so.12", "imports": ["libc.so.6"]},
        f"{lib}/cudnn/lib/libcudnn.so.8": {"soname": "libcudnn.so.8", "imports": ["libc.so.6"], "loads": []},
        f"{lib}/cudnn/include/cudnn_version.h": {
            "text": "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 7\n"
        },
    }


# libtensorflow_cc.so.2 of 2.16.1 (readelf of the real wheel, its nvidia entries): every wheel, but it is built on
# libtensorflow_framework.so.2, whose dso_loader makes the dlopen calls
CC = f"{SITE}/tensorflow/libtensorflow_cc.so.2"
CC_2_16 = {
    "soname": "libtensorflow_cc.so.2",
    "imports": ["libtensorflow_framework.so.2", "libc.so.6"],
    "loads": ["libcuda.so.1"],
    "rpath": [
        "$ORIGIN/",
        *(
            f"$ORIGIN/{up}nvidia/{w}/lib"
            for w in ("cufft", "cusolver", "cusparse", "cudnn", "cublas", "cuda_cupti", "cuda_runtime")
            for up in ("../../", "../")
        ),
    ],
}


def tensorflow_machine(
    loader: dict[str, Any], log: str = CANNOT_DLOPEN, env: Optional[dict[str, str]] = None, **more_files: Any
) -> dict[str, Any]:
    """TensorFlow 2.16 with its [and-cuda] wheels in a venv, the GPU not registered; `loader` is libtensorflow_framework.so.2,
    beside the real libtensorflow_cc.so.2 of 2.16.1 (built on it)."""
    report = {
        "version": "2.16.1",
        "built_with_cuda": True,
        "build_info": {"cuda_version": "12.3", "cudnn_version": "8", "is_cuda_build": True},
        "gpus": [],
        "log": log,
    }
    python = {
        **LINUX_BASE["pythons"][0],
        "packages": {"tensorflow": "2.16.1", **WHEELS},
        "frameworks": {"tensorflow": report},
    }
    system = {f"/usr/lib/x86_64-linux-gnu/{name}": {"soname": name} for name in SYSTEM_LIBRARIES}
    files = {
        TF: loader,
        CC: CC_2_16,
        **_wheel_files(),
        **more_files,
        **system,
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1": {"soname": "libcuda.so.1", "imports": ["libc.so.6"]},
    }
    return machine(LINUX_BASE, files=files, pythons=[python], env=env or {})


def _loader(runpath: list[str]) -> dict[str, Any]:
    return {
        "soname": "libtensorflow_framework.so.2",
        "imports": ["libc.so.6"],
        "loads": ["libcuda.so.1"],
        "rpath": runpath,
    }


def missing(document: dict[str, Any]) -> list:
    return [f for f in run(document).findings if f.id == "dependency-missing"]


def test_a_runpath_that_misses_the_cudnn_wheel_is_the_finding_and_the_fix_puts_it_on_the_path():
    found = missing(tensorflow_machine(_loader(RUNPATH_2_16)))
    names = {f.evidence["name"] for f in found}
    assert names == {"libcudnn.so.8", "libcublas.so.12"}, [f.detail for f in found]
    cudnn = next(f for f in found if f.evidence["name"] == "libcudnn.so.8")
    assert (
        TF.rsplit("/", 1)[1] in cudnn.detail
        and "nvidia-cudnn-cu12 8.9.7.29" in cudnn.detail
        and "does not search there" in cudnn.detail
    )
    assert "Cannot dlopen some GPU libraries" in cudnn.detail  # the framework's own word, quoted
    assert any(f"{SITE}/nvidia/cudnn/lib" in step and "LD_LIBRARY_PATH" in step for step in cudnn.fix), cudnn.fix
    assert not any("pip install" in step for f in found for step in f.fix), "never install what is installed"


def test_a_runpath_that_reaches_every_wheel_is_healthy():
    assert not missing(tensorflow_machine(_loader(RUNPATH_2_17), log=""))


def test_ld_library_path_reaches_them_too():
    env = {"LD_LIBRARY_PATH": f"{SITE}/nvidia/cudnn/lib:{SITE}/nvidia/cublas/lib"}
    assert not missing(tensorflow_machine(_loader(RUNPATH_2_16), log="", env=env))


def test_a_framework_that_preloads_the_wheels_in_python_is_not_judged_by_its_runpath():
    init = {
        f"{SITE}/tensorflow/__init__.py": {
            "text": "import ctypes, os\nctypes.CDLL(os.path.join(_site, 'nvidia', 'cudnn', 'lib', 'libcudnn.so.8'))\n"
        }
    }
    found = missing(tensorflow_machine(_loader(RUNPATH_2_16), log="", **init))
    assert not found, [f.detail for f in found]


def test_a_loader_without_an_nvidia_runpath_gives_no_judgement():
    """No evidence of how the framework reaches the wheels: no guess from another framework's way."""
    assert not missing(tensorflow_machine(_loader(["$ORIGIN/"]), log=""))


def test_its_own_word_outranks_an_emulation_that_finds_everything():
    found = missing(tensorflow_machine(_loader(RUNPATH_2_17)))
    assert len(found) == 1, [f.detail for f in found]
    assert "Cannot dlopen some GPU libraries" in found[0].detail and found[0].evidence["name"] is None
    assert any("TF_CPP_MAX_VLOG_LEVEL=3" in step for step in found[0].fix), found[
        0
    ].fix  # its own switch, from the knowledge
    assert not missing(
        tensorflow_machine(_loader(RUNPATH_2_17), log=CANNOT_DLOPEN.replace("Cannot dlopen", "Created device"))
    )


def test_a_part_the_message_names_becomes_its_file():
    """JAX's "Unable to load cuDNN" names a part: the build's cuDNN major gives the file, and the wheel holding it."""
    jax = f"{SITE}/jax_plugins/xla_cuda12/xla_cuda_plugin.so"
    plugin = {
        "imports": ["libc.so.6"],
        "loads": ["libcuda.so.1"],
        "dt_rpath": ["$ORIGIN/../../nvidia/cudnn/lib", "$ORIGIN/../../nvidia/cuda_runtime/lib"],
    }
    report = {"version": "0.4.30", "devices": ["cpu:0"], "log": "RuntimeError: Unable to load cuDNN. Is it installed?"}
    packages = {
        "jax": "0.4.30",
        "jaxlib": "0.4.30",
        "jax-cuda12-plugin": "0.4.30",
        "jax-cuda12-pjrt": "0.4.30",
        **WHEELS,
    }
    python = {**LINUX_BASE["pythons"][0], "packages": packages, "frameworks": {"jax": report}}
    document = machine(LINUX_BASE, files={jax: plugin, **_wheel_files()}, pythons=[python])
    diagnosis = run(document)
    assert any(
        r.framework == "jax" and any(s.requester == jax for s in r.steps) for r in diagnosis.facts.resolutions
    ), "the plugin is the loader"
    found = [f for f in diagnosis.findings if f.id == "dependency-missing"]
    assert {f.evidence["name"] for f in found} == {"libcublas.so.12"}, [
        f.detail for f in found
    ]  # cuDNN is reached: the message names no gap there


# --- the real files ----------------------------------------------------------------------------


def _real_loader(version: str, tag: str = "cp311-cp311-manylinux_2_17_x86_64") -> dict[str, Any]:
    path = wheel_member("tensorflow", version, tag, "tensorflow/libtensorflow_framework.so.2")
    info = read_binary(str(path))
    return {
        "soname": info.soname,
        "imports": list(info.imports),
        "loads": list(info.loads),
        "rpath": list(info.runpath),
    }


@pytest.mark.network
def test_real_tensorflow_2_16_1_misses_its_cudnn_wheel():
    loader = _real_loader("2.16.1")
    assert loader["loads"] == ["libcuda.so.1"]  # the names it dlopens are built at run time: only the driver is spelt
    found = missing(tensorflow_machine(loader))
    assert {f.evidence["name"] for f in found} >= {"libcudnn.so.8", "libcublas.so.12"}, [f.detail for f in found]


@pytest.mark.network
@pytest.mark.parametrize(
    "version, tag",
    [
        ("2.17.0", "cp311-cp311-manylinux_2_17_x86_64"),
        ("2.18.0", "cp311-cp311-manylinux_2_17_x86_64"),
        ("2.21.0", "cp311-cp311-manylinux_2_27_x86_64"),
    ],
)
def test_real_tensorflow_from_2_17_reaches_them(version, tag):
    assert not missing(tensorflow_machine(_real_loader(version, tag), log=""))


@pytest.mark.network
def test_real_jax_cuda12_plugin_reaches_the_wheels_through_its_rpath():
    """jax-cuda12-pjrt 0.4.30's xla_cuda_plugin.so has a DT_RPATH naming every nvidia wheel folder: reached, no finding."""
    path = wheel_member(
        "jax-cuda12-pjrt", "0.4.30", "manylinux2014_x86_64", "jax_plugins/xla_cuda12/xla_cuda_plugin.so"
    )
    info = read_binary(str(path))
    assert any("nvidia/cudnn/lib" in entry for entry in info.rpath), info.rpath
    plugin = {"imports": list(info.imports), "loads": list(info.loads), "dt_rpath": list(info.rpath)}
    report = {"version": "0.4.30", "devices": ["cuda:0"]}
    packages = {
        "jax": "0.4.30",
        "jaxlib": "0.4.30",
        "jax-cuda12-plugin": "0.4.30",
        "jax-cuda12-pjrt": "0.4.30",
        **WHEELS,
    }
    python = {**LINUX_BASE["pythons"][0], "packages": packages, "frameworks": {"jax": report}}
    system = {f"/usr/lib/x86_64-linux-gnu/{name}": {"soname": name} for name in SYSTEM_LIBRARIES}
    system["/usr/lib/x86_64-linux-gnu/libcuda.so.1"] = {"soname": "libcuda.so.1", "imports": ["libc.so.6"]}
    document = machine(
        LINUX_BASE,
        files={f"{SITE}/jax_plugins/xla_cuda12/xla_cuda_plugin.so": plugin, **_wheel_files(), **system},
        pythons=[python],
    )
    diagnosis = run(document)
    assert any(r.framework == "jax" for r in diagnosis.facts.resolutions), "its plugin is its loader"
    assert not [f for f in diagnosis.findings if f.id == "dependency-missing"], [f.detail for f in diagnosis.findings]
