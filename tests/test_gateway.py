"""gateway.enabled: the InferencePool, the endpoint picker (llm-d-router v0.10.0) and the HTTPRoute,
what they select and admit, the checks that guard them, and the router's autoscaling records."""

import pytest

import fastyaml
from conftest import PROFILES, merged
from lwsgen.cli import main
from lwsgen.output import relations
from lwsgen.pipeline import render_profile
from runtimes.test_all_runtimes import profile_for

GATEWAY = {"enabled": True, "parentRefs": [{"name": "inference-gateway", "namespace": "gateways"}]}
# The newest engine version of each runtime lwsgen checked (trtllm-serve needs its 1.3 gauges).
VERSIONS = {
    "vllm": "0.33.0",
    "aphrodite": "0.20.0",
    "sglang": "0.5.23",
    "llamacpp": "b10470",
    "trtllm-serve": "1.3.0rc0",
    "triton-trtllm": "26.07",
}


def _profile(runtime="vllm", **changes):
    base = profile_for(runtime, runtimeVersion=VERSIONS[runtime], monitoring={"enabled": True}, gateway=GATEWAY)
    del base["service"]  # the type's default is what some tests are about
    return merged(base, **changes)


def _docs(rendered, name):
    return [d for d in fastyaml.load_all(rendered.files[name]) if d]


def _picker(rendered, kind):
    [obj] = [d for d in _docs(rendered, "endpoint-picker.yaml") if d["kind"] == kind]
    return obj


def _picker_config(rendered):
    return fastyaml.load(next(iter(_picker(rendered, "ConfigMap")["data"].values())))


def _cross(rendered, **edited):
    files = {name: tuple(_docs(rendered, name)) for name in rendered.files if name.endswith(".yaml")}
    files.update(edited)
    return [(f, e.path, e.message) for f, _, e in relations.cross_object_errors(files)]


def test_off_by_default_and_the_service_stays_a_load_balancer(render, minimal):
    plain = render({k: v for k, v in minimal.items() if k != "service"})
    assert not {"inferencepool.yaml", "endpoint-picker.yaml", "httproute.yaml"} & set(plain.files)
    assert fastyaml.load(plain.files["service.yaml"])["spec"]["type"] == "LoadBalancer"


def test_behind_a_gateway_the_service_defaults_to_cluster_ip_unless_set(render):
    assert fastyaml.load(render(_profile()).files["service.yaml"])["spec"]["type"] == "ClusterIP"
    kept = render(_profile(service={"type": "NodePort"}))
    assert fastyaml.load(kept.files["service.yaml"])["spec"]["type"] == "NodePort"


