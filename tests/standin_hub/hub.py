"""A stand-in Hugging Face Hub on loopback: one repository at one commit, served through the HTTP
endpoints the real `huggingface_hub` client calls for snapshot_download (the tree listing and the
resolve URLs, with HEAD metadata and Range requests), so the download script runs unchanged
against it with HF_ENDPOINT pointing here. It records every request and can stall a file after
some bytes, to interrupt a download."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse


class Repo:
    def __init__(self, repo_id: str, commit: str, files: dict[str, bytes]):
        self.repo_id, self.commit, self.files = repo_id, commit, files

    def entry(self, path: str) -> dict:
        data = self.files[path]
        return {
            "type": "file",
            "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
            "size": len(data),
            "path": path,
            "lfs": {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134},
        }


class Hub:
    """Serve `repo` on 127.0.0.1; `stall` = (path, bytes): send that many bytes of the file, then hang."""

    def __init__(self, repo: Repo, token: str | None = None, refusal: str | None = "GatedRepo"):
        # refusal: the X-Error-Code of a 401 for a wrong token (None: a bare 401, as for an invalid token)
        self.repo, self.token, self.refusal = repo, token, refusal
        self.requests: list[tuple[str, str, dict]] = []
        self.stall: tuple[str, int] | None = None
        self.release = threading.Event()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                hub._handle(self, head=True)

            def do_GET(self):
                hub._handle(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Hub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def _send(self, handler, status: int, body: bytes = b"", headers: dict | None = None, head: bool = False):
        handler.send_response(status)
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if not head:
            handler.wfile.write(body)

    def _error(self, handler, status: int, code: str, head: bool):
        body = json.dumps({"error": code}).encode()
        self._send(handler, status, body, {"X-Error-Code": code, "Content-Type": "application/json"}, head)

    def _handle(self, handler, head: bool):
        url = urlparse(handler.path)
        path = unquote(url.path)
        self.requests.append((handler.command, path, dict(handler.headers)))
        if self.token is not None and handler.headers.get("Authorization") != f"Bearer {self.token}":
            if self.refusal is None:
                return self._send(
                    handler, 401, b'{"error": "Invalid credentials"}', {"Content-Type": "application/json"}, head
                )
            return self._error(handler, 401, self.refusal, head)
        repo = self.repo
        tree = re.fullmatch(rf"/api/models/{re.escape(repo.repo_id)}/tree/([^/]+)(?:/.*)?", path)
        if tree:
            if tree.group(1) != repo.commit:
                return self._error(handler, 404, "RevisionNotFound", head)
            body = json.dumps([repo.entry(p) for p in sorted(repo.files)]).encode()
            return self._send(handler, 200, body, {"Content-Type": "application/json"}, head)
        info = re.fullmatch(rf"/api/models/{re.escape(repo.repo_id)}/revision/([^/]+)", path)
        if info:
            if info.group(1) != repo.commit:
                return self._error(handler, 404, "RevisionNotFound", head)
            body = json.dumps(
                {"id": repo.repo_id, "sha": repo.commit, "siblings": [{"rfilename": p} for p in sorted(repo.files)]}
            ).encode()
            return self._send(handler, 200, body, {"Content-Type": "application/json"}, head)
        resolve = re.fullmatch(rf"/{re.escape(repo.repo_id)}/resolve/([^/]+)/(.+)", path)
        if not resolve:
            return self._error(handler, 404, "RepoNotFound", head)
        if resolve.group(1) != repo.commit:
            return self._error(handler, 404, "RevisionNotFound", head)
        name = resolve.group(2)
        if name not in repo.files:
            return self._error(handler, 404, "EntryNotFound", head)
        return self._file(handler, name, head)

    def _file(self, handler, name: str, head: bool):
        data, entry = self.repo.files[name], self.repo.entry(name)
        headers = {
            "X-Repo-Commit": self.repo.commit,
            "ETag": f'"{entry["oid"]}"',
            "X-Linked-Etag": f'"{entry["lfs"]["oid"]}"',
            "X-Linked-Size": str(len(data)),
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        start = 0
        wanted = re.fullmatch(r"bytes=(\d+)-", handler.headers.get("Range", "") or "")
        if wanted:
            start = int(wanted.group(1))
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        body = data[start:]
        status = 206 if wanted else 200
        if head or not (self.stall and self.stall[0] == name and not wanted):
            return self._send(handler, status, body, headers, head)
        # send part of the file, then hang until released: the client is killed meanwhile
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body[: self.stall[1]])
        handler.wfile.flush()
        while not self.release.wait(0.05):
            time.sleep(0)
