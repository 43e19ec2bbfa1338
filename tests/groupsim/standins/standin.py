"""What every engine stand-in shares: record its argv and env where the test reads them, serve HTTP
on the serving port (200 on every path), and end cleanly on SIGTERM."""

import http.server
import json
import os
import signal
import socket
import sys
import threading
import time

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # at once: an engine may run as PID 1

RECORDS = "/run/groupsim/records"
PROGRAM = ""  # the name the image runs this stand-in as (set by its wrapper in bin/)


def record(program: str, **extra) -> None:
    entry = {"program": program, "argv": sys.argv[1:], "env": dict(os.environ), "hostname": socket.gethostname()}
    entry |= {"pid": os.getpid(), "time": time.time(), **extra}
    path = f"{RECORDS}/{socket.gethostname()}-{program}-{os.getpid()}.json"
    with open(path + ".tmp", "w") as out:
        json.dump(entry, out)
    os.rename(path + ".tmp", path)


def flag(name: str, default: str | None = None, argv: list[str] | None = None) -> str | None:
    args = sys.argv[1:] if argv is None else argv
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


def serve(port: int) -> None:
    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def log(program: str, text: str) -> None:
    print(f"{program} (stand-in): {text}", flush=True)


def block() -> None:
    """Run until SIGTERM (exit 0), as a server does."""
    while True:
        time.sleep(3600)


def refuse_as_parser(engine: str, argv: list[str]) -> None:
    """Exit 2 with argparse's "error:" line, as the engine does, on anything its own parser refuses
    or reads as another flag: lwsgen's checker over the flag table dumped from that parser
    (lwsgen/check/flags.py, lwsgen/runtimes/flags; tests/test_engine_flags.py holds the checker never
    looser than the real parser) at the image's version (LWSGEN_STANDIN_ENGINE_VERSION, from its tag;
    between two tables, what both refuse)."""
    from lwsgen.check import flags

    problems = flags.argv_problems_at(engine, os.environ.get("LWSGEN_STANDIN_ENGINE_VERSION") or None, argv)
    for _, message in problems:
        print(f"{PROGRAM or engine}: error: {message}", file=sys.stderr, flush=True)
    if problems:
        sys.exit(2)
