"""Windows DLL search per load: the flags of the call that loads a root decide where its imports are searched.

ONNX Runtime loads its CUDA provider with LOAD_WITH_ALTERED_SEARCH_PATH (the provider's folder
first, not python.exe's), CPython loads extension modules with LOAD_LIBRARY_SEARCH_DEFAULT_DIRS |
LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR (no PATH), torch preloads torch\\lib the same way with a PATH
fallback; a run-time LoadLibrary by name is a new, standard search.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from cudnn_doctor.loader import windows
from cudnn_doctor.loader.resolve import Resolver, Root
from cudnn_doctor.system.fixture import FixtureSystem
from tests.child_scripts import child_module
from tests.conftest import TEST_CACHE, WINDOWS_BASE, link_real_file, machine, onnxruntime_gpu_python, run

ENV = "C:\\Users\\dev\\env"
PYTHON = f"{ENV}\\python.exe"
SITE = f"{ENV}\\Lib\\site-packages"
CAPI = f"{SITE}\\onnxruntime\\capi"
PROVIDER = f"{CAPI}\\onnxruntime_providers_cuda.dll"
TORCH_LIB = f"{SITE}\\torch\\lib"
SYS32 = "C:\\Windows\\System32"
DLL = {"size": 1000, "imports": ["KERNEL32.dll"], "loads": []}
CUDA12 = ("cudart64_12.dll", "cublas64_12.dll", "cublasLt64_12.dll")
CUDNN9_PARTS = ("graph", "ops", "cnn", "adv", "engines_precompiled", "engines_runtime_compiled", "heuristic")


def _system(files: dict[str, Any], path: str = f"{SYS32};C:\\Windows") -> FixtureSystem:
    return FixtureSystem(machine(WINDOWS_BASE, files=files, env={"PATH": path}))


def _places(
    system: FixtureSystem, mode: str, load_dir: str | None = None, user: tuple[str, ...] = ()
) -> list[tuple[str, str]]:
    return windows.search_places(system, PYTHON, mode, load_dir, user)


def test_each_mode_searches_its_own_folders_in_microsofts_order():
    system = _system({}, path="C:\\Tools;C:\\Windows\\System32")
    standard = _places(system, windows.STANDARD, CAPI, ("C:\\Added",))
    assert [f for _, f in standard] == [
        ENV,
        SYS32,
        "C:\\Windows\\System",
        "C:\\Windows",
        "C:\\Tools",
        SYS32,
    ]  # no add_dll_directory folder
    altered = _places(system, windows.ALTERED, CAPI, ("C:\\Added",))
    assert (
        [f for _, f in altered][:2] == [CAPI, SYS32]
        and ENV not in [f for _, f in altered]
        and "C:\\Tools" in [f for _, f in altered]
    )
    default = _places(system, windows.DEFAULT_DIRS, CAPI, ("C:\\Added",))
    assert default == [
        ("DLL folder", CAPI),
        ("executable folder", ENV),
        ("add_dll_directory", "C:\\Added"),
        ("system folder", SYS32),
    ]
    torch = _places(system, windows.DEFAULT_DIRS_THEN_PATH, TORCH_LIB, (TORCH_LIB,))
    assert [f for _, f in torch][:4] == [TORCH_LIB, ENV, TORCH_LIB, SYS32] and [f for _, f in torch][-3:] == [
        TORCH_LIB,
        "C:\\Tools",
        SYS32,
    ]
    assert _places(system, windows.ALTERED) == _places(system, windows.STANDARD)  # no path given: the standard search
    with pytest.raises(ValueError):
        _places(system, "sideways")


def _ort(files: dict[str, Any], path: str = f"{SYS32};C:\\Windows", version: str = "1.20.1") -> dict[str, Any]:
    pythons = [onnxruntime_gpu_python(PYTHON, version)]
    base = {f"{SITE}\\onnxruntime\\__init__.py": {"text": ""}, f"{CAPI}\\onnxruntime_providers_shared.dll": DLL}
    return machine(WINDOWS_BASE, files={**base, **files}, env={"PATH": path}, pythons=pythons)


def _provider(imports: tuple[str, ...] = (*CUDA12, "cudnn64_9.dll"), loads: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        PROVIDER: {
            "size": 5000,
            "version": "1.20.1",
            "imports": ["onnxruntime_providers_shared.dll", *imports, "KERNEL32.dll"],
            "loads": list(loads),
        }
    }


def _cudnn9(folder: str) -> dict[str, Any]:
    files = {
        f"{folder}\\cudnn64_9.dll": {
            "size": 300000,
            "version": "9.1.0.70",
            "imports": ["KERNEL32.dll"],
            "loads": [f"cudnn_{p}64_9.dll" for p in CUDNN9_PARTS],
        }
    }
    files.update(
        {
            f"{folder}\\cudnn_{p}64_9.dll": {
                "size": 9000000,
                "version": "9.1.0.70",
                "imports": ["KERNEL32.dll"],
                "loads": [],
            }
            for p in CUDNN9_PARTS
        }
    )
    return files


def _steps(document: dict[str, Any]) -> dict[str, Any]:
    diagnosis = run(document)
    resolution = next(r for r in diagnosis.facts.resolutions if r.framework == "onnxruntime")
    return {
        "ids": {f.id for f in diagnosis.findings},
        "findings": diagnosis.findings,
        "steps": {(s.how, s.name.lower()): s for s in resolution.steps},
    }


def test_cudnn_and_cublas_beside_the_provider_are_found_thanks_to_the_altered_search_path():
    files = {**_provider(), **_cudnn9(CAPI), **{f"{CAPI}\\{name}": DLL for name in CUDA12}}
    result = _steps(
        _ort(files, path=f"{SYS32};C:\\Windows;{CAPI}")
    )  # sub-libraries: run-time loads, found through PATH
    for name in ("cudnn64_9.dll", "cublas64_12.dll", "cudart64_12.dll"):
        root = result["steps"][("root", name)]
        assert root.winner == f"{CAPI}\\{name}" and root.candidates[0].place == "DLL folder", root
        assert ENV not in root.searched  # the altered search drops python.exe's folder
    assert not result["ids"] & {"cudnn-missing", "cuda-libs-not-found", "dependency-missing"}, result["findings"]


def test_near_miss_beside_python_exe_the_standard_search_would_find_it_the_altered_one_does_not():
    files = {**_provider(), **_cudnn9(CAPI), **{f"{CAPI}\\{name}": DLL for name in CUDA12 if name != "cublas64_12.dll"}}
    files[f"{ENV}\\cublas64_12.dll"] = DLL  # beside python.exe: the application folder
    result = _steps(_ort(files, path=f"{SYS32};C:\\Windows;{CAPI}"))
    root = result["steps"][("root", "cublas64_12.dll")]
    assert root.winner is None and root.searched[0] == CAPI and ENV not in root.searched
    assert "cuda-libs-not-found" in result["ids"] or "dependency-missing" in result["ids"], result["findings"]
    standard = Resolver(FixtureSystem(_ort(files))).resolve("which", PYTHON, ["cublas64_12.dll"])
    assert standard.steps[0].winner == f"{ENV}\\cublas64_12.dll"  # what a plain LoadLibrary would have taken


def test_what_the_provider_loads_at_run_time_is_not_searched_in_its_folder():
    """ONNX Runtime ≥ 1.2x loads cuDNN with LoadLibrary by name, after the provider is loaded: a new, standard search."""
    files = {
        **_provider(imports=CUDA12, loads=("cudnn64_9.dll",)),
        **_cudnn9(CAPI),
        **{f"{CAPI}\\{name}": DLL for name in CUDA12},
    }
    result = _steps(_ort(files))
    root = result["steps"][("root", "cudnn64_9.dll")]
    assert root.winner is None and root.searched[0] == ENV and CAPI not in root.searched
    assert "cudnn-missing" in result["ids"]
    assert result["steps"][("root", "cublas64_12.dll")].winner == f"{CAPI}\\cublas64_12.dll"


def test_cudnn_sub_libraries_beside_the_provider_need_path_cudnn_loads_them_itself():
    files = {**_provider(), **_cudnn9(CAPI), **{f"{CAPI}\\{name}": DLL for name in CUDA12}}
    result = _steps(_ort(files))
    assert result["steps"][("root", "cudnn64_9.dll")].winner == f"{CAPI}\\cudnn64_9.dll"
    graph = result["steps"][("load", "cudnn_graph64_9.dll")]
    assert graph.winner is None and CAPI not in graph.searched and graph.searched[0] == ENV
    assert any(f.id == "dependency-missing" and f.evidence["name"] == "cudnn_graph64_9.dll" for f in result["findings"])


def test_a_python_extension_module_never_searches_path():
    pyd = f"{SITE}\\ext\\_native.cp311-win_amd64.pyd"
    files = {pyd: {"size": 2000, "imports": ["helper.dll", "beside.dll", "added.dll", "KERNEL32.dll"], "loads": []}}
    files.update(
        {
            "C:\\Tools\\helper.dll": DLL,
            f"{SITE}\\ext\\beside.dll": DLL,
            "C:\\Added\\added.dll": DLL,
            "C:\\Tools\\added.dll": DLL,
        }
    )
    system = _system(files, path=f"C:\\Tools;{SYS32}")
    steps = {s.name: s for s in Resolver(system).resolve("ext", PYTHON, [pyd], ["C:\\Added"]).steps}
    assert (
        steps["helper.dll"].winner is None and "C:\\Tools" not in steps["helper.dll"].searched
    )  # only on PATH: not found
    assert steps["beside.dll"].winner == f"{SITE}\\ext\\beside.dll"  # LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR
    assert steps["added.dll"].winner == "C:\\Added\\added.dll"  # os.add_dll_directory
    assert steps["helper.dll"].searched == (f"{SITE}\\ext", ENV, "C:\\Added", SYS32)
    # the same file loaded the standard way (a DLL named as a root without flags) does search PATH
    plain = {s.name: s for s in Resolver(system).resolve("dll", PYTHON, [Root(pyd)], ["C:\\Added"]).steps}
    assert plain["helper.dll"].winner == "C:\\Tools\\helper.dll" and plain["added.dll"].winner == "C:\\Tools\\added.dll"


def test_imports_of_imports_keep_the_roots_folder_and_run_time_loads_start_over():
    sub = "C:\\Vendor\\sub"
    files = {
        f"{CAPI}\\plugin.dll": {"size": 10, "imports": ["mid.dll"], "loads": ["late.dll"]},
        f"{sub}\\mid.dll": {"size": 10, "imports": ["leaf.dll"], "loads": []},
        f"{CAPI}\\leaf.dll": DLL,
        f"{sub}\\leaf.dll": DLL,
        f"{CAPI}\\late.dll": DLL,
        f"{ENV}\\late.dll": DLL,
    }
    system = _system(files, path=f"{SYS32};{sub}")
    steps = {
        s.name: s for s in Resolver(system).resolve("x", PYTHON, [Root(f"{CAPI}\\plugin.dll", windows.ALTERED)]).steps
    }
    assert steps["mid.dll"].winner == f"{sub}\\mid.dll"  # found on PATH, still within the altered load
    assert steps["leaf.dll"].winner == f"{CAPI}\\leaf.dll"  # the folder of the DLL the call named, not mid.dll's
    assert (
        steps["late.dll"].winner == f"{ENV}\\late.dll"
    )  # LoadLibrary later: standard search, python.exe's folder first


def _torch(files: dict[str, Any], path: str) -> dict[str, Any]:
    pythons = [
        {
            "executable": PYTHON,
            "version": "3.11.9",
            "current": True,
            "kind": "venv",
            "packages": {"torch": "2.4.1+cu124"},
            "frameworks": {"torch": {"version": "2.4.1+cu124", "cuda": "12.4", "cudnn": 90100, "cuda_available": True}},
        }
    ]
    return machine(
        WINDOWS_BASE, files={f"{SITE}\\torch\\__init__.py": {"text": ""}, **files}, env={"PATH": path}, pythons=pythons
    )


def test_torch_preload_searches_its_dll_folders_falls_back_to_path_and_later_loads_do_not_see_them():
    library_bin = f"{ENV}\\Library\\bin"
    files = {
        f"{TORCH_LIB}\\torch_cuda.dll": {
            "size": 10,
            "imports": ["zlibwapi.dll", "nvToolsExt64_1.dll", "KERNEL32.dll"],
            "loads": ["late.dll"],
        },
        "C:\\Tools\\zlibwapi.dll": DLL,  # only on PATH: found by torch's LoadLibraryW fallback
        f"{library_bin}\\nvToolsExt64_1.dll": DLL,  # conda's Library\\bin: torch adds it with os.add_dll_directory
        f"{SYS32}\\nvToolsExt64_1.dll": DLL,  # System32 comes after the added folders
        f"{library_bin}\\late.dll": DLL,  # a later LoadLibrary by name does not search add_dll_directory folders
    }
    resolution = next(r for r in run(_torch(files, f"C:\\Tools;{SYS32}")).facts.resolutions if r.framework == "torch")
    steps = {(s.how, s.name): s for s in resolution.steps}
    assert steps[("root", f"{TORCH_LIB}\\torch_cuda.dll")].winner == f"{TORCH_LIB}\\torch_cuda.dll"
    assert steps[("import", "zlibwapi.dll")].winner == "C:\\Tools\\zlibwapi.dll"
    assert steps[("import", "nvToolsExt64_1.dll")].winner == f"{library_bin}\\nvToolsExt64_1.dll"
    assert steps[("import", "zlibwapi.dll")].searched[:4] == (TORCH_LIB, ENV, library_bin, SYS32)
    late = steps[("load", "late.dll")]
    assert late.winner is None and library_bin not in late.searched and TORCH_LIB not in late.searched


# --- the real ONNX Runtime provider DLL --------------------------------------------------------

REAL_PROVIDER = (
    TEST_CACHE
    / "wheels"
    / "win_amd64"
    / "onnxruntime-gpu-1.31.1"
    / "extracted"
    / "onnxruntime"
    / "capi"
    / "onnxruntime_providers_cuda.dll"
)


@pytest.mark.skipif(
    not REAL_PROVIDER.is_file(), reason="the onnxruntime-gpu 1.31.1 win_amd64 wheel is not in the test cache"
)
@pytest.mark.parametrize("beside_python", [False, True])
def test_real_onnxruntime_provider_finds_cublas_in_its_own_folder(tmp_path, beside_python):
    """onnxruntime-gpu 1.31.1's provider imports cuBLAS 13 and onnxruntime_providers_shared.dll and loads cuDNN at run time."""
    link_real_file(REAL_PROVIDER, tmp_path / "provider.dll")
    folder = ENV if beside_python else CAPI
    files: dict[str, Any] = {PROVIDER: {"source": "provider.dll"}, f"{CAPI}\\onnxruntime_providers_shared.dll": DLL}
    files.update({f"{folder}\\{name}": DLL for name in ("cublas64_13.dll", "cublasLt64_13.dll")})
    files.update(
        {
            f"{SYS32}\\{name}": DLL
            for name in ("MSVCP140.dll", "MSVCP140_ATOMIC_WAIT.dll", "VCRUNTIME140.dll", "VCRUNTIME140_1.dll")
        }
    )
    document = machine(WINDOWS_BASE, files=files)
    (tmp_path / "machine.yaml").write_text(yaml.safe_dump(document))
    system = FixtureSystem.from_file(tmp_path / "machine.yaml")
    steps = {
        (s.how, s.name.lower()): s
        for s in Resolver(system).resolve("onnxruntime", PYTHON, [Root(PROVIDER, windows.ALTERED)]).steps
    }
    assert steps[("import", "onnxruntime_providers_shared.dll")].winner == f"{CAPI}\\onnxruntime_providers_shared.dll"
    cublas = steps[("import", "cublas64_13.dll")]
    if beside_python:  # the standard search would take it; the provider's load never looks there
        assert cublas.winner is None and cublas.searched[0] == CAPI and ENV not in cublas.searched
    else:
        assert (
            cublas.winner == f"{CAPI}\\cublas64_13.dll"
            and steps[("import", "cublaslt64_13.dll")].winner == f"{CAPI}\\cublasLt64_13.dll"
        )
    assert steps[("load", "cudnn64_9.dll")].searched[0] == ENV  # a run-time LoadLibrary: the standard order


