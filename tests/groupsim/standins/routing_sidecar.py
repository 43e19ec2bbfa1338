"""llm-d's P/D routing sidecar stand-in (ghcr.io/llm-d/llm-d-router-disagg-sidecar): listens on
--port and passes every request to the decode engine at localhost:--model-server-port, as the
sidecar does for a request without a prefill header (llm-d-routing-sidecar cmd/pd-sidecar flags
--port, --model-server-port, --kv-connector, --secure-proxy). Unknown flags exit 2, as Go's flag
package does."""

import http.client
import http.server
import sys
import threading

import standin

FLAGS = {"--port", "--model-server-port", "--kv-connector", "--secure-proxy"}  # those lwsgen writes; others refused


def main() -> int:
    for arg in sys.argv[1:]:
        name = arg.split("=", 1)[0]
        if name.startswith("-") and "--" + name.lstrip("-") not in FLAGS:
            print(f"flag provided but not defined: {name}", file=sys.stderr, flush=True)
            return 2
    port, engine = int(standin.flag("--port", "8000")), int(standin.flag("--model-server-port", "8001"))

    class Proxy(http.server.BaseHTTPRequestHandler):
        def _pass(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                upstream = http.client.HTTPConnection("127.0.0.1", engine, timeout=30)
                upstream.request(self.command, self.path, body=body or None, headers=dict(self.headers))
                answer = upstream.getresponse()
                data, status = answer.read(), answer.status
            except OSError:
                data, status = b"decode engine not reachable\n", 502
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _pass  # noqa: N815 (http.server's names)

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    standin.record("llm-d-routing-sidecar", port=port, engine=engine)
    standin.block()
    return 0


if __name__ == "__main__":
    sys.exit(main())
