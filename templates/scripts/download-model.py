"""lwsgen: download one pinned revision of a Hugging Face Hub repository into the model claim, once
per cluster (the model-download Job runs it). Resumable by file: the files an interrupted run
finished stay, and the next run (the Job's next pod) fetches only the rest. A file cut off is
fetched again from its start: huggingface_hub writes each attempt to a temporary file of its own
(huggingface_hub PR #4228), which this script removes when it starts (older clients resume
<etag>.incomplete files, which it leaves).
The repository's file list is read first, and the marker <target>/.lwsgen-complete is written
only when every listed file is on the claim whole (older clients return a partial local_dir when
the Hub is unreachable); it records the patterns, so a change of allowPatterns fetches again. The
download's own state (<target>/.cache) is removed then: the snapshot holds the repository's files
and nothing else. One download per snapshot at a time (a lock beside it). Exit status 2: a
permanent failure (no such repository or revision, no access, nothing matches), which the Job's
podFailurePolicy does not retry; 1: anything else, retried up to the Job's backoffLimit.

Environment: LWSGEN_REPO, LWSGEN_REVISION, LWSGEN_TARGET, LWSGEN_ALLOW_PATTERNS (a JSON list, or
empty for every file); HF_TOKEN (from the profile's tokenSecret) and HF_ENDPOINT as huggingface_hub
reads them.
"""

import fcntl
import glob
import inspect
import json
import os
import re
import shutil
import sys
import time

PERMANENT, RETRY = 2, 1


def log(message: str) -> None:
    print(f"lwsgen model-download: {message}", flush=True)


# <hash>.<etag>.<8 hex digits>.incomplete: one attempt's temporary file, never reused
ATTEMPT = re.compile(r"\.[0-9a-f]{8}\.incomplete$")


def remove_dead_attempts(target: str) -> None:
    pattern = os.path.join(target, ".cache", "huggingface", "download", "**", "*.incomplete")
    dead = [p for p in glob.glob(pattern, recursive=True) if ATTEMPT.search(p)]
    size = sum(os.path.getsize(p) for p in dead)
    for path in dead:
        os.remove(path)
    if dead:
        log(f"removed {len(dead)} partial file(s) of an interrupted run ({size / 1e9:.1f} GB), fetched again")


class Permanent(Exception):
    """What a retry cannot fix: said, then exit 2."""


def hub():
    try:
        import huggingface_hub
        from huggingface_hub.utils import HfHubHTTPError, filter_repo_objects

        try:
            from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
        except ImportError:  # huggingface_hub before 0.25
            from huggingface_hub.utils import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
    except ImportError as err:
        raise Permanent(f"this image has no huggingface_hub ({err}); set model.source.image to one with it") from err
    return (
        huggingface_hub,
        HfHubHTTPError,
        filter_repo_objects,
        (RevisionNotFoundError, GatedRepoError, RepositoryNotFoundError),
    )


def calling_the_hub(action, repo, revision):
    """Run action(), turning the Hub's permanent refusals into Permanent."""
    _, http_error, _, (no_revision, gated, no_repo) = hub()
    try:
        return action()
    except no_revision as err:
        raise Permanent(
            f"{repo} has no revision {revision}: pin model.source.revision to a commit of the repository"
        ) from err
    except gated as err:
        raise Permanent(
            f"{repo} is gated: accept its terms on the Hub and give model.tokenSecret a token of an account with access"
        ) from err
    except no_repo as err:
        raise Permanent(f"no repository {repo} (or it is private and the token cannot read it)") from err
    except http_error as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        if status in (401, 403):
            raise Permanent(f"the Hub refused the token for {repo} (HTTP {status}): check model.tokenSecret") from err
        raise


def expected_files(repo, revision, allow) -> dict:
    """path -> size (None where the client does not list sizes) of the files to download."""
    huggingface_hub, _, filter_repo_objects, _ = hub()
    api = huggingface_hub.HfApi()
    if hasattr(api, "list_repo_tree"):
        entries = calling_the_hub(
            lambda: list(api.list_repo_tree(repo, revision=revision, recursive=True)), repo, revision
        )
        sizes = {e.path: e.size for e in entries if hasattr(e, "size") and getattr(e, "blob_id", None) is not None}
    else:  # huggingface_hub before 0.20
        sizes = dict.fromkeys(calling_the_hub(lambda: api.list_repo_files(repo, revision=revision), repo, revision))
    wanted = list(filter_repo_objects(items=sorted(sizes), allow_patterns=allow))
    if not wanted:
        raise Permanent(f"no file of {repo}@{revision} matches {allow}: check model.source.allowPatterns")
    return {path: sizes[path] for path in wanted}


def missing(target: str, files: dict) -> list:
    out = []
    for path, size in files.items():
        local = os.path.join(target, path)
        if os.path.islink(local) or not os.path.isfile(local) or (size is not None and os.path.getsize(local) != size):
            out.append(path)
    return out


def download(repo, revision, target, allow) -> int:
    huggingface_hub, *_ = hub()
    files = expected_files(repo, revision, allow)
    options = {"repo_id": repo, "revision": revision, "local_dir": target, "allow_patterns": allow}
    if "local_dir_use_symlinks" in inspect.signature(huggingface_hub.snapshot_download).parameters:
        options["local_dir_use_symlinks"] = False  # 0.20-0.22 would link large files into HF_HOME
    remove_dead_attempts(target)
    total = sum(size or 0 for size in files.values())
    log(f"downloading {len(files)} files ({total / 1e9:.1f} GB) of {repo}@{revision} into {target}")
    started = time.monotonic()
    calling_the_hub(lambda: huggingface_hub.snapshot_download(**options), repo, revision)
    absent = missing(target, files)
    if absent:
        log(f"{len(absent)} file(s) are not complete after the download ({', '.join(absent[:5])}): retrying")
        return RETRY
    shutil.rmtree(os.path.join(target, ".cache"), ignore_errors=True)
    record = {"repo": repo, "revision": revision, "allow": allow, "files": len(files), "bytes": total}
    with open(os.path.join(target, ".lwsgen-complete.tmp"), "w", encoding="utf-8") as out:
        json.dump(record, out)
    os.replace(os.path.join(target, ".lwsgen-complete.tmp"), os.path.join(target, ".lwsgen-complete"))
    log(f"complete: {len(files)} files, {total / 1e9:.1f} GB in {time.monotonic() - started:.0f} s")
    return 0


def done(marker: str, allow) -> bool:
    try:
        with open(marker, encoding="utf-8") as f:
            return json.load(f).get("allow") == allow
    except (OSError, ValueError):
        return False


def main() -> int:
    repo, revision, target = (os.environ[k] for k in ("LWSGEN_REPO", "LWSGEN_REVISION", "LWSGEN_TARGET"))
    allow = json.loads(os.environ.get("LWSGEN_ALLOW_PATTERNS") or "null")
    marker = os.path.join(target, ".lwsgen-complete")
    if done(marker, allow):
        log(f"{repo}@{revision} is already complete in {target}")
        return 0
    os.makedirs(target, exist_ok=True)
    with open(f"{target.rstrip('/')}.lwsgen-lock", "w") as lock:
        if not _try_lock(lock):
            log("another download of this snapshot runs (another profile on this claim): waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if done(marker, allow):
            log(f"{repo}@{revision} is already complete in {target}")
            return 0
        try:
            return download(repo, revision, target, allow)
        except Permanent as err:
            log(str(err))
            return PERMANENT


def _try_lock(lock) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


if __name__ == "__main__":
    sys.exit(main())
