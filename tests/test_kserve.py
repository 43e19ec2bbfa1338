"""platform: kserve and kserve-isvc (docs/kserve.md): the refusals at the profile line, the objects
as KServe v0.20.0's controller sizes and labels what it makes of them, and the LLMInferenceService's
pods merged under KServe's own data-parallel preset by the strategic merge KServe runs
(kserve/kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/config_merge.go#L779-L827), here
kubectl's, which is the same Go code (k8s.io/apimachinery strategicpatch over core/v1 types)."""

import copy
import json
import math
import shutil
import subprocess

import pytest

import fastyaml
from conftest import MINIMAL, REPO, SHARED, tool
from groupsim.kubeenv import container_env, expand_command
from lwsgen import platforms
from lwsgen.output import kserve, validate
from lwsgen.output.inventory import inventory
from lwsgen.output.parse import parse
from lwsgen.pipeline import render_profile

LLMISVC_EXAMPLE = REPO / "profiles" / "vllm-deepseek-r1-kserve.yaml"
ISVC_EXAMPLE = REPO / "profiles" / "vllm-llama31-405b-kserve-isvc.yaml"
PRESET = SHARED / "reference" / "kserve_llmisvcconfig_kserve-config-llm-worker-data-parallel.yaml"
# What KServe renders the preset's scheme to: TLS is off unless ingress' enableLLMInferenceServiceTLS
# (pkg/controller/v1alpha2/llmisvc/config_loader.go#L95, #L172; not set in config/configmap/inferenceservice.yaml)
PRESET_SCHEME = "{{ if .GlobalConfig.EnableTLS }}HTTPS{{else}}HTTP{{- end }}"


def _profile(**changes) -> dict:
    """MINIMAL on a KServe platform, its weights on a claim (a pvc:// model URI)."""
    data = copy.deepcopy(MINIMAL)
    data.update(
        platform="kserve-isvc",
        image="vllm/vllm-openai:v0.33.0",
        model={"path": "/models/meta-llama/Llama-3.1-8B-Instruct"},
        storage={"claimName": "models", "mountPath": "/models", "readOnly": True},
    )
    data.update(copy.deepcopy(changes))
    return data


def _objects(rendered) -> list[dict]:
    return [o for text in rendered.files.values() for o in fastyaml.load_all(text) if isinstance(o, dict)]


def _one(objects: list[dict], kind: str) -> dict:
    return next(o for o in objects if o.get("kind") == kind)


@pytest.mark.parametrize(
    "changes, at, says",
    [
        (  # kserve/kserve#4946: KServe sizes the group from data or pipeline only
            {"platform": "kserve", "parallelism": {"tensor": 16}},
            "parallelism.tensor",
            "tensor parallelism across nodes alone (16 GPUs over 8-GPU nodes) cannot be expressed on an "
            "LLMInferenceService",
        ),
        (
            {"platform": "kserve", "parallelism": {"tensor": 8, "pipeline": 2, "data": 2}},
            "parallelism.pipeline",
            "KServe's webhook refuses pipeline with data parallelism",
        ),
        (
            {"platform": "kserve", "parallelism": {"tensor": 4, "pipeline": 4}},
            "parallelism.tensor",
            "so tensor must be the node's GPUs (8), not 4",
        ),
        (
            {"model": {"path": "meta-llama/Llama-3.1-405B-Instruct"}, "storage": None},
            "model.path",
            "hf://meta-llama/Llama-3.1-405B-Instruct is not a storageUri it takes",
        ),
        ({"runtime": "sglang", "image": "lmsysorg/sglang:v0.5.23"}, "runtime", "runs vLLM"),
        ({"autoscaling": {"enabled": True}}, "autoscaling.enabled", "'none' autoscaler"),
        ({"service": {"type": "LoadBalancer"}}, "service.type", "KServe creates the Services"),
        ({"replicas": 2}, "replicas", "exactly one head"),
        (  # KServe's mp backend: a worker Deployment's pods have no index for --node-rank
            {"launch": {"mode": "native"}, "parallelism": {"tensor": 8, "pipeline": 3}},
            "launch.mode",
            "the 2 pods of KServe's worker Deployment have no index",
        ),
        (  # ... and gives each pod tensor GPUs (components/predictor.go#L759-L766)
            {"launch": {"mode": "native"}, "parallelism": {"tensor": 4, "pipeline": 4}},
            "parallelism.tensor",
            "KServe's mp backend gives each pod tensor GPUs (4)",
        ),
        ({"parallelism": {"tensor": 8}}, "parallelism", "a one-pod group needs no workerSpec"),
        ({"platform": "kserve", "parallelism": {"tensor": 8}}, "parallelism", "one pod holds this group"),
        ({"parallelism": {"tensor": 1, "data": 16}}, "parallelism.data", "use platform kserve for data"),
        ({"scheduling": {"scheduler": "kueue", "queue": "q"}}, "scheduling.scheduler", "gang scheduling"),
        ({"lws": {"restartPolicy": "None"}}, "lws.restartPolicy", "KServe sets the LeaderWorkerSet's policies"),
        ({"platform": "kserve", "scheduling": {"scheduler": "volcano"}}, "scheduling.scheduler", "not Volcano's"),
        (
            {"platform": "kserve", "env": {"CHAT": "{{ .Name }}"}},
            "env.CHAT",
            "KServe renders the pod spec as a Go template",
        ),
        ({"gateway": {"enabled": True, "parentRefs": [{"name": "g"}]}}, "gateway.enabled", "no inference gateway"),
        # found by an independent review, each against KServe v0.20.0's source (docs/kserve.md)
        ({"node": {"gpus": 8, "efa": 4}}, "node.efa", "counts every resource but cpu, memory and storage"),
        (
            {"model": {"path": "/mnt/models/llama"}, "storage": {"claimName": "m", "mountPath": "/mnt/models"}},
            "storage.mountPath",
            "a pod may not mount two volumes at one path",
        ),
        ({"podLabels": {"app": "mine"}}, "podLabels.app", "KServe sets this pod label itself"),
        (
            {"platform": "kserve", "podLabels": {"kserve.io/component": "x"}},
            'podLabels["kserve.io/component"]',
            "itself",
        ),
        ({"leader": {"podLabels": {"team": "a"}}}, "leader.podLabels", "one set of pod labels and annotations"),
        ({"env": {"PYTHONPATH": "/opt"}}, "env.PYTHONPATH", "refuses PYTHONPATH"),
        ({"name": "a" * 42}, "name", "42 characters is too long on platform kserve-isvc: at most 41"),
        ({"platform": "kserve", "name": "a" * 42}, "name", "too long on platform kserve: at most"),
        (
            {
                "model": {
                    "path": "/models/meta-llama/Llama-3.1-8B-Instruct",
                    "extraArgs": ["--chat-template", "{{ m }}"],
                }
            },
            "model.extraArgs[1]",
            "KServe renders the pod spec as a Go template",
        ),
    ],
)
def test_what_kserve_would_refuse_or_run_otherwise_is_said_at_the_profile_line(said, changes, at, says):
    data = _profile(**changes)
    data = {k: v for k, v in data.items() if v is not None}
    errors, _ = said(data)
    assert any(e.startswith(f"{at}: ") and says in e for e in errors), errors


