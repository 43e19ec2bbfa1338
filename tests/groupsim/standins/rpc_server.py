"""rpc-server stand-in: listens on --host:--port and accepts the leader's connections; with -c it
writes a tensor to its cache as rpc-server does ($LLAMA_CACHE/rpc/<hash>), so an unwritable cache
fails it."""

import os
import socket
import sys
import threading

import standin


def main() -> int:
    server = socket.create_server((standin.flag("--host", "0.0.0.0"), int(standin.flag("--port", "50052"))))
    cache = None
    if "-c" in sys.argv[1:]:
        cache = os.path.join(os.environ["LLAMA_CACHE"], "rpc")
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, "0123abcd"), "wb") as tensor:
            tensor.write(b"\0" * 1024)
    standin.record("rpc-server", cache=cache, devices=os.environ.get("CUDA_VISIBLE_DEVICES"))
    standin.log("rpc-server", "listening")
    threading.Thread(target=lambda: [server.accept() for _ in iter(int, 1)], daemon=True).start()
    standin.block()
    return 0


if __name__ == "__main__":
    sys.exit(main())
