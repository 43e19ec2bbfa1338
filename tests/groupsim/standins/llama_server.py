"""llama-server stand-in: connects to every --rpc host:port as llama.cpp's RPC backend does at
load and keeps each connection open while it serves (llama.cpp b10359 ggml-rpc.cpp get_socket,
send_rpc_cmd: one socket per server for the model's life), fails like it when one does not
answer (a HELLO unanswered within 5 s), then serves on --port. It exits when a held connection
is closed by its server, as llama-server aborts on a failed RPC send or receive
(ggml-rpc.cpp RPC_STATUS_ASSERT -> GGML_ABORT)."""

import os
import socket
import sys
import threading

import standin


def watch(connection: socket.socket, server: str) -> None:
    while connection.recv(4096):
        pass
    standin.log("llama-server", f"RPC server {server} closed the connection: abort")
    os._exit(134)


def main() -> int:
    rpc = [s for s in (standin.flag("--rpc") or "").split(",") if s]
    held = []
    for server in rpc:
        host, port = server.rsplit(":", 1)
        try:
            connection = socket.create_connection((host, int(port)), timeout=5)
            connection.sendall(b"HELLO\n")  # answered only once the server accepted this client
            if not connection.recv(64).startswith(b"HELLO"):
                raise OSError("no answer to HELLO")
        except OSError as error:
            standin.log("llama-server", f"failed to connect to RPC server {server}: {error}")
            return 1
        connection.settimeout(None)
        held.append(connection)
        threading.Thread(target=watch, args=(connection, server), daemon=True).start()
    standin.record("llama-server", rpc=rpc)
    standin.serve(int(standin.flag("--port", "8080")))
    standin.log("llama-server", f"model split over {len(rpc)} RPC servers and the local GPUs; serving")
    standin.block()
    return 0


if __name__ == "__main__":
    sys.exit(main())