# --- the live check and `which` ----------------------------------------------------------------


def test_only_standard_loads_by_name_are_checked_against_a_real_load(monkeypatch):
    """A name the provider imports is searched from the provider's folder: a bare LoadLibrary cannot repeat that."""
    files = {
        **_provider(imports=("cublas64_12.dll", "cublasLt64_12.dll")),
        **_cudnn9(CAPI),
        **{f"{CAPI}\\{name}": DLL for name in CUDA12},
    }
    system = FixtureSystem(_ort(files, path=f"{SYS32};C:\\Windows;{CAPI}"))
    asked: list[list[str]] = []
    monkeypatch.setattr(
        system, "mapped_libraries", lambda exe, names: asked.append(list(names)) or {"loaded": {}, "errors": {}}
    )
    from cudnn_doctor.diagnose import diagnose

    diagnose(system)
    assert asked and "cublas64_12.dll" not in asked[0] and {"cudart64_12.dll", "cudnn64_9.dll"} <= set(asked[0])


def test_the_real_load_asks_windows_for_the_standard_order(monkeypatch):
    """ctypes.CDLL(name) on Python >= 3.8 passes LOAD_LIBRARY_SEARCH_DEFAULT_DIRS (no PATH): the probe must not."""
    map_probe = child_module("map_probe")

    calls: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(map_probe.ctypes, "CDLL", lambda name, **kw: calls.append((name, kw)))
    monkeypatch.setattr(map_probe.sys, "platform", "win32")
    monkeypatch.setattr(map_probe, "_path_windows", lambda name: f"C:\\found\\{name}")
    map_probe.main(["cudnn64_9.dll"])
    assert calls == [("cudnn64_9.dll", {"winmode": 0})]


def test_which_on_an_extension_module_says_how_it_searches(tmp_path, capsys):
    from cudnn_doctor.cli import main

    pyd = f"{SITE}\\ext\\_native.pyd"
    document = machine(
        WINDOWS_BASE,
        files={pyd: {"size": 10, "imports": ["helper.dll"], "loads": []}, "C:\\Tools\\helper.dll": DLL},
        env={"PATH": "C:\\Tools"},
    )
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(document))
    code = main(["which", pyd, "--fixture", str(tmp_path / "m.yaml"), "--python", PYTHON])
    out = capsys.readouterr().out
    assert code == 1 and "helper.dll ← _native.pyd: NOT FOUND" in out
    assert (
        "loaded with LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR (a Python extension module)"
        in out
    )
    assert "never PATH" in out
