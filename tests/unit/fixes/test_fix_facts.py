"""Issue 29, classes 6 and 7, on every machine (the gallery and the shared yardstick).

6. A fix is checked against the facts: no placeholder (`<version>`, `libnvrtc.so.<N>`, `cuda-toolkit-X-Y`,
   `docker run ... ...`) where the real name or the rule that gives it belongs; no pip line that installs what the
   interpreter already has; every PyTorch build a pip line names exists in the knowledge for that OS, runs on the
   driver (unless the step says to update it first) and on the GPU's compute capability.
7. One cause, one error: the text, JSON and HTML reports show the same findings, each with the same severity and the
   same symptom links, and a symptom always hangs under a finding that is itself a cause.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cudnn_doctor import knowledge
from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.reports import html, json_report, terminal
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import all_fixture_paths, run

MACHINES = all_fixture_paths()
PLACEHOLDER = re.compile(r"<[A-Za-z_][\w .-]*>|\bX[.-]Y\b|\.\.\.|…|\b(?:ARCHIVE|FOLDER|FILE)\b")


def _diagnosis(path):
    return diagnose(FixtureSystem.from_file(path))


def _placeholders(findings):
    return [(f.id, step) for f in findings for step in f.fix if PLACEHOLDER.search(step)]


# 6 — fixes checked against the facts ----------------------------------------------------------------


_PIP = re.compile(r'(?:"(?P<exe>[^"]+)"|(?P<bare>python3?))\s+-m\s+pip\s+install\s+(?P<args>[^`\n]*)')


def _pip_lines(step):
    """(interpreter or None for "a new environment's python", [requirements], the rest of the line) for each pip install in a step."""
    for match in _PIP.finditer(step):
        args = match.group("args").split(" (")[0].split(" && ")[0]  # a feed build's second line repeats the pin
        requirements, options = [], []
        tokens = args.split()
        skip = False
        for token in tokens:
            if skip:
                options.append(token)
                skip = False
            elif token.startswith("-"):
                options.append(token)
                skip = token in ("--index-url", "--extra-index-url", "-f", "-i")
            else:
                requirements.append(token.strip("\"'`.,"))
        yield match.group("exe"), requirements, " ".join(options)


def _requirement(text):
    name, _, spec = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?(.*)", text).group(1, 0, 2)
    try:
        return canonicalize_name(name), SpecifierSet(spec)
    except InvalidSpecifier:
        return canonicalize_name(name), None


def _already_installed(facts, found):
    """pip lines of a fix that install a distribution the interpreter has, in a version the line admits."""
    wrong = []
    uninstalled: set[str] = set()
    for step in found.fix:
        for name in re.findall(r"pip uninstall -y ([^`\n]+)", step):
            uninstalled.update(canonicalize_name(n) for n in name.split())
        for exe, requirements, options in _pip_lines(step):
            python = facts.python(exe) if exe else None
            if python is None:
                continue
            installed = {canonicalize_name(k): v for k, v in python.packages.items()}
            for text in requirements:
                name, spec = _requirement(text)
                if name in uninstalled or name not in installed or spec is None:
                    continue
                try:
                    have = Version(installed[name])
                except InvalidVersion:
                    continue
                variant = re.search(r"/whl/(cu\d+|cpu)|\+(cu\d+|cpu)", text + " " + options)
                if variant and (variant.group(1) or variant.group(2)) != (have.local or ""):
                    continue  # another build of the same release
                if not spec or spec.contains(have.public if not spec_has_local(spec) else have, prereleases=True):
                    wrong.append((found.id, step))
    return wrong


def spec_has_local(spec):
    return any("+" in s.version for s in spec)


def _torch_builds_unknown(facts, found):
    """torch pip lines naming a (release, CUDA variant) the knowledge lacks on this OS, or one the driver or GPU cannot run."""
    wrong = []
    os_name = "linux" if facts.os == "wsl" else facts.os
    for step in found.fix:
        for _exe, requirements, options in _pip_lines(step):
            for text in requirements:
                name, _spec = _requirement(text)
                pinned = re.match(r"torch==(\d+(?:\.\d+)*)(?:\+(cu\d+))?$", text)
                if name != "torch" or not pinned:
                    continue
                variant = pinned.group(2) or (re.search(r"/whl/(cu\d+)", options) or [None, None])[1]
                release = knowledge.torch_release(Version(pinned.group(1)))
                if release is None:
                    wrong.append((found.id, step, "release unknown"))
                    continue
                if variant is None:
                    continue  # PyPI's default build: the planner's own test holds it
                cuda = f"{variant[2:-1]}.{variant[-1]}"
                if cuda not in release.cuda_on(os_name):
                    wrong.append((found.id, step, f"no {variant} build on {os_name}"))
                    continue
                need = knowledge.driver_requirement(Version(cuda), os_name if os_name == "windows" else "linux")
                driver = facts.driver.version
                updates_driver = re.search(r"driver (?:≥|>=)", step) is not None
                if need is not None and driver and not updates_driver:
                    try:
                        if Version(driver) < need.driver:
                            wrong.append((found.id, step, f"needs driver {need.driver_text}"))
                    except InvalidVersion:
                        pass
                for gpu in facts.driver.gpus:
                    if (
                        gpu.compute_capability
                        and knowledge.cuda_runs_on_compute_capability(Version(cuda), gpu.compute_capability) is False
                    ):
                        wrong.append((found.id, step, f"CUDA {cuda} does not run on sm_{gpu.compute_capability}"))
    return wrong


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_every_fix_is_checked_against_the_facts(path):
    diagnosis = _diagnosis(path)
    facts = diagnosis.facts
    assert _placeholders(diagnosis.findings) == []
    for found in diagnosis.findings:
        assert _already_installed(facts, found) == []
        assert _torch_builds_unknown(facts, found) == []


def test_a_cudnn_for_another_cuda_gets_the_real_archive_of_its_replacement():
    """cudnn-cuda-mismatch printed `cudnn-linux-x86_64-<version>_cuda11-archive.tar.xz`: the archive is the newest
    release of that cuDNN major the knowledge lists for the CUDA major, named as NVIDIA names it."""
    path = next((p for p in MACHINES if p.name == "45-linux-ort116-cuda11-build-on-cuda121.yaml"), None)
    found = [f for f in _diagnosis(path).findings if f.id == "cudnn-cuda-mismatch"] if path is not None else []
    if not found:
        pytest.skip("the shared yardstick is not here")
    step = found[0].fix[-1]
    archive = re.search(r"cudnn-doctor install (\S+?)`", step).group(1)
    parsed = knowledge.parse_cudnn_archive_name(archive)
    assert parsed is not None and parsed.cuda_major == 11 and parsed.version.startswith("8."), step
    newest = next(v for v, _ in knowledge.cudnn_releases_for(Version("11"), "linux") if v.startswith("8."))
    assert parsed.version == newest, step


@pytest.mark.parametrize("loads", [["libnvrtc.so.%d"], ["libnvrtc.so"]])
def test_a_run_time_name_is_said_by_the_rule_that_gives_it_not_a_placeholder(loads):
    """cuDNN asks for `libnvrtc.so.%d` (or the unversioned `libnvrtc.so`, whose fix said `ln -s libnvrtc.so.X.Y libnvrtc.so`)."""
    from tests.unit.binaries.test_load_names import _missing, _torch

    missing = _missing(_torch(loads, {}))
    assert missing and all(f.fix for f in missing)
    assert _placeholders(missing) == []


# 7 — one cause, one error, the same in every report --------------------------------------------------


_TEXT_CAUSE = re.compile(r"^(?:✓|•|!|✗|OK|i|X) (error|warning|info) ([a-z0-9-]+): ")
_TEXT_SYMPTOM = re.compile(r"^      - ([a-z0-9-]+) \((error|warning|info)\): ")


def _text_tree(diagnosis):
    out = io.StringIO()
    terminal.render(diagnosis, out, color=False)
    tree = []
    for line in out.getvalue().splitlines():
        cause, symptom = _TEXT_CAUSE.match(line), _TEXT_SYMPTOM.match(line)
        if cause:
            tree.append((cause.group(2), cause.group(1), []))
        elif symptom and tree:
            tree[-1][2].append((symptom.group(1), symptom.group(2)))
    return tree


def _json_tree(diagnosis):
    out = io.StringIO()
    json_report.render(diagnosis, out)
    findings = json.loads(out.getvalue())["findings"]
    for item in findings:
        if item.get("symptom_of") is not None:
            assert findings[item["symptom_of"]].get("symptom_of") is None, ("a symptom of a symptom", item["id"])
    return [
        (f["id"], f["severity"], [(s["id"], s["severity"]) for s in findings if s.get("symptom_of") == i])
        for i, f in enumerate(findings)
        if f.get("symptom_of") is None
    ], len(findings)


_HTML_ARTICLE = re.compile(
    r'<article class="finding (error|warning|info)" id="[^"]*" data-id="([^"]+)">(.*?)</article>', re.S
)
_HTML_SYMPTOM = re.compile(r'<li data-id="([^"]+)">.*?\((error|warning|info)\): ', re.S)


def _html_tree(diagnosis):
    out = io.StringIO()
    html.render_check(diagnosis, out)
    return [
        (i, sev, [(s, ss) for s, ss in _HTML_SYMPTOM.findall(body)])
        for sev, i, body in _HTML_ARTICLE.findall(out.getvalue())
    ]


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_text_json_and_html_agree_on_findings_severities_and_symptoms(path):
    diagnosis = _diagnosis(path)
    tree, count = _json_tree(diagnosis)
    assert sum(1 + len(s) for _, _, s in tree) == count  # every finding shows, as a cause or under one
    assert _text_tree(diagnosis) == tree
    assert _html_tree(diagnosis) == tree


def test_a_cause_worse_than_its_own_rule_says_is_that_severity_in_json_too():
    """A stale terminal that hides the CUDA runtime and cuDNN from TensorFlow: the text said `error env-stale-session`,
    the JSON `warning`. The cause carries the severity of what it causes, in every report."""
    path = next(p for p in MACHINES if p.name == "win-tf27-stale-vscode-terminal.yaml")
    diagnosis = _diagnosis(path)
    stale = next(f for f in diagnosis.findings if f.id == "env-stale-session")
    assert stale.severity.value == "error"
    assert _text_tree(diagnosis) == _json_tree(diagnosis)[0]


def test_windows_unreadable_library_fix_names_the_files():
    """`icacls "<file>"` was the step: the files are known, each gets its own line."""
    from tests.unit.checks.test_cudnn_checks import CUDA, cudnn8, toolkit

    document = toolkit(cudnn8(f"{CUDA}\\bin", **{f"{CUDA}\\bin\\cudnn_adv_infer64_8.dll": {"readable": False}}))
    found = [f for f in run(document).findings if f.id == "library-unreadable"]
    assert found and _placeholders(found) == []
    assert f'icacls "{CUDA}\\bin\\cudnn_adv_infer64_8.dll" /grant Users:RX' in " ".join(found[0].fix)


@pytest.mark.parametrize(
    "os_release, says",
    [
        ('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n', "ubuntu-drivers"),
        ('NAME="Linux Mint"\nID=linuxmint\nID_LIKE="ubuntu debian"\n', "ubuntu-drivers"),
        ('NAME="Manjaro Linux"\nID=manjaro\nID_LIKE=arch\n', "your distribution's NVIDIA driver package"),
        (None, "your distribution's NVIDIA driver package"),
    ],
)
def test_the_driver_source_follows_the_distribution(os_release, says):
    """`ubuntu-drivers` only where os-release says Ubuntu or a derivative (the Manjaro machine was told to run it)."""
    from tests.conftest import LINUX_BASE, machine

    files = {"/etc/os-release": {"text": os_release}} if os_release else {}
    document = machine(LINUX_BASE, nvml=None, files=files)
    found = [f for f in run(document).findings if f.id == "no-nvidia-gpu"]
    assert found and says in found[0].fix[0], found[0].fix
    assert ("ubuntu-drivers" in found[0].fix[0]) == (says == "ubuntu-drivers")
