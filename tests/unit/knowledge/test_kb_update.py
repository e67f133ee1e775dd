"""Issue 30: `kb update` against a package index served on loopback: a new release is picked up and used by later
lookups; a malformed, oversized, slow or hostile answer changes nothing and says so in one line."""

from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from cudnn_doctor import knowledge
from cudnn_doctor.cli import main
from cudnn_doctor.knowledge import pypi, update
from cudnn_doctor.system.state_files import write_whole

NEW_METADATA = 'Metadata-Version: 2.1\nName: jax\nVersion: 0.13.0\nRequires-Python: >=3.12\nProvides-Extra: cuda13\nRequires-Dist: jax-cuda13-plugin<=0.13.0,>=0.13.0; extra == "cuda13"\n\n'


def _wheel() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("jax/__init__.py", "")
        archive.writestr("jax-0.13.0.dist-info/METADATA", NEW_METADATA)
    return buffer.getvalue()


WHEEL = _wheel()


def _index(base: str) -> dict[str, bytes]:
    """Every tracked distribution's page: what the doctor knows, plus jax 0.13.0 and its CUDA 13 plugin."""
    pages = {}
    for name in pypi.TRACKED:
        files = [
            {"filename": f"{name.replace('-', '_')}-{r.version}-py3-none-any.whl", "url": f"{base}/none.whl"}
            for r in knowledge.published(name)
        ]
        if name == "jax":
            files = [f for f in files if not f["filename"].startswith("jax-0.")] + [
                {
                    "filename": "jax-0.13.0-py3-none-any.whl",
                    "url": f"{base}/files/jax.whl",
                    "size": len(WHEEL),
                    "requires-python": ">=3.12",
                }
            ]
        if name == "jax-cuda13-plugin":
            files.append(
                {
                    "filename": "jax_cuda13_plugin-0.13.0-cp312-cp312-manylinux_2_27_x86_64.whl",
                    "url": f"{base}/none.whl",
                }
            )
        pages[f"/simple/{name}/"] = json.dumps({"meta": {"api-version": "1.1"}, "name": name, "files": files}).encode()
    return pages


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., str]]:
    """A loopback index; `serve(change)` lets a test alter what a path answers. The state folder is the test's own."""
    monkeypatch.setenv("CUDNN_DOCTOR_STATE_DIR", str(tmp_path / "state"))
    knowledge.use_updates(tmp_path / "state")  # as the command line does for a run on this machine
    answers: dict[str, Any] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = answers.get(self.path)
            if callable(answer):
                answer = answer(self)
                if answer is None:
                    return
            if answer is None:
                self.send_error(404)
                return
            span = self.headers.get("Range")
            if span:
                start, end = (int(n) for n in span.removeprefix("bytes=").split("-"))
                answer = answer[start : end + 1]
            self.send_response(206 if span else 200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # the slow answer's client has gone: nothing to report

    server = Server(("127.0.0.1", 0), Handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    answers.update(_index(base))
    answers["/files/jax.whl"] = WHEEL
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def serve(**changes: Any) -> str:
        answers.update(changes)
        return f"{base}/simple/"

    try:
        yield serve
    finally:
        server.shutdown()
        server.server_close()
        knowledge.use_updates(None)


def _quick(url: str, headers: dict) -> bytes:
    return pypi._get(url, headers, timeout=2)


def test_a_new_release_is_picked_up_and_used(served):
    assert "0.13.0" not in knowledge.framework_releases("jax")
    result = update.update(write_whole, get=_quick, index=served())
    assert result.error is None and "jax 0.13.0" in result.added and "jax-cuda13-plugin 0.13.0" in result.added, result
    assert Path(result.path).is_file()
    assert knowledge.framework_releases("jax")[0] == "0.13.0", "later lookups see the update"
    extra = knowledge.published_extra("jax", "0.13.0", "cuda13")
    assert extra is not None and extra.requires == ("jax-cuda13-plugin<=0.13.0,>=0.13.0",)
    assert update.status().update is not None


def _unchanged(result: update.Update, says: str) -> None:
    assert result.error and says in result.error and "nothing was changed" in result.error, result
    assert not Path(result.path).exists() and "0.13.0" not in knowledge.framework_releases("jax")


def test_a_malformed_index_changes_nothing(served):
    _unchanged(
        update.update(write_whole, get=_quick, index=served(**{"/simple/jax/": b"<html>not json</html>"})),
        "JSONDecodeError",
    )


def test_an_oversized_answer_is_cut_off(served):
    _unchanged(
        update.update(write_whole, get=_quick, index=served(**{"/simple/jax/": b" " * (100 << 20)})), "more than"
    )


def test_a_slow_index_times_out(served):
    def slow(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(4)
        return None

    _unchanged(update.update(write_whole, get=_quick, index=served(**{"/simple/jax/": slow})), "timed out")


def test_a_file_pointing_off_https_is_refused(served):
    page = json.dumps(
        {"files": [{"filename": "jax-0.13.0-py3-none-any.whl", "url": "http://files.example/jax.whl", "size": 100000}]}
    ).encode()
    _unchanged(update.update(write_whole, get=_quick, index=served(**{"/simple/jax/": page})), "not an HTTPS URL")


def test_an_update_file_that_went_bad_is_ignored_and_status_says_why(served, capsys):
    path = knowledge.update_path()
    path.parent.mkdir(parents=True)
    path.write_text('{"published": {"releases": [{"distribution": "jax"}]}}', encoding="utf-8")
    knowledge.forget_update()
    assert knowledge.framework_releases("jax")  # the shipped data, as if there were no update
    assert main(["kb", "status"]) == 0
    out = capsys.readouterr().out
    assert "is not used" in out and "missing key 'version'" in out, out


def test_a_replayed_fixture_keeps_the_shipped_data(served, tmp_path):
    """The update counts for a run on this machine; a fixture's diagnosis is the same on every host."""
    assert update.update(write_whole, get=_quick, index=served()).error is None
    knowledge.use_updates(None)
    assert "0.13.0" not in knowledge.framework_releases("jax")
    knowledge.use_updates(tmp_path / "state")
    assert knowledge.framework_releases("jax")[0] == "0.13.0"
