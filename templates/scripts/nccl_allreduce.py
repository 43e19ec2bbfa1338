"""lwsgen: all-reduce bus bandwidth across one group's shape, with PyTorch and NCCL (no operator).

Started by torchrun on every pod of an Indexed Job. Sizes double from 8 bytes to LWSGEN_MAX_BYTES;
rank 0 prints a row per size and one verdict line, and exits 1 when the bus bandwidth at the
largest size is below LWSGEN_MIN_BUS_BW_GBPS (0: no bar). Bus bandwidth is computed as nccl-tests
does: algbw = bytes / time, busbw = algbw * 2 (n - 1) / n for n ranks. LWSGEN_DIST_BACKEND=gloo
runs the same measurement on CPUs (how the test suite runs it, with no GPU).
"""

from __future__ import annotations

import os
import sys
import time

UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_size(text: str) -> int:
    """nccl-tests size syntax: 1048576, 512K, 64M, 16G."""
    number, unit = (text[:-1], text[-1]) if text[-1] in UNITS else (text, "")
    return int(number) * UNITS[unit]


def bus_bandwidth(size_bytes: int, seconds: float, world: int) -> float:
    """GB/s on the bus for one all-reduce of size_bytes over world ranks."""
    algbw = size_bytes / seconds / 1e9
    return algbw * 2 * (world - 1) / world


def sizes(max_bytes: int) -> list[int]:
    out, size = [], 8
    while size <= max_bytes:
        out.append(size)
        size *= 2
    return out


def verdict(size_bytes: int, busbw: float, required: float) -> tuple[bool, str]:
    passed = required <= 0 or busbw >= required
    word = "PASS" if passed else "FAIL"
    return passed, f"lwsgen nccl-test: {word}: bus bandwidth {busbw:.2f} GB/s at {size_bytes} bytes, required {required:g} GB/s"


def main() -> int:
    import torch
    import torch.distributed as dist

    backend = os.environ.get("LWSGEN_DIST_BACKEND", "nccl")
    device = "cuda" if backend == "nccl" else "cpu"
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if device == "cuda":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    max_bytes = parse_size(os.environ["LWSGEN_MAX_BYTES"])
    required = float(os.environ["LWSGEN_MIN_BUS_BW_GBPS"])
    last = (0, 0.0)
    if rank == 0:
        print(f"{'bytes':>14} {'time (us)':>12} {'algbw GB/s':>11} {'busbw GB/s':>11}", flush=True)
    for size in sizes(max_bytes):
        tensor = torch.ones(max(size // 4, 1), dtype=torch.float32, device=device)
        iterations = 20 if size < 2**30 else 5
        for _ in range(3):
            dist.all_reduce(tensor)
        synchronize()
        start = time.perf_counter()
        for _ in range(iterations):
            dist.all_reduce(tensor)
        synchronize()
        seconds = (time.perf_counter() - start) / iterations
        busbw = bus_bandwidth(tensor.numel() * 4, seconds, world)
        last = (tensor.numel() * 4, busbw)
        if rank == 0:
            print(f"{last[0]:>14} {seconds * 1e6:>12.1f} {last[0] / seconds / 1e9:>11.2f} {busbw:>11.2f}", flush=True)
    dist.destroy_process_group()
    if rank != 0:
        return 0
    passed, line = verdict(last[0], last[1], required)
    print(line, flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
