"""nccl-tests' all_reduce_perf stand-in: rank 0 prints the table nccl-tests prints, with the bus
bandwidth the simulated fabric has (GROUPSIM_BUS_BW_GBPS), sizes from -b to -e by -f."""

import os
import sys

import standin

UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}


def size(text: str) -> int:
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def main() -> int:
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    standin.record("all_reduce_perf", rank=rank, world=world)
    if rank != 0:
        return 0
    busbw = float(os.environ.get("GROUPSIM_BUS_BW_GBPS", "0"))
    begin, end, factor = size(standin.flag("-b", "8")), size(standin.flag("-e", "8")), int(standin.flag("-f", "2"))
    print(f"# nThread 1 nGpus 1 minBytes {begin} maxBytes {end} step: {factor}(factor) warmup iters: 5 iters: 20")
    columns = "time   algbw   busbw #wrong"
    print(f"#       size         count      type   redop    root     {columns}     {columns}")
    n = begin
    while n <= end:
        algbw = busbw * world / (2 * (world - 1)) if world > 1 else busbw
        time_us = n / (algbw * 1e3) if algbw else 0
        row = f"{n:>12} {n // 4:>12}     float     sum      -1 {time_us:8.1f} {algbw:7.2f} {busbw:7.2f}      0"
        print(f"{row} {time_us:8.1f} {algbw:7.2f} {busbw:7.2f}      0")
        n *= factor
    print(f"# Avg bus bandwidth    : {busbw:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
