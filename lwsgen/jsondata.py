"""JSON's data model, which every object the API server takes is made of: YAML can say more (binary,
dates, sets, keys that are not strings, integers past int64, infinities), and none of that may
reach a Kubernetes object, a schema validator or a cross-object rule."""

from __future__ import annotations

import math
from typing import Any

INT64 = range(-(2**63), 2**63)  # what the API server's integers hold


def not_json(value: Any, path: tuple = ()) -> tuple | None:
    """The path of the first value that is not JSON data (a non-string key: the mapping's path),
    or None when all of it is."""
    return None if _all_json(value) else _first_not_json(value, path)


def _all_json(value: Any) -> bool:
    """Whether every value is JSON data, for the exact types a YAML reader builds (a subclass is left
    to _first_not_json): no path is built per value, which cost more than the check (validate)."""
    pending, seen = [value], set()
    while pending:
        current = pending.pop()
        kind = type(current)
        if kind is str or kind is bool or current is None:
            continue
        if kind is dict or kind is list:
            if id(current) in seen:
                return False  # shared through a YAML alias, or containing itself: left to the walk
            seen.add(id(current))
        if kind is dict:
            if not all(type(key) is str for key in current):
                return False
            pending.extend(current.values())
        elif kind is list:
            pending.extend(current)
        elif kind is int:
            if current not in INT64:
                return False
        elif kind is not float or not math.isfinite(current):
            return False
    return True


def _first_not_json(value: Any, path: tuple) -> tuple | None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return path
            found = _first_not_json(item, path + (key,))
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_not_json(item, path + (index,))
            if found is not None:
                return found
        return None
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return None
    if isinstance(value, int):
        return None if value in INT64 else path
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    return path


NOT_JSON = (
    "a value JSON cannot hold (a !!binary, a date, a set, a key that is not a string, an integer beyond int64 or "
    "an infinity): the API server would refuse it; quote it"
)


def dig(obj: Any, *path: str) -> Any:
    """obj[path...], or None where a step is missing or not a mapping (validate reads hand-edited files)."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj
