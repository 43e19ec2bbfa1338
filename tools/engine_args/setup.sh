#!/bin/bash
# Make a venv with one engine's own argument parser and no GPU stack: the engine --no-deps, the
# CPU build of torch, and only what importing the parser needs (ENGINE-requirements.txt, found
# by importing it on a CPU-only machine). Usage: setup.sh vllm|sglang VENV. Reused while its
# requirements are unchanged.
set -euo pipefail
engine=$1 venv=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
declare -A release=([vllm]=vllm==0.33.0 [sglang]=sglang==0.5.23)
stamp="$venv/.ready-$(cat "$here/$engine-requirements.txt" "$here/setup.sh" | cksum | cut -d' ' -f1)"
[ -e "$stamp" ] && exit 0
rm -rf "$venv"
python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps)
"${pip[@]}" "${release[$engine]}"
# vLLM 0.33.0 pins torch 2.14.0; 2.13.0 serves the parser (it only imports torch). The CPU build,
# as the groupsim extra takes it (pip's configured find-links, or the PyTorch CPU index).
"${pip[@]}" 'torch==2.13.0' ${LWSGEN_TORCH_INDEX:+--index-url "$LWSGEN_TORCH_INDEX"}
"${pip[@]}" -r "$here/$engine-requirements.txt"
touch "$stamp"
