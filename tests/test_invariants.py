"""Hand edits to a rendered directory that break a deployment are caught by `lwsgen validate`, each
at FILE:LINE:COL and its field; benign edits still pass. Every example gets the same edits."""

import re
import shutil

import pytest

from conftest import REPO
from lwsgen.cli import main

# The examples of one LeaderWorkerSet (the edits name its file); a DisaggregatedSet's: test_disaggregation.py.
EXAMPLES = sorted(p.name for p in (REPO / "out").iterdir() if (p / "leaderworkerset.yaml").exists())


def _edit(directory, name, old, new, count=1):
    path = directory / name
    text = path.read_text()
    assert old in text, (name, old)
    path.write_text(text.replace(old, new, count))


def _sub(directory, name, pattern, replacement, absent_ok=False, count=1):
    """A regex edit of the first match (count=0: every match); examples without the file (or, if
    absent_ok, the text) skip it."""
    path = directory / name
    if not path.exists():
        pytest.skip(f"{name} is not part of this example")
    text = path.read_text()
    changed = re.sub(pattern, replacement, text, count=count, flags=re.MULTILINE)
    if absent_ok and changed == text:
        pytest.skip(f"{name} has no {pattern}")
    assert changed != text, (name, pattern)
    path.write_text(changed)


def _node_port(d):  # a NodePort Service, without the source ranges the API server allows a LoadBalancer only
    path = d / "service.yaml"
    if not path.exists():
        pytest.skip("service.yaml is not part of this example")
    path.write_text(re.sub(r"^  loadBalancerSourceRanges:\n(  - .*\n)+", "", path.read_text(), flags=re.MULTILINE))
    _sub(d, "service.yaml", r"^(  type: )\w+$", r"\1NodePort")


def _size(d):  # LWS size 2 -> 3: the engine flags still say the old world size
    _edit(d, "leaderworkerset.yaml", "    size: 2\n", "    size: 3\n")


def _probe_port(d):  # a probe names a port no container declares
    _edit(d, "leaderworkerset.yaml", "            port: http\n", "            port: web\n")


def _mount(d):  # a mount names a volume the pod does not have
    _edit(
        d,
        "leaderworkerset.yaml",
        "          - name: dshm\n            mountPath: /dev/shm",
        "          - name: shm\n            mountPath: /dev/shm",
    )


def _configmap(d):  # the launch scripts ConfigMap renamed
    text = (d / "configmap.yaml").read_text()
    name = next(line.split(": ")[1] for line in text.splitlines() if line.startswith("  name: "))
    _edit(d, "configmap.yaml", f"  name: {name}\n", f"  name: {name}-old\n")


def _service_selector(d):  # the Service selects another LWS
    _edit(d, "service.yaml", "    leaderworkerset.sigs.k8s.io/name: ", "    leaderworkerset.sigs.k8s.io/name: other-")


def _policy(d):  # the NetworkPolicy protects another LWS
    _edit(
        d, "networkpolicy.yaml", "      leaderworkerset.sigs.k8s.io/name: ", "      leaderworkerset.sigs.k8s.io/name: x"
    )


def _kustomization(d):  # a resource that is not there: kubectl kustomize fails on it
    _edit(d, "kustomization.yaml", "- service.yaml\n", "- service.yaml\n- grpcroute.yaml\n")


def _replicas_under_autoscaler(d):  # an HPA or ScaledObject owns replicas; a sync would reset them
    if not any((d / f).exists() for f in ("horizontalpodautoscaler.yaml", "scaledobject.yaml")):
        pytest.skip("no autoscaler in this example")
    _edit(d, "leaderworkerset.yaml", "\nspec:\n", "\nspec:\n  replicas: 2\n")


def _script_key(d):  # the script the leader runs is renamed in the ConfigMap (and the hash kept current)
    text = (d / "leaderworkerset.yaml").read_text()
    script = re.search(r"^          - /lwsgen/scripts/([\w.-]+)$", text, flags=re.MULTILINE)
    if not script:
        pytest.skip("the leader runs no launch script")
    _edit(d, "configmap.yaml", f"\n  {script.group(1)}: ", f"\n  old-{script.group(1)}: ")


