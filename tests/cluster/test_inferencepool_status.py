"""Issue #35 req 5: the Argo CD and Flux health checks for InferencePool (docs/argocd/inferencepool-health.lua,
docs/flux/kustomization.yaml) evaluated on the status a real Gateway implementation writes.

istiod (istio.io/istio pilot-discovery, make istio; `calculateInferencePoolStatus` in
pilot/pkg/config/kube/gateway/inferencepool_collection.go) writes an InferencePool's `status.parents`: per
Gateway of its class that an accepted HTTPRoute to the pool attaches to, Accepted (the route's own
Accepted, reason HTTPRouteNotAccepted when False) and ResolvedRefs (False, InvalidExtensionRef, while
the endpointPickerRef names no Service). It needs no data plane: the Gateway stays unprogrammed (no
address), the conditions the checks read are written all the same.

The vllm-llama31-405b example's pool, route and endpoint picker Service are applied as rendered; the
Gateway the route names is the one thing a cluster brings (here: class istio, one HTTP listener).
What istiod writes differs from the API's reference in one way the checks do not read: parentRef.group
is networking.istio.io, where the Gateway's group is gateway.networking.k8s.io."""

from __future__ import annotations

import pytest

from healthchecks import argocd, flux
from tests.cluster.api import wait_for
from tests.cluster.controlplane import BIN, binary, free_port
from tests.cluster.deploy import REPO, rendered_in

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(
        not (BIN / "pilot-discovery").exists(), reason="istiod: make istio builds it (make test-cluster does)"
    ),
]

EXAMPLE = "vllm-llama31-405b"
NAMESPACE = "poolstatus"
GATEWAY_API_CRDS = BIN.parent / "gateway-api-crds"  # make istio keeps those ../shared/crds lacks
POOL = ("inference.networking.k8s.io/v1", "InferencePool")
GATEWAY = ("gateway.networking.k8s.io/v1", "Gateway")


def _one(objects: list[dict], kind: str, name: str | None = None) -> dict:
    [found] = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    return found


def _verdicts(pool: dict) -> tuple[str, str]:
    return argocd(pool, "inferencepool-health.lua")[0], flux(pool)


def _istiod(plane, root) -> str:
    """istiod against the plane, only its Gateway API controllers doing anything: the inference
    extension on (ENABLE_GATEWAY_API_INFERENCE_EXTENSION, off by default), no Deployment per Gateway
    (that needs the injection templates a Helm install brings), every port on loopback."""
    root.mkdir()  # its working directory: it writes what it makes for itself there
    config = plane.pki.kubeconfig("istiod", plane.server, "istiod", group="system:masters")
    flags = ("httpAddr", "grpcAddr", "secureGRPCAddr", "httpsAddr", "monitoringAddr")
    argv = [binary("pilot-discovery"), "discovery", "--kubeconfig", str(config)]
    argv += [f"--{flag}=127.0.0.1:{free_port()}" for flag in flags]
    argv += ["--ctrlz_address=127.0.0.1", f"--ctrlz_port={free_port()}"]
    env = {
        "ENABLE_GATEWAY_API_INFERENCE_EXTENSION": "true",
        "PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER": "false",
        "POD_NAMESPACE": "istio-system",
        "POD_NAME": "istiod-test",
    }
    plane.spawn("istiod", argv, env, cwd=root)
    return "istiod"


