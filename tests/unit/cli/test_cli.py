"""The command line: exit codes 0/1/2, one-line errors, JSON on stdout and nothing else."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from cudnn_doctor.cli import main
from tests.conftest import GALLERY, LINUX_BASE, REPO, SHARED_FIXTURES, WINDOWS_BASE, machine


def write(tmp_path, document, name="m.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document) if name.endswith(".yaml") else json.dumps(document), encoding="utf-8")
    return path


def cli(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_healthy_machine_exits_0(tmp_path, capsys):
    code, out, _ = cli(["check", "--fixture", str(write(tmp_path, machine(LINUX_BASE))), "--no-color"], capsys)
    assert code == 0
    assert "[✓] NVIDIA driver and GPU: driver 550.144.03 · CUDA 12.4 max" in out


def test_errors_exit_1_and_json_is_one_object(tmp_path, capsys):
    document = machine(LINUX_BASE, nvml=None)
    code, out, err = cli(["check", "--fixture", str(write(tmp_path, document, "m.json")), "--format", "json"], capsys)
    assert code == 1
    report = json.loads(out)
    assert report["schema"] == "cudnn-doctor-report/1"
    finding = next(f for f in report["findings"] if f["id"] == "no-nvidia-gpu")
    assert set(finding) - {"symptom_of"} == {"id", "severity", "area", "title", "detail", "fix", "autofix", "evidence"}
    assert finding["severity"] == "error" and finding["fix"]
    assert "facts" in report and err == ""


def test_ignore_suppresses_and_changes_exit_code(tmp_path, capsys):
    path = write(tmp_path, machine(LINUX_BASE, nvml=None))
    code, out, _ = cli(["check", "--fixture", str(path), "--ignore", "no-nvidia-gpu", "--format", "json"], capsys)
    assert code == 0
    assert "no-nvidia-gpu" not in {f["id"] for f in json.loads(out)["findings"]}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(nvlm={}), "unknown key 'nvlm' (did you mean 'nvml'?)"),
        (lambda d: d["files"].update({"/x": {"size": "big"}}), "size: expected an integer"),
        (lambda d: d.pop("os"), "missing required key 'os'"),
        (lambda d: d.update(os="macos"), "expected one of windows, linux"),
        (lambda d: d.update(schema="machine-fixture/2"), "schema: expected 'machine-fixture/1'"),
        (lambda d: d["pythons"][0].pop("executable"), "missing required key 'executable'"),
    ],
)
def test_invalid_fixture_is_one_line_exit_2(tmp_path, capsys, mutate, message):
    document = json.loads(json.dumps(LINUX_BASE))
    mutate(document)
    code, out, err = cli(["check", "--fixture", str(write(tmp_path, document))], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "--fixture", "/no/such/file.yaml"], "no such fixture file"),
        (["check", "--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["check", "--ignore", "no-nvidia-gpus"], "did you mean 'no-nvidia-gpu'"),
        ([], "missing COMMAND"),
        (["cure"], "invalid choice"),
    ],
)
def test_usage_errors_are_one_line_exit_2(capsys, args, message):
    code, out, err = cli(args, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_corrupt_yaml_is_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("schema: machine-fixture/1\nfiles: [unclosed\n", encoding="utf-8")
    code, _, err = cli(["check", "--fixture", str(path)], capsys)
    assert code == 2 and err.count("\n") == 1 and "not valid YAML" in err


def test_kb_overlay_with_a_newer_torch_release_changes_the_diagnosis(tmp_path, capsys):
    torch = {
        "version": "2.16.0+cu126",
        "cuda": "12.6",
        "cuda_available": True,
        "device_count": 1,
        "arch_list": ["sm_86"],
    }
    python = {
        "executable": "/v/bin/python",
        "version": "3.9.18",
        "current": True,
        "kind": "venv",
        "packages": {"torch": "2.16.0+cu126"},
        "frameworks": {"torch": torch},
    }
    fixture = write(tmp_path, machine(LINUX_BASE, pythons=[python]))
    newer = tmp_path / "newer.yaml"
    newer.write_text(
        'torch:\n  releases:\n    - {version: "2.16", python: ">=3.10,<3.15", cuda: ["12.6", "13.0"], '
        'source: "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix"}\n',
        encoding="utf-8",
    )

    def python_findings(*extra):
        code, out, _ = cli(["check", "--fixture", str(fixture), "--format", "json", *extra], capsys)
        return code, [f for f in json.loads(out)["findings"] if f["id"] == "python-unsupported"]

    assert python_findings() == (0, [])  # torch 2.16 is newer than the shipped table: nothing to say
    code, found = python_findings("--kb", str(newer))
    assert (
        code == 1
        and "torch 2.16.0+cu126 supports Python >=3.10,<3.15" in found[0]["detail"]
        and "python=3.14" in found[0]["fix"][0]
    )
    assert python_findings() == (0, [])  # the overlay lasted for that run only


@pytest.mark.parametrize("command", [["check", "--no-frameworks"], ["which", "libcudnn.so.9"]])
def test_a_bad_kb_file_is_one_line_exit_2(tmp_path, capsys, command):
    fixture = write(tmp_path, machine(LINUX_BASE))
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "torch:\n  releases:\n    - {version: '2.15', pyton: '>=3.10', cuda: ['12.6'], source: 'https://x'}\n",
        encoding="utf-8",
    )
    code, out, err = cli([*command, "--fixture", str(fixture), "--kb", str(mine)], capsys)
    assert (code, out) == (2, "")
    assert (
        err
        == f"cudnn-doctor: error: {mine}: torch.releases[0] (version 2.15): unknown key 'pyton' (did you mean 'python'?)\n"
    )


@pytest.mark.live
def test_console_script_and_module_entry_points(tmp_path):
    """Both ways in; the console script wherever the installer put it (the Windows lane imports the checkout and has none)."""
    path = write(tmp_path, machine(LINUX_BASE))
    name = "cudnn-doctor.exe" if sys.platform == "win32" else "cudnn-doctor"
    scripts = [Path(sysconfig.get_path("scripts")) / name, Path(sys.executable).with_name(name)]
    found = next((script for script in scripts if script.is_file()), None)
    if found is None and not os.environ.get("CUDNN_DOCTOR_WINE_LANE"):
        pytest.fail(f"no console script at {scripts[0]} or {scripts[1]}")
    for command in ([[str(found)]] if found else []) + [[sys.executable, "-m", "cudnn_doctor"]]:
        done = subprocess.run([*command, "check", "--fixture", str(path)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "cudnn-doctor check" in done.stdout


@pytest.mark.live
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has an NVIDIA driver")
def test_live_check_on_a_machine_without_gpu(capsys):
    code, out, _ = cli(["check", "--no-frameworks", "--format", "json"], capsys)
    report = json.loads(out)
    assert code == 1
    assert "no-nvidia-gpu" in {f["id"] for f in report["findings"]}


@pytest.mark.live
@pytest.mark.skipif(
    shutil.which("nvcc") is None or shutil.which("nvidia-smi") is not None,
    reason="needs the development machine: nvcc, no driver",
)
def test_live_check_shows_the_toolkit(capsys):
    code, out, _ = cli(["check", "--no-frameworks", "--no-color"], capsys)
    assert code == 1
    toolkit_line = next(line for line in out.splitlines() if "CUDA toolkit" in line)
    assert "first on PATH" in toolkit_line


@pytest.mark.parametrize(
    ("path", "install"),
    [
        pytest.param(
            GALLERY / "win-torch-cpu-wheel-from-pypi.yaml",
            "torch==2.2.2 torchvision==0.17.2 --index-url https://download.pytorch.org/whl/cu121",
            id="gallery",
        ),
        pytest.param(
            SHARED_FIXTURES / "seed" / "seed-win-torch-cpu-wheel.yaml",
            "torch==2.0.0 torchvision==0.15.1 --index-url https://download.pytorch.org/whl/cu118",
            id="shared",
        ),
    ],
)
def test_machine_fixture_through_the_cli(capsys, path, install):
    if not path.exists():
        pytest.skip(f"no {path}")
    code, out, _ = cli(["check", "--fixture", str(path), "--format", "json"], capsys)
    finding = next(f for f in json.loads(out)["findings"] if f["id"] == "torch-cpu-build")
    assert code == 1
    assert any(install in step for step in finding["fix"]), finding["fix"]


@pytest.mark.live
def test_readme_samples_are_the_real_output(capsys, monkeypatch):
    """The README's samples run gallery machines (or only options) from any clone, and every line they show is one the
    command really prints, in its order (issue 31: the quick start shows real output, shortened)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    monkeypatch.chdir(REPO)
    samples = [block.split("```", 1)[0] for block in readme.split("```\n$ cudnn-doctor ")[1:]]
    ran = []
    for block in samples:
        line, printed = block.split("\n", 1)
        words = shlex.split(line)
        if words[0] == "verify":
            continue  # timings differ on every run
        assert "--fixture" not in words or words[words.index("--fixture") + 1].startswith("examples/machines/"), line
        code, out, _ = cli([*words, "--no-color"] if words[0] == "check" else words, capsys)
        assert code in (0, 1), (line, out)
        real = iter(out.splitlines())
        missing = [shown for shown in printed.splitlines() if not any(shown == said for said in real)]
        assert not missing, (line, missing)
        ran.append(words[0])
    assert {"check", "fix", "plan"} <= set(ran), ran


