"""Prefill/decode disaggregation (`roles`): one DisaggregatedSet of the roles, each the LeaderWorkerSet
lwsgen builds for a profile, with KV-transfer flags per engine, a router in front, every selector by
set and role, and the checks that refuse what the controller or the engines refuse."""

import copy
import shutil

import pytest

import fastyaml
from conftest import REPO, SHARED, objects_of
from lwsgen.cli import main
from lwsgen.naming import ROLE_LABEL, SET_NAME_LABEL, WORKER_INDEX_LABEL

SGLANG = {
    "name": "pd",
    "namespace": "inference",
    "runtime": "sglang",
    "image": "lmsysorg/sglang:v0.5.23",
    "model": {"path": "/models/DeepSeek-R1", "servedName": "r1", "extraArgs": ["--page-size", "64"]},
    "node": {"gpus": 8, "rdmaResource": {"rdma/ib": 8}},
    "service": {"type": "ClusterIP"},
    "roles": {
        "prefill": {"parallelism": {"tensor": 16}, "extraArgs": ["--chunked-prefill-size", "524288"]},
        "decode": {"parallelism": {"tensor": 8}, "replicas": 2},
    },
    "disaggregation": {"ibDevices": ["mlx5_0", "mlx5_1"]},
}
VLLM = {
    "name": "pd",
    "namespace": "inference",
    "runtime": "vllm",
    "image": "vllm/vllm-openai:v0.33.0",
    "model": {"path": "/models/Llama-3.3-70B-Instruct"},
    "node": {"gpus": 8},
    "gateway": {"enabled": True, "parentRefs": [{"name": "gw", "namespace": "gateways"}]},
    "roles": {
        "prefill": {
            "parallelism": {"tensor": 4},
            "node": {"gpus": 4},
            "autoscaling": {"enabled": True, "metric": "queue-length", "target": 4, "maxReplicas": 4},
        },
        "decode": {"parallelism": {"tensor": 8}},
    },
}


def _role(ds, name):
    return next(r for r in ds["spec"]["roles"] if r["name"] == name)


def _leader(ds, name):
    return _role(ds, name)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]


def _engine(ds, name, side="leaderTemplate"):
    return _role(ds, name)["spec"]["leaderWorkerTemplate"][side]["spec"]["containers"][0]


def _docs(rendered, file):
    return list(fastyaml.load_all(rendered.files[file]))


def test_sglang_roles_become_one_disaggregatedset_with_each_roles_group(render):
    rendered = render(SGLANG)
    assert "leaderworkerset.yaml" not in rendered.files
    ds = objects_of(rendered)["disaggregatedset.yaml"]
    assert (ds["apiVersion"], ds["kind"], ds["spec"]["slices"]) == (
        "disaggregatedset.x-k8s.io/v1",
        "DisaggregatedSet",
        1,
    )
    assert [r["name"] for r in ds["spec"]["roles"]] == ["prefill", "decode"]
    prefill, decode = _role(ds, "prefill")["spec"], _role(ds, "decode")["spec"]
    assert (prefill["leaderWorkerTemplate"]["size"], prefill["replicas"]) == (2, 1)  # 16 GPUs on 8-GPU nodes
    assert (decode["leaderWorkerTemplate"]["size"], decode["replicas"]) == (1, 2)
    args = _engine(ds, "prefill")["args"]
    assert args[args.index("--tp-size") + 1] == "16" and args[args.index("--disaggregation-mode") + 1] == "prefill"
    assert args[args.index("--disaggregation-ib-device") + 1] == "mlx5_0,mlx5_1"
    assert args[args.index("--disaggregation-bootstrap-port") + 1] == "8998"
    assert "--chunked-prefill-size" in args and "--served-model-name" in args
    worker = _engine(ds, "prefill", "workerTemplate")["args"]
    assert worker[worker.index("--disaggregation-mode") + 1] == "prefill"  # every node of the group runs the mode
    decode_args = _engine(ds, "decode")["args"]
    assert decode_args[decode_args.index("--disaggregation-mode") + 1] == "decode"
    assert "--disaggregation-bootstrap-port" not in decode_args and "--chunked-prefill-size" not in decode_args
    assert decode_args[decode_args.index("--served-model-name") + 1] == "r1"
    assert _leader(ds, "prefill")["metadata"]["annotations"]["sglang.ai/bootstrap-port"] == "8998"
    ports = {p["name"]: p["containerPort"] for p in _engine(ds, "prefill")["ports"]}
    assert ports["bootstrap"] == 8998 and "bootstrap" not in {p["name"] for p in _engine(ds, "decode")["ports"]}