PD_EXAMPLE = REPO / "profiles" / "vllm-deepseek-r1-pd-kserve.yaml"
PD_PIPELINE = REPO / "tests" / "cases" / "valid" / "kserve-pd-pipeline" / "profile.yaml"


def _pd(**changes) -> dict:
    data = fastyaml.load(PD_EXAMPLE.read_text(encoding="utf-8"))
    data.update(copy.deepcopy(changes))
    return data


@pytest.mark.parametrize(
    "changes, at, says",
    [
        ({"platform": "kserve-isvc"}, "roles", "an InferenceService has one head and its workers"),
        (  # a one-pod role is a Deployment of KServe's single-node presets, not a LeaderWorkerSet
            {"roles": {"prefill": {"parallelism": {"data": 8, "tensor": 1, "expert": True}}, "decode": {}}},
            "roles.prefill.parallelism",
            "one pod holds this group",
        ),
        (
            {"roles": {"encode": {}, "prefill": {}, "decode": {}}},
            "roles.encode",
            "an LLMInferenceService has a prefill and a decode workload",
        ),
        ({"disaggregation": {"slices": 2}}, "disaggregation.slices", "not slices of a DisaggregatedSet"),
        ({"disaggregation": {"sidecarImage": "x/y:1"}}, "disaggregation.sidecarImage", "decode preset brings"),
        (  # the webhook's rule, for spec.prefill too: said where KServe says it
            {"roles": {"prefill": {"parallelism": {"tensor": 16}}, "decode": {}}},
            "roles.prefill.parallelism.tensor",
            "tensor parallelism across nodes alone",
        ),
        ({"roles": {"prefill": {"autoscaling": {"enabled": True}}, "decode": {}}}, "roles.prefill.autoscaling.enabled",
         "scales through its own spec.scaling"),
        ({"gateway": {"enabled": False}}, "gateway.enabled", "enable it"),
        ({"name": "x" * 40}, "name", "the LeaderWorkerSet <name>-kserve-mn-prefill KServe makes"),
    ],
)  # fmt: skip
def test_what_kserve_cannot_run_of_roles_is_said_at_the_profile_line(said, changes, at, says):
    errors, _ = said(_pd(**changes))
    assert any(e.startswith(f"{at}: ") and says in e for e in errors), errors


def _main(pod: dict) -> dict:
    return next(c for c in pod["containers"] if c["name"] == "main")


def _flag(container: dict, flag: str) -> str:
    args = container["args"]
    return args[args.index(flag) + 1]


def _init_names(pod: dict) -> list[str]:
    return [c["name"] for c in pod.get("initContainers") or []]


