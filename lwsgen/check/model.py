"""Profiles that render and then fail or surprise: a model path the pods cannot see, a gated Hub
model without a token, a layout the profile left to the defaults."""

from __future__ import annotations

import posixpath

from lwsgen.check.profile import Profile
from lwsgen.load.source import Source
from lwsgen.problems import Problem

# Hub organisations whose repositories are gated (the model card asks to accept a licence before
# any download): a download without a token gets 401/403.
GATED_ORGS = ("meta-llama/", "google/gemma")


def _under(path: str, directory: str) -> bool:
    path, directory = posixpath.normpath(path), posixpath.normpath(directory)
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def check_model_path(profile: Profile, src: Source) -> list[Problem]:
    """An absolute model.path with a claim must be under the claim's mount: elsewhere the engine
    finds no weights and every pod crash-loops."""
    path, storage = profile.model.path, profile.storage
    if storage is None or profile.model.source is not None or not path.startswith("/"):
        return []
    if _under(path, storage.mount_path):
        return []
    at = ("model", "path") if "path" in (src.data.get("model") or {}) else ("model",)
    message = (
        f"{path} is not under storage.mountPath {storage.mount_path}, where the claim {storage.claim_name} is "
        f"mounted: the engine would find no weights; put the model under {storage.mount_path} or set "
        f"storage.mountPath to the directory that holds it"
    )
    return [src.problem(at, message, "model-outside-claim")]


def _hub_repo(profile: Profile) -> str | None:
    if profile.model.source is not None:
        return profile.model.source.repo
    path = profile.model.path
    return path if path.count("/") == 1 and not path.startswith((".", "/")) else None


def check_gated_model(profile: Profile, src: Source) -> list[Problem]:
    repo = _hub_repo(profile)
    if repo is None or profile.model.token_secret is not None or not repo.startswith(GATED_ORGS):
        return []
    at = ("model", "source", "repo") if profile.model.source is not None else ("model", "path")
    message = (
        f"{repo} is gated on the Hub (its licence must be accepted): a download without a token is refused; "
        "set model.tokenSecret to the Secret key holding a token of an account that accepted it"
    )
    return [src.problem(at, message, "gated-model")]


def check_layout_said(profile: Profile, src: Source) -> list[Problem]:
    """No parallelism: one GPU per pod with the whole node's CPU and memory. Say so."""
    if src.data.get("parallelism") or profile.roles or profile.node.gpus <= 1:
        return []
    message = (
        f"no parallelism: assumed tensor 1 x pipeline 1, so each pod takes 1 of node.gpus {profile.node.gpus} "
        f"GPUs beside the node's whole CPU and memory; set parallelism.tensor: {profile.node.gpus} to use the "
        "node, or node.gpus: 1"
    )
    return [src.problem(("node", "gpus"), message, "layout-assumed")]


RULES = (check_model_path,)  # errors


# llama.cpp's published images are built without RPC: GGML_RPC defaults to OFF
# (ggml/CMakeLists.txt, b10359 line 246) and neither .devops/cuda.Dockerfile (line 48) nor
# cpu.Dockerfile (line 36) turns it on; the server target copies only llama and llama-server
# (cuda.Dockerfile line 127), light and full none of ggml-rpc-server. Tags: <full|light|server>
# [-cuda|-cuda12|-cuda13|-vulkan|...][-b<build>] (.github/workflows/docker.yml lines 476-482).
LLAMACPP_PUBLISHED = ("ghcr.io/ggml-org/llama.cpp", "ghcr.io/ggerganov/llama.cpp")


def check_llamacpp_image(profile: Profile, src: Source) -> list[Problem]:
    """A multi-pod llama.cpp group needs rpc-server on its workers, which no published image has."""
    repository = profile.image.split("@", 1)[0].rsplit(":", 1)[0]
    if profile.runtime != "llamacpp" or repository not in LLAMACPP_PUBLISHED or profile.group_size < 2:
        return []
    message = (
        f"{repository} images are built without RPC (GGML_RPC is off in llama.cpp's Dockerfiles), so the "
        "workers have no rpc-server and exit 1: build an image with cmake -DGGML_RPC=ON (llama.cpp "
        "tools/rpc/README.md; the full target of .devops/cuda.Dockerfile with that flag added has llama-server, "
        "ggml-rpc-server and the python3 the workers' beacon needs) and name it here, or run one pod "
        "(parallelism within node.gpus)"
    )
    return [src.problem(("image",), message, "image-lacks-rpc-server")]


RULES = (*RULES, check_llamacpp_image)


def warnings(profile: Profile, src: Source) -> list[Problem]:
    return check_gated_model(profile, src) + check_layout_said(profile, src)