def test_explain_one_id_and_all(capsys):
    assert main(["explain", "cudnn-shadowed"]) == 0
    out = capsys.readouterr().out
    assert re.match(
        r"cudnn-shadowed \(warning or by case(, [^)]+)?\): An earlier copy of a cuDNN library wins the search\n", out
    )
    assert "Severity: warning; error when the copy found first is unusable" in out
    assert main(["explain", "--all", "--format", "json"]) == 0
    pages = json.loads(capsys.readouterr().out)
    assert all(page["why"] for page in pages), [p["id"] for p in pages if not p["why"]]
    assert {"no-nvidia-gpu", "dependency-missing", "env-var-ineffective"} <= {p["id"] for p in pages}
    assert main(["explain", "cudnn-shadow"]) == 2


def test_an_empty_path_entry_is_not_a_missing_folder(tmp_path, capsys):
    """Windows ignores the empty entry of the usual trailing `;`; on Linux an empty LD_LIBRARY_PATH entry is the current folder."""
    windows = machine(WINDOWS_BASE, env={"PATH": "C:\\Windows\\System32;C:\\Windows;"}, files={"C:\\Windows\\": {}})
    _code, out, _err = cli(["check", "-v", "--no-color", "--fixture", str(write(tmp_path, windows))], capsys)
    assert "(missing)" not in out and "PATH[2]" not in out and "PATH has 2 entries" in out
    linux = machine(LINUX_BASE, env={"LD_LIBRARY_PATH": "/usr/lib:"}, files={"/usr/lib/": {}})
    _code, out, _err = cli(["check", "-v", "--no-color", "--fixture", str(write(tmp_path, linux, "l.yaml"))], capsys)
    assert "LD_LIBRARY_PATH[0] /usr/lib\n" in out and "LD_LIBRARY_PATH[1]   (empty: the current folder)" in out


def test_every_commands_help_ends_with_examples_of_itself(capsys):
    """Issue 31: `--help` of each command ends with examples, each a line that starts with `cudnn-doctor`."""
    import pytest

    from cudnn_doctor.cli import _MODULES, main

    for name in _MODULES:
        with pytest.raises(SystemExit) as leaving:
            main([name, "--help"])
        assert leaving.value.code == 0
        tail = capsys.readouterr().out.rstrip().split("\nexamples:\n")[-1].splitlines()
        assert tail and all(line.startswith("  cudnn-doctor ") for line in tail), (name, tail)
        assert any(line.startswith(f"  cudnn-doctor {name}") for line in tail), (name, tail)
    # and every example is a command line the parser takes
    import shlex

    from cudnn_doctor.cli import EXAMPLES, build_parser

    for lines in EXAMPLES.values():
        for line in lines:
            words = shlex.split(line.split(" > ")[0])[1:]  # a shell redirection is the shell's
            build_parser(words).parse_args(words)
