"""PID 1 of a simulated container, run by `unshare --mount --pid --uts --fork` inside the pod's
network namespace: builds the container's root (an overlay of the host root, so an image's files
and the kubelet's /etc/hosts land in the container alone), mounts its volumes, sets the host name,
then becomes the container command (exec: the command is PID 1 and, when it exits, the kernel
kills every process left in the container). Self-contained: it runs before anything is mounted."""

import json
import os
import subprocess
import sys


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def inside(root: str, path: str, depth: int = 0) -> str:
    """path in the container as a host path under root, following symlinks as if root were /
    (on Debian /var/run is a symlink to /run: followed on the host, it would leave the container)."""
    if depth > 40:
        raise OSError(f"too many symlinks resolving {path}")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    done: list[str] = []
    for index, part in enumerate(parts):
        if part == "..":
            done = done[:-1]
            continue
        candidate = os.path.join(root, *done, part)
        if os.path.islink(candidate):
            target = os.readlink(candidate)
            base = "" if target.startswith("/") else "/".join(done)
            rest = "/".join(parts[index + 1 :])
            return inside(root, f"/{base}/{target}/{rest}", depth + 1)
        done.append(part)
    return os.path.join(root, *done)


def main() -> None:
    spec = json.loads(open(sys.argv[1]).read())
    root = spec["root"]
    mount("-t", "overlay", "overlay", "-o", f"lowerdir=/,upperdir={spec['upper']},workdir={spec['work']}", root)
    mount("-t", "proc", "proc", f"{root}/proc")
    mount("--rbind", "/dev", f"{root}/dev")
    mount("--rbind", "/sys", f"{root}/sys")
    mount("-t", "tmpfs", "tmpfs", f"{root}/dev/shm")  # the node's /dev/shm is not the pod's
    for path, text, mode in spec["files"]:  # the image's files, /etc/hosts, /etc/resolv.conf
        target = inside(root, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.lexists(target):
            os.unlink(target)
        if text.startswith("symlink:"):
            os.symlink(text[len("symlink:") :], target)
        else:
            with open(target, "w") as out:
                out.write(text)
            os.chmod(target, mode)
    for source, path, read_only in spec["mounts"]:
        target = inside(root, path)
        os.makedirs(target, exist_ok=True)
        mount("--bind", source, target)
        if read_only:
            mount("-o", "remount,bind,ro", target)
    subprocess.run(["hostname", spec["hostname"]], check=True)
    os.chroot(root)
    os.chdir(spec.get("workdir") or "/")
    if spec.get("user") is not None:
        os.setgroups([])
        os.setgid(spec.get("group") or spec["user"])
        os.setuid(spec["user"])
    env = dict(spec["env"])
    try:
        os.execvpe(spec["argv"][0], spec["argv"], env)
    except OSError as error:  # as a container runtime reports it: the container exits 127/126
        print(f"exec {spec['argv'][0]}: {error.strerror}", file=sys.stderr)
        sys.exit(127 if error.errno == 2 else 126)


if __name__ == "__main__":
    main()
