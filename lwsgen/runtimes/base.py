"""What a runtime plugin receives (the typed Profile, profile.py) and returns: plain data,
no Kubernetes objects."""

import re
from collections.abc import Callable
from typing import Any

from lwsgen.records import Record

SCRIPTS_MOUNT = "/lwsgen/scripts"
TOOLS_MOUNT = "/lwsgen/bin"


class Port(Record):
    name: str
    number: int
    app_protocol: str | None = None  # a Service port's appProtocol (kubernetes.io/h2c for gRPC)


class EnvVar(Record):
    """One container env entry: a value, a field of the pod, or a Secret key."""

    name: str
    value: str | None = None
    field_path: str | None = None
    secret_name: str | None = None
    secret_key: str | None = None


class RecordingRule(Record):
    """A recording rule as data. `expr` has three placeholders: {sel}, the label matchers that pick
    this LeaderWorkerSet's leader series, {sel_model}, the same and the served model's (model=...,
    for engines that report every model of a repository), and {by}, the labels every record keeps."""

    record: str
    expr: str
    autoscaling: str | None = None
    # Static labels: a role's records carry its role as one, so two roles' records of one name are
    # two rules promtool tells apart (the series carry the same value already).
    labels: dict[str, str] | None = None
    # On the profile's Grafana dashboard (derive/dashboard.py): the panel's title ("": not shown)
    # and its Grafana unit.
    title: str = ""
    unit: str = "short"


# The KV-cache record's panel: a fraction of the cache in use.
KV_PANEL = {"title": "KV-cache usage", "unit": "percentunit"}


class ServingSeries(Record):
    """The engine's own series the dashboard reads beside the records ("": the engine has none):
    a counter of finished requests, the time-to-first-token and inter-token latency histograms
    (their base names; Prometheus reads <name>_bucket) and a counter of generated tokens."""

    requests: str = ""
    time_to_first_token: str = ""
    inter_token_latency: str = ""
    generated_tokens: str = ""
    # A counter of running requests the engine evicted from a full KV cache (to recompute later).
    preemptions: str = ""
    # The label naming the model a series counts, for engines that report every model of a
    # repository (Triton): the dashboard reads the served model's.
    model_label: str = ""


