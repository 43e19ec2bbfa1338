"""rpc-server stand-in, as strict as the real one about clients: it listens with a backlog of 1 and
serves one client at a time, inline in its accept loop, until that client closes (llama.cpp
b10359 ggml/src/ggml-rpc/transport.cpp line 621 listen(sockfd, 1); ggml-rpc.cpp lines 1832-1839,
rpc_serve_client called inline; the same in the b5000 era, ggml 7d7aa2de ggml-rpc.cpp 1495-1506).
A connection made while llama-server holds its own therefore waits unaccepted, and once the
queue is full further connects time out, as they do on the real server. With -c it writes a
tensor to its cache as rpc-server does ($LLAMA_CACHE/rpc/<hash>), so an unwritable cache fails it."""

import os
import socket
import sys
import threading

import standin


def serve(server: socket.socket) -> None:
    while True:
        client, _ = server.accept()
        with client:  # one at a time: until this client closes, nobody else is accepted
            while data := client.recv(4096):
                if data.startswith(b"HELLO"):
                    client.sendall(b"HELLO 5.0.0\n")


def main() -> int:
    address = (standin.flag("--host", "0.0.0.0"), int(standin.flag("--port", "50052")))
    server = socket.create_server(address, backlog=1)
    cache = None
    if "-c" in sys.argv[1:]:
        cache = os.path.join(os.environ["LLAMA_CACHE"], "rpc")
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, "0123abcd"), "wb") as tensor:
            tensor.write(b"\0" * 1024)
    standin.record("rpc-server", cache=cache, devices=os.environ.get("CUDA_VISIBLE_DEVICES"))
    standin.log("rpc-server", "listening")
    threading.Thread(target=serve, args=(server,), daemon=True).start()
    standin.block()
    return 0


if __name__ == "__main__":
    sys.exit(main())