def test_roles_on_kserve_are_the_service_and_its_prefill():
    """decode is the service's own workload, prefill spec.prefill (KServe's P/D sample's shape): each
    role's engine with NIXL's KV transfer, prefill on the pool's port, decode on 8001 behind the routing
    sidecar KServe's decode data-parallel preset adds (lwsgen's own would take the same port)."""
    rendered = render_profile(PD_EXAMPLE)
    objects = _objects(rendered)
    service = _one(objects, "LLMInferenceService")
    spec = service["spec"]
    for workload in (spec, spec["prefill"]):
        said = workload["parallelism"]
        assert said == {"tensor": 1, "data": 16, "dataLocal": 8, "dataRPCPort": 29550, "expert": True}
        for side in ("template", "worker"):
            assert "NixlConnector" in _flag(_main(workload[side]), "--kv-transfer-config")
    assert _flag(_main(spec["template"]), "--port") == str(platforms.LLMISVC_DECODE_ENGINE_PORT)
    assert _flag(_main(spec["prefill"]["template"]), "--port") == str(platforms.LLMISVC_PORT)
    assert "routing-sidecar" not in _init_names(spec["template"])  # KServe's preset brings it
    # ... and it reads the InferencePool through the API, with the account KServe gives the leader
    assert spec["template"]["automountServiceAccountToken"] is True and "serviceAccountName" not in spec["template"]
    assert spec["prefill"]["template"]["automountServiceAccountToken"] is False  # no API reader there
    assert not [o for o in objects if o.get("kind") == "LLMInferenceServiceConfig"]  # both presets ship
    sets = kserve.workloads([service])[0]
    name = rendered.profile.name
    assert set(sets) == {f"{name}-kserve-mn", f"{name}-kserve-mn-prefill"}
    for lws_name, role in ((f"{name}-kserve-mn", "decode"), (f"{name}-kserve-mn-prefill", "prefill")):
        template = sets[lws_name]["spec"]["leaderWorkerTemplate"]
        assert template["size"] == 2
        assert template["leaderTemplate"]["metadata"]["labels"]["llm-d.ai/role"] == role
        # a data-parallel prefill group is one subgroup (workload_multi_node.go#L376-L381); decode is not
        assert template.get("subGroupPolicy") == ({"subGroupSize": 2} if role == "prefill" else None)


def test_pipeline_roles_on_kserve_get_the_presets_kserve_lacks_and_lwsgens_sidecar():
    objects = _objects(render_profile(PD_PIPELINE))
    presets = {o["metadata"]["name"] for o in objects if o.get("kind") == "LLMInferenceServiceConfig"}
    assert presets == set(platforms.PD_PIPELINE_PRESETS.values())
    spec = _one(objects, "LLMInferenceService")["spec"]
    assert spec["prefill"]["replicas"] == 2 and spec["replicas"] == 1
    [sidecar] = [c for c in spec["template"]["initContainers"] if c["name"] == "routing-sidecar"]
    assert "--port=8000" in sidecar["args"] and "--model-server-port=8001" in sidecar["args"]
    assert _flag(_main(spec["template"]), "--port") == "8001"
    assert _flag(_main(spec["prefill"]["template"]), "--port") == "8000"
    assert "routing-sidecar" not in _init_names(spec["prefill"]["template"])


def test_pipeline_decode_takes_the_sidecar_image_it_runs(render):
    """lwsgen's own routing sidecar (a pipeline-parallel decode role's) comes from a mirror where the
    profile says so; a data-parallel decode role runs KServe's, so the field is refused there."""
    data = fastyaml.load(PD_PIPELINE.read_text(encoding="utf-8"))
    data["disaggregation"] = {"sidecarImage": "mirror.example.com/llm-d/disagg-sidecar:v0.10.0"}
    spec = _one(_objects(render(data)), "LLMInferenceService")["spec"]
    [sidecar] = [c for c in spec["template"]["initContainers"] if c["name"] == "routing-sidecar"]
    assert sidecar["image"] == "mirror.example.com/llm-d/disagg-sidecar:v0.10.0"