def _big_annotation(d):  # a pasted blob: the API server refuses more than 256 KiB of annotations
    _edit(d, "service.yaml", "metadata:\n", "metadata:\n  annotations:\n    notes: " + "x" * 262144 + "\n")


MUTATIONS = {
    "kustomization resource": (_kustomization, "'grpcroute.yaml' does not exist beside this kustomization"),
    "port name": (
        lambda d: _sub(d, "leaderworkerset.yaml", r"^(          - name: )http$", r"\1HTTP_port"),
        "ports[0].name: port name 'HTTP_port' may hold only lower-case letters",
    ),
    "env var name": (
        lambda d: _sub(d, "leaderworkerset.yaml", r"^(          - name: )[A-Z][A-Z0-9_]*$", r"\g<1>1BAD=NAME"),
        "'1BAD=NAME' is not an env var name",
    ),
    "unknown field": (
        lambda d: _edit(d, "leaderworkerset.yaml", "\nspec:\n", "\nspec:\n  replica: 2\n"),
        "spec.replica: unknown field 'replica'",
    ),
    "service name": (
        lambda d: _sub(d, "service.yaml", r"^(  name: .*)$", r"\1_svc"),
        "metadata.name: ",
    ),
    "duplicate key": (
        lambda d: _edit(d, "service.yaml", "\nspec:\n", "\nspec:\n  type: ClusterIP\n  type: ClusterIP\n"),
        "spec.type: duplicate key",
    ),
    "tab indentation": (
        lambda d: _edit(d, "service.yaml", "\nspec:\n  ", "\nspec:\n\t"),
        "YAML syntax error",
    ),
    "podmonitor selects workers": (
        lambda d: _sub(d, "podmonitor.yaml", r"worker-index: '0'", "worker-index: '1'", absent_ok=True),
        "spec.selector: must match exactly",
    ),
    # every pod of the group, where the workers do not serve the metrics port
    "podmonitor selects every pod": (
        lambda d: _sub(d, "podmonitor.yaml", r"^ *leaderworkerset.sigs.k8s.io/worker-index: '0'\n", "", absent_ok=True),
        "spec.selector: must match exactly",
    ),
    "podmonitor port": (
        lambda d: _sub(d, "podmonitor.yaml", r"^(  - port: ).*$", r"\1scrape"),
        "'scrape' is not a named port of the leader container",
    ),
    "service target port": (
        lambda d: _sub(d, "service.yaml", r"^(    targetPort: ).*$", r"\1nope"),
        "targetPort: 'nope' is not a named port of the leader container",
    ),
    "service port without target": (
        lambda d: _edit(d, "service.yaml", "  ports:\n", "  ports:\n  - name: extra\n    port: 9999\n"),
        "spec.ports[0]: has no targetPort",
    ),
    "service port name reused": (
        lambda d: _sub(
            d,
            "service.yaml",
            r"^(  ports:\n  - name: )(\S+)$",
            r"\1\2\n    port: 9999\n    targetPort: \2\n  - name: \2",
        ),
        "is used by another port of this Service",
    ),
    "service port unnamed among several": (
        lambda d: _sub(
            d,
            "service.yaml",
            r"^(  ports:\n  - name: )(\S+)$",
            r"  ports:\n  - port: 9999\n    targetPort: \2\n  - name: \2",
        ),
        "name: is required when a Service has several ports",
    ),
    "service account": (
        lambda d: _sub(d, "leaderworkerset.yaml", r"^(\s+serviceAccountName: .*)$", r"\1-old", absent_ok=True),
        "-old' is not in this set",
    ),
    "replicas under an autoscaler": (_replicas_under_autoscaler, "spec.replicas: is set although an autoscaler"),
    "hpa metric": (
        lambda d: _sub(d, "horizontalpodautoscaler.yaml", r"^(        name: )(\w+)$", r"\1\2_old"),
        "is served by no prometheus-adapter rule in this set",
    ),
    "adapter series": (
        lambda d: _sub(d, "prometheus-adapter-rules.yaml", r"^(    matches: \^)(\S+?)(\$)$", r"\1\2_old\3"),
        "is recorded by no PrometheusRule in this set",
    ),
    "keda query": (
        lambda d: _sub(d, "scaledobject.yaml", r"(query: sum\()([a-z_]+:[a-z0-9_]+:[a-z0-9_]+)", r"\1\2_old"),
        "which no PrometheusRule in this set records",
    ),
    "container name": (
        lambda d: _sub(d, "leaderworkerset.yaml", r"^(        - name: )leader$", r"\1Leader"),
        "'Leader'",
    ),
    "container port number": (
        lambda d: _sub(d, "leaderworkerset.yaml", r"^(\s+containerPort: )\d+$", r"\g<1>70000"),
        "containerPort",
    ),
    "gpu requests differ from limits": (
        lambda d: _sub(d, "leaderworkerset.yaml", r"^(\s+nvidia.com/gpu: ).*$", r"\g<1>1"),
        "requests must equal limits",
    ),
    "restart policy": (
        lambda d: _sub(d, "leaderworkerset.yaml", r"^(    restartPolicy: ).*$", r"\1Sometimes"),
        'restartPolicy: "Sometimes" is not one of',
    ),
    "startup policy": (
        lambda d: _sub(d, "leaderworkerset.yaml", r"^(  startupPolicy: ).*$", r"\1Eventually"),
        'startupPolicy: "Eventually" is not one of',
    ),
    "record name": (
        lambda d: _sub(d, "prometheusrule.yaml", r"^(\s+- record: ).*$", r"\1bad-name"),
        'record: "bad-name" does not match',
    ),
    "configmap key": (
        lambda d: _sub(d, "configmap.yaml", r"^(  )[\w.-]+(: [|>])", r"\1bad/key\2"),
        "'bad/key': a data key may hold only",
    ),
    "replicas type": (
        lambda d: _sub(d, "leaderworkerset.yaml", r"^(  replicas: )\d+$", r"\1'two'", absent_ok=True),
        'spec.replicas: "two" is not of type "integer"',
    ),
    "size": (_size, "spec.leaderWorkerTemplate.size: size 3 x"),
    "probe port": (_probe_port, "httpGet.port: 'web' is not a named port of this container"),
    "mount": (_mount, "volumeMounts[0].name: 'shm' is not a volume of this pod"),
    "configmap": (_configmap, "is not in this set"),
    "service selector": (_service_selector, "spec.selector: must select"),
    "pool selects workers too": (
        lambda d: _sub(d, "inferencepool.yaml", r"^      leaderworkerset.sigs.k8s.io/worker-index: '0'\n", ""),
        "spec.selector.matchLabels: must select leaderworkerset.sigs.k8s.io/name=<a LeaderWorkerSet in this set> and",
    ),
    "route to another pool": (
        lambda d: _sub(d, "httproute.yaml", r"^(      name: )(.*)$", r"\1\2-old"),
        "InferencePool",
    ),
    "picker config key": (
        lambda d: _sub(d, "endpoint-picker.yaml", r"^(\s+- pluginRef: )max-score-picker$", r"\1random-picker"),
        "pluginRef 'random-picker' names no plugin of this config",
    ),
    "network policy": (_policy, "which is not in this set"),
    "source ranges off a load balancer": (
        lambda d: _sub(d, "service.yaml", r"^(  type: )LoadBalancer$", r"\1NodePort", absent_ok=True),
        "spec.loadBalancerSourceRanges: may only be used when type is LoadBalancer, not NodePort",
    ),
    "label value": (
        lambda d: _sub(d, "service.yaml", r"^(    app.kubernetes.io/component: ).*$", r"\1leader service"),
        "'leader service': a label value must be empty or 1 to 63",
    ),
    "annotation key": (
        lambda d: _edit(d, "service.yaml", "metadata:\n", "metadata:\n  annotations:\n    reviewed by: ops\n"),
        "annotation key 'reviewed by'",
    ),
    "annotations over 256 KiB": (_big_annotation, "the API server allows 262144 (256 KiB)"),
    "launch script renamed": (_script_key, "but its ConfigMap has no such key"),
    "launch script edited, hash kept": (
        lambda d: _edit(d, "configmap.yaml", "\ndata:\n", "\ndata:\n  extra.sh: |\n    echo hand-added\n"),
        "is not the sha256 of the launch scripts in the ConfigMap",
    ),
    "worker reads another secret key": (
        lambda d: (
            _sub(d, "leaderworkerset.yaml", r"^(                key: )token$", r"\1hf-token", absent_ok=True, count=0)
            or _edit(d, "leaderworkerset.yaml", "key: hf-token", "key: token")
        ),
        "but the leader reads 'hf-token' key 'token' for HF_TOKEN",
    ),
    "worker mounts shared memory elsewhere": (
        lambda d: _sub(d, "leaderworkerset.yaml", r"(workerTemplate:[\s\S]*?mountPath: )/dev/shm$", r"\1/shm"),
        "mounts 'dshm' at '/shm', but the leader mounts it at '/dev/shm'",
    ),
}
BENIGN = {
    "annotation": lambda d: _edit(d, "service.yaml", "metadata:\n", "metadata:\n  annotations:\n    note: reviewed\n"),
    "image tag": lambda d: _sub(d, "leaderworkerset.yaml", r"^(\s+image: [^:\s]+):(\S+)$", r"\1:\2-hotfix1", count=0),
    "image mirrored": lambda d: _sub(d, "leaderworkerset.yaml", r"^(\s+image: )", r"\1mirror.example.com/", count=0),
    "comment": lambda d: _edit(d, "leaderworkerset.yaml", "spec:\n", "spec:\n  # reviewed by the GPU team\n"),
    "memory limit within the node": lambda d: _sub(
        d, "leaderworkerset.yaml", r"^(\s+memory: )\d+Gi$", r"\g<1>480Gi", count=0
    ),
    "cpu limit within the node": lambda d: _sub(d, "leaderworkerset.yaml", r"^(\s+cpu: )'?\d+'?$", r"\1'60'", count=0),
    "label": lambda d: _edit(d, "leaderworkerset.yaml", "  labels:\n", "  labels:\n    team: inference\n", 1),
    "env var": lambda d: _sub(
        d, "leaderworkerset.yaml", r"^(          env:\n)", r"\1          - name: TZ\n            value: UTC\n"
    ),
    "readiness period": lambda d: _sub(
        d, "leaderworkerset.yaml", r"(readinessProbe:\n(?:\s+.*\n)*?\s+periodSeconds: )10$", r"\g<1>15"
    ),
    "toleration": lambda d: _edit(
        d,
        "leaderworkerset.yaml",
        "        tolerations:\n",
        "        tolerations:\n        - key: dedicated\n          operator: Equal\n          value: llm\n"
        "          effect: NoSchedule\n",
        count=2,
    ),
    "service type": _node_port,
    "kustomization order": lambda d: _sub(d, "kustomization.yaml", r"^(- configmap.yaml)\n(- \S+)$", r"\2\n\1"),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@pytest.mark.parametrize("example", EXAMPLES)
def test_a_breaking_hand_edit_is_caught_at_its_field(example, mutation, tmp_path, capsys):
    directory = tmp_path / example
    shutil.copytree(REPO / "out" / example, directory)
    edit, expected = MUTATIONS[mutation]
    lws = (directory / "leaderworkerset.yaml").read_text()
    world_flags = ("--tensor-parallel-size", "--tp", "WORLD_SIZE")
    if mutation == "size" and ("size: 2" not in lws or not any(f in lws for f in world_flags)):
        pytest.skip("no world size in the engine's arguments (llama.cpp splits layers over whatever joins)")
    edit(directory)
    assert main(["validate", str(directory)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(expected in line and line.startswith(str(directory)) for line in lines), lines


@pytest.mark.parametrize("edit", sorted(BENIGN))
@pytest.mark.parametrize("example", EXAMPLES)
def test_benign_edits_still_pass(example, edit, tmp_path, capsys):
    directory = tmp_path / example
    shutil.copytree(REPO / "out" / example, directory)
    BENIGN[edit](directory)
    assert main(["validate", str(directory)]) == 0, capsys.readouterr().out


def test_a_hand_written_overlay_naming_a_missing_file_is_caught(tmp_path, capsys):
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../base\n"
        "- https://github.com/example/repo//deploy?ref=v1\n- patch-gpus.yaml\n"
    )
    (tmp_path / "base").mkdir()
    assert main(["validate", str(overlay)]) == 1
    out = capsys.readouterr().out
    assert f"{overlay}/kustomization.yaml:6:3: resources[2]: 'patch-gpus.yaml' does not exist" in out, out
    assert "base" not in out.replace(str(tmp_path), "") and "github" not in out