@pytest.mark.parametrize("runtime", sorted(VERSIONS))
def test_the_pool_selects_this_lws_leaders_on_their_serving_port(render, runtime):
    rendered = render(_profile(runtime))
    [pool] = _docs(rendered, "inferencepool.yaml")
    assert pool["spec"]["selector"] == {
        "matchLabels": {"leaderworkerset.sigs.k8s.io/name": "demo", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    }
    [lws] = _docs(rendered, "leaderworkerset.yaml")
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    service = fastyaml.load(rendered.files["service.yaml"])
    serving = {p["name"]: p["containerPort"] for p in leader["ports"]}[service["spec"]["ports"][0]["targetPort"]]
    assert pool["spec"]["targetPorts"] == [{"number": serving}] and pool["spec"]["appProtocol"] == "http"
    assert pool["spec"]["endpointPickerRef"] == {
        "group": "",
        "kind": "Service",
        "name": "demo-epp",
        "port": {"number": 9002},
        "failureMode": "FailClose",
    }
    assert _cross(rendered) == []


@pytest.mark.parametrize(
    "selector, why",
    [
        ({"leaderworkerset.sigs.k8s.io/name": "demo"}, "workers too"),
        ({"leaderworkerset.sigs.k8s.io/name": "demo", "leaderworkerset.sigs.k8s.io/worker-index": "1"}, "a worker"),
        ({"leaderworkerset.sigs.k8s.io/name": "other", "leaderworkerset.sigs.k8s.io/worker-index": "0"}, "another LWS"),
        ({"leaderworkerset.sigs.k8s.io/name": "demo-1", "leaderworkerset.sigs.k8s.io/worker-index": "0"}, "look-alike"),
        (
            {
                "leaderworkerset.sigs.k8s.io/name": "demo",
                "leaderworkerset.sigs.k8s.io/worker-index": "0",
                "role": "leader",
            },
            "a label the leaders do not carry",
        ),
        ({"app.kubernetes.io/instance": "demo"}, "no LWS label"),
    ],
)
def test_a_pool_that_could_select_anything_but_these_leaders_is_refused(render, selector, why):
    rendered = render(_profile())
    [pool] = _docs(rendered, "inferencepool.yaml")
    pool["spec"]["selector"]["matchLabels"] = selector
    found = _cross(rendered, **{"inferencepool.yaml": (pool,)})
    assert [(f, p) for f, p, _ in found] == [("inferencepool.yaml", ("spec", "selector", "matchLabels"))], why


def test_pool_ports_and_references_must_resolve_in_the_set(render):
    rendered = render(_profile())
    [pool] = _docs(rendered, "inferencepool.yaml")
    pool["spec"]["targetPorts"] = [{"number": 9999}]
    pool["spec"]["endpointPickerRef"]["port"]["number"] = 9003
    [route] = _docs(rendered, "httproute.yaml")
    route["spec"]["rules"][0]["backendRefs"][0]["name"] = "elsewhere"
    found = _cross(rendered, **{"inferencepool.yaml": (pool,), "httproute.yaml": (route,)})
    assert sorted((f, p) for f, p, _ in found) == [
        ("httproute.yaml", ("spec", "rules", 0, "backendRefs", 0, "name")),
        ("inferencepool.yaml", ("spec", "endpointPickerRef", "port", "number")),
        ("inferencepool.yaml", ("spec", "targetPorts", 0, "number")),
    ]
    pool["spec"]["endpointPickerRef"]["name"] = "gone"
    assert ("inferencepool.yaml", ("spec", "endpointPickerRef", "name")) in [
        (f, p) for f, p, _ in _cross(rendered, **{"inferencepool.yaml": (pool,)})
    ]


def test_the_route_attaches_to_the_gateways_and_sends_everything_to_the_pool(render):
    gateway = {
        **GATEWAY,
        "parentRefs": [{"name": "public", "namespace": "gateways", "sectionName": "https"}, {"name": "internal"}],
        "hostnames": ["llm.example.com", "*.llm.example.com"],
        "path": {"type": "PathPrefix", "value": "/v1"},
        "requestTimeout": "10m",
    }
    [route] = _docs(render(_profile(gateway=gateway)), "httproute.yaml")
    assert route["spec"]["parentRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": "public",
            "namespace": "gateways",
            "sectionName": "https",
        },
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "internal"},
    ]
    assert route["spec"]["hostnames"] == ["llm.example.com", "*.llm.example.com"]
    assert route["spec"]["rules"] == [
        {
            "matches": [{"path": {"type": "PathPrefix", "value": "/v1"}}],
            "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "demo"}],
            "timeouts": {"request": "10m"},
        }
    ]


def test_the_picker_reads_pods_and_pools_and_nothing_cluster_wide(render):
    rendered = render(_profile())
    role = _picker(rendered, "Role")
    assert {(tuple(r["apiGroups"]), tuple(r["resources"])): r["verbs"] for r in role["rules"]} == {
        (("",), ("pods",)): ["get", "list", "watch"],
        (("inference.networking.k8s.io",), ("inferencepools",)): ["get", "list", "watch"],
        (("llm-d.ai", "inference.networking.x-k8s.io"), ("inferenceobjectives", "inferencemodelrewrites")): [
            "get",
            "list",
            "watch",
        ],
    }
    assert {d["kind"] for d in _docs(rendered, "endpoint-picker.yaml")}.isdisjoint(
        {"ClusterRole", "ClusterRoleBinding"}
    )
    binding = _picker(rendered, "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"] == binding["subjects"][0]["name"] == "demo-epp"


