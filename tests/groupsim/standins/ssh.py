"""ssh stand-in for the MPIJob launcher: `ssh [-o OPT]... [-x] HOST COMMAND...` runs COMMAND with
/bin/sh -c in pod HOST (its first DNS label) through the simulator, on this process's own stdio."""

import json
import socket
import sys


def main() -> int:
    args, i = sys.argv[1:], 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-o", "-p", "-l", "-i", "-F") else 1
    host, command = args[i], " ".join(args[i + 1 :])
    request = json.dumps({"argv": ["ssh", host.split(".")[0], command], "token": None}).encode() + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as api:
        api.connect("/run/groupsim/api.sock")
        socket.send_fds(api, [request], [0, 1, 2])
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = api.recv(4096)
            if not chunk:
                return 255
            reply += chunk
    return int(json.loads(reply)["code"])


if __name__ == "__main__":
    sys.exit(main())
