"""`cudnn-doctor fleet --from` (issue 14): nodes grouped by stack, the drift fields, per-node findings, counts.

The shared fixtures serve as a fleet of real, different machines (the drift between them is real);
generated fleets check the grouping, the cache of identical snapshots, the exit codes and the HTML,
which is opened with 1,000 nodes in Debian's chromium (skipped where it or Playwright is missing).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cudnn_doctor.cli import main
from cudnn_doctor.fleet.model import DEAD, OK, STACK_FIELDS, TIMEOUT, NodeResult, aggregate
from cudnn_doctor.fleet.nodes import Checker
from cudnn_doctor.reports import fleet as fleet_report
from cudnn_doctor.reports import fleet_html
from cudnn_doctor.system.fixture_format import load_fixture
from tests.conftest import SHARED_FIXTURES
from tests.fleet_gen import HEALTHY, OLD_DRIVER, OTHER_DRIVER, generated_results, with_driver
from tests.unit.reports.test_html_report import CHROMIUM, _artifacts, _loads_nothing, parse

SCHEMA = json.loads((Path(fleet_report.__file__).with_name("fleet.schema.json")).read_text(encoding="utf-8"))
REAL = SHARED_FIXTURES / "real"


def validate(document: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(document, SCHEMA)


def fleet_json(capsys, *arguments: str) -> tuple[int, dict[str, Any]]:
    code = main(["fleet", *arguments, "--format", "json"])
    out = capsys.readouterr().out
    document = json.loads(out)
    validate(document)
    return code, document


def write_nodes(folder: Path, documents: dict[str, dict[str, Any]], suffix: str = ".json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, document in documents.items():
        text = json.dumps(document) if suffix == ".json" else yaml.safe_dump(document)
        (folder / f"{name}{suffix}").write_text(text, encoding="utf-8")
    return folder


# ---------------------------------------------------------------- the shared fixtures as a fleet


@pytest.mark.skipif(not REAL.is_dir(), reason="no shared fixtures next to the repository")
def test_the_shared_machines_as_a_fleet(capsys):
    """Every real machine is one node: each its own stack, each group's drift exactly the fields that differ."""
    files = sorted(REAL.glob("*.yaml"))
    code, document = fleet_json(capsys, "--from", str(REAL))
    assert code == 1
    nodes = {n["node"]: n for n in document["nodes"]}
    assert set(nodes) == {f.stem for f in files}
    assert all(n["status"] == OK for n in nodes.values())
    groups = document["groups"]
    assert (
        sum(g["size"] for g in groups) == len(files)
        and groups[0]["reference"]
        and not any(g["reference"] for g in groups[1:])
    )
    reference = groups[0]["stack"]
    for group in groups[1:]:
        differing = [f for f in STACK_FIELDS if group["stack"][f] != reference[f]]
        assert [d["field"] for d in group["drift"]] == differing and differing
        assert all(
            d["reference"] == reference[d["field"]] and d["value"] == group["stack"][d["field"]] for d in group["drift"]
        )
    # Each node's own findings are those `check --fixture` reports on that machine.
    for path in files[:4]:
        assert main(["check", "--fixture", str(path), "--format", "json"]) in (0, 1)
        alone = json.loads(capsys.readouterr().out)
        assert [f["id"] for f in nodes[path.stem]["findings"]] == [f["id"] for f in alone["findings"]]
    # The count per id is the number of nodes reporting it.
    for count in document["findings"]:
        assert count["nodes"] == sum(1 for n in nodes.values() if any(f["id"] == count["id"] for f in n["findings"]))
    wsl = {n for n, v in nodes.items() if "wsl" in n}
    wsl_groups = [g for g in groups if set(g["nodes"]) & wsl]
    assert all(g["stack"]["wsl"] == "yes" for g in wsl_groups) and wsl_groups
    ngc = next(g for g in groups if "29-linux-ngc-container-cu121-host-driver-450" in g["nodes"])
    assert ngc["stack"]["driver"] == "450.80.02" and "torch 2.0.0a0+fe05266" in ngc["stack"]["frameworks"]
    assert nodes["29-linux-ngc-container-cu121-host-driver-450"]["healthy"] is False
    assert nodes["27-linux-healthy-torch-cu130-no-system-cudnn"]["healthy"] is True


