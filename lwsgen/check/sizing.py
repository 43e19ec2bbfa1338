"""Sizing: how many nodes, and which tensor x pipeline split, a model needs on a GPU type.

Memory per GPU = weights / (tensor x pipeline)
               + KV cache for context x concurrency tokens
               + a fixed runtime overhead (OVERHEAD_GB: CUDA context, NCCL buffers, activations),
against USABLE_FRACTION of the GPU's memory (vLLM's default gpu_memory_utilization).
KV cache per token = 2 (K and V) x layers x kv_heads x head_dim x KV_BYTES; each tensor rank holds
ceil(kv_heads / tensor) heads (heads are replicated once tensor exceeds them) and each pipeline
stage layers / pipeline layers. Models with multi-head latent attention (DeepSeek V3/R1) cache one
latent vector of `mla_kv_dim` elements per token and layer, replicated on every tensor rank.

Mixture-of-experts models (experts > 0) may also be laid out with data and expert parallelism: the
attention and other dense weights replicated on each data-parallel rank (split by its tensor
degree), the experts spread over every GPU of the group, and each rank caching the KV of its share
of the requests. The dense part follows from total, active, experts and experts per token:
expert = (total - active) / (experts - per token) per expert, dense = active - per token x expert.
"""

import math

from lwsgen.records import Record

USABLE_FRACTION = 0.9
OVERHEAD_GB = 3.0
KV_BYTES = 2  # the KV cache in 16-bit, the engines' default whatever the weights' dtype
# mxfp4: 4-bit values with an 8-bit scale per 32 (OCP Microscaling Formats v1.0), 4.25 bits
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "mxfp4": 0.53125}
MAX_NODES = 64


class Model(Record):
    params_b: float  # billions of parameters
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    dtype: str
    hub_id: str
    mla_kv_dim: int = 0  # latent KV elements per token and layer (MLA); 0: standard attention
    active_b: float = 0.0  # billions of parameters per token (mixture of experts); 0: dense
    experts: int = 0  # routed experts per MoE layer
    experts_per_token: int = 0

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def dense_b(self) -> float:
        """Billions of parameters every token uses (attention, embeddings, shared experts)."""
        if not self.moe:
            return self.params_b
        per_expert = (self.params_b - self.active_b) / (self.experts - self.experts_per_token)
        return self.active_b - self.experts_per_token * per_expert


class Gpu(Record):
    memory_gb: float
    product: str  # the nvidia.com/gpu.product node label


