# ruff: noqa: E501 - tables of hostile inputs read best one per line
"""make fuzz: structure-aware fuzzing of `lwsgen render` and `lwsgen validate` (issue #40, requirement 5).

Every case must end 0 (done) or 1 (refused with positioned lines): never 3 (a bug), never a traceback,
never over 5 s or 500 MB. Each case runs through `lwsgen.cli.main(argv)` in a child forked from a warm
worker (lwsgen imported, caches filled), in its own directory, with an alarm, an address-space limit
and LWSGEN_DEBUG=1 (an exception escaping main is the internal error, its traceback kept).

- render cases start from profiles/*.yaml and mutate the structure (depth, NUL and control characters,
  long names and paths, extends/templates links and loops, YAML tags, anchors and merge keys, type
  confusion at every level, hatch templates and patches, roles with split flags, huge counts, whole-
  document and path-level changes) or, as the old fuzzer did, the values line by line;
- validate cases mutate copies of the examples' output directories (and their kustomize-built
  streams) and validate a directory, one file, or the stream; some validate mutated profiles;
- tools/fuzzseeds/ holds the seed corpus (every row of issue #40's table), run first in each mode.

Usage:
  python tools/fuzz.py COUNT [SEED]           COUNT render and COUNT validate cases (make fuzz: 10000)
  python tools/fuzz.py render COUNT [SEED]    render cases only
  python tools/fuzz.py validate COUNT [SEED]  validate cases only
  python tools/fuzz.py --quick                CI slice: 300 + 300 cases with seed 40, plus the seeds
Options: -j N workers (default: CPUs), --no-seeds, --failures DIR (default /tmp/fuzz-failures; a second
concurrent run uses DIR-<pid>), --only render:12,validate:7 (regenerate and run just those cases of this
COUNT and SEED: every case is a pure function of seed, mode and index).
Exit 1 if any case failed; each failing case is saved as DIR/<n>/case (rerun: DIR/<n>/README), all
records in DIR/cases.jsonl.
"""

from __future__ import annotations

import copy
import fcntl
import gc
import json
import math
import os
import pickle
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEEDS = Path(__file__).resolve().parent / "fuzzseeds"
KUSTOMIZE = REPO / ".tools" / "bin" / "kustomize"
LWSGEN = REPO / ".venv" / "bin" / "lwsgen"
TIMEOUT = 10  # seconds of CPU before a case is killed (a busy machine stretches the wall, not this)
HANG = 6 * TIMEOUT  # seconds of wall clock: a case that waits without computing (a read that blocks)
SLOW = 5.0  # CPU seconds (the case and its children): a case over this fails


def _cpu() -> float:
    usage = (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    return sum(u.ru_utime + u.ru_stime for u in usage)


BIG_MB = 500  # peak RSS of a case over this fails
CHILD_AS = 1 << 30  # address space of a case
FUZZ_AS = 3 << 30  # address space of the fuzzer itself
MAX_SAVED_PER_CLASS = 10

# ----------------------------------------------------------------------------------------------
# The old value mutations (kept): line by line over the example text
ODD = [
    "",
    "~",
    "null",
    "[]",
    "{}",
    "-1",
    "0",
    "8.0",
    "1e400",
    "1" + "0" * 30,
    "9" * 4400,
    "yes",
    "'x'",
    '"\\x1b[2J"',
    '"\\u0085"',
    '"\\ufffe"',
    "2024-01-01",
    "!!binary aGk=",
    "*a",
    "&a [1, *a]",
    "'$(HF_TOKEN)'",
    '"a\\tb"',
    "{gpus: 8}",
    "[8, 8]",
    "!!set {a}",
    "!!python/object:os.system ls",
    "'" + "x" * 70 + "'",
    ".nan",
    "-.inf",
]
LINES = [
    "---",
    "%YAML 1.1",
    "&a x: 1",
    "<<: *a",
    "bogus: 1",
    "- item",
    "? key",
    "\x00",
    "extends: /etc/passwd",
    "extends: ../../x.yaml",
    "extends: p.yaml",
    "labels: {'bad key': v}",
    "annotations: {a: '\x7f'}",
]


def mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines() or [""]
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(lines))
        choice = rng.randrange(7)
        if choice == 0 and len(lines) > 1:
            del lines[i]
        elif choice == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif choice == 2 and ":" in lines[i]:
            lines[i] = f"{lines[i].split(':', 1)[0]}: {rng.choice(ODD)}"
        elif choice == 3:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        elif choice == 4:
            lines[i] = " " * rng.randint(0, 4) + lines[i]
        elif choice == 5:
            lines.insert(i, rng.choice(LINES))
        else:
            lines[i] = "".join(rng.choice("ab: -[]{}&*!|>'\"#%@\t\\\n") for _ in range(rng.randint(0, 30)))
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# A YAML emitter for data trees that may hold Raw nodes: YAML text placed as is (tags, anchors,
# aliases, deep flow nesting, escapes), as a value or as a key.
class Raw:
    def __init__(self, text: str, block: bool = False):
        self.text, self.block = text, block

    def __repr__(self) -> str:
        return f"Raw({self.text[:40]!r})"


PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./-]*\Z")
RESERVED = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def scalar(v) -> str:
    if isinstance(v, Raw):
        return v.text if not v.block else json.dumps("block")
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return ".nan" if math.isnan(v) else (".inf" if v > 0 else "-.inf") if math.isinf(v) else repr(v)
    s = str(v)
    if PLAIN.match(s) and s.lower() not in RESERVED:
        return s
    return json.dumps(s)


