"""`vllm` / `aphrodite` CLI stand-in, `serve <model>` only. With --distributed-executor-backend ray
it is the Ray engine (ray_engine.py). Otherwise, with --nnodes above 1, it does the native
multi-node rendezvous: torch.distributed (gloo here) at tcp://--master-addr:--master-port, world
--nnodes, rank --node-rank, as vLLM's multiprocessing executor does across nodes
(vllm/distributed/parallel_state.py); node rank 0 serves on --port, --headless nodes only compute.
vLLM would notice a lost node only at its next step, so this one never does either."""

import datetime
import sys

import standin


def main() -> int:
    program = standin.PROGRAM
    if sys.argv[1:2] != ["serve"] or len(sys.argv) < 3:
        standin.log(program, f"usage: {program} serve <model> [options]; got {sys.argv[1:]}")
        return 2
    standin.refuse_as_parser(program, sys.argv[2:])  # `vllm serve` / `aphrodite serve` read what follows
    if standin.flag("--distributed-executor-backend") == "ray":
        import ray_engine

        return ray_engine.main(program)
    nnodes, rank = int(standin.flag("--nnodes", "1")), int(standin.flag("--node-rank", "0"))
    headless = "--headless" in sys.argv
    data = int(standin.flag("--data-parallel-size", "1"))
    if data > 1:
        # data parallelism across nodes: each pod its --data-parallel-size-local engines from its
        # start rank, coordinated at --data-parallel-address:--data-parallel-rpc-port (one process per pod here)
        local = int(standin.flag("--data-parallel-size-local", str(data)))
        start = int(standin.flag("--data-parallel-start-rank", "0"))
        nnodes, rank = data // local, start // local
        address = f"{standin.flag('--data-parallel-address')}:{standin.flag('--data-parallel-rpc-port', '29550')}"
    else:
        address = f"{standin.flag('--master-addr')}:{standin.flag('--master-port', '29501')}"
    if nnodes > 1:
        import torch.distributed as dist

        standin.log(program, f"node {rank} of {nnodes}: rendezvous at {address}")
        dist.init_process_group(
            "gloo", init_method=f"tcp://{address}", world_size=nnodes, rank=rank, timeout=datetime.timedelta(seconds=60)
        )
        world = dist.get_world_size()
    else:
        world = 1
    ranks = list(range(rank * (data // nnodes), (rank + 1) * (data // nnodes))) if data > 1 else None
    standin.record(program, model=sys.argv[2], world=world, rank=rank, headless=headless, dp_ranks=ranks)
    if not headless:
        standin.serve(int(standin.flag("--port", "8000")))
    standin.block()
    return 0


if __name__ == "__main__":
    sys.exit(main())
