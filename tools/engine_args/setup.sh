#!/bin/bash
# Make a venv with one engine's own argument parser and no GPU: the engine --no-deps and only what
# importing the parser needs (ENGINE-requirements.txt, found
# by importing it on a CPU-only machine). Usage: setup.sh vllm|sglang|aphrodite VENV TORCH_SITE [VERSION]
# (VERSION: another release than the examples' one, with its own ENGINE-VERSION-requirements.txt: the
# oldest releases lwsgen checks, vllm 0.8.5 and sglang 0.4.6). Reused while
# its requirements are unchanged. torch is not installed again: TORCH_SITE, a site-packages holding
# torch 2.13.0 and its CUDA libraries (the project's .venv with the groupsim extra), is appended to
# the venv's path (a .pth file), after the engine's own packages; PyPI's torch is the CUDA build,
# whose libraries the import needs even without a GPU (2.7 GB more per venv).
set -euo pipefail
engine=$1 venv=$2 torch_site=$3 version=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
declare -A release=([vllm]=vllm==0.33.0 [sglang]=sglang==0.5.23 [aphrodite]=aphrodite-engine==0.20.0)
requirements="$here/$engine-requirements.txt"
if [ -n "$version" ]; then
  release[$engine]=${release[$engine]%==*}==$version
  requirements="$here/$engine-$version-requirements.txt"
fi
stamp="$venv/.ready-$(cat "$requirements" "$here/setup.sh" <(echo "$torch_site") | cksum | cut -d' ' -f1)"
[ -e "$stamp" ] && exit 0
python="$torch_site/../../../bin/python"  # the interpreter whose site-packages hold torch
"$python" -c 'import sys; assert sys.version_info[:2] == (3, 11), "the flag tables and their argparse mirror are of Python 3.11"'
rm -rf "$venv"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps)
"${pip[@]}" "${release[$engine]}"
# vLLM 0.33.0 pins torch 2.14.0, 0.8.5 and SGLang 0.4.6 2.6.0; 2.13.0 serves the parser (it only
# imports torch; vLLM 0.8.5 warns that its CUDA kernels do not load, which parsing never calls).
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n' "$torch_site" >"$site/lwsgen-torch.pth"
"${pip[@]}" -r "$requirements"
"$venv/bin/python" -c 'import torch; assert torch.__version__.startswith("2.13.0"), torch.__version__' 2>/dev/null
touch "$stamp"