def flow(v) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{scalar(k)}: {flow(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(flow(x) for x in v) + "]"
    return scalar(v)


def block(v, ind: int = 0) -> list[str]:
    pad = " " * ind
    lines: list[str] = []
    if isinstance(v, dict) and v:
        for k, x in v.items():
            kt = scalar(k)
            if isinstance(x, dict) and x:
                lines.append(f"{pad}{kt}:")
                lines += block(x, ind + 2)
            elif isinstance(x, list) and x:
                lines.append(f"{pad}{kt}:")
                lines += block(x, ind)
            elif isinstance(x, Raw) and x.block:
                lines.append(f"{pad}{kt}:")
                lines += [pad + "  " + line for line in x.text.splitlines()]
            else:
                lines.append(f"{pad}{kt}: {flow(x)}")
    elif isinstance(v, list) and v:
        for x in v:
            if isinstance(x, dict) and x:
                sub = block(x, ind + 2)
                sub[0] = pad + "- " + sub[0][ind + 2 :]
                lines += sub
            else:
                lines.append(f"{pad}- {flow(x)}")
    elif isinstance(v, Raw) and v.block:
        lines += [pad + line for line in v.text.splitlines()]
    else:
        lines.append(pad + flow(v))
    return lines


def emit(tree) -> str:
    return "\n".join(block(tree)) + "\n"


def walk(node, path=()):
    """Every node's path, in document order."""
    yield path
    if isinstance(node, dict):
        for k in list(node):
            if not isinstance(k, Raw):
                yield from walk(node[k], path + (k,))
    elif isinstance(node, list):
        for i, x in enumerate(node):
            yield from walk(x, path + (i,))


def get(tree, path):
    for p in path:
        tree = tree[p]
    return tree


def put(tree, path, value):
    if not path:
        return value
    get(tree, path[:-1])[path[-1]] = value
    return tree


def setdeep(tree: dict, dotted: str, value) -> None:
    """tree[a][b][c] = value for 'a.b.c', creating mappings (replacing non-mappings) on the way."""
    parts = dotted.split(".")
    for p in parts[:-1]:
        if not isinstance(tree.get(p), dict):
            tree[p] = {}
        tree = tree[p]
    tree[parts[-1]] = value


def pathstr(path) -> str:
    return ".".join(str(p) for p in path) or "<root>"


# ----------------------------------------------------------------------------------------------
# Building blocks of hostile values
CONTROL = ["\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b[2J", "\x7f", "\x85", "\u2028", "\u2029",
           "\ufeff", "\ufffe", "\uffff", "\ud800", "\t", "\n", "\r", "\u202e", "\x9b"]  # fmt: skip
TAGS = ["!!binary aGVsbG8=", "!!binary AAEC/w==", "!!set {a, b}", "!!timestamp 2024-01-01T00:00:00Z", "2024-01-01",
        "!!python/object/apply:os.system [echo]", "!!python/name:os.system", "!!python/tuple [1, 2]",
        "!!python/object:os.system ls", "!foo bar", "!foo {a: 1}", "!foo [1]", "!!omap [{a: 1}, {b: 2}]",
        "!!pairs [{a: 1}]", "!!str 8", "!!int '08'", "!!int x", "!!float abc", "!!null x", "!!bool maybe",
        "!!map [1]", "!!seq {a: 1}", "!<tag:yaml.org,2002:binary> aGk=", "!!merge x", "!!value =",
        "!<!> x", "!!binary %%%",
        # constructors that fail with IndexError or AttributeError rather than an error of their own
        "!!int ''", "!!int '-'", "!!float ''", "!!timestamp x", "!!timestamp ''"]  # fmt: skip
KEY_TAGS = ["!!binary aGk=", "[1, 2]", "{a: 1}", "!!set {a}", "!!null ''", "!foo k", "2024-01-01", "1.5", "null",
            "true", "? complex", "&k anchored", "!!python/tuple [1]"]  # fmt: skip


def huge_int(rng) -> Raw:
    return Raw(rng.choice(["9" * rng.choice([20, 400, 4301, 5000, 20000]), "-" + "9" * 5000, "0x" + "f" * 600,
                           "1e400", "1" + "0" * 30, "0o777777777777777777777777", "1_000_000_000_000_000_000"]))  # fmt: skip


def deep(rng, depth: int | None = None) -> Raw:
    d = depth or rng.choice([200, 255, 256, 500, 900, 990, 1000, 2000, 5000])
    kind = rng.randrange(4)
    if kind == 0:
        return Raw("[" * d + "]" * d)
    if kind == 1:
        return Raw("{a: " * d + "1" + "}" * d)
    if kind == 2:
        opens = [rng.choice(["[", "{a: "]) for _ in range(d)]
        return Raw("".join(opens) + "x" + "".join("]" if o == "[" else "}" for o in reversed(opens)))
    d = min(d, 600)  # block nesting: the text grows with the square of the depth
    return Raw("\n".join(" " * i + "a:" for i in range(d)) + " 1", block=True)


def odd_value(rng, original=None):
    """Another type than the original (type confusion)."""
    choices = [{}, [], {"a": 1}, [1, 2], "", "x", 0, -1, 1.5, True, None, Raw(".nan"), Raw("-.inf"), [[]], [{}],
               {"": None}, "8", Raw("'8'"), huge_int(rng), deep(rng, rng.choice([3, 70, 300])),
               Raw(rng.choice(TAGS)), "x" * 300, {"a": {"b": {"c": [1]}}}]  # fmt: skip
    if original is not None:
        choices += [[copy.deepcopy(original)], {"wrapped": copy.deepcopy(original)}]
        if isinstance(original, dict) and original:
            choices.append(list(original.values()))
            choices.append(list(original.items()))
        if isinstance(original, list) and original:
            choices.append({str(i): x for i, x in enumerate(original)})
            choices.append(original[0])
    return copy.deepcopy(rng.choice(choices))


def control_string(rng, base: str = "x") -> str:
    ch = rng.choice(CONTROL)
    i = rng.randrange(len(base) + 1)
    return base[:i] + ch * rng.choice([1, 1, 3]) + base[i:]


def long_string(rng) -> str:
    n = rng.choice([64, 254, 255, 256, 300, 1000, 4097, 70000])
    return rng.choice(["x" * n, "a/" * (n // 2), "é" * n, "../" * (n // 3), ("a" * 200 + "/") * (n // 200 + 1),
                       "-" * n, "a-" * (n // 2) + "a"])  # fmt: skip


def bomb(rng) -> Raw:
    width, levels = rng.choice([(9, 9), (10, 6), (4, 16), (2, 40)])
    parts = ['&l0 ["x", "x"]']
    for i in range(1, levels):
        parts.append(f"&l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return Raw("[" + ", ".join(parts) + "]")


# ----------------------------------------------------------------------------------------------
class Case:
    """What one case writes into its directory and the command it runs there."""

    def __init__(self, mode: str, index):
        self.mode, self.index = mode, index
        self.files: dict[str, str | bytes] = {}
        self.links: list[tuple[str, str]] = []
        self.fifos: list[str] = []
        self.copies: list[tuple[Path, str]] = []
        self.removes: list[str] = []
        self.mkdirs: list[str] = []
        self.argv: list[str] = []
        self.desc: list[str] = []
        self.kustomize_dir: str | None = None  # build this dir into stream.yaml before running

    def size(self) -> int:
        return sum(len(v) for v in self.files.values())


def materialize(case: Case, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for src, rel in case.copies:
        if src.is_dir():
            shutil.copytree(src, root / rel, symlinks=True, dirs_exist_ok=True)
        else:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, root / rel)
    for rel in case.removes:
        p = root / rel
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        elif os.path.lexists(p):
            p.unlink()
    for rel in case.mkdirs:
        (root / rel).mkdir(parents=True, exist_ok=True)
    for rel, data in case.files.items():
        p = root / rel
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(p) and (p.is_symlink() or not p.is_dir()):
                p.unlink()
            p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        except OSError as err:  # a name the file system refuses: leave it out, say so
            case.desc.append(f"(not written: {rel[:40]!r}: {err.strerror})")
    for rel, target in case.links:
        p = root / rel
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(p):
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            os.symlink(target, p)
        except OSError as err:
            case.desc.append(f"(link not made: {rel[:40]!r}: {err.strerror})")
    for rel in case.fifos:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(p):
            p.unlink()
        os.mkfifo(p)
    if case.kustomize_dir is not None:
        stream = None
        if KUSTOMIZE.exists():
            try:
                done = subprocess.run([str(KUSTOMIZE), "build", case.kustomize_dir], cwd=root, capture_output=True,
                                      timeout=HANG, preexec_fn=_unlimit)  # fmt: skip
                if done.returncode == 0:
                    stream = done.stdout
                    case.desc.append("stream: kustomize build of the mutated dir")
            except (subprocess.TimeoutExpired, OSError):
                pass
        if stream is None:
            stream = concat(root / case.kustomize_dir)
            case.desc.append("stream: concatenation of the mutated dir (kustomize refused it)")
        (root / "stream.yaml").write_bytes(stream)


def _unlimit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def concat(directory: Path) -> bytes:
    parts = []
    for p in sorted(directory.glob("*.y*ml")):
        try:
            if p.is_file():
                parts.append(p.read_bytes()[: 2 << 20])
        except OSError:
            pass
    return b"---\n".join(parts)


class Profile:
    def __init__(self, tree, path="p.yaml"):
        self.tree, self.path = tree, path
        self.text_hook = None  # text -> text (document-level changes)
        self.value_mutate = False

    def where(self, rel: str) -> str:
        """rel, relative to the case dir, of a file beside the profile."""
        d = os.path.dirname(self.path)
        return f"{d}/{rel}" if d else rel


# ----------------------------------------------------------------------------------------------
# Render mutators: (rng, case, profile) -> None. They change profile.tree and add files to case.
def m_type(rng, case, prof):
    paths = list(walk(prof.tree))[1:]
    for _ in range(rng.choice([1, 1, 2, 3])):
        if not paths:
            break
        path = rng.choice(paths)
        try:
            original = get(prof.tree, path)
        except (KeyError, IndexError, TypeError):
            continue
        value = odd_value(rng, original)
        prof.tree = put(prof.tree, path, value)
        case.desc.append(f"type confusion at {pathstr(path)}: {flow(value)[:60]}")


def m_deep(rng, case, prof):
    paths = list(walk(prof.tree))
    path = rng.choice(paths[1:] or paths) if rng.random() < 0.6 else ("name",)
    value = deep(rng)
    if rng.random() < 0.3 and isinstance(get(prof.tree, path[:-1]) if path else None, dict):
        get(prof.tree, path[:-1])["extra" + str(rng.randrange(9))] = value  # a new key, nested
    else:
        prof.tree = put(prof.tree, path, value) if path else {"name": value, **prof.tree}
    case.desc.append(f"nesting {value.text.count('[') + value.text.count('{') + value.text.count(':')} deep at "
                     f"{pathstr(path)}")  # fmt: skip


def _string_paths(tree):
    return [p for p in walk(tree) if p and isinstance(get(tree, p), str)]


def m_control(rng, case, prof):
    r = rng.random()
    if r < 0.45:
        paths = _string_paths(prof.tree) or [("name",)]
        path = rng.choice(paths)
        base = get(prof.tree, path) if path in paths else "x"
        value = control_string(rng, base if isinstance(base, str) else "x")
        prof.tree = put(prof.tree, path, value)
        case.desc.append(f"control character in value {pathstr(path)}: {value[:60]!r}")
    elif r < 0.8:
        maps = [p for p in walk(prof.tree) if isinstance(get(prof.tree, p), dict) and get(prof.tree, p)]
        path = rng.choice(maps)
        parent = get(prof.tree, path)
        keys = [k for k in parent if isinstance(k, str)]
        if not keys:
            return
        k = rng.choice(keys)
        newk = control_string(rng, k)
        parent[newk] = parent.pop(k)
        case.desc.append(f"control character in key {pathstr(path + (k,))}: {newk!r}")
    else:  # a raw control byte in the file itself (not an escape)
        ch = rng.choice(["\x00", "\x01", "\x1b", "\x7f", "\x85", "\ufffe", "\ud800"])
        prev = prof.text_hook

        def hook(text, ch=ch, prev=prev):
            text = prev(text) if prev else text
            i = rng.randrange(len(text) + 1)
            return text[:i] + (ch.encode("utf-8", "surrogatepass") if isinstance(text, bytes) else ch) + text[i:]

        prof.text_hook = hook
        case.desc.append(f"raw {ch!r} in the file")


LONG_FIELDS = ["name", "namespace", "model.path", "model.servedName", "image", "storage.mountPath",
               "storage.claimName", "node.gpuProduct", "model.tokenSecret.name", "scheduling.queue",
               "scheduling.priorityClassName", "node.instanceType", "runtimeVersion"]  # fmt: skip


def m_long(rng, case, prof):
    r = rng.random()
    value = long_string(rng)
    if r < 0.5:
        field = rng.choice(LONG_FIELDS)
        setdeep(prof.tree, field, value)
        case.desc.append(f"{field}: {len(value)}-character string")
    elif r < 0.8:
        where = rng.choice(["labels", "annotations", "env", "podLabels", "podAnnotations", "node.nodeSelector"])
        setdeep(prof.tree, where, {value: "v"})
        case.desc.append(f"{where}: a {len(value)}-character key")
    else:
        paths = _string_paths(prof.tree) or [("name",)]
        path = rng.choice(paths)
        prof.tree = put(prof.tree, path, value)
        case.desc.append(f"{pathstr(path)}: {len(value)}-character string")


def _base_split(rng, tree):
    """Move some top-level keys into a base."""
    base, child = {}, {}
    for k, v in tree.items():
        (base if rng.random() < 0.5 and k != "name" else child)[k] = v
    return base, child


def _link_value(rng, case, prof, kind: str):
    """A hostile value for extends/templates, creating what it names. Returns (value, description)."""
    r = rng.randrange(17)
    where = prof.where
    leaf = "base.yaml" if kind == "extends" else "t"
    if r == 0:
        return "x\0y", "NUL"
    if r == 1:
        return "a" * rng.choice([256, 300, 1000]) + (".yaml" if kind == "extends" else ""), "over-long name"
    if r == 2:
        return ("a" * 200 + "/") * rng.choice([6, 25]) + leaf, "over-long path"
    if r == 3:
        case.links.append((where("loop"), "loop"))
        return f"loop/{leaf}", "loop -> loop"
    if r == 4:
        case.links.append((where(leaf), leaf))
        return leaf, f"{leaf} -> itself"
    if r == 5:
        case.links.append((where("a"), "b"))
        case.links.append((where("b"), "a"))
        return "a", "a -> b -> a"
    if r == 6:  # a link out of the profile's directory
        case.files["outside/base.yaml"] = "namespace: outside\n"
        case.files["outside/t/configmap.yaml.j2"] = "bare\n"
        target = "outside/base.yaml" if kind == "extends" else "outside/t"
        case.links.append((where(leaf), "../" * (prof.path.count("/") + 1) + target))
        return leaf, "link out of the directory"
    if r == 7:
        case.links.append((where(leaf), rng.choice(["/etc/passwd", "/etc", "/proc/self/environ", "/", "/tmp"])))
        return leaf, "link to an absolute system path"
    if r == 8:
        return rng.choice(["/etc/passwd", "/etc", "/proc/self/cwd", "../../../../etc/passwd", "~/x", "//", "."]), \
            "absolute or escaping path"  # fmt: skip
    if r == 9:
        return odd_value(rng), "not a string"
    if r == 10:
        return control_string(rng, leaf), "control character"
    if r == 11:
        return prof.path.rsplit("/", 1)[-1], "the profile itself"
    if r == 12:
        case.links.append((where("up"), ".."))
        return f"up/up/up/{leaf}", "up -> .."
    if r == 13:
        case.links.append((where(leaf), "nowhere/at/all"))
        return leaf, "dangling link"
    if r == 14:
        if rng.random() < 0.05:
            case.fifos.append(where(leaf))
            return leaf, "a FIFO"
        return "/dev/zero" if kind == "extends" else "/dev", "a device"
    if r == 15:
        case.mkdirs.append(where(leaf))  # a directory where a file is expected (or an empty templates dir)
        return leaf, "a directory" if kind == "extends" else "an empty directory"
    case.files[where(leaf)] = "x: 1\n"  # a file where a directory is expected (extends: a bogus base)
    return leaf, "a plain file"


def m_extends(rng, case, prof):
    r = rng.random()
    if r < 0.45:
        value, what = _link_value(rng, case, prof, "extends")
        prof.tree["extends"] = value
        case.desc.append(f"extends: {what} ({flow(value)[:50]})")
        return
    base, child = _base_split(rng, prof.tree)
    n = rng.choice([1, 1, 2, 5, 33, 100, 300]) if r < 0.9 else 2
    cyclic = r >= 0.9
    for i in range(n):
        body = dict(base) if i == 0 else {}
        if i > 0 or cyclic:
            body["extends"] = f"base{i - 1}.yaml" if i > 0 else f"base{n - 1}.yaml"
        if i == 0 and rng.random() < 0.3:  # the base itself is hostile
            sub = Profile(body, prof.where("base0.yaml"))
            rng.choice([m_type, m_deep, m_control, m_tags, m_anchors])(rng, case, sub)
            body = sub.tree
        case.files[prof.where(f"base{i}.yaml")] = emit(body) if isinstance(body, dict) else emit(body)
    child["extends"] = f"base{n - 1}.yaml"
    prof.tree = child
    case.desc.append(f"extends a chain of {n} bases" + (" that loops" if cyclic else ""))


PDB = """{% from "_k8s.yaml.j2" import meta %}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  {{ meta(v.meta) | indent(2) }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels: {{ v.leader_selector | q }}
"""
CM = """{% from "_k8s.yaml.j2" import meta %}
apiVersion: v1
kind: ConfigMap
metadata:
  {{ meta(v.meta) | indent(2) }}
data:
  k: BODY
"""


def _obj(kind: str, api: str = "v1", extra: str = "") -> str:
    return (f'{{% from "_k8s.yaml.j2" import meta %}}\napiVersion: {api}\nkind: {kind}\nmetadata:\n'
            f"  {{{{ meta(v.meta) | indent(2) }}}}\n{extra}")  # fmt: skip


POD = "spec:\n  containers:\n  - name: c\n    image: busybox:1.36\n    resources: {limits: {cpu: 100m, memory: 64Mi}}\n"


def template_body(rng) -> tuple[str, str]:
    r = rng.randrange(26)
    if r == 0:
        return "a bare string", rng.choice(["just a string\n", "x", "'{{ 1 | q }}'\n", "- a\n- b\n"])
    if r == 1:
        return "a bare huge integer", "9" * rng.choice([4301, 5000, 100000]) + "\n"
    if r == 2:
        return "a 5000-digit integer", CM.replace("BODY", "9" * 5000)
    if r == 3:
        d = rng.choice([65, 200, 900, 5000])
        return f"YAML nested {d} deep", rng.choice([CM.replace("BODY", deep(rng, d).text), deep(rng, d).text + "\n"])
    if r == 4:
        n, m = rng.choice([(100, 1), (10000, 1), (100000, 1), (1000, 1000), (100000, 100000)])
        inner = "x" if m == 1 else f"{{% for j in range({m}) %}}x{{% endfor %}}"
        return f"loop {n}x{m}", f"{{% for i in range({n}) %}}{inner}{{% endfor %}}\n"
    if r == 5:
        n = rng.choice([1000, 100000, 1000000])
        return f"huge output ({n} list items)", CM.replace("k: BODY", "k: x") + \
            f"list:\n{{% for i in range({n}) %}}- {{{{ i | q }}}}\n{{% endfor %}}"  # fmt: skip
    if r == 6:
        n = rng.choice([10**6, 10**8, 10**9])
        return f"a {n}-character string", CM.replace("BODY", f'{{{{ ("x" * {n}) | q }}}}')
    if r == 7:
        return "the whole record", CM.replace("BODY", rng.choice(["{{ v | q }}", "{{ v.profile | q }}",
                                                                     "{{ v.names | q }}", "{{ v.meta | q }}"]))  # fmt: skip
    if r == 8:
        kind = rng.choice(["Namespace", "ClusterRole", "ClusterRoleBinding", "Service", "Node", "Queue",
                           "DeviceTaintRule", "StorageVersionMigration", "Endpoints", "Ingress", "Secret",
                           "CustomResourceDefinition", "PriorityClass", "ValidatingWebhookConfiguration"])  # fmt: skip
        return f"kind {kind}", _obj(kind, rng.choice(["v1", "rbac.authorization.k8s.io/v1", "x.io/v1"]))
    if r == 9:
        kind = rng.choice(["{a: 1}", "[1]", "5", "null", '""', "x" * 300, '"Pod\\u0000"', "!!binary aGk="])
        return f"kind: {kind[:20]}", _obj(kind)
    if r == 10:
        api = rng.choice(["5", "null", "{a: 1}", "v1/v1/v1", '"v\\u0000"', "x" * 300])
        return f"apiVersion: {api[:20]}", _obj("ConfigMap", api)
    if r == 11:
        bad = rng.choice(["  hostPID: true\n", "  hostNetwork: true\n", "  volumes: [{name: h, hostPath: {path: /}}]\n",
                          "    securityContext: {privileged: true}\n",
                          "    env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]\n"])  # fmt: skip
        return "a privileged Pod", _obj("Pod", extra=POD + bad)
    if r == 12:
        return "a DaemonSet", _obj("DaemonSet", "apps/v1", "spec:\n  selector: {matchLabels: {a: b}}\n  template:\n"
                                   "    metadata: {labels: {a: b}}\n    " + POD.replace("\n", "\n    ").rstrip() +
                                   "\n    tolerations: [{operator: Exists}]\n")  # fmt: skip
    if r == 13:
        return "macro recursion", "{% macro f(n) %}{{ f(n + 1) | q }}{% endmacro %}{{ f(0) | q }}\n"
    if r == 14:
        return "template syntax", rng.choice(["{% for %}", "{{ v.nope | q }}", "{{ v }}", "{% filter upper %}x{% endfilter %}",
                                              "{% include '/etc/passwd' %}", "{% import '../../x' as m %}",
                                              "{% extends 'leaderworkerset.yaml.j2' %}", "{{ self | q }}",
                                              "{{ ''.__class__.__mro__ | q }}", "{{ range(10**9) | list | q }}",
                                              "{{ 9 ** 9 ** 9 | q }}", "{{ cycler | q }}", "{% raw %}", "{{",
                                              "{% set x = x %}{{ x | q }}", "{{ lipsum(10**6) | q }}"])  # fmt: skip
    if r == 15:
        return "YAML tags", CM.replace("BODY", rng.choice(TAGS))
    if r == 16:
        return "an alias bomb", CM.replace("BODY", bomb(rng).text)
    if r == 17:
        return "two documents", PDB + "---\n" + PDB
    if r == 18:
        return "empty documents", rng.choice(["---\n---\n", "", "null\n", "~\n", "--- []\n", "...\n"])
    if r == 19:
        return "binary bytes", "\x00\udcff\udcfe\x01"
    if r == 20:
        return "NUL through q", CM.replace("BODY", '{{ "a\\x00b" | q }}')
    if r == 21:
        return "a huge template file", CM.replace("BODY", "x" * rng.choice([2 << 20, 5 << 20]))
    if r == 22:
        return "anchors and merge keys", CM.replace("k: BODY", "k: &a {x: 1}\n  <<: *a\n  m: *a\n  <<: [*a, 5]")
    if r == 23:
        return "a list of objects", "- " + PDB.replace("\n", "\n  ")
    if r == 24:
        return "meta() of odd values", CM.replace("{{ meta(v.meta) | indent(2) }}", rng.choice(
            ["{{ meta(5) | indent(2) }}", "{{ meta(v) | indent(2) }}", "{{ meta(v.meta, 1, 2, 3) | indent(2) }}"]))  # fmt: skip
    return "a valid added PodDisruptionBudget", PDB


TEMPLATE_KEYS = ["service", "leaderworkerset", "configmap", "networkpolicy", "podmonitor", "kustomization",
                 "role", "prometheusrule", "disaggregatedset", "router", "endpoint-picker", "nccl-test",
                 "poddisruptionbudget", "foo", "x" * 240, "a b", "Über", "x\x01y", "_macro", ".hidden", "UPPER",
                 "kustomizeconfig", "horizontalpodautoscaler"]  # fmt: skip


def m_templates(rng, case, prof):
    if rng.random() < 0.25:
        value, what = _link_value(rng, case, prof, "templates")
        prof.tree["templates"] = value
        case.desc.append(f"templates: {what} ({flow(value)[:50]})")
        return
    prof.tree["templates"] = "t"
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        key = rng.choice(TEMPLATE_KEYS)
        what, body = template_body(rng)
        case.files[prof.where(f"t/{key}.yaml.j2")] = body
        case.desc.append(f"template {key[:30]}.yaml.j2: {what}")
    if rng.random() < 0.3:
        m_patches(rng, case, prof)


KINDS = ["LeaderWorkerSet", "Service", "ConfigMap", "NetworkPolicy", "PodMonitor", "PrometheusRule",
         "HorizontalPodAutoscaler", "ScaledObject", "InferencePool", "HTTPRoute", "Deployment", "DisaggregatedSet",
         "Job", "MPIJob", "Role", "RoleBinding", "ServiceAccount", "PersistentVolumeClaim", "PodDisruptionBudget",
         "Kustomization"]  # fmt: skip
PATCH_BODIES = [
    {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {"containers": [{"name": "leader", "env": [{"name": "X", "value": "1"}]}]}}}}},
    {"spec": {"leaderWorkerTemplate": {"size": 3}}},
    {"spec": None},
    {"metadata": {"labels": None}},
    {"$patch": "delete"},
    {"$patch": "replace"},
    {"spec": {"$patch": "bogus"}},
    {"spec": {"template": {"spec": {"containers": [{"$patch": "delete", "name": "x"}]}}}},
    {"spec": {"ports": [{"port": {}}]}},
    {"spec": {"ports": [{"$patch": "delete"}]}},
    {"spec": {"selector": [1]}},
    {"kind": {"a": 1}},
    {"apiVersion": None},
    {"spec": {"containers": "x"}},
    {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {"hostPID": True, "containers": [{"name": "leader", "image": "x:1"}]}}}}},
    {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "side", "image": "busybox:1", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]}}}}},
    {"data": {"x": Raw("!!binary aGk=")}},
    {"metadata": {"annotations": {"a": Raw("9" * 5000)}}},
    {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {"containers": [{"name": "leader", "$patch": "replace"}]}}}}},
    {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {"containers": {"name": "leader"}}}}}},
    {"metadata": {"name": "other"}},
    {"spec": {"template": {"metadata": {"labels": {"$patch": "delete"}}}}},
    {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {"containers": [{"name": "leader", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}], "args": ["$(X)"]}]}}}}},
]  # fmt: skip
JSON_PATHS = ["/spec", "/spec/replicas", "/metadata/name", "/spec/ports/0", "/spec/ports/-", "/spec/ports/99999",
              "/-", "", "/", "spec", "/a~2b", "/a~1b", "/" + "a/" * 2000, "/spec/\x00", "/metadata/labels/a~1b",
              "/spec/template/spec/containers/0/env/-", "/spec/leaderWorkerTemplate/size",
              "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0/args/-", "/data", "/kind",
              "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/-1", "/spec/ports/01", "/" + "9" * 5000]  # fmt: skip


