"""The simulated API server: `kubectl get pods` (label and field selectors, jsonpath output) and
`kubectl exec POD -c C -- CMD` (CMD runs in that container's namespaces, with its environment, on the
caller's own stdin/stdout/stderr), each authorised against the rendered Role and RoleBinding as the
ServiceAccount whose token the caller presents; no token is `system:anonymous`."""

from __future__ import annotations

import json
import os
import re
import socket
import socketserver
import threading
from collections.abc import Callable
from typing import Any


class Forbidden(Exception):
    pass


class Rbac:
    """Namespaced Roles bound to ServiceAccounts, from the rendered objects."""

    def __init__(self, objects: list[dict[str, Any]]):
        roles = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if o.get("kind") == "Role"}
        self.rules: dict[tuple[str, str], list[dict]] = {}
        for binding in (o for o in objects if o.get("kind") == "RoleBinding"):
            namespace = binding["metadata"]["namespace"]
            role = roles.get((namespace, binding["roleRef"]["name"]))
            for subject in binding.get("subjects", []):
                if subject.get("kind") == "ServiceAccount" and role:
                    key = (subject.get("namespace", namespace), subject["name"])
                    self.rules.setdefault(key, []).extend(role.get("rules", []))

    def check(self, token: str | None, verb: str, resource: str, namespace: str, name: str | None) -> None:
        user = _service_account(token)
        if user is None:
            raise Forbidden(f'User "system:anonymous" cannot {verb} resource "{resource}" in namespace "{namespace}"')
        for rule in self.rules.get(user, []):
            if (
                "" in rule.get("apiGroups", [])
                and resource in rule.get("resources", [])
                and verb in rule.get("verbs", [])
                and (not rule.get("resourceNames") or name in rule["resourceNames"])
            ):
                return
        raise Forbidden(
            f'User "system:serviceaccount:{user[0]}:{user[1]}" cannot {verb} resource "{resource}"'
            + (f' named "{name}"' if name else "")
            + f' in namespace "{namespace}"'
        )


def _service_account(token: str | None) -> tuple[str, str] | None:
    if not token or not token.startswith("groupsim:"):
        return None
    _, namespace, name = token.split(":", 2)
    return namespace, name


def token_for(namespace: str, service_account: str) -> str:
    return f"groupsim:{namespace}:{service_account}"


# ---- kubectl's jsonpath, the part launch scripts use: {.a.b[*].c}, {range ...}{end}, {"text"}, [?(@.k=="v")]


def _walk(values: list[Any], path: str) -> list[Any]:
    for step in re.findall(r"\.([\w-]+)|\[(\*|\d+|\?\(@\.[\w]+==\"[^\"]*\"\))\]", path):
        key, index = step
        out: list[Any] = []
        for value in values:
            if key:
                if isinstance(value, dict) and key in value:
                    out.append(value[key])
            elif index == "*":
                out.extend(value if isinstance(value, list) else value.values() if isinstance(value, dict) else [])
            elif index.isdigit():
                if isinstance(value, list) and int(index) < len(value):
                    out.append(value[int(index)])
            else:
                field, wanted = re.match(r'\?\(@\.(\w+)=="([^"]*)"\)', index).groups()
                out.extend(v for v in value if isinstance(v, dict) and str(v.get(field)) == wanted)
        values = out
    return values


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def jsonpath(template: str, data: Any) -> str:
    tokens = re.findall(r"\{([^{}]*)\}|([^{}]+)", template)
    out, _ = _render(tokens, 0, data)
    return out


def _render(tokens: list, at: int, data: Any) -> tuple[str, int]:
    out = ""
    while at < len(tokens):
        expression, literal = tokens[at]
        at += 1
        if literal:
            out += literal
        elif expression == "end":
            return out, at
        elif expression.startswith("range "):
            body_start = at
            for item in _walk([data], expression[len("range ") :].strip()):
                text, at = _render(tokens, body_start, item)
                out += text
            if not _walk([data], expression[len("range ") :].strip()):
                _, at = _render(tokens, body_start, None)
        elif expression.startswith('"'):
            out += json.loads(expression)
        elif data is not None:
            out += " ".join(_text(v) for v in _walk([data], expression.strip()))
    return out, at


# ---- the server


class Cluster:
    """What the API server needs from the simulator."""

    pods_listing: Callable[[], list[dict[str, Any]]]
    exec_in: Callable[[str, str, str | None, list[str], list[int]], int]


def _selector_matches(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key.rstrip("=!")) != value.lstrip("="):
            return False
    return True


