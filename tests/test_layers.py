"""The package's modules import each other in one direction: no import circles.

Every `import mixplane...` counts, inside functions too (a lazy import still ties the two
modules together); imports only for type checking do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).parent.parent / "src"


def module_names() -> dict[str, Path]:
    names = {}
    for path in (SOURCE / "mixplane").rglob("*.py"):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported(path: Path, known: dict[str, Path]) -> set[str]:
    """The mixplane modules `path` imports (a name imported from a package that is itself a
    module counts as that module)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.ImportFrom) and (child.module or "").startswith("mixplane"):
                for alias in child.names:
                    full = f"{child.module}.{alias.name}"
                    found.add(full if full in known else child.module)
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name.startswith("mixplane"))
            visit(child)

    visit(ast.parse(path.read_text()))
    return {name for name in found if name in known}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in order:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], order[other])
        if low[node] == order[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            connect(node)
    return groups


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    known = module_names()
    graph = {name: imported(path, known) - {name} for name, path in known.items()}
    assert circles(graph) == []


def test_the_loader_does_not_import_processing():
    known = module_names()
    graph = {name: imported(path, known) - {name} for name, path in known.items()}
    reached, todo = set(), ["mixplane.load.torch_adapter", "mixplane.load"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(graph[name])
    processing = ("mixplane.process", "mixplane.stages", "mixplane.synth", "mixplane.io.readers")
    assert sorted(name for name in reached if name.startswith(processing)) == []