def test_the_picker_flags_follow_its_source_and_a_namespace_overlay(render):
    deployment = _picker(render(_profile()), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    args = container["args"]
    assert args[:6] == [
        "--pool-name",
        "demo",
        "--pool-group",
        "inference.networking.k8s.io",
        "--config-file",
        "/config/endpoint-picker.yaml",
    ]
    assert "--metrics-endpoint-auth=false" in args and "--enable-pprof=false" in args
    assert not any(a.startswith("--pool-namespace") for a in args)  # NAMESPACE from the pod follows an overlay
    assert {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in container["env"]
    assert "--ha-enable-leader-election" not in args
    assert container["readinessProbe"]["grpc"] == {"port": 9003, "service": "inference-extension"}
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "grpc": 9002,
        "grpc-health": 9003,
        "metrics": 9090,
    }


def test_more_replicas_elect_a_leader_with_its_own_rbac_and_probes(render):
    rendered = render(_profile(**{"gateway.endpointPicker.replicas": 2}))
    deployment = _picker(rendered, "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert deployment["spec"]["replicas"] == 2 and "--ha-enable-leader-election" in container["args"]
    assert container["livenessProbe"]["grpc"]["service"] == "liveness"
    assert container["readinessProbe"]["grpc"]["service"] == "readiness"
    resources = {r for rule in _picker(rendered, "Role")["rules"] for r in rule["resources"]}
    assert {"leases", "events"} <= resources


def test_the_picker_pod_is_locked_down_and_off_the_gpu_nodes(render):
    profile = _profile(
        security={"allowHostNetwork": True, "runAsUser": 1000},
        node={"gpus": 8, "nodeSelector": {"pool": "gpu"}},
        scheduling={"priorityClassName": "gpu-high"},
    )
    pod = _picker(render(profile), "Deployment")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 65532
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["capabilities"] == {"drop": ["ALL"]}
    assert security["allowPrivilegeEscalation"] is False
    for gpu_only in ("hostNetwork", "nodeSelector", "tolerations", "priorityClassName", "affinity", "schedulerName"):
        assert gpu_only not in pod
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    assert container["resources"] == {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"memory": "8Gi"}}


def test_the_picker_config_is_the_engines_metrics_and_the_profiles_weights(render):
    config = _picker_config(render(_profile(**{"gateway.endpointPicker.scorers": {"queue": 5, "prefixCache": 0}})))
    assert config["apiVersion"] == "llm-d.ai/v1alpha1" and config["kind"] == "EndpointPickerConfig"
    [profile] = config["schedulingProfiles"]
    assert profile["plugins"] == [
        {"pluginRef": "queue-scorer", "weight": 5},
        {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
        {"pluginRef": "max-score-picker"},
    ]
    assert "prefix-cache-scorer" not in {p["type"] for p in config["plugins"]}
    extractor = next(p for p in config["plugins"] if p["type"] == "core-metrics-extractor")["parameters"]
    assert extractor["defaultEngine"] == "vllm"
    assert extractor["engineConfigs"] == [
        {
            "name": "vllm",
            "queuedRequestsSpec": "vllm:num_requests_waiting",
            "runningRequestsSpec": "vllm:num_requests_running",
            "kvUsageSpec": "vllm:kv_cache_usage_perc",
            "loraSpec": "vllm:lora_requests_info",
            "cacheInfoSpec": "vllm:cache_config_info",
            "cacheBlockSizeSpec": "",
            "cacheNumBlocksSpec": "",
        }
    ]
    assert "requestHandler" not in config  # vLLM's API is the picker's default parsers'


def test_triton_is_routed_without_reading_the_body_and_llamacpp_without_kv_cache(render):
    triton = _picker_config(render(_profile("triton-trtllm")))
    types = [p["type"] for p in triton["plugins"]]
    assert "passthrough-parser" in types and "prefix-cache-scorer" not in types
    assert triton["requestHandler"] == {"parsers": [{"pluginRef": "passthrough-parser"}]}
    engine = next(p for p in triton["plugins"] if p["type"] == "core-metrics-extractor")["parameters"]["engineConfigs"][
        0
    ]
    assert engine["cacheNumBlocksSpec"] == "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=max}"
    llamacpp = _picker_config(render(_profile("llamacpp")))
    assert [p["pluginRef"] for p in llamacpp["schedulingProfiles"][0]["plugins"]] == [
        "queue-scorer",
        "prefix-cache-scorer",
        "max-score-picker",
    ]


def test_router_kv_cache_scaling_is_refused_where_the_engine_reports_none(said):
    errors, _ = said(_profile("llamacpp", autoscaling={"enabled": True, "metric": "router-kv-cache-usage"}))
    assert any(e.startswith("autoscaling.metric: llamacpp exports no KV-cache fraction") for e in errors), errors


@pytest.mark.parametrize(
    "runtime, version, source, kv",
    [
        ("vllm", "0.9.1", {"scheme": "http", "path": "/metrics"}, "vllm:gpu_cache_usage_perc"),
        ("sglang", "0.5.23", {"scheme": "http", "path": "/metrics"}, "sglang:token_usage"),
        ("trtllm-serve", "1.3.0rc0", {"scheme": "http", "path": "/prometheus/metrics"}, "trtllm_kv_cache_utilization"),
        (
            "triton-trtllm",
            "26.07",
            {"scheme": "http", "path": "/metrics", "port": 8002},
            "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=fraction}",
        ),
        ("llamacpp", "b10470", {"scheme": "http", "path": "/metrics"}, ""),
    ],
)
def test_the_picker_reads_each_engine_where_and_as_that_version_exports(render, runtime, version, source, kv):
    config = _picker_config(render(_profile(runtime, runtimeVersion=version)))
    plugins = {p["type"]: p.get("parameters") for p in config["plugins"]}
    assert plugins["metrics-data-source"] == source
    assert plugins["core-metrics-extractor"]["engineConfigs"][0]["kvUsageSpec"] == kv


def test_a_broken_picker_config_is_caught(render):
    rendered = render(_profile())
    config_map = _picker(rendered, "ConfigMap")
    [key] = config_map["data"]
    config = fastyaml.load(config_map["data"][key])
    config["plugins"][0]["weight"] = 2  # weights belong to the scheduling profile: a strict decode refuses it
    config["schedulingProfiles"][0]["plugins"].append({"pluginRef": "random-picker"})
    config_map["data"][key] = fastyaml.dump(config)
    docs = [config_map if d["kind"] == "ConfigMap" else d for d in _docs(rendered, "endpoint-picker.yaml")]
    messages = [m for f, _, m in _cross(rendered, **{"endpoint-picker.yaml": tuple(docs)})]
    assert any("plugins.0: Additional properties are not allowed ('weight' was unexpected)" in m for m in messages)
    assert any("pluginRef 'random-picker' names no plugin of this config" in m for m in messages)


def test_network_policies_admit_the_gateway_and_the_picker_only(render):
    rendered = render(_profile())
    [policy] = _docs(rendered, "networkpolicy.yaml")
    rules = policy["spec"]["ingress"]
    assert all(rule.get("from") for rule in rules)  # nothing from anywhere
    by_peer = {fastyaml.dump(rule["from"]): [p["port"] for p in rule.get("ports", [])] for rule in rules}
    gateway = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateways"}}}]
    picker = [
        {
            "podSelector": {
                "matchLabels": {"app.kubernetes.io/instance": "demo", "app.kubernetes.io/component": "endpoint-picker"}
            }
        }
    ]
    assert by_peer[fastyaml.dump(gateway)] == ["http"]
    assert by_peer[fastyaml.dump(picker)] == ["http"]
    epp = _picker(rendered, "NetworkPolicy")
    assert epp["spec"]["podSelector"]["matchLabels"] == picker[0]["podSelector"]["matchLabels"]
    assert [(r["from"], [p["port"] for p in r["ports"]]) for r in epp["spec"]["ingress"]] == [
        (gateway, [9002]),
        ([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}], [9090]),
    ]


def test_proxy_namespaces_and_allowed_sources_are_kept(render):
    profile = _profile(
        gateway={**GATEWAY, "parentRefs": [{"name": "gw"}], "proxyNamespaces": ["envoy-gateway-system"]},
        service={"allowedSources": ["10.0.0.0/8"]},
    )
    rendered = render(profile)
    [policy] = _docs(rendered, "networkpolicy.yaml")
    peers = [rule["from"] for rule in policy["spec"]["ingress"]]
    assert [{"ipBlock": {"cidr": "10.0.0.0/8"}}] in peers
    assert [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}}}] in peers
    defaulted = render(_profile(gateway={**GATEWAY, "parentRefs": [{"name": "gw"}]}))
    epp = _picker(defaulted, "NetworkPolicy")
    assert epp["spec"]["ingress"][0]["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}}}  # the profile's namespace
    ]


