"""LeaderWorkerSet status samples, as the LWS controller writes them (kubernetes-sigs/lws v0.10.0,
pkg/controllers/leaderworkerset_controller.go: updateConditions sets Available "AllGroupsReady",
UpdateInProgress "GroupsUpdating" or Progressing "GroupsProgressing", each with the generation it
was computed for; setCondition turns the exclusive one False; status.observedGeneration only from
v0.9, lws PR #807), with the verdict an Argo CD health check and a Flux health check must give."""


def _condition(kind: str, status: str = "True", generation: int = 3) -> dict:
    reason = {"Available": "AllGroupsReady", "UpdateInProgress": "GroupsUpdating"}.get(kind, "GroupsProgressing")
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "observedGeneration": generation,
        "lastTransitionTime": "2026-12-01T00:00:00Z",
        "message": "from the controller",
    }


def lws(status, replicas=2, partition=0, generation=3) -> dict:
    spec = {"replicas": replicas, "rolloutStrategy": {"rollingUpdateConfiguration": {"partition": partition}}}
    return {"metadata": {"generation": generation}, "spec": spec, **({} if status is None else {"status": status})}


# name -> (object, Argo CD health, Flux status)
SAMPLES = {
    "created, no status yet": (lws({}), "Progressing", "InProgress"),
    "groups starting": (
        lws({"observedGeneration": 3, "readyReplicas": 1, "replicas": 2, "conditions": [_condition("Progressing")]}),
        "Progressing",
        "InProgress",
    ),
    "rolling update": (
        lws(
            {
                "observedGeneration": 3,
                "readyReplicas": 2,
                "updatedReplicas": 1,
                "replicas": 2,
                "conditions": [
                    _condition("Available", "False"),
                    _condition("UpdateInProgress"),
                    _condition("Progressing"),
                ],
            }
        ),
        "Progressing",
        "InProgress",
    ),
    "all groups ready": (
        lws(
            {
                "observedGeneration": 3,
                "readyReplicas": 2,
                "updatedReplicas": 2,
                "replicas": 2,
                "conditions": [_condition("Available"), _condition("Progressing", "False")],
            }
        ),
        "Healthy",
        "Current",
    ),
    "partitioned rollout done": (
        lws(
            {
                "observedGeneration": 3,
                "readyReplicas": 3,
                "updatedReplicas": 1,
                "replicas": 3,
                "conditions": [
                    _condition("Available"),
                    _condition("UpdateInProgress", "False"),
                    _condition("Progressing", "False"),
                ],
            },
            replicas=3,
            partition=2,
        ),
        "Healthy",
        "Current",
    ),
    "zero replicas": (
        lws({"observedGeneration": 3, "conditions": [_condition("Available")]}, replicas=0),
        "Healthy",
        "Current",
    ),
    "new spec not yet observed": (
        lws(
            {
                "observedGeneration": 2,
                "readyReplicas": 2,
                "updatedReplicas": 2,
                "conditions": [_condition("Available", generation=2)],
            }
        ),
        "Progressing",
        "InProgress",
    ),
    "before LWS 0.9 (no status.observedGeneration)": (
        lws({"readyReplicas": 2, "updatedReplicas": 2, "conditions": [_condition("Available")]}),
        "Healthy",
        "Current",
    ),
    "a failure condition": (
        lws({"observedGeneration": 3, "conditions": [_condition("Degraded")]}),
        "Degraded",
        "Failed",
    ),
}