# Each entry from the model's config.json on Hugging Face (num_hidden_layers, num_attention_heads,
# num_key_value_heads, hidden_size / heads) and its model card (parameter count, released dtype).
MODELS = {
    # https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/blob/main/config.json
    "llama-3.1-8b": Model(8.03, 32, 32, 8, 128, "bf16", "meta-llama/Llama-3.1-8B-Instruct"),
    # https://huggingface.co/meta-llama/Llama-3.1-70B-Instruct/blob/main/config.json
    "llama-3.1-70b": Model(70.6, 80, 64, 8, 128, "bf16", "meta-llama/Llama-3.1-70B-Instruct"),
    # https://huggingface.co/meta-llama/Llama-3.1-405B-Instruct/blob/main/config.json
    "llama-3.1-405b": Model(405.9, 126, 128, 8, 128, "bf16", "meta-llama/Llama-3.1-405B-Instruct"),
    # https://huggingface.co/deepseek-ai/DeepSeek-R1/blob/main/config.json (kv_lora_rank 512 + qk_rope_head_dim 64,
    # n_routed_experts 256, num_experts_per_tok 8); model card: 671B total, 37B activated
    "deepseek-r1": Model(671.0, 61, 128, 128, 128, "fp8", "deepseek-ai/DeepSeek-R1", 576, 37.0, 256, 8),
    # https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json; model card: 671B total, 37B activated
    "deepseek-v3": Model(671.0, 61, 128, 128, 128, "fp8", "deepseek-ai/DeepSeek-V3", 576, 37.0, 256, 8),
    # https://huggingface.co/Qwen/Qwen3-235B-A22B/blob/main/config.json (num_experts 128, num_experts_per_tok 8);
    # model card: 235B total, 22B activated
    "qwen3-235b-a22b": Model(235.0, 94, 64, 4, 128, "bf16", "Qwen/Qwen3-235B-A22B", 0, 22.0, 128, 8),
    # https://huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/config.json (DeepSeek-V3 architecture: MLA
    # kv_lora_rank 512 + qk_rope_head_dim 64, n_routed_experts 384, num_experts_per_tok 8, block fp8 weights);
    # model card: 1T total, 32B activated
    "kimi-k2": Model(1000.0, 61, 64, 64, 128, "fp8", "moonshotai/Kimi-K2-Instruct", 576, 32.0, 384, 8),
    # https://huggingface.co/meta-llama/Llama-4-Maverick-17B-128E-Instruct/blob/main/config.json (text_config:
    # 48 layers, 40 heads, 8 KV heads, head_dim 128, 128 routed experts, 1 per token); card: 400B total, 17B active
    "llama-4-maverick": Model(
        400.0, 48, 40, 8, 128, "bf16", "meta-llama/Llama-4-Maverick-17B-128E-Instruct", 0, 17.0, 128, 1
    ),
    # https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json (36 layers, 64 heads, 8 KV heads, head_dim 64,
    # num_local_experts 128, experts_per_token 4, MoE weights in MXFP4); model card: 117B total, 5.1B active
    "gpt-oss-120b": Model(117.0, 36, 64, 8, 64, "mxfp4", "openai/gpt-oss-120b", 0, 5.1, 128, 4),
    # https://huggingface.co/Qwen/Qwen2.5-72B-Instruct/blob/main/config.json
    "qwen2.5-72b": Model(72.7, 80, 64, 8, 128, "bf16", "Qwen/Qwen2.5-72B-Instruct"),
    # https://huggingface.co/mistralai/Mixtral-8x22B-Instruct-v0.1/blob/main/config.json (num_local_experts 8,
    # num_experts_per_tok 2); mistral.ai/news/mixtral-8x22b: 141B total, 39B active
    "mixtral-8x22b": Model(140.6, 56, 48, 8, 128, "bf16", "mistralai/Mixtral-8x22B-Instruct-v0.1", 0, 39.0, 8, 2),
}

# Memory from NVIDIA's data sheets (GB = 10^9 bytes); product = the GPU feature discovery label.
GPUS = {
    "h100-80gb": Gpu(80, "NVIDIA-H100-80GB-HBM3"),  # nvidia.com/en-us/data-center/h100/
    "h100-nvl-94gb": Gpu(94, "NVIDIA-H100-NVL"),  # nvidia.com/en-us/data-center/h100/ (H100 NVL: 94 GB)
    "gh200-96gb": Gpu(96, "NVIDIA-GH200-480GB"),  # nvidia.com/en-us/data-center/grace-hopper-superchip/ (96 GB HBM3)
    "l4-24gb": Gpu(24, "NVIDIA-L4"),  # nvidia.com/en-us/data-center/l4/
    "h200-141gb": Gpu(141, "NVIDIA-H200"),  # nvidia.com/en-us/data-center/h200/
    "b200-192gb": Gpu(192, "NVIDIA-B200"),  # nvidia.com/en-us/data-center/dgx-b200/ (8 x 192 GB HBM3e)
    "a100-80gb": Gpu(80, "NVIDIA-A100-SXM4-80GB"),  # nvidia.com/en-us/data-center/a100/
    "a100-40gb": Gpu(40, "NVIDIA-A100-SXM4-40GB"),  # nvidia.com/en-us/data-center/a100/
    "l40s-48gb": Gpu(48, "NVIDIA-L40S"),  # nvidia.com/en-us/data-center/l40s/
    "a10g-24gb": Gpu(24, "NVIDIA-A10G"),  # aws.amazon.com/ec2/instance-types/g5/ (A10G 24 GB)
}


