#!/usr/bin/env python3
"""The simulated cluster's `kubectl`: hands its arguments, its ServiceAccount token (if the pod has
one mounted) and its own stdin/stdout/stderr to the simulator's API server over a Unix socket, which
answers `get` and runs `exec` in the target container with these very file descriptors, as the
kubelet streams an exec. Exits with the status the server sends. Self-contained: an init container
copies it into the pod, so it imports nothing of the simulator."""

import json
import os
import socket
import sys

SOCKET = "/run/groupsim/api.sock"
TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def main() -> int:
    token = open(TOKEN).read().strip() if os.path.exists(TOKEN) else None
    request = json.dumps({"argv": sys.argv[1:], "token": token}).encode() + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as api:
        try:
            api.connect(SOCKET)
        except OSError as error:
            print(f"The connection to the server was refused: {error}", file=sys.stderr)
            return 1
        socket.send_fds(api, [request], [0, 1, 2])
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = api.recv(4096)
            if not chunk:
                print("error: the API server closed the connection", file=sys.stderr)
                return 1
            reply += chunk
    return int(json.loads(reply)["code"])


if __name__ == "__main__":
    sys.exit(main())