def gen_patch(rng):
    r = rng.random()
    item: dict = {"target": {"kind": rng.choice(KINDS)}}
    if rng.random() < 0.3:
        item["target"]["name"] = rng.choice(["x", "", control_string(rng, "n"), "x" * 300, odd_value(rng)])
    if rng.random() < 0.1:
        item["target"] = rng.choice([odd_value(rng), {"kind": odd_value(rng)}, {}])
    if r < 0.5:
        body = copy.deepcopy(rng.choice(PATCH_BODIES))
        if rng.random() < 0.4:
            paths = list(walk(body))
            path = rng.choice(paths)
            body = put(body, path, rng.choice([odd_value(rng), deep(rng)]))
        item["patch"] = body
    elif r < 0.9:
        ops = []
        for _ in range(rng.choice([1, 1, 2, 5])):
            op = {"op": rng.choice(["add", "remove", "replace", "move", "copy", "test", "bogus", 5, None]),
                  "path": rng.choice(JSON_PATHS), "value": rng.choice([1, "x", None, {}, [], odd_value(rng)])}  # fmt: skip
            if op["op"] in ("move", "copy") or rng.random() < 0.1:
                op["from"] = rng.choice(JSON_PATHS)
            if rng.random() < 0.1:
                del op[rng.choice(list(op))]
            ops.append(op if rng.random() > 0.05 else odd_value(rng))
        item["jsonPatch"] = ops if rng.random() > 0.05 else odd_value(rng)
    else:
        item = rng.choice([odd_value(rng), {"target": {"kind": "Service"}, "patch": {"a": 1}, "jsonPatch": []},
                           {"target": {"kind": "Service"}}, {"patch": {}}])  # fmt: skip
    return item


