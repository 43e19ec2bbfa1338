"""Issue #35 req 6: what the real API server refuses, `lwsgen validate` refuses. Every hand edit of
validate's own suites (the breaking and benign edits of tests/test_invariants.py, the deletion of
every key to depth 4 of tests/test_validate_deletions.py) goes to both: a server-side dry-run apply
through the LWS webhooks, and validate. An edit the server refuses must be an error of validate; an
error validate reports on an edit the server accepts must be a cross-object finding or a field
docs/validation.md justifies ("Where validate is stricter than the API server")."""

from __future__ import annotations

import re

import pytest

from tests.cluster import handedits
from tests.cluster.deploy import REPO
from tests.cluster.handedits import KUSTOMIZE_INPUTS
from tests.test_invariants import BENIGN, MUTATIONS
from tests.test_invariants import EXAMPLES as ONE_SET_EXAMPLES

pytestmark = pytest.mark.cluster

EXAMPLES = sorted(p.name for p in (REPO / "out").iterdir())
DOCS = REPO / "docs" / "validation.md"
# Findings about objects agreeing with each other: a deployment failure no single object's admission sees
BEYOND_ONE_OBJECT = {"cross-object"}
# Edits the server refuses and validate accepts, with the reason: none today
EXCEPTIONS: dict[str, str] = {}


def justified_fields() -> set[tuple[str, str]]:
    """(kind, field) rows of the docs' table of fields validate holds stricter than the server."""
    text = DOCS.read_text()
    section = text.split("## Where validate is stricter than the API server", 1)[1].split("\n## ", 1)[0]
    rows = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            for field in re.findall(r"`([^`]+)`", cells[1]):
                rows.add((cells[0].strip("`"), field))
    return rows


def is_justified(at: tuple[str, str], rows: set[tuple[str, str]]) -> bool:
    """A row's field matches itself, or, ending in '.*', itself and every field under it."""
    kind, field = at
    return any(kind == k and (field == f or _under(field, f)) for k, f in rows)


def _under(field: str, row: str) -> bool:
    return row.endswith(".*") and (field == row[:-2] or field.startswith(row[:-1]))


def field_of(error: dict) -> str:
    """The field an error is about, indices dropped: a required property's own path."""
    path = re.sub(r"\[\d+\]", "[]", error["path"])
    required = re.match(r'"([^"]+)" is a required property', error["message"])
    if not required:
        return path
    return f"{path}.{required.group(1)}" if path else required.group(1)


# Value edits of the kinds whose server rules validate applies (lwsgen/output/kindrules.py), each in
# every example that has the field's parent: the server's verdict and validate's must agree
VALUE_EDITS = [
    handedits.value_edit("service.yaml", "Service", ("spec", "type"), "ExternalName"),
    handedits.value_edit("service.yaml", "Service", ("spec", "type"), "Bogus"),
    handedits.value_edit("service.yaml", "Service", ("spec", "clusterIP"), "None"),
    handedits.value_edit("service.yaml", "Service", ("spec", "externalTrafficPolicy"), "Local"),
    handedits.value_edit("service.yaml", "Service", ("spec", "sessionAffinity"), "Sticky"),
    handedits.value_edit("service.yaml", "Service", ("spec", "ports", 0, "protocol"), "ICMP"),
    handedits.value_edit("service.yaml", "Service", ("spec", "ports", 0, "nodePort"), 30080),
    handedits.value_edit("service.yaml", "Service", ("spec", "loadBalancerSourceRanges"), ["10.0.0.0/33"]),
    handedits.value_edit("horizontalpodautoscaler.yaml", "HorizontalPodAutoscaler", ("spec", "minReplicas"), 0),
    handedits.value_edit(
        "horizontalpodautoscaler.yaml",
        "HorizontalPodAutoscaler",
        ("spec", "behavior"),
        {
            "scaleDown": {
                "stabilizationWindowSeconds": 7200,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 3600}],
            }
        },
    ),
    handedits.value_edit(
        "horizontalpodautoscaler.yaml", "HorizontalPodAutoscaler", ("spec", "behavior"), {"scaleUp": {"policies": []}}
    ),
    handedits.value_edit("role.yaml", "Role", ("rules", 0, "verbs"), []),
    handedits.value_edit("role.yaml", "Role", ("rules", 0, "apiGroups"), []),
    handedits.value_edit("endpoint-picker.yaml", "Deployment", ("spec", "template", "metadata", "labels"), {"a": "b"}),
    handedits.value_edit("nccl-test.yaml", "Job", ("spec", "template", "spec", "restartPolicy"), "Always"),
    handedits.value_edit("model-download.yaml", "Job", ("spec", "template", "spec", "restartPolicy"), "OnFailure"),
    handedits.value_edit("persistentvolumeclaim.yaml", "PersistentVolumeClaim", ("spec", "accessModes"), []),
    handedits.value_edit("persistentvolumeclaim.yaml", "PersistentVolumeClaim", ("spec", "accessModes"), ["Twice"]),
    handedits.value_edit(
        "persistentvolumeclaim.yaml", "PersistentVolumeClaim", ("spec", "resources", "requests", "storage"), "0"
    ),
    handedits.value_edit("endpoint-picker.yaml", "Deployment", ("spec", "replicas"), -1),
    handedits.value_edit(
        "endpoint-picker.yaml",
        "Deployment",
        ("spec", "selector", "matchExpressions"),
        [{"key": "app", "operator": "In", "values": ["another"]}],
    ),
    handedits.value_edit(
        "endpoint-picker.yaml", "Deployment", ("spec", "strategy"), {"type": "Recreate", "rollingUpdate": {}}
    ),
    handedits.value_edit(
        "endpoint-picker.yaml",
        "Deployment",
        ("spec", "strategy"),
        {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
    ),
    handedits.value_edit("endpoint-picker.yaml", "Deployment", ("spec", "template", "spec", "restartPolicy"), "Never"),
    handedits.value_edit("endpoint-picker.yaml", "Deployment", ("spec", "progressDeadlineSeconds"), 0),
    handedits.value_edit(
        "nccl-test.yaml", "Job", ("spec", "template", "spec", "containers", 0, "volumeMounts", 0, "subPath"), "../x"
    ),
    handedits.value_edit(
        "nccl-test.yaml",
        "Job",
        ("spec", "template", "spec", "containers", 0, "volumeMounts", 1, "mountPath"),
        "/dev/shm",
    ),
    handedits.value_edit(
        "nccl-test.yaml",
        "Job",
        ("spec", "template", "spec", "containers", 0, "volumeMounts", 0, "mountPropagation"),
        "Sideways",
    ),
    handedits.value_edit("nccl-test.yaml", "Job", ("spec", "backoffLimit"), -1),
    handedits.value_edit("model-download.yaml", "Job", ("spec", "backoffLimitPerIndex"), 1),
    handedits.value_edit("model-download.yaml", "Job", ("spec", "podReplacementPolicy"), "TerminatingOrFailed"),
    handedits.value_edit(
        "service.yaml",
        "Service",
        ("metadata", "annotations"),
        {"service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8"},
    ),
    handedits.value_edit("nccl-test.yaml", "Job", ("spec", "completionMode"), "Bogus"),
    handedits.value_edit("rolebinding.yaml", "RoleBinding", ("roleRef", "apiGroup"), "example.com"),
    handedits.value_edit("rolebinding.yaml", "RoleBinding", ("roleRef", "kind"), "Bogus"),
]


def _edits(example) -> list[handedits.Edit]:
    """The invariants suite's edits name a LeaderWorkerSet's files; every example gets the deletions."""
    edits = []
    if example in ONE_SET_EXAMPLES:
        edits += [handedits.Edit(f"breaking edit {n!r}", e[0]) for n, e in sorted(MUTATIONS.items())]
        edits += [handedits.Edit(f"benign edit {n!r}", e) for n, e in sorted(BENIGN.items())]
    return edits + VALUE_EDITS + handedits.deletions(REPO / "out" / example, depth=4, stride=1)


@pytest.mark.parametrize("example", EXAMPLES)
def test_validate_refuses_what_the_server_refuses(cluster, example, tmp_path):
    namespace = f"edits-{example}"[:63]
    cluster.admin.ensure_namespace(namespace)
    original = REPO / "out" / example
    justified = justified_fields()
    missed, stricter = [], []
    verdicts = handedits.judge_all(cluster.admin, namespace, original, tmp_path, _edits(example))
    for verdict in verdicts:
        if verdict.validate_status not in (0, 1):
            missed.append(f"{verdict.edit}: validate crashed (exit {verdict.validate_status})")
        if verdict.server_refused and verdict.edit not in EXCEPTIONS:
            said = {error["file"].rsplit("/", 1)[-1] for error in verdict.validate_errors}
            if verdict.validate_status == 0 or not verdict.refused_files & (said | set(KUSTOMIZE_INPUTS)):
                missed.append(f"{verdict.edit}: the server refused it, validate said nothing of "
                              f"{sorted(verdict.refused_files)}: {verdict.refusals[0]}")  # fmt: skip
        if verdict.server_refused:
            continue
        for error in verdict.validate_errors:
            at = (error["kind"], field_of(error))
            if error["code"] not in BEYOND_ONE_OBJECT and not is_justified(at, justified):
                stricter.append(f"{verdict.edit}: validate refused {at[0]} {at[1]} ({error['message'][:120]}), "
                                "the server accepted it; justify it in docs/validation.md or accept it")  # fmt: skip
    assert len(verdicts) > 100, f"only {len(verdicts)} edits applied to {example}"
    assert not missed and not stricter, "\n".join(missed + stricter)
