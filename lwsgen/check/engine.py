"""The engine's arguments against the model and the profile: tensor parallelism must split the
attention heads evenly (and the KV heads, or replicate them), pipeline stages should split the
layers evenly, and model.extraArgs may not repeat a flag lwsgen derives (it would override the
parallelism, port or model the probes, Service and group size are built from).

Heads and layers come from the catalog (model.family) or model.attentionHeads/kvHeads/layers.
vLLM raises "Total number of attention heads (N) must be divisible by tensor parallel size (T)"
(vllm/config.py ModelConfig.verify_with_parallel_config, v0.8.x) and replicates KV heads only by a
whole factor (ModelConfig.get_num_kv_heads: kv // tensor, at least 1; the QKV linear layer divides
tensor by the KV heads when they are fewer). Head-sharded tensor parallelism has the same rule in
the other engines (not checked against their source here). Uneven pipeline stages load, but the
group runs at the pace of the largest (vllm.distributed.utils.get_pp_indices spreads the rest).
"""

from packaging.version import Version

from lwsgen import registry, runtimes
from lwsgen.check import flags, getopt, sizing
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE


def _facts(profile: Profile) -> tuple[int | None, int | None, int | None, tuple]:
    """(attention heads, KV heads, layers, the field they come from)."""
    model = profile.model
    catalog = sizing.MODELS.get(model.family) if model.family else None
    heads = model.attention_heads or (catalog.heads if catalog else None)
    kv = model.kv_heads or (catalog.kv_heads if catalog else None)
    layers = model.layers or (catalog.layers if catalog else None)
    field = ("model", "family") if catalog and not model.attention_heads else ("model", "attentionHeads")
    return heads, kv, layers, field


def _divisors_near(count: int, around: int) -> str:
    options = [d for d in range(1, count + 1) if count % d == 0]
    near = sorted(options, key=lambda d: (abs(d - around), d))[:3]
    return ", ".join(map(str, sorted(near)))


@registry.rule("not-divisible", scope=PROFILE, severity=ERROR)
def check_heads(profile: Profile, src: Source) -> list[Problem]:
    """Tensor parallelism divides the model's attention heads and KV heads (where the engine splits heads)."""
    if not runtimes.capabilities(profile).tensor_splits_heads:
        return []
    heads, kv, _, field = _facts(profile)
    tensor, out = profile.parallelism.tensor, []
    at = ("parallelism", "tensor") if ("parallelism", "tensor") in src.values_at else field
    if heads and heads % tensor:
        out.append(
            src.problem(
                at,
                (
                    f"tensor {tensor} does not divide the model's {heads} attention heads, which the engine refuses; "
                    f"tensor sizes near it that do: {_divisors_near(heads, tensor)}"
                ),
                "not-divisible",
            )
        )
    elif kv and kv % tensor and tensor % kv:
        out.append(
            src.problem(
                at,
                (
                    f"tensor {tensor} neither divides the model's {kv} KV heads nor is a multiple of them (then each "
                    "is "
                    f"replicated on tensor / {kv} ranks); tensor sizes near it that work: "
                    f"{', '.join(str(t) for t in sorted({*_divisors_near(kv, tensor).split(', ')}, key=int))}"
                ),
                "not-divisible",
            )
        )
    return out


@registry.rule("uneven-stages", scope=PROFILE, severity=WARNING)
def layer_warnings(profile: Profile, src: Source) -> list[Problem]:
    """A pipeline degree that does not divide the model's layers leaves stages uneven."""
    _, _, layers, _ = _facts(profile)
    pipeline = profile.parallelism.pipeline
    if not layers or pipeline == 1 or layers % pipeline == 0:
        return []
    if not runtimes.capabilities(profile).tensor_splits_heads:
        return []  # llama.cpp splits layers in proportion to each GPU's memory, never in equal stages
    at = ("parallelism", "pipeline")
    return [
        src.problem(
            at,
            (
                f"pipeline {pipeline} does not divide the model's {layers} layers: stages get {layers // pipeline} or "
                f"{layers // pipeline + 1}, and the group runs at the pace of the largest"
            ),
            "uneven-stages",
        )
    ]


# Derived flags whose profile field is not parallelism, port or model: where to say it instead.
INSTEAD = {
    "--extra_llm_api_options": "its options file carries the metrics options; put your LLM API options in "
    "model.llmApiOptions and lwsgen writes them into that file",
}


@registry.rule("derived-flag", scope=PROFILE, severity=ERROR)
def check_extra_args(profile: Profile, src: Source) -> list[Problem]:
    """model.extraArgs does not repeat a flag lwsgen derives (parallelism, port, model): the probes,
    Service and group size are built from those."""
    caps = runtimes.capabilities(profile)
    out = []
    for index, arg in enumerate(profile.model.extra_args):
        flag = arg.split("=", 1)[0]
        if not (arg.startswith("-") and flag in caps.derived_flags):
            continue
        instead = INSTEAD.get(flag) or (
            "(from parallelism, the runtime's serving port or model); repeating it would override what the probes, "
            "Service and group size are built from: set the profile field instead"
        )
        separator = ": " if flag in INSTEAD else " "
        message = f"{flag} is a flag lwsgen derives for {profile.runtime}{separator}{instead}"
        out.append(src.problem(("model", "extraArgs", index), message, "derived-flag"))
    return out


