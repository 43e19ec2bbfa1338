"""The rendered set, indexed once: what every cross-object rule (registry scope set) reads beside the
object it checks. Built from the objects of one output set (a render's files, or what `validate`
reads); a rule never indexes the set itself and nothing is kept between sets."""

from __future__ import annotations

import re
from typing import Any

from lwsgen.jsondata import dig
from lwsgen.output import kserve
from lwsgen.output import sets as ds_rules
from lwsgen.records import Record

# prometheus-adapter's name.matches of one series: "^name$" (or the bare name)
RECORD_MATCH = re.compile(r"^\^?([a-zA-Z_:][a-zA-Z0-9_:]*)\$?$")


class Inventory(Record):
    lws: dict  # LeaderWorkerSets by name
    sets: dict  # DisaggregatedSets by name (each role runs as the LeaderWorkerSet <set>-<role>)
    named: dict  # kind -> name -> object, for the kinds routing rules look up by name
    workloads: tuple  # Deployments and Jobs: what else runs pods from a template
    names: dict  # the names of ConfigMaps, ServiceAccounts, LeaderWorkerSets and DisaggregatedSets; data; secrets
    scaled: frozenset  # the names autoscalers target
    records: frozenset | None  # the series the PrometheusRules record; None: the set has no PrometheusRule
    served: dict | None  # metric an adapter rule serves -> the series it reads; None: no adapter rules


def _of(everything: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in everything if o.get("kind") == kind]


def _records(everything: list[dict[str, Any]]) -> frozenset | None:
    rules = _of(everything, "PrometheusRule")
    if not rules:
        return None
    groups = [g for o in rules for g in dig(o, "spec", "groups") or [] if isinstance(g, dict)]
    return frozenset(r.get("record") for g in groups for r in g.get("rules") or [] if isinstance(r, dict))


def _adapter_names(everything: list[dict[str, Any]]) -> dict[str, str] | None:
    """prometheus-adapter rules in the set: served metric name -> the series it reads."""
    fragments = [o for o in everything if "kind" not in o and isinstance(o.get("rules"), list)]
    if not fragments:
        return None
    served = {}
    for fragment in fragments:
        for rule in fragment["rules"]:
            match = RECORD_MATCH.match(str(dig(rule, "name", "matches") or ""))
            served[dig(rule, "name", "as")] = match.group(1) if match else ""
    return served


def _names(everything: list[dict[str, Any]], made: tuple[str, ...] = ()) -> dict[str, Any]:
    """made: the LeaderWorkerSets KServe makes of the set's LLMInferenceServices."""
    with_meta = [o for o in everything if isinstance(o.get("metadata"), dict)]
    names: dict[str, Any] = {
        kind: {o["metadata"].get("name") for o in _of(with_meta, kind)}
        for kind in ("ConfigMap", "ServiceAccount", "LeaderWorkerSet", "DisaggregatedSet")
    }
    names["LeaderWorkerSet"] |= set(made)
    names["data"] = {
        o["metadata"].get("name"): o.get("data") or {}
        for o in _of(with_meta, "ConfigMap")
        if isinstance(o.get("data") or {}, dict)
    }
    names["secrets"] = {
        o["metadata"].get("name"): {*(o.get("data") or {}), *(o.get("stringData") or {})}
        for o in _of(with_meta, "Secret")
    }
    return names


def inventory(objects_by_file: dict[str, tuple[dict[str, Any], ...]]) -> Inventory:
    """Raises what reading an object the rules cannot read raises (the caller says so at the set)."""
    everything = [o for docs in objects_by_file.values() for o in docs if isinstance(o, dict)]
    kserve_sets, kserve_deployments = kserve.workloads(_of(everything, "LLMInferenceService"))
    return Inventory(
        lws={
            **kserve_sets,
            **{
                dig(o, "metadata", "name"): o
                for o in _of(everything, "LeaderWorkerSet")
                if isinstance(o.get("metadata"), dict)
            },
        },
        sets=ds_rules.sets_of(objects_by_file),
        named={
            kind: {dig(o, "metadata", "name"): o for o in _of(everything, kind)}
            for kind in ("Service", "InferencePool", "ServingRuntime")
        },
        workloads=(
            *(o for o in everything if o.get("kind") in ("Deployment", "Job")),
            *kserve_deployments,
            *kserve.isvc_deployments(_of(everything, "InferenceService"), _of(everything, "ServingRuntime")),
        ),
        names=_names(everything, tuple(kserve_sets)),
        scaled=frozenset(
            dig(o, "spec", "scaleTargetRef", "name")
            for o in everything
            if o.get("kind") in ("HorizontalPodAutoscaler", "ScaledObject")
        ),
        records=_records(everything),
        served=_adapter_names(everything),
    )
