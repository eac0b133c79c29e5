#!/usr/bin/env bash
# Sets up warpsim in ./.venv: ./install.sh [EXTRA ...], e.g. ./install.sh test
#
# torch comes first: a build of it already on this machine (pip's find-links or wheel
# cache) is preferred to a multi-GB download; otherwise pip takes the registry's
# default build, which runs on CUDA GPUs and on CPUs alike. A GPU machine (nvidia-smi
# present) also gets the 'cuda' extra: the CUDA compiler libraries Numba needs, and CuPy.
set -euo pipefail
cd "$(dirname "$0")"
step() { echo "[$1/3] $2"; }

step 1 "creating the virtual environment .venv"
python3 -m venv .venv
pip=(.venv/bin/python -m pip --disable-pip-version-check -q)
if .venv/bin/python -c "import torch" 2>/dev/null; then
  step 2 "torch is already in .venv"
else
  step 2 "looking for a torch build already on this machine"
  "${pip[@]}" install --no-index --no-deps "torch>=2.4" 2>/dev/null || echo "      none found: pip will download torch next"
fi
extras=("$@")
if command -v nvidia-smi >/dev/null 2>&1; then
  extras+=(cuda)
fi
spec="."
if [ ${#extras[@]} -gt 0 ]; then
  spec=".[$(IFS=,; echo "${extras[*]}")]"
fi
step 3 "installing warpsim${extras[*]:+ with ${extras[*]}} and its dependencies: about a minute, longer if torch is downloaded"
"${pip[@]}" install -e "$spec"
echo "warpsim is installed in $(pwd)/.venv (${SECONDS} s)"
