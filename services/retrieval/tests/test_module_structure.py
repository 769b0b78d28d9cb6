"""Retrieval's modules form no import cycle; storage knows nothing of serving or search.

Storage (versions, Chroma, the registry) and serving (the ServingIndex a process loads and
swaps) are separate layers: records <- storage <- serving <- search <- servicer. The old
convert <-> index_store <-> search cycle (hidden behind function-level imports and Any-typed
fields) must not come back.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "retrieval"


def _imports(path: Path) -> set[str]:
    """retrieval.* modules imported anywhere in the file (function-level imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "retrieval":
                found.update(f"retrieval.{a.name}" for a in node.names)
            elif node.module.startswith("retrieval."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("retrieval."))
    return found


GRAPH = {f"retrieval.{p.stem}": _imports(p) for p in SRC.glob("*.py")}


def test_no_import_cycle() -> None:
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(GRAPH.get(node, ())):
            if state.get(dep) == 1:
                cycle = [*path[path.index(dep) :], dep] if dep in path else [node, dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


def test_storage_does_not_reach_up() -> None:
    for module in ("retrieval.records", "retrieval.registry", "retrieval.storage"):
        above = GRAPH[module] & {
            "retrieval.serving",
            "retrieval.search",
            "retrieval.convert",
            "retrieval.servicer",
            "retrieval.rerank",
        }
        assert not above, f"{module} imports {sorted(above)}"


def test_serving_index_fields_are_typed() -> None:
    from retrieval.serving import ServingIndex

    hints = typing.get_type_hints(ServingIndex)
    untyped = [name for name, hint in hints.items() if hint is typing.Any]
    assert not untyped, f"ServingIndex fields typed Any: {untyped}"
