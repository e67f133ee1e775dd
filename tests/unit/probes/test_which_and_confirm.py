"""`cudnn-doctor which`, and the live check of the emulation against a real load."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from cudnn_doctor.cli import main
from cudnn_doctor.diagnose import diagnose
from cudnn_doctor.system.fixture import FixtureSystem
from tests.conftest import GALLERY, SHARED_FIXTURES

needs_gcc = pytest.mark.skipif(sys.platform != "linux" or shutil.which("gcc") is None, reason="needs gcc on Linux")


@pytest.mark.live
@needs_gcc
def test_which_resolves_and_confirms_with_a_real_load(tmp_path, monkeypatch, capsys):
    (tmp_path / "x.c").write_text("int x(void) { return 1; }\n")
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-o",
            str(tmp_path / "libdoctorx.so.1"),
            str(tmp_path / "x.c"),
            "-Wl,-soname,libdoctorx.so.1",
        ],
        check=True,
    )
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    code = main(["which", "libdoctorx.so.1"])
    out = capsys.readouterr().out
    assert code == 0
    assert f"{tmp_path}  ← used" in out
    assert f"real load: {tmp_path / 'libdoctorx.so.1'} (agrees with the emulation)" in out


@pytest.mark.parametrize(
    ("path", "name", "used", "unused"),
    [
        pytest.param(
            GALLERY / "linux-tf213-old-cudnn81-first-on-ld-library-path.yaml",
            "libcudnn.so.8",
            "result: /opt/cudnn-8.1.1/lib64/libcudnn.so.8",
            "/usr/lib/x86_64-linux-gnu  (copy: not used)",
            id="gallery",
        ),
        pytest.param(
            SHARED_FIXTURES / "seed" / "seed-win-cudnn-in-system32.yaml",
            "cudnn64_8.dll",
            "result: C:\\Windows\\System32\\cudnn64_8.dll",
            "v11.7\\bin  (copy: not used)",
            id="shared",
        ),
    ],
)
def test_which_on_a_fixture_shows_the_shadowing_copy(capsys, path, name, used, unused):
    if not path.exists():
        pytest.skip(f"no {path}")
    code = main(["which", name, "--fixture", str(path)])
    out = capsys.readouterr().out
    assert used in out
    assert unused in out
    assert code == 0


def test_a_disagreeing_real_load_is_reported(monkeypatch):
    system = FixtureSystem.from_file(GALLERY / "win-healthy-tf210-cuda112-cudnn81-tools-folder.yaml")
    assert not diagnose(system).findings
    monkeypatch.setattr(
        system,
        "mapped_libraries",
        lambda exe, names: {"loaded": {n: "C:\\elsewhere\\" + n for n in names}, "errors": {}},
    )
    findings = {f.id: f for f in diagnose(system).findings}
    finding = findings["loader-emulation-differs"]
    assert "C:\\elsewhere\\cudnn64_8.dll" in finding.detail and finding.severity.value == "warning"
