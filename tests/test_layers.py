"""The package's modules import each other in one direction: no import circles, and no
lower layer reaching up into a higher one.

Every `import mixplane...` counts, inside functions too (a lazy import still ties the two
modules together); imports only for type checking do not. Importing `a.b.c` first runs the
package `__init__`s of `a` and `a.b`, so those count as imported too: a circle may close
through what a package `__init__` re-exports.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).parent.parent / "src"

# What a lower layer must never reach, even lazily or through other modules: the design
# map's `cli`/`serve` -> `load` -> `mix`, `catalog` -> `store` -> `io` and
# `process` -> `stages` -> `io` (`tokenize` turns processed documents into `store` shards).
ABOVE_STORE = (
    "mixplane.stages",
    "mixplane.process",
    "mixplane.tokenize",
    "mixplane.catalog",
    "mixplane.mix",
    "mixplane.load",
    "mixplane.serve",
    "mixplane.cli",
    "mixplane.synth",
    "mixplane.classify",
)
# Stages implement the contract in `stages.base` and `stages.global_stage`; how a pipeline
# runs them is `process`'s business, above them.
ABOVE_STAGES = tuple(name for name in ABOVE_STORE if name != "mixplane.stages")
HIGHER = {
    "mixplane.io": ("mixplane.store", *ABOVE_STORE),
    "mixplane.store": ABOVE_STORE,
    "mixplane.stages": ABOVE_STAGES,
}
PROCESSING = ("mixplane.process", "mixplane.stages", "mixplane.synth", "mixplane.io.readers")


def module_names(root: Path = SOURCE, package: str = "mixplane") -> dict[str, Path]:
    names = {}
    for path in (root / package).rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported(path: Path, known: dict[str, Path], package: str = "mixplane") -> set[str]:
    """The modules of `package` that `path` imports (a name imported from a package that
    is itself a module counts as that module)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.ImportFrom) and (child.module or "").startswith(package):
                for alias in child.names:
                    full = f"{child.module}.{alias.name}"
                    found.add(full if full in known else child.module)
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name.startswith(package))
            visit(child)

    visit(ast.parse(path.read_text()))
    return {name for name in found if name in known}


def enclosing(name: str) -> set[str]:
    """The packages whose `__init__` runs before module `name` (`a`, `a.b` for `a.b.c`)."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


@functools.cache  # parsed once for the tests that share it; they do not change it
def import_graph(root: Path = SOURCE, package: str = "mixplane") -> dict[str, set[str]]:
    """Each module and the modules importing it runs: those it names, and their packages'
    `__init__`s (its own packages have run before it)."""
    known = module_names(root, package)
    graph = {}
    for name, path in known.items():
        named = imported(path, known, package)
        packages = set().union(*map(enclosing, named)) - enclosing(name)
        graph[name] = (named | (packages & known.keys())) - {name}
    return graph


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


def chains(graph: dict[str, set[str]], starts: list[str]) -> dict[str, list[str]]:
    """Every module reached from `starts`, with one chain of imports that reaches it."""
    found = {start: [start] for start in starts}
    todo = list(starts)
    while todo:
        name = todo.pop(0)
        for other in sorted(graph[name]):
            if other not in found:
                found[other] = [*found[name], other]
                todo.append(other)
    return found


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_circle_through_a_package_init_is_found(tmp_path):
    # `other` imports `pkg.c`, which first runs `pkg/__init__`, which re-exports `pkg.a`,
    # which imports `other`: a circle no single import statement shows.
    files = {
        "top/__init__.py": "",
        "top/other.py": "from top.pkg.c import C\nB = 2\n",
        "top/pkg/__init__.py": "from top.pkg.a import A\n",
        "top/pkg/a.py": "from top.other import B\nA = 1\n",
        "top/pkg/c.py": "C = 3\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert circles(import_graph(tmp_path, "top")) == [["top.other", "top.pkg", "top.pkg.a"]]
    # ...and Python agrees: importing `top.other` first fails.
    done = subprocess.run(
        [sys.executable, "-c", "import top.other"], cwd=tmp_path, capture_output=True, text=True
    )
    assert "partially initialized module 'top.other'" in done.stderr


def test_no_import_circles():
    assert circles(import_graph()) == []


@pytest.mark.parametrize("layer", sorted(HIGHER))
def test_a_lower_layer_imports_no_higher_one(layer):
    graph = import_graph()
    starts = sorted(name for name in graph if within(name, (layer,)))
    reached = chains(graph, starts)
    wrong = [" -> ".join(chain) for name, chain in reached.items() if within(name, HIGHER[layer])]
    assert sorted(wrong) == []


def test_the_loader_does_not_import_processing():
    graph = import_graph()
    reached = chains(graph, sorted(name for name in graph if within(name, ("mixplane.load",))))
    wrong = [" -> ".join(chain) for name, chain in reached.items() if within(name, PROCESSING)]
    assert sorted(wrong) == []


# The loader's parts, lowest first: each may import only the parts before it (and its own).
LOAD_PARTS = (
    "plan",  # pure: the sample order, packing, partition, resume state
    "remote",  # the machine's copies of remote files
    "read",  # tokens from shards into batches
    "resolve",  # mixture -> documents, and the plan cache
    "trail",  # a run's entries in the catalog's audit trail
    "channel",  # weights and positions between the training process and its workers
    "dataset",  # MixtureDataset
    "torch",  # the PyTorch adapter
    "adaptive",  # feedback from the training loop
    "images",  # the image-text loader (and what the media loaders share)
    "audio",  # the audio-text loader
    "unpacked",  # whole documents in padded batches (packing: none)
    "tools",  # export, preview, synthetic data, telemetry, trace
)


def load_part(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["mixplane", "load"] else None


def test_the_loader_parts_import_only_lower_ones():
    graph = import_graph()
    parts = {load_part(name) for name in graph} - {None, "_pieces"}
    assert parts == set(LOAD_PARTS)  # a new part gets its place in the order
    rank = {part: i for i, part in enumerate(LOAD_PARTS)}
    wrong = [
        f"{name} -> {other}"
        for name, others in graph.items()
        if load_part(name) in rank
        for other in others
        if load_part(other) in rank and rank[load_part(other)] > rank[load_part(name)]
    ]
    assert sorted(wrong) == []
