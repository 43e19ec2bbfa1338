"""Stage 1, load: bytes -> UTF-8 -> YAML (libyaml) -> data plus the position of every node."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import yaml

from lwsgen import bounds
from lwsgen.problems import Finding, Problem, ProblemsError
from lwsgen.yamlread import SAFE_LOADER

PathKey = tuple  # a path into the data: ("node", "gpus") or ("env", 0)


class Source:
    """A loaded YAML document and where each of its nodes stands in the file."""

    __slots__ = ("file", "data", "values_at", "keys_at", "files_at")

    def __init__(
        self,
        file: str,
        data: Any,
        values_at: dict[PathKey, tuple[int, int]] | None = None,
        keys_at: dict[PathKey, tuple[int, int]] | None = None,
        files_at: dict[PathKey, str] | None = None,
    ):
        self.file = file
        self.data = data
        # path -> (line, col) of the value; keys_at: path -> (line, col) of the mapping key
        self.values_at = {} if values_at is None else values_at
        self.keys_at = {} if keys_at is None else keys_at
        # path -> the file that set it, where a profile was merged from several (extends)
        self.files_at = {} if files_at is None else files_at

    def file_of(self, path: PathKey) -> str:
        path = tuple(path)
        while path:
            if path in self.files_at:
                return self.files_at[path]
            path = path[:-1]
        return self.files_at.get((), self.file)

    def position(self, path: PathKey, *, key: bool = False) -> tuple[int, int]:
        """Position of path, or of its nearest ancestor that exists in the file."""
        table = self.keys_at if key else self.values_at
        path = tuple(path)
        while path:
            if path in table:
                return table[path]
            if not key and path in self.keys_at:
                return self.keys_at[path]
            path = path[:-1]
        return self.values_at.get((), (1, 1))

    def problem(self, path: PathKey, message: str, code: str, *, key: bool = False) -> Problem:
        line, col = self.position(path, key=key)
        return Problem(self.file_of(path), line, col, dotted(path), message, code)

    def place(self, finding: Finding) -> Problem:
        """A rule's finding at the field of this source it names, with its code and severity."""
        placed = self.problem(finding.path, finding.message, finding.code, key=finding.at_key)
        return placed._replace(severity=finding.severity)


_PLAIN_KEY = re.compile(r"^[A-Za-z_][-A-Za-z0-9_]*$")


