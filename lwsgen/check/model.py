"""Profiles that render and then fail or surprise: a model path the pods cannot see, a gated Hub
model without a token, a layout the profile left to the defaults."""

from __future__ import annotations

import difflib
import posixpath
import re

from lwsgen import platforms, registry, runtimes
from lwsgen.check import sizing
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE

# Hub organisations whose repositories are gated (the model card asks to accept a licence before
# any download): a download without a token gets 401/403.
GATED_ORGS = ("meta-llama/", "google/gemma")


def _under(path: str, directory: str) -> bool:
    path, directory = posixpath.normpath(path), posixpath.normpath(directory)
    return path == directory or path.startswith(directory.rstrip("/") + "/")


# A Hub repository id as huggingface_hub validates one (utils/_validators.py, REPO_ID_REGEX and
# validate_repo_id, huggingface_hub 2.4.0): ASCII letters, digits, '-', '_', '.', each part 1-96
# characters between word boundaries, no '--' or '..'; and with its namespace (org/name), which every
# model lwsgen serves has (platforms.is_hub_id), so a bare name is a relative path.
_HUB_ID = re.compile(r"\b[\w\-.]{1,96}\b/\b[\w\-.]{1,96}\b", re.ASCII)
# URIs the engines do not read as given: KServe's pvc:// and hf:// (its storage initializer's), on
# platform lws. s3:// and gs:// are left to the engine (vLLM's Run:ai streamer loads them).
_KSERVE_ONLY = ("pvc://", "hf://")


def hub_id(path: str) -> bool:
    """A Hub id an engine downloads: org/name, valid as huggingface_hub validates it."""
    return platforms.is_hub_id(path) and bool(_HUB_ID.fullmatch(path)) and "--" not in path and ".." not in path


@registry.rule("model-path-relative", scope=PROFILE, severity=ERROR)
def check_model_path_relative(profile: Profile, src: Source) -> list[Problem]:
    """A model.path that is neither absolute nor a Hub id (org/name): a relative path (./m, ../m, m,
    models/org/name) the engine would resolve against its image's working directory (/vllm-workspace,
    /sgl-workspace, ...), not the claim's mount, or KServe's hf:// and pvc:// on platform lws, which
    the engine is given as they are. Runtimes that read no Hub id judge their own path (Triton,
    llama.cpp: bad-model-path)."""
    path = profile.model.path
    given = "path" in (src.data.get("model") or {})
    if not given or path.startswith("/") or not runtimes.get(profile.runtime).reads_hub_ids:
        return []
    if "://" in path:
        if profile.platform != platforms.LWS or not path.startswith(_KSERVE_ONLY):
            return []
        scheme = path.split("://", 1)[0]
        message = (
            f"{scheme}:// is KServe's, and on platform lws the engine is given model.path as it is: write the Hub id "
            "(org/name) or the absolute path, or use platform kserve"
        )
        return [src.problem(("model", "path"), message, "model-path-relative")]
    if hub_id(path):
        return []
    where = f"under storage.mountPath {profile.storage.mount_path}" if profile.storage else "in the image"
    message = (
        f"{path!r} is a relative path and not a Hub id (org/name): the engine would look for it in its image's "
        f"working directory and find no weights; write the absolute path of the model {where}"
    )
    return [src.problem(("model", "path"), message, "model-path-relative")]


@registry.rule("model-outside-claim", scope=PROFILE, severity=ERROR)
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

    return profile.model.path if platforms.is_hub_id(profile.model.path) else None


@registry.rule("gated-model", scope=PROFILE, severity=WARNING)
def check_gated_model(profile: Profile, src: Source) -> list[Problem]:
    """A gated Hub model downloaded without model.tokenSecret: the Hub refuses the download."""
    repo = _hub_repo(profile)
    if repo is None or profile.model.token_secret is not None or not repo.startswith(GATED_ORGS):
        return []
    at = ("model", "source", "repo") if profile.model.source is not None else ("model", "path")
    message = (
        f"{repo} is gated on the Hub (its licence must be accepted): a download without a token is refused; "
        "set model.tokenSecret to the Secret key holding a token of an account that accepted it"
    )
    return [src.problem(at, message, "gated-model")]


@registry.rule("layout-assumed", scope=PROFILE, severity=WARNING)
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


# llama.cpp's published images are built without RPC: GGML_RPC defaults to OFF
# (ggml/CMakeLists.txt, b10359 line 246) and neither .devops/cuda.Dockerfile (line 48) nor
# cpu.Dockerfile (line 36) turns it on; the server target copies only llama and llama-server
# (cuda.Dockerfile line 127), light and full none of ggml-rpc-server. Tags: <full|light|server>
# [-cuda|-cuda12|-cuda13|-vulkan|...][-b<build>] (.github/workflows/docker.yml lines 476-482).
LLAMACPP_PUBLISHED = ("ghcr.io/ggml-org/llama.cpp", "ghcr.io/ggerganov/llama.cpp")