# The runtimes whose parser has flag tables (lwsgen/runtimes/flags, dumped from the real parsers),
# and what comes before model.extraArgs in the argv that parser reads.
FLAG_TABLES = {"vllm": "vllm", "sglang": "sglang", "aphrodite": "aphrodite"}
# Engines whose parser reads the model as the first positional (`vllm serve <model>`, `aphrodite serve
# <model>`: their FlexibleArgumentParser moves --model there)
MODEL_FIRST = {"vllm", "aphrodite"}
# Releases before these run another program with another parser (Aphrodite before 0.20.0:
# python3 -m aphrodite.endpoints.openai.api_server, runtimes/aphrodite.py), which has no table yet
TABLES_FROM = {"aphrodite": "0.20.0"}


@registry.rule("unknown-engine-flag", scope=PROFILE, severity=ERROR)
def check_extra_args_flags(profile: Profile, src: Source, exact_table: bool = True) -> list[Problem]:
    """model.extraArgs as the engine's own parser at the image's version reads them: an unknown or
    removed flag, or an abbreviation argparse finds ambiguous or expands to another flag, is an
    error (the engine would exit 2 or do something else); for a version without its own table
    (exact_table False: extra_args_flag_warnings), what the tables on both sides of it both find, or
    beyond the first or last table what the nearest finds, is a warning."""
    engine = FLAG_TABLES.get(profile.runtime)
    if engine is None or not profile.model.extra_args:
        return []
    running = runtimes.engine_version(profile)
    version = running.text.lstrip("v")
    if engine in TABLES_FROM and running.version < Version(TABLES_FROM[engine]):
        return []
    found = flags.table_for(engine, version)
    if found is None:
        return []
    _, exact = found
    if exact != exact_table:
        return []
    # the kubelet expands $(LWS_*) in args (runtimes/base.literal leaves them): check what it gives
    args = [_expanded(str(a)) for a in profile.model.extra_args]
    # vLLM's parser reads `vllm serve <model> ...`: the model comes first (its rewrites move --model there)
    head = [profile.model.path] if engine in MODEL_FIRST else []
    out = []
    for index, message in flags.argv_problems_at(engine, version, [*head, *args]):
        index -= len(head)
        if index < 0:
            continue
        out.append(src.problem(("model", "extraArgs", index), message, "unknown-engine-flag"))
    return out


_EXPANDED = {"$(LWS_GROUP_SIZE)": "2", "$(LWS_WORKER_INDEX)": "0", "$(LWS_LEADER_ADDRESS)": "leader"}


def _expanded(arg: str) -> str:
    for reference, value in _EXPANDED.items():
        arg = arg.replace(reference, value)
    return arg


@registry.rule("unknown-engine-flag", scope=PROFILE, severity=WARNING)
def extra_args_flag_warnings(profile: Profile, src: Source) -> list[Problem]:
    """An extraArgs flag lwsgen cannot check against the engine's own flag table for this version (no
    table for it) and that the tables of the releases before and after it both lack: said, not
    refused."""
    return check_extra_args_flags(profile, src, exact_table=False)


@registry.rule("unknown-engine-flag", scope=PROFILE, severity=ERROR)
def check_triton_extra_args(profile: Profile, src: Source, exact_table: bool = True) -> list[Problem]:
    """triton-trtllm's model.extraArgs as tritonserver reads them (glibc's getopt_long over the options
    of src/command_line_parser.cc at the image's release, then each value as TritonParser::Parse
    reads it: lwsgen/check/getopt.py): what it refuses is an error (every rank would exit 1); for a
    release without its own option table (exact_table False: triton_extra_arg_warnings), what the
    nearest one refuses is a warning."""
    if profile.runtime != "triton-trtllm" or not profile.model.extra_args:
        return []
    release = runtimes.engine_version(profile).text
    if getopt.table_for(release)[1] != exact_table:
        return []
    args = [_expanded(str(a)) for a in profile.model.extra_args]
    return [
        src.problem(("model", "extraArgs", index), message, "unknown-engine-flag")
        for index, message in getopt.problems(args, release)
    ]


@registry.rule("unknown-engine-flag", scope=PROFILE, severity=WARNING)
def triton_extra_arg_warnings(profile: Profile, src: Source) -> list[Problem]:
    """A triton-trtllm extraArgs word the options of the nearest Triton release lwsgen has refuse,
    for a release without its own table: said, not refused."""
    return check_triton_extra_args(profile, src, exact_table=False)


@registry.rule("fit-not-checked", scope=PROFILE, severity=WARNING)
def fit_warnings(profile: Profile, src: Source) -> list[Problem]:
    """Say when the fit check could not run: an unknown GPU product, or an instance type without one."""
    if not (profile.model.family or profile.model.params):
        return []
    node, known = profile.node, ", ".join(sorted(g.product for g in sizing.GPUS.values()))
    if node.gpu_product and sizing.gpu_by_product(node.gpu_product) is None:
        return [
            src.problem(
                ("node", "gpuProduct"),
                (
                    f"{node.gpu_product!r} is not a GPU lwsgen knows, so whether the model fits was not checked; "
                    f"known: {known}"
                ),
                "fit-not-checked",
            )
        ]
    if node.instance_type and not node.gpu_product:
        return [
            src.problem(
                ("node", "instanceType"),
                (
                    "without node.gpuProduct lwsgen cannot tell the GPU of this instance type, so whether the model "
                    "fits "
                    f"was not checked; set node.gpuProduct (known: {known})"
                ),
                "fit-not-checked",
            )
        ]
    return []