def m_patches(rng, case, prof):
    patches = [gen_patch(rng) for _ in range(rng.choice([1, 1, 2, 4]))]
    prof.tree["patches"] = patches if rng.random() > 0.05 else odd_value(rng)
    case.desc.append(f"patches: {flow(patches)[:100]}")


def _flags(args):
    return [i for i, a in enumerate(args[:-1]) if isinstance(a, str) and a.startswith("--")
            and isinstance(args[i + 1], str) and not args[i + 1].startswith("--")]  # fmt: skip


def m_roles(rng, case, prof):
    t = prof.tree
    if not isinstance(t.get("roles"), dict) or not t["roles"]:
        pd = [tr for n, _, tr in EXAMPLES if "roles" in tr and tr.get("runtime") == t.get("runtime")] or \
             [tr for n, _, tr in EXAMPLES if "roles" in tr]  # fmt: skip
        donor = rng.choice(pd)
        t["roles"] = copy.deepcopy(donor["roles"])
        if "disaggregation" in donor:
            t["disaggregation"] = copy.deepcopy(donor["disaggregation"])
        case.desc.append("roles copied from a P/D example")
    model = t.setdefault("model", {}) if isinstance(t.get("model"), dict) else t.setdefault("model", {})
    if not isinstance(model, dict):
        t["model"] = model = {}
    args = model.get("extraArgs") if isinstance(model.get("extraArgs"), list) else []
    roles = [r for r in t["roles"] if isinstance(t["roles"][r], dict)] if isinstance(t["roles"], dict) else []
    r = rng.random()
    if roles and r < 0.6:
        role = rng.choice(roles)
        flags = _flags(args)
        if flags:
            i = rng.choice(flags)
            flag, value = args[i], args[i + 1]
            del args[i + 1]
            args.remove(flag)
            args.append(flag)
        else:
            flag, value = rng.choice([("--page-size", "64"), ("--max-model-len", "4096"), ("--tp", "8"),
                                      ("--port", "1"), ("--kv-transfer-config", "{}")])  # fmt: skip
            args.append(flag)
        model["extraArgs"] = args
        rargs = t["roles"][role].get("extraArgs") if isinstance(t["roles"][role].get("extraArgs"), list) else []
        t["roles"][role]["extraArgs"] = [value] + rargs if rng.random() < 0.8 else rargs + [value]
        case.desc.append(f"split flag: model.extraArgs ends with {flag}, its value {value!r} in roles.{role}.extraArgs")
    elif r < 0.75:
        where = rng.choice(["leader.args", "worker.args"] + [f"roles.{x}.extraArgs" for x in roles])
        flag = rng.choice(["--page-size", "--tensor-parallel-size", "--", "-", "--x=\x00", "--port", "-tp"])
        model["extraArgs"] = args + [flag]
        setdeep(t, where, [rng.choice(["64", "--", "", "x" * 300, "$(HF_TOKEN)", "1" * 30])])
        case.desc.append(f"split flag {flag!r} into {where}")
    elif r < 0.9 and roles:
        role = rng.choice(roles)
        key = rng.choice(["parallelism", "extraArgs", "replicas", "env", "node", "leader", "worker", "image"])
        t["roles"][role][key] = odd_value(rng, t["roles"][role].get(key))
        case.desc.append(f"roles.{role}.{key}: type confusion")
    else:
        t["roles"] = rng.choice([{f"r{i}": {} for i in range(rng.choice([3, 300]))}, {"": {}},
                                 {control_string(rng, "prefill"): {}}, {"x" * 300: {}}, odd_value(rng)])  # fmt: skip
        case.desc.append("roles: odd role names or type")


HUGE_FIELDS = {"parallelism.pipeline": [512, 4096, 2**31, 10**6], "parallelism.tensor": [1024, 2**20],
               "replicas": [100000, 10**9, 2**63], "node.gpus": [1, 0, -1, 2**40],
               "autoscaling.maxReplicas": [10**6, 2**31], "autoscaling.minReplicas": [10**5],
               "ncclTest.maxBytes": ["1P", "9" * 30], "lws.maxSurge": [10**6], "lws.maxUnavailable": [10**6],
               "node.memory": ["9999999Ei", "1e308"], "service.port": [65536, 10**9],
               "model.sizeGB": [1e308, 10**12]}  # fmt: skip


