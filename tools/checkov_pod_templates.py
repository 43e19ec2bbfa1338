"""Scan every LeaderWorkerSet pod template with checkov and count failed checks per template.

checkov has no LeaderWorkerSet support, so each leader and worker template becomes a Pod (same
metadata and spec, plus the labels the LWS controller adds to every pod) in a scratch directory,
next to the NetworkPolicies found beside it. Usage:
    python tools/checkov_pod_templates.py CHECKOV OUT_DIR [REFERENCE_DIR]
Prints one line per template (failed checks), then the failed check IDs of lwsgen's templates.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import yaml


def pods(lws_file: Path, prefix: str) -> dict[str, dict]:
    found = {}
    for doc in yaml.safe_load_all(lws_file.read_text()):
        if not doc or doc.get("kind") != "LeaderWorkerSet":
            continue
        lwt = doc["spec"]["leaderWorkerTemplate"]
        for side in ("leaderTemplate", "workerTemplate"):
            template = lwt.get(side)
            if template:
                name = f"{prefix}{doc['metadata']['name']}-{side.removesuffix('Template')}"
                labels = {
                    **template.get("metadata", {}).get("labels", {}),
                    "leaderworkerset.sigs.k8s.io/name": doc["metadata"]["name"],
                    "leaderworkerset.sigs.k8s.io/worker-index": "0" if side == "leaderTemplate" else "1",
                }
                metadata = {
                    **template.get("metadata", {}),
                    "name": name,
                    "labels": labels,
                    "namespace": doc["metadata"].get("namespace", "default"),
                }
                found[name] = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}
    return found


def network_policies(directory: Path) -> list[dict]:
    return [
        doc
        for path in sorted(directory.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") == "NetworkPolicy"
    ]


def scan(checkov: str, manifests: dict[str, dict], policies: list[dict]) -> dict[str, list[str]]:
    with tempfile.TemporaryDirectory() as scratch:
        for name, pod in manifests.items():
            Path(scratch, f"{name}.yaml").write_text(yaml.safe_dump(pod))
        for index, policy in enumerate(policies):
            Path(scratch, f"zz-networkpolicy-{index}.yaml").write_text(yaml.safe_dump(policy))
        proc = subprocess.run(
            [checkov, "-d", scratch, "--framework", "kubernetes", "-o", "json", "--quiet", "--compact"],
            capture_output=True,
            text=True,
        )
    report = json.loads(proc.stdout or "{}")
    reports = report if isinstance(report, list) else [report]
    failed: dict[str, list[str]] = {name: [] for name in manifests}
    for rep in reports:
        for check in rep.get("results", {}).get("failed_checks", []):
            stem = Path(check["file_path"]).stem
            if stem in failed:
                failed[stem].append(f"{check['check_id']} {check['check_name']}")
    return failed


def main(argv: list[str]) -> int:
    checkov, out_dir = argv[0], Path(argv[1])
    reference = Path(argv[2]) if len(argv) > 2 else None
    manifests, policies = {}, []
    for lws in sorted(out_dir.glob("*/leaderworkerset.yaml")):
        manifests.update(pods(lws, ""))
        policies += network_policies(lws.parent)
    if reference and reference.is_dir():
        for path in sorted(reference.glob("lws_docs_examples_*.yaml")):
            manifests.update(pods(path, "upstream-"))
    failed = scan(checkov, manifests, policies)
    for name in sorted(failed):
        print(f"{len(failed[name]):3d} failed  {name}")
    ours = Counter(check for name, checks in failed.items() if not name.startswith("upstream-") for check in checks)
    print("\nfailed checks on lwsgen's pod templates (count of templates):")
    for check, count in sorted(ours.items()):
        print(f"  {count:3d}  {check}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
