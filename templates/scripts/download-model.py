"""lwsgen: download one pinned revision of a Hugging Face Hub repository into the model claim, once
per cluster (the model-download Job runs it). Resumable by file: the files an interrupted run
finished stay, and the next run (the Job's next pod) fetches only the rest. A file cut off is
fetched again from its start: huggingface_hub writes each attempt to a temporary file of its own
(huggingface_hub PR #4228), which this script removes when it starts (older clients resume
<etag>.incomplete files, which it leaves).
The marker <target>/.lwsgen-complete is written last, atomically; the serving pods wait for it.
Exit status 2: a permanent failure (no such repository or revision, no access), which the Job's
podFailurePolicy does not retry; 1: anything else, retried up to the Job's backoffLimit.

Environment: LWSGEN_REPO, LWSGEN_REVISION, LWSGEN_TARGET, LWSGEN_ALLOW_PATTERNS (a JSON list, or
empty for every file); HF_TOKEN (from the profile's tokenSecret) and HF_ENDPOINT as huggingface_hub
reads them.
"""

import glob
import json
import os
import re
import sys
import time

PERMANENT = 2


def log(message: str) -> None:
    print(f"lwsgen model-download: {message}", flush=True)


# <hash>.<etag>.<8 hex digits>.incomplete: one attempt's temporary file, never reused
ATTEMPT = re.compile(r"\.[0-9a-f]{8}\.incomplete$")


def remove_dead_attempts(target: str) -> None:
    dead = [
        p
        for p in glob.glob(
            os.path.join(target, ".cache", "huggingface", "download", "**", "*.incomplete"), recursive=True
        )
        if ATTEMPT.search(p)
    ]
    size = sum(os.path.getsize(p) for p in dead)
    for path in dead:
        os.remove(path)
    if dead:
        log(f"removed {len(dead)} partial file(s) of an interrupted run ({size / 1e9:.1f} GB), fetched again")


def main() -> int:
    repo, revision, target = (os.environ[k] for k in ("LWSGEN_REPO", "LWSGEN_REVISION", "LWSGEN_TARGET"))
    allow = json.loads(os.environ.get("LWSGEN_ALLOW_PATTERNS") or "null")
    marker = os.path.join(target, ".lwsgen-complete")
    if os.path.exists(marker):
        log(f"{repo}@{revision} is already complete in {target}")
        return 0
    try:
        from huggingface_hub import snapshot_download

        try:
            from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
        except ImportError:  # huggingface_hub before 0.23
            from huggingface_hub.utils import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
    except ImportError as err:
        log(f"this image has no huggingface_hub ({err}); set model.source.image to one with it")
        return PERMANENT
    os.makedirs(target, exist_ok=True)
    remove_dead_attempts(target)
    log(f"downloading {repo}@{revision} into {target}" + (f" (only {', '.join(allow)})" if allow else ""))
    started = time.monotonic()
    try:
        snapshot_download(repo_id=repo, revision=revision, local_dir=target, allow_patterns=allow)
    except RevisionNotFoundError:
        log(f"{repo} has no revision {revision}: pin model.source.revision to a commit of the repository")
        return PERMANENT
    except GatedRepoError:
        log(
            f"{repo} is gated: accept its terms on the Hub and give model.tokenSecret a token of an account with access"
        )
        return PERMANENT
    except RepositoryNotFoundError:
        log(f"no repository {repo} (or it is private and the token cannot read it)")
        return PERMANENT
    files = [
        os.path.relpath(os.path.join(root, name), target)
        for root, dirs, names in os.walk(target)
        for name in names
        if not os.path.relpath(root, target).startswith(".cache")
    ]
    if not files:
        log(f"no file of {repo}@{revision} matches {allow}: check model.source.allowPatterns")
        return PERMANENT
    size = sum(os.path.getsize(os.path.join(target, f)) for f in files)
    record = {"repo": repo, "revision": revision, "files": len(files), "bytes": size}
    with open(marker + ".tmp", "w", encoding="utf-8") as out:
        json.dump(record, out)
    os.replace(marker + ".tmp", marker)
    log(f"complete: {len(files)} files, {size / 1e9:.1f} GB in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
