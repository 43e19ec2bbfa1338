"""The GitOps health checks lwsgen ships, evaluated as the tools evaluate them: Argo CD's Lua
(docs/argocd/*-health.lua) by lupa, Flux's healthCheckExprs (docs/flux/kustomization.yaml) by a CEL
library. Used on hand-built status samples (test_gitops.py) and on the status the real controllers
write (tests/cluster/test_lifecycle.py)."""

from __future__ import annotations

import json
from pathlib import Path

import fastyaml

REPO = Path(__file__).resolve().parents[1]


def argocd(obj: dict, check: str = "leaderworkerset-health.lua") -> tuple[str, str]:
    from lupa import LuaRuntime

    lua = LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(json.loads(json.dumps(obj)), recursive=True)
    script = (REPO / "docs" / "argocd" / check).read_text()
    result = lua.execute(script)
    return result["status"], result["message"]


def flux(obj: dict) -> str:
    """What Flux's kustomize-controller makes of docs/flux/kustomization.yaml's healthCheckExprs: the
    entry for the object's kind, its expressions evaluated by a CEL library with the object's fields
    as variables; a missing field is an error, on which Flux keeps waiting."""
    import celpy

    checks = fastyaml.load((REPO / "docs" / "flux" / "kustomization.yaml").read_text())["spec"]["healthCheckExprs"]
    kind = (obj.get("apiVersion", "leaderworkerset.x-k8s.io/v1"), obj.get("kind", "LeaderWorkerSet"))  # LWS samples
    [check] = [c for c in checks if (c["apiVersion"], c["kind"]) == kind]
    env = celpy.Environment()
    verdicts = []
    for name, status in (("current", "Current"), ("failed", "Failed"), ("inProgress", "InProgress")):
        program = env.program(env.compile(check[name]))
        try:
            result = program.evaluate(celpy.json_to_cel(obj))
        except celpy.CELEvalError:
            return "InProgress"
        if isinstance(result, celpy.CELEvalError):
            return "InProgress"
        if bool(result):
            verdicts.append(status)
    assert len(verdicts) == 1, verdicts  # the expressions exclude each other
    return verdicts[0]
