#!/usr/bin/env bash
# One prepared run for a machine with an NVIDIA GPU (the device machine): install, verify, the GPU tests.
# Everything it writes goes under ${OUT:-gpu-run}: verify's JSON, text and HTML reports, the overhead figures,
# nvidia-smi's view, and the pytest log. Usage: OUT=/path bash benchmarks/gpu_session.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-run}"
mkdir -p "$out"
python3 -m venv .venv-gpu && .venv-gpu/bin/pip install -q -e ".[test]" torch >"$out/pip.log" 2>&1
export CUDNN_DOCTOR_STATE_DIR="$out/state"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
.venv-gpu/bin/cudnn-doctor verify --format json >"$out/verify.json" 2>"$out/verify.stderr"
echo "verify exit $?" >>"$out/verify.stderr"
.venv-gpu/bin/cudnn-doctor verify --quick --compare --html "$out/verify.html" >"$out/verify.txt" 2>&1
.venv-gpu/bin/python benchmarks/verify_overhead.py >"$out/verify_overhead.txt" 2>&1
.venv-gpu/bin/cudnn-doctor check --html "$out/check.html" >"$out/check.txt" 2>&1
.venv-gpu/bin/python -m pytest -q -p no:cacheprovider -m gpu tests >"$out/pytest-gpu.txt" 2>&1
tail -n 40 "$out/verify.txt"