class UnknownName(LookupError):
    def __init__(self, what: str, name: str, known: list[str], ambiguous: bool = False):
        said = f"{what} {name!r} is ambiguous; it may be" if ambiguous else f"unknown {what} {name!r}; known"
        super().__init__(f"{said}: {', '.join(known)}")


def model(name: str) -> Model:
    if name not in MODELS:
        raise UnknownName("model", name, sorted(MODELS))
    return MODELS[name]


def gpu(name: str) -> Gpu:
    """A catalog GPU by its name, or by an unambiguous short one in any case (h200, H200, l4)."""
    if name in GPUS:
        return GPUS[name]
    short = name.lower()
    matches = [key for key in GPUS if key == short or key.startswith(short + "-")]
    if len(matches) == 1:
        return GPUS[matches[0]]
    if matches:
        raise UnknownName("GPU", name, sorted(matches), ambiguous=True)
    raise UnknownName("GPU", name, sorted(GPUS))


def gpu_by_product(product: str) -> Gpu | None:
    return next((g for g in GPUS.values() if g.product == product), None)


class Memory(Record):
    weights: float
    kv_cache: float
    overhead: float
    usable: float

    @property
    def free(self) -> float:
        return self.usable - self.weights - self.kv_cache - self.overhead

    @property
    def fits(self) -> bool:
        return self.free >= 0


def kv_bytes_per_gpu(m: Model, tensor: int, pipeline: int, tokens: int) -> float:
    layers = math.ceil(m.layers / pipeline)
    if m.mla_kv_dim:
        return m.mla_kv_dim * layers * KV_BYTES * tokens
    return 2 * layers * math.ceil(m.kv_heads / tensor) * m.head_dim * KV_BYTES * tokens


def memory_per_gpu(
    params_b: float,
    dtype: str,
    g: Gpu,
    tensor: int,
    pipeline: int,
    m: Model | None,
    tokens: int,
    data: int = 1,
) -> Memory:
    """With data > 1 (a mixture-of-experts model under data and expert parallelism): the dense
    weights split by tensor x pipeline on every rank, the experts over all data x tensor x pipeline
    GPUs, and each rank caching 1/data of the tokens."""
    split = tensor * pipeline
    if data > 1 and m is not None and m.moe:
        dense = m.dense_b / split
        weights_b = dense + (params_b - m.dense_b) / (split * data)
    else:
        weights_b = params_b / split
    weights = weights_b * DTYPE_BYTES[dtype]
    kv = kv_bytes_per_gpu(m, tensor, pipeline, math.ceil(tokens / data)) / 1e9 if m else 0.0
    return Memory(weights, kv, OVERHEAD_GB, g.memory_gb * USABLE_FRACTION)


class Layout(Record):
    nodes: int
    tensor: int
    pipeline: int
    memory: Memory
    data: int = 1  # with data > 1, expert parallelism too

    @property
    def parallelism(self) -> dict:
        if self.data > 1:
            return {"data": self.data, "tensor": self.tensor, "pipeline": self.pipeline, "expert": True}
        return {"tensor": self.tensor, "pipeline": self.pipeline}

    @property
    def gpus(self) -> int:
        return self.data * self.tensor * self.pipeline

    def to_dict(self) -> dict:
        mem = self.memory
        return {
            "nodes": self.nodes,
            "parallelism": self.parallelism,
            "memoryPerGpuGB": {
                "weights": round(mem.weights, 2),
                "kvCache": round(mem.kv_cache, 2),
                "overhead": round(mem.overhead, 2),
                "usable": round(mem.usable, 2),
                "free": round(mem.free, 2),
            },
            "fits": mem.fits,
        }


def _valid(m: Model | None, tensor: int, pipeline: int) -> bool:
    return m is None or (m.heads % tensor == 0 and m.layers % pipeline == 0)


