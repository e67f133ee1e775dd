#!/usr/bin/env bash
# Here, with the network: the wheels of the project's dependencies that the GPU machine's Python lacks, into .whl/
# (ignored by git; the device tool carries it). That machine runs CPython 3.12 on x86-64 with PyTorch, JAX, CuPy,
# packaging, PyYAML, rich, filelock, nvidia-ml-py, pytest and hypothesis already there, and reaches no network.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >>"$(git rev-parse --git-path info/exclude)"
rm -rf .whl && mkdir -p .whl
python3 -m pip wheel -q --no-deps -w .whl pefile pyelftools platformdirs jsonschema jsonschema-specifications referencing
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl rpds-py
ls .whl
