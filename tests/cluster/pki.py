"""The test cluster's certificates and keys, made with openssl for one run: a CA, the API server's
serving certificate, a client certificate per component, the service-account signing key and the
LWS webhook's serving certificate (the API server calls it at https://127.0.0.1)."""

from __future__ import annotations

import subprocess
from pathlib import Path

SERVER_NAMES = "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.0.0.1"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class Pki:
    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        _openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=lwsgen-test-ca", "-days", "2", cwd=root,
        )  # fmt: skip
        # Service-account tokens: RS256, the algorithm every client of the API server accepts.
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=root)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=root)

    @property
    def ca(self) -> Path:
        return self.root / "ca.crt"

    def path(self, name: str) -> Path:
        return self.root / name

    def issue(self, name: str, common_name: str, *, group: str | None = None, server_names: str | None = None):
        """name.crt and name.key signed by the CA: a client certificate for common_name (and group), or a
        serving certificate for server_names."""
        subject = (f"/O={group}" if group else "") + f"/CN={common_name}"
        _openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=self.root,
        )  # fmt: skip
        usage = "serverAuth" if server_names else "clientAuth"
        lines = ["basicConstraints=CA:FALSE", "keyUsage=digitalSignature,keyEncipherment", f"extendedKeyUsage={usage}"]
        if server_names:
            lines.append(f"subjectAltName={server_names}")
        (self.root / f"{name}.ext").write_text("\n".join(lines) + "\n")
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=self.root,
        )  # fmt: skip
        return self.root / f"{name}.crt", self.root / f"{name}.key"

    def kubeconfig(self, name: str, server: str, common_name: str, group: str | None = None) -> Path:
        """A kubeconfig for a component that authenticates with its own client certificate."""
        cert, key = self.issue(name, common_name, group=group)
        path = self.root / f"{name}.kubeconfig"
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: test\n  cluster:\n    server: {server}\n    certificate-authority: {self.ca}\n"
            f"users:\n- name: {name}\n  user:\n    client-certificate: {cert}\n    client-key: {key}\n"
            f"contexts:\n- name: test\n  context:\n    cluster: test\n    user: {name}\n"
            "current-context: test\n"
        )
        return path