@registry.rule("image-lacks-rpc-server", scope=PROFILE, severity=ERROR)
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


# nvidia.com/gpu.product values GPU feature discovery sets: the NVML device name with characters
# outside [A-Za-z0-9-_. ] dropped and whitespace runs joined by "-" (NVIDIA/k8s-device-plugin v0.20.0
# internal/lm/resource.go getProductName and sanitise, lines 189-206 and 318-326), "-MIG-<profile>"
# for a MIG device and "-SHARED" when time-sliced or MPS-shared without a rename. Seen in NVIDIA's
# docs (NVIDIA-H100-80GB-HBM3: cloud-native-docs gpu-operator-mig.rst; NVIDIA-A100-SXM4-40GB:
# openshift/mig-ocp.rst; Tesla-T4: gpu-sharing.rst), code (NVIDIA-A10G: k8s-nim-operator
# nimparser_test.go) and in clusters' output in public code and issues (the rest).
GFD_PRODUCTS = (
    "NVIDIA-A10",
    "NVIDIA-A10G",
    "NVIDIA-A100-80GB-PCIe",
    "NVIDIA-A100-PCIE-40GB",
    "NVIDIA-A100-SXM4-40GB",
    "NVIDIA-A100-SXM4-80GB",
    "NVIDIA-B200",
    "NVIDIA-GB200",
    "NVIDIA-GH200-480GB",
    "NVIDIA-H100-80GB-HBM3",
    "NVIDIA-H100-NVL",
    "NVIDIA-H100-PCIe",
    "NVIDIA-H20",
    "NVIDIA-H200",
    "NVIDIA-L4",
    "NVIDIA-L40S",
    "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
    "Tesla-T4",
    "Tesla-V100-PCIE-16GB",
    "Tesla-V100-SXM2-16GB",
    "Tesla-V100-SXM2-32GB",
)
_GFD_SUFFIX = re.compile(r"(-MIG-[0-9]+g\.[0-9]+gb[0-9a-z+]*)?(-SHARED)?$")  # MIG profiles such as 1g.10gb+me
# What a GFD label looks like: NVML's device names start with the vendor's brand (NVIDIA, Tesla,
# Quadro, GeForce) in capitals. A value shaped like one that lwsgen does not list may be a GPU
# newer than the list (a warning); one that is not (h100, H100, h100-80gb as plan names GPUs) is an error.
_GFD_SHAPE = re.compile(r"^(NVIDIA|Tesla|Quadro|GeForce|Quadro-RTX)-[A-Z0-9]")


def _nearest_product(value: str) -> str | None:
    """What the user likely meant: a catalog GPU as plan names it (h100, h100-80gb, NVIDIA-H100: the
    first catalog GPU of that name, as the catalog lists the common part first), or the closest label."""

    short = value.lower().removeprefix("nvidia-")
    named = [gpu for key, gpu in sizing.GPUS.items() if key == short or key.startswith(short + "-")]
    if named:
        return named[0].product
    lowered = {p.lower(): p for p in GFD_PRODUCTS}
    close = difflib.get_close_matches(value.lower(), lowered, n=1, cutoff=0.4)
    return lowered[close[0]] if close else None


def _unknown_product(profile: Profile, src: Source) -> Problem | None:
    node = profile.node
    if not node.gpu_product or node.gpu_product_unlisted:
        return None
    if _GFD_SUFFIX.sub("", node.gpu_product, count=1) in GFD_PRODUCTS:
        return None
    nearest = _nearest_product(node.gpu_product)
    hint = f"; did you mean {nearest}?" if nearest else ""
    message = (
        f"{node.gpu_product!r} is not an nvidia.com/gpu.product label GPU feature discovery sets, so no node "
        f"would match and every pod would stay Pending{hint} (`kubectl get nodes -L nvidia.com/gpu.product` "
        "lists yours; for a product lwsgen does not list, set node.gpuProductUnlisted: true)"
    )
    return src.problem(("node", "gpuProduct"), message, "unknown-gpu-product")


@registry.rule("unknown-gpu-product", scope=PROFILE, severity=ERROR)
def check_gpu_product(profile: Profile, src: Source) -> list[Problem]:
    """node.gpuProduct becomes a required node affinity: a value no node carries leaves every pod
    Pending. Not shaped like a GFD label: an error."""
    problem = _unknown_product(profile, src)
    return [problem] if problem and not _GFD_SHAPE.match(profile.node.gpu_product) else []


@registry.rule("unknown-gpu-product", scope=PROFILE, severity=WARNING)
def gpu_product_warnings(profile: Profile, src: Source) -> list[Problem]:
    """Shaped like a GFD label but not one lwsgen lists (a newer GPU, or a misspelling): a warning."""
    problem = _unknown_product(profile, src)
    return [problem] if problem and _GFD_SHAPE.match(profile.node.gpu_product) else []