# ---------------------------------------------------------------- generated fleets


def test_identical_nodes_are_one_stack_diagnosed_once(tmp_path, capsys):
    healthy = load_fixture(HEALTHY)
    folder = write_nodes(tmp_path / "snaps", {f"node{i}": {**healthy, "name": f"snapshot-node{i}"} for i in range(6)})
    code, document = fleet_json(capsys, "--from", str(folder))
    assert code == 0
    assert document["summary"] == {
        "nodes": 6,
        "healthy": 6,
        "statuses": {"ok": 6, "unreachable": 0, "dead": 0, "timeout": 0, "error": 0},
        "stacks": 1,
        "drift": False,
    }
    assert document["groups"][0]["nodes"] == [f"node{i}" for i in range(6)]
    checker = Checker()
    results = list(checker.from_files(sorted(folder.iterdir())))
    assert checker.diagnosed == 1 and len(results) == 6 and all(r.findings == results[0].findings for r in results)


def test_the_cache_tells_different_machines_apart():
    healthy = load_fixture(HEALTHY)
    checker = Checker()
    same = checker.result(
        "a",
        {
            **healthy,
            "name": "other",
            "nvml": {**healthy["nvml"], "gpus": [{**healthy["nvml"]["gpus"][0], "uuid": "GPU-x"}]},
        },
    )
    first = checker.result("b", healthy)
    other = checker.result("c", with_driver(healthy, "470.223.02"))
    assert checker.diagnosed == 2
    assert same.stack == first.stack and other.stack["driver"] == "470.223.02" != first.stack["driver"]
    assert "driver-too-old" in {f.id for f in other.findings} and "driver-too-old" not in {f.id for f in first.findings}


def test_the_minority_drifts_with_exactly_its_field(tmp_path, capsys):
    """Five nodes on driver A, two on driver B: B's group names the driver field only; drift alone is exit 1."""
    healthy = load_fixture(HEALTHY)
    newer = with_driver(healthy, OTHER_DRIVER)
    nodes = {**{f"a{i}": healthy for i in range(5)}, "b0": newer, "b1": newer}
    code, document = fleet_json(capsys, "--from", str(write_nodes(tmp_path / "s", nodes, ".yaml")))
    assert code == 1
    assert document["summary"]["healthy"] == 7 and document["summary"]["drift"] is True
    reference, minority = document["groups"]
    assert reference["reference"] and reference["nodes"] == [f"a{i}" for i in range(5)]
    assert minority["nodes"] == ["b0", "b1"]
    assert minority["drift"] == [{"field": "driver", "reference": "550.54.15", "value": OTHER_DRIVER}]
    assert {n["node"]: n["group"] for n in document["nodes"]} == {**{f"a{i}": 1 for i in range(5)}, "b0": 2, "b1": 2}


def test_an_unhealthy_node_and_the_text_report(tmp_path, capsys):
    healthy, old = load_fixture(HEALTHY), load_fixture(OLD_DRIVER)
    folder = write_nodes(tmp_path / "s", {"n1": healthy, "n2": healthy, "n3": healthy, "old": old})
    assert main(["fleet", "--from", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "[1] reference · 3 node(s): n1, n2, n3" in out
    assert "[2] drift · 1 node(s): old" in out
    assert "NVIDIA driver: 470.223.02   (reference: 550.54.15)" in out
    assert "✗ old  [stack 2]  driver-too-old (error)" in out
    assert "3 node(s) with notes only (info)" in out
    assert any(line.split()[:3] == ["1", "error", "driver-too-old"] for line in out.splitlines())
    assert out.splitlines()[-1] == "Not healthy: 1 node(s) with an error finding or not checked; 2 different stacks."


def test_a_broken_snapshot_is_a_node_in_error_not_the_end(tmp_path, capsys):
    folder = write_nodes(tmp_path / "s", {"good": load_fixture(HEALTHY)})
    (folder / "bad.yaml").write_text(
        "schema: machine-fixture/1\nname: x\nos: linux\nenv: {}\nfiles: {}\nbogus: 1\n", encoding="utf-8"
    )
    code, document = fleet_json(capsys, "--from", str(folder))
    assert code == 1
    bad = next(n for n in document["nodes"] if n["node"] == "bad")
    assert bad["status"] == "error" and "bogus" in bad["error"] and bad["group"] is None
    assert document["summary"]["stacks"] == 1 and document["summary"]["drift"] is False


def test_files_and_folders_mix_and_repeated_stems_keep_their_paths(tmp_path, capsys):
    healthy = load_fixture(HEALTHY)
    one = write_nodes(tmp_path / "one", {"n": healthy})
    two = write_nodes(tmp_path / "two", {"n": healthy, "m": healthy})
    code, document = fleet_json(capsys, "--from", str(one), str(two / "m.json"), str(two / "n.json"))
    assert code == 0
    assert [n["node"] for n in document["nodes"]] == [str(one / "n.json"), "m", str(two / "n.json")]


@pytest.mark.parametrize(
    "arguments", [["--from", "/nonexistent/snaps"], ["--from", "EMPTY"], ["--from", "x", "--ray", "auto"], []]
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, arguments):
    (tmp_path / "EMPTY").mkdir()
    arguments = [str(tmp_path / a) if a == "EMPTY" else a for a in arguments]
    assert main(["fleet", *arguments]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cudnn-doctor: error:") and err.count("\n") == 1


def test_ray_missing_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    assert main(["fleet", "--ray", "auto"]) == 2
    err = capsys.readouterr().err
    assert err == "cudnn-doctor: error: --ray needs Ray, which is not installed here: pip install cudnn-doctor[fleet]\n"


def test_statuses_other_than_ok_fail_the_fleet():
    checker = Checker()
    ok = checker.result("a", load_fixture(HEALTHY))
    assert aggregate([ok]).exit_code == 0
    for status in (DEAD, TIMEOUT):
        report = aggregate([ok, NodeResult("b", status, error="gone")])
        assert report.exit_code == 1 and report.statuses[status] == 1 and len(report.groups) == 1
    assert aggregate([]).exit_code == 1  # no node at all is no healthy fleet


def test_ties_pick_the_same_reference_in_any_order():
    checker = Checker()
    a = checker.result("a", load_fixture(HEALTHY))
    b = checker.result("b", with_driver(load_fixture(HEALTHY), OTHER_DRIVER))
    assert aggregate([a, b]).groups[0].nodes == aggregate([b, a]).groups[0].nodes


# ---------------------------------------------------------------- HTML


def _report(count: int):
    return aggregate(generated_results(count, Checker()))


def test_html_groups_drift_and_escaping(tmp_path, capsys):
    healthy = load_fixture(HEALTHY)
    hostile = "<script>alert(1)</script>"
    folder = write_nodes(tmp_path / "s", {"n1": healthy, "n2": healthy, "n3": with_driver(healthy, hostile)})
    page = tmp_path / "fleet.html"
    assert main(["fleet", "--from", str(folder), "--html", str(page)]) == 1
    capsys.readouterr()
    text = page.read_text(encoding="utf-8")
    assert hostile not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    _loads_nothing(text.replace(f"<script>{fleet_html._SCRIPT}</script>", ""))
    tree = parse(text).root
    groups = tree.find_all("details", class_="group")
    assert [g.attrs["id"] for g in groups] == ["stack-1", "stack-2"]
    assert "drift" in groups[1].attrs["class"].split() and "open" in groups[1].attrs
    drifted = groups[1].find("td", class_="drift")
    assert hostile in drifted.text() and "reference: 550.54.15" in drifted.text()
    assert [r.find("td").text() for r in groups[0].find_all("tr", class_="node")] == ["n1", "n2"]
    assert tree.find("input", id="filter").attrs["type"] == "search"
    csp = tree.find("meta", http_equiv="Content-Security-Policy").attrs["content"]
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(tree.find("script").text().encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp


def test_a_large_reference_group_starts_closed():
    report = _report(1000)
    tree = parse(_html(report)).root
    groups = {g.attrs["id"]: g for g in tree.find_all("details", class_="group")}
    assert list(groups) == ["stack-1", "stack-2", "stack-3", "not-checked"]
    assert (
        "open" not in groups["stack-1"].attrs
        and "open" in groups["stack-2"].attrs
        and "open" in groups["not-checked"].attrs
    )
    assert [r.attrs["data-status"] for r in groups["not-checked"].find_all("tr", class_="node")] == [
        "dead",
        "timeout",
        "dead",
        "timeout",
    ]
    assert len(tree.find_all("tr", class_="node")) == 1000


def _html(report) -> str:
    import io

    stream = io.StringIO()
    fleet_html.render(report, stream)
    return stream.getvalue()


@pytest.mark.live
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium)")
def test_the_fleet_page_of_1000_nodes_in_chromium(tmp_path):
    """The page opens, the search box filters the rows (its script runs under the CSP), a screenshot is kept."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="no playwright (pip install playwright)")
    report = _report(1000)
    page_file = tmp_path / "fleet.html"
    page_file.write_text(_html(report), encoding="utf-8")
    shot, filtered = _artifacts() / "fleet-report-1000.png", _artifacts() / "fleet-report-1000-filtered.png"
    requests: list[str] = []
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("request", lambda request: requests.append(request.url))
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.goto(page_file.as_uri())
            assert page.locator("details.group").count() == 4  # three stacks and the nodes not checked
            assert page.locator("details#stack-3 tr.node:visible").count() == 40
            assert page.locator("table.overview tbody tr").count() == 4  # three stacks and the nodes not checked
            page.screenshot(path=str(shot), full_page=False)
            page.fill("#filter", "driver-too-old")
            assert page.locator("tr.node:visible").count() == 40
            page.screenshot(path=str(filtered), full_page=False)
            assert page.locator("#shown").inner_text() == "40 of 1000 nodes match"
            assert page.evaluate("document.getElementById('stack-1').open") is False
            page.fill("#filter", "gpu00042")
            assert page.locator("tr.node:visible").count() == 1
            assert page.evaluate("document.getElementById('stack-1').open") is True  # the match's group opened
            page.fill("#filter", "")
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        finally:
            browser.close()
    assert [u for u in requests if not u.startswith("file:")] == []
    assert not errors, errors
    assert shot.stat().st_size > 10_000 and filtered.stat().st_size > 10_000


@pytest.mark.live
def test_a_node_snapshot_through_another_interpreter():
    """`--python EXE`: the interpreter named takes the snapshot and hands it back as JSON, a valid machine fixture."""
    from cudnn_doctor.fleet.node import _snapshot_in
    from cudnn_doctor.system.fixture_format import validate as valid_fixture

    document = _snapshot_in(sys.executable, False, 60.0)
    assert valid_fixture(document)["schema"] == "machine-fixture/1"
    assert Checker().from_document("here", document).status == OK


@pytest.mark.live
@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for the interpreter")
def test_a_failing_interpreter_is_one_line(tmp_path):
    """What the interpreter said last (the exception line of its traceback) is the node's error."""
    from cudnn_doctor.fleet.node import _snapshot_in

    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\necho 'ModuleNotFoundError: no cudnn_doctor' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    with pytest.raises(RuntimeError) as raised:
        _snapshot_in(str(fake), False, 30.0)
    assert str(raised.value) == f"{fake}: ModuleNotFoundError: no cudnn_doctor"


def test_ignored_ids_leave_every_node_and_the_counts(tmp_path, capsys):
    healthy = load_fixture(HEALTHY)
    folder = write_nodes(tmp_path / "s", {"n1": healthy, "n2": healthy})
    _, before = fleet_json(capsys, "--from", str(folder))
    assert [c["id"] for c in before["findings"]] == ["cuda-toolkit-missing"]
    _, after = fleet_json(capsys, "--from", str(folder), "--ignore", "cuda-toolkit-missing")
    assert after["findings"] == [] and all(n["findings"] == [] for n in after["nodes"])