def _fields_match(pod: dict[str, Any], selector: str) -> bool:
    values = {"status.phase": pod["status"]["phase"], "metadata.name": pod["metadata"]["name"]}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if key not in values:
            raise ValueError(f'field label not supported: "{key}"')
        if values[key] != value.lstrip("="):
            return False
    return True


def _options(argv: list[str], flags: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """kubectl's flags as --name value, --name=value or -x value; the rest positional."""
    options, rest, i = {}, [], 0
    while i < len(argv):
        arg = argv[i]
        name, _, value = arg.partition("=")
        if name in flags:
            options[flags[name]] = value if "=" in arg else argv[i + 1]
            i += 1 if "=" in arg else 2
            continue
        rest.append(arg)
        i += 1
    return options, rest


GET_FLAGS = {"--namespace": "namespace", "-n": "namespace", "--selector": "selector", "-l": "selector"}
GET_FLAGS |= {"--field-selector": "fields", "--output": "output", "-o": "output"}
EXEC_FLAGS = {"--namespace": "namespace", "-n": "namespace", "--container": "container", "-c": "container"}


class ApiServer:
    def __init__(self, path: str, cluster: Cluster, rbac: Rbac):
        self.path, self.cluster, self.rbac = path, cluster, rbac
        self.requests: list[tuple[str, list[str]]] = []
        handler = self._handler()
        self.server = socketserver.ThreadingUnixStreamServer(path, handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        api = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                message, fds, _, _ = socket.recv_fds(self.request, 65536, 3)
                try:
                    request = json.loads(message)
                    code = api.serve(request["argv"], request.get("token"), fds)
                finally:
                    for fd in fds:
                        _close(fd)
                try:
                    self.request.sendall(json.dumps({"code": code}).encode() + b"\n")
                except OSError:
                    pass  # the caller is gone (its pod was killed): nobody to answer

        return Handler

    def serve(self, argv: list[str], token: str | None, fds: list[int]) -> int:
        self.requests.append((token or "", argv))
        stderr = fds[2]
        try:
            if argv[:2] == ["get", "pods"]:
                return self._get(argv[2:], token, fds[1])
            if argv[:1] == ["exec"]:
                return self._exec(argv[1:], token, fds)
            if argv[:1] == ["ssh"]:  # the MPIJob's ssh stand-in: sshd authorises by key, not RBAC
                return self.cluster.exec_in(None, argv[1], None, ["/bin/sh", "-c", argv[2]], fds)
            _write(stderr, f"error: the simulator's kubectl does not implement: {' '.join(argv)}\n")
            return 1
        except Forbidden as denied:
            _write(stderr, f"Error from server (Forbidden): {denied}\n")
            return 1
        except (ValueError, IndexError, KeyError) as error:
            _write(stderr, f"error: {error}\n")
            return 1

    def _get(self, argv: list[str], token: str | None, stdout: int) -> int:
        options, rest = _options(argv, GET_FLAGS)
        if rest:
            raise ValueError(f"unexpected arguments {rest}")
        namespace = options.get("namespace", "default")
        self.rbac.check(token, "list", "pods", namespace, None)
        items = [
            pod
            for pod in self.cluster.pods_listing()
            if pod["metadata"]["namespace"] == namespace
            and _selector_matches(pod["metadata"]["labels"], options.get("selector", ""))
            and _fields_match(pod, options.get("fields", ""))
        ]
        output = options.get("output", "name")
        listing = {"kind": "List", "items": items}
        if output.startswith("jsonpath="):
            text = jsonpath(output[len("jsonpath=") :].strip("'"), listing)
        elif output == "json":
            text = json.dumps(listing) + "\n"
        elif output == "name":
            text = "".join(f"pod/{p['metadata']['name']}\n" for p in items)
        else:
            raise ValueError(f"output format {output!r} is not implemented by the simulator")
        _write(stdout, text)
        return 0

    def _exec(self, argv: list[str], token: str | None, fds: list[int]) -> int:
        if "--" not in argv:
            raise ValueError("exec needs -- before the command")
        split = argv.index("--")
        options, rest = _options(argv[:split], EXEC_FLAGS)
        [pod] = rest
        namespace = options.get("namespace", "default")
        self.rbac.check(token, "create", "pods/exec", namespace, pod)
        return self.cluster.exec_in(namespace, pod, options.get("container"), argv[split + 1 :], fds)


def _write(fd: int, text: str) -> None:
    try:
        os.write(fd, text.encode())
    except OSError:
        pass


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
