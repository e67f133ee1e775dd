"""The self-contained HTML report (issue 12): `check --html FILE` and `reports.html.render_verify`.

The HTML is parsed with the standard library's html.parser: every finding with its fix steps, the
search-order rows, one chart per kind with bars that follow the numbers, escaping, and nothing
loaded from the network. The last test opens the file in Debian's chromium through Playwright
(skipped where either is missing) and saves a screenshot as a test artifact.
"""

from __future__ import annotations

import html as html_module
import io
import json
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
import yaml

from cudnn_doctor.cli import main
from cudnn_doctor.reports import html, html_charts
from cudnn_doctor.system.fixture_format import load_fixture
from tests.conftest import GALLERY, REPO, gallery_paths, run, shared_fixture_paths

SHARED = shared_fixture_paths()
MACHINES = gallery_paths() + SHARED  # the gallery in every clone, the shared yardstick where present
VERIFY_EXAMPLE = REPO / "tests" / "data" / "verify" / "constructed-gpu.json"
HOSTILE = "<script>alert(1)</script>"


# ---------------------------------------------------------------- a small DOM from html.parser


class Node:
    def __init__(self, tag: str, attrs: dict[str, Optional[str]], parent: Optional[Node]) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Any] = []  # Node or str

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def clean(self) -> str:
        return " ".join(self.text().split())

    def iter(self) -> Iterator[Node]:
        for child in self.children:
            if isinstance(child, Node):
                yield child
                yield from child.iter()

    def find_all(self, tag: Optional[str] = None, **attrs: str) -> list[Node]:
        found = []
        for node in self.iter():
            if tag is not None and node.tag != tag:
                continue
            if all(_attr_matches(node, k.rstrip("_").replace("_", "-"), v) for k, v in attrs.items()):
                found.append(node)
        return found

    def find(self, tag: Optional[str] = None, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag}> with {attrs}"
        return found[0]


def _attr_matches(node: Node, name: str, wanted: str) -> bool:
    value = node.attrs.get(name)
    if value is None:
        return False
    return wanted in value.split() if name == "class" else value == wanted


