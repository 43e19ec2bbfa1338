"""`lwsgen plan`: the sizing estimate as text or JSON, and a profile skeleton that renders."""

from __future__ import annotations

import json
from argparse import Namespace
from typing import Any

from lwsgen import runtimes
from lwsgen.check import sizing


class PlanError(Exception):
    pass


def _inputs(args: Namespace) -> tuple[float, str, sizing.Gpu, sizing.Model | None]:
    try:
        g = sizing.gpu(args.gpu)
        m = sizing.model(args.model) if args.model else None
    except sizing.UnknownName as err:
        raise PlanError(str(err)) from None
    params = m.params_b if m else args.params
    dtype = args.dtype or (m.dtype if m else "bf16")
    if args.gpus_per_node < 1 or args.context < 1 or args.concurrency < 1:
        raise PlanError("--gpus-per-node, --context and --concurrency must be at least 1") from ValueError()
    return params, dtype, g, m


def _parallelism(runtime: str, layout: sizing.Layout) -> dict:
    """The layout as the runtime takes it: llama.cpp splits layers over every GPU of the group, a
    pipeline degree of the world size."""

    if runtimes.get(runtime) is not None and not runtimes.newest_capabilities(runtime).tensor_splits_heads:
        return {"pipeline": layout.gpus}
    return layout.parallelism


def _moe_layouts(runtime: str | None) -> bool:
    """Data and expert parallel layouts only for a runtime that has them (any, when none is named)."""

    plugin = runtimes.get(runtime) if runtime else None
    return runtime is None or (plugin is not None and plugin.data_and_expert)


def profile_skeleton(args: Namespace, result: sizing.Plan, g: sizing.Gpu, m: sizing.Model | None, dtype: str) -> str:
    import yaml

    chosen = result.chosen
    # the weights on a claim, downloaded once (a hub id would make every pod download them at start)
    model: dict[str, Any] = {"path": f"/models/{m.hub_id}" if m else "/models/<model>"}
    model.update({"family": args.model} if m else {"params": args.params})
    model["dtype"] = dtype
    profile = {
        "name": args.emit_profile,
        "runtime": args.runtime,
        "image": args.image,
        "model": model,
        "parallelism": _parallelism(args.runtime, chosen),
        "node": {"gpus": args.gpus_per_node, "gpuProduct": g.product},
        "storage": {"claimName": "models", "mountPath": "/models", "readOnly": True},
        "service": {"type": "ClusterIP"},  # reachable in the cluster only until you choose how to expose it
    }
    # the modeline names a schema beside the file, which `lwsgen schema` writes wherever this one goes
    # (a path into lwsgen's own checkout would hold only there)
    modeline = (
        "# yaml-language-server: $schema=profile.schema.json\n"
        "# (editor completion: `lwsgen schema > profile.schema.json` beside this file, or name its path above)\n"
    )
    return modeline + yaml.safe_dump(profile, sort_keys=False)


def _text(args: Namespace, result: sizing.Plan, params: float, dtype: str) -> str:
    what = args.model or f"{params:g}B parameters"
    shape = f"{args.gpu} x {args.gpus_per_node} per node, {args.context} tokens x {args.concurrency}"
    head = f"{what} in {dtype} on {shape}:\n"
    if not result.chosen:
        return head + "".join(f"  {w}\n" for w in result.warnings)
    lines = [head]
    for label, layout in (("plan", result.chosen), ("or", result.alternative)):
        if layout:
            mem = layout.memory
            data = f"data {layout.data} x " if layout.data > 1 else ""
            expert = " with expert parallelism" if layout.data > 1 else ""
            lines.append(
                f"  {label}: {layout.nodes} node{'s' if layout.nodes > 1 else ''}, {data}tensor {layout.tensor} x "
                f"pipeline {layout.pipeline}{expert}"
                f" = {layout.gpus} GPUs; per GPU {mem.weights:.1f} GB weights + "
                f"{mem.kv_cache:.2f} GB KV cache"
                f" + {mem.overhead:.1f} GB overhead of {mem.usable:.1f} GB usable ({mem.free:.1f} GB free)\n"
            )
    lines += [f"  warning: {w}\n" for w in result.warnings]
    return "".join(lines)


def _check_emitted(args: Namespace) -> None:
    """The emitted profile must render: a name the schema takes and a runtime lwsgen has."""
    import re

    if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", args.emit_profile) or len(args.emit_profile) > 50:
        raise PlanError(
            f"--emit-profile {args.emit_profile!r} is not a profile name: a DNS-1035 label (lower-case letters, "
            "digits and '-', starting with a letter), at most 50 characters"
        )
    if runtimes.get(args.runtime) is None:
        raise PlanError(f"--runtime {args.runtime!r} is not a runtime lwsgen has; known: {', '.join(runtimes.known())}")


def run(args: Namespace) -> tuple[str, bool]:
    params, dtype, g, m = _inputs(args)
    moe = _moe_layouts(args.runtime)
    result = sizing.plan(params, dtype, g, args.gpus_per_node, m, args.context, args.concurrency, moe)
    if args.emit_profile:
        if not (args.runtime and args.image):
            raise PlanError("--emit-profile needs --runtime and --image") from ValueError()
        _check_emitted(args)
        if not result.chosen:
            raise PlanError("; ".join(result.warnings))
        return profile_skeleton(args, result, g, m, dtype), True
    if args.format == "json":
        body = {
            "model": args.model,
            "params": params,
            "dtype": dtype,
            "gpu": args.gpu,
            "gpusPerNode": args.gpus_per_node,
            "context": args.context,
            "concurrency": args.concurrency,
            "fits": result.chosen is not None,
            **(
                result.chosen.to_dict()
                if result.chosen
                else {"nodes": None, "parallelism": None, "memoryPerGpuGB": None}
            ),
            "alternative": result.alternative.to_dict() if result.alternative else None,
            "warnings": list(result.warnings),
        }
        body["fits"] = result.chosen is not None
        return json.dumps(body, indent=2) + "\n", result.chosen is not None
    return _text(args, result, params, dtype), result.chosen is not None
