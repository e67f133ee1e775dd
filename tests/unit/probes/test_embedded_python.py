"""An interpreter whose sys.path a `._pth` file fixes (python.org's embeddable CPython, as ComfyUI's portable
build and many Stable Diffusion bundles ship it): the doctor reports the distributions that interpreter
sees, calls it `embedded`, and probes its frameworks as it imports them, whatever PYTHONPATH says."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from cudnn_doctor.system import pyenv
from cudnn_doctor.system.live import LiveSystem
from tests.interpreters import pth_interpreter, stdlib_entries

# What the interpreter itself says it has: every distribution importlib.metadata finds on its sys.path, first wins.
SEEN = "import importlib.metadata as m, json\nd = {}\nfor x in m.distributions(): d.setdefault(x.metadata['Name'], x.version)\nprint(json.dumps(d))\n"


def _dist(folder: Path, name: str, version: str) -> None:
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")


def _site(version: str = "3.11") -> tuple[str, ...]:
    """Where `import site` looks under a `._pth` file's folder (its prefix)."""
    return ("Lib", "site-packages") if sys.platform == "win32" else ("lib", f"python{version}", "site-packages")


def _embeddable(root: Path, pth: str, pth_name: str = "python311._pth") -> Path:
    """python.org's embeddable 3.11 laid out on disk (its program cannot run here: the version comes from its DLL)."""
    root.mkdir(parents=True)
    for name in ("python.exe", "python311.dll", "python3.dll", "python311.zip"):
        (root / name).write_bytes(b"MZ")
    (root / pth_name).write_bytes(pth.encode("utf-8"))
    return root / "python.exe"


# A layout read from disk ----------------------------------------------------------------------


@pytest.mark.live
def test_only_the_folders_its_pth_file_names_count(tmp_path):
    """The embeddable zip's own `._pth` comments out `import site`: Lib\\site-packages is then invisible."""
    exe = _embeddable(
        tmp_path / "python_embeded",
        "python311.zip\r\n.\r\n../packages\r\n\r\n# Uncomment to run site.main() automatically\r\n#import site\r\n",
    )
    _dist(tmp_path.joinpath("python_embeded", *_site()), "torch", "2.5.1+cu124")
    _dist(tmp_path / "packages", "onnxruntime_gpu", "1.31.1")
    info = LiveSystem().python_info(str(exe))
    assert (info.version, info.kind, info.packages) == ("3.11", "embedded", {"onnxruntime-gpu": "1.31.1"})


@pytest.mark.live
def test_import_site_adds_its_site_packages_after_the_named_folders(tmp_path):
    """ComfyUI's portable build: `import site` in the `._pth` file; a folder named there comes first on sys.path."""
    exe = _embeddable(tmp_path / "python_embeded", "python311.zip\n.\n../packages  # vendored\nimport site\n")
    _dist(tmp_path.joinpath("python_embeded", *_site()), "torch", "2.4.0")
    _dist(tmp_path.joinpath("python_embeded", *_site()), "numpy", "1.26.4")
    _dist(tmp_path / "packages", "torch", "2.5.1")
    info = LiveSystem().python_info(str(exe))
    assert info.kind == "embedded" and info.packages == {"torch": "2.5.1", "numpy": "1.26.4"}


@pytest.mark.live
def test_without_a_pth_file_the_same_folder_is_a_system_interpreter(tmp_path):
    exe = _embeddable(tmp_path / "python", "", pth_name="unrelated.txt")
    _dist(tmp_path / "python" / "Lib" / "site-packages", "torch", "2.5.1")
    info = LiveSystem().python_info(str(exe))
    assert (info.version, info.kind, info.packages) == ("3.11", "system", {"torch": "2.5.1"})


def test_the_pth_file_beside_the_dll_wins_over_the_programs_own(tmp_path):
    """CPython looks beside its DLL first (python311._pth), then beside the program (python._pth);
    python3.dll is the stable-ABI forwarder, not the interpreter's DLL."""
    exe = _embeddable(tmp_path / "py", "a\n")
    (tmp_path / "py" / "python._pth").write_text("b\n", encoding="utf-8")
    assert pyenv.pth_file(exe) == tmp_path / "py" / "python311._pth"
    (tmp_path / "py" / "python311.dll").unlink()
    (tmp_path / "py" / "python3._pth").write_text("c\n", encoding="utf-8")
    assert pyenv.pth_file(exe) == tmp_path / "py" / "python._pth"
    (tmp_path / "py" / "python._pth").unlink()
    assert pyenv.pth_file(exe) is None


