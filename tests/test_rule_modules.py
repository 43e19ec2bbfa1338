"""One small test per rule module: a rule of it called on its own, on a profile (or a rendered set) it
has nothing to say of, then on one changed to break it, which must give exactly one finding."""

import copy

import pytest

import fastyaml
from conftest import MINIMAL, REPO
from lwsgen.check import (
    delivery,
    engine,
    gateway,
    hatches,
    images,
    metadata,
    model,
    platform,
    podhatches,
    scheduling,
    startup,
    versions,
)
from lwsgen.check import rules as profile_rules
from lwsgen.check.schema import with_defaults
from lwsgen.load import load
from lwsgen.output import invariants, relations, routing
from lwsgen.output.guards import Change, derived_values_kept, frozen
from lwsgen.output.inventory import inventory
from lwsgen.output.parse import parse
from lwsgen.pipeline import load_profile
from lwsgen.problems import ProblemsError
from lwsgen.profile import from_data

# (rule, what changes MINIMAL, the one finding: (path, code, message))
PROFILE_CASES = [
    (
        platform.check,
        {"platform": "kserve-isvc"},
        (
            "model.path",
            "kserve-refuses",
            "KServe's webhook takes only a pvc:// or oci:// storageUri for a multi-node InferenceService "
            "(\"Multinode only supports 'pvc' and 'oci' Storage Protocol\"), and the weights are on no claim of the "
            "profile: download the weights onto a ReadWriteMany claim with model.source and storage (lwsgen's model "
            "delivery), or use platform kserve, which takes hf://",
        ),
    ),
    (
        profile_rules.check_replicas,
        {"autoscaling": {"minReplicas": 3, "maxReplicas": 2}},
        ("autoscaling.minReplicas", "min-above-max", "minReplicas 3 is greater than maxReplicas 2"),
    ),
    (
        profile_rules.check_replicas_with_autoscaling,
        {"replicas": 3, "autoscaling": {"enabled": True, "minReplicas": 1, "maxReplicas": 4}},
        (
            "replicas",
            "replicas-ignored",
            "replicas 3 has no effect with autoscaling on: the autoscaler keeps between autoscaling.minReplicas 1 "
            "and maxReplicas 4 groups; remove replicas",
        ),
    ),
    (
        images.check_images,
        {"image": "vllm/vllm-openai:latest"},
        ("image", "bad-image", "'vllm/vllm-openai:latest': ':latest' is not pinned; use a version tag or a digest"),
    ),
    (
        scheduling.check,
        {"scheduling": {"scheduler": "kueue"}},
        ("scheduling.scheduler", "missing-queue", "Kueue admits workloads from a LocalQueue: set scheduling.queue"),
    ),
    (
        metadata.check,
        {"labels": {"team/": "a"}},
        (
            'labels["team/"]',
            "bad-label",
            "label key 'team/' is not a qualified name: an optional DNS-subdomain prefix and '/', then a name of "
            "letters, digits, '-', '_' and '.' that starts and ends with a letter or digit",
        ),
    ),
    (
        engine.check_extra_args,
        {"model": {"path": "/models/m", "extraArgs": ["--tensor-parallel-size=4"]}},
        (
            "model.extraArgs[0]",
            "derived-flag",
            "--tensor-parallel-size is a flag lwsgen derives for vllm (from parallelism, the runtime's serving port "
            "or model); repeating it would override what the probes, Service and group size are built from: set the "
            "profile field instead",
        ),
    ),
    (
        model.check_model_path_relative,
        {"model": {"path": "./Llama-3.1-8B-Instruct"}},
        (
            "model.path",
            "model-path-relative",
            "'./Llama-3.1-8B-Instruct' is a relative path and not a Hub id (org/name): the engine would look for it "
            "in its image's working directory and find no weights; write the absolute path of the model in the image",
        ),
    ),
    (
        model.check_gpu_product,
        {"node": {"gpus": 8, "gpuProduct": "h100"}},
        (
            "node.gpuProduct",
            "unknown-gpu-product",
            "'h100' is not an nvidia.com/gpu.product label GPU feature discovery sets, so no node would match and "
            "every pod would stay Pending; did you mean NVIDIA-H100-80GB-HBM3? (`kubectl get nodes -L "
            "nvidia.com/gpu.product` lists yours; for a product lwsgen does not list, set node.gpuProductUnlisted: "
            "true)",
        ),
    ),
    (
        startup.check,
        {"launch": {"rendezvousTimeoutSeconds": 86400}},
        (
            "launch.rendezvousTimeoutSeconds",
            "rendezvous-over-load",
            "86400 s is not below the load budget (1800 s, the default (the model's size is unknown)): waiting for "
            "the group may not take longer than loading the model; lower it, or raise model.loadTimeoutSeconds",
        ),
    ),
    (
        versions.check,
        {"runtimeVersion": "banana"},
        ("runtimeVersion", "bad-version", "'banana' is not a vLLM version; write it as the engine does, e.g. 0.33.0"),
    ),
    (
        gateway.check,
        {"gateway": {"enabled": True}, "monitoring": {"enabled": True}},
        (
            "gateway.enabled",
            "missing-field",
            "a gateway needs gateway.parentRefs: the Gateway (name, and namespace if not this one) the route attaches "
            "to",
        ),
    ),
    (
        delivery.check,
        {"storage": {"localCache": {"size": "100Gi"}}},
        (
            "storage.localCache",
            "missing-field",
            "copies the snapshot model.source downloads (its marker says it is whole): set model.source",
        ),
    ),
    (
        podhatches.check,
        {"podLabels": {"leaderworkerset.sigs.k8s.io/name": "x"}},
        (
            'podLabels["leaderworkerset.sigs.k8s.io/name"]',
            "reserved-label",
            "pod label 'leaderworkerset.sigs.k8s.io/name': set by lwsgen, LeaderWorkerSet or Kueue (selectors and "
            "queues use it); use your own label key",
        ),
    ),
    (
        hatches.check,
        {"service": {"type": "ClusterIP", "extraPorts": [{"name": "extra", "port": 9000}]}},
        (
            "service.extraPorts[0].name",
            "no-port",
            "no sidecar port 'extra' on the leader pod; named ports of its sidecars: none (add one to a leader "
            "sidecar's ports)",
        ),
    ),
]