def layouts(m: Model | None, nodes: int, gpus_per_node: int, moe_layouts: bool = True) -> list[tuple[int, int, int]]:
    """(data, tensor, pipeline) on `nodes` nodes: tensor within a node and pipeline across nodes
    first, then tensor across every GPU, then for a mixture-of-experts model data and expert
    parallelism over every GPU (tensor 1: the vLLM and SGLang wide-EP deployments); only splits
    whose heads divide by tensor and layers by pipeline."""
    candidates = [(1, gpus_per_node, nodes), (1, gpus_per_node * nodes, 1)]
    if m is not None and m.moe and moe_layouts and nodes * gpus_per_node > 1:
        candidates.append((nodes * gpus_per_node, 1, 1))
    unique = list(dict.fromkeys(candidates))
    return [(d, t, p) for d, t, p in unique if _valid(m, t, p)]


class Plan(Record):
    chosen: Layout | None
    alternative: Layout | None
    warnings: tuple[str, ...]


def plan(
    params_b: float,
    dtype: str,
    g: Gpu,
    gpus_per_node: int,
    m: Model | None,
    context: int,
    concurrency: int,
    moe_layouts: bool = True,
) -> Plan:
    """The fewest nodes that hold the model, and the layouts that do there (moe_layouts: also data
    and expert parallelism, for a runtime that has it)."""
    tokens = context * concurrency
    for nodes in range(1, MAX_NODES + 1):
        fitting = [
            Layout(nodes, t, p, memory_per_gpu(params_b, dtype, g, t, p, m, tokens, d), d)
            for d, t, p in layouts(m, nodes, gpus_per_node, moe_layouts)
        ]
        fitting = [layout for layout in fitting if layout.memory.fits]
        if fitting:
            chosen, alternative = fitting[0], (fitting[1] if len(fitting) > 1 else None)
            warnings = []
            if m and not m.mla_kv_dim and chosen.tensor > m.kv_heads:
                warnings.append(
                    f"tensor {chosen.tensor} exceeds the model's {m.kv_heads} KV heads: each is replicated on "
                    f"{chosen.tensor // m.kv_heads} ranks"
                )
            if m is None:
                warnings.append("no layers or heads known (--params): KV cache not counted, splits not checked")
            return Plan(chosen, alternative, tuple(warnings))
    return Plan(None, None, (f"does not fit on {MAX_NODES} nodes of {gpus_per_node} GPUs",))


class Weights(Record):
    """A profile's model as sizing sees it: its parameters and dtype, and its catalog entry if any."""

    params_b: float
    dtype: str
    catalog: Model | None

    @property
    def gb(self) -> float:
        return self.params_b * DTYPE_BYTES[self.dtype]


def profile_weights(profile) -> Weights | None:
    """model.params or the catalog family's, with model.dtype or the catalog's (else bf16); None
    when neither says how large the model is."""
    model = profile.model
    m = MODELS.get(model.family) if model.family else None
    params = model.params if model.params is not None else (m.params_b if m else None)
    if params is None:
        return None
    return Weights(params, model.dtype or (m.dtype if m else "bf16"), m)


def fits_profile(profile) -> str | None:
    """Why a profile's group cannot hold its model (weights and a minimal 2048-token KV cache), or None.
    Needs model.family or model.params, and a node.gpuProduct lwsgen knows."""
    weights = profile_weights(profile)
    g = gpu_by_product(profile.node.gpu_product or "")
    if weights is None or g is None:
        return None
    params, dtype, m = weights
    tensor, pipeline, data = profile.parallelism.tensor, profile.parallelism.pipeline, profile.parallelism.data
    # with or without expert parallelism, both engines spread the experts over data x tensor GPUs
    # (tensor-parallel experts without it) and replicate the rest on each data-parallel rank
    memory = memory_per_gpu(params, dtype, g, tensor, pipeline, m, 2048, data)
    if memory.fits:
        return None
    return (
        f"{params:g}B parameters in {dtype} need {memory.weights + memory.kv_cache + memory.overhead:.1f} GB per GPU "
        f"(weights {memory.weights:.1f}, KV cache {memory.kv_cache:.1f}, overhead {memory.overhead:.1f}) with "
        f"{f'data {data} x ' if data > 1 else ''}tensor {tensor} x pipeline {pipeline}, more than the "
        f"{memory.usable:.1f} GB usable of a {g.product}; try `lwsgen plan`"
    )