@pytest.mark.parametrize("path", [PD_EXAMPLE, PD_PIPELINE, None])
def test_the_gateways_proxies_are_the_only_source_of_the_pools_port(render, path):
    """With no gateway.parentRefs KServe attaches its route to its default Gateway, kserve/kserve-ingress-gateway
    (inferenceservice-config): the serving port is open to that namespace, never to every source."""
    data = fastyaml.load(path.read_text(encoding="utf-8")) if path else _profile(platform="kserve")
    if path is None:
        data["parallelism"] = {"tensor": 8, "pipeline": 2}
        data["node"] = {"gpus": 8}
    data["gateway"] = {"enabled": True}
    policies = [o["spec"] for o in _objects(render(data)) if o.get("kind") == "NetworkPolicy"]
    assert policies
    for policy in policies:
        assert all(rule.get("from") for rule in policy["ingress"]), policy["ingress"]
        namespaces = [
            f["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
            for rule in policy["ingress"]
            for f in rule["from"]
            if "namespaceSelector" in f
        ]
        assert "kserve" in namespaces


def test_each_roles_pods_let_in_the_other_roles_and_the_picker():
    """NIXL's side channel and transfers, and the decode sidecar's prefill request, go between the two
    LeaderWorkerSets KServe makes; the pool's port is open to KServe's picker and the Gateway."""
    rendered = render_profile(PD_EXAMPLE)
    name = rendered.profile.name
    policies = {o["metadata"]["name"]: o["spec"] for o in _objects(rendered) if o.get("kind") == "NetworkPolicy"}
    for role, other in (("prefill", "decode"), ("decode", "prefill")):
        policy = policies[f"{name}-{role}"]
        own = {"leaderworkerset.sigs.k8s.io/name": platforms.llmisvc_lws(name, role)}
        assert policy["podSelector"]["matchLabels"] == own
        peers = [p.get("podSelector", {}).get("matchLabels") for r in policy["ingress"] for p in r.get("from", [])]
        assert {"leaderworkerset.sigs.k8s.io/name": platforms.llmisvc_lws(name, other)} in peers
        picker = next(
            r
            for r in policy["ingress"]
            if platforms.llmisvc_scheduler_labels(name)
            in [p.get("podSelector", {}).get("matchLabels") for p in r["from"]]
        )
        assert picker["ports"][0]["port"] == (platforms.LLMISVC_PORT if role == "decode" else "http")


S3_CASE = REPO / "tests" / "cases" / "valid" / "kserve-s3-model" / "profile.yaml"


@pytest.mark.parametrize(
    "uri, with_roles",
    [
        ("s3://models/meta-llama/Llama-3.1-405B-Instruct/", False),
        ("s3://models/meta-llama/Llama-3.1-405B-Instruct/", True),
        ("oci://registry.example.com/models/llama-3.1-405b-instruct:1", False),
    ],
)
def test_a_model_only_kserve_can_bring_is_its_to_deliver(render, said, uri, with_roles):
    """s3:// weights: KServe's storage initializer puts them in /mnt/models of container main of every
    pod (workload_storage.go#L131-L202, #L404-L457); the engine reads them there and serves under KServe's
    default model name, the service's (llm_inference_service_defaults.go#L31-L34), with roles too."""
    from lwsgen.commands import explain

    data = fastyaml.load(S3_CASE.read_text(encoding="utf-8"))
    data["model"]["path"] = uri
    modelcar = uri.startswith("oci://")
    if with_roles:
        data.update(roles={"prefill": {}, "decode": {}}, gateway={"enabled": True})
    rendered = render(data)
    spec = _one(_objects(rendered), "LLMInferenceService")["spec"]
    assert spec["model"] == {"uri": data["model"]["path"], "name": data["name"]}
    assert spec["storageInitializer"] == {"enabled": True}
    for workload in (spec, spec["prefill"]) if with_roles else (spec,):
        for side in ("template", "worker"):
            args = _main(workload[side])["args"]
            assert args[args.index("serve") + 1] == platforms.KSERVE_MODEL_DIR
            assert "model" not in [v["name"] for v in workload[side].get("volumes", [])]
            # under KServe's modelcar the engine waits for /mnt/models to be linked, with a HOME uid 1010 can write
            main = _main(workload[side])
            assert (main["command"][:2] == ["/bin/bash", "/lwsgen/scripts/await-modelcar.sh"]) == modelcar
            env = {e["name"]: e.get("value") for e in main["env"]}
            assert (env.get("HOME"), env.get("LWSGEN_MODEL_LINK")) == (
                ("/tmp", "/mnt/models") if modelcar else (None, None)
            )
        assert _flag(_main(workload["template"]), "--served-model-name") == data["name"]
    scripts = next(o for o in _objects(rendered) if o.get("kind") == "ConfigMap")["data"]
    assert ("await-modelcar.sh" in scripts) == modelcar
    assert f"clients request model '{data['name']}'" in explain.text(rendered)
    # where KServe mounts the model (s3) or the modelcar's link directory (oci)
    data["storage"] = {"claimName": "models", "mountPath": "/mnt" if modelcar else "/mnt/models"}
    errors, _ = said(data)
    assert any(e.startswith("storage.mountPath: KServe mounts its own volume at") for e in errors), errors
    del data["storage"]
    data["platform"] = "kserve-isvc"
    data.pop("roles", None)
    errors, _ = said(data)
    assert any(e.startswith("model.path: lwsgen writes an s3:// or oci:// model") for e in errors), errors


def test_the_engine_waits_for_the_modelcars_link_then_runs_and_gives_up_when_it_never_comes(tmp_path):
    """await-modelcar.sh: the launch runs once the linked directory lists files (the modelcar's process
    runs), and exits 1 saying where to look when it does not within its bound (its own clock)."""
    script = REPO / "templates" / "scripts" / "await-modelcar.sh"
    link, image = tmp_path / "models", tmp_path / "image"
    env = {"PATH": "/usr/bin:/bin", "LWSGEN_MODEL_LINK": str(link), "LWSGEN_MODEL_LINK_SECONDS": "30"}
    image.mkdir()
    (image / "config.json").write_text("{}", encoding="utf-8")
    waiting = subprocess.Popen(
        ["bash", str(script), "bash", "-c", "echo engine started with $LWSGEN_MODEL_LINK"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    link.symlink_to(image)  # what the modelcar does once it runs
    out, _ = waiting.communicate(timeout=60)
    assert waiting.returncode == 0 and out.strip() == f"engine started with {link}"
    link.unlink()
    link.symlink_to(tmp_path / "gone")  # a link whose target no process provides
    given_up = subprocess.run(
        ["bash", str(script), "true"],
        env={**env, "LWSGEN_MODEL_LINK_SECONDS": "2"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert given_up.returncode == 1 and "holds no model after 2 s" in given_up.stdout


def test_a_group_whose_model_kserve_fetches_has_the_time_to_fetch_it():
    """KServe's storage initializer brings the whole model to every pod before the engine starts: the
    group's start budget (and so the alert that a group is not whole) counts that fetch."""
    from lwsgen.check import budget
    from lwsgen.commands import explain

    rendered = render_profile(S3_CASE)
    plan = budget.budget(rendered.profile)
    assert plan.fetch is not None and plan.total == plan.fetch + plan.rendezvous + plan.load
    assert plan.fetch >= 2 * plan.size_gb / budget.HUB_GBPS  # the whole model, with the margin
    assert "fetch (each pod, KServe's storage initializer or modelcar" in explain.text(rendered)
    assert budget.budget(render_profile(LLMISVC_EXAMPLE).profile).fetch is None  # the claim: lwsgen's pods


def test_the_same_layout_renders_on_each_platform(render):
    """A profile that works on LeaderWorkerSet renders on both KServe platforms, and nothing else in it
    changes meaning: the same engine command line, GPUs per pod and pods per group."""
    outputs = {p: _objects(render(_profile(platform=p))) for p in ("lws", "kserve", "kserve-isvc")}
    lws = _one(outputs["lws"], "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    leader_args = lws["leaderTemplate"]["spec"]["containers"][0]["args"]
    llmisvc = _one(outputs["kserve"], "LLMInferenceService")["spec"]
    kserve_args = llmisvc["template"]["containers"][0]["args"]
    assert kserve_args == [a if a != "8080" else "8000" for a in leader_args]  # KServe's port: platforms.py
    runtime = _one(outputs["kserve-isvc"], "ServingRuntime")["spec"]
    assert "ray" in runtime["containers"][0]["args"]  # the InferenceService's group forms over Ray
    gpus = {
        "lws": lws["leaderTemplate"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        "kserve": llmisvc["worker"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        "kserve-isvc": runtime["workerSpec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
    }
    assert set(gpus.values()) == {"8"}
    kinds = {o.get("kind") for p in ("kserve", "kserve-isvc") for o in outputs[p]}
    assert "LeaderWorkerSet" not in kinds and "Service" not in kinds  # KServe makes them


def test_kserve_sizes_the_examples_groups_as_lwsgen_does():
    """The LeaderWorkerSet size KServe computes (v1alpha2/llm_inference_service_types_func.go#L102-L117)
    and the Ray node count it computes for the InferenceService (components/predictor.go#L679-L758),
    from the objects as rendered, are the profile's group size."""
    rendered = render_profile(LLMISVC_EXAMPLE)
    files = {name: parse(text) for name, text in rendered.files.items()}
    kserve_lws = inventory(files).lws[platforms.llmisvc_lws(rendered.profile.name)]
    assert kserve_lws["spec"]["leaderWorkerTemplate"]["size"] == rendered.profile.group_size == 2
    isvc = render_profile(ISVC_EXAMPLE)
    runtime = _one(_objects(isvc), "ServingRuntime")["spec"]["workerSpec"]
    per_node = int(runtime["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
    nodes = math.ceil(runtime["tensorParallelSize"] * runtime["pipelineParallelSize"] / per_node)
    assert nodes == isvc.profile.group_size == 2


def test_launch_native_on_an_isvc_is_kserves_mp_backend_with_its_service_names(render):
    """launch.mode native: the runtime asks for KServe's mp backend, which gives each pod tensor GPUs
    and sizes the group as pipeline pods (components/predictor.go#L759-L766), and vLLM's own launch
    gets from the kubelet's expansion of the labels KServe puts on its pods the names of the headless
    Services KServe makes, <name>-head-<generation> and <name>-workers-<generation>
    (constants.go#L765-L774): the rank, the size and the master address each pod runs with."""
    objects = _objects(render(_profile(launch={"mode": "native"})))
    runtime = _one(objects, "ServingRuntime")
    assert runtime["spec"]["annotations"] == {"multinode/executor-backend": "mp"}
    sizes = runtime["spec"]["workerSpec"]
    deployments = kserve.isvc_deployments([_one(objects, "InferenceService")], [runtime])
    runs = []
    for deployment in deployments:
        template = deployment["spec"]["template"]
        labels = {**template["metadata"]["labels"], "isvc.generation": "3"}  # KServe's, on its pods
        pod = {"metadata": {"namespace": "team", "labels": labels}, "spec": template["spec"]}
        container = template["spec"]["containers"][0]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == str(sizes["tensorParallelSize"])
        env = container_env(
            container, pod, prepend=[], field_values={"status.podIP": "10.0.0.9"}, secret_values={},
            config_map_values={},
        )  # fmt: skip
        args = expand_command(container["args"], env)
        runs.append((dict(zip(args, args[1:], strict=False)), "--headless" in args, dict(env)))
    (head, head_headless, head_env), (worker, worker_headless, _) = runs
    assert head["--nnodes"] == worker["--nnodes"] == str(sizes["pipelineParallelSize"])
    assert (head["--node-rank"], worker["--node-rank"]) == ("0", "1")
    assert head["--master-addr"] == worker["--master-addr"] == "demo-head-3.team.svc"
    assert head_env["LWSGEN_WORKER_ADDRESS"] == "demo-workers-3.team.svc"  # the head's wait
    assert (head_headless, worker_headless) == (False, True)
    assert "ray" not in runtime["spec"]["containers"][0]["args"]


def test_the_isvc_says_what_kserve_would_otherwise_skip_or_refuse():
    service = _one(_objects(render_profile(ISVC_EXAMPLE)), "InferenceService")
    annotations = service["metadata"]["annotations"]
    assert annotations["serving.kserve.io/deploymentMode"] == "Standard"  # else Serverless drops the worker
    assert annotations["serving.kserve.io/autoscalerClass"] == "none"
    assert service["spec"]["predictor"]["model"]["storageUri"] == "pvc://models/meta-llama/Llama-3.1-405B-Instruct"


def test_monitors_and_policies_select_the_pods_kserve_makes():
    """By the labels KServe's controller (and LWS's, on the LeaderWorkerSet KServe makes) puts on them."""
    llm = _objects(render_profile(LLMISVC_EXAMPLE))
    selector = _one(llm, "PodMonitor")["spec"]["selector"]["matchLabels"]
    assert selector["leaderworkerset.sigs.k8s.io/name"] == "vllm-deepseek-r1-kserve-kserve-mn"
    policy = _one(llm, "NetworkPolicy")["spec"]
    peers = [p.get("podSelector", {}).get("matchLabels") for rule in policy["ingress"] for p in rule.get("from", [])]
    assert platforms.llmisvc_scheduler_labels("vllm-deepseek-r1-kserve") in peers  # KServe's endpoint picker
    isvc = _objects(render_profile(ISVC_EXAMPLE))
    selector = _one(isvc, "PodMonitor")["spec"]["selector"]["matchLabels"]
    assert selector == {
        "serving.kserve.io/inferenceservice": "vllm-llama31-405b-kserve-isvc",
        "app": ("isvc.vllm-llama31-405b-kserve-isvc-predictor"),
    }


def test_a_monitor_of_other_pods_is_caught_in_a_kserve_set():
    """The set rules read the LeaderWorkerSet KServe will make: a monitor of the profile's own name
    (what an LWS output would select) selects nothing there."""
    rendered = render_profile(LLMISVC_EXAMPLE)
    files = {name: parse(text) for name, text in rendered.files.items()}
    from lwsgen.output.relations import cross_object_errors

    assert list(cross_object_errors(files)) == []
    monitor = next(o for o in files["podmonitor.yaml"] if o["kind"] == "PodMonitor")
    monitor["spec"]["selector"]["matchLabels"]["leaderworkerset.sigs.k8s.io/name"] = rendered.profile.name
    assert [f for _, _, f in cross_object_errors(files)], "a monitor of no KServe pod passed"


@pytest.mark.tools
def test_the_pods_survive_kserves_merge_with_its_data_parallel_preset(tmp_path):
    """KServe merges its preset under the service's template (config_merge.go#L211-L291). What the
    preset sets and lwsgen's pod would not say survives the merge: the merged pod must still be
    lwsgen's engine, a valid pod, with no probe handler, user or capability the preset adds."""
    preset = PRESET.read_text(encoding="utf-8").replace(PRESET_SCHEME, "HTTP")
    base = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "leader"}}
    base["spec"] = fastyaml.load(preset)["spec"]["template"]
    service = _one(_objects(render_profile(LLMISVC_EXAMPLE)), "LLMInferenceService")["spec"]
    (tmp_path / "base.json").write_text(json.dumps(base), encoding="utf-8")
    (tmp_path / "ours.json").write_text(json.dumps({"spec": service["template"]}), encoding="utf-8")
    merged = subprocess.run(
        [tool("kubectl"), "patch", "--local", "-f", str(tmp_path / "base.json"), "--type", "strategic"]
        + ["--patch-file", str(tmp_path / "ours.json"), "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    pod = json.loads(merged.stdout)
    main = pod["spec"]["containers"][0]
    ours = service["template"]["containers"][0]
    assert (main["command"], main["args"]) == (ours["command"], ours["args"])  # not the preset's vllm serve
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert set(main[probe]) & {"httpGet", "exec", "tcpSocket", "grpc"} == {"httpGet"}, probe
        assert main[probe]["httpGet"]["port"] == "http" and main[probe]["httpGet"]["scheme"] == "HTTP", probe
    assert main["securityContext"]["runAsNonRoot"] is False  # the vLLM image runs as root
    assert main["securityContext"]["capabilities"].get("add") == ours["securityContext"]["capabilities"]["add"]
    shm = next(v for v in pod["spec"]["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["sizeLimit"] == "64Gi"  # the profile's node.shmSize, not the preset's 8Gi
    pod["spec"]["volumes"] = [v for v in pod["spec"]["volumes"] if "secret" not in v]  # KServe's TLS secret
    pod["spec"]["containers"][0]["volumeMounts"] = [
        m for m in main["volumeMounts"] if m["mountPath"] != "/var/run/kserve/tls"
    ]
    assert list(validate.schema_errors(pod, "1.33")) == []


@pytest.mark.parametrize(
    "example, edit, says",
    [
        (
            "vllm-llama31-405b-kserve-isvc",
            ("    serving.kserve.io/autoscalerClass: none\n", ""),
            "metadata.annotations: Multinode only supports 'none' autoscaler",
        ),
        (
            "vllm-llama31-405b-kserve-isvc",
            ("    serving.kserve.io/deploymentMode: Standard\n", ""),
            "the controller drops the worker",
        ),
        (
            "vllm-llama31-405b-kserve-isvc",
            ("storageUri: pvc://", "storageUri: hf://"),
            "Multinode only supports 'pvc' and 'oci' Storage Protocol",
        ),
        (
            "vllm-llama31-405b-kserve-isvc",
            ("  - name: worker-container", "  - name: worker"),
            "failed to find worker-container in ServingRuntime containers",
        ),
        (
            "vllm-llama31-405b-kserve-isvc",
            ("    - name: LWSGEN_RAY_PORT\n", "    - name: TENSOR_PARALLEL_SIZE\n"),
            "TENSOR_PARALLEL_SIZE must not be set as env",
        ),
        (
            "vllm-deepseek-r1-kserve",
            ("    dataLocal: 8\n", "    pipeline: 2\n"),
            "cannot set both pipeline parallelism and data parallelism",
        ),
        (  # lwsgen's own: the sizes KServe reads and the engine's flags say one shape
            "vllm-deepseek-r1-kserve",
            ("    dataLocal: 8\n", "    dataLocal: 4\n"),
            "parallelism says data-parallel-size-local 4, the engine's --data-parallel-size-local 8",
        ),
        (
            "vllm-llama31-405b-kserve-isvc",
            ("    pipelineParallelSize: 2\n", "    pipelineParallelSize: 3\n"),
            "workerSpec says pipeline-parallel-size 3, the engine's --pipeline-parallel-size 2",
        ),
        (  # KServe's preset would run its own engine beside lwsgen's
            "vllm-deepseek-r1-kserve",
            ("    - name: main\n", "    - name: engine\n"),
            "no container named main",
        ),
        (  # spec.prefill is held to the webhook's rules as the service's own workload is
            "vllm-deepseek-r1-pd-kserve",
            ("  prefill:\n    replicas: 1\n    parallelism:\n", "  prefill:\n    parallelism:\n      pipeline: 2\n"),
            "spec.prefill.parallelism.pipeline: cannot set both pipeline parallelism and data parallelism",
        ),
        (
            "vllm-deepseek-r1-pd-kserve",
            ("      dataLocal: 8\n", "      dataLocal: 4\n"),
            "spec.prefill.parallelism: parallelism says data-parallel-size-local 4",
        ),
        (  # and KServe's LeaderWorkerSet of it as lwsgen's own LeaderWorkerSets are
            "vllm-deepseek-r1-pd-kserve",
            ("            port: http\n", "            port: web\n"),
            "spec.prefill.template.containers[0].startupProbe.httpGet.port: 'web' is not a named port",
        ),
        (
            "vllm-deepseek-r1-kserve",
            ("value: WARN", "value: '{{ .Name }}'"),
            "KServe renders this as a Go template",
        ),
        (  # lwsgen's own: KServe takes the InferenceService's sizes over the runtime's
            "vllm-llama31-405b-kserve-isvc",
            ("      tensorParallelSize: 8\n", "      tensorParallelSize: 4\n"),
            "spec.predictor.workerSpec.tensorParallelSize: KServe takes tensorParallelSize 4 over the runtime's 8",
        ),
        (
            "vllm-llama31-405b-kserve-isvc",
            ("  - name: kserve-container", "  - name: head"),
            "failed to find kserve-container in ServingRuntime containers",
        ),
        (  # what a LeaderWorkerSet of lwsgen's is held to, on the one KServe makes (output/invariants.py)
            "vllm-deepseek-r1-kserve",
            ("          port: http\n", "          port: web\n"),
            "spec.template.containers[0].startupProbe.httpGet.port: 'web' is not a named port of this container",
        ),
        (  # the API server's pod rules reach the pods KServe's kinds hold as bare specs
            "vllm-deepseek-r1-kserve",
            ("      - name: dshm\n        mountPath: /dev/shm", "      - name: shm\n        mountPath: /dev/shm"),
            "spec.template.containers[0].volumeMounts[0].name: 'shm' is not a volume of this pod",
        ),
        (
            "vllm-llama31-405b-kserve-isvc",
            ("    - name: dshm\n      mountPath: /dev/shm", "    - name: shm\n      mountPath: /dev/shm"),
            "spec.containers[0].volumeMounts[0].name: 'shm' is not a volume of this pod",
        ),
    ],
)
def test_validate_refuses_what_kserves_webhooks_refuse_in_a_hand_edit(tmp_path, capsys, example, edit, says):
    from lwsgen.cli import main

    directory = tmp_path / example
    directory.mkdir()
    for path in (REPO / "out" / example).glob("*.yaml"):
        (directory / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["validate", str(directory)]) == 0
    capsys.readouterr()
    edited = directory / ("inferenceservice.yaml" if "isvc" in example else "llminferenceservice.yaml")
    text = edited.read_text(encoding="utf-8")
    assert edit[0] in text
    edited.write_text(text.replace(edit[0], edit[1], 1), encoding="utf-8")
    assert main(["validate", str(directory)]) == 1
    assert says in capsys.readouterr().out


def test_validate_holds_a_hand_edited_mp_runtime_to_the_gpus_kserve_gives(tmp_path, capsys):
    """KServe's mp backend sets each pod's GPUs to tensorParallelSize: a hand edit of the worker's GPUs
    alone is a pod the controller would resize under the engine."""
    from lwsgen.cli import main

    profile = tmp_path / "native.yaml"
    profile.write_text(fastyaml.dump(_profile(launch={"mode": "native"})), encoding="utf-8")
    assert main(["render", str(profile), "-o", str(tmp_path / "out")]) == 0
    directory = tmp_path / "out" / "demo"
    assert main(["validate", str(directory)]) == 0
    capsys.readouterr()
    edited = directory / "inferenceservice.yaml"
    text = edited.read_text(encoding="utf-8")
    worker = text.index("  workerSpec:")
    edited.write_text(text[:worker] + text[worker:].replace("nvidia.com/gpu: '8'", "nvidia.com/gpu: '4'"), "utf-8")
    assert main(["validate", str(directory)]) == 1
    out = capsys.readouterr().out
    assert "KServe's mp backend gives each pod tensorParallelSize (8) GPUs, and this container asks for 4" in out


def test_explain_names_the_pods_and_the_front_door_kserve_makes():
    from lwsgen.commands import explain

    llm = explain.text(render_profile(LLMISVC_EXAMPLE))
    assert "vllm-deepseek-r1-kserve-kserve-mn-0-1 (worker): ranks 8-15" in llm
    assert "InferencePool vllm-deepseek-r1-kserve-inference-pool (KServe's router.scheduler)" in llm
    isvc = render_profile(ISVC_EXAMPLE)
    text = explain.text(isvc)
    assert "vllm-llama31-405b-kserve-isvc-predictor-worker-<hash> (worker): ranks 8-15, pipeline stage 1" in text
    assert "client -> Service vllm-llama31-405b-kserve-isvc-predictor (KServe's) -> the head" in text
    assert "InferenceService vllm-llama31-405b-kserve-isvc (KServe's Deployments)" in explain.mermaid(isvc)
    pd = explain.text(render_profile(PD_EXAMPLE))
    assert "vllm-deepseek-r1-pd-kserve-kserve-mn-prefill-0-1 (worker): ranks 8-15" in pd  # KServe's names, per role
    assert "vllm-deepseek-r1-pd-kserve-kserve-mn-0 (leader): ranks 0-7" in pd
    assert (
        "PodMonitor vllm-deepseek-r1-pd-kserve-decode: leaderworkerset.sigs.k8s.io/name="
        "vllm-deepseek-r1-pd-kserve-kserve-mn," in pd
    )
    assert "a decode leader, whose routing sidecar runs the prefill on the prefill leader the picker chose" in pd


def test_the_capabilities_kserves_preset_adds_are_said_unless_accepted(said):
    """KServe's merge cannot drop the data-parallel preset's capabilities (its Go structs' omitempty drops
    an empty list: found by KServe's real controller in make test-cluster, which kubectl's merge keeps)."""
    data = _profile(platform="kserve", parallelism={"tensor": 1, "data": 16, "expert": True})
    _, warnings = said(data)
    assert any(w.startswith("parallelism.data: KServe's data-parallel preset adds the capabilities") for w in warnings)
    assert any(w.startswith("node: KServe's data-parallel preset bounds /dev/shm to 8Gi") for w in warnings)
    data["security"] = {"addCapabilities": ["IPC_LOCK", "SYS_RAWIO", "NET_RAW"]}
    data["node"] = {"gpus": 8, "shmSize": "64Gi"}
    assert not said(data)[1]


def test_every_isvc_profile_is_told_of_kserve_0_20s_regression(said):
    """kserve/kserve#6113, seen on KServe's real InferenceService controller in make test-cluster."""
    _, warnings = said(_profile())
    assert any(w.startswith("platform: KServe v0.20.0 deletes a multi-node") for w in warnings)
    assert not any("kserve/kserve#6113" in w for w in said(_profile(platform="kserve"))[1])


@pytest.mark.tools
@pytest.mark.parametrize("example", ["vllm-deepseek-r1-kserve", "vllm-llama31-405b-kserve-isvc"])
def test_an_overlay_renames_and_retags_what_kserves_kinds_reference(tmp_path, example):
    """kustomizeconfig.yaml teaches kustomize KServe's kinds: a namePrefix follows into the launch-scripts
    ConfigMap and model claim the pods mount and the runtime the InferenceService names, images into
    every container; real kubectl kustomize."""
    shutil.copytree(REPO / "out" / example, tmp_path / "base")
    overlay = {
        "resources": ["../base"],
        "namePrefix": "prod-",
        "images": [{"name": "vllm/vllm-openai", "newTag": "v9"}],
    }
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text(fastyaml.dump(overlay), encoding="utf-8")
    built = subprocess.run([tool("kubectl"), "kustomize", str(tmp_path / "overlay")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    objects = [o for o in fastyaml.load_all(built.stdout) if o]
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    pods = []
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj["kind"] == "LLMInferenceService":
            pods += [spec["template"], spec["worker"]]
        if obj["kind"] == "ServingRuntime":
            pods += [{"containers": spec["containers"], "volumes": spec["volumes"]}, spec["workerSpec"]]
        if obj["kind"] == "InferenceService":
            assert ("ServingRuntime", spec["predictor"]["model"]["runtime"]) in names
    assert pods
    for pod in pods:
        for volume in pod["volumes"]:
            if "configMap" in volume:
                assert ("ConfigMap", volume["configMap"]["name"]) in names, volume
        assert all(c["image"] == "vllm/vllm-openai:v9" for c in pod["containers"])


@pytest.mark.parametrize(
    "changes",
    [
        {"platform": "kserve", "gateway": {"enabled": True}, "monitoring": {"enabled": False}},  # KServe's picker
        {"parallelism": {"tensor": 4, "pipeline": 3}},  # not whole nodes: lwsgen's own rule, said once
    ],
)
def test_what_kserve_takes_is_not_refused_for_kserve(said, changes):
    errors, _ = said(_profile(**changes))
    assert not [e for e in errors if "one pod holds" in e or "endpoint picker" in e or "gateway.parentRefs" in e]


def test_exclusive_topology_and_kueue_reach_kserves_leaderworkerset(render):
    """KServe copies leaderworkerset.sigs.k8s.io/* annotations and kueue.x-k8s.io labels from the service
    onto its LeaderWorkerSet (workload_multi_node.go#L616-L660; make test-cluster's kserve-exclusive-topology
    variant places each group in a zone of its own through the real controllers)."""
    scheduling = {"scheduler": "kueue", "queue": "team-a", "exclusiveTopology": "topology.kubernetes.io/zone"}
    service = _one(_objects(render(_profile(platform="kserve", scheduling=scheduling))), "LLMInferenceService")
    assert service["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert service["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/exclusive-topology"] == (
        "topology.kubernetes.io/zone"
    )
