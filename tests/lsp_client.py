"""A minimal Language Server Protocol client: open one YAML document in the real yaml-language-server
(over stdio, the JSON-RPC framing of the LSP specification) and return the diagnostics it publishes."""

import json
import os
import select
import subprocess

SETTINGS = {"validate": True, "schemaStore": {"enable": False}, "format": {"enable": False}, "completion": False}


class _Connection:
    def __init__(self, server: str):
        self.proc = subprocess.Popen(
            [server, "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.buffer = b""

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self) -> dict | None:
        while True:
            if b"\r\n\r\n" in self.buffer:
                head, rest = self.buffer.split(b"\r\n\r\n", 1)
                length = next(
                    int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")
                )
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    return json.loads(rest[:length])
            ready, _, _ = select.select([self.proc.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    return None
                self.buffer += chunk
            elif self.proc.poll() is not None:
                return None


def diagnostics(server: str, path: str, messages: int = 200) -> list[dict]:
    """The diagnostics yaml-language-server publishes for the file at path (bounded by the number of
    messages read, not by a clock: a busy machine only makes it slower)."""
    connection = _Connection(server)
    uri = f"file://{path}"
    try:
        connection.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": f"file://{os.path.dirname(path)}", "capabilities": {}},
            }
        )
        for _ in range(messages):
            message = connection.receive()
            if message is None or message.get("id") == 1:
                break
        connection.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        connection.send(
            {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": {"yaml": SETTINGS}}}
        )
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        document = {"uri": uri, "languageId": "yaml", "version": 1, "text": text}
        connection.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}})
        for _ in range(messages):
            message = connection.receive()
            if message is None:
                break
            if message.get("method") == "workspace/configuration":
                items = message["params"]["items"]
                connection.send({"jsonrpc": "2.0", "id": message["id"], "result": [SETTINGS for _ in items]})
            elif message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                return message["params"]["diagnostics"]
        raise AssertionError("yaml-language-server published no diagnostics")
    finally:
        connection.proc.kill()
        connection.proc.wait()
        connection.proc.stdin.close()
        connection.proc.stdout.close()
