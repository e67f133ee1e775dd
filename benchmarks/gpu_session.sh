#!/usr/bin/env bash
# One prepared run on a machine with an NVIDIA GPU and no network (the device machine): that machine's own Python
# with its frameworks (PyTorch, JAX, CuPy), the project from src/, and the dependencies it lacks carried as wheels
# in .whl/ (made here by `bash benchmarks/gpu_wheels.sh`). Everything it writes goes under ${OUT:-gpu-run}: verify's
# JSON, text and HTML reports, check's, the overhead figures, nvidia-smi's view and the GPU tests' log.
# Usage there: OUT=/path bash benchmarks/gpu_session.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-run}"
python="${PYTHON:-python3}"
site="${TMPDIR:-/tmp}/cudnn-doctor-site"
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl >"$out/pip.log" 2>&1 || {
    echo "carried wheels did not install: see $out/pip.log"
    exit 1
  }
fi
export PYTHONPATH="$PWD/src:$site${PYTHONPATH:+:$PYTHONPATH}" CUDNN_DOCTOR_STATE_DIR="$out/state" PYTHONUNBUFFERED=1
doctor() { "$python" -m cudnn_doctor "$@"; }
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
doctor verify --format json >"$out/verify.json" 2>"$out/verify.stderr"
echo "verify exit $?" >>"$out/verify.stderr"
doctor verify --quick --compare --html "$out/verify.html" >"$out/verify.txt" 2>&1
"$python" benchmarks/verify_overhead.py >"$out/verify_overhead.txt" 2>&1
doctor check --html "$out/check.html" >"$out/check.txt" 2>&1
"$python" -m pytest -q -p no:cacheprovider -m gpu tests >"$out/pytest-gpu.txt" 2>&1
tail -n 40 "$out/verify.txt"