def m_huge(rng, case, prof):
    t = prof.tree
    r = rng.random()
    if r < 0.3:
        setdeep(t, "parallelism.pipeline", 512)
        setdeep(t, "replicas", 100000)
        case.desc.append("parallelism.pipeline: 512, replicas: 100000")
    elif r < 0.7:
        for field in rng.sample(list(HUGE_FIELDS), rng.choice([1, 2, 3])):
            value = rng.choice(HUGE_FIELDS[field])
            setdeep(t, field, value)
            case.desc.append(f"{field}: {value}")
        if rng.random() < 0.3:
            setdeep(t, "autoscaling.enabled", True)
        if rng.random() < 0.3:
            setdeep(t, "ncclTest.enabled", True)
    elif r < 0.85 and isinstance(t.get("roles"), dict):
        for role in t["roles"]:
            if isinstance(t["roles"][role], dict):
                t["roles"][role]["parallelism"] = {"data": rng.choice([10**5, 2**31]), "tensor": 64}
                t["roles"][role]["replicas"] = rng.choice([1000, 10**6])
        case.desc.append("roles with huge data parallelism and replicas")
    else:
        n = rng.choice([10000, 100000])
        where = rng.choice(["env", "labels", "model.extraArgs", "volumes", "annotations"])
        value = [f"--a{i}" for i in range(n)] if where == "model.extraArgs" else \
            [{"name": f"v{i}", "emptyDir": {}} for i in range(n // 10)] if where == "volumes" else \
            {f"K{i}": "v" for i in range(n)}  # fmt: skip
        setdeep(t, where, value)
        case.desc.append(f"{where}: {n} entries")


def m_tags(rng, case, prof):
    paths = list(walk(prof.tree))[1:]
    for _ in range(rng.choice([1, 2])):
        if rng.random() < 0.7 and paths:
            path = rng.choice(paths)
            try:
                tag = rng.choice(TAGS)
                prof.tree = put(prof.tree, path, Raw(tag))
                case.desc.append(f"tag at {pathstr(path)}: {tag}")
            except (KeyError, IndexError, TypeError):
                pass
        else:
            maps = [p for p in walk(prof.tree) if isinstance(get(prof.tree, p), dict)]
            path = rng.choice(maps)
            key = rng.choice(KEY_TAGS)
            get(prof.tree, path)[Raw(key)] = rng.choice(["v", 1, {"a": 1}])
            case.desc.append(f"key {key} in {pathstr(path)}")


def m_anchors(rng, case, prof):
    paths = [p for p in walk(prof.tree) if p]
    r = rng.random()
    if r < 0.5 and len(paths) > 2:
        i = rng.randrange(len(paths) - 1)
        a = paths[i]
        later = [p for p in paths[i + 1 :] if p[: len(a)] != a]
        if not later:
            return
        b = rng.choice(later)
        value = get(prof.tree, a)
        prof.tree = put(prof.tree, a, Raw("&a " + flow(value)))
        target = get(prof.tree, b[:-1])
        if isinstance(target, dict) and isinstance(value, dict) and rng.random() < 0.5:
            target[b[-1]] = {Raw("<<"): Raw("*a"), **(get(prof.tree, b) if isinstance(get(prof.tree, b), dict) else {})}
            case.desc.append(f"merge key <<: *a ({pathstr(a)}) into {pathstr(b)}")
        else:
            prof.tree = put(prof.tree, b, Raw("*a"))
            case.desc.append(f"anchor at {pathstr(a)}, alias at {pathstr(b)}")
    else:
        maps = [p for p in walk(prof.tree) if isinstance(get(prof.tree, p), dict)]
        path = rng.choice(maps)
        value = rng.choice([bomb(rng), Raw("*nope"), Raw("&r [1, *r]"), Raw("[&x 1, *x, *x]")])
        if rng.random() < 0.5:
            get(prof.tree, path)[Raw("<<")] = rng.choice([Raw("[1, 2]"), Raw("5"), Raw("{a: 1}"), Raw("*nope"),
                                                          Raw("[{a: 1}, {b: 2}]"), Raw("&m {x: 1}")])  # fmt: skip
            case.desc.append(f"odd merge key in {pathstr(path)}")
        else:
            key = rng.choice(list(get(prof.tree, path)) or ["x"])
            get(prof.tree, path)[key] = value
            case.desc.append(f"{pathstr(path + (key,))}: {value.text[:40]}")


def m_document(rng, case, prof):
    r = rng.randrange(12)
    what = ["root replaced", "two documents", "BOM", "UTF-16", "invalid UTF-8", "CRLF", "%YAML directive",
            "%TAG directive", "many empty lines", "10000 top-level keys", "duplicate keys", "empty file"][r]  # fmt: skip
    if r == 0:
        prof.tree = odd_value(rng, prof.tree)
    elif r == 9:
        prof.tree = {**prof.tree, **{f"k{i}": i for i in range(10000)}}
    prev = prof.text_hook

    def hook(text):
        text = prev(text) if prev else text
        if isinstance(text, bytes):  # an earlier hook already encoded it: this one has nothing to add
            return text
        if r == 1:
            return text + "---\n" + text
        if r == 2:
            return "\ufeff" + text
        if r == 3:
            return text.encode("utf-16", "surrogatepass")
        if r == 4:
            return text.encode("utf-8", "surrogatepass") + b"\xff\xfe\xc3("
        if r == 5:
            return text.replace("\n", "\r\n")
        if r == 6:
            return rng.choice(["%YAML 1.1\n---\n", "%YAML 9.9\n---\n", "%YAML 1.2\n%YAML 1.2\n---\n"]) + text
        if r == 7:
            return "%TAG ! tag:yaml.org,2002:python/\n---\n" + text
        if r == 8:
            return "\n" * rng.choice([10**5, 10**6]) + text
        if r == 10:
            return text + text.split("\n", 1)[0] + "\n"
        if r == 11:
            return rng.choice(["", "\n", "---\n", "...\n", "#\n"])
        return text

    prof.text_hook = hook
    case.desc.append(f"document: {what}")


def m_paths(rng, case, prof):
    """The profile's own path, or a directory of profiles with links in it."""
    r = rng.random()
    if r < 0.35:
        name = rng.choice(["p\x01.yaml", "p\n.yaml", "p\x1b[2J.yaml", "x" * 250 + ".yaml", "-p.yaml", "p .yaml",
                           "é.yaml", "p\udcff.yaml", ".p.yaml", "p.yml", "p.YAML", "p"])  # fmt: skip
        prof.path = name if rng.random() < 0.6 else ("d" * 200 + "/") * rng.choice([1, 5]) + name
        case.desc.append(f"profile path {prof.path[:50]!r}")
        return
    prof.path = "profiles/p.yaml"
    links = rng.sample([("profiles/x.yaml", "x.yaml"), ("profiles/sub", "."), ("profiles/a.yaml", "b.yaml"),
                        ("profiles/b.yaml", "a.yaml"), ("profiles/o.yaml", "../outside/o.yaml"),
                        ("profiles/up", ".."), ("profiles/dangling.yaml", "nowhere"), ("profiles/etc.yaml", "/etc/passwd"),
                        ("profiles/root", "/proc/self/root/etc"), ("profiles/dev.yaml", "/dev/null")],
                       rng.randint(1, 4))  # fmt: skip
    case.links += links
    if any(t == "../outside/o.yaml" for _, t in links):
        case.files["outside/o.yaml"] = "name: outside\n"
    if rng.random() < 0.3:
        case.files["profiles/" + "y" * 250 + ".yaml"] = "name: y\n"
    if rng.random() < 0.3:
        case.files["profiles/nested/deep.yaml"] = "extends: ../p.yaml\nname: deep\n"
    case.argv = ["render", "profiles", "-o", "out", "-j", "1"] if rng.random() < 0.5 else \
        ["render", "profiles", "--stdout", "-j", "1"]  # fmt: skip
    case.desc.append("render a directory with links: " + ", ".join(f"{a} -> {b}" for a, b in links))


RENDER_MUTATORS = [(m_type, 16), (m_deep, 6), (m_control, 8), (m_long, 6), (m_extends, 9), (m_templates, 12),
                   (m_patches, 8), (m_roles, 6), (m_huge, 5), (m_tags, 8), (m_anchors, 6), (m_document, 4),
                   (m_paths, 4)]  # fmt: skip


def gen_render(rng, index) -> Case:
    case = Case("render", index)
    name, text, tree = rng.choice(EXAMPLES)
    case.desc.append(f"from profiles/{name}.yaml")
    prof = Profile(copy.deepcopy(tree))
    funcs, weights = zip(*RENDER_MUTATORS, strict=True)
    if rng.random() < 0.15:  # the old value mutations, on the example's own text
        case.desc.append("line mutations")
        body: str | bytes = mutate(text, rng)
    else:
        for m in rng.choices(funcs, weights, k=rng.choice([1, 1, 2, 2, 3])):
            try:
                m(rng, case, prof)
            except (TypeError, AttributeError, KeyError, IndexError, ValueError):
                pass  # an earlier mutation left no place for this one (the root is a list, say)
        body = emit(prof.tree)
        if rng.random() < 0.1:
            body = mutate(body, rng)
            case.desc.append("plus line mutations")
        if prof.text_hook:
            body = prof.text_hook(body)
    case.files[prof.path] = body
    if not case.argv:
        r = rng.random()
        p = prof.path
        case.argv = (["render", p, "--stdout", "--format", rng.choice(["text", "json", "github"])] if r < 0.7 else
                     ["render", p, "-o", "out", "-j", "1"] if r < 0.85 else
                     ["render", p, "--check", "-o", "out", "-j", "1"] if r < 0.9 else
                     ["render", p, "--stdout", "--strict"])  # fmt: skip
    return case


# ----------------------------------------------------------------------------------------------
# Validate cases: mutated copies of the examples' output directories and their streams
def v_tree(rng, docs: list, desc: list) -> list:
    """One structural change to one document of a parsed file (a list of documents)."""
    if not docs:
        return [odd_value(rng)]
    i = rng.randrange(len(docs))
    doc = docs[i]
    paths = list(walk(doc))
    r = rng.randrange(12)
    if r == 0 or not isinstance(doc, dict):
        path = rng.choice(paths[1:] or paths)
        doc = put(doc, path, odd_value(rng, get(doc, path)))
        desc.append(f"doc {i}: type confusion at {pathstr(path)}")
    elif r == 1:
        doc["kind"] = rng.choice([{"a": 1}, [1], 5, None, "", "x" * 300, "Pod\x00", Raw("!!binary aGk="), True])
        desc.append(f"doc {i}: kind: {flow(doc['kind'])[:30]}")
    elif r == 2:
        key = rng.choice(["spec", "metadata", "kind", "apiVersion", "selector", "name", "template", "containers",
                          "ports", "labels", "data", "leaderWorkerTemplate", "size", "rules", "groups"])  # fmt: skip
        hits = [p for p in paths if p and p[-1] == key]
        path = rng.choice(hits) if hits else rng.choice(paths[1:] or paths)
        if path:
            del get(doc, path[:-1])[path[-1]]
            desc.append(f"doc {i}: deleted {pathstr(path)}")
    elif r == 3:
        path = rng.choice(paths[1:] or paths)
        value = deep(rng)
        doc = put(doc, path, value) if path else doc
        desc.append(f"doc {i}: nesting {len(value.text) // 2} at {pathstr(path)}")
    elif r == 4:
        path = rng.choice(paths[1:] or paths)
        tag = rng.choice(TAGS[:4] + TAGS)
        doc = put(doc, path, Raw(tag))
        desc.append(f"doc {i}: {tag} at {pathstr(path)}")
    elif r == 5:
        maps = [p for p in paths if isinstance(get(doc, p), dict) and get(doc, p)]
        path = rng.choice(maps)
        m = get(doc, path)
        k = rng.choice([k for k in m if not isinstance(k, Raw)] or ["x"])
        newk = rng.choice([k + "x", k.upper() if isinstance(k, str) else "K", control_string(rng, str(k)), "x" * 300,
                           Raw(rng.choice(KEY_TAGS))])  # fmt: skip
        if k in m:
            m[newk] = m.pop(k)
        desc.append(f"doc {i}: renamed key {pathstr(path + (k,))} to {str(newk)[:30]!r}")
    elif r == 6:
        strings = [p for p in paths if p and isinstance(get(doc, p), str)]
        if strings:
            path = rng.choice(strings)
            value = rng.choice([control_string(rng, get(doc, path)), long_string(rng)])
            doc = put(doc, path, value)
            desc.append(f"doc {i}: {pathstr(path)} = {value[:30]!r}")
    elif r == 7:
        ints = [p for p in paths if p and isinstance(get(doc, p), int) and not isinstance(get(doc, p), bool)]
        path = rng.choice(ints or paths[1:] or paths)
        doc = put(doc, path, rng.choice([huge_int(rng), -1, 2**63, 1.5, Raw(".nan")]))
        desc.append(f"doc {i}: number at {pathstr(path)}")
    elif r == 8 and len(paths) > 3:
        j = rng.randrange(1, len(paths) - 1)
        a = paths[j]
        later = [p for p in paths[j + 1 :] if p[: len(a)] != a]
        if later:
            b = rng.choice(later)
            value = get(doc, a)
            doc = put(doc, a, Raw("&a " + flow(value)))
            doc = put(doc, b, Raw("*a") if not isinstance(value, dict) or rng.random() < 0.5 else
                      {Raw("<<"): Raw("*a")})  # fmt: skip
            desc.append(f"doc {i}: anchor {pathstr(a)}, alias at {pathstr(b)}")
    elif r == 9:
        lists = [p for p in paths if isinstance(get(doc, p), list) and get(doc, p)]
        if lists:
            path = rng.choice(lists)
            lst = get(doc, path)
            lst.append(copy.deepcopy(lst[0]))  # a duplicate entry (same name)
            desc.append(f"doc {i}: duplicated the first entry of {pathstr(path)}")
    elif r == 10:
        doc = rng.choice(
            [None, [], "x", 5, {}, [doc], {"items": [doc]}, {"kind": "List", "apiVersion": "v1", "items": [doc]}]
        )
        desc.append(f"doc {i}: whole document now {flow(doc)[:30]}")
    else:
        maps = [p for p in paths if isinstance(get(doc, p), dict)]
        path = rng.choice(maps)
        get(doc, path)[Raw("<<")] = rng.choice([Raw("[1, 2]"), Raw("*nope"), bomb(rng), Raw("{spec: 1}")])
        desc.append(f"doc {i}: odd merge key in {pathstr(path)}")
    docs = list(docs)
    docs[i] = doc
    return docs


def emit_docs(docs) -> str:
    return "---\n".join(emit(d) for d in docs)


def gen_validate(rng, index) -> Case:
    case = Case("validate", index)
    r = rng.random()
    if r < 0.1:  # a mutated profile, validated (alone, in a directory, beside a broken sibling)
        sub = gen_render(rng, index)
        sub.mode = "validate"
        paths = [p for p in sub.files if p.endswith((".yaml", ".yml")) and not p.startswith("outside/")]
        if sub.argv[1] == "profiles":
            sub.argv = ["validate", "profiles"]
        elif paths and rng.random() < 0.3:
            sub.files["teams/a/p.yaml"] = EXAMPLES[0][1]
            sub.argv = ["validate", "teams/a/p.yaml", paths[0]] if rng.random() < 0.5 else ["validate", "."]
            sub.desc.append("validated beside a sibling team's file")
        else:
            sub.argv = ["validate"] + paths[:1] if paths else ["validate", "."]
        return sub
    name = rng.choice(list(BASE))
    files = BASE[name]
    d = f"out/{name}"
    case.copies.append((WORK_BASE / "out" / name, d))
    case.copies.append((WORK_BASE / "profiles" / f"{name}.yaml", f"profiles/{name}.yaml"))  # .lwsgen-files names it
    case.desc.append(f"from the output of {name}")
    stream_case = r < 0.35
    if stream_case:
        parts = [t for t, _ in STREAMS[name]]
        for _ in range(rng.choice([1, 1, 2, 3])):
            j = rng.randrange(len(parts))
            if rng.random() < 0.15:
                parts[j] = mutate(parts[j], rng)
                case.desc.append(f"stream doc {j}: line mutations")
            else:
                sub: list = []
                parts[j] = emit_docs(v_tree(rng, [pickle.loads(STREAMS[name][j][1])], sub))
                case.desc += [f"stream doc {j}: {s}" for s in sub]
        text = "---\n".join(parts)
        if rng.random() < 0.05:
            text = text + "---\n" * rng.choice([10**4, 10**5])
            case.desc.append("stream: many empty documents")
        case.files["stream.yaml"] = text
        if rng.random() < 0.1 and KUSTOMIZE.exists():  # kustomize builds a mutated dir instead
            del case.files["stream.yaml"]
            mutate_dir(rng, case, name, files, d, light=True)
            case.kustomize_dir = d
        case.argv = ["validate", "stream.yaml"] if rng.random() < 0.8 else ["validate", "stream.yaml", d]
        return case
    yamls = mutate_dir(rng, case, name, files, d)
    t = rng.random()
    if t < 0.45:
        case.argv = ["validate", d]
    elif t < 0.9:
        lws = [f for f in yamls if f.startswith(("leaderworkerset", "disaggregatedset"))]
        f = rng.choice(lws) if lws and rng.random() < 0.4 else rng.choice(yamls)
        case.argv = ["validate", f"{d}/{f}"]
    else:
        case.argv = ["validate", f"{d}/{rng.choice(yamls)}", f"{d}/{rng.choice(yamls)}"] if rng.random() < 0.5 else \
            ["validate", "out"]  # fmt: skip
    case.argv += ["--format", rng.choice(["text", "json", "github"])] if rng.random() < 0.2 else []
    return case


def mutate_dir(rng, case, name, files, d, light=False) -> list[str]:
    """Mutations of the copy of out/<name> at d; returns the YAML file names it then holds."""
    yamls = sorted(f for f in files if f.endswith(".yaml"))
    for _ in range(rng.choice([1, 1, 2, 3]) if not light else 1):
        r = rng.random()
        f = rng.choice([y for y in yamls if y in files] or sorted(f for f in files if f.endswith(".yaml")))
        if r < 0.55 or light:  # structure of one file
            docs = pickle.loads(DOCS[name][f])
            sub: list = []
            for _ in range(rng.choice([1, 1, 2])):
                docs = v_tree(rng, docs, sub)
            case.files[f"{d}/{f}"] = emit_docs(docs)
            case.desc += [f"{f}: {s}" for s in sub]
        elif r < 0.65:
            case.files[f"{d}/{f}"] = mutate(files[f], rng)
            case.desc.append(f"{f}: line mutations")
        elif r < 0.72:  # rename or delete a file
            new = rng.choice([f.replace(".yaml", ".yml"), "x" + f, f + ".bak", None])
            case.removes.append(f"{d}/{f}")
            if new:
                case.files[f"{d}/{new}"] = files[f]
                yamls = [new if y == f else y for y in yamls]
            else:
                yamls = [y for y in yamls if y != f] or ["kustomization.yaml"]
            case.desc.append(f"{f} renamed to {new}" if new else f"{f} deleted")
        elif r < 0.82:  # kustomization / .lwsgen-files naming odd files
            odd = rng.choice(["x" * 300 + ".yaml", "x" * 255 + ".yaml", "a\x00b.yaml", "../../../etc/passwd",
                              "/etc/passwd", "loop.yaml", "self.yaml", "sub", "https://example.com/x.yaml",
                              ("d" * 200 + "/") * 25 + "x.yaml", "", "..", "nccl-test.yaml", "*.yaml",
                              "missing.yaml", "a\nb.yaml", "kustomization.yaml"])  # fmt: skip
            if odd == "loop.yaml":
                case.links.append((f"{d}/loop.yaml", "loop.yaml"))
            elif odd == "self.yaml":
                case.links.append((f"{d}/self.yaml", "self.yaml"))
            elif odd == "sub":
                case.links.append((f"{d}/sub", "."))
            where = rng.choice(["kustomization", "lwsgen-files", "both"])
            if where in ("kustomization", "both"):
                docs = pickle.loads(DOCS[name]["kustomization.yaml"])
                key = rng.choice(["resources", "configurations", "patches", "components"])
                if isinstance(docs[0], dict):
                    if key == "patches":
                        docs[0][key] = [{"path": odd}]
                    else:
                        docs[0].setdefault(key, [])
                        docs[0][key] = (docs[0][key] if isinstance(docs[0][key], list) else []) + [odd]
                    if rng.random() < 0.2:
                        docs[0]["openapi"] = {"path": odd}
                case.files[f"{d}/kustomization.yaml"] = emit_docs(docs)
            if where in ("lwsgen-files", "both"):
                case.files[f"{d}/.lwsgen-files"] = files[".lwsgen-files"] + odd + "\n"
            case.desc.append(f"{where} names {odd[:40]!r}")
        elif r < 0.92:  # a broken sibling file
            k = rng.randrange(9)
            what = ["garbage bytes", "invalid UTF-8", "empty", "unclosed flow", "a directory", "a link loop",
                    "a link to itself", "a link out", "a link to /dev/zero"][k]  # fmt: skip
            p = f"{d}/{f}"
            if k == 0:
                case.files[p] = bytes(rng.randrange(256) for _ in range(200))
            elif k == 1:
                case.files[p] = files[f].encode() + b"\xff\xfe\xc3("
            elif k == 2:
                case.files[p] = ""
            elif k == 3:
                case.files[p] = "a: [\n" + files[f]
            elif k == 4:
                case.removes.append(p)
                case.mkdirs.append(p)
            elif k == 5:
                case.links.append((p, "loop/x"))
                case.links.append((f"{d}/loop", "loop"))
            elif k == 6:
                case.links.append((p, f))
            elif k == 7:
                case.links.append((p, rng.choice(["/etc/passwd", "../../../../etc/hostname", "/proc/self/status"])))
            else:
                case.links.append((p, "/dev/zero") if rng.random() < 0.2 else (p, "/dev/null"))
            case.desc.append(f"{f}: {what}")
        else:  # a whole new file: deep, many documents, a profile in the output
            k = rng.randrange(5)
            nf = rng.choice(["extra.yaml", "x" * 240 + ".yaml", "zz.yml"])
            case.files[f"{d}/{nf}"] = [
                lambda: deep(rng).text + "\n",
                lambda: "kind: ConfigMap\n---\n" * rng.choice([1000, 100000]),
                lambda: EXAMPLES[0][1],
                lambda: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {b: !!binary aGk=}\n",
                lambda: 'extends: "x\\0y"\nname: x\n',
            ][k]()
            case.desc.append(f"new file {nf[:30]}: " + ["deep nesting", "many documents", "a profile",
                                                       "!!binary data", "a profile extending x\\0y"][k])  # fmt: skip
            yamls.append(nf)
    return yamls


# ----------------------------------------------------------------------------------------------
# Seeds: tools/fuzzseeds/manifest.yaml
def load_seeds() -> list[dict]:
    import yaml

    path = SEEDS / "manifest.yaml"
    return yaml.safe_load(path.read_text()) if path.exists() else []


def seed_case(seed: dict, index: int) -> Case:
    case = Case(seed["mode"], index)
    case.desc.append(f"seed {seed['name']}: {seed.get('row', '')}")
    if seed.get("example"):
        case.copies.append((WORK_BASE / "out" / seed["example"], f"out/{seed['example']}"))
        case.copies.append((WORK_BASE / "profiles", "profiles"))
    src = SEEDS / seed["name"]
    if src.is_dir():
        for p in sorted(src.rglob("*")):
            if p.is_file():
                case.files[str(p.relative_to(src))] = p.read_bytes()
    for rel, target in (seed.get("links") or {}).items():
        case.links.append((rel, target))
    for rel in seed.get("remove") or []:
        case.removes.append(rel)
    chain = seed.get("chain")
    if chain:  # {dir, count, base}: dir/p0.yaml = base, dir/p<i>.yaml extends p<i-1>.yaml
        base = (src / chain["base"]).read_bytes()
        case.files.pop(chain["base"], None)
        for i in range(chain["count"]):
            case.files[f"{chain['dir']}/p{i}.yaml"] = base if i == 0 else f"extends: p{i - 1}.yaml\n"
    if seed.get("stream"):  # concatenate the (edited) example dir into stream.yaml
        case.kustomize_dir = f"out/{seed['example']}"
    case.argv = list(seed["argv"])
    return case


# ----------------------------------------------------------------------------------------------
# Running: workers forked from a warm process, a child per case
def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def run_case(case: Case, root: Path, scratch: Path, lwsgen) -> dict:
    for p in ("stdout", "stderr", "result"):
        try:
            (scratch / p).unlink()
        except FileNotFoundError:
            pass
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the case
        try:
            os.chdir(root)
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS, hard))
            resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, resource.RLIM_INFINITY))
            resource.setrlimit(resource.RLIMIT_CPU, (TIMEOUT, TIMEOUT + 2))  # the bound: the case's own CPU
            out = os.open(scratch / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            err = os.open(scratch / "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(out, 1)
            os.dup2(err, 2)
            os.environ["LWSGEN_DEBUG"] = "1"
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(HANG)
            t0 = _cpu()  # the case's own clock: a busy machine slows the wall, not this
            tb, exc, where = "", "", ""
            try:
                code = lwsgen(list(case.argv))
            except BaseException as err:  # noqa: BLE001 - the internal error: main re-raises under LWSGEN_DEBUG
                code, exc = 3, type(err).__name__
                try:
                    frames = [f for f in traceback.extract_tb(err.__traceback__) if "/lwsgen/" in f.filename]
                    if frames:
                        where = f"lwsgen/{frames[-1].filename.rsplit('/lwsgen/', 1)[1]}:{frames[-1].name}"
                    tb = traceback.format_exc()[-8000:]
                except BaseException:  # noqa: BLE001
                    tb = "Traceback (unformattable)\n" + repr(sys.exc_info()[0])
            secs = _cpu() - t0
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:  # noqa: BLE001
                pass
            with open(scratch / "result", "w") as f:
                json.dump({"code": code, "tb": tb, "secs": secs, "exc": exc, "where": where}, f)
        finally:
            os._exit(0)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    rec = {"code": None, "tb": "", "secs": wall, "peak_mb": usage.ru_maxrss / 1024}
    try:
        rec.update(json.loads((scratch / "result").read_text()))
    except (OSError, ValueError):
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            rec["signal"] = "timeout" if sig in (signal.SIGALRM, signal.SIGXCPU) else signal.Signals(sig).name
        else:
            rec["signal"] = f"died ({status})"
        rec["secs"] = wall
    text = ""
    for p in ("stderr", "stdout"):
        try:
            with open(scratch / p, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                data = f.read(1 << 20)
                if size > 2 << 20:
                    f.seek(size - (1 << 20))
                    data += f.read()
            text += data.decode("utf-8", "replace")
        except OSError:
            pass
    rec["traceback_in_output"] = "Traceback (most recent call last)" in text
    rec["internal_in_output"] = "internal error" in text
    rec["stderr_tail"] = text[-600:]
    return rec


def classify(rec: dict, mode: str) -> str | None:
    """The failure class of a record, or None."""
    if rec.get("signal"):
        return f"{mode}: killed ({rec['signal']}, over {TIMEOUT} s of CPU, {HANG} s in all, or out of memory)" if rec["signal"] == "timeout" \
            else f"{mode}: killed by {rec['signal']}"  # fmt: skip
    if rec.get("exc"):
        return f"{mode}: {rec['exc']} in {rec.get('where') or '?'}"
    if rec["code"] == 3 or rec["tb"] or rec["traceback_in_output"] or rec["internal_in_output"]:
        return f"{mode}: {crash_class(rec['tb'] or rec['stderr_tail'])}"
    if rec["secs"] > SLOW:
        return f"{mode}: slow (over {SLOW:g} s)"
    if rec["peak_mb"] > BIG_MB:
        return f"{mode}: memory (over {BIG_MB} MB)"
    return None


def crash_class(tb: str) -> str:
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', tb)
    where = "?"
    for file, _line, func in reversed(frames):
        if "/lwsgen/" in file:
            where = f"{file.split('/lwsgen/', 1)[1]}:{func}"
            break
    found = re.findall(r"(?m)^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Iteration|Interrupt))\b", tb)
    exc = found[-1] if found else "traceback or internal error in the output"
    if "internal error:" in tb:
        exc = tb.split("internal error:", 1)[1].split(":", 1)[0].strip()[:60]
    return f"{exc} in lwsgen/{where}"


def save_failure(case: Case, root: Path, rec: dict, klass: str, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(root, dest / "case", symlinks=True, dirs_exist_ok=True)
    except (OSError, shutil.Error):
        pass
    argv = " ".join(shlex_quote(a) for a in case.argv)
    (dest / "README").write_text(
        f"class: {klass}\n{case.mode} case {case.index}: " + "; ".join(case.desc) + "\n"
        f"exit {rec.get('code')} signal {rec.get('signal')} in {rec['secs']:.2f} s, peak {rec['peak_mb']:.0f} MB\n"
        f"rerun: cd {dest / 'case'} && LWSGEN_DEBUG=1 {LWSGEN} {argv}\n\n"
        f"{rec['tb'] or rec['stderr_tail']}\n",
        errors="replace",
    )


def shlex_quote(a: str) -> str:
    import shlex

    return shlex.quote(a.encode("unicode_escape").decode() if not a.isprintable() else a)


def worker(lane: int, lanes: int, jobs: list, outfile: Path, failures: Path, lwsgen) -> None:
    """One lane: cases lane, lane+lanes, ... of jobs; records as JSON lines."""
    work = Path(tempfile.mkdtemp(prefix=f"lane{lane}-", dir=WORK))
    scratch = work / "io"
    scratch.mkdir()
    saved: dict[str, int] = {}
    gc.collect()
    gc.freeze()
    with open(outfile, "w") as out:
        for k in range(lane, len(jobs), lanes):
            mode, index, seedspec = jobs[k]
            root = work / "case"
            t_prep = time.perf_counter()
            if root.exists():
                shutil.rmtree(root, ignore_errors=True)
            try:
                if seedspec is not None:
                    case = seed_case(seedspec, index)
                else:
                    rng = random.Random(f"{SEED}:{mode}:{index}")
                    case = (gen_render if mode == "render" else gen_validate)(rng, index)
                materialize(case, root)
            except Exception:  # noqa: BLE001 - a bug of the fuzzer, reported apart
                out.write(
                    json.dumps({"mode": mode, "index": index, "fuzzer_error": traceback.format_exc()[-1500:]}) + "\n"
                )
                continue
            t_run = time.perf_counter()
            rec = run_case(case, root, scratch, lwsgen)
            t_done = time.perf_counter()
            klass = classify(rec, mode)
            size = case.size()
            row = {"mode": mode, "index": index, "seed": seedspec is not None, "code": rec.get("code"),
                   "signal": rec.get("signal"), "secs": rec["secs"], "peak_mb": rec["peak_mb"], "class": klass,
                   "size": size, "desc": "; ".join(case.desc)[:400], "tb": bool(rec["tb"] or rec["traceback_in_output"]),
                   "prep": round(t_run - t_prep, 4), "run": round(t_done - t_run, 4)}  # fmt: skip
            if klass:
                n = saved.get(klass, 0)
                if n < MAX_SAVED_PER_CLASS or size < saved.get(klass + "#min", 1 << 62):
                    dest = failures / f"{mode[0]}{index}"
                    save_failure(case, root, rec, klass, dest)
                    row["saved"] = str(dest)
                    saved[klass] = n + 1
                    saved[klass + "#min"] = min(size, saved.get(klass + "#min", 1 << 62))
            out.write(json.dumps(row) + "\n")
            out.flush()
            if lane == 0 and (k // lanes) % 500 == 0:
                print(f"  lane 0: {mode} case {index}", file=sys.stderr, flush=True)
    shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------------------------------------
EXAMPLES: list[tuple[str, str, dict]] = []
BASE: dict[str, dict[str, str]] = {}  # example -> output file -> text
DOCS: dict[str, dict[str, list]] = {}  # example -> output file -> parsed documents
STREAMS: dict[str, list] = {}  # example -> the kustomize-built stream's documents: (text, pickled data)
WORK = Path("/tmp")
WORK_BASE = Path("/tmp")
SEED = 0


def prepare(lwsgen) -> None:
    """Load the examples, render them once (this warms lwsgen), build their streams."""
    import contextlib
    import io

    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for p in sorted((REPO / "profiles").glob("*.yaml")):
        text = p.read_text()
        EXAMPLES.append((p.stem, text, yaml.safe_load(text)))
    shutil.copytree(REPO / "profiles", WORK_BASE / "profiles")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = lwsgen(["render", str(WORK_BASE / "profiles"), "-o", str(WORK_BASE / "out"), "-j", "1"])
    if code != 0:
        sys.exit(f"fuzz: rendering the examples failed (exit {code}):\n{err.getvalue()[-2000:]}")
    for d in sorted((WORK_BASE / "out").iterdir()):
        BASE[d.name] = {f.name: f.read_text() for f in d.iterdir() if f.is_file()}
        DOCS[d.name] = {
            f: pickle.dumps(list(yaml.load_all(t, Loader=loader)))
            for f, t in BASE[d.name].items()
            if f.endswith(".yaml")
        }
        stream = None
        if KUSTOMIZE.exists():
            done = subprocess.run([str(KUSTOMIZE), "build", str(d)], capture_output=True, preexec_fn=_unlimit)
            if done.returncode == 0:
                stream = done.stdout.decode()
        stream = stream if stream is not None else concat(d).decode()
        parts = [t for t in re.split(r"(?m)^---\n", stream) if t.strip()]
        STREAMS[d.name] = [(t, pickle.dumps(yaml.load(t, Loader=loader))) for t in parts]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            lwsgen(["validate", str(d)])


def summarize(rows: list[dict], elapsed: dict[str, float]) -> int:
    failed = [r for r in rows if r.get("class") or r.get("fuzzer_error")]
    for mode in ("render", "validate"):
        mr = [r for r in rows if r["mode"] == mode and "code" in r]
        if not mr:
            continue
        codes: dict = {}
        for r in mr:
            key = f"exit {r['code']}" if r["code"] is not None else r["signal"]
            codes[key] = codes.get(key, 0) + 1
        rate = len(mr) / elapsed[mode] if elapsed.get(mode) else 0
        print(f"{mode}: {len(mr)} cases ({sum(r['seed'] for r in mr)} seeds) in {elapsed.get(mode, 0):.0f} s, "
              f"{rate:.1f} cases/s; " + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items(), key=str)) +
              f"; tracebacks: {sum(r['tb'] for r in mr)}")  # fmt: skip
        slow = max(mr, key=lambda r: r["secs"])
        big = max(mr, key=lambda r: r["peak_mb"])
        print(f"  slowest: {slow['secs']:.2f} s, {mode} case {slow['index']}: {slow['desc'][:160]}")
        print(f"  largest: {big['peak_mb']:.0f} MB, {mode} case {big['index']}: {big['desc'][:160]}")
    errors = [r for r in rows if r.get("fuzzer_error")]
    if errors:
        print(f"fuzzer errors (bugs of tools/fuzz.py): {len(errors)}, e.g.:\n{errors[0]['fuzzer_error']}")
    classes: dict[str, list[dict]] = {}
    for r in failed:
        if r.get("class"):
            classes.setdefault(r["class"], []).append(r)
    if classes:
        print(f"FAILED: {len(failed)} cases in {len(classes)} classes (saved under {FAILURES}/<n>/, README = rerun):")
        for klass, rs in sorted(classes.items(), key=lambda kv: -len(kv[1])):
            saved = [r for r in rs if r.get("saved")]
            best = min(saved or rs, key=lambda r: r["size"])
            print(f"- {klass}: {len(rs)} cases; smallest {best.get('saved', '(not saved)')} "
                  f"({best['size']} bytes): {best['desc'][:200]}")  # fmt: skip
    print("ok: no exit 3, no traceback, no case over 5 s or 500 MB" if not failed else "")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    global WORK, WORK_BASE, SEED, FAILURES
    args = list(argv)
    lanes = os.cpu_count() or 2
    use_seeds = True
    FAILURES = Path("/tmp/fuzz-failures")
    if "-j" in args:
        i = args.index("-j")
        lanes = int(args[i + 1])
        del args[i : i + 2]
    if "--failures" in args:
        i = args.index("--failures")
        FAILURES = Path(args[i + 1])
        del args[i : i + 2]
    only: set | None = None
    if "--only" in args:  # --only render:12,validate:7 reruns (and saves) those cases of this seed
        i = args.index("--only")
        only = {(m, int(n)) for m, n in (x.split(":") for x in args[i + 1].split(","))}
        del args[i : i + 2]
        use_seeds = False
    if "--no-seeds" in args:
        args.remove("--no-seeds")
        use_seeds = False
    modes = ["render", "validate"]
    if "--quick" in args:
        args.remove("--quick")
        count, SEED = 300, 40
    else:
        if args and args[0] in ("render", "validate"):
            modes = [args.pop(0)]
        count = int(args[0]) if args else 10_000
        SEED = int(args[1]) if len(args) > 1 else 0
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > FUZZ_AS:
        resource.setrlimit(resource.RLIMIT_AS, (FUZZ_AS, hard))
    sys.setrecursionlimit(10_000)
    sys.path.insert(0, str(REPO))
    from lwsgen.cli import main as lwsgen

    WORK = Path(tempfile.mkdtemp(prefix="lwsgen-fuzz-"))
    WORK_BASE = WORK / "base"
    WORK_BASE.mkdir()
    FAILURES.parent.mkdir(parents=True, exist_ok=True)
    lock = open(f"{FAILURES}.lock", "a")  # noqa: SIM115 - held for the whole run
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another run owns it: keep out of its way
        FAILURES = Path(f"{FAILURES}-{os.getpid()}")
        print(f"fuzz: another run holds {lock.name}; failures go to {FAILURES}", file=sys.stderr)
    if FAILURES.exists():
        for old in FAILURES.iterdir():
            if re.fullmatch(r"[rv](seed)?\d+", old.name):
                shutil.rmtree(old, ignore_errors=True)
    FAILURES.mkdir(parents=True, exist_ok=True)
    gc.set_threshold(200_000, 30, 30)
    prepare(lwsgen)
    seeds = load_seeds() if use_seeds else []
    rows: list[dict] = []
    elapsed: dict[str, float] = {}
    print(f"fuzz: {count} cases per mode {modes}, seed {SEED}, {lanes} workers, {len(seeds)} seeds; work in {WORK}")
    try:
        for mode in modes:
            jobs = [(mode, f"seed{i}", s) for i, s in enumerate(seeds) if s["mode"] == mode]
            jobs += [(mode, i, None) for i in range(count) if only is None or (mode, i) in only]
            start = time.perf_counter()
            pids = []
            for lane in range(lanes):
                pid = os.fork()
                if pid == 0:
                    code = 0
                    try:
                        worker(lane, lanes, jobs, WORK / f"{mode}-{lane}.jsonl", FAILURES, lwsgen)
                    except BaseException:  # noqa: BLE001
                        traceback.print_exc()
                        code = 1
                    finally:
                        sys.stdout.flush()
                        sys.stderr.flush()
                        os._exit(code)
                pids.append(pid)
            for pid in pids:
                os.waitpid(pid, 0)
            elapsed[mode] = time.perf_counter() - start
            for lane in range(lanes):
                path = WORK / f"{mode}-{lane}.jsonl"
                if path.exists():
                    rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    (FAILURES / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return summarize(rows, elapsed)


FAILURES = Path("/tmp/fuzz-failures")

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
