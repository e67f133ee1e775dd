"""What keeps `check --no-frameworks` quick (issue 15): modules it does not import, and the shortcuts it takes
giving the same answers as the long way."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading

import pytest

from cudnn_doctor.facts import WheelRequirement
from cudnn_doctor.loader import driver, linux
from cudnn_doctor.loader.index import FolderIndex
from cudnn_doctor.paths import PathRules
from cudnn_doctor.probes.wheel_files import requirements_of
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import REPO, gallery_paths, shared_fixture_paths
from tests.unit.checks.test_driver_libraries import _cache, _linux

# Imported by none of these runs: each was measured on the common path before (ms of import each) and now loads
# only where it is used (a Windows job object, a marker to evaluate, a table to build from the JSON, a report).
NEVER_ON_A_FIXTURE = (
    "ctypes",
    "platform",
    "uuid",
    "pickle",
    "cudnn_doctor.knowledge.schema",
    "packaging.markers",
    "packaging.requirements",
    "rich",
    "elftools",
    "pefile",
    "pynvml",
    "email",
    "zipfile",
    "dataclasses",
    "inspect",
    "platformdirs",  # on Windows it imports ctypes: a replayed fixture never looks for the user's `kb update`
)
NEVER_LIVE = (
    "pickle",
    "uuid",
    "cudnn_doctor.knowledge.schema",
    "yaml",
    "rich",
    "dataclasses",
)  # whatever the machine has

_MODULES_AFTER = """
import io, contextlib, json, sys
from cudnn_doctor.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(*argv: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", _MODULES_AFTER, *argv], capture_output=True, text=True, check=True, env=env, timeout=120
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _loaded_by_packaging() -> set[str]:
    """What `packaging`'s version and specifier modules import themselves (some releases import packaging.tags,
    hence platform): not the doctor's to avoid."""
    code = "import json, sys; import packaging.specifiers, packaging.version; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _machines() -> list:
    """The shared yardstick where it lies beside the repository, else the gallery: a fresh clone has only that."""
    return shared_fixture_paths() or gallery_paths()


def _fixture_samples() -> list:
    """One Linux and one Windows machine (shared names run `25-linux-…`, `seed-win-…`; the gallery's `linux-…`)."""
    paths = _machines()
    linux_one = next((p for p in paths if "-linux-" in f"-{p.name}"), None)
    windows_one = next((p for p in paths if "-win-" in f"-{p.name}"), None)
    return [p for p in (linux_one, windows_one) if p is not None]


@pytest.mark.live
@pytest.mark.parametrize("fixture", _fixture_samples(), ids=lambda p: p.name)
def test_check_on_a_fixture_imports_none_of_the_slow_modules(fixture):
    loaded = _modules_after("check", "--no-frameworks", "--fixture", str(fixture))
    assert "cudnn_doctor.diagnose" in loaded  # it ran
    assert sorted((set(NEVER_ON_A_FIXTURE) - _loaded_by_packaging()) & loaded) == []


def _fix_kinds_found(*argv: str) -> list:
    """The fix_kind of each finding's rule on a run of `check --format json`."""
    import cudnn_doctor.checks  # noqa: F401  (registers the rules)
    from cudnn_doctor.checks.registry import RULES

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "cudnn_doctor", *argv, "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return [RULES[f["id"]].fix_kind if f["id"] in RULES else None for f in json.loads(done.stdout)["findings"]]


@pytest.mark.live
@pytest.mark.parametrize("fmt", ["terminal", "json"])
@pytest.mark.parametrize("fixture", _machines()[:8], ids=lambda p: p.name)
def test_fixes_load_only_for_a_finding_whose_rule_has_a_fix(fixture, fmt):
    """`cudnn_doctor.fixes` (dataclasses, planners: ~15 ms) is imported by a report only when some finding may be fixed."""
    argv = ("check", "--no-frameworks", "--fixture", str(fixture))
    fixable = any(kind is not None for kind in _fix_kinds_found(*argv))
    loaded = "cudnn_doctor.fixes" in _modules_after(*argv, "--format", fmt)
    if fmt == "json":  # every finding carries `autofix`: asked of the planners exactly when its rule has a fix
        assert loaded == fixable
    else:  # the terminal asks only for the causes it shows, never for a finding no rule fixes
        assert fixable or not loaded


@pytest.mark.live
def test_check_on_this_machine_builds_no_table_and_imports_none_of_the_slow_modules():
    loaded = _modules_after("check", "--no-frameworks")
    assert "cudnn_doctor.diagnose" in loaded
    assert sorted(set(NEVER_LIVE) & loaded) == []


@pytest.mark.live
def test_the_tests_above_would_see_a_slow_module(tmp_path):
    """A user's --kb rows are checked against the schema: that run imports it, and the same check says so."""
    kb = tmp_path / "kb.yaml"
    kb.write_text(
        'torch:\n  index_url:\n    template: "https://download.pytorch.org/whl/cu{tag}"\n    source: "https://pytorch.org/ (test)"\n'
    )
    fixture = _fixture_samples()[:1] or [None]
    argv = ["check", "--no-frameworks", "--kb", str(kb)] + (["--fixture", str(fixture[0])] if fixture[0] else [])
    assert "cudnn_doctor.knowledge.schema" in _modules_after(*argv)


# --- driver files: the listing's name is basename() --------------------------------------------


def test_a_listed_file_name_is_its_basename_on_this_machine():
    rules = PathRules("linux")
    name_of = driver._name_of(False)
    checked = 0
    for folder in linux.default_dirs("x86_64") + ["/usr/bin", "/etc"]:
        try:
            entries = [entry.path for entry in os.scandir(folder)]
        except OSError:
            continue
        for path in entries:
            assert name_of(path) == rules.basename(path), path
            checked += 1
    assert checked > 10


@pytest.mark.parametrize(
    "path",
    [
        "C:\\Windows\\System32\\nvcuda.dll",
        "C:/Windows/System32/NVML.DLL",
        "D:\\x/y\\cudnn64_8.dll",
        "C:\\cudnn.dll",
        "\\\\server\\share\\a\\b.dll",
    ],
)
def test_a_listed_windows_file_name_is_its_basename(path):
    assert driver._name_of(True)(path) == PathRules("windows").basename(path)


# --- the loader cache read in a thread ------------------------------------------------------------


class _Threaded(FixtureSystem):
    runs_concurrently = True

    def __init__(self, document):
        super().__init__(document)
        self.threads: list[str] = []

    def run(self, argv, timeout=10.0):
        self.threads.append(threading.current_thread().name)
        return super().run(argv, timeout)


def test_the_prefetched_loader_cache_is_the_cache_read_in_place():
    document = _linux({}, commands=_cache("/opt/nvidia/lib/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"))
    in_place = FolderIndex(FixtureSystem(document))
    system = _Threaded(document)
    prefetched = FolderIndex(system)
    prefetched.prefetch()
    assert prefetched.cache == in_place.cache and prefetched.cache_known == in_place.cache_known is True
    assert system.threads == ["ldconfig"]  # read in the thread, once
    assert prefetched.cache["libcuda.so.1"] == "/opt/nvidia/lib/libcuda.so.1"


def test_no_thread_for_a_system_that_runs_one_command_at_a_time():
    system = FixtureSystem(_linux({}, commands=_cache("/opt/nvidia/lib/libcuda.so.1")))
    index = FolderIndex(system)
    index.prefetch()
    assert index._reading is None and index.cache["libcuda.so.1"] == "/opt/nvidia/lib/libcuda.so.1"


def test_a_failed_prefetch_reads_again_in_place():
    class Failing(_Threaded):
        def run(self, argv, timeout=10.0):
            if threading.current_thread().name == "ldconfig":
                raise OSError("no")
            return super().run(argv, timeout)

    system = Failing(_linux({}, commands=_cache("/opt/nvidia/lib/libcuda.so.1")))
    index = FolderIndex(system)
    index.prefetch()
    assert index.cache["libcuda.so.1"] == "/opt/nvidia/lib/libcuda.so.1"


def test_the_live_system_says_it_runs_commands_concurrently():
    from cudnn_doctor.system.live import LiveSystem

    assert LiveSystem.runs_concurrently is True and not getattr(FixtureSystem, "runs_concurrently", False)


# --- Requires-Dist: unwanted lines are not parsed ----------------------------------------------------

_TORCH_METADATA = """Metadata-Version: 2.1
Name: torch
Version: 2.5.1
Requires-Dist: filelock
Requires-Dist: typing-extensions>=4.8.0
Requires-Dist: nvidia-cuda-runtime-cu12==12.4.127; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: Nvidia_CuBLAS.cu12 ==12.4.5.8 ; platform_system == "Linux"
Requires-Dist: cuda-toolkit[cudart]==12.4; extra == "cuda"
Requires-Dist: triton==3.1.0; platform_system == "Linux" and platform_machine == "x86_64" and python_version < "3.13"
Requires-Dist: opt-einsum>=3.3; extra == "opt-einsum"
Requires-Dist: ???

Requires-Dist: nvidia-in-the-body
"""
_LINUX = {
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "python_version": "3.11",
    "python_full_version": "3.11.9",
    "sys_platform": "linux",
}


def _nvidia(name: str) -> bool:
    return name.startswith("nvidia-") or name == "cuda-toolkit"


def test_wanted_requirements_are_those_of_the_full_parse():
    everything = list(requirements_of(_TORCH_METADATA, _LINUX))
    wanted = list(requirements_of(_TORCH_METADATA, _LINUX, _nvidia))
    assert wanted == [r for r in everything if _nvidia(r.name)]
    assert WheelRequirement("nvidia-cublas-cu12", "==12.4.5.8", None) in wanted  # a name spelt otherwise, canonical
    assert WheelRequirement("cuda-toolkit", "==12.4", "cuda") in wanted
    assert len(wanted) == 4 and len(everything) > len(wanted)


@pytest.mark.live
def test_no_wanted_line_no_packaging_requirements():
    other = re.sub("(?i)nvidia|cuda", "other", _TORCH_METADATA).replace(
        "Requires-Dist: ???\n", ""
    )  # a line without a name is parsed
    code = (
        "import sys\nfrom cudnn_doctor.probes.wheel_files import requirements_of\n"
        f"print(list(requirements_of({other!r}, {{}}, lambda n: n.startswith('nvidia-') or n == 'cuda-toolkit')), 'packaging.requirements' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.stdout.strip() == "[] False"


# --- one listing for a folder under two names (merged /usr) -----------------------------------------


def _live_index(shared: bool) -> FolderIndex:
    from cudnn_doctor.system.live import LiveSystem

    class Unshared(LiveSystem):
        lists_with_scandir = False

    return FolderIndex(LiveSystem() if shared else Unshared())


@pytest.mark.live
@pytest.mark.skipif(sys.platform == "win32", reason="Linux folders")
def test_a_folder_listed_under_another_name_gives_what_listing_it_gives(tmp_path):
    real = tmp_path / "usr" / "lib"
    real.mkdir(parents=True)
    for name in ("libcuda.so.1", "libz.so.1", "b.txt"):
        (real / name).write_text("")
    (real / "sub").mkdir()
    (real / "link.so").symlink_to("libz.so.1")
    (tmp_path / "lib").symlink_to(real)
    folders = [
        str(real),
        str(tmp_path / "lib"),
        str(tmp_path / "lib") + "/",
        str(real / ".." / "lib"),
        str(tmp_path / "missing"),
        str(tmp_path / "missing2" / ".."),
    ]
    folders += linux.default_dirs("x86_64")
    shared, alone = _live_index(True), _live_index(False)
    for folder in folders:
        assert list(shared.files(folder).items()) == list(alone.files(folder).items()), folder
    assert shared.files(str(tmp_path / "lib"))["link.so"] == f"{tmp_path}/lib/link.so" and "sub" not in shared.files(
        str(real)
    )
    assert shared._by_real and not alone._by_real


# --- the CI guard of benchmarks/check_speed.py -------------------------------------------------------


def _check_speed():
    import importlib.util

    folder = str(REPO / "benchmarks")  # a script's own folder is its sys.path[0]: benchmarks/machine.py
    spec = importlib.util.spec_from_file_location("check_speed", REPO / "benchmarks" / "check_speed.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def test_the_quick_guard_fails_only_beyond_twice_the_recorded_ratio():
    bench = _check_speed()
    assert bench.GUARD_FACTOR == 2.0 and bench.TARGET == 5.0 and bench.RECORDED >= bench.TARGET
    assert bench.guard(bench.RECORDED)[0] == 0
    assert bench.guard(2 * bench.RECORDED - 0.01)[0] == 0
    code, message = bench.guard(2 * bench.RECORDED + 0.01)
    assert code == 1 and message.startswith("REGRESSION")
    assert bench.guard(11.0, recorded=5.0)[0] == 1 and bench.guard(9.0, recorded=5.0)[0] == 0


@pytest.mark.live
def test_the_benchmark_describes_the_machine():
    description = _check_speed().machine()
    assert " cores; " in description and "Python " in description


def test_the_json_report_is_one_write():
    """`json.dump` writes every token on its own: 35,000 writes for 50 environments, more time than building the text."""
    import io

    from cudnn_doctor.diagnose import diagnose
    from cudnn_doctor.reports import json_report
    from cudnn_doctor.system.fixture_format import load_fixture

    class Counted(io.StringIO):
        writes = 0

        def write(self, text: str) -> int:
            Counted.writes += 1
            return super().write(text)

    out = Counted()
    json_report.render(diagnose(FixtureSystem(load_fixture(_fixture_samples()[0])), with_frameworks=False), out)
    assert Counted.writes == 1 and json.loads(out.getvalue())["findings"] is not None


# --- regexes compiled on first use, framework messages not searched when there are none ------------

_COMPILED_AT_IMPORT = """
import io, contextlib, re, sys
at_import = []
compile = re.compile
def counting(pattern, flags=0):
    caller = sys._getframe(1)
    if caller.f_code.co_name == "<module>" and str(caller.f_globals.get("__name__")).startswith("cudnn_doctor"):
        at_import.append(caller.f_globals["__name__"])
    return compile(pattern, flags)
re.compile = counting
from cudnn_doctor.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
print("modules", len([m for m in sys.modules if m.startswith("cudnn_doctor")]), "compiled", at_import)
"""


@pytest.mark.live
def test_check_compiles_no_pattern_while_importing_its_modules():
    """Every module `check` imports (~100) used to compile its patterns at import, ~70 of them, most unused."""
    argv = ["check", "--no-frameworks"] + [str(p) for p in _fixture_samples()[:1] for p in ("--fixture", p)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", _COMPILED_AT_IMPORT, *argv], capture_output=True, text=True, env=env, timeout=120
    )
    last = done.stdout.strip().splitlines()[-1].split(" ", 3)
    assert int(last[1]) > 30  # it ran, importing the doctor's modules
    assert last[3] == "[]"


def _compiled_at_module_level(path) -> list[int]:
    """Lines of `re.compile(...)` calls run when the module (or a class body in it) is imported."""
    import ast

    found: list[int] = []

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            func = getattr(child, "func", None)
            if (
                isinstance(child, ast.Call)
                and isinstance(func, ast.Attribute)
                and func.attr == "compile"
                and getattr(func.value, "id", "") == "re"
            ):
                found.append(child.lineno)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_no_module_compiles_a_pattern_at_import():
    """`regex(...)` (cudnn_doctor.lazyre) compiles on first use; a module-level `re.compile` costs every run."""
    sources = sorted((REPO / "src" / "cudnn_doctor").rglob("*.py"))
    assert len(sources) > 50
    assert _compiled_at_module_level(REPO / "src" / "cudnn_doctor" / "lazyre.py") == []
    found = {str(p.relative_to(REPO)): lines for p in sources for lines in [_compiled_at_module_level(p)] if lines}
    assert found == {}


def test_the_ast_check_sees_a_module_level_compile(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "import re\nA = re.compile('a')\nB = {'b': re.compile('b')}\nclass C:\n    D = re.compile('d')\ndef f():\n    return re.compile('e')\n"
    )
    assert _compiled_at_module_level(module) == [2, 3, 5]


@pytest.mark.parametrize("blank", ["", "\n\n\n", " \t\n"])
def test_a_framework_that_said_nothing_is_read_as_the_long_way_reads_it(blank):
    """`_build` skips the message patterns when a framework said nothing (its text is blank under --no-frameworks):
    each of them finds nothing in blank text, so the fields are those the long way gives."""
    from cudnn_doctor.knowledge import messages as catalogue
    from cudnn_doctor.probes import messages

    assert messages.load_failures(blank) == ()
    assert messages.cudnn_mismatch(blank) is None
    assert messages.line_matching(blank, catalogue.DRIVER_TOO_OLD) is None
    assert messages.line_matching(blank, catalogue.NO_KERNEL) is None
    assert catalogue.CUDNN_LOADED.search(blank) is None