def _said(rule, data: dict, tmp_path) -> list[tuple[str, str, str]]:
    path = tmp_path / "profile.yaml"
    path.write_text(fastyaml.dump(data, sort_keys=False), encoding="utf-8")
    src = load(path)
    profile = from_data(with_defaults(src.data))
    return [(p.path, p.code, p.message) for p in rule(profile, src)]


def _changed(change: dict) -> dict:
    data = copy.deepcopy(MINIMAL)
    data.update(copy.deepcopy(change))
    return data


@pytest.mark.parametrize("rule, change, finding", PROFILE_CASES, ids=lambda v: getattr(v, "__module__", None))
def test_a_profile_rule_says_nothing_of_a_good_profile_and_one_thing_of_a_bad_one(rule, change, finding, tmp_path):
    assert _said(rule, copy.deepcopy(MINIMAL), tmp_path) == []
    assert _said(rule, _changed(change), tmp_path) == [finding]


def test_a_role_rule_says_nothing_of_good_roles_and_one_thing_of_bad_ones(tmp_path):
    """check/disaggregation.py: kv_layout_matches (the KV cache layout flags equal on every role)."""
    data = fastyaml.load((REPO / "profiles" / "vllm-llama33-70b-pd.yaml").read_text(encoding="utf-8"))
    path = tmp_path / "profile.yaml"
    path.write_text(fastyaml.dump(data, sort_keys=False), encoding="utf-8")
    load_profile(path)  # good: no error
    data["model"]["extraArgs"] = []
    data["roles"]["decode"]["extraArgs"] = ["--block-size", "64"]
    path.write_text(fastyaml.dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(ProblemsError) as raised:
        load_profile(path)
    said = [(p.path, p.code, p.message) for p in raised.value.problems]
    message = (
        "--block-size must be the same on every role, or the KV cache one role writes is not the layout the other "
        "reads: prefill (engine default), decode 64"
    )
    assert said == [("roles.decode.extraArgs[0]", "kv-mismatch", message)]


def _rendered(example: str) -> dict[str, tuple]:
    directory = REPO / "out" / example
    return {p.name: parse(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.yaml"))}


def _one(files: dict[str, tuple], kind: str) -> dict:
    """The object of that kind in the file named for it (service.yaml holds the leader Service)."""
    return next(o for o in files[f"{kind.lower()}.yaml"] if o.get("kind") == kind)


# (rule, example, the kind of the object changed, the change, the one finding: (path, message))
SET_CASES = [
    (
        relations.service_selects_leaders,
        "vllm-llama31-405b",
        "Service",
        lambda service: service["spec"]["selector"].update({"leaderworkerset.sigs.k8s.io/worker-index": "1"}),
        (
            ("spec", "selector"),
            "must select leaderworkerset.sigs.k8s.io/name=<a LeaderWorkerSet in this set> and "
            'leaderworkerset.sigs.k8s.io/worker-index="0" (and only labels its leader pods carry)',
        ),
    ),
    (
        invariants.policy_selects_the_group,
        "vllm-llama31-405b",
        "NetworkPolicy",
        lambda policy: policy["spec"]["podSelector"]["matchLabels"].update({"leaderworkerset.sigs.k8s.io/name": "x"}),
        (
            ("spec", "podSelector", "matchLabels", "leaderworkerset.sigs.k8s.io/name"),
            "selects LeaderWorkerSet 'x', which is not in this set",
        ),
    ),
    (
        routing.route_reaches_a_pool,
        "vllm-llama31-405b",
        "HTTPRoute",
        lambda route: route["spec"]["rules"][0]["backendRefs"][0].update({"name": "elsewhere"}),
        (("spec", "rules", 0, "backendRefs", 0, "name"), "InferencePool 'elsewhere' is not in this set"),
    ),
]


@pytest.mark.parametrize(
    "rule, example, kind, change, finding", SET_CASES, ids=lambda v: getattr(v, "__module__", None)
)
def test_a_set_rule_says_nothing_of_a_rendered_set_and_one_thing_of_a_changed_one(rule, example, kind, change, finding):
    files = _rendered(example)
    assert list(rule(_one(files, kind), inventory(files))) == []
    change(_one(files, kind))
    said = [(f.path, f.message) if hasattr(f, "path") else tuple(f) for f in rule(_one(files, kind), inventory(files))]
    assert said == [finding]


def test_every_module_that_holds_a_rule_has_its_case_here():
    from lwsgen import registry
    from lwsgen.check import disaggregation
    from lwsgen.output import guards

    cased = {rule.__module__ for rule, *_ in (*PROFILE_CASES, *SET_CASES)} | {disaggregation.__name__, guards.__name__}
    assert {rule.function.__module__ for rule in registry.registered()} == cased


def _patched_lws(example: str, change) -> list[tuple[str, str, str]]:
    """What derived_values_kept (output/guards/) says of a patch that makes `change` to the example's
    LeaderWorkerSet."""
    profile, src, _ = load_profile(REPO / "profiles" / f"{example}.yaml")
    before = _one(_rendered(example), "LeaderWorkerSet")
    after = copy.deepcopy(before)
    change(after)
    devices = frozenset(frozen.devices(profile))
    said = Change(profile, src, ("patches", 0), "patch 1", "leaderworkerset.yaml", before, after, devices)
    return [(p.path, p.code, p.message) for p in derived_values_kept(said)]


def test_a_hatch_rule_says_nothing_of_an_unchanged_object_and_one_thing_of_a_changed_one():
    """output/guards/: derived_values_kept (a hatch changes no value lwsgen derives)."""
    assert _patched_lws("vllm-llama31-405b", lambda lws: None) == []
    message = (
        "patch 1 changes LeaderWorkerSet vllm-llama31-405b spec.leaderWorkerTemplate.size; lwsgen derives it from "
        "parallelism and node.gpus: change that instead"
    )
    said = _patched_lws("vllm-llama31-405b", lambda lws: lws["spec"]["leaderWorkerTemplate"].update(size=3))
    assert said == [("patches[0]", "derived", message)]


@pytest.mark.parametrize(
    "example, name", [("vllm-llama31-405b", "VLLM_HOST_IP"), ("aphrodite-llama31-70b", "APHRODITE_HOST_IP")]
)
def test_the_env_a_runtime_reserves_is_frozen_against_hatches(example, name):
    """The runtime's Runtime.reserved_env is among lwsgen's own variables, which no hatch may change."""

    def pin_address(lws):
        env = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["env"]
        entry = next(e for e in env if e["name"] == name)
        entry.pop("valueFrom")
        entry["value"] = "10.0.0.1"

    said = [message for _, _, message in _patched_lws(example, pin_address)]
    assert any(f"env.{name}; lwsgen derives it from env (lwsgen's own variables)" in message for message in said)