def test_a_service_the_profile_exposes_itself_keeps_its_sources(render):
    [policy] = _docs(
        render(_profile(service={"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]})),
        "networkpolicy.yaml",
    )
    assert any("from" not in rule for rule in policy["spec"]["ingress"])  # the serving port, as without a gateway


def test_proxies_outside_the_cluster_are_admitted_by_address(render):
    rendered = render(_profile(gateway={**GATEWAY, "proxyCIDRs": ["35.191.0.0/16"]}))
    for policy in (_docs(rendered, "networkpolicy.yaml")[0], _picker(rendered, "NetworkPolicy")):
        peers = [rule["from"] for rule in policy["spec"]["ingress"]]
        assert [
            {"ipBlock": {"cidr": "35.191.0.0/16"}},
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateways"}}},
        ] in peers


def test_triton_lets_the_picker_reach_its_metrics_port(render):
    [policy] = _docs(render(_profile("triton-trtllm")), "networkpolicy.yaml")
    picker = [
        r
        for r in policy["spec"]["ingress"]
        if "podSelector" in r["from"][0] and "app.kubernetes.io/component" in r["from"][0]["podSelector"]["matchLabels"]
    ]
    assert [p["port"] for p in picker[0]["ports"]] == ["http", "metrics"]


def test_sync_waves_put_the_pool_after_the_lws_and_the_route_after_the_pool(render):
    rendered = render(_profile(**{"gitops.argocd.syncWaves": True}))

    def wave(name, kind=None):
        docs = [d for d in _docs(rendered, name) if kind is None or d["kind"] == kind]
        return int(docs[0]["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])

    assert wave("leaderworkerset.yaml") < wave("inferencepool.yaml") < wave("httproute.yaml")
    assert wave("endpoint-picker.yaml", "Deployment") == wave("inferencepool.yaml")


@pytest.mark.parametrize(
    "changes, path, code",
    [
        ({"gateway": {"enabled": True}}, "gateway.enabled", "missing-field"),
        ({"monitoring": {"enabled": False}}, "gateway.enabled", "needs-monitoring"),
        (
            {
                "runtimeVersion": "1.2.1",
                "runtime": "trtllm-serve",
                "image": "nvcr.io/nvidia/tensorrt-llm/release:1.2.1",
            },
            "gateway.enabled",
            "not-supported",
        ),
        (
            {"gateway.endpointPicker.image": "ghcr.io/llm-d/llm-d-router-endpoint-picker:latest"},
            "gateway.endpointPicker.image",
            "bad-image",
        ),
    ],
)
def test_what_a_gateway_cannot_work_with_is_refused(said, changes, path, code):
    profile = _profile(**changes)
    if "runtime" in changes:
        profile["runtimeVersion"] = changes["runtimeVersion"]
    errors, _ = said(profile)
    assert any(e.startswith(f"{path}: ") for e in errors), errors


def test_llamacpp_api_key_behind_a_gateway_is_refused(said):
    errors, _ = said(_profile("llamacpp", service={"apiKeySecret": {"name": "key", "key": "k"}}))
    assert any("service.apiKeySecret: llamacpp guards /metrics with the API key" in e for e in errors), errors


def test_router_metrics_need_the_gateway(said):
    profile = _profile(autoscaling={"enabled": True, "metric": "router-queue-size"})
    assert said(profile)[0] == []
    del profile["gateway"]
    errors, _ = said(profile)
    assert any("autoscaling.metric: vllm cannot produce router-queue-size" in e for e in errors), errors


@pytest.mark.parametrize("engine", ["hpa", "keda"])
def test_autoscaling_on_the_routers_queue_reads_the_pool_record(render, engine):
    scaling = {"enabled": True, "engine": engine, "metric": "router-queue-size", "target": 4}
    rendered = render(_profile(autoscaling=scaling))
    [rule] = _docs(rendered, "prometheusrule.yaml")
    router = next(g for g in rule["spec"]["groups"] if g["name"] == "lwsgen.default.demo.router")
    records = [r["record"] for r in router["rules"]]
    assert records == [
        "namespace_pod:llm_d_epp_average_queue_size:pool",
        "namespace_pod:llm_d_epp_average_kv_cache_utilization:pool",
    ]
    assert 'llm_d_epp_average_queue_size{namespace="default", name="demo"}' in router["rules"][0]["expr"]
    if engine == "hpa":
        hpa = fastyaml.load(rendered.files["horizontalpodautoscaler.yaml"])
        assert hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] == "llm_d_epp_average_queue_size_pool"
    else:
        scaled = fastyaml.load(rendered.files["scaledobject.yaml"])
        assert "namespace_pod:llm_d_epp_average_queue_size:pool{" in scaled["spec"]["triggers"][0]["metadata"]["query"]


def test_the_picker_restarts_when_its_config_changes(render):
    def digest(rendered):
        return _picker(rendered, "Deployment")["spec"]["template"]["metadata"]["annotations"][
            "lwsgen/endpoint-picker-config-sha256"
        ]

    assert digest(render(_profile())) == digest(render(_profile()))
    assert digest(render(_profile())) != digest(render(_profile(**{"gateway.endpointPicker.scorers.queue": 1})))


def test_stdout_streams_the_gateway_objects(capsys):
    assert main(["render", str(PROFILES / "vllm-llama31-405b.yaml"), "--stdout"]) == 0
    kinds = {d["kind"] for d in fastyaml.load_all(capsys.readouterr().out) if d}
    assert {"InferencePool", "HTTPRoute", "Deployment", "LeaderWorkerSet"} <= kinds


def test_explain_shows_the_path_from_the_client_to_a_leader(capsys):
    assert main(["explain", str(PROFILES / "vllm-llama31-405b.yaml")]) == 0
    out = capsys.readouterr().out
    steps = [
        "├─ client",
        "├─ Gateway gateways/inference-gateway",
        "├─ HTTPRoute vllm-llama31-405b: llama-405b.example.com, PathPrefix /, timeout 600s",
        "├─ InferencePool vllm-llama31-405b: pods leaderworkerset.sigs.k8s.io/name=vllm-llama31-405b, "
        "leaderworkerset.sigs.k8s.io/worker-index=0, port 8080",
        "├─ endpoint picker Service vllm-llama31-405b-epp:9002 (1 replica, FailClose) picks one pod per request",
        "└─ a leader (it serves its group)",
    ]
    positions = [out.index(step) for step in steps]
    assert positions == sorted(positions)
    assert main(["explain", str(PROFILES / "vllm-llama31-405b.yaml"), "--format", "mermaid"]) == 0
    assert "pool -->|the picked leader| p0" in capsys.readouterr().out


def test_the_example_is_two_groups_behind_a_gateway():
    rendered = render_profile(PROFILES / "vllm-llama31-405b.yaml")
    hpa = fastyaml.load(rendered.files["horizontalpodautoscaler.yaml"])
    assert hpa["spec"]["minReplicas"] == 2
    assert {"inferencepool.yaml", "endpoint-picker.yaml", "httproute.yaml"} <= set(rendered.files)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"gateway.proxyCIDRs": ["10.0.0.0/33"]}, "gateway.proxyCIDRs[0]: '10.0.0.0/33' is not a CIDR"),
        ({"service.allowedSources": ["999.1.1.1/8"]}, "service.allowedSources[0]: '999.1.1.1/8' is not a CIDR"),
        ({"gateway.hostnames": ["10.0.0.1"]}, "gateway.hostnames[0]: '10.0.0.1' is an IP address"),
        ({"gateway.hostnames": ["Llama.Example.com"]}, "is not a host name in lower case"),
        ({"gateway.requestTimeout": "5 minutes"}, "is not a Gateway API duration such as 300s, 10m or 1h30m"),
    ],
)
def test_gateway_values_the_api_server_would_refuse_are_refused_in_words(said, changes, message):
    errors, _ = said(_profile(**changes))
    assert any(message in e for e in errors), errors


def test_a_picker_of_another_release_or_without_scorers_is_warned_about(said):
    image = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"
    _, warnings = said(_profile(**{"gateway.endpointPicker.image": image}))
    assert any("gateway.endpointPicker.image: is llm-d-router 0.9; lwsgen writes" in w for w in warnings), warnings
    _, warnings = said(_profile(**{"gateway.endpointPicker.scorers": {"queue": 0, "kvCache": 0, "prefixCache": 0}}))
    assert any("every weight is 0" in w for w in warnings), warnings