# A model in the Hugging Face format: weights, configs, tokenizer files, chat templates and the
# Python code of trust-remote-code models; not the README, images or other weight formats.
HF_FORMAT_FILES = ("*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "*.jinja", "*.py")


class RouterMetrics(Record):
    """What an endpoint picker reads from each pod it routes to: llm-d-router's core-metrics-extractor
    engineConfigs (queued, running, KV-cache use as a fraction, LoRA and cache-size series; "" none)
    and, where the engine's API is not one its parsers read, the request parser to use."""

    queued: str
    running: str
    kv_usage: str = ""
    lora: str = ""
    cache_info: str = ""  # an info gauge labelled block_size and num_gpu_blocks
    cache_block_size: str = ""  # or the two as gauges
    cache_num_blocks: str = ""
    parser: str | None = None  # None: the picker's default parsers (OpenAI, Anthropic, vLLM HTTP)


class Capabilities(Record):
    """Facts about a runtime that checks, docs and later stages rely on."""

    serving_port: int
    pipeline_parallel: bool
    # Prometheus metrics the leader exposes (runtime metrics live on the leader only).
    metrics: tuple[str, ...]
    # The leader only turns ready after every worker joined (LeaderReady would deadlock).
    leader_ready_needs_workers: bool
    needs_api_access: bool
    # The user the runtime's stock image runs as; root means runAsNonRoot would refuse to start it
    # unless the profile sets security.runAsUser.
    stock_image_user: str = "root"
    # The stock image carries PyTorch with NCCL (what the operator-free NCCL test runs on).
    image_has_pytorch: bool = True
    # Named leader port and path Prometheus scrapes, when there are metrics.
    metrics_port: str = "http"
    # Every pod of a group exposes metrics (not only the leader): the PodMonitor scrapes them all
    # and the records sum each group onto its leader pod (per_group_rule).
    metrics_on_every_pod: bool = False
    metrics_path: str = "/metrics"
    # Recording rules over those metrics; each may serve one autoscaling.metric.
    rules: tuple[RecordingRule, ...] = ()
    # service.apiKeySecret: the environment variable the server reads its API key from, or else the
    # flag the launch script appends at exec time (never in the manifest or the launch log).
    api_key_env: str | None = None
    api_key_flag: str | None = None
    # The key guards /metrics too, so the PodMonitor must send it.
    metrics_need_api_key: bool = False
    # Flags lwsgen derives on the engine's command line: model.extraArgs may not repeat them.
    derived_flags: tuple[str, ...] = ()
    # parallelism.tensor splits attention heads (tensor parallelism proper); llama.cpp splits layers.
    tensor_splits_heads: bool = True
    # What gateway.enabled's endpoint picker reads of each serving pod; None: the engine exports too
    # little to route on.
    router_metrics: RouterMetrics | None = None
    # model.source: the files the engine reads (huggingface_hub allow_patterns; None: every file),
    # whether it loads one file (model.source.file) and whether its image can run the download.
    hub_patterns: tuple[str, ...] | None = HF_FORMAT_FILES
    loads_one_file: bool = False
    image_has_hub_client: bool = True
    # What the dashboard reads of the engine beside the records.
    serving_series: ServingSeries = ServingSeries()

    @property
    def takes_api_key(self) -> bool:
        return bool(self.api_key_env or self.api_key_flag)

    @property
    def autoscaling_metrics(self) -> tuple[str, ...]:
        """GPU utilisation (from DCGM, any runtime) and whatever the runtime's rules record."""
        return ("gpu-utilization", *(rule.autoscaling for rule in self.rules if rule.autoscaling))


class Role(Record):
    """One side of a group (leader or worker): how its container starts."""

    command: tuple[str, ...]
    args: tuple[str, ...] = ()
    env: tuple[EnvVar, ...] = ()
    ports: tuple[Port, ...] = ()
    # Tools copied in by init containers: (name, image, command), mounted at TOOLS_MOUNT.
    tool_installers: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    api_access: bool = False
    # A scratch directory of the pod (an emptyDir) the engine caches in, mounted at this path.
    cache_dir: str | None = None
    # The pod reads the model (llama.cpp's rpc-server workers get their tensors over RPC: they do not).
    reads_model: bool = True


class Probes(Record):
    port: str
    startup_path: str
    readiness_path: str
    # Seconds one probe call may take: above the engine's own time for that endpoint.
    readiness_timeout: int = 5


class RoleRule(Record):
    """One RBAC rule of the leader's Role."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] | None = None  # None: every object of those resources


class KvTransfer(Record):
    """What one role of a disaggregated profile adds to its engine so KV cache moves from prefill to
    decode (a runtime's kv_transfer(profile, role, every role of the set)), and how requests reach the roles."""

    args: tuple[str, ...]  # engine flags, on every pod that runs the engine
    router: str  # "sglang-router" (a Deployment lwsgen emits) or "endpoint-picker" (gateway.enabled's)
    env: tuple[EnvVar, ...] = ()
    leader_ports: tuple[Port, ...] = ()  # ports the other role or the router reach on the leader
    labels: dict[str, str] = {}  # pod labels the router finds each role by
    annotations: dict[str, str] = {}
    engine_port: int | None = None  # the engine serves here, behind a routing sidecar on sidecar_port
    sidecar_port: int | None = None
    sidecar_args: tuple[str, ...] = ()  # what else the routing sidecar takes (its encoder stage)
    # the platform puts its own routing sidecar on sidecar_port (KServe's decode preset), not lwsgen
    sidecar_by_platform: bool = False


class RuntimeParts(Record):
    leader: Role
    worker: Role
    probes: Probes
    service_ports: tuple[str, ...]
    scripts: dict[str, str]  # file name -> text, mounted at SCRIPTS_MOUNT
    # RBAC rules for the leader's ServiceAccount, when api_access.
    role_rules: tuple[RoleRule, ...] = ()


def plain_env(name: str, value: Any) -> EnvVar:
    return EnvVar(name, value=str(value))


def field_env(name: str, field_path: str) -> EnvVar:
    return EnvVar(name, field_path=field_path)


def script_command(script: str) -> tuple[str, ...]:
    return ("/bin/bash", f"{SCRIPTS_MOUNT}/{script}")


def per_pod_rule(
    function: str, metric: str, autoscaling: str | None = None, title: str = "", unit: str = "short"
) -> RecordingRule:
    """`namespace_pod:<metric>:<function>` = `function by ({by}) (metric{sel})`: one value per
    leader pod of this LeaderWorkerSet (the record name follows Prometheus' level:metric:operation)."""
    record = f"namespace_pod:{metric.replace(':', '_')}:{function}"
    return RecordingRule(record, f"{function} by ({{by}}) ({metric}{{sel}})", autoscaling, title=title, unit=unit)


def per_group_rule(
    function: str, metric: str, autoscaling: str | None = None, title: str = "", unit: str = "short"
) -> RecordingRule:
    """As per_pod_rule, over every pod of each group, recorded onto the group's leader pod
    (<lws>-<group index>, the name LeaderWorkerSet gives it): {leader_pod[} and {]leader_pod} stand
    around the series whose pod label becomes that name (derive/monitoring.py _expr)."""
    record = f"namespace_pod:{metric.replace(':', '_')}:{function}"
    on_leader = f"{{leader_pod[}}{metric}{{sel}}{{]leader_pod}}"
    return RecordingRule(record, f"{function} by ({{by}}) ({on_leader})", autoscaling, title=title, unit=unit)


def rate_per_pod(
    metric: str, window: str = "1m", *, served_model_only: bool = False, composing_only: bool = False
) -> str:
    """The metric's rate summed per pod of this LWS: of every model, the served (entry) model only,
    or every model but the served one (the models an ensemble or BLS entry model runs)."""
    sel = "{sel_model}" if served_model_only else "{sel_composing}" if composing_only else "{sel}"
    return f"sum by ({{by}}) (rate({metric}{sel}[{window}]))"


def safe_ratio(numerator: str, denominator: str) -> str:
    """numerator / denominator, and 0 (not NaN, not absent) where the denominator is 0, so an idle
    group reports 0 and an autoscaler can still scale it down."""
    return f"({numerator}) / (({denominator}) > 0) or ({denominator}) * 0"


# Variables LeaderWorkerSet sets on every container, which profile strings may reference on purpose.
OWN_REFERENCES = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX")
_OWN_REFERENCE = re.compile(r"(\$\((?:" + "|".join(OWN_REFERENCES) + r")\))")


def literal(text: str) -> str:
    """A profile string as command, args or env text that the kubelet leaves as written: it expands
    $(VAR) there, so every $ is doubled ($$ becomes $), except in $(LWS_LEADER_ADDRESS),
    $(LWS_GROUP_SIZE) and $(LWS_WORKER_INDEX). `servedName: $(HF_TOKEN)` stays that text, never the secret."""
    pieces = _OWN_REFERENCE.split(text)
    return "".join(piece if index % 2 else piece.replace("$", "$$") for index, piece in enumerate(pieces))


def model_path(profile) -> str:
    return literal(profile.model.path)


def served_name(profile) -> str:
    return literal(profile.served_name)


def extra_args(profile) -> tuple[str, ...]:
    return tuple(literal(arg) for arg in profile.model.extra_args)


Finding3 = tuple[tuple, str, str]  # (profile path, message, code): what a runtime's rules return


def _says_nothing(_profile: Any) -> list[Finding3]:
    return []


class Runtime(Record):
    """The contract every runtime plugin fills (runtimes/<name>.py ends with `RUNTIME = Runtime(...)`,
    runtimes/__init__.py registers it). The first fields are required; every other one has the default
    written here, which is what a runtime that leaves it out gets."""

    name: str  # the profile's `runtime`
    engine: Any  # versions.Engine: the engine's versions, the features each has, its images
    doc: str  # the module's docstring: docs/runtimes.md prints it
    # (engine version, the profile or None for the newest checked) -> the runtime's facts
    capabilities: Callable[..., Capabilities]
    parts: Callable[..., RuntimeParts]  # profile -> the leader and worker commands, ports, scripts
    # profile -> (path, message, code) errors and warnings of the runtime's own rules
    check: Callable[[Any], list[Finding3]] = _says_nothing
    warnings: Callable[[Any], list[Finding3]] = _says_nothing
    # Prefill/decode roles: None means the runtime cannot disaggregate; kv_problems and
    # warnings_of_roles read the whole profile (roles and all); KV_MATCHING flags must be equal on
    # every role; KV_FLAGS are derived for roles and may not be repeated in model.extraArgs.
    kv_transfer: Callable[..., KvTransfer] | None = None
    kv_problems: Callable[[Any], list[Finding3]] = _says_nothing
    warnings_of_roles: Callable[[Any], list[Finding3]] = _says_nothing
    kv_matching: tuple[str, ...] = ()
    kv_flags: tuple[str, ...] = ()
    data_and_expert: bool = False  # parallelism.data and .expert are derived for it
    launch_modes: tuple[str, ...] = ()  # launch.mode values it takes (native, ray); () none
    mode: Callable[[Any], str] | None = None  # profile -> the launch mode it runs
    reads_hub_ids: bool = False  # model.path may be a hub id the engine downloads at start
    own_fields: tuple[tuple[str, ...], ...] = ()  # profile fields only this runtime reads
    default_served_name: str | None = None  # what clients call when model.servedName is unset
    flag_features: dict[str, str] | None = None  # extraArgs flag -> the engine feature that brought it
    workers_load_model: bool = True  # the workers read the weights (llama.cpp's rpc-servers do not)
    reserved_env: tuple[str, ...] = ()  # env its launch sets in the pods: no escape hatch may change it
