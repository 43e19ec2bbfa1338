"""vLLM / Aphrodite OpenAI server stand-in on a Ray cluster: connects to the running Ray cluster as
the engine does (ray.init(address="auto")), asks for a placement group of tensor x pipeline
{"GPU": 1} bundles as vLLM's Ray executor does, fails like the engine when the cluster cannot hold
it, then serves on --port."""

import standin


def main(program: str) -> int:
    import ray
    from ray.util.placement_group import placement_group

    tensor = int(standin.flag("--tensor-parallel-size", "1"))
    pipeline = int(standin.flag("--pipeline-parallel-size", "1"))
    ray.init(address="auto", logging_level="ERROR")
    nodes = [n for n in ray.nodes() if n["Alive"]]
    gpus = int(sum(n["Resources"].get("GPU", 0) for n in nodes))
    group = placement_group([{"GPU": 1}] * (tensor * pipeline))
    ready = group.wait(timeout_seconds=20)
    standin.record(program, ray_nodes=len(nodes), ray_gpus=gpus, placement_group_ready=ready)
    if not ready:
        standin.log(program, f"placement group of {tensor * pipeline} GPU bundles not schedulable on {gpus} GPUs")
        return 1
    standin.log(program, f"{tensor}x{pipeline} GPU bundles placed on {len(nodes)} Ray nodes; serving")
    standin.serve(int(standin.flag("--port", "8000")))
    standin.block()
    return 0
