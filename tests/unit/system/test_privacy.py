"""Nothing private leaves the machine: the JSON report and the snapshot carry only the variables the diagnosis reads."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

import pytest
import yaml

from cudnn_doctor.privacy import REDACTED, kept_environment, kept_persistent


def _run(*argv: str, env: dict) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "cudnn_doctor", *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


@pytest.mark.live
def test_tokens_in_the_shell_reach_neither_the_json_report_nor_the_snapshot(tmp_path):
    token, secret, cuda_secret = (f"ghp_{secrets.token_hex(8)}", secrets.token_hex(8), secrets.token_hex(8))
    env = dict(
        os.environ,
        GITHUB_TOKEN=token,
        AWS_SECRET_ACCESS_KEY=secret,
        CUDA_AUTH_TOKEN=cuda_secret,
        CUDA_VISIBLE_DEVICES="0,1",
        MY_UNRELATED_VARIABLE="private",
        HOME=str(tmp_path),
    )
    report = _run("check", "--format", "json", "--no-frameworks", env=env)
    snapshot = _run("snapshot", "--no-frameworks", env=env)
    for text in (report, snapshot):
        assert (
            token not in text and secret not in text and cuda_secret not in text and "MY_UNRELATED_VARIABLE" not in text
        )
    variables = json.loads(report)["facts"]["environment"]["variables"]
    recorded = yaml.safe_load(snapshot)["env"]
    for kept in (variables, recorded):
        assert kept["CUDA_VISIBLE_DEVICES"] == "0,1" and kept["CUDA_AUTH_TOKEN"] == REDACTED and "PATH" in kept
        assert "GITHUB_TOKEN" not in kept and "AWS_SECRET_ACCESS_KEY" not in kept


def test_the_allow_list_keeps_what_the_checks_and_the_windows_expansion_read():
    env = {
        "Path": "C:\\x",
        "SystemRoot": "C:\\Windows",
        "CUDA_PATH": "C:\\cuda",
        "CUDA_VISIBLE_DEVICE": "0",
        "CUDNN_AUTOTUNE": "1",
        "CONDA_PREFIX": "C:\\conda",
        "VIRTUAL_ENV": "C:\\venv",
        "LD_LIBRARY_PATH": "/x",
        "TF_CPP_MIN_LOG_LEVEL": "0",
        "PWD": "/home/dev/project",
        "HF_TOKEN": "hf_x",
        "NPM_CONFIG__AUTH": "x",
        "OPENAI_API_KEY": "sk-x",
        "PGPASSWORD": "x",
        "EDITOR": "vim",
    }
    kept = kept_environment(env)
    assert set(kept) == {
        "Path",
        "SystemRoot",
        "CUDA_PATH",
        "CUDA_VISIBLE_DEVICE",
        "CUDNN_AUTOTUNE",
        "CONDA_PREFIX",
        "VIRTUAL_ENV",
        "LD_LIBRARY_PATH",
        "TF_CPP_MIN_LOG_LEVEL",
        "PWD",
    }
    assert kept["PWD"] == "/home/dev/project"
    persistent = kept_persistent(
        {"user": {"Path": "%USERPROFILE%\\bin", "GH_TOKEN": "x"}, "system": {"CUDA_PATH": "C:\\cuda"}}
    )
    assert persistent == {"user": {"Path": "%USERPROFILE%\\bin"}, "system": {"CUDA_PATH": "C:\\cuda"}}


def test_a_kubernetes_pod_is_kept_as_set_never_its_address():
    """gpu-not-passed-to-container reads that KUBERNETES_SERVICE_HOST is set; its value, a cluster address, stays here."""
    from cudnn_doctor.privacy import REDACTED, kept_environment

    kept = kept_environment({"KUBERNETES_SERVICE_HOST": "10.96.0.1", "container": "podman", "HOSTNAME": "pod-7f9c"})
    assert kept == {"KUBERNETES_SERVICE_HOST": REDACTED, "container": "podman"}
