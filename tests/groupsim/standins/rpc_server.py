"""rpc-server stand-in: listens on --host:--port and accepts the leader's connections."""

import socket
import sys
import threading

import standin


def main() -> int:
    server = socket.create_server((standin.flag("--host", "0.0.0.0"), int(standin.flag("--port", "50052"))))
    standin.record("rpc-server")
    standin.log("rpc-server", "listening")
    threading.Thread(target=lambda: [server.accept() for _ in iter(int, 1)], daemon=True).start()
    standin.block()
    return 0


if __name__ == "__main__":
    sys.exit(main())