def test_the_sglang_router_finds_each_roles_leaders_by_set_and_role(render):
    rendered = render(SGLANG)
    router = {d["kind"]: d for d in _docs(rendered, "router.yaml")}
    assert set(router) == {"ServiceAccount", "Role", "RoleBinding", "Deployment", "NetworkPolicy", "PodMonitor"}
    assert router["PodMonitor"]["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"
    container = router["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    start = args.index("--prefill-selector")
    assert args[start + 1 : start + 4] == [f"{SET_NAME_LABEL}=pd", f"{ROLE_LABEL}=prefill", f"{WORKER_INDEX_LABEL}=0"]
    start = args.index("--decode-selector")
    assert args[start + 1 : start + 4] == [f"{SET_NAME_LABEL}=pd", f"{ROLE_LABEL}=decode", f"{WORKER_INDEX_LABEL}=0"]
    assert args[args.index("--service-discovery-port") + 1] == "30000"
    assert args[args.index("--service-discovery-namespace") + 1] == "$(NAMESPACE)"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readiness"
    assert router["Role"]["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    service = objects_of(rendered)["service.yaml"]
    assert service["spec"]["selector"] == router["Deployment"]["spec"]["selector"]["matchLabels"]
    assert service["metadata"]["name"] == "pd-router"


def test_each_role_admits_the_sets_pods_and_the_router_only(render):
    policies = {p["metadata"]["name"]: p for p in _docs(render(SGLANG), "networkpolicy.yaml")}
    prefill = policies["pd-prefill"]
    assert prefill["spec"]["podSelector"]["matchLabels"] == {SET_NAME_LABEL: "pd", ROLE_LABEL: "prefill"}
    ingress = prefill["spec"]["ingress"]
    # KV transfer (Mooncake, ZMQ) uses random ports both ways: every port between the set's pods
    assert ingress[0] == {"from": [{"podSelector": {"matchLabels": {SET_NAME_LABEL: "pd"}}}]}
    router = [rule for rule in ingress if "router" in str(rule)]
    assert [p["port"] for p in router[0]["ports"]] == ["http", "bootstrap"]
    assert all("ipBlock" not in str(rule) for rule in ingress)  # no serving port open to anywhere


def test_vllm_roles_transfer_over_nixl_behind_the_pickers_prefill_decode_profiles(render):
    rendered = render(VLLM)
    files = objects_of(rendered)
    ds = files["disaggregatedset.yaml"]
    for role in ("prefill", "decode"):
        args = _engine(ds, role)["args"]
        assert args[args.index("--kv-transfer-config") + 1] == '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
        env = {e["name"]: e for e in _engine(ds, role)["env"]}
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
        assert _leader(ds, role)["metadata"]["labels"]["llm-d.ai/role"] == role
    sidecar = _leader(ds, "decode")["spec"]["initContainers"][-1]
    assert (sidecar["name"], sidecar["restartPolicy"]) == ("routing-sidecar", "Always")
    assert "--port=8080" in sidecar["args"] and "--model-server-port=8200" in sidecar["args"]
    decode_args = _engine(ds, "decode")["args"]
    assert decode_args[decode_args.index("--port") + 1] == "8200"
    assert "routing-sidecar" not in str(_leader(ds, "prefill"))
    pool = files["inferencepool.yaml"]
    assert pool["spec"]["selector"]["matchLabels"] == {SET_NAME_LABEL: "pd", WORKER_INDEX_LABEL: "0"}
    assert pool["spec"]["targetPorts"] == [{"number": 8080}]  # prefill engine, decode sidecar
    config = fastyaml.load(
        next(d for d in files["endpoint-picker.yaml"] if d["kind"] == "ConfigMap")["data"]["endpoint-picker.yaml"]
    )
    assert [p["name"] for p in config["schedulingProfiles"]] == ["prefill", "decode"]
    types = [p["type"] for p in config["plugins"]]
    assert {"prefill-filter", "decode-filter", "disagg-profile-handler", "prefix-based-pd-decider"} <= set(types)
    assert "single-profile-handler" not in types and "service.yaml" not in files


def test_a_roles_autoscaler_scales_its_disaggregatedset_role_scaler(render):
    rendered = render(VLLM)
    ds = objects_of(rendered)["disaggregatedset.yaml"]
    assert _role(ds, "prefill")["scaling"] == {"mode": "External"} and "replicas" not in _role(ds, "prefill")["spec"]
    assert "scaling" not in _role(ds, "decode") and _role(ds, "decode")["spec"]["replicas"] == 1
    hpa = objects_of(rendered)["horizontalpodautoscaler.yaml"]
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "disaggregatedset.x-k8s.io/v1",
        "kind": "DisaggregatedSetRoleScaler",
        "name": "pd-prefill",
    }


def test_every_role_gets_its_monitor_records_and_nccl_preflight_on_its_own_shape(render):
    profile = copy.deepcopy(VLLM)
    profile["monitoring"] = {"enabled": True}
    profile["ncclTest"] = {"enabled": True, "launcher": "job"}
    rendered = render(profile)
    monitors = {m["metadata"]["name"]: m for m in _docs(rendered, "podmonitor.yaml")}
    assert monitors["pd-prefill"]["spec"]["selector"]["matchLabels"] == {
        SET_NAME_LABEL: "pd",
        ROLE_LABEL: "prefill",
        WORKER_INDEX_LABEL: "0",
    }
    assert ROLE_LABEL in monitors["pd-decode"]["spec"]["podTargetLabels"]
    groups = objects_of(rendered)["prometheusrule.yaml"]["spec"]["groups"]
    assert [g["name"].rsplit(".", 1)[1] for g in groups] == [
        "prefill_runtime",
        "prefill_gpu",
        "decode_runtime",
        "decode_gpu",
        "alerts",
    ]
    assert 'disaggregatedset_x_k8s_io_role="decode"' in groups[2]["rules"][0]["expr"]
    jobs = [d for d in _docs(rendered, "nccl-test.yaml") if d["kind"] == "Job"]
    gpus = {
        j["metadata"]["name"][: -len("-12345678")]: j["spec"]["template"]["spec"]["containers"][0]["resources"][
            "limits"
        ]["nvidia.com/gpu"]
        for j in jobs
    }
    assert gpus == {"pd-prefill-nccl-test": "4", "pd-decode-nccl-test": "8"}


def test_a_profile_without_roles_renders_exactly_as_before(render, minimal):
    rendered = render(minimal)
    assert "leaderworkerset.yaml" in rendered.files and "disaggregatedset.yaml" not in rendered.files
    assert "disaggregatedset" not in "".join(rendered.files.values())


def _errors(said, profile):
    errors, _ = said(profile)
    return errors


def _with(base, **changes):
    profile = copy.deepcopy(base)
    for dotted, value in changes.items():
        node, *path, last = [profile, *dotted.split(".")]
        for key in path:
            node = node.setdefault(key, {})
        node[last] = value
    return profile


@pytest.mark.parametrize(
    "base, changes, expected",
    [
        (SGLANG, {"lws": {"version": "0.9"}}, "lws.version: roles need a DisaggregatedSet, which LeaderWorkerSet 0.10"),
        (
            SGLANG,
            {"runtime": "llamacpp", "image": "ghcr.io/ggml-org/llama.cpp:server-cuda-b6000"},
            "runtime: llamacpp has no prefill/decode disaggregation lwsgen can derive (no KV-cache transfer "
            "between servers); runtimes with it: sglang, vllm",
        ),
        (
            SGLANG,
            {"image": "lmsysorg/sglang:v0.4.8-cu124"},
            "roles.decode.parallelism: tensor sizes {'prefill': 16, 'decode': 8} needs SGLang 0.4.9 or newer",
        ),
        (
            SGLANG,
            {"roles.decode.extraArgs": ["--page-size", "32"]},
            "roles.decode.extraArgs[0]: --page-size must be the same on every role",
        ),
        (
            SGLANG,
            {"roles.decode.extraArgs": ["--disaggregation-mode", "prefill"]},
            "roles.decode.extraArgs[0]: --disaggregation-mode is derived for each role",
        ),
        (
            SGLANG,
            {"roles.prefill.parallelism": {"tensor": 12}},
            "roles.prefill.parallelism.tensor: world size 12 (tensor 12 x pipeline 1) is not a multiple of node.gpus 8",
        ),
        (
            SGLANG,
            {"roles.decode.replicas": 0},
            "roles: the DisaggregatedSet takes fixed replicas all zero or all above zero",
        ),
        (
            SGLANG,
            {"roles.encode": {}},
            "roles.encode: SGLang's encoder disaggregation (--encoder-only, --language-only, 0.5.7 and newer)",
        ),
        (
            SGLANG,
            {"disaggregation.placement": {"type": "ExclusiveSlice"}},
            "disaggregation.placement.type: placement type ExclusiveSlice needs topologyKey",
        ),
        (
            SGLANG,
            {
                "disaggregation.placement": {"type": "ExclusiveSlice", "topologyKey": "rack"},
                "scheduling": {"exclusiveTopology": "rack"},
            },
            "scheduling.exclusiveTopology: the DisaggregatedSet webhook refuses",
        ),
        (
            SGLANG,
            {"lws": {"partition": 1}},
            "lws.partition: the DisaggregatedSet controller rolls its roles out itself",
        ),
        (
            SGLANG,
            {"patches": [{"target": {"kind": "Service"}, "patch": {"metadata": {"labels": {"a": "b"}}}}]},
            "patches: patches do not reach into a DisaggregatedSet's roles yet",
        ),
        (SGLANG, {"name": "a-very-long-disaggregated-deployment-name-x"}, "name: 43 characters is too long with roles"),
        (
            VLLM,
            {"gateway": {"enabled": False}},
            "gateway.enabled: vLLM's prefill and decode roles are routed by llm-d's endpoint picker",
        ),
        (
            VLLM,
            {"image": "vllm/vllm-openai:v0.8.5"},
            "roles: roles needs vLLM 0.9.0 or newer (prefill/decode disaggregation",
        ),
        (
            VLLM,
            {"disaggregation": {"slices": 2}},
            "disaggregation.slices: the DisaggregatedSet webhook refuses slices above 1",
        ),
        (
            VLLM,
            {"roles.prefill.autoscaling.minReplicas": 0, "roles.prefill.autoscaling.engine": "keda"},
            "roles.prefill.autoscaling.minReplicas: a role cannot scale to zero",
        ),
        (
            VLLM,
            {"roles.prefill.autoscaling.metric": "router-queue-size"},
            "roles.prefill.autoscaling.metric: router-queue-size is the endpoint picker's average over its whole pool",
        ),
        (
            VLLM,
            {"disaggregation": {"ibDevices": ["mlx5_0"]}},
            "disaggregation.ibDevices: ibDevices is SGLang's --disaggregation-ib-device",
        ),
        (
            VLLM,
            {"model.extraArgs": ["--kv-cache-dtype", "fp8"], "roles.decode.extraArgs": ["--kv-cache-dtype", "auto"]},
            "roles.decode.extraArgs[0]: --kv-cache-dtype must be the same on every role",
        ),
    ],
)
def test_what_cannot_be_disaggregated_is_an_error_at_its_field(said, base, changes, expected):
    errors = _errors(said, _with(base, **changes))
    assert any(e.startswith(expected) for e in errors), errors


def test_disaggregation_without_roles_is_an_error(said, minimal):
    errors = _errors(said, {**minimal, "disaggregation": {"slices": 2}})
    assert errors == ["disaggregation: takes effect with roles only (prefill and decode): add roles, or leave it out"]


def test_a_roles_problem_points_at_the_roles_line(write_profile, capsys):
    text = fastyaml.dump(_with(SGLANG, **{"roles.prefill.parallelism": {"tensor": 12}}), sort_keys=False)
    path = write_profile(text)
    assert main(["render", str(path), "--stdout"]) == 1
    line = text.splitlines().index("      tensor: 12") + 1
    assert f"{path}:{line}:15: roles.prefill.parallelism.tensor: world size 12" in capsys.readouterr().err


def test_the_disaggregatedset_passes_its_upstream_crd_and_unknown_fields_fail(render):
    from crd import errors as crd_errors

    ds = objects_of(render(SGLANG))["disaggregatedset.yaml"]
    assert crd_errors(ds, SHARED / "crds") == []
    _role(ds, "decode")["spec"]["leaderWorkerTemplate"]["sizes"] = 2
    assert crd_errors(ds, SHARED / "crds")


EXAMPLES = ("sglang-deepseek-r1-pd", "vllm-llama33-70b-pd")


def _edit(directory, name, old, new):
    path = directory / name
    assert old in path.read_text(), (name, old)
    path.write_text(path.read_text().replace(old, new, 1))


EDITS = {
    "podmonitor names a role the set lacks": (
        "podmonitor.yaml",
        "disaggregatedset.x-k8s.io/role: prefill",
        "disaggregatedset.x-k8s.io/role: prefil",
        "must select disaggregatedset.x-k8s.io/name=<a DisaggregatedSet in this set>",
    ),
    "network policy selects another set": (
        "networkpolicy.yaml",
        "      disaggregatedset.x-k8s.io/name: {name}\n",
        "      disaggregatedset.x-k8s.io/name: other\n",
        "selects DisaggregatedSet 'other', which is not in this set",
    ),
    "a role's requests differ from its limits": (
        "disaggregatedset.yaml",
        "                requests:\n                  cpu: '",
        "                requests:\n                  cpu: '1",
        "requests must equal limits",
    ),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
@pytest.mark.parametrize("example", EXAMPLES)
def test_a_breaking_hand_edit_of_a_set_is_caught(example, edit, tmp_path, capsys):
    directory = tmp_path / example
    shutil.copytree(REPO / "out" / example, directory)
    assert main(["validate", str(directory)]) == 0, capsys.readouterr().out
    file, old, new, expected = EDITS[edit]
    _edit(directory, file, old.format(name=example), new)
    assert main(["validate", str(directory)]) == 1
    out = capsys.readouterr().out
    assert expected in out and f"{directory}/{file}:" in out, out


def test_a_scaler_of_a_role_without_external_scaling_is_caught(tmp_path, capsys):
    directory = tmp_path / "vllm-llama33-70b-pd"
    shutil.copytree(REPO / "out" / directory.name, directory)
    _edit(directory, "disaggregatedset.yaml", "    scaling:\n      mode: External\n", "")
    assert main(["validate", str(directory)]) == 1
    assert "must target the DisaggregatedSetRoleScaler of a role with scaling mode External" in capsys.readouterr().out


def test_a_benign_label_on_a_set_still_passes(tmp_path, capsys):
    for example in EXAMPLES:
        directory = tmp_path / example
        shutil.copytree(REPO / "out" / example, directory)
        _edit(directory, "disaggregatedset.yaml", "  labels:\n", "  labels:\n    team: inference\n")
        assert main(["validate", str(directory)]) == 0, capsys.readouterr().out


@pytest.mark.tools
def test_a_kustomize_overlay_keeps_every_reference_of_a_set(tmp_path):
    """Real kubectl kustomize: namePrefix renames the set, its launch ConfigMaps and what selects it;
    images and labels reach every role's pod templates."""
    import subprocess

    from conftest import tool

    shutil.copytree(REPO / "out" / "vllm-llama33-70b-pd", tmp_path / "base")
    (tmp_path / "overlay").mkdir()
    overlay = {
        "resources": ["../base"],
        "namePrefix": "prod-",
        "labels": [{"pairs": {"team": "ml"}, "includeSelectors": True, "includeTemplates": True}],
        "images": [{"name": "vllm/vllm-openai", "newTag": "v0.33.1"}],
    }
    (tmp_path / "overlay" / "kustomization.yaml").write_text(fastyaml.dump(overlay))
    built = subprocess.run([tool("kubectl"), "kustomize", str(tmp_path / "overlay")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    objects = {(d["kind"], d["metadata"]["name"]): d for d in fastyaml.load_all(built.stdout) if d}
    ds = objects[("DisaggregatedSet", "prod-vllm-llama33-70b-pd")]
    for role in ("prefill", "decode"):
        for side in ("leaderTemplate", "workerTemplate"):
            pod = _role(ds, role)["spec"]["leaderWorkerTemplate"][side]
            [volume] = [v for v in pod["spec"]["volumes"] if "configMap" in v]
            assert ("ConfigMap", volume["configMap"]["name"]) in objects
            assert pod["spec"]["containers"][0]["image"] == "vllm/vllm-openai:v0.33.1"
            assert pod["metadata"]["labels"]["team"] == "ml"
    monitor = objects[("PodMonitor", "prod-vllm-llama33-70b-pd-prefill")]
    assert monitor["spec"]["selector"]["matchLabels"][SET_NAME_LABEL] == "prod-vllm-llama33-70b-pd"
    pool = objects[("InferencePool", "prod-vllm-llama33-70b-pd")]
    assert pool["spec"]["selector"]["matchLabels"][SET_NAME_LABEL] == "prod-vllm-llama33-70b-pd"


def test_vllm_tensor_sizes_follow_nixls_heterogeneous_split(said):
    older = _with(VLLM, image="vllm/vllm-openai:v0.9.0")
    assert any(
        e.startswith("roles.decode.parallelism: prefill tensor 4, decode 8 needs vLLM 0.9.1")
        for e in _errors(said, older)
    )
    _, warned = said(_with(VLLM, **{"roles.decode.parallelism": {"tensor": 6}, "roles.decode.node": {"gpus": 6}}))
    assert any(
        w.startswith("roles.decode.parallelism.tensor: decode tensor 6 is not a multiple of prefill tensor 4")
        for w in warned
    ), warned


def test_sglang_roles_behind_a_gateway_route_to_the_routers_service(render):
    profile = _with(SGLANG, gateway={"enabled": True, "parentRefs": [{"name": "gw", "namespace": "gateways"}]})
    files = objects_of(render(profile))
    assert "inferencepool.yaml" not in files and "endpoint-picker.yaml" not in files
    [backend] = files["httproute.yaml"]["spec"]["rules"][0]["backendRefs"]
    assert backend == {"group": "", "kind": "Service", "name": "pd-router", "port": 30000}
    router_policy = next(d for d in files["router.yaml"] if d["kind"] == "NetworkPolicy")
    assert {"kubernetes.io/metadata.name": "gateways"} in [
        peer.get("namespaceSelector", {}).get("matchLabels")
        for rule in router_policy["spec"]["ingress"]
        for peer in rule.get("from", [])
    ]


def test_a_route_to_a_service_port_the_router_lacks_is_caught(tmp_path, capsys, write_profile):
    profile = _with(SGLANG, gateway={"enabled": True, "parentRefs": [{"name": "gw", "namespace": "gateways"}]})
    path = write_profile(profile)
    assert main(["render", str(path), "-o", str(tmp_path / "out")]) == 0
    directory = tmp_path / "out" / "pd"
    _edit(directory, "httproute.yaml", "port: 30000", "port: 8080")
    capsys.readouterr()
    assert main(["validate", str(directory)]) == 1
    assert "Service 'pd-router' port 8080 is not in this set" in capsys.readouterr().out


def test_behind_a_gateway_the_router_takes_requests_from_the_gateway_only(render):
    profile = _with(SGLANG, gateway={"enabled": True, "parentRefs": [{"name": "gw", "namespace": "gateways"}]})
    policy = next(d for d in objects_of(render(profile))["router.yaml"] if d["kind"] == "NetworkPolicy")
    assert all(rule.get("from") for rule in policy["spec"]["ingress"])  # no rule open to any source


VLLM_EPD = _with(VLLM, **{"roles.encode": {"parallelism": {"tensor": 2}, "node": {"gpus": 2}, "replicas": 2}})


def test_a_vllm_encode_role_hands_embeddings_to_prefill_and_the_picker_schedules_it(render):
    files = objects_of(render(VLLM_EPD))
    ds = files["disaggregatedset.yaml"]
    assert [r["name"] for r in ds["spec"]["roles"]] == ["prefill", "decode", "encode"]
    encode = _engine(ds, "encode")["args"]
    config = encode[encode.index("--ec-transfer-config") + 1]
    assert '"ec_connector":"ECCPUConnector","ec_role":"ec_producer"' in config and '"ec_enable_nixl":true' in config
    assert "--mm-encoder-only" in encode and "--kv-transfer-config" not in encode
    assert _leader(ds, "encode")["metadata"]["labels"]["llm-d.ai/role"] == "encode"
    prefill = _engine(ds, "prefill")
    assert '"ec_role":"ec_consumer"' in prefill["args"][prefill["args"].index("--ec-transfer-config") + 1]
    assert {"name": "VLLM_USE_V2_MODEL_RUNNER", "value": "1"} in prefill["env"]
    assert "--ec-transfer-config" not in _engine(ds, "decode")["args"]
    sidecar = _leader(ds, "decode")["spec"]["initContainers"][-1]
    assert "--ec-connector=ec-nixl" in sidecar["args"]
    picker = next(d for d in files["endpoint-picker.yaml"] if d["kind"] == "ConfigMap")
    epp = fastyaml.load(picker["data"]["endpoint-picker.yaml"])
    assert [p["name"] for p in epp["schedulingProfiles"]] == ["encode", "prefill", "decode"]
    handler = next(p for p in epp["plugins"] if p["type"] == "disagg-profile-handler")
    assert handler["parameters"]["deciders"] == {
        "prefill": "prefix-based-pd-decider",
        "encode": "always-disagg-multimodal-decider",
    }
    assert {"encode-filter", "always-disagg-multimodal-decider"} <= {p["type"] for p in epp["plugins"]}


def test_without_an_encode_role_nothing_of_it_is_derived(render):
    files = objects_of(render(VLLM))
    ds = files["disaggregatedset.yaml"]
    assert "--ec-transfer-config" not in str(ds) and "ec-connector" not in str(ds)
    assert "encode" not in files["endpoint-picker.yaml"][3]["data"]["endpoint-picker.yaml"]


def test_an_encode_role_needs_vllms_nixl_embedding_transfer(said):
    errors = _errors(said, _with(VLLM_EPD, image="vllm/vllm-openai:v0.29.0"))
    assert any(e.startswith("roles.encode: roles.encode needs vLLM 0.30.0 or newer") for e in errors), errors


def _picker(files):
    config_map = next(d for d in files["endpoint-picker.yaml"] if d["kind"] == "ConfigMap")
    deployment = next(d for d in files["endpoint-picker.yaml"] if d["kind"] == "Deployment")
    return fastyaml.load(config_map["data"]["endpoint-picker.yaml"]), deployment["spec"]["template"]["spec"]


@pytest.mark.parametrize(
    ("profile", "roles"), [(VLLM, ["prefill", "decode"]), ("epd", ["encode", "prefill", "decode"])]
)
def test_the_picker_keeps_each_request_on_one_revision_of_the_set(render, profile, roles):
    """During a rollout the old and new revision serve side by side: the rollout screener keeps one
    revision whose every role is Ready, so no request pairs a prefill and a decode of two revisions."""
    config, pod = _picker(objects_of(render(VLLM_EPD if profile == "epd" else profile)))
    [screener] = [p for p in config["plugins"] if p["type"] == "disaggregatedset-rollout-screener"]
    parameters = screener["parameters"]
    assert parameters["scope"]["labelSelector"] == f"{SET_NAME_LABEL}=pd,{WORKER_INDEX_LABEL}=0"  # groups
    assert parameters["revisionGating"] == {"mode": "sum", "requireRoles": {"values": roles}}
    assert parameters["headerSelectors"][0]["labelKey"] == "disaggregatedset.x-k8s.io/revision"
    assert all(screener["name"] not in str(p["plugins"]) for p in config["schedulingProfiles"])  # top level only
    assert "--allow-experimental-plugins" in pod["containers"][0]["args"]  # Alpha in llm-d-router v0.10.0


def test_a_picker_without_roles_runs_no_experimental_plugin(render):
    profile = {k: v for k, v in VLLM.items() if k != "roles"}
    config, pod = _picker(objects_of(render(profile)))
    assert "disaggregatedset-rollout-screener" not in str(config)
    assert "--allow-experimental-plugins" not in pod["containers"][0]["args"]


ROUTER_EDITS = {
    "a selector names a role the set lacks": (
        "- disaggregatedset.x-k8s.io/role=decode\n",
        "- disaggregatedset.x-k8s.io/role=decoder\n",
        "--decode-selector disaggregatedset.x-k8s.io/name=sglang-deepseek-r1-pd disaggregatedset.x-k8s.io/role="
        "decoder leaderworkerset.sigs.k8s.io/worker-index=0: must select",
    ),
    "a selector takes the workers too": (
        "- disaggregatedset.x-k8s.io/role=prefill\n        - leaderworkerset.sigs.k8s.io/worker-index=0\n",
        "- disaggregatedset.x-k8s.io/role=prefill\n",
        'must select the leaders (leaderworkerset.sigs.k8s.io/worker-index="0")',
    ),
    "discovery on a port the leaders lack": (
        "- --service-discovery-port\n        - '30000'\n",
        "- --service-discovery-port\n        - '8000'\n",
        "8000 is not a port of the prefill leaders",
    ),
}


@pytest.mark.parametrize("edit", sorted(ROUTER_EDITS))
def test_a_router_that_would_find_no_leader_is_caught(edit, tmp_path, capsys):
    directory = tmp_path / "sglang-deepseek-r1-pd"
    shutil.copytree(REPO / "out" / directory.name, directory)
    old, new, expected = ROUTER_EDITS[edit]
    _edit(directory, "router.yaml", old, new)
    assert main(["validate", str(directory)]) == 1
    out = capsys.readouterr().out
    assert expected in out and f"{directory}/router.yaml:" in out, out


@pytest.mark.tools
@pytest.mark.parametrize(
    ("example", "expected"),
    [
        ("sglang-deepseek-r1-pd", ["--prefill-selector", "--decode-selector"]),
        ("vllm-llama33-70b-pd", ["scope.labelSelector", "scaleTargetRef", "names InferencePool"]),
    ],
)
def test_what_a_rename_cannot_follow_in_a_set_validate_names(example, expected, tmp_path, capsys):
    """Real kubectl kustomize with namePrefix: the names the controller derives from the set's (the
    role scalers) and the set's name inside flags and config text stay; validate of the built output
    names each, and says to render with the new name."""
    import subprocess

    from conftest import tool

    shutil.copytree(REPO / "out" / example, tmp_path / "base")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text("resources: [../base]\nnamePrefix: staging-\n")
    built = subprocess.run([tool("kubectl"), "kustomize", str(tmp_path / "overlay")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (tmp_path / "built.yaml").write_text(built.stdout)
    assert main(["validate", str(tmp_path / "built.yaml")]) == 1
    lines = capsys.readouterr().out.splitlines()
    for what in expected:
        said = [line for line in lines if what in line]
        assert said and all("render the profile with the new name" in line for line in said), (what, lines)
