"""A hatch adds to what lwsgen writes; it never takes away or changes it. `lost` compares one of
lwsgen's objects with what a patch or a replacing template made of it and yields every path where
a value lwsgen wrote is gone or different: mappings keep every key with its value (new keys are
the hatch's own), lists of named entries (containers, env, volumes, ports, mounts) keep every entry
by its key with its fields (new entries are the hatch's own; the first container stays first), any
other list (command, args, tolerations) stays as it was."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# The key a list's entries are known by, by what the entries hold (Kubernetes' merge keys).
ENTRY_KEYS = ("name", "mountPath", "containerPort", "port", "devicePath", "ip", "uid")


def _entry_key(items: list) -> str | None:
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    return next((key for key in ENTRY_KEYS if all(key in item for item in items)), None)


def lost(before: Any, after: Any, at: tuple = ()) -> Iterator[tuple]:
    """Paths (in `before`) of what lwsgen wrote that `after` no longer has as it was."""
    if isinstance(before, dict):
        if not isinstance(after, dict):
            yield at
            return
        for key, value in before.items():
            if key not in after:
                yield (*at, key)
            else:
                yield from lost(value, after[key], (*at, key))
    elif isinstance(before, list):
        yield from _lost_list(before, after, at)
    elif before != after or type(before) is not type(after):
        yield at


def _lost_list(before: list, after: Any, at: tuple) -> Iterator[tuple]:
    key = _entry_key(before)
    if key is None or not isinstance(after, list):
        if before != after:
            yield at
        return
    theirs = {item.get(key): item for item in after if isinstance(item, dict)}
    for index, item in enumerate(before):
        if item[key] not in theirs:
            yield (*at, index)
        else:
            yield from lost(item, theirs[item[key]], (*at, index))
    if (
        at
        and at[-1] == "containers"
        and before
        and (not after or not isinstance(after[0], dict) or after[0].get(key) != before[0][key])
    ):
        yield (*at, 0, key)  # the engine's container stays first