def _gateway(api, route: dict) -> tuple[str, str]:
    """The Gateway the rendered route names, of istiod's class, taking routes from every namespace."""
    [parent] = route["spec"]["parentRefs"]
    namespace = parent.get("namespace") or NAMESPACE
    api.ensure_namespace(namespace)
    listener = {"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}}
    made = {
        "apiVersion": GATEWAY[0],
        "kind": GATEWAY[1],
        "metadata": {"name": parent["name"]},
        "spec": {"gatewayClassName": "istio", "listeners": [listener]},
    }
    api.create(made, namespace)
    return namespace, parent["name"]


def _conditions(pool: dict) -> dict[str, tuple[str, str]]:
    """The single parent's conditions, each (status, reason), for the pool's current generation."""
    parents = (pool.get("status") or {}).get("parents") or []
    if len(parents) != 1:
        return {}
    generation = pool["metadata"]["generation"]
    return {
        c["type"]: (c["status"], c.get("reason", ""))
        for c in parents[0].get("conditions") or []
        if c.get("observedGeneration", generation) >= generation
    }


def test_health_checks_follow_the_inferencepool_status_a_real_gateway_writes(loopback_plane, tmp_path):
    # the plane without KServe: the Gateway API CRDs added here change nothing its controllers watch
    plane, api = loopback_plane, loopback_plane.admin
    plane.apply_crds(sorted(GATEWAY_API_CRDS.glob("*.yaml")))
    example = rendered_in(REPO / "profiles" / f"{EXAMPLE}.yaml", NAMESPACE, tmp_path, f"{EXAMPLE}-pool")
    objects = example.objects()
    pool, route = _one(objects, "InferencePool"), _one(objects, "HTTPRoute")
    picker_service = _one(objects, "Service", pool["spec"]["endpointPickerRef"]["name"])
    api.ensure_namespace(NAMESPACE)
    api.ensure_namespace("istio-system")  # istiod keeps its CA and leader leases there
    for obj in (picker_service, pool, route):  # the Service first: istiod resolves the pick's reference once
        assert api.apply(obj, NAMESPACE).warnings == []
    name = pool["metadata"]["name"]

    def current() -> dict:
        return api.get(*POOL, name, NAMESPACE)

    assert _verdicts(current()) == ("Progressing", "InProgress")  # no Gateway implementation has seen it
    started = _istiod(plane, tmp_path / "istiod")
    try:
        gateway = _gateway(api, route)
        healthy = wait_for("istiod accepts the pool and resolves its picker", lambda: _conditions(current()) == {
            "Accepted": ("True", "Accepted"), "ResolvedRefs": ("True", "ResolvedRefs")}, attempts=600)  # fmt: skip
        assert healthy
        assert _verdicts(current()) == ("Healthy", "Current")

        # the endpoint picker's Service gone: ResolvedRefs False (istiod looks again when the pool changes)
        api.delete("v1", "Service", picker_service["metadata"]["name"], NAMESPACE)
        _touch(api, name)
        wait_for("ResolvedRefs False", lambda: _conditions(current()).get("ResolvedRefs", ("",))[0] == "False")
        assert _conditions(current())["ResolvedRefs"] == ("False", "InvalidExtensionRef")
        assert _verdicts(current()) == ("Degraded", "Failed")
        assert api.apply(picker_service, NAMESPACE).warnings == []
        _touch(api, name)
        wait_for("Healthy again", lambda: _verdicts(current()) == ("Healthy", "Current"))

        # the Gateway takes routes from its own namespace only: the route, and so the pool, not accepted
        listeners = api.get(*GATEWAY, gateway[1], gateway[0])["spec"]["listeners"]
        same = [{**listener, "allowedRoutes": {"namespaces": {"from": "Same"}}} for listener in listeners]
        api.merge_patch(*GATEWAY, gateway[1], gateway[0], {"spec": {"listeners": same}})
        _touch(api, name)
        wait_for("Accepted False", lambda: _conditions(current()).get("Accepted", ("",))[0] == "False")
        assert _conditions(current())["Accepted"] == ("False", "HTTPRouteNotAccepted")
        assert _verdicts(current()) == ("Degraded", "Failed")

        # the route deleted: no parent references the pool, the status is emptied: waiting again
        api.delete(route["apiVersion"], route["kind"], route["metadata"]["name"], NAMESPACE)
        _touch(api, name)
        wait_for("no parents", lambda: not (current().get("status") or {}).get("parents"))
        assert _verdicts(current()) == ("Progressing", "InProgress")
    except AssertionError as error:
        log = (plane.logs / "istiod.log").read_text(errors="replace").splitlines()
        raise AssertionError(f"{error}\n{current().get('status')}\n--- istiod\n" + "\n".join(log[-40:])) from None
    finally:
        plane.retire(started)
    assert not plane.alive()


def _touch(api, name: str) -> None:
    """A change to the pool's metadata (not its spec: the generation stays), so istiod computes its
    status again."""
    pool = api.get(*POOL, name, NAMESPACE)
    count = int((pool["metadata"].get("annotations") or {}).get("lwsgen.test/touched", "0")) + 1
    api.merge_patch(*POOL, name, NAMESPACE, {"metadata": {"annotations": {"lwsgen.test/touched": str(count)}}})