def dotted(path: PathKey) -> str:
    """A field path as users write it: node.tolerations[0].key, labels["app.kubernetes.io/name"]."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(str(part)):
            out += ("." if out else "") + str(part)
        else:
            out += '["' + str(part).replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return out


def _decode(raw: bytes, file: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        before = raw[: err.start]
        line = before.count(b"\n") + 1
        col = err.start - (before.rfind(b"\n") + 1) + 1
        raise ProblemsError(
            [
                Problem(
                    file,
                    line,
                    col,
                    "",
                    f"not valid UTF-8 (byte 0x{raw[err.start]:02x}); save the file as UTF-8",
                    "bad-encoding",
                )
            ]
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def _syntax_problem(err: yaml.YAMLError, file: str) -> Problem:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    what = getattr(err, "problem", None) or str(err).splitlines()[0]
    if what == "but found another document":
        return Problem(
            file, line, col, "", "a second YAML document starts here; a profile is one document", "multiple-documents"
        )
    context = getattr(err, "context", None)
    start = getattr(err, "context_mark", None)
    if context and start is not None and start is not mark:
        context += f" that starts at {start.line + 1}:{start.column + 1}"
    message = f"YAML syntax error: {what}" + (f" ({context})" if context else "")
    return Problem(file, line, col, "", message, "yaml-syntax")


def _at_key(src: Source, key_node: yaml.Node, path: PathKey, message: str, code: str) -> Problem:
    mark = key_node.start_mark
    return Problem(src.file, mark.line + 1, mark.column + 1, dotted(path), message, code)


def _walk(node: yaml.Node, data: Any, path: PathKey, src: Source, problems: list[Problem]) -> None:
    src.values_at[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode) and isinstance(data, dict):
        seen: dict[Any, yaml.Node] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = key_node.value
            child = path + (key,)
            if key_node.tag != "tag:yaml.org,2002:str":
                problems.append(_at_key(src, key_node, child, "field names must be strings; quote this key", "bad-key"))
                continue
            if key in seen:
                first = seen[key].start_mark.line + 1
                problems.append(
                    _at_key(
                        src, key_node, child, f"duplicate key (first set on line {first}); keep one", "duplicate-key"
                    )
                )
            seen[key] = key_node
            src.keys_at[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if key in data:
                _walk(value_node, data[key], child, src, problems)
    elif isinstance(node, yaml.SequenceNode) and isinstance(data, list):
        for index, (item_node, item) in enumerate(zip(node.value, data, strict=False)):
            _walk(item_node, item, path + (index,), src, problems)


# Bounds on what one input may cost (lwsgen/bounds.py): a profile's bytes, and a document's nodes,
# depth and characters with its YAML aliases expanded (an alias bomb of a few hundred bytes
# expands to billions; a nesting of thousands exhausts any recursive reader).
MAX_PROFILE_BYTES = bounds.MAX_PROFILE_BYTES
MAX_NODES = bounds.MAX_NODES


def _too_much(node: yaml.Node, file: str, message: str) -> ProblemsError:
    mark = node.start_mark
    return ProblemsError([Problem(file, mark.line + 1, mark.column + 1, "", message, "too-large")])


def _node_budget(node: yaml.Node, file: str, limit: int, characters: int = bounds.MAX_EXPANDED_BYTES) -> None:
    """Refuse a document whose node graph, aliases expanded, has more than `limit` nodes, nests
    deeper than MAX_DEPTH or holds more than MAX_EXPANDED_BYTES of scalars."""
    pending, seen, size = [(node, 1)], 0, 0
    while pending:
        current, depth = pending.pop()
        seen += 1
        if seen > limit:
            message = (
                f"the document expands to more than {limit} YAML nodes (through aliases); at most {limit} are read"
            )
            raise _too_much(node, file, message)
        if isinstance(current, yaml.ScalarNode):
            size += len(current.value)
            if size > characters:
                message = f"the document expands to more than {characters} characters (through aliases)"
                raise _too_much(node, file, message)
            continue
        if depth > bounds.MAX_DEPTH:
            message = f"mappings and lists nest more than {bounds.MAX_DEPTH} deep here; flatten the document"
            raise _too_much(current, file, message)
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                pending += ((key, depth + 1), (value, depth + 1))
        elif isinstance(current, yaml.SequenceNode):
            pending += ((item, depth + 1) for item in current.value)


_STR, _INT, _BOOL, _NULL, _MAP, _SEQ = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null", "map", "seq"))


def plain_decimal(value: str) -> bool:
    """A plain decimal PyYAML reads as int(value): YAML 1.1 reads a leading 0 as octal, '_' and '+' are
    its own to strip; those go through its constructor."""
    digits = value[1:] if value.startswith("-") else value
    return digits.isdigit() and (digits == "0" or digits[0] != "0")


def _to_data(loader, node: yaml.Node) -> Any:
    """A composed node as SafeLoader constructs it: the common shapes (mappings with string keys,
    lists, strings, null, decimals, true/false) converted here, everything else (merge keys, other
    key types, floats, timestamps, octal, yes/no, explicit tags) by the loader's own constructor.
    An alias is converted again where it recurs, not shared: equal data (the node budget bounds the
    expansion). Validate reads every hand-edited file this way: SafeLoader's bookkeeping per node
    was two thirds of its time."""
    tag = node.tag
    if isinstance(node, yaml.ScalarNode):
        if tag == _STR:
            return node.value
        if tag == _NULL:
            return None
        if tag == _INT and plain_decimal(node.value):
            return int(node.value)
        if tag == _BOOL and node.value in ("true", "false"):
            return node.value == "true"
    elif isinstance(node, yaml.MappingNode):
        if tag == _MAP and all(key.tag == _STR and isinstance(key, yaml.ScalarNode) for key, _ in node.value):
            return {key.value: _to_data(loader, value) for key, value in node.value}
    elif tag == _SEQ:
        return [_to_data(loader, item) for item in node.value]
    return loader.construct_object(node, deep=True)


def _read_node(loader, node: yaml.Node) -> Any:
    """The fast conversion; where it fails, SafeLoader's own construction of the whole document, whose
    order says which of several bad values is reported (and whose stack use is the one bounds allow)."""
    try:
        return _to_data(loader, node)
    except Exception:  # noqa: BLE001 - re-raised, as SafeLoader raises it, by the construction below
        loader.constructed_objects, loader.recursive_objects = {}, {}
        return loader.construct_document(node)


_PROBE = yaml.SafeLoader("")  # constructs one scalar at a time to find the one that failed


def _unreadable(node: yaml.Node, error: type) -> yaml.Node:
    """The first scalar in the text whose tag's constructor fails as the document's construction did
    (the document itself if none does): where the problem is shown."""
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, yaml.ScalarNode):
            try:
                _PROBE.construct_object(current)
            except error:
                return current
            except Exception:  # noqa: BLE001, S112 - another kind of failure: not the one reported
                continue
            finally:
                _PROBE.constructed_objects.clear()
        elif isinstance(current, yaml.MappingNode):
            pending += reversed([part for pair in current.value for part in pair])
        elif isinstance(current, yaml.SequenceNode):
            pending += reversed(current.value)
    return node


def _construct(loader, node: yaml.Node, file: str, limit: int, characters: int = bounds.MAX_EXPANDED_BYTES) -> Any:
    _node_budget(node, file, limit, characters)
    try:
        return _read_node(loader, node)
    # a tag whose constructor cannot read the value: !!bool maybe, !!int "" (IndexError), !!timestamp x
    # (AttributeError: its pattern did not match), an integer of more than 4300 digits (ValueError)
    except (KeyError, TypeError, IndexError, AttributeError, ValueError) as err:
        mark = _unreadable(node, type(err)).start_mark
        if isinstance(err, ValueError):
            code = "bad-number"
            message = f"a value YAML cannot read as a number ({str(err).split(':')[0]})"
        else:
            code = "bad-value"
            message = f"a value YAML cannot read as its tag says ({type(err).__name__}: {str(err)[:80]}); quote it"
        raise ProblemsError([Problem(file, mark.line + 1, mark.column + 1, "", message, code)]) from None
    finally:  # the constructor's per-document state, as its construct_document leaves it
        loader.constructed_objects, loader.recursive_objects = {}, {}


def _source(node: yaml.Node | None, data: Any, file: str, problems: list[Problem]) -> Source:
    src = Source(file, data)
    if node is not None:
        _walk(node, data, (), src, problems)
    return src


def load_text(text: str, file: str, max_nodes: int = MAX_NODES) -> Source:
    """Parse one YAML document, keeping positions; raise ProblemsError on any defect."""
    loader = SAFE_LOADER(text)
    try:
        node = loader.get_single_node()
        data = _construct(loader, node, file, max_nodes) if node is not None else None
    except yaml.YAMLError as err:
        raise ProblemsError([_syntax_problem(err, file)]) from None
    finally:
        loader.dispose()
    problems: list[Problem] = []
    src = _source(node, data, file, problems)
    if problems:
        raise ProblemsError(problems)
    return src


def load_documents(text: str, file: str, max_nodes: int = 20 * MAX_NODES) -> list[Source]:
    """Every document of a multi-document YAML stream, each with positions (empty documents skipped)."""
    loader = SAFE_LOADER(text)
    sources: list[Source] = []
    problems: list[Problem] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                data = _construct(loader, node, file, max_nodes, bounds.MAX_OBJECT_BYTES)
                sources.append(_source(node, data, file, problems))
    except yaml.YAMLError as err:
        raise ProblemsError([_syntax_problem(err, file)]) from None
    finally:
        loader.dispose()
    if problems:
        raise ProblemsError(problems)
    return sources


_KINDS_OF_FILE = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)


# The SHA-256 of each file read while digesting() is on, by the path it was read through: what a
# render read, as it read it (lwsgen/render_cache.py keeps a render while the files still have it).
_DIGESTS: ContextVar[dict[str, str] | None] = ContextVar("lwsgen_digests", default=None)


@contextmanager
def digesting(into: dict[str, str]):
    """Within it, each file read_bytes reads is digested into `into`."""
    token = _DIGESTS.set(into)
    try:
        yield
    finally:
        _DIGESTS.reset(token)


def read_bytes(path: Path, file: str, limit: int | None = None) -> bytes:
    """A regular file's bytes, at most `limit`; anything else is a Problem, found without blocking
    (a named pipe is opened non-blocking and refused, never read)."""

    def refuse(message: str, code: str) -> ProblemsError:
        return ProblemsError([Problem(file, 0, 0, "", message, code)])

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise refuse(f"cannot read: {err.strerror}", "unreadable") from None
    try:  # checked before the descriptor becomes a file object, which refuses a directory by raising
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = next((name for test, name in _KINDS_OF_FILE if test(info.st_mode)), "not a regular file")
            raise refuse(f"is {what}, not a file; nothing was read", "not-a-file")
        if limit is not None and info.st_size > limit:
            raise refuse(f"is {info.st_size} bytes; a profile is at most {limit} bytes", "too-large")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read() if limit is None else handle.read(limit + 1)
    if limit is not None and len(raw) > limit:
        raise refuse(f"is more than {limit} bytes; a profile is at most {limit} bytes", "too-large")
    digests = _DIGESTS.get()
    if digests is not None:
        digests[str(path)] = hashlib.sha256(raw).hexdigest()
    return raw


def decode(raw: bytes, file: str) -> str:
    """Bytes read elsewhere (standard input) as a profile's text, checked as a file's are."""
    return _decode(raw, file)


def read_text(path: Path, display: str | None = None, limit: int | None = None) -> str:
    file = display or str(path)
    return _decode(read_bytes(path, file, limit), file)


def load_file(path: Path, display: str | None = None) -> Source:
    """A profile file: at most MAX_PROFILE_BYTES and MAX_NODES."""
    return load_text(read_text(path, display, MAX_PROFILE_BYTES), display or str(path))


def load_mapping(path: Path, display: str | None = None, text: str | None = None) -> Source:
    """Load a document that must be a mapping (a profile); `text`: its content, already read."""
    src = load_file(path, display) if text is None else load_text(text, display or str(path))
    if not isinstance(src.data, dict):
        kind = "empty" if src.data is None else type(src.data).__name__
        kinds = {"list": "a list", "str": "a string", "int": "a number", "float": "a number", "bool": "a boolean"}
        what = "empty" if kind == "empty" else kinds.get(kind, kind)
        raise ProblemsError(
            [
                Problem(
                    src.file,
                    *src.position(()),
                    "",
                    f"the document is {what}; a profile is a mapping of fields (name, runtime, image, model, node, "
                    "...)",
                    "not-a-mapping",
                )
            ]
        )
    return src