def test_pth_file_lines(tmp_path):
    """As CPython reads them: a BOM, comments (whole or trailing), blank lines and other `import` lines are skipped."""
    pth = tmp_path / "python311._pth"
    absolute = tmp_path / "elsewhere"
    pth.write_bytes(
        f"\ufeffpython311.zip\r\n  # note\r\n\r\nLib/site-packages # trailing\r\nimport foo\r\n{absolute}\r\nimport site\r\n".encode()
    )
    folders, import_site = pyenv.read_pth(pth)
    assert folders == [tmp_path / "python311.zip", tmp_path / "Lib" / "site-packages", absolute] and import_site


@pytest.mark.parametrize(
    "path", ["C:\\py\\Lib\\site-packages\\", "/usr/lib/python3/dist-packages", "C:/py/Lib/Site-Packages/"]
)
def test_site_folders_are_recognised_however_the_path_ends(path):
    """Python 3.9 keeps a `._pth` line's trailing backslash in sys.path."""
    assert pyenv.is_site_folder(path)
    assert not pyenv.is_site_folder(path.rstrip("\\/") + "-old")


# A real interpreter under a ._pth file (Windows; POSIX from Python 3.11) ------------------------------


@pytest.mark.live
@pytest.mark.parametrize("import_site", [False, True])
def test_python_info_is_what_the_embedded_interpreter_itself_sees(tmp_path, import_site):
    root = tmp_path / "python_embeded"
    running = "%d.%d" % sys.version_info[:2]
    _dist(root.joinpath(*_site(running)), "torch", "2.4.0")
    _dist(root.joinpath(*_site(running)), "numpy", "1.26.4")
    _dist(tmp_path / "packages", "torch", "2.5.1")
    exe = pth_interpreter(root, [tmp_path / "packages"], import_site=import_site)
    done = subprocess.run([str(exe), "-c", SEEN], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    seen = {canonicalize_name(k): v for k, v in json.loads(done.stdout).items()}
    info = LiveSystem().python_info(str(exe))
    assert info.packages == seen and info.packages["torch"] == "2.5.1"
    assert ("numpy" in info.packages) is import_site
    assert info.kind == "embedded" and info.version == ".".join(map(str, sys.version_info[:3]))


@pytest.mark.live
def test_the_doctor_running_in_an_embedded_interpreter_reads_what_it_imports_from(tmp_path):
    """The current interpreter's distributions come from its own sys.path: under a `._pth` file, every
    folder named there counts, not only those called site-packages."""
    _dist(tmp_path / "packages", "onnxruntime_gpu", "1.31.1")
    sites = [p for p in sys.path if pyenv.is_site_folder(p)]
    exe = pth_interpreter(
        tmp_path / "python_embeded",
        [tmp_path / "packages", *sites],
        stdlib=[*stdlib_entries(), str(Path(pyenv.__file__).parents[2])],
    )
    script = (
        SEEN
        + "from cudnn_doctor.system.live import LiveSystem\ni = LiveSystem().python_info(sys.executable)\nprint(json.dumps([i.kind, i.packages]))\n"
    )
    done = subprocess.run(
        [str(exe), "-c", "import sys\n" + script], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2, done.stderr
    seen = {canonicalize_name(k): v for k, v in json.loads(lines[0]).items()}
    kind, packages = json.loads(lines[1])
    assert kind == "embedded" and packages == seen and packages["onnxruntime-gpu"] == "1.31.1"


@pytest.mark.live
def test_a_framework_is_probed_from_the_pth_folders_whatever_pythonpath_says(tmp_path, monkeypatch):
    """The child runs the interpreter as the user's program does: a stand-in on PYTHONPATH is not what it imports."""
    for folder, version in (("packages", "1.31.1"), ("elsewhere", "0.0.1")):
        package = tmp_path / folder / "onnxruntime"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(
            textwrap.dedent(f"""
                __version__ = "{version}"
                def get_available_providers():
                    return ["CUDAExecutionProvider", "CPUExecutionProvider"]
            """),
            encoding="utf-8",
        )
    exe = pth_interpreter(tmp_path / "python_embeded", [tmp_path / "packages"])
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "elsewhere"))
    report = LiveSystem().framework_reports(str(exe), ["onnxruntime"], timeout=60)["onnxruntime"]
    assert report["version"] == "1.31.1" and report["providers"][0] == "CUDAExecutionProvider"


@pytest.mark.live
@pytest.mark.skipif(
    pyenv.pth_file(Path(sys.executable)) is None,
    reason="the running interpreter has no ._pth file (the Windows lane's has)",
)
def test_the_running_embeddable_interpreter(tmp_path):
    info = LiveSystem().python_info(sys.executable)
    assert info.kind == "embedded" and info.packages.get("packaging") and info.packages.get("pyyaml")
