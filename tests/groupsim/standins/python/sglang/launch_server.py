"""SGLang stand-in: the multi-node rendezvous SGLang does (torch.distributed over --dist-init-addr,
--nnodes, --node-rank; gloo here, one process per node), then, as SGLang's scheduler does on every
loop iteration, a broadcast across the group (broadcast_pyobj over the CPU group), so a lost peer
ends every other node with an error; node rank 0 serves on --port."""

import datetime
import sys
import time

import standin


def main() -> int:
    standin.refuse_as_parser("sglang", sys.argv[1:])
    # torch once the argv has passed: a refusal needs no torch (make test checks them without the groupsim extra)
    import torch
    import torch.distributed as dist

    nnodes, rank = int(standin.flag("--nnodes", "1")), int(standin.flag("--node-rank", "0"))
    address = standin.flag("--dist-init-addr")
    standin.log("sglang", f"node {rank} of {nnodes}: rendezvous at {address}")
    dist.init_process_group(
        "gloo", init_method=f"tcp://{address}", world_size=nnodes, rank=rank, timeout=datetime.timedelta(seconds=60)
    )
    standin.record("sglang", world=dist.get_world_size(), rank=dist.get_rank())
    if rank == 0 or standin.flag("--port"):  # other nodes: SGLang's placeholder server, where given a port
        standin.serve(int(standin.flag("--port", "30000")))
    tick = torch.zeros(1)
    while True:
        dist.broadcast(tick, src=0)
        tick += 1
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
