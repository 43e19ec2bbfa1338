"""Kubernetes' own limits on what the profile puts into object metadata: label keys and values,
annotation keys, and 256 KiB of annotations per object (apimachinery validation: IsQualifiedName,
IsValidLabelValue, ValidateAnnotationsSize). The API server refuses an object past them."""

import re

from lwsgen import registry
from lwsgen.check.pods import SET_OWNED_PREFIXES, annotation_owner
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE

_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
KEY = re.compile(rf"(?:(?P<prefix>{_PREFIX})/)?(?P<name>{_NAME})")
LABEL_VALUE = re.compile(rf"(?:{_NAME})?")
ANNOTATIONS_BYTES = 256 * 1024


def key_problem(key: str) -> str | None:
    match = KEY.fullmatch(key)
    if match is None:
        return (
            "not a qualified name: an optional DNS-subdomain prefix and '/', then a name of letters, digits, "
            "'-', '_' and '.' that starts and ends with a letter or digit"
        )
    if len(match["name"]) > 63:
        return f"its name part is {len(match['name'])} characters; at most 63"
    if match["prefix"] and len(match["prefix"]) > 253:
        return f"its prefix is {len(match['prefix'])} characters; at most 253"
    return None


def label_value_problem(value: str) -> str | None:
    if len(value) > 63:
        return f"{len(value)} characters; a label value is at most 63"
    if not LABEL_VALUE.fullmatch(value):
        return "not a label value: letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None


def _labels(src: Source, field: tuple, labels) -> list[Problem]:
    out = []
    for key, value in labels.items():
        why = key_problem(key)
        if why:
            out.append(src.problem((*field, key), f"label key {key!r} is {why}", "bad-label", key=True))
        why = label_value_problem(str(value))
        if why:
            out.append(src.problem((*field, key), f"label value is {why}", "bad-label"))
    return out


def _annotations(src: Source, field: tuple, annotations) -> list[Problem]:
    return [
        src.problem((*field, key), f"annotation key {key!r} is {why}", "bad-annotation", key=True)
        for key in annotations
        if (why := key_problem(key))
    ]


def _owned(src: Source, field: tuple, annotations) -> list[Problem]:
    return [
        src.problem((*field, key), f"annotation {key!r}: {annotation_owner(key)}", "reserved-annotation", key=True)
        for key in annotations
        if key.startswith(SET_OWNED_PREFIXES)
    ]


@registry.rule("bad-annotation", "bad-label", "reserved-annotation", "too-large", scope=PROFILE, severity=ERROR)
def check(profile: Profile, src: Source) -> list[Problem]:
    """labels, annotations and nodeSelector keys and values are ones Kubernetes accepts, the annotations
    leave the keys lwsgen derives from the scheduling fields alone, and those of an object stay within
    its 256 kB."""
    out = _labels(src, ("labels",), profile.labels)
    out += _labels(src, ("monitoring", "prometheusLabels"), profile.monitoring.prometheus_labels)
    out += _labels(src, ("node", "nodeSelector"), profile.node.node_selector)
    out += _annotations(src, ("annotations",), profile.annotations)
    out += _owned(src, ("annotations",), profile.annotations)
    out += _annotations(src, ("service", "annotations"), profile.service.annotations)
    out += _annotations(src, ("scheduling", "podGroupAnnotations"), profile.scheduling.pod_group_annotations)
    for field, extra in ((("annotations",), {}), (("service", "annotations"), profile.service.annotations)):
        merged = {**profile.annotations, **extra}
        size = sum(len(k.encode()) + len(str(v).encode()) for k, v in merged.items())
        if size > ANNOTATIONS_BYTES:
            out.append(
                src.problem(
                    field, f"annotations of one object total {size} bytes; at most {ANNOTATIONS_BYTES}", "too-large"
                )
            )
    return out