VOID = {"meta", "col", "br", "img", "link", "input", "hr", "source", "wbr"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.at = self.root
        self.tags: list[tuple[str, dict[str, Optional[str]]]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        node = Node(tag, dict(attrs), self.at)
        self.tags.append((tag, node.attrs))
        self.at.children.append(node)
        if tag not in VOID:
            self.at = node

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        node = Node(tag, dict(attrs), self.at)
        self.tags.append((tag, node.attrs))
        self.at.children.append(node)

    def handle_endtag(self, tag: str) -> None:
        walk: Optional[Node] = self.at
        while walk is not None and walk.tag != tag:
            walk = walk.parent
        assert walk is not None and walk.parent is not None, f"</{tag}> closes nothing"
        assert walk is self.at, f"</{tag}> closes <{walk.tag}> while <{self.at.tag}> is open"
        self.at = walk.parent

    def handle_data(self, data: str) -> None:
        self.at.children.append(data)


def parse(text: str) -> _Builder:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    assert builder.at is builder.root, f"<{builder.at.tag}> never closed"
    return builder


# ---------------------------------------------------------------- running the CLI


def check(tmp_path: Path, fixture: Path, capsys, *extra: str) -> tuple[int, str, str, Path]:
    out = tmp_path / "report.html"
    code = main(["check", "--fixture", str(fixture), "--no-color", "--html", str(out), *extra])
    stdout, stderr = capsys.readouterr()
    return code, stdout, stderr, out


def json_findings(fixture: Path, capsys) -> tuple[int, list[dict[str, Any]]]:
    code = main(["check", "--fixture", str(fixture), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)["findings"]


@pytest.mark.parametrize("fixture", MACHINES, ids=[p.stem for p in MACHINES])
def test_every_finding_with_its_fix_steps_and_page(tmp_path, capsys, fixture):
    """Each finding of the JSON report is in the HTML: causes with their fix steps in order, symptoms under their cause."""
    expected_code, findings = json_findings(fixture, capsys)
    code, stdout, stderr, out = check(tmp_path, fixture, capsys)
    assert code == expected_code
    assert f"HTML report written to {out}" in stderr
    assert stdout.startswith("cudnn-doctor check\n")  # the normal output is still there
    tree = parse(out.read_text(encoding="utf-8")).root
    shown = {n.attrs["data-id"] for n in tree.find("section", id="findings").iter() if "data-id" in n.attrs}
    assert shown == {f["id"] for f in findings}
    articles = tree.find("section", id="findings").find_all("article")
    causes = [i for i, f in enumerate(findings) if "symptom_of" not in f]
    assert [a.attrs["data-id"] for a in articles] == [findings[i]["id"] for i in causes]
    for index, finding in enumerate(findings):
        if "symptom_of" in finding:
            article = articles[causes.index(finding["symptom_of"])]
            assert finding["id"] in [
                li.attrs["data-id"] for li in article.find("div", class_="symptoms").find_all("li")
            ]
            continue
        article = articles[causes.index(index)]
        assert finding["title"] in article.find("h3").clean()
        assert " ".join(finding["detail"].split()) in article.find("p", class_="detail").clean()
        steps = [li.clean() for li in article.find("ol", class_="fix").find_all("li")] if finding["fix"] else []
        assert steps == [" ".join(_unmarked(s).split()) for s in finding["fix"]]
    anchors = [n.attrs["id"] for n in tree.iter() if "id" in n.attrs]
    assert len(anchors) == len(set(anchors)), "an id used twice"
    ids = set(anchors)
    for link in tree.find_all("a", class_="page-link"):
        target = link.attrs["href"]
        assert target.startswith("#page-") and target[1:] in ids, target
    if findings:
        assert tree.find("section", id="pages").find_all("h4"), "the pages carry their sections"
    else:
        assert "No issues found" in tree.find("section", id="findings").clean()


def _unmarked(step: str) -> str:
    """A fix step as the page shows it: paired backticks become <code>, a lone one stays."""
    return step.replace("`", "") if step.count("`") % 2 == 0 else step


def _diagnosis(path: Path):
    return run(load_fixture(path))


@pytest.mark.parametrize("fixture", MACHINES, ids=[p.stem for p in MACHINES])
def test_search_order_table_follows_the_emulated_load(fixture):
    """One table per framework whose load asks for cuDNN: every searched place in order, the copy taken marked used."""
    diagnosis = _diagnosis(fixture)
    out = io.StringIO()
    html.render_check(diagnosis, out)
    tree = parse(out.getvalue()).root
    blocks = tree.find("section", id="search-order").find_all("div", class_="resolution")
    assert [b.attrs["data-framework"] for b in blocks] == [r.framework for r in diagnosis.facts.resolutions]
    for block, resolution in zip(blocks, diagnosis.facts.resolutions):
        step = resolution.cudnn_front()
        if step is None:
            assert not block.find_all("table", class_="search-order")
            continue
        rows = block.find("table", class_="search-order").find("tbody").find_all("tr")
        numbered = [r for r in rows if r.find_all("td")[0].clean()]
        places = list(dict.fromkeys((r.find_all("td")[0].clean(), r.find_all("td")[1].clean()) for r in numbered))
        assert places == [(str(i), p) for i, p in enumerate(step.searched, 1)]
        used = [r for r in rows if "used" in r.attrs.get("class", "").split()]
        if step.winner:
            assert len(used) == 1 and step.winner in used[0].clean()
        else:
            assert not used
        assert sum(1 for r in rows if r.attrs.get("class") != "searched") == len(step.candidates)


def test_the_two_cuda_folders_table_of_the_guides(tmp_path, capsys):
    """The seed machine where CUDA 11.2's older cuDNN comes first on PATH: that copy is used, 11.3's is a copy not used."""
    fixture = next((p for p in SHARED if p.name == "seed-win-two-cuda-old-cudnn-first.yaml"), None)
    if fixture is None:
        pytest.skip("no shared seed fixture seed-win-two-cuda-old-cudnn-first")
    code, _, _, out = check(tmp_path, fixture, capsys)
    assert code == 1
    table = (
        parse(out.read_text(encoding="utf-8"))
        .root.find("div", data_framework="tensorflow")
        .find("table", class_="search-order")
    )
    assert table.attrs["data-library"] == "cudnn64_8.dll"
    rows = {r.find_all("td")[1].clean(): r for r in table.find("tbody").find_all("tr")}
    used = rows["C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.2\\bin"]
    later = rows["C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.3\\bin"]
    assert used.attrs["class"] == "used" and "cuDNN 8.0.5.39" in used.clean()
    assert later.attrs["class"] == "copy" and "copy, not used" in later.clean() and "cuDNN 8.2.0" in later.clean()
    numbers = [r.find_all("td")[0].clean() for r in (used, later)]
    assert int(numbers[0]) < int(numbers[1])


def test_a_sub_library_from_another_folder_is_marked():
    """The venv's libcudnn.so.9 taking the system's 9.1 sub-libraries: each is marked as from another folder."""
    fixture = next((p for p in SHARED if p.name.startswith("25-linux-system-cudnn9-graph-shadows")), None)
    if fixture is None:
        pytest.skip("no shared fixture 25")
    out = io.StringIO()
    html.render_check(_diagnosis(fixture), out)
    table = parse(out.getvalue()).root.find("div", data_framework="torch").find("table", class_="sub-libraries")
    graph = next(r for r in table.find_all("tr") if "libcudnn_graph.so.9" in r.find("td").clean())
    assert graph.attrs.get("class") == "unusable" and "another folder" in graph.clean()


# ---------------------------------------------------------------- escaping and no network


def _hostile_gallery_machine(tmp_path: Path) -> Path:
    """A gallery machine whose home folder and cuDNN folder hold an HTML script tag."""
    source = GALLERY / "linux-tf213-old-cudnn81-first-on-ld-library-path.yaml"
    text = source.read_text(encoding="utf-8")

    def swap(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("/home/li", f"/home/{HOSTILE}").replace("/opt/cudnn-8.1.1", f"/opt/cudnn {HOSTILE}")
        if isinstance(value, dict):
            return {swap(k): swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump(swap(yaml.safe_load(text))), encoding="utf-8")
    return path


def test_hostile_paths_are_escaped(tmp_path, capsys):
    fixture = _hostile_gallery_machine(tmp_path)
    _, stdout, _, out = check(tmp_path, fixture, capsys)
    assert HOSTILE in stdout  # the machine really carries it: the terminal prints it as is
    text = out.read_text(encoding="utf-8")
    assert "<script" not in text.lower()
    assert html_module.escape(HOSTILE) in text
    builder = parse(text)
    assert not [t for t, _ in builder.tags if t == "script"]
    assert HOSTILE in builder.root.find("section", id="search-order").clean()  # shown, as text
    assert HOSTILE in builder.root.find("section", id="findings").clean()


def _verify_example() -> dict[str, Any]:
    return json.loads(VERIFY_EXAMPLE.read_text(encoding="utf-8"))


def _verify_html(result: dict[str, Any], diagnosis: Any = None) -> str:
    out = io.StringIO()
    html.render_verify(result, out, diagnosis)
    return out.getvalue()


def test_hostile_verify_strings_are_escaped():
    result = _verify_example()
    result["python"] = f"/opt/{HOSTILE}/python"
    framework = result["frameworks"][0]
    framework["message"] = '<img src="https://evil.example/x.png" onerror="alert(1)">'
    framework["verdicts"][0]["text"] = f'"><svg onload=alert(1)>{HOSTILE}'
    framework["benchmarks"][0]["shape"] = f"{HOSTILE}"
    result["gpu"]["throttle_reasons"] = [HOSTILE]
    text = _verify_html(result)
    builder = parse(text)
    assert not [t for t, _ in builder.tags if t in ("script", "img")]
    assert [t for t, a in builder.tags if t == "svg" and "onload" in a] == []
    assert "<script" not in text.lower() and "<img" not in text.lower()
    assert HOSTILE in builder.root.find("ul", class_="verdicts").clean()


LOADING = {"link", "script", "img", "iframe", "source", "embed", "object", "audio", "video", "image", "use"}


def _loads_nothing(text: str) -> None:
    builder = parse(text)
    for tag, attrs in builder.tags:
        for name in ("src", "href", "xlink:href", "data", "srcset", "poster"):
            value = (attrs.get(name) or "").strip().lower()
            if tag in LOADING or name != "href":
                assert not value.startswith(("http://", "https://", "//")), f"<{tag} {name}={value}>"
    assert not [t for t, _ in builder.tags if t in ("script", "link", "iframe", "object", "embed")]
    assert "@import" not in text and "url(" not in text
    csp = next(a for t, a in builder.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp["content"]


def test_check_report_loads_nothing_from_the_network(tmp_path, capsys):
    fixture = GALLERY / "win-torch-cpu-wheel-from-pypi.yaml"
    _, _, _, out = check(tmp_path, fixture, capsys)
    text = out.read_text(encoding="utf-8")
    _loads_nothing(text)
    links = [a.attrs["href"] for a in parse(text).root.find_all("a")]
    assert "https://download.pytorch.org/whl/cu121" in links  # links are fine: they load nothing until followed


def test_verify_report_loads_nothing_from_the_network():
    _loads_nothing(
        _verify_html(_verify_example(), _diagnosis(GALLERY / "linux-tf213-old-cudnn81-first-on-ld-library-path.yaml"))
    )


# ---------------------------------------------------------------- the verify charts


def _bars(tree: Node, chart: str) -> dict[str, list[tuple[float, float]]]:
    """label -> [(value, drawn width)] of one chart kind's bars."""
    svgs = tree.find_all("svg", data_chart=chart)
    assert len(svgs) == 1, f"{len(svgs)} charts of kind {chart}"
    bars: dict[str, list[tuple[float, float]]] = {}
    for rect in svgs[0].find_all("rect", class_="bar"):
        bars.setdefault(rect.attrs["data-label"], []).append(
            (float(rect.attrs["data-value"]), float(rect.attrs["width"]))
        )
    return bars


def test_one_chart_per_kind_with_bars_that_follow_the_numbers():
    result = _verify_example()
    tree = parse(_verify_html(result)).root
    kinds = [svg.attrs["data-chart"] for svg in tree.find_all("svg")]
    assert sorted(kinds) == ["bandwidth", "cudnn", "gpucpu", "peak"]

    cudnn = _bars(tree, "cudnn")
    (on_value, on_width), (off_value, off_width) = cudnn["cuDNN on"][0], cudnn["cuDNN off"][0]
    medians = {(b["id"], b["device"]): b["median_s"] for b in result["frameworks"][0]["benchmarks"]}
    assert (on_value, off_value) == (medians["conv-large", "gpu"], medians["conv-large-cudnn-off", "gpu"])
    assert off_width > on_width
    assert on_width / off_width == pytest.approx(on_value / off_value, rel=0.01)
    assert cudnn["cuDNN + autotune"][0][1] < on_width  # autotuned is faster than the default algorithm in the example

    gpucpu = _bars(tree, "gpucpu")
    assert gpucpu["GPU"][0][1] < gpucpu["CPU"][0][1]
    assert gpucpu["GPU"][0][0] == 0.00021

    peak = _bars(tree, "peak")
    assert sorted(peak) == ["bf16", "fp16", "fp32", "tf32"]
    line = tree.find("svg", data_chart="peak").find("line", class_="reference")
    full = float(line.attrs["x1"]) - html_charts._LABEL  # the 100 % line's distance from the bars' start
    assert peak["bf16"][0][1] / full == pytest.approx(0.736, rel=0.01)
    assert peak["fp32"][0][1] > peak["bf16"][0][1]  # 81.6 % against 73.6 %

    bandwidth = _bars(tree, "bandwidth")
    assert bandwidth["pinned"][0][1] > bandwidth["pageable"][0][1]

    verdicts = [li.attrs["data-id"] for li in tree.find("ul", id="verdicts-torch").find_all("li")]
    assert verdicts == ["gpu-faster-than-cpu", "cudnn-active", "matmul-peak"]
    gpu = tree.find("section", id="gpu")
    assert (
        "NVIDIA H100 80GB HBM3 · compute capability 9.0 · driver 570.124.06" in gpu.find("p", class_="gpu-line").clean()
    )
    state = {
        tr.find("th").clean(): tr.find("td").clean() for tr in gpu.find("table", class_="gpu-state").find_all("tr")
    }
    assert state == {
        "clocks": "sm 1980 MHz, sm_max 1980 MHz, memory 2619 MHz",
        "power": "612 W draw of 700 W limit",
        "throttle reasons": "none",
    }


def test_the_bars_move_with_the_data():
    """Swap the cuDNN-on and -off times: the bars swap too (the chart is drawn from the numbers, not fixed)."""
    result = _verify_example()
    benchmarks = {b["id"]: b for b in result["frameworks"][0]["benchmarks"]}
    on, off = benchmarks["conv-large"], benchmarks["conv-large-cudnn-off"]
    on["median_s"], off["median_s"] = off["median_s"], on["median_s"]
    for b in result["frameworks"][0]["benchmarks"]:
        if b.get("percent_of_peak") is not None and b["kind"] == "matmul" and b["precision"] == "bf16":
            b["percent_of_peak"] = 12.0
    tree = parse(_verify_html(result)).root
    cudnn = _bars(tree, "cudnn")
    assert cudnn["cuDNN off"][0][1] < cudnn["cuDNN on"][0][1]
    peak = _bars(tree, "peak")
    assert peak["bf16"][0][1] < peak["tf32"][0][1] / 5


def test_throttle_reasons_and_a_peak_above_the_datasheet():
    result = _verify_example()
    result["gpu"]["throttle_reasons"] = ["HwSlowdown", "SwPowerCap"]
    for b in result["frameworks"][0]["benchmarks"]:
        if b["id"] == "matmul-8192-fp32":
            b["percent_of_peak"] = 130.0
    tree = parse(_verify_html(result)).root
    assert "throttle reasonsHwSlowdown, SwPowerCap" in tree.find("table", class_="gpu-state").clean()
    peak = _bars(tree, "peak")
    line = float(tree.find("svg", data_chart="peak").find("line", class_="reference").attrs["x1"]) - html_charts._LABEL
    assert peak["fp32"][0][1] > line  # past the 100 % line, still on the chart
    assert peak["fp32"][0][1] == pytest.approx(html_charts._TRACK, rel=0.01)  # the scale grew to hold it


def test_the_comparison_with_the_last_run():
    result = _verify_example()
    result["compare"] = [
        {"framework": "torch", "id": "matmul-8192-bf16", "before_s": 0.00151, "after_s": 0.00302, "ratio": 0.5}
    ]
    rows = parse(_verify_html(result)).root.find("table", class_="compare").find("tbody").find_all("tr")
    assert [[td.clean() for td in r.find_all("td")] for r in rows] == [
        ["torch", "matmul-8192-bf16", "1.51 ms", "3.02 ms", "0.5×"]
    ]
    assert 'id="compare"' not in _verify_html(_verify_example())  # null: no section


def _no_gpu_result() -> dict[str, Any]:
    """What verify writes on a machine without a GPU: gpu null, the framework 'no-gpu', CPU benchmarks only."""
    result = _verify_example()
    result["gpu"] = None
    result["exit_code"] = 1
    framework = result["frameworks"][0]
    framework.update(
        status="no-gpu", message="no NVIDIA GPU: torch.cuda.is_available() is False; the CPU baseline ran", smoke=[]
    )
    framework["benchmarks"] = [b for b in framework["benchmarks"] if b["device"] == "cpu"]
    framework["verdicts"] = [{"id": "no-gpu", "status": "fail", "text": "no NVIDIA GPU: only the CPU baseline ran"}]
    return result


def test_a_result_without_a_gpu():
    result = _no_gpu_result()
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(html.__file__).with_name("verify.schema.json")).read_text(encoding="utf-8"))
    jsonschema.validate(result, schema)
    tree = parse(_verify_html(result)).root
    assert "No NVIDIA GPU" in tree.find("section", id="gpu").clean()
    assert [svg.attrs["data-chart"] for svg in tree.find_all("svg")] == ["gpucpu"]
    bars = _bars(tree, "gpucpu")
    assert list(bars) == ["CPU"] and len(bars["CPU"]) == 2
    assert tree.find("figure", id="chart-gpucpu-torch").find("h4").clean() == "CPU baseline (no GPU run to compare)"
    assert "no NVIDIA GPU: CPU baseline only" in tree.find("header").clean()
    section = tree.find("section", id="fw-torch")
    assert (
        "no-gpu" in section.find("h2").clean() and "the CPU baseline ran" in section.find("p", class_="message").clean()
    )


def test_verify_with_the_diagnosis_carries_the_check_report():
    diagnosis = _diagnosis(GALLERY / "linux-tf213-old-cudnn81-first-on-ld-library-path.yaml")
    tree = parse(_verify_html(_verify_example(), diagnosis)).root
    for section in ("gpu", "fw-torch", "summary", "findings", "search-order", "pages"):
        assert tree.find("section", id=section)
    assert {a.attrs["data-id"] for a in tree.find_all("article")} == {
        f.id for f in diagnosis.findings if f.symptom_of is None
    }


# ---------------------------------------------------------------- the CLI option and the atomic write


def test_a_bad_path_is_one_line_and_exit_2(tmp_path, capsys):
    fixture = GALLERY / "win-torch-cpu-wheel-from-pypi.yaml"
    for target, message in ((tmp_path / "nowhere" / "r.html", "does not exist"), (tmp_path, "is a folder")):
        code = main(["check", "--fixture", str(fixture), "--html", str(target)])
        out, err = capsys.readouterr()
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith("cudnn-doctor: error: --html ") and message in err
    assert list(tmp_path.iterdir()) == []


def test_the_file_is_replaced_whole_and_no_temporary_stays(tmp_path, capsys, monkeypatch):
    fixture = GALLERY / "win-torch-cpu-wheel-from-pypi.yaml"
    target = tmp_path / "report.html"
    target.write_text("old report", encoding="utf-8")
    code, _, _, out = check(tmp_path, fixture, capsys, "--format", "json")
    assert code == 1 and out == target
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    mode = target.stat().st_mode & 0o777
    if os.name == "posix":
        assert mode & 0o044, oct(mode)  # readable by others as any file the user writes (mkstemp's 0600 undone)

    def broken(diagnosis, stream, *when_and_host):
        stream.write("<!DOCTYPE html><p>half")
        raise OSError(28, "No space left on device")

    target.write_text("old report", encoding="utf-8")
    monkeypatch.setattr(html, "render_check", broken)
    code = main(["check", "--fixture", str(fixture), "--html", str(target)])
    _, err = capsys.readouterr()
    assert code == 2 and "No space left on device" in err
    assert target.read_text(encoding="utf-8") == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_json_output_stays_json_with_html(tmp_path, capsys):
    fixture = GALLERY / "win-torch-cpu-wheel-from-pypi.yaml"
    _, stdout, _, _ = check(tmp_path, fixture, capsys, "--format", "json")
    assert json.loads(stdout)["schema"] == "cudnn-doctor-report/1"


def test_markdown_of_the_pages():
    text = "## How to fix\n\n1. Run `a <b>`,\n   then c.\n2. See https://example.com/x.\n\n- one\n- two\n\n```text\n<raw> & more\n```\nplain & text\n"
    got = html.markdown(text)
    assert got == (
        "<h4>How to fix</h4><ol><li>Run <code>a &lt;b&gt;</code>, then c.</li>"
        '<li>See <a href="https://example.com/x">https://example.com/x</a>.</li></ol>'
        "<ul><li>one</li><li>two</li></ul><pre><code>&lt;raw&gt; &amp; more</code></pre><p>plain &amp; text</p>"
    )


def _check_page(fixture: Path, **options: Any) -> str:
    out = io.StringIO()
    html.render_check(_diagnosis(fixture), out, **options)
    return out.getvalue()


HEALTHY = GALLERY / "wsl-healthy-torch251-cu124.yaml"
FAILING = GALLERY / "win-cudnn89-archive-folder-copied-whole.yaml"


def test_the_header_and_banner_follow_the_verdict_and_say_when_and_where():
    """Issue 31: a clear healthy banner, a header whose colour follows the verdict, the date and the host."""
    healthy = _check_page(HEALTHY, when="2026-12-07 00:30 UTC", host="gpu-box")
    assert '<header class="top verdict-ok">' in healthy and '<div class="banner ok" role="status">✓ Healthy' in healthy
    assert "checked 2026-12-07 00:30 UTC on gpu-box" in healthy
    failing = _check_page(FAILING, when="2026-12-07 00:30 UTC")
    assert (
        '<header class="top verdict-err">' in failing
        and '<div class="banner err"' in failing
        and " on " not in failing.split("</p>")[0]
    )


def test_each_finding_shows_its_fix_command():
    page = _check_page(FAILING)
    assert '<p class="autofix">fix: safe — <code>cudnn-doctor fix cudnn-nested-layout</code></p>' in page


def test_redact_leaves_out_the_host_and_the_user(tmp_path, capsys):
    fixture = tmp_path / "m.yaml"
    text = FAILING.read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    user = document["env"]["USERPROFILE"].rsplit("\\", 1)[-1]  # the profile folder's name: a name the user goes by
    assert user and f"\\{user}\\" in _check_page(FAILING)
    page = tmp_path / "check.html"
    fixture.write_text(text, encoding="utf-8")
    assert main(["check", "--fixture", str(fixture), "--html", str(page), "--redact"]) == 1
    capsys.readouterr()
    assert f"\\{user}\\" not in page.read_text(encoding="utf-8")


# ---------------------------------------------------------------- the browser: Debian's chromium through Playwright


def _artifacts() -> Path:
    folder = Path(os.environ.get("CUDNN_DOCTOR_ARTIFACTS") or REPO / "build" / "test-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


CHROMIUM = shutil.which("chromium")


@pytest.mark.live
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium)")
def test_the_report_renders_in_chromium(tmp_path, capsys):
    """The findings, the search-order table and each chart are visible with a size; a screenshot is kept."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="no playwright (pip install playwright)")
    fixture = GALLERY / "linux-tf213-old-cudnn81-first-on-ld-library-path.yaml"
    page_file = tmp_path / "verify.html"
    page_file.write_text(_verify_html(_verify_example(), _diagnosis(fixture)), encoding="utf-8")
    check_file = tmp_path / "check.html"
    assert main(["check", "--fixture", str(fixture), "--html", str(check_file)]) == 1
    capsys.readouterr()
    shots = _artifacts()
    requests: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.on("request", lambda request: requests.append(request.url))
            errors: list[str] = []
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.goto(page_file.as_uri())
            for selector in ("section#findings article.finding", "table.search-order", "ul.verdicts", "section#gpu"):
                box = page.locator(selector).first.bounding_box()
                assert (
                    page.locator(selector).first.is_visible() and box and box["width"] > 100 and box["height"] > 10
                ), selector
            for kind in ("gpucpu", "cudnn", "peak", "bandwidth"):
                chart = page.locator(f'svg[data-chart="{kind}"]')
                box = chart.bounding_box()
                assert chart.is_visible() and box and box["width"] > 300 and box["height"] > 40, kind
                bars = chart.locator("rect.bar")
                assert bars.count() >= 1 and all(
                    (bars.nth(i).bounding_box() or {}).get("width", 0) > 0 for i in range(bars.count())
                )
            off = page.locator('svg[data-chart="cudnn"] rect.bar[data-label="cuDNN off"]').bounding_box()
            on = page.locator('svg[data-chart="cudnn"] rect.bar[data-label="cuDNN on"]').bounding_box()
            assert off["width"] > 10 * on["width"]
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280, "no sideways scrolling at 1280 px"
            shot = shots / "html-report-verify.png"
            page.screenshot(path=str(shot), full_page=True)
            page.emulate_media(media="print")
            print_shot = shots / "html-report-verify-print.png"
            page.screenshot(path=str(print_shot), full_page=True)

            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.on("request", lambda request: requests.append(request.url))
            page.goto(check_file.as_uri())
            assert page.locator("section#findings article.finding").count() >= 1
            assert page.locator("table.search-order tr.used").first.is_visible()
            link = page.locator("a.page-link").first
            target = link.get_attribute("href")
            link.click()
            assert page.evaluate("window.scrollY") > 800  # it jumped down to the embedded page, offline
            assert -2 <= page.locator(target).evaluate("e => e.getBoundingClientRect().top") < 800  # sub-pixel rounding
            check_shot = shots / "html-report-check.png"
            page.screenshot(path=str(check_shot), full_page=True)
        finally:
            browser.close()
    assert [u for u in requests if not u.startswith("file:")] == []
    assert not errors, errors
    assert shot.stat().st_size > 10_000
    with capsys.disabled():
        print(f"\nscreenshots: {shot} {print_shot} {check_shot}")


@pytest.mark.live
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium)")
def test_healthy_failing_fleet_and_markdown_pages_in_chromium(tmp_path, capsys):
    """Issue 31: each page people share, opened in Chromium and kept as a screenshot: check healthy (a green banner),
    check failing (a red one), the fleet page, and the markdown report as a Markdown library renders it."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="no playwright (pip install playwright)")
    from markdown_it import MarkdownIt

    from cudnn_doctor.reports import markdown_report

    pages = {
        "check-healthy": tmp_path / "healthy.html",
        "check-failing": tmp_path / "failing.html",
        "fleet": tmp_path / "fleet.html",
    }
    pages["check-healthy"].write_text(
        _check_page(HEALTHY, when="2026-12-07 00:30 UTC", host="gpu-box"), encoding="utf-8"
    )
    pages["check-failing"].write_text(_check_page(FAILING, when="2026-12-07 00:30 UTC"), encoding="utf-8")
    main(["fleet", "--from", str(GALLERY), "--html", str(pages["fleet"])])
    text = io.StringIO()
    markdown_report.render(_diagnosis(FAILING), text)
    body = MarkdownIt("commonmark").enable("table").render(text.getvalue())
    pages["markdown"] = tmp_path / "markdown.html"
    pages["markdown"].write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{body}</body></html>', encoding="utf-8"
    )
    capsys.readouterr()
    shots = _artifacts()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for name, path in pages.items():
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(path.as_uri())
                if name.startswith("check"):
                    banner = page.locator("div.banner")
                    colour = banner.evaluate("e => getComputedStyle(e).borderLeftColor")
                    assert banner.is_visible() and colour == (
                        "rgb(46, 125, 50)" if name == "check-healthy" else "rgb(198, 40, 40)"
                    ), (name, colour)
                if name == "markdown":
                    assert (
                        page.locator("table").is_visible()
                        and page.locator("h4").count() >= 1
                        and page.locator("ol li").count() >= 1
                    )
                shot = shots / f"html-{name}.png"
                page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 5_000, name
        finally:
            browser.close()
