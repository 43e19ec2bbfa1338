"""Build schemas/kubernetes-scopes.json: whether each kind is Namespaced or Cluster scoped, from the
API's own data, never a hand-written list (lwsgen/output/guards/addedkinds.py refuses an added kind whose scope
is Cluster or not known).

- Built-in kinds: Kubernetes' discovery documents (api/discovery/ of kubernetes/kubernetes: each
  APIResourceList's `namespaced`, each aggregated APIGroupDiscoveryList's `scope`, cross-checked),
  read from the k8s.io/kubernetes Go module zips of the tags below (`go mod download`).
- Custom kinds: the `spec.scope` of every CRD in ../shared/crds.

`python tools/kubernetes_scopes.py [SHARED]` (needs Go and its module proxy; GOMODCACHE is reused).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
MODULE = "k8s.io/kubernetes"
TAGS = ["v1.29.6", "v1.30.14", "v1.31.14", "v1.32.13", "v1.33.13", "v1.34.4", "v1.35.4", "v1.36.3"]
OUT = REPO / "schemas" / "kubernetes-scopes.json"


def _zip(tag: str) -> str:
    found = subprocess.run(
        ["go", "mod", "download", "-json", f"{MODULE}@{tag}"], check=True, capture_output=True, text=True, cwd="/"
    )
    return json.loads(found.stdout)["Zip"]


def _discovery(tag: str) -> dict[str, str]:
    prefix, lists, aggregated = f"{MODULE}@{tag}/api/discovery/", {}, {}
    with zipfile.ZipFile(_zip(tag)) as archive:
        for name in sorted(n for n in archive.namelist() if n.startswith(prefix) and n.endswith(".json")):
            doc = json.loads(archive.read(name))
            if doc.get("kind") == "APIResourceList":
                for resource in doc.get("resources", []):
                    if "/" not in resource["name"]:
                        scope = "Namespaced" if resource["namespaced"] else "Cluster"
                        lists[f"{doc['groupVersion']} {resource['kind']}"] = scope
            elif doc.get("kind") == "APIGroupDiscoveryList":
                for group in doc.get("items", []):
                    name_ = group.get("metadata", {}).get("name", "")
                    for version in group.get("versions", []):
                        api_version = f"{name_}/{version['version']}" if name_ else version["version"]
                        for resource in version.get("resources", []):
                            kind = (resource.get("responseKind") or {}).get("kind")
                            if kind and "/" not in resource["resource"]:
                                aggregated[f"{api_version} {kind}"] = resource["scope"]
    clash = [k for k in aggregated.keys() & lists.keys() if aggregated[k] != lists[k]]
    if clash:
        sys.exit(f"{tag}: the discovery documents disagree on {clash}")
    return {**aggregated, **lists}


def _crds(shared: Path) -> dict[str, str]:
    out = {}
    for path in sorted((shared / "crds").glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if crd and crd.get("kind") == "CustomResourceDefinition":
                spec = crd["spec"]
                for version in spec["versions"]:
                    out[f"{spec['group']}/{version['name']} {spec['names']['kind']}"] = spec["scope"]
    return out


def main(argv: list[str]) -> int:
    shared = Path(argv[0]) if argv else REPO.parent / "shared"
    scopes: dict[str, str] = {}
    for tag in TAGS:
        for key, scope in _discovery(tag).items():
            if scopes.setdefault(key, scope) != scope:
                sys.exit(f"{key} changes scope in {tag}")
    builtin = len(scopes)
    scopes.update(_crds(shared))
    data = {
        "sources": [
            f"github.com/kubernetes/kubernetes api/discovery/ (Go module {MODULE}) at {', '.join(TAGS)}",
            "spec.scope of the CRDs in ../shared/crds",
        ],
        "scopes": dict(sorted(scopes.items())),
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT.relative_to(REPO)}: {builtin} built-in kinds, {len(scopes) - builtin} custom", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
