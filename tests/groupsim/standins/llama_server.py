"""llama-server stand-in: connects to every --rpc host:port as llama.cpp's RPC backend does at
load, fails like it when one does not answer, then serves on --port."""

import socket
import sys

import standin


def main() -> int:
    rpc = [s for s in (standin.flag("--rpc") or "").split(",") if s]
    for server in rpc:
        host, port = server.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as error:
            standin.log("llama-server", f"failed to connect to RPC server {server}: {error}")
            return 1
    standin.record("llama-server", rpc=rpc)
    standin.serve(int(standin.flag("--port", "8080")))
    standin.log("llama-server", f"model split over {len(rpc)} RPC servers and the local GPUs; serving")
    standin.block()
    return 0


if __name__ == "__main__":
    sys.exit(main())
