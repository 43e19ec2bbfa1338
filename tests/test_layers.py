"""The package's shape, held: the layers of pyproject.toml's import-linter contract (every module in one
of them), no import circle, and an import inside a function only where a comment says why (start-up)."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import grimp
import tomllib

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "lwsgen"
START_UP = re.compile(r"#\s*start-up:")


def _layers() -> list[list[str]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = config["tool"]["importlinter"]["contracts"]
    return [[name.strip() for name in re.split(r"[:|]", layer)] for layer in contract["layers"]]


def test_the_layers_contract_holds():
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(lint)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_module_of_the_package_has_a_layer():
    placed = {name for layer in _layers() for name in layer}
    top = {f"lwsgen.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    top |= {f"lwsgen.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}
    top |= {f"lwsgen.{p.name}" for p in PACKAGE.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert top - placed == set(), "add the module to a layer of [tool.importlinter] in pyproject.toml"


def _circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_module_imports_round_a_circle():
    # grimp reads every import statement, those inside functions and under TYPE_CHECKING too
    graph = grimp.build_graph("lwsgen", cache_dir=None)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _circles(edges) == []


def _imports_in_functions(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("lwsgen"):
                    yield inner
                elif isinstance(inner, ast.Import) and inner.names[0].name.startswith("lwsgen"):
                    yield inner


def _said_why(lines: list[str], line: int) -> bool:
    """A start-up comment on the import's line or above it, over the imports just before it."""
    at = line - 1
    if START_UP.search(lines[at]):
        return True
    at -= 1
    while at >= 0 and lines[at].strip().startswith(("from lwsgen", "import lwsgen")):
        at -= 1
    return at >= 0 and bool(START_UP.search(lines[at]))


def test_an_import_inside_a_function_says_why():
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in _imports_in_functions(ast.parse(text)):
            if not _said_why(lines, node.lineno):
                unexplained.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert unexplained == [], "import at module level, or say why not in a '# start-up:' comment above"


def test_the_start_up_rule_tells_a_said_import_from_a_silent_one():
    text = (
        "def f():\n    # start-up: Jinja for render only\n    from lwsgen import a\n    from lwsgen import b\n\n"
        "def g():\n    from lwsgen import c\n"
    )
    lines = text.splitlines()
    said = {node.lineno: _said_why(lines, node.lineno) for node in _imports_in_functions(ast.parse(text))}
    assert said == {3: True, 4: True, 7: False}
